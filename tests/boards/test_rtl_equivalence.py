"""The golden model and the RTL kept honest: the same short campaigns on the virtual rig and on the RTL rig
(SoC + firmware in Verilator, the same chip seed on its pins) give the same measurements, FLARES decisions
(host-side over measured errors, and the rig's own over its decoder's counts) and BCH-decoded reads.

The chip's array times are a tenth of its profile's (tests/boards/short_busy.py): the RTL rig simulates every
cycle of them, and what is compared does not depend on them.

The RTL rig measures busy time from R/B# in whole clock cycles and its clock follows simulated time, so
busy times and the actual retention age agree to within a few cycles, not to the nanosecond.
"""
import fcntl
import os
import pickle
import zlib
from contextlib import contextmanager

import pytest

from nandrig.virtual_chip.chip import VirtualChip
from nandrig.boards.sim.server import VirtualRig
from nandrig.boards.sim.rtl.build import RTL_BCH
from nandrig.boards.sim.rtl.run import HOST_TIMEOUT_S, RtlRig
from nandrig.characterization.flares import FlaresConfig, Zone
from nandrig.characterization.rber import load_params
from nandrig.host.engine.flares_validate import MIXES_PM, WSIZES, Validator
from nandrig import protocol as P
from nandrig.characterization.flares_wire import rig_blob
from nandrig.chip.geometry import page_map
from nandrig.protocol import Err, Opcode, ProfileSource, TablesSource
from nandrig.host.link.rig import FlaresStep, Rig, RigError
from nandrig.host.engine.campaigns import create, run
from nandrig.host.kinds import KINDS
from nandrig.host.views.export import export_rows
from nandrig.host.storage.store import Store
from nandrig.host.link.transport import InProcessTransport
from tests.boards.short_busy import short_busy_chip

pytestmark = pytest.mark.slow
PROFILE, SEED = "mlc-small", 21
CYCLES, CHECKPOINTS = 6, [1, 3, 6]
DENSITY_CHECKPOINTS = [1, 6]  # the second reached through a pSLC CYCLE (a page set) on the pSLC block; both blocks
# worn 3,000 P/E beforehand and read fresh and after 3 years at 25 degC, so there are errors to compare
BUSY_TOLERANCE_NS = 100
FLARES_BLOCK, PRE_WEAR = 12, 3000  # FLARES runs on a block worn beforehand, so there are errors to decide on
ENDURANCE_PRE_WEAR = 10_000  # the endurance blocks read at once: only a worn die errs there (a few a checkpoint)
FLARES_BAKE_H = 16  # hours at 125 degC between a round's programs and its reads
# soft reads at two levels and a reduced-state block programmed with L1 raised 20 verify steps (NUNMA: the
# firmware's SET_VERIFY_LEVELS), read with VR2, VR3 at the middle of L1 and L3, fresh and after 3 years
FLEXLEVEL = {"pe": [2], "retention_h": [0.0, 26280.0], "levels": 2, "step": 4, "reduced_refs": [70, -50],
             "reduced_verify": [20, 0, 0]}


def chip() -> VirtualChip:
    c = short_busy_chip(PROFILE, SEED)
    # bulk wear (ends erased, factory mark intact) on every block the runs use, so there are errors to compare
    blocks = campaign_blocks(c)
    for b, wear in ((FLARES_BLOCK, PRE_WEAR), *((b, ENDURANCE_PRE_WEAR) for b in blocks[:2]),
                    *((b, PRE_WEAR) for b in blocks[2:])):
        c.cycle(b, wear, seed=9, program=False)
    return c


def campaign_blocks(c: VirtualChip) -> list[int]:
    """Two blocks for the endurance campaign, two for the density one, two for the flexlevel one."""
    return [b for b in range(1, c.geometry.blocks) if b not in c.factory_bad and b != FLARES_BLOCK][:6]


