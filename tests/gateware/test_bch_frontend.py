"""The BCH frontend between a page buffer and the engine, in simulation, against bchlib (Linux lib/bch.c)."""
import random

import bchlib
import pytest
from amaranth import Module
from amaranth.sim import Simulator

from nandrig.gateware.bch import BchConfig
from nandrig.gateware.bch.frontend import DECODE, ENCODE, BchFrontend
from nandrig.gateware.bch.sim import add_engine_clocks
from nandrig.gateware.onfi.buffer import PageBuffer

CFG = BchConfig(k_bytes=32, t_max=6)
DATA, PARITY = 8, 100  # byte addresses, deliberately not word aligned


def run(jobs, cfg=CFG):
    """jobs: (op, t, buffer image) run one after another on one buffer; returns per job the
    (buffer after, corrected, fail, erased)."""
    mod = Module()
    mod.submodules.buf = buf = PageBuffer(256)
    mod.submodules.fe = fe = BchFrontend(cfg, addr_bits=8)
    mod.d.comb += [buf.eng_addr.eq(fe.addr), buf.eng_we.eq(fe.we), buf.eng_wdata.eq(fe.wdata), fe.rdata.eq(buf.eng_rdata)]
    results = []

    async def bench(ctx):
        for op, t, image in jobs:
            ctx.set(buf.cpu_sel, 0xF)
            for w in range(64):
                ctx.set(buf.cpu_addr, w)
                ctx.set(buf.cpu_wdata, int.from_bytes(image[4 * w:4 * w + 4], "little"))
                ctx.set(buf.cpu_we, 1)
                await ctx.tick()
            ctx.set(buf.cpu_we, 0)
            ctx.set(fe.op, op)
            ctx.set(fe.t, t)
            ctx.set(fe.data_addr, DATA)
            ctx.set(fe.parity_addr, PARITY)
            ctx.set(fe.start, 1)
            await ctx.tick()
            ctx.set(fe.start, 0)
            for _ in range(2000):
                if not ctx.get(fe.busy):
                    break
                await ctx.tick()
            assert not ctx.get(fe.busy)
            out = bytearray()
            for w in range(64):
                ctx.set(buf.cpu_addr, w)
                await ctx.tick()
                out += ctx.get(buf.cpu_rdata).to_bytes(4, "little")
            results.append((bytes(out), ctx.get(fe.corrected), ctx.get(fe.fail), ctx.get(fe.erased)))

    sim = Simulator(mod)
    add_engine_clocks(sim, cfg)
    sim.add_testbench(bench)
    sim.run()
    return results


def image(data: bytes, parity: bytes = b"") -> bytes:
    img = bytearray(random.Random(0).randbytes(256))  # neighbours the engine must leave alone
    img[DATA:DATA + len(data)] = data
    img[PARITY:PARITY + len(parity)] = parity
    return bytes(img)


def test_encode_writes_bchlib_parity_and_nothing_else():
    rng = random.Random(1)
    jobs = [(ENCODE, t, image(rng.randbytes(32))) for t in (1, 6, 3)]
    for (_, t, before), (after, *_rest) in zip(jobs, run(jobs)):
        ecc = bytes(bchlib.BCH(t, prim_poly=CFG.prim_poly).encode(before[DATA:DATA + 32]))
        expect = bytearray(before)
        expect[PARITY:PARITY + len(ecc)] = ecc
        assert after == bytes(expect)


@pytest.mark.parametrize("ratio", [1, 2])
def test_decode_corrects_in_place_and_reports_failure_and_erased(ratio):
    """The search on the engine's clock, and on its own at twice that (the ULX3S build's)."""
    rng = random.Random(2)
    jobs, truth = [], []
    for t, nerr in ((4, 0), (4, 4), (6, 5), (2, 1), (3, 7), (5, 2), (2, 4), (4, 6), (6, 9), (1, 3), (3, 8)):
        data = rng.randbytes(32)
        ecc = bytearray(bchlib.BCH(t, prim_poly=CFG.prim_poly).encode(data))
        d = bytearray(data)
        for b in rng.sample(range(32 * 8 + CFG.m * t), nerr):  # in data and parity alike
            if b < 256:
                d[b // 8] ^= 0x80 >> (b % 8)
            else:
                ecc[(b - 256) // 8] ^= 0x80 >> ((b - 256) % 8)
        jobs.append((DECODE, t, image(bytes(d), bytes(ecc))))
        truth.append((data, nerr, t))
    jobs.append((DECODE, 4, image(b"\xff" * 31 + b"\xfe", b"\xff" * CFG.ecc_bytes(4))))
    results = run(jobs, BchConfig(k_bytes=32, t_max=6, chien_parallelism=16 // ratio, search_clock_ratio=ratio))
    for (data, nerr, t), (_, _, before), (after, corrected, fail, erased) in zip(truth, jobs, results):
        assert not erased
        if nerr <= t:
            assert (corrected, fail) == (nerr, 0)
            assert after[DATA:DATA + 32] == data
            assert after[:DATA] + after[DATA + 32:] == before[:DATA] + before[DATA + 32:]
        elif fail:
            assert after == before  # a failed codeword stays as read
        else:  # BCH can miscorrect beyond t: then it claims at most t, never the original data
            assert corrected <= t and after[DATA:DATA + 32] != data
    assert sum(r[2] for r in results) >= 4  # most overloaded codewords are caught
    after, corrected, fail, erased = results[-1]
    assert (erased, fail, corrected) == (1, 0, 1)
