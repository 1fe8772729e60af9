import copy

import numpy as np
import pytest

from nandrig.boards.sim.bench import calibration_grid, wear_and_program
from nandrig.virtual_chip.calibrate import GRID_H, GRID_PE, population_rber
from nandrig.virtual_chip.chip import VirtualChip, page_map
from nandrig.chip.pattern import page_seed, prbs31_bytes
from nandrig.virtual_chip.physics import PageCondition, block_rber, lsb_only_error_probs, page_error_probs
from nandrig.virtual_chip.profile import load_profile
from nandrig.characterization import load_params
from nandrig.errors import NandrigError


def good_blocks(chip):
    return [b for b in range(chip.geometry.blocks) if b not in chip.factory_bad]


def script(chip, block, noise_block=None):
    """A fixed sequence of physical operations on ``block``; optional unrelated work on another block."""
    out = []
    for step in range(3):
        chip.erase(block)
        if noise_block is not None:
            chip.cycle(noise_block, 7, seed=step)
            chip.read(noise_block, 3)
        for p in range(chip.geometry.pages_per_block):
            chip.program(block, p, seed=page_seed(step, block, p))
        chip.wait(500.0)
        out.append(chip.read(block, 4).data)
        out.append(chip.measure(block).errors.tolist())
    return out


def test_same_seed_same_operations_same_bytes_whatever_else_happened():
    a, b = VirtualChip("mlc-small", seed=11), VirtualChip("mlc-small", seed=11)
    blk, other = good_blocks(a)[:2]
    a.cycle(blk, 3000, seed=1, program=False)
    b.cycle(blk, 3000, seed=1, program=False)
    assert script(a, blk) == script(b, blk, noise_block=other)
    c = VirtualChip("mlc-small", seed=12)
    c.cycle(blk, 3000, seed=1, program=False)
    assert script(c, blk) != script(VirtualChip("mlc-small", seed=11), blk)


def test_save_and_restore_continue_exactly(tmp_path):
    chip = VirtualChip("mlc-small", seed=3)
    blk = good_blocks(chip)[0]
    chip.cycle(blk, 2000, seed=1)
    chip.wait(100)
    twin = copy.deepcopy(chip)
    chip.save(tmp_path / "chip.state")
    restored = VirtualChip.load(tmp_path / "chip.state")
    assert restored.pe_count(blk) == 2000 and restored.clock_ns == twin.clock_ns
    assert script(restored, blk) == script(twin, blk)
    (tmp_path / "bad.state").write_bytes(b"junk")
    with pytest.raises(NandrigError, match="cannot load"):
        VirtualChip.load(tmp_path / "bad.state")


def test_byte_and_statistical_paths_agree_in_distribution():
    """Total errors by page type and direction: byte-path counts vs statistical-path expectation."""
    chip = VirtualChip("mlc-small", seed=21)
    n = chip.geometry.raw_page_bytes
    byte = np.zeros((2, 2))
    stat = np.zeros((2, 2))
    expect = np.zeros((2, 2))
    for i, blk in enumerate(good_blocks(chip)[:12]):
        chip.cycle(blk, 7999, seed=1, program=False)
        chip.erase(blk)
        for p in range(chip.geometry.pages_per_block):
            chip.program(blk, p, seed=page_seed(5, blk, p))
    chip.wait(2000)
    for blk in good_blocks(chip)[:12]:
        probe = copy.deepcopy(chip)
        m = probe.measure(blk)
        ph, b = chip._physics(blk), chip.blocks[blk]
        for p in range(chip.geometry.pages_per_block):
            wl_idx, upper = page_map(p, chip.geometry.pages_per_block)
            wl = b.wls[wl_idx]
            cond = PageCondition(wl.n, chip.equiv_h - wl.t_prog_h, b.reads, chip._rd_onset(blk), wl.pd, wl.coupled, 0)
            p10, p01 = page_error_probs(ph, cond, upper)
            want = np.unpackbits(np.frombuffer(prbs31_bytes(page_seed(5, blk, p), n), np.uint8))
            got = np.unpackbits(np.frombuffer(chip.read(blk, p).data, np.uint8))
            ones = int(want.sum())
            byte[int(upper)] += [np.sum((want == 1) & (got == 0)), np.sum((want == 0) & (got == 1))]
            stat[int(upper)] += [m.err_1to0[p], m.err_0to1[p]]
            expect[int(upper)] += [ones * p10[0], (want.size - ones) * p01[0]]
    assert expect.sum() > 1000  # enough errors for the comparison to mean something
    z_byte = (byte - expect) / np.sqrt(expect)
    z_stat = (stat - expect) / np.sqrt(expect)
    assert np.all(np.abs(z_byte) < 4.5), z_byte
    assert np.all(np.abs(z_stat) < 4.5), z_stat