def campaigns(rig: Rig, db, density: bool = True) -> dict[str, tuple[list[dict], list[tuple], list[tuple]]]:
    """An endurance campaign on two blocks and (``density``) a density one (an MLC and a pSLC block, programs
    timed) and a flexlevel one (soft reads on a normal block, a reduced-state block) on two more each: each one's
    export, measurements and operation times (flexlevel: its reads' bit errors and its results)."""
    store = Store(db)
    try:
        info = rig.info()
        chip_id = store.add_chip(f"{info.model}:{SEED}", info, rig.read_param_page(), None)
        bad = set(rig.scan_bad(0, info.blocks))
        blocks = [b for b in range(1, info.blocks) if b not in bad and b != FLARES_BLOCK][:6]
        assert blocks == campaign_blocks(short_busy_chip(PROFILE, SEED))
        out = {}
        for kind, params in (("endurance", {"blocks": blocks[:2], "cycles": CYCLES, "checkpoints": CHECKPOINTS}),
                             ("density", {"blocks": blocks[2:4], "checkpoints": DENSITY_CHECKPOINTS, "times_h": [26280.0]}))[
                :2 if density else 1]:
            cid = create(store, rig, chip_id, kind, {**params, "seed": 5, "oven": "virtual"}, "equivalence")
            c = run(store, rig, cid, progress=False)
            assert c.state == "done"
            out[kind] = export_rows(store, c), store.rows(cid), store.op_times(cid)
        if density:
            cid = create(store, rig, chip_id, "flexlevel", {**FLEXLEVEL, "blocks": blocks[4:6], "seed": 5,
                                                           "oven": "virtual"}, "equivalence")
            c = run(store, rig, cid, progress=False)
            assert c.state == "done"
            k = KINDS["flexlevel"]
            out["flexlevel"] = store.bit_error_reads(cid), k.results(store, c, k.params.from_mapping(c.params),
                                                                     store.page_map(chip_id))
        return out
    finally:
        store.close()


def flares(rig: Rig) -> dict:
    params = load_params("flares-taco2014")
    v = Validator(rig, {False: params, True: params}, pages=(2,))
    v.wear[FLARES_BLOCK] = PRE_WEAR
    tr = v.measure("operating-points", [FLARES_BLOCK] * 2, scale=0.02, wear=(PRE_WEAR + 2, PRE_WEAR + 12))
    target, rber = v.targets(tr, 0)
    decisions = {(w, m): v.replay(tr, 0, target, rber, w, m)["chosen_t"] for w in WSIZES for m in MIXES_PM}
    return {"ops": tr.ops, "errors": tr.errors, "pe": tr.pe, "now_s": tr.now_s, "target": target.tolist(),
            "decisions": decisions}


@contextmanager
def rtl_rig(sim: RtlRig):
    with sim, Rig.open(sim.url, timeout=HOST_TIMEOUT_S) as r:
        yield r


def ecc_reads(rig: Rig) -> list[tuple]:
    """Pages programmed with BCH parity at several t (and one without, read as if it had some), a hot
    bake on the worn block, then decoded reads: the rig's BCH engine against lib/bch.c."""
    rig.erase(FLARES_BLOCK)
    ts = (8, 4, 14)
    for page, t in enumerate(ts):
        rig.program(FLARES_BLOCK, page, seed=77, t=t)
    rig.program(FLARES_BLOCK, len(ts), seed=77)
    rig.advance(hours=12, temp_c=125)  # years of retention at room temperature
    out = []
    for page, t in enumerate((*ts, 4)):
        r = rig.read(FLARES_BLOCK, page, seed=77, t=t, raw=True)
        out.append((r.chip_status, r.codewords, r.data))
    return out


def rig_flares(rig: Rig) -> list[tuple]:
    """FLARES in the rig: two program/bake/read rounds on the worn block with windows of 4, then the RAM
    profiles forgotten (new constants: the evaluation runs through rewrite alarms) and the pages read through the
    records in their spare areas (and one page with pattern where a record would be, one erased)."""
    def seen(r):
        return r.step, r.source, r.deterr, r.failed, r.read.chip_status, r.read.codewords

    cfg = FlaresConfig(wsize=4)
    rig.flares_config(cfg)
    steps, pe = [], PRE_WEAR + 1  # ecc_reads erased the block once
    for rnd in range(2):
        rig.erase(FLARES_BLOCK)
        pe += 1
        steps += [rig.flares_program(FLARES_BLOCK, page, seed=50 + rnd, pe=pe).step for page in range(3)]
        rig.advance(hours=FLARES_BAKE_H, temp_c=125)
        for _ in range(3):
            steps += [seen(rig.flares_read(FLARES_BLOCK, page, seed=50 + rnd)) for page in range(3)]
    rig.program(FLARES_BLOCK, 3, seed=1)
    rig.flares_config(FlaresConfig(wsize=4, evaluate_on_alarm=True))
    steps += [seen(rig.flares_read(FLARES_BLOCK, page, seed=51)) for page in range(5)]
    return steps + rig_flares_sent_tables(rig, pe)


