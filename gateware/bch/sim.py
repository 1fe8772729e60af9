"""Running the BCH gateware in Amaranth's simulator: the public helpers tests and users call."""
from __future__ import annotations

from amaranth.sim import Simulator

from nandrig.errors import NandrigError
from nandrig.gateware.bch.config import BchConfig
from nandrig.gateware.bch.encoder import BchEncoder


def _check(data: bytes, t: int, config: BchConfig) -> None:
    if not 1 <= t <= config.t_max:
        raise NandrigError(f"t must be 1..{config.t_max}, got {t}")
    if not 1 <= len(data) <= config.k_bytes:
        raise NandrigError(f"a codeword holds 1..{config.k_bytes} data bytes, got {len(data)}")


def simulate_encode_many(jobs: list[tuple[bytes, int]], config: BchConfig = BchConfig()) -> tuple[list[bytes], int]:
    """Encode codewords back to back in one simulation (t may change between them).

    Returns the parity of each and the total cycle count.
    """
    for d, t in jobs:
        _check(d, t, config)
    dut = BchEncoder(config)
    out: list[bytes] = []
    cycles = [0]

    async def bench(ctx):
        for d, t in jobs:
            ctx.set(dut.t, t)
            ctx.set(dut.parity_out.ready, 1)
            for i, byte in enumerate(d):
                ctx.set(dut.data_in.valid, 1)
                ctx.set(dut.data_in.payload, {"data": byte, "first": i == 0, "last": i == len(d) - 1})
                await ctx.tick()
                cycles[0] += 1
            ctx.set(dut.data_in.valid, 0)
            parity = bytearray()
            while True:
                valid, beat = ctx.get(dut.parity_out.valid), ctx.get(dut.parity_out.payload)
                await ctx.tick()
                cycles[0] += 1
                if valid:
                    parity.append(beat.data)
                    if beat.last:
                        break
            out.append(bytes(parity))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return out, cycles[0]


def simulate_encode(data: bytes, t: int, config: BchConfig = BchConfig()) -> bytes:
    """Parity bytes for ``data`` at correction capability ``t``, computed by the encoder gateware."""
    return simulate_encode_many([(data, t)], config)[0][0]