def test_lsb_only_wordlines_agree_too():
    chip = VirtualChip("mlc-small", seed=22)
    blk = good_blocks(chip)[0]
    chip.cycle(blk, 9999, seed=1, program=False)
    chip.erase(blk)
    lower = [p for p in range(chip.geometry.pages_per_block) if not page_map(p, 32)[1]]
    for p in lower:
        chip.program(blk, p, seed=page_seed(9, blk, p))
    chip.wait(8760 * 3)
    # the lower page alone is read far from both states: move the reference near LM to see errors
    chip.set_read_offsets((100, 0, 0))  # VR1: the lower page alone reads there
    b, ph = chip.blocks[blk], chip._physics(blk)
    n = chip.geometry.raw_page_bytes
    got_errors, expected = 0, 0.0
    for p in lower:
        wl = b.wls[page_map(p, 32)[0]]
        cond = PageCondition(wl.n, chip.equiv_h - wl.t_prog_h, b.reads, chip._rd_onset(blk), wl.pd, False, 100)
        p10, p01 = lsb_only_error_probs(ph, cond)
        want = np.unpackbits(np.frombuffer(prbs31_bytes(page_seed(9, blk, p), n), np.uint8))
        got = np.unpackbits(np.frombuffer(chip.read(blk, p).data, np.uint8))
        got_errors += int(np.sum(got != want))
        expected += want.sum() * p10[0] + (want.size - want.sum()) * p01[0]
    assert expected > 50 and abs(got_errors - expected) < 4.5 * np.sqrt(expected)


def test_stored_physics_constants_are_calibrated_to_eq5():
    prof = load_profile("mlc-3x")
    pe, h = np.meshgrid(GRID_PE, GRID_H)
    ratio = population_rber(prof.physics, prof, pe.ravel(), h.ravel()) / load_params("flares-taco2014").rber(pe.ravel(), h.ravel())
    assert np.all((ratio > 0.6) & (ratio < 1.6)), ratio


@pytest.mark.slow
def test_rig_style_measurement_pooled_over_chips_within_factor_2_of_eq5():
    grid = calibration_grid("mlc-3x")
    assert len(grid) == 16
    for point in grid:
        assert 0.5 <= point["ratio"] <= 2.0, point


def test_a_chips_measured_rber_is_its_own_physics_expectation():
    """A chip's RBER (rig-style, 16 blocks) is what its own drawn physics says, block by block."""
    chip = VirtualChip("mlc-3x", seed=2)
    blocks = good_blocks(chip)[:16]
    wear_and_program(chip, blocks, 10000)
    chip.wait(720.0)
    got = sum(int(chip.measure(b).errors.sum()) for b in blocks)
    bits = chip.geometry.pages_per_block * chip.cells
    want = sum(float(block_rber(chip._physics(b), 10000, chip.equiv_h, wordlines=chip.geometry.wordlines)[0])
               for b in blocks) * bits
    assert want > 1000 and abs(got - want) < 4.5 * np.sqrt(want), (got, want)


def rber_by_page_type(ph, pe, hours):
    c = PageCondition(np.array([float(pe)]), np.array([hours]), np.zeros(1), np.full(1, 1e6), np.zeros(1),
                      np.array([True]), np.zeros(3))
    return [float(sum(page_error_probs(ph, c, msb))[0]) / 2 for msb in (False, True)]


def test_chips_of_one_design_differ_more_with_wear_and_in_which_page_type_is_worse():
    """Per die: the verify levels (which page type errs more, whatever its program speed) and the wear rate (the
    spread widens past rated life); the chip at the centre of both is the calibrated one."""
    chips = [VirtualChip("mlc-3x", seed=s)._physics(1) for s in range(1, 9)]
    assert len({ph.mu for ph in chips}) == 8 and len({ph.wear_rate for ph in chips}) == 8
    fresh = np.array([sum(rber_by_page_type(ph, 1000, 0.0)) for ph in chips])
    worn = np.array([sum(rber_by_page_type(ph, 10000, 0.0)) for ph in chips])
    late = np.array([sum(rber_by_page_type(ph, 20000, 0.0)) for ph in chips])
    spread = [a.max() / a.min() for a in (fresh, worn, late)]
    assert min(spread) > 2 and spread[2] > spread[1], spread
    lower_worse = [lo > up for lo, up in (rber_by_page_type(ph, 10000, 0.0) for ph in chips)]
    assert 0 < sum(lower_worse) < len(chips), lower_worse
    # eq. 5 describes the part: the median of its chips lies within 2x of it over the calibrated grid
    pe, h = (a.ravel() for a in np.meshgrid(GRID_PE, GRID_H))
    median = np.median([block_rber(VirtualChip("mlc-3x", seed=s)._physics(1), pe, h) for s in range(1, 33)], axis=0)
    ratio = median / load_params("flares-taco2014").rber(pe, h)
    assert np.all((ratio > 0.5) & (ratio < 2.0)), ratio