def rig_flares_sent_tables(rig: Rig, pe: int) -> list:
    """Per-page-type tables sent at run time: two short loads refused (a wrong CRC; a right CRC over what is not a
    whole table set), the good set taken, then a round whose upper page decides on its own model; back to the
    compiled-in tables at the end. (Simulated, receiving and checking the 24 KB set is the longest command here.)"""
    sent = rig_blob([load_params("mlc-3x-demo", t) for t in ("lower", "upper")])
    out = []
    for crc in (sent.crc, zlib.crc32(sent.data[:100])):
        try:
            rig.call(Opcode.FLARES_TABLES, P.FLARES_TABLES_REQ.pack(0, 100, crc, P.FlaresTablesFlag.COMMIT)
                     + sent.data[:100])
            out.append("taken")
        except RigError as e:
            out.append(e.code)
    out += [rig.flares_config(FlaresConfig()).tables, rig.flares_tables(sent), rig.flares_config(FlaresConfig(wsize=2))]
    rig.erase(FLARES_BLOCK)
    kinds = [(page, page_map(page, rig.info().pages_per_block)[1]) for page in range(4)]
    out += [rig.flares_program(FLARES_BLOCK, page, seed=60, pe=pe + 1, upper=up).step for page, up in kinds]
    rig.advance(hours=16, temp_c=125)
    for _ in range(2):
        out += [rig.flares_read(FLARES_BLOCK, page, seed=60, upper=up).step for page, up in kinds]
    return out + rig_guarded_rounds(rig, kinds, pe + 2) + [rig.flares_tables(None)]


def rig_guarded_rounds(rig: Rig, kinds: list[tuple[int, bool]], pe: int) -> list:
    """Guarded FLARES on the sent tables: two rounds whose reads see a bake the rig's clock calls minutes, so the
    decoder's counts exceed what the model expects of them and raise t (zone MEASURED, a higher t written)."""
    rig.flares_config(FlaresConfig(wsize=2, guarded=True))
    out = []
    for rnd in range(2):
        rig.erase(FLARES_BLOCK)
        out += [rig.flares_program(FLARES_BLOCK, page, seed=61 + rnd, pe=pe + rnd, upper=up).step for page, up in kinds]
        rig.advance(hours=16, temp_c=125)
        out += [rig.flares_read(FLARES_BLOCK, page, seed=61 + rnd, upper=up).step for page, up in kinds]
    return out


# the virtual rig as a SoC with the RTL rig's engine: the BCH variant's t_max (14) below what the spare holds
RIGS = {"virtual": lambda bch: Rig(InProcessTransport(VirtualRig(chip(), exact=True, bch_t_max=RTL_BCH.t_max))),
        "rtl": lambda bch: rtl_rig(RtlRig(chip(), bch=bch)),
        "rtl-ulx3s": lambda bch: rtl_rig(RtlRig(chip(), bch=bch, board="ulx3s"))}  # at the board's clock


def measure(name: str, tmp) -> dict:
    """Campaigns on the rig's default build; BCH-decoded reads on its BCH variant, from a fresh chip each. The
    board's-clock build runs the endurance campaign (its controller at the board's timing); the density campaign,
    both FLARES runs and the decoded reads use the same controller operations again, and the BCH engine works in
    clock cycles whatever their rate (the bitstream test holds it to the board's clock), so they run on the
    default build alone (the CI budget)."""
    if name == "rtl-ulx3s":
        with RIGS[name](False) as r:
            return campaigns(r, tmp / f"{name}.db", density=False)
    with RIGS[name](False) as r:
        out = campaigns(r, tmp / f"{name}.db")
        out["flares"] = flares(r)
    with RIGS[name](True) as r:
        out["ecc"] = ecc_reads(r)
        out["rig_flares"] = rig_flares(r)
    return out


