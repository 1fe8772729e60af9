"""Direction and onset of every effect the virtual chip models."""
import copy

import numpy as np
import pytest

from nandrig.virtual_chip.chip import VirtualChip, page_map, page_of
from nandrig.chip.pattern import bits, flips, key, page_seed, prbs31_bytes
from nandrig.errors import NandrigError
from nandrig.virtual_chip import rng
from nandrig.virtual_chip.physics import (
    LSB_OF_STATE, MSB_OF_STATE, STATE_OF_BITS, PageCondition, block_rber, one_page_error_probs, page_error_probs,
)


def fresh(profile="mlc-small", seed=1):
    chip = VirtualChip(profile, seed)
    good = [b for b in range(chip.geometry.blocks) if b not in chip.factory_bad]
    return chip, good


def program_all(chip, block, cseed=1):
    assert not chip.erase(block).fail
    for p in range(chip.geometry.pages_per_block):
        assert not chip.program(block, p, seed=page_seed(cseed, block, p)).fail


def block_errors(chip, blocks):
    return sum(int(chip.measure(b).errors.sum()) for b in blocks)


def test_gray_map_adjacent_states_differ_in_one_bit():
    for s in range(3):
        assert (LSB_OF_STATE[s] != LSB_OF_STATE[s + 1]) + (MSB_OF_STATE[s] != MSB_OF_STATE[s + 1]) == 1
    for s in range(4):
        assert STATE_OF_BITS[LSB_OF_STATE[s], MSB_OF_STATE[s]] == s