def test_factory_bad_blocks_are_marked_in_page0_spare():
    chip = VirtualChip("mlc-3x", seed=1)
    assert 4 <= len(chip.factory_bad) <= 40  # a few per thousand of 4096
    assert 0 not in chip.factory_bad
    g = chip.geometry
    for b in sorted(chip.factory_bad)[:3]:
        assert chip.read(b, 0).data[g.page_bytes] != 0xFF
    good = good_blocks(chip)[0]
    assert chip.read(good, 0).data[g.page_bytes] == 0xFF


def test_blocks_start_failing_late_in_life():
    chip = VirtualChip("mlc-small", seed=4)
    outcomes = []
    for blk in good_blocks(chip)[:6]:
        done, failed = chip.cycle(blk, 10_000, seed=1)
        assert not failed and done == 10_000  # rated life is clean
        done, failed = chip.cycle(blk, 200_000, seed=1)
        outcomes.append((failed, done))
    assert all(f for f, _ in outcomes)
    assert all(d > 3_000 for _, d in outcomes)
    # once worn out, operations report FAIL through status
    blk = good_blocks(chip)[0]
    results = [chip.erase(blk) for _ in range(3000)]
    assert sum(r.fail for r in results) > 30
    assert all(bool(r.status & 0x01) == r.fail and r.status & 0x40 for r in results)


@pytest.mark.parametrize("call,msg", [
    (lambda c: c.erase(-1), "block"),
    (lambda c: c.erase(16), "block"),
    (lambda c: c.read(0, 32), "page"),
    (lambda c: c.program(0, 0), "either data or a pattern seed"),
    (lambda c: c.program(0, 0, b"x" * 5000), "holds"),
    (lambda c: c.wait(-1), "hours"),
    (lambda c: c.cycle(0, -1, seed=1), "count"),
])
def test_bad_operations_raise_clear_errors(call, msg):
    with pytest.raises(NandrigError, match=msg):
        call(VirtualChip("mlc-small"))


def lower_pages(chip):
    ppb = chip.geometry.pages_per_block
    return [p for p in range(ppb) if not page_map(p, ppb)[1]]


def test_a_bulk_pslc_cycle_leaves_the_block_as_the_operations_do():
    bulk, ops = VirtualChip("mlc-3x", seed=3), VirtualChip("mlc-3x", seed=3)
    blk = good_blocks(bulk)[5]
    bulk.cycle(blk, 40, seed=2, pslc=True)
    for _ in range(40):
        assert not ops.erase(blk).fail
        assert not any(ops.program(blk, p, seed=page_seed(2, blk, p)).fail for p in lower_pages(ops))
    a, b = bulk.blocks[blk], ops.blocks[blk]
    assert (a.pe, a.last_page) == (b.pe, b.last_page) == (40, max(lower_pages(ops)))
    assert a.wear == pytest.approx(b.wear) == pytest.approx(1 + 39 * bulk._physics(blk).pslc_stress)
    assert {w: (wl.lsb, wl.msb, wl.n) for w, wl in a.wls.items()} == \
           {w: (wl.lsb, wl.msb, pytest.approx(wl.n)) for w, wl in b.wls.items()}


def test_pslc_outlasts_mlc_by_its_stress_and_reads_with_far_fewer_errors():
    chip = VirtualChip("mlc-3x", seed=0)
    ph = chip._physics(7)
    mlc, pslc = VirtualChip("mlc-3x", seed=0), VirtualChip("mlc-3x", seed=0)
    n_mlc, failed = mlc.cycle(7, 200_000, seed=1)
    assert failed
    n_pslc, failed = pslc.cycle(7, 2_000_000, seed=1, pslc=True)
    assert failed and n_pslc / n_mlc == pytest.approx(1 / ph.pslc_stress, rel=0.05)
    # 10k P/E and a year at 25 degC: MLC pages (both types) against pSLC ones of the same P/E count
    cond = lambda wear, coupled: PageCondition(np.array([wear]), np.array([8760.0]), np.zeros(1), np.full(1, 1e6),  # noqa: E731
                                               np.zeros(1), np.array([coupled]), np.zeros(1))
    mlc_rber = np.mean([sum(page_error_probs(ph, cond(1e4, True), msb)) / 2 for msb in (False, True)])
    pslc_rber = sum(lsb_only_error_probs(ph, cond(1e4 * ph.pslc_stress, False))) / 2
    assert pslc_rber < 1e-3 * mlc_rber