@pytest.fixture(scope="module")
def virtual(tmp_path_factory) -> dict:
    """The virtual rig's measurements, made once per run: pytest-xdist workers share the run's temporary root, and
    the first to get here measures while the other waits for its result."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # (this run's alone either way)
    with open(shared / "equivalence-virtual.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = shared / "equivalence-virtual.pickle"
        if not done.exists():
            done.write_bytes(pickle.dumps(measure("virtual", tmp_path_factory.mktemp("equiv"))))
        return pickle.loads(done.read_bytes())


@pytest.fixture(scope="module")
def results(rtl, tmp_path_factory, request) -> dict:
    """One RTL build's measurements beside the virtual rig's (each build a test group of its own, so the two
    builds' simulations run at once under pytest-xdist; the RTL rig first, while the other worker may be making
    the virtual rig's)."""
    mine = measure(rtl, tmp_path_factory.mktemp("equiv"))
    return {"virtual": request.getfixturevalue("virtual"), rtl: mine}


RTL_BUILDS = pytest.mark.parametrize("rtl", [pytest.param(b, marks=pytest.mark.xdist_group(f"equivalence-{b}"))
                                             for b in ("rtl", "rtl-ulx3s")], scope="module")
DEFAULT_BUILD = pytest.mark.parametrize("rtl", [pytest.param("rtl", marks=pytest.mark.xdist_group("equivalence-rtl"))],
                                        scope="module")  # what measure() runs on the default build alone


@RTL_BUILDS
def test_endurance_campaign_exports_the_same_measurements(results, rtl):
    (v_rows, v_pages, _), (r_rows, r_pages, _) = results["virtual"]["endurance"], results[rtl]["endurance"]
    v_rows, r_rows = [dict(x) for x in v_rows], [dict(x) for x in r_rows]  # the comparison pops fields
    assert [row["pe"] for row in v_rows] == CHECKPOINTS
    assert sum(row["errors"] for row in v_rows) > 0  # something to compare
    for v, r in zip(v_rows, r_rows, strict=True):
        assert abs(v.pop("actual_h") - r.pop("actual_h")) < 1e-3
        assert v == r
    assert len(v_pages) == len(r_pages) == len(CHECKPOINTS) * 2 * 32
    for v, r in zip(v_pages, r_pages):
        assert v._replace(actual_h=0.0, busy_ns=0) == r._replace(actual_h=0.0, busy_ns=0)
        assert (v.busy_ns is None) == (r.busy_ns is None)  # the same pages' tR hidden by cache reads
        assert abs((v.busy_ns or 0) - (r.busy_ns or 0)) <= BUSY_TOLERANCE_NS


@DEFAULT_BUILD
def test_flexlevel_campaign_reads_the_same_bits_and_decodes_the_same(results, rtl):
    """Soft reads at two sensing levels and a reduced-state block (explicit programs, moved references): every
    page read's bit errors are the same on both rigs, so the LDPC decodes and the ReduceCode reads are too."""
    (v_reads, v_res), (r_reads, r_res) = results["virtual"]["flexlevel"], results[rtl]["flexlevel"]
    assert len(v_reads) == len(r_reads) == 2 * (2 * 32 + 32)  # fresh and aged: a block at 2 levels, one reduced
    assert sum(len(x[6]) for x in v_reads) > 0  # errors to compare
    for v, r in zip(v_reads, r_reads, strict=True):
        assert v[:5] == r[:5] and v[6] == r[6]
        assert abs(v[5] - r[5]) <= BUSY_TOLERANCE_NS

    def without_times(res: dict) -> dict:  # read latency follows the busy times, equal to a few cycles
        return {**res, "conditions": [{**x, "levels": [{k: v for k, v in o.items() if k != "read_us"}
                                                       for o in x["levels"]]} for x in res["conditions"]],
                "reduced": [{k: v for k, v in x.items() if k not in ("read_us", "normal_read_us")}
                            for x in res["reduced"]]}

    assert without_times(v_res) == without_times(r_res)
    for v, r in zip(v_res["reduced"], r_res["reduced"], strict=True):
        assert v["read_us"] == pytest.approx(r["read_us"], abs=2 * BUSY_TOLERANCE_NS / 1000)
    assert v_res["reduced"] and all(x["data_bits"] for x in v_res["reduced"])


@DEFAULT_BUILD
def test_density_campaign_programs_reads_and_times_the_same(results, rtl):
    """The pSLC block's CYCLE carries a page set (its lower pages): the firmware programs only those, as the
    virtual rig does, so the chip holds the same cells and the two rigs measure the same errors."""
    (_, v_pages, v_ops), (_, r_pages, r_ops) = results["virtual"]["density"], results[rtl]["density"]
    lower = sum(1 for p in range(32) if not page_map(p, 32)[1])
    assert len(v_pages) == len(r_pages) == 2 * len(DENSITY_CHECKPOINTS) * (32 + lower)  # fresh, after 3 years
    assert sum(v.err_1to0 + v.err_0to1 for v in v_pages) > 0
    for v, r in zip(v_pages, r_pages, strict=True):
        assert v._replace(actual_h=0.0, busy_ns=0) == r._replace(actual_h=0.0, busy_ns=0)
        assert (v.busy_ns is None) == (r.busy_ns is None)  # the same pages' tR hidden by cache reads
        assert abs((v.busy_ns or 0) - (r.busy_ns or 0)) <= BUSY_TOLERANCE_NS
    assert [(o.op, o.block, o.page, o.pe) for o in v_ops] == [(o.op, o.block, o.page, o.pe) for o in r_ops]
    for v, r in zip(v_ops, r_ops):
        assert abs(v.busy_ns - r.busy_ns) <= BUSY_TOLERANCE_NS


@DEFAULT_BUILD
def test_flares_validation_run_measures_and_decides_the_same(results, rtl):
    v, r = dict(results["virtual"]["flares"]), dict(results[rtl]["flares"])
    assert len(v["ops"]) == 2 * 20 and sum(map(sum, v["errors"])) > 0  # two points of max(10, 1000 * 0.02) ops
    assert len(set(v["target"])) > 1  # the measured errors moved the target t (FLARES stays above it at 28)
    # the RTL rig's clock starts at power-on, the virtual rig's with the chip: compare elapsed times
    v_now, r_now = v.pop("now_s"), r.pop("now_s")
    assert all(abs((a - v_now[0]) - (b - r_now[0])) <= 1 for a, b in zip(v_now, r_now, strict=True))
    assert v == r


@DEFAULT_BUILD
def test_bch_decoded_reads_are_the_same(results, rtl):
    v, r = results["virtual"]["ecc"], results[rtl]["ecc"]
    corrected = [c.corrected for _, cws, _ in v for c in cws]
    assert max(corrected) > 0 and -1 in corrected  # corrections and failures both happened
    assert v == r


@DEFAULT_BUILD
def test_flares_in_the_rig_decides_and_decodes_the_same(results, rtl):
    v, r = results["virtual"]["rig_flares"], results[rtl]["rig_flares"]
    sent = v[v.index(Err.BAD_PARAMETER):]  # the tables sent at run time: two bad loads refused first
    assert sent[:2] == [Err.BAD_PARAMETER] * 2 and sent[2].source == TablesSource.BUILTIN
    assert sent[3].source == sent[4].tables.source == TablesSource.LOADED
    programs = sent[5:9]  # pages 0-3: page 2 is the upper page, whose model asks more of its t
    assert programs[2].t > max(programs[k].t for k in (0, 1, 3))
    guarded = sent[-17:-1]  # rig_guarded_rounds: 4 programs and 4 reads a round
    assert {s.zone for s in guarded[4:8]} == {Zone.MEASURED}  # the decoder's counts above the model's
    assert all(b.t >= a.t for a, b in zip(guarded[:4], guarded[8:12]))  # and the next round written with more t
    assert any(b.t > a.t for a, b in zip(guarded[:4], guarded[8:12]))
    reads = [x for x in v if isinstance(x, tuple)]
    assert {x[0].zone for x in reads} >= {Zone.NONE, Zone.FAST, Zone.SAFE, Zone.FAILURE}  # FLARES decided
    assert {x[1] for x in reads} == set(ProfileSource)  # RAM, the spare's record, erased, unreadable
    assert sum(x[2] for x in reads) > 0  # the decoder corrected errors, which FLARES counted
    steps = [x for x in v if isinstance(x, FlaresStep)] + [x[0] for x in reads]
    assert any(s.flags & P.Decide.BEYOND_REACH for s in steps)  # projections past t_cap 14, said alike
    assert v == r