def test_page_map_is_a_bijection_and_lower_pages_come_first():
    for ppb in (32, 128):
        seen = {page_map(p, ppb) for p in range(ppb)}
        assert len(seen) == ppb
        for w in range(ppb // 2):
            assert page_of(w, False, ppb) < page_of(w, True, ppb)
            assert page_map(page_of(w, True, ppb), ppb) == (w, True)


def test_program_order_rules():
    chip, good = fresh()
    b = good[0]
    chip.erase(b)
    assert chip.program(b, 2, seed=1).fail  # upper page of WL0 before its lower page
    assert not chip.program(b, 0, seed=1).fail
    assert not chip.program(b, 1, seed=2).fail
    assert not chip.program(b, 5, seed=3).fail  # skipping ahead is allowed
    assert chip.program(b, 3, seed=4).fail  # going back is not
    assert chip.status & 1
    assert not chip.program(b, 7, seed=5).fail
    assert chip.status & 1 == 0


def test_second_program_without_erase_can_only_clear_bits_and_disturbs_neighbours():
    chip, good = fresh()
    b = good[0]
    chip.erase(b)
    n = chip.geometry.raw_page_bytes
    chip.program(b, 0, b"\xf0" * n)
    chip.program(b, 0, b"\x3c" * n)  # NOP 2: the chip can only add charge
    data = np.frombuffer(chip.read(b, 0).data, np.uint8)
    assert np.mean(data == 0x30) > 0.99
    assert chip.blocks[b].wls[1].pd == 1


def test_programmed_data_reads_back_with_few_errors_when_fresh():
    chip, good = fresh()
    b = good[1]
    program_all(chip, b)
    n = chip.geometry.raw_page_bytes
    for p in range(chip.geometry.pages_per_block):
        got = np.unpackbits(np.frombuffer(chip.read(b, p).data, np.uint8))
        want = np.unpackbits(np.frombuffer(prbs31_bytes(page_seed(1, b, p), n), np.uint8))
        assert np.sum(got != want) <= 3


def test_erased_pages_read_all_ones():
    chip, good = fresh()
    chip.erase(good[0])
    assert chip.read(good[0], 3).data == b"\xff" * chip.geometry.raw_page_bytes


def test_retention_errors_grow_with_time_and_with_wear():
    chip, good = fresh("mlc-3x", seed=4)
    groups = {1000: good[:4], 10000: good[4:8]}
    for pe, blocks in groups.items():
        for b in blocks:
            chip.cycle(b, pe - 1, seed=2, program=False)
            program_all(chip, b)
    series = {pe: [] for pe in groups}
    for hours in (0, 24, 720, 8760):
        chip.wait(hours - (chip.equiv_h if hours else 0) if hours else 0)
        probe = copy.deepcopy(chip)  # a measurement must not disturb the next step
        for pe, blocks in groups.items():
            series[pe].append(block_errors(probe, blocks))
    for pe in groups:
        assert series[pe] == sorted(series[pe]) and series[pe][-1] > 10 * max(series[pe][0], 1)
    assert all(hi > lo for lo, hi in zip(series[1000][1:], series[10000][1:]))


def test_programmed_state_distributions_widen_with_wear():
    ph = VirtualChip("mlc-3x").profile.physics
    assert ph.core_sigma(10000) > ph.core_sigma(1000) > ph.core_sigma(0)
    assert ph.tail_w(10000) > ph.tail_w(1000) > ph.tail_w(0) == 0


def test_bake_accelerates_retention_loss():
    chip, good = fresh("mlc-small", seed=2)
    b = good[0]
    chip.cycle(b, 4999, seed=1, program=False)
    program_all(chip, b)
    baked = copy.deepcopy(chip)
    chip.wait(1.0)
    baked.wait(1.0, temp_c=125.0)
    assert baked.equiv_h > 4e4 * chip.equiv_h / 1.01
    assert block_errors(baked, [b]) > 5 * max(block_errors(chip, [b]), 1)


def test_read_disturb_only_after_250k_reads():
    chip, good = fresh("mlc-3x", seed=5)
    blocks = good[:6]
    for b in blocks:
        chip.cycle(b, 2999, seed=1, program=False)
        program_all(chip, b)
    onsets = [chip._rd_onset(b) for b in blocks]
    assert all(250e3 <= o <= 4.8e6 for o in onsets)
    base = block_errors(copy.deepcopy(chip), blocks)
    for b in blocks:
        chip.hammer(b, 5, 200_000)
    early = block_errors(copy.deepcopy(chip), blocks)
    for b in blocks:
        chip.hammer(b, 5, int(6e6))
    late = block_errors(copy.deepcopy(chip), blocks)
    assert early < 1.5 * base + 10  # at 200 K reads: nothing visible yet
    assert late > 10 * base  # past every block's onset: clearly visible
    # onset, per the analytic model: a block's errors at least double there, not at 80 % of it,
    # and keep growing gradually (about tenfold per decade of reads) beyond it
    ph = chip._physics(blocks[0])
    rb = lambda reads: float(block_rber(ph, 3000, 0, reads=reads, onset=onsets[0])[0])
    assert rb(0.8 * onsets[0]) < 1.2 * rb(0)
    assert rb(onsets[0]) > 2 * rb(0)
    assert 3 < rb(10 * onsets[0]) / rb(onsets[0]) < 300


def test_read_disturb_grows_with_wear():
    """Worn oxide lets more charge in: the same reads cost a 10k-P/E block several times the errors of a 1k one
    (whole chips: the byte path's counts; the model: the analytic rate)."""
    counts = {}
    for pe in (1000, 10000):
        chip, good = fresh("mlc-3x", seed=5)
        blocks = good[:4]
        for b in blocks:
            chip.cycle(b, pe - 1, seed=1, program=False)
            program_all(chip, b)
            chip.hammer(b, 5, int(6e6))
        counts[pe] = block_errors(chip, blocks)
    assert counts[10000] > 2 * counts[1000], counts
    ph = chip._physics(blocks[0])
    rb = lambda pe, reads: float(block_rber(ph, pe, 0, reads=reads, onset=1e6)[0])  # noqa: E731
    assert rb(10000, 6e6) - rb(10000, 0) > 2 * (rb(1000, 6e6) - rb(1000, 0))


def test_errors_rise_sharply_past_rated_life_and_not_before():
    """Grupp et al. (MICRO'09, Fig. 6): MLC error rates climb steeply shortly after the rated 10k P/E. The knee
    leaves everything up to 10k (where the chip is calibrated) as it was."""
    chip, _ = fresh("mlc-3x")
    ph = chip._physics(0)
    rb = lambda pe: float(block_rber(ph, pe, 0)[0])  # noqa: E731
    flat = type(ph)(**{**ph.__dict__, "knee": 0.0})
    assert all(rb(pe) == float(block_rber(flat, pe, 0)[0]) for pe in (0, 1000, 5000, 10000))
    assert rb(10000) / rb(5000) < 2 < 5 < rb(20000) / rb(10000)


def test_program_disturb_hits_neighbouring_wordlines():
    chip, good = fresh("mlc-small", seed=6)
    b = good[0]
    chip.erase(b)
    n = chip.geometry.raw_page_bytes
    pages = [page_of(w, False, chip.geometry.pages_per_block) for w in (0, 1, 2)]
    chip.program(b, pages[0], b"\xff" * n)
    chip.program(b, pages[1], b"\x55" * n)
    before = chip.measure(b, [pages[0]]).errors[0]
    for _ in range(12):
        chip.program(b, pages[1], b"\x55" * n)  # the same page again, without erase
    assert chip.blocks[b].wls[0].pd == 12
    after = copy.deepcopy(chip).measure(b, [pages[0]]).errors[0]
    assert after > before + 20


def test_interference_from_the_next_wordline_raises_errors():
    ph = VirtualChip("mlc-3x").profile.physics
    c = lambda coupled: PageCondition(np.array([5000.0]), np.array([0.0]), np.array([0.0]), np.array([1e6]),
                                      np.array([0.0]), np.array([coupled]), np.array([0.0]))
    for msb in (False, True):
        assert sum(page_error_probs(ph, c(True), msb)) > sum(page_error_probs(ph, c(False), msb))


@pytest.mark.parametrize("path", ["byte", "stat"])
def test_read_retry_offset_moves_errors_consistently(path):
    chip, good = fresh("mlc-small", seed=7)
    b = good[0]
    chip.cycle(b, 9999, seed=1, program=False)
    program_all(chip, b)
    chip.wait(8760)  # charge loss: states moved down, so lower references help

    def errors(offset):
        c = copy.deepcopy(chip)
        c.set_read_offsets((offset,) * 3)
        if path == "stat":
            return int(c.measure(b).errors.sum())
        n = c.geometry.raw_page_bytes
        total = 0
        for p in range(c.geometry.pages_per_block):
            got = np.unpackbits(np.frombuffer(c.read(b, p).data, np.uint8))
            total += int(np.sum(got != np.unpackbits(np.frombuffer(prbs31_bytes(page_seed(1, b, p), n), np.uint8))))
        return total

    e0, lower, higher = errors(0), errors(-4), errors(6)
    assert lower < e0 < higher


def test_program_and_busy_times():
    chip, good = fresh("mlc-3x", seed=8)
    b = good[0]
    chip.erase(b)
    times = {p: chip.program(b, p, seed=p).busy_ns for p in range(128)}
    lsb = [t for p, t in times.items() if not page_map(p, 128)[1]]
    msb = [t for p, t in times.items() if page_map(p, 128)[1]]
    ratio = np.mean(msb) / np.mean(lsb)
    assert 5.3 < ratio < 6.3  # slow (upper) pages about 5.8x the fast ones
    assert 600e3 < (np.mean(msb) + np.mean(lsb)) / 2 < 1000e3  # ~800 us at the start of life
    lower, upper = (chip.read(b, p).busy_ns for p in (0, 2))  # page 2 is wordline 0's upper page
    assert 30e3 < lower < 45e3 and 60e3 < upper < 90e3  # one read reference against two
    assert 2.4e6 < chip.erase(b).busy_ns < 3.6e6
    chip.cycle(b, 9998, seed=1, program=False)
    chip.erase(b)
    late = [chip.program(b, p, seed=p).busy_ns for p in range(128)]
    drop = 1 - np.mean(late) / np.mean(lsb + msb)
    assert 0.10 <= drop <= 0.15


def test_virtual_clock_a_year_costs_no_wall_time():
    import time

    chip = VirtualChip("mlc-3x")
    t0 = time.perf_counter()
    chip.wait(8760)
    assert time.perf_counter() - t0 < 0.1
    assert chip.clock_ns == 8760 * 3_600_000_000_000
    before = chip.clock_ns
    chip.erase(3)
    assert chip.clock_ns > before + 2e6


@pytest.mark.parametrize("path", ["stat", "bytes"])
def test_each_read_reference_moves_only_the_pages_read_at_it(path):
    """VR2 reads lower pages, VR1 and VR3 upper ones: moving one reference changes only its page type's errors, and
    those not at all elsewhere (the same draws: each copy of the chip reads with the same noise)."""
    chip, good = fresh("mlc-small", seed=7)
    b = good[0]
    chip.cycle(b, 999, seed=1, program=False)
    program_all(chip, b)
    upper = np.array([page_map(p, chip.geometry.pages_per_block)[1] for p in range(chip.geometry.pages_per_block)])

    def errors(offsets):
        c = copy.deepcopy(chip)
        c.set_read_offsets(offsets)
        if path == "stat":
            e = c.measure(b).errors
        else:
            n = c.geometry.raw_page_bytes
            e = np.array([int(np.sum(np.unpackbits(np.frombuffer(c.read(b, p).data, np.uint8)) != np.unpackbits(
                np.frombuffer(prbs31_bytes(page_seed(1, b, p), n), np.uint8)))) for p in range(len(upper))])
        return int(e[~upper].sum()), int(e[upper].sum())

    lower0, upper0 = errors((0, 0, 0))
    for offsets, moved in (((0, 45, 0), "lower"), ((45, 0, 0), "upper"), ((0, 0, -45), "upper")):
        lo, up = errors(offsets)
        if moved == "lower":
            assert lo > 10 * max(lower0, 1) and up == upper0, (offsets, lo, up)
        else:
            assert up > 10 * max(upper0, 1) and lo == lower0, (offsets, lo, up)


def test_one_page_error_probs_are_the_vector_sums_in_plain_floats():
    """The statistical read path's single-page form against the vector form, across wear, age, disturb,
    interference and read-retry offsets (agreement to 1e-7: the two sum the same terms in another order)."""
    chip, good = fresh("mlc-3x", 3)
    rs = np.random.default_rng(7)
    for trial in range(200):
        ph = chip._physics(int(rs.choice(good)))
        off = tuple(float(x) for x in rs.integers(-6, 7, size=3)) if trial % 2 else (0.0, 0.0, 0.0)
        n, t_h = float(rs.uniform(0, 2e4)), float(rs.uniform(0, 1e4)) * (trial % 3 > 0)
        reads, onset, pd, coupled = float(rs.uniform(0, 5e6)) * (trial % 5 > 1), float(rs.uniform(1e5, 2e6)), \
            float(rs.integers(0, 3)), bool(trial % 4)
        c = PageCondition(*(np.array([x]) for x in (n, t_h, reads, onset, pd, coupled)), np.array(off))
        for msb in (False, True):
            want = [float(x[0]) for x in page_error_probs(ph, c, msb)]
            got = one_page_error_probs(ph, n, t_h, reads, onset, pd, coupled, off, msb)
            assert got == pytest.approx(want, rel=1e-7, abs=1e-15)


def test_a_rekeyed_generator_draws_what_a_fresh_one_does():
    again = rng.Rekeyed()
    for parts in [(rng.STAT_READ, 1, 2, 3, 4, 5), (1,), (rng.STAT_READ, 2**40, -3, 0, 9, 1)]:
        for draw in (lambda g: g.binomial(17_000, 1e-3, 3), lambda g: g.standard_normal(5), lambda g: g.random(3)):
            assert (draw(again(*parts)) == draw(rng.generator(*parts))).all()


@pytest.mark.parametrize("seed", [0, 1, 0x5A5A5A5A, 0x7FFFFFFF, 2**40 + 5])
def test_the_pattern_is_the_prbs31_recurrence_bit_by_bit(seed):
    s = seed & 0x7FFFFFFF or 0x7FFFFFFF
    want = [(s >> (30 - i)) & 1 for i in range(31)]
    for n in range(31, 8 * 531):
        want.append(want[n - 31] ^ want[n - 28])
    for nbytes in (1, 4, 63, 531):
        assert prbs31_bytes(seed, nbytes) == np.packbits(want[:8 * nbytes]).tobytes()


def test_a_three_level_wordline_behaves_as_its_charge_says():
    """A block programmed in reduced state through standard programs (ReduceCode: no cell at L2) at 10k P/E, then a
    year at 25 degC, beside a normal block of the same die and wear. Its cells hold L0, L1 and L3 in ReduceCode's
    shares (3/8, 3/8, 1/4). Read with VR2 and VR3 at the middle of L1 and L3, the L3 cells, which lose charge
    fastest, have twice the margin and none reads below it; what errors are left are L1 cells fallen below VR1
    (an upper page's stored 0 read 1), as in the normal block, and the wordline's errors are under half the
    normal block's at the default references."""
    from nandrig.characterization import reduced_level as rl
    from nandrig.chip.geometry import PageMap, PageType
    from nandrig.host.kinds.flexlevel import reduced_data

    chip = VirtualChip("mlc-3x", 4)
    g = chip.geometry
    pm = PageMap.shuffled_mlc(g.pages_per_block)
    chip.cycle(30, 9_999, seed=1, program=False)
    assert not chip.erase(30).fail
    pages = {}
    for wl in range(g.wordlines):
        lo, up = rl.wordline_pages(reduced_data(1, 30, wl, g.raw_page_bytes))
        pages[pm.page_of(wl, PageType.LOWER)], pages[pm.page_of(wl, PageType.UPPER)] = lo, up
    for p in range(g.pages_per_block):
        assert not chip.program(30, p, pages[p]).fail
    chip.cycle(31, 10_000, seed=1)
    shares = np.bincount(np.concatenate([chip._wl_states(w)[0] for w in chip.blocks[30].wls.values()]),
                         minlength=4) / (g.wordlines * chip.cells)
    assert shares[2] == 0 and shares[[0, 1, 3]] == pytest.approx([3 / 8, 3 / 8, 1 / 4], abs=0.01)
    chip.wait(hours=8760)

    def errors(block, refs):
        chip.set_read_offsets(refs)
        out = {}
        for upper in (False, True):
            e10 = e01 = 0
            for p in (p for p in range(g.pages_per_block) if pm.is_upper(p) == upper):
                e = flips(bits(chip.content(block, p).bytes(g.raw_page_bytes)), bits(chip.read(block, p).data))
                e10, e01 = e10 + e[0], e01 + e[1]
            out["upper" if upper else "lower"] = (e10, e01)
        return out

    mid = rl.reference_offsets(chip.profile.physics.vref, chip.profile.physics.mu, chip.profile.physics.retry_step)
    reduced, normal = errors(30, mid), errors(31, (0, 0, 0))
    assert reduced["lower"] == (0, 0) and reduced["upper"][0] == 0  # no L3 below the middle, nothing above it
    assert reduced["upper"][1] > 0  # L1 below VR1, as in the normal block
    assert 2 * sum(reduced["upper"]) < sum(map(sum, normal.values()))


def test_verify_levels_moved_place_a_wordlines_levels_and_its_charge_loss_follows(tmp_path):
    """NUNMA through the design's verify-level feature (mlc-3x: PV1..PV3 in 10 mV steps). Reduced-state blocks at
    10k P/E: one programmed at the design's levels, one with PV1 and PV3 raised 40 steps, and, between them, a
    normal block programmed with the feature set back to 0. The moved wordlines' L1 and L3 cells sit 0.4 V higher;
    L3, holding more charge, loses proportionally more of it in a year (k scaled by its height over L0); the normal
    block is untouched by the setting made before it. Read at the middle of their own L1 and L3, the moved block's
    L1 cells, now a volt above VR1, no longer fall below it: its errors are a fraction of the design-level block's."""
    from nandrig.characterization import reduced_level as rl
    from nandrig.chip.geometry import PageMap, PageType
    from nandrig.host.kinds.flexlevel import reduced_data

    chip = VirtualChip("mlc-3x", 4)
    g, ph = chip.geometry, chip.profile.physics
    pm = PageMap.shuffled_mlc(g.pages_per_block)
    nunma = (40, 0, 40)

    def program_reduced(block, verify):
        chip.cycle(block, 9_999, seed=1, program=False)
        assert not chip.erase(block).fail
        pages = {}
        for wl in range(g.wordlines):
            lo, up = rl.wordline_pages(reduced_data(1, block, wl, g.raw_page_bytes))
            pages[pm.page_of(wl, PageType.LOWER)], pages[pm.page_of(wl, PageType.UPPER)] = lo, up
        chip.set_verify_offsets(verify)
        for p in range(g.pages_per_block):
            assert not chip.program(block, p, pages[p]).fail
        chip.set_verify_offsets((0, 0, 0))

    program_reduced(30, (0, 0, 0))
    program_reduced(32, nunma)
    chip.cycle(31, 10_000, seed=1)  # after the feature went back to 0: the design's levels
    assert chip.blocks[32].wls[5].verify == nunma and chip.blocks[30].wls[5].verify is None
    assert all(w.verify is None for w in chip.blocks[31].wls.values())
    chip.save(tmp_path / "chip.state")  # as a state file keeps it
    again = VirtualChip.load(tmp_path / "chip.state")
    assert np.array_equal(again._cell_vth(32, again.blocks[32], 5)[0], chip._cell_vth(32, chip.blocks[32], 5)[0])

    def level_means(block, age_h):
        vth = np.concatenate([chip._cell_vth(block, chip.blocks[block], wl, age_h)[0] for wl in range(4)])
        states = np.concatenate([chip._wl_states(chip.blocks[block].wls[wl])[0] for wl in range(4)])
        return np.array([vth[states == s].mean() for s in (1, 3)])

    fresh_design, fresh_moved = level_means(30, 0.0), level_means(32, 0.0)
    assert fresh_moved - fresh_design == pytest.approx([0.4, 0.4], abs=0.01)
    loss_design, loss_moved = fresh_design - level_means(30, 8760.0), fresh_moved - level_means(32, 8760.0)
    height = np.array([ph.mu[1], ph.mu[3]]) - ph.mu[0]
    assert loss_moved / loss_design == pytest.approx((height + 0.4) / height, rel=0.05)

    chip.wait(hours=8760)

    def errors(block, refs):
        chip.set_read_offsets(refs)
        return sum(sum(flips(bits(chip.content(block, p).bytes(g.raw_page_bytes)), bits(chip.read(block, p).data)))
                   for p in range(g.pages_per_block))

    moved_mu = tuple(np.asarray(ph.mu) + np.array([0, *nunma]) * ph.verify_step)
    design = errors(30, rl.reference_offsets(ph.vref, ph.mu, ph.retry_step))
    moved = errors(32, rl.reference_offsets(ph.vref, moved_mu, ph.retry_step))
    assert design > 20 and moved < design / 4
    chip.set_read_offsets((0, 0, 0))


def test_a_design_without_the_verify_feature_is_refused():
    chip = VirtualChip("mlc-samsung", 1)
    with pytest.raises(NandrigError, match="cannot move its program-verify levels"):
        chip.set_verify_offsets((0, 0, 1))


def _splitmix64(x: int) -> int:
    m = (1 << 64) - 1
    x = (x + 0x9E3779B97F4A7C15) & m
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & m
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & m
    return x ^ (x >> 31)


def test_the_noise_key_is_splitmix64_chained_over_its_parts():
    """Every draw of the virtual chip is keyed by ``key``: written out in line for speed, it must stay the chain
    it was defined as (and with it every measured figure in the docs)."""
    m, gen = (1 << 64) - 1, np.random.default_rng(7)

    def chained(*parts: int) -> int:
        a, b = 0x6A09E667F3BCC908, 0xBB67AE8584CAA73B
        for p in parts:
            a = _splitmix64(a ^ (p & m))
            b = _splitmix64(b ^ a ^ ((p & m) * 0x9E3779B97F4A7C15 & m))
        return (a << 64) | b

    cases = [(), (0,), (-1,), (1 << 80,)] + [tuple(int(v) for v in gen.integers(-2**62, 2**62, n)) for n in range(1, 9)
                                             for _ in range(50)]
    assert all(key(*c) == chained(*c) for c in cases)
    assert page_seed(1, 2, 3) == 0x659357B2  # as before the chain was written out