def test_a_version_1_state_takes_each_blocks_wear_from_its_pe():
    chip = VirtualChip("mlc-small", seed=4)
    chip.cycle(3, 25, seed=1)
    st = chip.state()
    st["version"] = 1
    for blk in st["blocks"].values():
        blk.wear = 0.0
    again = VirtualChip.from_state(st)
    assert again.blocks[3].wear == again.blocks[3].pe == 25


def test_programming_a_page_again_only_adds_charge_and_says_which_pages_take_it():
    """Lower page, upper unwritten: exact (L0 -> LM). Lower page under its upper: right, but every L0 cell it
    programs lands at L2 and loses its upper bit. Upper page: L0 -> L1 works, an L3 cell stays (its bit stays 1).
    The neighbouring wordlines' erased cells take one more disturb pulse each time."""
    chip = VirtualChip("mlc-small", seed=3)
    blk = next(b for b in range(1, 16) if b not in chip.factory_bad)
    n = chip.geometry.raw_page_bytes
    rng = np.random.default_rng(1)
    data = lambda: rng.integers(0, 256, n, dtype=np.uint8)  # noqa: E731
    chip.erase(blk)
    lsb, msb, again = data(), data(), data()
    for page, content in ((0, lsb), (1, data()), (2, msb)):  # WL0 lower, WL1 lower, WL0 upper
        assert not chip.program(blk, page, bytes(content)).fail
    wl = chip.blocks[blk].wls[0]
    assert not chip.program(blk, 0, bytes(again)).fail  # WL0's lower page again, under its upper page
    got_l, got_u = (np.frombuffer(p.bytes(n), np.uint8) for p in (wl.lsb, wl.msb))
    assert (got_l == lsb & again).all()
    assert (got_u == msb & ~(lsb & ~again)).all() and (got_u != msb).any()
    assert chip.blocks[blk].wls[1].pd == 1
    upper = data()
    assert not chip.program(blk, 2, bytes(upper)).fail  # WL0's upper page again
    now_u = np.frombuffer(wl.msb.bytes(n), np.uint8)
    assert (now_u == got_u & (upper | ~got_l)).all() and (now_u & ~upper & ~got_l).any()  # L3 cells kept their 1
    assert chip.program(blk, 4, seed=1).fail is False and chip.program(blk, 3, seed=1).fail  # 3 was never written
    assert chip.blocks[blk].wls[1].pd == 2 and chip.blocks[blk].last_page == 4


def test_a_pages_true_rber_is_what_its_reads_measure_and_differs_from_its_kinds_mean():
    """The oracle (page_rber): the cells as they were programmed, read noise the only chance left. Over 30 reads of
    each page its errors average to it; one page is not its kind's mean (its few tail cells decide); a page of
    both kinds ages (the rate a year on is higher), and an erased page has none."""
    chip = VirtualChip("mlc-small", seed=23)
    blk = good_blocks(chip)[0]
    chip.cycle(blk, 7999, seed=1, program=False)
    chip.erase(blk)
    n = chip.geometry.raw_page_bytes
    for p in range(chip.geometry.pages_per_block):
        chip.program(blk, p, seed=page_seed(3, blk, p))
    chip.wait(2000)
    pages = (10, 11, 12, 13)
    truth = {p: chip.page_rber(blk, p) for p in pages}
    mean_kind = []
    for p in pages:
        want = np.unpackbits(np.frombuffer(prbs31_bytes(page_seed(3, blk, p), n), np.uint8))
        errors = sum(int(np.sum(np.unpackbits(np.frombuffer(chip.read(blk, p).data, np.uint8)) != want))
                     for _ in range(30))
        expected = truth[p] * want.size * 30
        assert expected > 30 and abs(errors - expected) < 4.5 * np.sqrt(expected) + 0.05 * expected, (p, errors, expected)
        wl_idx, upper = page_map(p, chip.geometry.pages_per_block)
        wl, b = chip.blocks[blk].wls[wl_idx], chip.blocks[blk]
        cond = PageCondition(wl.n, chip.equiv_h - wl.t_prog_h, b.reads, chip._rd_onset(blk), wl.pd, wl.coupled, 0)
        mean_kind.append(float(np.mean(page_error_probs(chip._physics(blk), cond, upper))))
        assert chip.page_rber(blk, p, age_h=chip.equiv_h - wl.t_prog_h + 8760) > chip.page_rber(blk, p)
    assert max(abs(truth[p] / m - 1) for p, m in zip(pages, mean_kind)) > 0.05
    chip.erase(blk)
    assert chip.page_rber(blk, 10) == 0.0
