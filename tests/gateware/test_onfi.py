"""ONFI controller against the pin-level model of the virtual chip: timing, data, counters, busy, self-test."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest
from amaranth.sim import Simulator

from nandrig.virtual_chip.chip import STATUS_FAIL, VirtualChip
from nandrig.chip.param_page import decode_dump
from nandrig.chip.pattern import bits, flips, page_seed, prbs31_bytes
from nandrig.gateware.onfi import OnfiOp, OnfiSource
from nandrig.gateware.onfi.bfm import ns_per_byte
from nandrig.gateware.onfi.pattern import Prbs31, walk_byte
from nandrig.gateware.onfi.sim import run
from nandrig.chip.timing import MODES, limit_ns
from nandrig.gateware.onfi.timing import (
    DEFAULT_BOARD, DEFAULT_CLK_HZ, GEARING_LATENCY_SPREAD, GEARING_LATENCY_STEPS, WAIT_LAG_CYCLES, WAITS, mode_cycles,
)
from nandrig.gateware.onfi.phy import SYNC_STAGES
from nandrig.boards.ulx3s.build import CLOCKS as ULX3S

PERIOD = 1e9 / DEFAULT_CLK_HZ
CW = 512
CAMPAIGN = 11


def good_block(chip: VirtualChip, start: int = 1) -> int:
    return next(b for b in range(start, chip.geometry.blocks) if chip.read(b, 0).data[chip.geometry.page_bytes] == 0xFF)


def row(chip: VirtualChip, block: int, page: int) -> int:
    return block << (chip.geometry.pages_per_block - 1).bit_length() | page


def expected_counts(want: bytes, got: bytes, cw: int) -> list[tuple[int, int]]:
    return [flips(bits(want[i:i + cw]), bits(got[i:i + cw])) for i in range(0, len(want), cw)]


async def to_mode(d, mode: int) -> None:
    st = await d.op(OnfiOp.SET_FEATURES, faddr=0x01, params=mode)
    assert not st["chip_status"] & STATUS_FAIL
    d.ctrl["mode"] = mode


@pytest.mark.parametrize("clk_hz", [DEFAULT_CLK_HZ, ULX3S.sys_hz, 100e6])
@pytest.mark.parametrize("mode", range(6))
def test_timing_mode_cycles_cover_the_table(mode, clk_hz):
    period = 1e9 / clk_hz
    c, t = mode_cycles(mode, clk_hz), MODES[mode]
    # every strobe width and period, and every setup and hold between two lines, keeps a cycle or a tenth over its
    # minimum: CLE/ALE's setups in command and address cycles only, where the WE# low is longer
    guarded = lambda *ns: max(n + min(period, n / 10) for n in ns)  # noqa: E731
    assert c.wp * period >= guarded(t.tWP, t.tDS)
    assert c.wp_latch * period >= guarded(t.tWP, t.tDS, t.tCLS, t.tALS)
    for wh in (c.wh, c.wh_latch):
        assert wh * period >= guarded(t.tWH, t.tCLH, t.tALH, t.tDH, t.tCH)
    assert min(c.write_cycle, c.latch_cycle) * period >= guarded(t.tWC)
    assert c.read_cycle * period >= guarded(t.tRC)
    assert c.rp * period >= guarded(t.tRP) and c.reh * period >= guarded(t.tREH)
    assert c.adl * period >= 400 and c.ccs * period >= 500 and c.whr * period >= t.tWHR  # the kernel's values
    # the capture edge: after data valid at the slowest board, before data invalid at the fastest, with margins;
    # the byte is held tRHOH after RE# rises, and tRLOH after the next RE# fall only in EDO (tRC < 30 ns)
    b = DEFAULT_BOARD
    rc_ns = c.read_cycle * period
    held = max(c.rp * period + t.tRHOH, rc_ns + t.tRLOH if rc_ns < 30 else 0)
    assert c.sample * period >= t.tREA + b.delay_max_ns + b.setup_ns
    assert c.sample * period <= held + b.delay_min_ns - b.hold_ns
    assert c.capture_ok and c.setup_margin_ns >= b.setup_ns and c.hold_margin_ns >= b.hold_ns
    # RE# is held low no longer than that needs: one cycle less leaves no edge with both margins
    if (c.rp - 1) * period >= guarded(t.tRP):
        rp = c.rp - 1
        reh = max(math.ceil(guarded(t.tREH) / period - 1e-9), math.ceil(guarded(t.tRC) / period - 1e-9) - rp)
        shorter = max(rp * period + t.tRHOH, (rp + reh) * period + t.tRLOH if (rp + reh) * period < 30 else 0)
        assert c.sample * period > shorter + b.delay_min_ns - b.hold_ns
    # writes at the default clock stay within 0.75 of the mode's limit: the guard alone caps it at 1 / 1.1, whole
    # cycles cost the rest (mode 4: 33.3 ns against tWC 25, its guarded 27.5 rounded up to three cycles)
    if clk_hz == DEFAULT_CLK_HZ:
        assert limit_ns(mode)[0] / (c.write_cycle * period) >= 0.75 - 1e-9


def test_a_slow_clock_stretches_fast_modes():
    # at 40 MHz (25 ns) mode 5 still works, RE# and WE# stretched, but runs at 0.4 of its 20 ns cycle
    c = mode_cycles(5, 40e6)
    assert c.capture_ok and c.write_cycle == 2 and limit_ns(5)[0] / (c.write_cycle * 25.0) == pytest.approx(0.4)


def test_prbs_matches_the_python_pattern_bit_for_bit():
    dut = Prbs31()
    seeds = [1, 0, 0x7FFFFFFF, page_seed(CAMPAIGN, 5, 17), 0x12345678]
    got = {}

    async def bench(ctx):
        for seed in seeds:
            ctx.set(dut.seed, seed & 0x7FFFFFFF)
            ctx.set(dut.load, 1)
            await ctx.tick()
            ctx.set(dut.load, 0)
            ctx.set(dut.advance, 1)
            out = bytearray()
            for _ in range(700):
                out.append(ctx.get(dut.byte))
                await ctx.tick()
            ctx.set(dut.advance, 0)
            got[seed] = bytes(out)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    for seed in seeds:
        assert got[seed] == prbs31_bytes(seed, 700), seed


# (system clock, NAND clock or None for the same, the NAND clock's phase): the default build, the ULX3S's two
# clocks, and a ratio that is no integer with the edges apart
CLOCKS = [(DEFAULT_CLK_HZ, None, 0.0), (ULX3S.sys_hz, ULX3S.nand_hz, 0.0), (37e6, 100e6, 0.37)]
ROUND_TRIPS = [(m, *CLOCKS[0]) for m in range(6)] + [(m, *CLOCKS[1]) for m in range(6)] + [(m, *CLOCKS[2]) for m in (0, 5)]


@pytest.mark.parametrize("mode,clk_hz,nand_hz,phase", ROUND_TRIPS)
def test_program_read_round_trip_at_every_mode(mode, clk_hz, nand_hz, phase):
    """Every mode on the default clock and with the PHY on a clock of its own: the bytes cross both ways
    unchanged, the bus timing is the NAND clock's, busy times are counted in its cycles."""
    chip = VirtualChip("mlc-small", seed=3)
    g = chip.geometry
    blk = good_block(chip)
    seed = page_seed(CAMPAIGN, blk, 0)
    n = g.raw_page_bytes

    async def script(d):
        await d.op(OnfiOp.RESET)
        await to_mode(d, mode)
        e = await d.op(OnfiOp.ERASE, row=row(chip, blk, 0))
        p = await d.op(OnfiOp.PROGRAM, row=row(chip, blk, 0), length=n, src=OnfiSource.PRBS, seed=seed)
        r = await d.op(OnfiOp.READ, row=row(chip, blk, 0), length=n, src=OnfiSource.PRBS, seed=seed, cw_bytes=CW)
        return e, p, r, await d.read_buffer(n), await d.codeword_counts(-(-n // CW))

    (e, p, r, buf, cws), bfm = run(chip, script, clk_hz, nand_clk_hz=nand_hz, nand_phase=phase)
    assert bfm.log.violation_count == 0, bfm.log.violations
    assert chip.read(blk, 0).data != b"\xff" * n  # it was really programmed
    assert buf == bfm.last_read
    want = prbs31_bytes(seed, n)
    assert cws == expected_counts(want, buf, CW)
    assert (r["err_1to0"], r["err_0to1"]) == flips(bits(want), bits(buf))
    assert r["codewords"] == -(-n // CW)
    # busy times: measured from the confirming WE# rise to R/B# high, within one clock of the model's; a busy
    # time the model scales below the PHY's first look at R/B# (tWB, then the synchronizer: the read's here) is
    # over by then, and reads as that look
    busy = {name: ns for name, _, ns in bfm.log.ops}
    period = 1e9 / (nand_hz or clk_hz)
    look = (mode_cycles(mode, nand_hz or clk_hz).wb + SYNC_STAGES + 1) * period
    for st, name in ((e, "erase"), (p, "program"), (r, "read")):
        if busy[name] > look:
            assert abs(st["busy_cycles"] * period - busy[name]) <= period + 1e-6, name
        else:
            assert busy[name] <= st["busy_cycles"] * period <= look, name
        assert st["chip_status"] & 0x40 or name == "read"
    # the sequencer gives one beat per system cycle: a slower system clock than the bus cycle is the limit
    c, sys_ns = mode_cycles(mode, nand_hz or clk_hz), 1e9 / clk_hz
    assert ns_per_byte(bfm.din_times) == pytest.approx(max(c.write_cycle * period, sys_ns), rel=0.01)
    assert ns_per_byte(bfm.dout_times) == pytest.approx(max(c.read_cycle * period, sys_ns), rel=0.01)


@pytest.mark.parametrize("clk_hz,nand_hz,phase", CLOCKS[:2])
def test_cache_program_and_cache_read_overlap_transfers_with_the_array(clk_hz, nand_hz, phase):
    """80h-15h takes each next page while the array programs the one before; 31h brings a page out while the
    array reads the next, 3Fh the last: data exact, the model's timing clean, the transfers inside array time."""
    chip = VirtualChip("mlc-small", seed=3)
    blk = good_block(chip)
    n = chip.geometry.raw_page_bytes
    seeds = [page_seed(CAMPAIGN, blk, p) for p in range(3)]
    # mlc-small's pages at mode 5 take ~40 us on the bus: busy times a third of real ones are long enough to overlap
    scale = 0.3

    async def script(d):
        await to_mode(d, 5)
        await d.op(OnfiOp.ERASE, row=row(chip, blk, 0))
        progs = [await d.op(OnfiOp.CACHE_PROGRAM if p < 2 else OnfiOp.PROGRAM, row=row(chip, blk, p), length=n,
                            src=OnfiSource.PRBS, seed=seeds[p]) for p in range(3)]
        reads = []
        for p, op in enumerate((OnfiOp.READ, OnfiOp.READ_CACHE, OnfiOp.READ_CACHE, OnfiOp.READ_CACHE_END)):
            r = await d.op(op, row=row(chip, blk, 0), length=n, src=OnfiSource.PRBS, seed=seeds[max(p - 1, 0)])
            reads.append((r, await d.read_buffer(n)))
        return progs, reads

    (progs, reads), bfm = run(chip, script, clk_hz, nand_clk_hz=nand_hz, nand_phase=phase, busy_scale=scale)
    assert bfm.log.violation_count == 0, bfm.log.violations
    for p in range(3):  # what the array holds is each page's pattern
        got = chip.read(blk, p).data
        assert sum(flips(bits(prbs31_bytes(seeds[p], n)), bits(got))) < n * 8 * 1e-3, p
    for st in progs:
        assert st["chip_status"] & 0x43 == 0x40  # ready, no FAIL, no FAILC
    # the READ's buffer is page 0 again when 31h starts: each 31h/3Fh brings out the page read before it
    for (r, buf), p in zip(reads[1:], range(3)):
        want = prbs31_bytes(seeds[p], n)
        assert (r["err_1to0"], r["err_0to1"]) == flips(bits(want), bits(buf)), p
        assert sum(flips(bits(want), bits(buf))) < n * 8 * 1e-3, p
    assert [(name, args) for name, args, _ in bfm.log.ops][-7:] == [
        ("cache-program", (blk, 0)), ("cache-program", (blk, 1)), ("program", (blk, 2)), ("read", (blk, 0)),
        ("cache-read", (blk, 1)), ("cache-read", (blk, 2)), ("cache-read-end", (blk, 2))]
    # R/B# low only for the move between registers: the array did its work while the bus carried data
    busy = {name: ns for name, _, ns in bfm.log.ops}
    assert busy["cache-program"] < busy["program"] / 10 and busy["cache-read"] < busy["read"] / 3
    assert [name for name, _ in bfm.array_ops][-6:] == ["program"] * 3 + ["read"] * 3


def test_cache_program_reports_the_page_before_the_last_in_failc():
    chip = VirtualChip("mlc-small", seed=3)
    blk = good_block(chip)
    n = chip.geometry.raw_page_bytes

    async def script(d):
        await to_mode(d, 5)
        await d.op(OnfiOp.ERASE, row=row(chip, blk, 0))
        out = []
        for op, page in ((OnfiOp.CACHE_PROGRAM, 0), (OnfiOp.CACHE_PROGRAM, 3), (OnfiOp.CACHE_PROGRAM, 1),
                         (OnfiOp.PROGRAM, 5)):
            out.append(await d.op(op, row=row(chip, blk, page), length=n, src=OnfiSource.PRBS, seed=page + 1))
        return [st["chip_status"] & 0x03 for st in out]

    # page 1 (never programmed) after page 3 breaks the program order: the chip fails it. Its status shows FAIL once the array
    # is idle (these busy times are scaled down, so it is by then), and the next page's shows FAILC for it
    statuses, bfm = run(chip, script)
    assert bfm.log.violation_count == 0, bfm.log.violations
    assert statuses == [0, 0, 0x01, 0x02]


def test_injected_errors_are_counted_exactly():
    chip = VirtualChip("mlc-small", seed=4)
    blk = good_block(chip)
    n = chip.geometry.raw_page_bytes
    rng = random.Random(5)
    flipped = rng.sample(range(n * 8), 300) + list(range(8 * 600, 8 * 600 + 8))  # and one whole byte
    seed = page_seed(CAMPAIGN, blk, 0)

    async def script(d):
        await to_mode(d, 5)
        await d.op(OnfiOp.ERASE, row=row(chip, blk, 0))
        await d.op(OnfiOp.PROGRAM, row=row(chip, blk, 0), length=n, src=OnfiSource.PRBS, seed=seed)
        r = await d.op(OnfiOp.READ, row=row(chip, blk, 0), length=n, src=OnfiSource.PRBS, seed=seed, cw_bytes=CW)
        return r, await d.codeword_counts(-(-n // CW)), d.lanes()

    (r, cws, (l10, l01)), bfm = run(chip, script, inject={(blk, 0): flipped})
    assert bfm.log.violation_count == 0
    want, got = prbs31_bytes(seed, n), bfm.last_read
    assert cws == expected_counts(want, got, CW)
    assert r["err_1to0"] + r["err_0to1"] >= 300  # injected flips on top of whatever the cells did
    wb, gb = bits(want).reshape(-1, 8), bits(got).reshape(-1, 8)
    for lane in range(8):  # lane k is DQ[k], bit 7 - k of the MSB-first byte
        col = 7 - lane
        assert l10[lane] == int(np.sum((wb[:, col] == 1) & (gb[:, col] == 0)))
        assert l01[lane] == int(np.sum((wb[:, col] == 0) & (gb[:, col] == 1)))
    assert r["max_cw"] == max(a + b for a, b in cws)


def test_worn_and_aged_page_counts_match_the_chip():
    chip = VirtualChip("mlc-small", seed=6)
    blk = good_block(chip)
    chip.cycle(blk, 10_000, seed=1, program=False)
    n = chip.geometry.raw_page_bytes
    seeds = {pg: page_seed(CAMPAIGN, blk, pg) for pg in range(4)}

    async def program(d):
        await to_mode(d, 4)
        for pg in range(4):
            await d.op(OnfiOp.PROGRAM, row=row(chip, blk, pg), length=n, src=OnfiSource.PRBS, seed=seeds[pg])

    async def read(d):
        await to_mode(d, 4)
        out = []
        for pg in range(4):
            r = await d.op(OnfiOp.READ, row=row(chip, blk, pg), length=n, src=OnfiSource.PRBS, seed=seeds[pg], cw_bytes=CW)
            out.append((r, await d.read_buffer(n)))
        return out

    _, bfm = run(chip, program)
    assert bfm.log.violation_count == 0
    chip.wait(hours=24 * 365)
    out, bfm = run(chip, read)
    assert bfm.log.violation_count == 0
    total = 0
    for pg, (r, data) in enumerate(out):
        want = prbs31_bytes(seeds[pg], n)
        assert (r["err_1to0"], r["err_0to1"]) == flips(bits(want), bits(data))
        total += r["err_1to0"] + r["err_0to1"]
    assert total > 20  # a year after 10,000 cycles: real errors, counted next to the chip


@pytest.mark.parametrize("stuck", [None, (3, 0), (6, 1)])
def test_interface_self_test_finds_a_bad_dq_line(stuck):
    chip = VirtualChip("mlc-small", seed=3)
    blk = good_block(chip)

    async def script(d):
        await to_mode(d, 5)
        st = await d.op(OnfiOp.SELFTEST, row=row(chip, blk, 3), col=0, length=64, src=OnfiSource.WALK)
        return st, d.lanes(), await d.read_buffer(64)

    (st, (l10, l01), back), bfm = run(chip, script, stuck_dq=stuck)
    assert [name for name, _, _ in bfm.log.ops] == ["set-features", "change-read-column"]  # nothing programmed
    assert chip.blocks.get(blk) is None or chip.blocks[blk].last_page < 3
    if stuck is None:
        assert st["err_1to0"] == st["err_0to1"] == 0
        assert back == bytes(walk_byte(i) for i in range(64))
    else:
        line, level = stuck
        bad = l01 if level else l10
        assert bad[line] == 32 and sum(bad) == 32  # that lane and no other
        assert sum(l10 if level else l01) == 0


def test_identity_parameter_page_and_features():
    chip = VirtualChip("mlc-small", seed=3)

    async def script(d):
        await d.op(OnfiOp.RESET)
        await d.op(OnfiOp.READ_ID, faddr=0x00, length=5)
        jedec = await d.read_buffer(5)
        await d.op(OnfiOp.READ_ID, faddr=0x20, length=4)
        onfi = await d.read_buffer(4)
        await d.op(OnfiOp.READ_PARAM, length=768)
        param = await d.read_buffer(768)
        await to_mode(d, 3)
        await d.op(OnfiOp.GET_FEATURES, faddr=0x01, length=4)
        return jedec, onfi, param, await d.read_buffer(4)

    (jedec, onfi, param, feat), bfm = run(chip, script)
    assert bfm.log.violation_count == 0
    assert jedec == chip.read_id(0x00) and onfi == b"ONFI"
    assert decode_dump(param).page == chip.profile.parameter_page()
    assert feat == bytes([3, 0, 0, 0])


@pytest.mark.parametrize("op,busy_scale", [(OnfiOp.ERASE, 1e-3), (OnfiOp.READ, 0.1)])  # both busy beyond 60 cycles
@pytest.mark.parametrize("clk_hz,nand_hz,phase", CLOCKS)
def test_busy_timeout_releases_the_chip(op, busy_scale, clk_hz, nand_hz, phase):
    """A WAIT_RB that gives up: CE# released, no bus cycle while the chip is busy (the beats queued behind
    the wait are dropped), the next operation clean."""
    chip = VirtualChip("mlc-small", seed=3)
    blk = good_block(chip)
    n = chip.geometry.raw_page_bytes

    async def script(d):
        st = await d.op(op, row=row(chip, blk, 0), timeout=60, length=n, src=OnfiSource.PRBS, seed=1)
        ce_after = d.ctx.get(d.dut.pins.ce_n)
        for _ in range(2000):
            await d.ctx.tick()
        return st, ce_after, await d.op(OnfiOp.READ_STATUS, timeout=1 << 30)

    (st, ce_after, later), bfm = run(chip, script, clk_hz, nand_clk_hz=nand_hz, nand_phase=phase, busy_scale=busy_scale)
    assert st["timed_out"] == 1 and ce_after == 1
    assert later["timed_out"] == 0 and later["chip_status"] & 0x40
    assert bfm.log.violation_count == 0, bfm.log.violations


def test_write_protect_blocks_program():
    chip = VirtualChip("mlc-small", seed=3)
    blk = good_block(chip)

    async def script(d):
        await d.op(OnfiOp.ERASE, row=row(chip, blk, 0))
        return await d.op(OnfiOp.PROGRAM, row=row(chip, blk, 0), length=64, src=OnfiSource.PRBS, seed=5, wp_n=0)

    st, bfm = run(chip, script)
    assert st["chip_status"] & STATUS_FAIL
    assert chip.read(blk, 0).data == b"\xff" * chip.geometry.raw_page_bytes


def test_the_model_catches_a_controller_faster_than_the_chip():
    chip = VirtualChip("mlc-small", seed=3)

    async def script(d):
        return await d.op(OnfiOp.READ_ID, faddr=0x20, length=4, mode=5)  # the chip is still in mode 0

    _, bfm = run(chip, script)
    assert bfm.log.violation_count > 0
    assert any("tWP" in v for v in bfm.log.violations) and any("tRC" in v or "tRP" in v for v in bfm.log.violations)


@pytest.mark.parametrize("delay,trim,clean", [(0.0, 0, True), (8.0, 0, True), (20.0, 0, False), (20.0, 1, True)])
def test_capture_keeps_its_margins_across_the_board_delays_and_trim_reaches_beyond(delay, trim, clean):
    """0-8 ns round trip is the stated board range (DEFAULT_BOARD): captures keep their margins at both ends
    untrimmed; a longer delay breaks them until rd_trim moves the edge."""
    chip = VirtualChip("mlc-small", seed=3)

    async def script(d):
        await to_mode(d, 5)
        return await d.op(OnfiOp.SELFTEST, row=row(chip, 1, 0), length=32, src=OnfiSource.WALK, rd_trim=trim)

    st, bfm = run(chip, script, io_delay_ns=delay)
    captures = [v for v in bfm.log.violations if "read capture" in v]
    assert (bfm.log.violation_count == 0) == clean and len(captures) == bfm.log.violation_count
    assert (st["err_1to0"] + st["err_0to1"] == 0) == clean


LATE = GEARING_LATENCY_STEPS + GEARING_LATENCY_SPREAD  # the IDDRX2F's latency at its divider's other reset phase


@pytest.mark.parametrize("delay,latency", [(0.0, None), (5.3, None), (8.0, LATE), (15.0, None), (20.0, LATE)])
@pytest.mark.slow
def test_input_gearing_reads_every_mode_at_its_calibrated_point_across_the_board_delays(delay, latency):
    """The ULX3S bitstream's clocks, DQ sampled four times a cycle (IDDRX2F) and handed to the PHY the gearing's
    latency later (``latency``: None for its nominal, or the divider's other reset phase): at round trips up to the
    sweep's reach, each mode at the trim the start-up sweep settles on reads READ ID, the parameter page (CRC good)
    and a full PRBS page exactly, every capture inside its window with the margins, and every mode at >= 0.75 of
    tRC (mode 4's guarded 27.5 ns in three cycles)."""
    from nandrig.boards.sim.wiring import Wiring
    from nandrig.boards.ulx3s.build import CLOCKS as clocks

    steps = clocks.capture_steps
    assert steps == 4
    chip = VirtualChip("mlc-small", seed=3)
    blk = good_block(chip)
    seed, n = page_seed(CAMPAIGN, blk, 0), chip.geometry.raw_page_bytes
    wiring = Wiring(delay, latency_steps=latency)

    async def script(d):
        await d.op(OnfiOp.RESET)
        d.ctrl["rd_trim"] = wiring.calibrated_trim(0, clocks.phy_hz, steps)
        await d.op(OnfiOp.ERASE, row=row(chip, blk, 0))
        await d.op(OnfiOp.PROGRAM, row=row(chip, blk, 0), length=n, src=OnfiSource.PRBS, seed=seed)
        out, margins = {}, {}
        for mode in range(6):
            await to_mode(d, mode)
            d.model.log.margins_from_here()
            d.ctrl["rd_trim"] = wiring.calibrated_trim(mode, clocks.phy_hz, steps)
            await d.op(OnfiOp.READ_ID, faddr=0x20, length=4)
            onfi = await d.read_buffer(4)
            await d.op(OnfiOp.READ_PARAM, length=768)
            param = await d.read_buffer(768)
            r = await d.op(OnfiOp.READ, row=row(chip, blk, 0), length=n, src=OnfiSource.PRBS, seed=seed)
            out[mode] = onfi, param, await d.read_buffer(n), r, ns_per_byte(d.model.dout_times)
            margins[mode] = d.model.log.margins(clocks.phy_hz)
        return out, margins

    (out, margins), bfm = run(chip, script, clocks.sys_hz, nand_clk_hz=clocks.nand_hz, capture_steps=steps,
                              latency_steps=latency, io_delay_ns=delay)
    assert bfm.log.violation_count == 0, bfm.log.violations
    # the board build's margin table: nothing below its minimum at any mode, and every wait, latch setup and hold
    # between two lines' edges a PHY cycle (or a tenth) past it
    assert all(min(m["interval_slack_ns"].values()) >= 0 and "tWHR" in m["interval_slack_ns"]
               and not m["short_of_guard"] for m in margins.values()), margins
    want = prbs31_bytes(seed, n)
    for mode, (onfi, param, page, r, read_ns) in out.items():
        assert onfi == b"ONFI" and decode_dump(param).page == chip.profile.parameter_page(), mode
        assert page == chip.read(blk, 0).data[:n] and (r["err_1to0"], r["err_0to1"]) == flips(bits(want), bits(page))
        assert limit_ns(mode)[1] / read_ns >= 0.75, mode
    # without gearing, modes 2 and 5 read slower: their window is narrower than a clock period plus the margins
    assert all(mode_cycles(m, clocks.phy_hz).read_cycle > mode_cycles(m, clocks.phy_hz, steps=4).read_cycle
               for m in (2, 5))


def test_input_gearing_capture_margins_come_from_the_calibrated_point():
    """With four samples a cycle the capture point is the sweep's centre for the board at hand: every mode keeps
    the board's setup and hold margins at every round trip up to the sweep's reach (0.7 ns apart) and at every
    latency of the gearing, and the sweep as the rigs run it (:class:`Wiring`) settles on that point."""
    from nandrig.boards.sim.wiring import Wiring
    from nandrig.gateware.onfi.timing import data_window_ps

    assert DEFAULT_BOARD.reach_ns >= 20.0
    for mode in range(6):
        c = mode_cycles(mode, ULX3S.phy_hz, steps=4)
        assert c.setup_margin_ns >= DEFAULT_BOARD.setup_ns and c.hold_margin_ns >= DEFAULT_BOARD.hold_ns, mode
        for latency in range(GEARING_LATENCY_STEPS, GEARING_LATENCY_STEPS + GEARING_LATENCY_SPREAD + 1):
            for tenth in range(0, round(DEFAULT_BOARD.reach_ns * 10) + 1, 7):
                delay = tenth / 10
                first, last = data_window_ps(mode, ULX3S.phy_hz, delay, steps=4, latency_steps=latency)
                trim = Wiring(delay, latency_steps=latency).calibrated_trim(mode, ULX3S.phy_hz, 4)
                assert trim is not None, (mode, latency, delay)
                point = (c.sample + trim) * round(1e12 / ULX3S.phy_hz) // 4
                assert first + DEFAULT_BOARD.setup_ns * 1000 - 1 <= point <= last - DEFAULT_BOARD.hold_ns * 1000 + 1, \
                    (mode, latency, delay)


@pytest.mark.parametrize("clk_hz,nand_hz,phase", CLOCKS[:2])
def test_buffer_source_and_change_read_column(clk_hz, nand_hz, phase):
    """Programs from the page buffer run at the mode's write cycle: on the ULX3S's clocks too, where the
    system clock gives one byte per 20 ns, mode 5's tWC (the buffer is read ahead)."""
    chip = VirtualChip("mlc-small", seed=3)
    blk = good_block(chip)
    rng = random.Random(2)
    data = bytes(rng.randrange(256) for _ in range(1000))

    async def script(d):
        await to_mode(d, 5)
        await d.write_buffer(data, 8)
        await d.op(OnfiOp.ERASE, row=row(chip, blk, 0))
        await d.op(OnfiOp.PROGRAM, row=row(chip, blk, 0), length=len(data), src=OnfiSource.BUFFER, buf_addr=8)
        sent = bytes(d.model.register[:len(data)])  # what crossed the bus, before the read replaces it
        await d.op(OnfiOp.READ, row=row(chip, blk, 0), length=16, src=OnfiSource.BUFFER, buf_addr=4096)
        await d.op(OnfiOp.CHANGE_READ_COLUMN, col=900, length=100, buf_addr=2048)
        return sent, await d.read_buffer(16, 4096), await d.read_buffer(100, 2048)

    (sent, head, tail), bfm = run(chip, script, clk_hz, nand_clk_hz=nand_hz, nand_phase=phase)
    assert bfm.log.violation_count == 0
    assert sent == data
    assert ns_per_byte(bfm.din_times) == pytest.approx(mode_cycles(5, nand_hz or clk_hz).write_cycle * 1e9 / (nand_hz or clk_hz))
    page = bfm.last_read
    assert head == page[:16] and tail == page[900:1000]


@pytest.mark.parametrize("ccs_ns,clean", [(0, True), (400, True), (300, False), (5000, True)])
def test_change_read_column_waits_the_chips_own_tccs(ccs_ns, clean):
    """tCCS from the parameter page (mlc-small: 400 ns) shortens CHANGE READ COLUMN's wait from ONFI's 500 ns;
    the bus model holds the controller to the chip's own figure, so a shorter one is caught; a long one (5 us,
    beyond the timing table's counters) is waited in full."""
    chip = VirtualChip("mlc-small", seed=3)
    assert chip.profile.parameter_page().t_ccs_ns == 400
    period = 1e9 / DEFAULT_CLK_HZ

    async def script(d):
        await to_mode(d, 5)
        await d.op(OnfiOp.READ, row=row(chip, good_block(chip), 0), length=16, src=OnfiSource.BUFFER)
        await d.op(OnfiOp.CHANGE_READ_COLUMN, col=100, length=8, ccs=math.ceil(ccs_ns / period))
        return d.model.dout_times[0] - d.model.e0_rise

    gap, bfm = run(chip, script)
    # the wait in whole cycles, its gate a cycle late (timing.WAIT_LAG_CYCLES)
    need = max(ccs_ns or 500, mode_cycles(5).whr * period)
    assert need <= gap + 1e-6 and gap <= need + (1 + WAIT_LAG_CYCLES) * period + 1e-6
    assert (bfm.log.violation_count == 0) == clean
    assert clean or all("tCCS" in v for v in bfm.log.violations)


@pytest.mark.slow
def test_bench_onfi_reports_every_mode(run_cli):
    import json

    res = run_cli("bench", "onfi", "--no-synth")
    assert res.code == 0, res.err
    out = json.loads(res.out)
    assert [r["mode"] for r in out["modes"]] == list(range(6))
    assert out["timing_violations"] == 0 and out["min_write_fraction_of_limit"] >= 0.75
    for r in out["modes"]:
        assert r["meets"] and r["set_features_ok"] and r["bit_errors_read"] == 0
        # the margin table: every interval of a program and a read, none below its minimum (0 violations), and
        # every one a PHY cycle (or a tenth) past it: the waits a whole cycle (the PHY's gates are a cycle late by
        # design), strobes and CLE's and ALE's setups a tenth at least
        slack = r["interval_slack_ns"]
        assert {"tWP", "tWC", "tDS", "tCLS", "tALS", "tADL", "tWHR", "tRHW", "tRHZ", "tRP", "tRC", "tRR"} <= set(slack)
        assert min(slack.values()) >= 0 and r["short_of_guard"] == []
        assert min(slack[k] for k in WAITS if k in slack) >= PERIOD - 0.005  # slacks are given to 0.01 ns
        assert r["read_cycle_ns"] == pytest.approx(mode_cycles(r["mode"]).read_cycle * PERIOD)
        assert r["capture_setup_margin_ns"] >= 2.0 and r["capture_hold_margin_ns"] >= 1.0
        assert 0 < r["program_overhead_ns"] < 2000 and 0 < r["read_overhead_ns"] < 2000
        assert r["write_cycle_ns"] == pytest.approx(mode_cycles(r["mode"]).write_cycle * PERIOD)


@pytest.mark.parametrize("clk_hz,nand_hz,phase", CLOCKS[:2])
def test_targets_share_the_bus_while_each_array_works(clk_hz, nand_hz, phase):
    """Three chips on one bus, each on its own CE# and R/B#: a launch leaves its target busy and the bus free, so
    the next target erases, programs and reads meanwhile; each target's R/B# is its own (a wait on one is not
    held by another's busy time); no operation reaches a target it did not select."""
    chips = [VirtualChip("mlc-small", seed=s) for s in (3, 4, 5)]
    blk = max(good_block(c) for c in chips)
    assert all(good_block(c, blk) == blk for c in chips)
    n = chips[0].geometry.raw_page_bytes
    seeds = {0: page_seed(CAMPAIGN, blk, 0), 2: page_seed(CAMPAIGN + 1, blk, 0)}
    r = row(chips[0], blk, 0)

    async def on(d, target, op, **kw):
        d.ctrl["target"] = target
        return await d.op(op, **kw)

    async def script(d):
        busy_seen = []
        for t in range(3):
            await on(d, t, OnfiOp.RESET)
            await on(d, t, OnfiOp.SET_FEATURES, faddr=0x01, params=5)
        d.ctrl["mode"] = 5
        for op, kw in ((OnfiOp.ERASE_LAUNCH, {}), (OnfiOp.PROGRAM_LAUNCH, {"length": n, "src": OnfiSource.PRBS})):
            for t in (0, 2):
                await on(d, t, op, row=r, **kw, **({"seed": seeds[t]} if kw else {}))
                busy_seen.append(d.status()["ready"])
            # target 1 answers while both arrays work: its parameter page's R/B# wait is its own
            ident = await on(d, 1, OnfiOp.READ_PARAM, length=256, src=OnfiSource.BUFFER)
            assert not ident["timed_out"]
            busy_seen.append(d.status()["ready"])
            for t in (0, 2):
                await d.until_ready(t)
                assert (await on(d, t, OnfiOp.READ_STATUS))["chip_status"] & 0x41 == 0x40
        reads = {}
        for t in (0, 2):
            await on(d, t, OnfiOp.READ_LAUNCH, row=r)
        for t in (0, 2):
            await d.until_ready(t)
            st = await on(d, t, OnfiOp.CHANGE_READ_COLUMN, col=0, length=n, src=OnfiSource.PRBS, seed=seeds[t])
            reads[t] = st, await d.read_buffer(n)
        return busy_seen, reads

    (busy_seen, reads), bfms = run(chips, script, clk_hz, nand_clk_hz=nand_hz, nand_phase=phase, busy_scale=0.25)
    assert [b.log.violation_count for b in bfms] == [0, 0, 0], [b.log.violations[:3] for b in bfms]
    # after each launch its target is busy, after the other's launch both are, and target 1's wait ended with
    # target 2 still busy; target 1 stays ready
    assert [b & m for b, m in zip(busy_seen, [0b111, 0b111, 0b110] * 2)] == [0b110, 0b010, 0b010] * 2
    for t in (0, 2):
        st, got = reads[t]
        want = prbs31_bytes(seeds[t], n)
        assert got == chips[t].read(blk, 0).data  # the page as target t's own chip holds it
        assert (st["err_1to0"], st["err_0to1"]) == flips(bits(want), bits(got))
        assert st["err_1to0"] + st["err_0to1"] < n  # programmed with its own seed, not the other target's
    assert not any(name in ("erase", "program", "read") for name, _, _ in bfms[1].log.ops)
    assert chips[1].pe_count(blk) == 0 and chips[0].pe_count(blk) == chips[2].pe_count(blk) == 1
