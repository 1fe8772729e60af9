"""Running the BCH gateware in Amaranth's simulator: the public helpers tests and users call."""
from __future__ import annotations

from amaranth.sim import Simulator

from nandrig.errors import NandrigError
from nandrig.gateware.bch.config import BchConfig
from nandrig.gateware.bch.decoder import SEARCH_DOMAIN, BchDecoder
from nandrig.gateware.bch.encoder import BchEncoder

CLOCK_S = 1e-8  # the engine's clock in simulation; cycles are what the results count


def add_engine_clocks(sim: Simulator, config: BchConfig) -> None:
    """The engine's clock, and its search's own when it runs at a multiple (from the same PLL: its edges fall on
    the engine's)."""
    sim.add_clock(CLOCK_S)
    if config.search_clock_ratio > 1:
        sim.add_clock(CLOCK_S / config.search_clock_ratio, domain=SEARCH_DOMAIN)


def _check(data: bytes, t: int, config: BchConfig) -> None:
    if not 1 <= t <= config.t_max:
        raise NandrigError(f"t must be 1..{config.t_max}, got {t}")
    if not 1 <= len(data) <= config.k_bytes:
        raise NandrigError(f"a codeword holds 1..{config.k_bytes} data bytes, got {len(data)}")


def simulate_encode_many(jobs: list[tuple[bytes, int]], config: BchConfig = BchConfig(),
                         stall_every: int = 0) -> tuple[list[bytes], int]:
    """Encode codewords back to back in one simulation (t may change between them); ``stall_every`` > 0: the
    producer idles a cycle after every that many bytes, and the parity's consumer is ready every other cycle.

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
            await ctx.tick()  # t settles a cycle before the first byte
            cycles[0] += 1
            for i, byte in enumerate(d):
                ctx.set(dut.data_in.valid, 1)
                ctx.set(dut.data_in.payload, {"data": byte, "first": i == 0, "last": i == len(d) - 1})
                await ctx.tick()
                cycles[0] += 1
                if stall_every and (i + 1) % stall_every == 0 and i + 1 < len(d):
                    ctx.set(dut.data_in.valid, 0)
                    await ctx.tick()
                    cycles[0] += 1
            ctx.set(dut.data_in.valid, 0)
            parity = bytearray()
            while True:
                ready = not stall_every or cycles[0] % 2 == 0
                ctx.set(dut.parity_out.ready, ready)
                valid, beat = ctx.get(dut.parity_out.valid), ctx.get(dut.parity_out.payload)
                await ctx.tick()
                cycles[0] += 1
                if valid and ready:
                    parity.append(beat.data)
                    if beat.last:
                        break
            out.append(bytes(parity))

    sim = Simulator(dut)
    sim.add_clock(CLOCK_S)
    sim.add_testbench(bench)
    sim.run()
    return out, cycles[0]


def simulate_encode(data: bytes, t: int, config: BchConfig = BchConfig()) -> bytes:
    """Parity bytes for ``data`` at correction capability ``t``, computed by the encoder gateware."""
    return simulate_encode_many([(data, t)], config)[0][0]


def simulate_decode_many(jobs: list[tuple[bytes, bytes, int]], config: BchConfig = BchConfig(),
                         gap: int = 0, ready_every: int = 1) -> tuple[list[tuple[bytes, int]], list[int]]:
    """Decode codewords (data, parity, t) streamed back to back, ``gap`` idle cycles between them;
    the error stream's consumer is ready one cycle in ``ready_every``.

    Returns (corrected data, corrected count or -1) per codeword and, per codeword,
    the cycle at which its status came out, counted from the first codeword's first byte (engine cycles; a
    search at twice the clock runs two of its cycles in each).
    """
    for d, p, t in jobs:
        _check(d, t, config)
        if len(p) != config.ecc_bytes(t):
            raise NandrigError(f"t = {t} needs {config.ecc_bytes(t)} parity bytes, got {len(p)}")
    dut = BchDecoder(config)
    results: list[tuple[bytes, int]] = []
    done_at: list[int] = []
    starts: list[int] = []
    cycle = [0]

    async def feed(ctx):
        for d, p, t in jobs:
            raw = d + p
            i = 0
            while i < len(raw):
                ctx.set(dut.t, t)
                ctx.set(dut.data_in.valid, 1)
                ctx.set(dut.data_in.payload, {"data": raw[i], "first": i == 0, "last": i == len(raw) - 1})
                if i == 0:
                    starts.append(cycle[0])
                await ctx.tick()
                if ctx.get(dut.data_in.ready):
                    i += 1
            ctx.set(dut.data_in.valid, 0)
            for _ in range(gap):
                await ctx.tick()

    async def collect(ctx):
        ctx.set(dut.status.ready, 1)
        for d, _parity, _t in jobs:
            fixes: list[tuple[int, int]] = []
            while True:
                ready = cycle[0] % ready_every == 0
                ctx.set(dut.errors.ready, ready)
                if ready and ctx.get(dut.errors.valid):
                    e = ctx.get(dut.errors.payload)
                    fixes.append((e.byte, e.mask))
                st = ctx.get(dut.status.payload) if ctx.get(dut.status.valid) else None
                if st is not None:
                    done_at.append(cycle[0])
                await ctx.tick()
                cycle[0] += 1
                if st is not None:
                    break
            out = bytearray(d)
            if st.erased:
                out = bytearray(b"\xff" * len(d))
            else:
                for byte, mask in fixes:
                    if byte < len(d):
                        out[byte] ^= mask
            results.append((bytes(out), -1 if st.fail else st.corrected))

    sim = Simulator(dut)
    add_engine_clocks(sim, config)
    sim.add_testbench(feed)
    sim.add_testbench(collect)
    sim.run()
    return results, [end - starts[0] for end in done_at]


def simulate_decode(data: bytes, parity: bytes, t: int, config: BchConfig = BchConfig()) -> tuple[bytes, int]:
    """Corrected data and the number of corrected errors (-1: uncorrectable), from the decoder gateware."""
    return simulate_decode_many([(data, parity, t)], config)[0][0]
