"""AccessEval in the workload FTL (issue 47): an LDPC drive's sensing levels from a measured table, hot data that
needs soft sensing moved to reduced-state blocks on the virtual chip, read back intact, its capacity counted;
reads beyond the table's reach reported lost, never returned; bad input refused in one line."""
import json

import numpy as np
import pytest

from nandrig.characterization import reduced_level
from nandrig.chip.geometry import PageMap, PageType
from nandrig.chip.pattern import bits
from nandrig.errors import NandrigError
from nandrig.host.ftl.flash import RigFlash
from nandrig.host.ftl.ftl import BlockState, Ftl, FtlConfig
from nandrig.host.ftl.policy import AccessEval, BlockMode, LdpcSensing
from nandrig.host.ftl.reduced import ReducedLayout, content_bits
from nandrig.host.ftl.sensing import DEFAULT, SensingReach
from nandrig.host.link.rig import Rig

YEAR_NS = 365 * 24 * 3.6e12


@pytest.mark.parametrize("ppb,page_bytes,raw", [(64, 2048, 2112), (128, 4096, 4320)])
def test_a_reduced_block_holds_three_quarters_of_its_pages_and_gives_each_back(ppb, page_bytes, raw):
    layout = ReducedLayout(PageMap.shuffled_mlc(ppb), page_bytes, raw)
    assert layout.slots == ppb * 3 // 4
    seeds = [1000 + 7 * k for k in range(layout.slots)]
    pages = layout.block_pages(seeds)
    pm = layout.page_map
    for wl in range(ppb // 2):  # three levels per cell: ReduceCode never makes L2 (lower 0, upper 0)
        lower, upper = (bits(pages[pm.page_of(wl, t)]) for t in PageType)
        assert not np.any((lower == 0) & (upper == 0))
    for slot, seed in enumerate(seeds):
        reads = {wl: tuple(pages[pm.page_of(wl, t)] for t in PageType) for wl in layout.wordlines_of(slot)}
        assert np.array_equal(layout.slot_bits(slot, reads), content_bits(seed, page_bytes))


def _reach(lower, upper=None):
    return SensingReach({"lower": lower, "upper": upper or lower}, "test")


def test_sensing_levels_are_those_of_the_nearest_measured_condition_above_and_none_beyond(tmp_path):
    reach = _reach(((1e-4, 1), (4e-3, 2)), ((1e-4, 1), (2e-3, 1), (8e-3, 2), (1.2e-2, 3)))
    up, low = PageType.UPPER, PageType.LOWER
    assert [reach.levels(x, up) for x in (0.0, 1e-3, 5e-3, 1e-2, 1.3e-2)] == [1, 1, 2, 3, None]
    assert [reach.levels(x, low) for x in (1e-3, 3e-3, 5e-3)] == [2, 2, None]
    assert [reach.levels(x, None) for x in (1e-5, 3e-3, 5e-3)] == [1, 2, None]  # data on both: the more
    with pytest.raises(NandrigError, match="lower and on upper"):
        SensingReach({"lower": ((1e-3, 1),), "upper": ()}, "a run without upper pages")
    res = {"conditions": [{"page_type": "lower", "rber": 3e-3, "levels_decoding_all": 1},
                          {"page_type": "upper", "rber": 1.1e-2, "levels_decoding_all": None},
                          {"page_type": "upper", "rber": 9e-3, "levels_decoding_all": 2},
                          {"page_type": "upper", "rber": 1e-3, "levels_decoding_all": 1}]}
    table = SensingReach.from_flexlevel(res, "x")
    assert table.points == {"lower": ((3e-3, 1),), "upper": ((1e-3, 1), (9e-3, 2))}
    (tmp_path / "t.json").write_text(table.to_json())
    (tmp_path / "r.json").write_text(json.dumps(res))
    assert SensingReach.load(tmp_path / "t.json").points == SensingReach.load(tmp_path / "r.json").points
    shipped = SensingReach.load(DEFAULT)
    assert shipped.max_levels >= 2 and "flexlevel" in shipped.source


def _ftl(rig, reach, access_eval, blocks=10, pe=10_000):
    flash = RigFlash(rig, range(blocks))
    ftl = Ftl(flash, LdpcSensing(reach, access_eval), FtlConfig(static_wl_spread=None))
    ftl.age_evenly(pe)
    for lpn in range(ftl.logical_pages):
        ftl.write(lpn, lpn + 1)
    flash.idle(YEAR_NS)
    return ftl


def test_hot_data_needing_soft_sensing_moves_to_reduced_state_and_reads_back_intact():
    # every page read at this wear and retention (raw BER about 3e-4) needs two levels by this table
    reach = _reach(((1e-5, 1), (1e-2, 2)))
    with Rig.open("sim", chip="mlc-3x", seed=3, stat_reads=True) as rig:
        ftl = _ftl(rig, reach, AccessEval(hot_reads=2, min_levels=2))
        slots = ftl.layout.slots
        hot = list(range(0, 2 * slots + 5))
        for _ in range(2):
            for lpn in hot:
                assert ftl.read(lpn)
        c = ftl.counters
        assert c.reduced_moves == 0  # they move while the host is idle
        assert ftl.background() and ftl.background() and not ftl.background()
        assert c.reduced_blocks == 2 and c.reduced_moves == 2 * slots  # a block's worth at a time; 5 wait
        assert int(ftl.candidate.sum()) == 5
        reduced = [b for b in range(ftl.n_blocks) if ftl.mode[b] == BlockMode.REDUCED]
        assert len(reduced) == 2 and all(ftl.state[b] == BlockState.FULL for b in reduced)
        # on the chip, the block's wordlines hold three levels: read as reduced, no (L3, L3) pair to speak of
        pm = ftl.flash.geometry.page_map
        rig.set_read_refs(0, 60, -60)
        for wl in (0, 7, ftl.ppb // 2 - 1):
            lower, upper = (bits(rig.read(reduced[0], pm.page_of(wl, t), raw=True).data) for t in PageType)
            assert reduced_level.check_reduced(reduced_level.levels_read(lower, upper), "wl") <= 2
        rig.set_read_refs(0, 0, 0)
        levels_before = c.sensed_levels
        for lpn in hot[:2 * slots]:
            assert ftl.read(lpn)  # from the reduced blocks, intact
        assert c.reduced_reads == 2 * slots and c.uncorrectable_codewords == 0
        # what a reduced block gives up: a quarter of its pages, paid in the space collection works with
        assert sum(ftl.capacity[ftl.mode[b]] for b in reduced) == 2 * slots < 2 * ftl.ppb
        # collection of a reduced block moves its pages back to MLC, intact
        ftl._reclaim(reduced[0], "gc")
        assert ftl.state[reduced[0]] == BlockState.FREE
        for lpn in hot[:2 * slots]:
            assert ftl.read(lpn)
        assert c.uncorrectable_codewords == 0 and c.sensed_levels > levels_before


def test_without_accesseval_nothing_moves_and_a_read_beyond_the_reach_is_reported_not_returned():
    with Rig.open("sim", chip="mlc-3x", seed=3, stat_reads=True) as rig:
        ftl = _ftl(rig, _reach(((1e-5, 1), (1e-2, 2))), None, blocks=8)
        for _ in range(4):
            assert all(ftl.read(lpn) for lpn in range(40))
        assert not ftl.background() and ftl.counters.reduced_moves == 0 and ftl.counters.soft_reads == 160
    # a decoder that would give up on these pages: every read reported lost, none returned as data
    with Rig.open("sim", chip="mlc-3x", seed=3, stat_reads=True) as rig:
        ftl = _ftl(rig, _reach(((1e-6, 1),)), AccessEval(), blocks=8)  # a code too weak for this wear
        assert not any(ftl.read(lpn) for lpn in range(40))
        c = ftl.counters
        assert c.beyond_reach == c.uncorrectable_reads == 40 and c.reduced_moves == 0


@pytest.mark.parametrize("args,message", [
    (["--reduced-refs", "500,-60"], "offset"),
    (["--blocks", "0-3"], "at least 8"),
    (["--blocks", "9-2"], "after the last"),
    (["--sensing", "/nonexistent/table.json"], "sensing table"),
    (["--retention", "1d,1y"], "one duration"),
])
def test_bad_input_gets_one_line(run_cli, args, message):
    run_cli("workload", "accesseval", *args).assert_one_line_error(message)


def test_the_move_runs_while_the_host_is_idle_and_a_request_arriving_then_waits_for_it():
    from nandrig.host.workload.replay import BusTiming, ReplayResult, replay
    from nandrig.host.workload.trace import IoOp, Request

    with Rig.open("sim", chip="mlc-3x", seed=3, stat_reads=True) as rig:
        ftl = _ftl(rig, _reach(((1e-5, 1), (1e-2, 2))), AccessEval(hot_reads=2, min_levels=2))
        page, bus = ftl.flash.geometry.page_bytes, BusTiming.of(rig)
        slots = ftl.layout.slots
        # every hot page read twice, back to back (the device never idles), then one read 1 us after it could
        busy = [Request(0, IoOp.READ, lpn * page, page) for _ in range(2) for lpn in range(slots)]
        r = replay(ftl, busy, bus, result=ReplayResult())
        assert ftl.counters.reduced_moves == 0 and r.background_ns == 0
        r = replay(ftl, [Request(int(r.end_ns) + 1000, IoOp.READ, (slots + 1) * page, page)], bus, result=r)
        assert ftl.counters.reduced_moves == slots and r.background_ns > 0
        # the late read waited for the move: its latency holds all but the 1 us of it
        assert r.read_latency_ns[-1] > r.background_ns - 1000
