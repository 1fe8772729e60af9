"""FLARES twice: the Python reference and the C firmware module must decide identically."""
import random
import shutil
import subprocess
from pathlib import Path

import bchlib
import pytest

from nandrig.characterization import CorrTable, RetentionGrid, load_params
from nandrig.characterization.flares import Decision, Flares, FlaresAccess, FlaresConfig, Zone
from nandrig.characterization.flares_tables import FixedTables
from nandrig.characterization.rber import RberParams
from nandrig.characterization.flares_tables import c_header
from nandrig.errors import NandrigError
from nandrig.firmware import flares as fw
from nandrig.characterization import flares_wire as blob

ROOT = Path(__file__).resolve().parents[2]
PARAM_SETS = {
    "paper": load_params("flares-taco2014"),
    # a fit of the virtual mlc-3x chip (the demo's): steeper wear exponent, near-linear write errors
    "chip-fit": RberParams(A=1.0094, B=1e-10, C=-1.0093992584, Bo=1.2676e-12, m=0.58077, n=2.8039, name="chip-fit"),
    # the demo's per-page-type fits, log-time retention (the law the AIC picks for the virtual chip): two models,
    # lower and upper pages, each served from its own tables (their time factor ln(1 + t/tau)^m)
    "per-page-type": (load_params("mlc-3x-demo", "lower"), load_params("mlc-3x-demo", "upper")),
}


def tables_for(params):
    """FixedTables per model (one, or lower and upper) and the C header holding them all."""
    models = params if isinstance(params, tuple) else (params,)
    table = CorrTable.build(1e-11, 4096 * 8)
    grids = [RetentionGrid.build(p, table, 10_000, 250) for p in models]
    fts = tuple(FixedTables.build(p, table, g) for p, g in zip(models, grids))
    header = c_header(models[0], table, grids[0], upper=models[1] if len(models) > 1 else None)
    return (fts if len(fts) > 1 else fts[0]), header


def reference(fts, cfg=FlaresConfig()):
    return Flares(fts[0], cfg, upper=fts[1]) if isinstance(fts, tuple) else Flares(fts, cfg)


SENT = "per-page-type, sent"  # the per-page-type set received at run time by a module built with the paper's


@pytest.fixture(scope="module", params=[*PARAM_SETS, SENT])
def both(request, tmp_path_factory):
    """(FixedTables, the C module, the C tables it decides with)."""
    if request.param == SENT:
        fts, _ = tables_for(PARAM_SETS["per-page-type"])
        lib = fw.Native(fw.build(tables_for(PARAM_SETS["paper"])[1], tmp_path_factory.mktemp("fw")))
        ctab = lib.decode_tables(blob.encode(list(fts)).data)
        assert ctab is not None
        return fts, lib, ctab
    fts, header = tables_for(PARAM_SETS[request.param])
    lib = fw.Native(fw.build(header, tmp_path_factory.mktemp("fw")))
    return fts, lib, lib.builtin


def test_committed_header_is_current():
    _, header = tables_for(load_params("flares-taco2014"))
    assert (ROOT / "firmware/flares/tables/flares_tables.h").read_text() == header


def test_lookups_match_bit_for_bit(both):
    fts, lib, ctab = both
    ref = reference(fts)
    rng = random.Random(3)
    for _ in range(20_000):
        pe, s = rng.randrange(0, 15_000), rng.choice([rng.randrange(0, 100), rng.randrange(0, 2**31)])
        for page_type in (0, 1):
            ft = ref.model(page_type)
            assert lib.lib.flares_rber_wr(ctab, page_type, pe) == ft.rber_wr(pe)
            assert lib.lib.flares_rber_rd(ctab, page_type, pe, s) == ft.rber_rd(pe, s)
        proj = rng.randrange(0, 1 << 40)
        assert lib.lib.flares_t_for(ctab, proj) == ref.tables.t_for(proj)
    if isinstance(fts, tuple):  # two models: the upper pages' tables are their own
        year = 365 * 86_400
        assert lib.lib.flares_rber_rd(ctab, 1, 10_000, year) > 2 * lib.lib.flares_rber_rd(ctab, 0, 10_000, year)


U32 = 1 << 32


def start_time(rng: random.Random) -> int:
    """Where a sequence's clock starts: near zero, or just before FLARES' u32 clock wraps (136 years of baked
    retention take a run's 25 degC-equivalent clock past it)."""
    return rng.choice([rng.randrange(0, 1 << 20), U32 - rng.randrange(1, 90 * 86_400)])


def random_sequence(rng: random.Random, length: int):
    now = start_time(rng)
    for _ in range(length):
        now += rng.choice([0, 1, 60, 3600, rng.randrange(0, 40 * 24 * 3600)])
        op = FlaresAccess.PROGRAM if rng.random() < 0.2 else FlaresAccess.READ
        fail = rng.random() < 0.05
        deterr = rng.choice([0, 1, 2, rng.randrange(0, 60), rng.randrange(0, 400)])
        yield op, deterr, fail, now, None


def scenario_sequence(rng: random.Random, length: int):
    """A page on a chip: wear rises, errors follow the model's RBER, reads and programs interleave."""
    params = PARAM_SETS["paper"]
    now, pe, written = start_time(rng), rng.randrange(0, 10_000), 0
    for _ in range(length):
        now += rng.choice([60, 3600, 86_400, 30 * 86_400])
        if rng.random() < 0.3:
            pe += rng.choice([1, 1, 1, 9, 90])  # the rig may cycle the block between FLARES' programs
            written = now
            yield FlaresAccess.PROGRAM, 0, False, now, pe
        else:
            p = float(params.rber(pe, (now - written) / 3600))
            errs = sum(rng.random() < p * 32768 / 50 for _ in range(50))  # binomial, cheap
            yield FlaresAccess.READ, errs, errs > 60, now, None


SEQUENCES_PER_SET = 25_000


@pytest.mark.slow
def test_reference_and_firmware_decide_identically_on_100k_sequences(both):
    """25,000 sequences per parameter set (100,000 in all, one set sent at run time), each on a page of a random
    type, half of them guarded FLARES (its floor, measured raises and measured alarms included)."""
    fts, lib, ctab = both
    ft = fts[0] if isinstance(fts, tuple) else fts
    rng = random.Random(11)
    sequences = decisions = evaluations = alarms_evaluated = beyond = read_alarms = stale_alarms = alarm_beyond = 0
    across_wrap = 0
    zones = set()
    for k in range(SEQUENCES_PER_SET):
        cfg = FlaresConfig(wsize=rng.choice([1, 2, 5, 10, 100]), mix_pm=rng.choice([0, 500, 1000, rng.randrange(1001)]),
                           saferange_pm=rng.choice([50, 0, 200]), maxfail=rng.choice([3, 0, 1]),
                           maxcritical=rng.choice([5, 0, 2]), maxover=rng.choice([15, 0, 3]),
                           req_ret_s=rng.choice([365 * 86_400, 30 * 86_400, 0]),
                           t_cap=rng.choice([0, 0, ft.t_max + 5, rng.randrange(1, ft.t_max + 1)]),
                           evaluate_on_alarm=rng.random() < 0.5, guarded=rng.random() < 0.5,
                           guard_z10=rng.choice([30, 0, 20, rng.randrange(101)]),
                           alarm_use_pm=rng.choice([750, 0, 1000, rng.randrange(1001)]))
        ref = reference(fts, cfg)
        t0 = rng.randrange(ft.t_min, ref.t_cap + 1)
        pe0, page_type = rng.randrange(0, 12_000), rng.randrange(2)
        assert ref.cold_start(pe0, page_type) == lib.lib.flares_cold_start(lib.config(cfg, ctab), page_type, pe0) <= ref.t_cap
        assert ref.cold_start_beyond(pe0, page_type) == bool(
            lib.lib.flares_cold_start_beyond(lib.config(cfg, ctab), page_type, pe0))
        beyond += ref.cold_start_beyond(pe0, page_type)
        py, c, ccfg = ref.new_page(t0, pe0), lib.new_page(t0, pe0), lib.config(cfg, ctab)
        gen = scenario_sequence if k % 2 else random_sequence
        for op, deterr, fail, now, pe in gen(rng, rng.randrange(1, 40)):
            if pe is not None:  # the host names the block's wear, as FLARES_PROGRAM does; upPage adds this program
                py.pecycles = c.pecycles = pe - 1
            cw = rng.choice([1, 1, 2, 4])  # guarded FLARES counts the read's codewords as they were
            errors = rng.choice([deterr, deterr * cw, rng.randrange(0, 2000)])
            across_wrap += now >= U32 and py.writestamp > now % U32  # data written before the wrap, used after
            now %= U32  # FLARES' clock is u32 seconds, in the rig and here
            d = ref.up_page(py, op, deterr, fail, now, page_type, errors, cw)
            e = lib.up_page(ccfg, c, int(op), deterr, fail, now, page_type, errors, cw)
            assert (int(d.zone), d.p, d.proj, d.alarm, d.invalidate, d.beyond_reach) == \
                (e.zone, e.p, e.proj, bool(e.alarm), bool(e.invalidate), bool(e.beyond))
            beyond += d.beyond_reach
            alarm_beyond += d.zone == Zone.ALARM and d.beyond_reach
            assert all(getattr(py, f) == getattr(c, f) for f, *_ in fw.Pprof._fields_)
            assert (ref.types.errors, ref.types.expected_q16, ref.types.pe_ref) == \
                (list(ccfg.counts.errors), list(ccfg.counts.expected_q16), list(ccfg.counts.pe_ref))
            assert py.p_next <= ref.t_cap
            decisions += 1
            evaluations += d.zone != Zone.NONE
            alarms_evaluated += d.alarm and d.zone != Zone.ALARM  # an alarm the evaluation ran through
            read_alarms += d.alarm and d.zone == Zone.NONE  # guarded: a read that used too much of its t
            # or whose data was older than its t protects, whatever its errors
            stale_alarms += (d.alarm and d.zone == Zone.NONE and not fail
                             and deterr * 1000 <= cfg.alarm_use_pm * py.p_cur)
            zones.add(d.zone)
        sequences += 1
    assert sequences == SEQUENCES_PER_SET and evaluations > 2 * SEQUENCES_PER_SET
    assert zones == set(Zone)  # every zone was exercised
    assert alarms_evaluated > 500  # and the evaluation through an alarm (FlaresConfig.evaluate_on_alarm)
    assert beyond > 500  # and projections beyond the rig's t_cap (density control's signal)
    assert alarm_beyond > 100, alarm_beyond  # also where an alarm ended the evaluation (a rewrite at t_cap won't do)
    assert read_alarms > 500  # and guarded FLARES' alarms from a read's measured errors
    assert stale_alarms > 500, stale_alarms  # and from a read of data past its retention
    assert across_wrap > 1000, across_wrap  # and ages across the wrap of FLARES' u32 clock


def test_an_age_across_the_clock_wrap_decides_as_the_same_age_without_it(both):
    """FLARES' u32 clock wraps after 136 years, which a run's baked retention can pass: a sequence shifted so
    that its clock wraps between a program and its reads decides exactly as unshifted, in both implementations."""
    fts, lib, ctab = both
    cfg = FlaresConfig(wsize=5, guarded=True)
    rng = random.Random(5)
    steps = [(FlaresAccess.PROGRAM if k % 6 == 0 else FlaresAccess.READ, rng.randrange(0, 40), k * 40 * 86_400)
             for k in range(60)]  # 40 days apart: ages up to 200 days, past and short of the year protected
    runs = []
    for shift in (0, U32 - 100 * 86_400):  # the wrap falls between the program at day 80 and the reads after it
        ref, ccfg = reference(fts, cfg), lib.config(cfg, ctab)
        py, c = ref.new_page(10, 3000), lib.new_page(10, 3000)
        got = []
        for op, deterr, t in steps:
            now = (t + shift) % U32
            d = ref.up_page(py, op, deterr, False, now, 1)
            e = lib.up_page(ccfg, c, int(op), deterr, False, now, 1)
            got.append(((int(d.zone), d.p, d.proj, d.alarm), (e.zone, e.p, e.proj, bool(e.alarm)), py.p_next))
        runs.append(got)
    assert runs[0] == runs[1]
    assert all(a == b for a, b, _ in runs[0])
    assert any(a[3] for a, _, _ in runs[0]) and not all(a[3] for a, _, _ in runs[0])  # ages past it and short of it


def test_pprof_record_is_bch_compatible_with_lib_bch(tmp_path):
    ft, header = tables_for(load_params("flares-taco2014"))
    lib = fw.Native(fw.build(header, tmp_path))
    ref = bchlib.BCH(5, prim_poly=0x83)
    rng = random.Random(5)
    for _ in range(300):
        pp = fw.Pprof(p_cur=rng.randrange(128), pecycles=rng.randrange(1 << 17), writestamp=rng.randrange(1 << 32))
        rec = lib.pack(pp)
        assert rec[7:] == bytes(ref.encode(rec[:7]))  # parity byte for byte as lib/bch.c computes it
        flips = rng.sample(range(91), rng.randrange(0, 6))  # 56 data + 35 parity bits
        bad = bytearray(rec)
        for i in flips:
            bad[i // 8 if i < 56 else 7 + (i - 56) // 8] ^= 0x80 >> ((i if i < 56 else i - 56) % 8)
        n, got = lib.unpack(bytes(bad))
        assert n == len(flips)
        assert (got.p_cur, got.pecycles, got.writestamp) == (pp.p_cur, pp.pecycles, pp.writestamp)
    assert lib.unpack(b"\xff" * 12)[0] == -2  # an erased spare area: no profile yet


def test_pprof_detects_most_uncorrectable_records(tmp_path):
    ft, header = tables_for(load_params("flares-taco2014"))
    lib = fw.Native(fw.build(header, tmp_path))
    rng = random.Random(6)
    outcomes = {"detected": 0, "miscorrected": 0}
    for _ in range(500):
        pp = fw.Pprof(p_cur=rng.randrange(128), pecycles=rng.randrange(1 << 17), writestamp=rng.randrange(1 << 32))
        bad = bytearray(lib.pack(pp))
        for i in rng.sample(range(56), 8):
            bad[i // 8] ^= 0x80 >> (i % 8)
        n, got = lib.unpack(bytes(bad))
        outcomes["detected" if n < 0 else "miscorrected"] += 1
    assert outcomes["detected"] > 400, outcomes


def test_reference_zones_behave_as_the_paper_describes():
    ft, _ = tables_for(load_params("flares-taco2014"))
    f = Flares(ft, FlaresConfig(wsize=10, mix_pm=500, maxover=2))
    pp = f.new_page(3)  # t = 3 is what a fresh page needs; t = 1 would raise a rewrite alarm at once
    f.up_page(pp, FlaresAccess.PROGRAM, 0, False, 0)
    zones = [f.up_page(pp, FlaresAccess.READ, 20, False, 60 * i).zone for i in range(1, 10)]
    assert zones[-1] == Zone.FAST and pp.p_next > 3  # many errors: t goes up at once
    high = pp.p_next
    f.up_page(pp, FlaresAccess.PROGRAM, 0, False, 700)
    seen = [f.up_page(pp, FlaresAccess.READ, 0, False, 700 + i).zone for i in range(1, 40)]
    # clean reads: t comes down one step after MAXOVER + 1 overcorrection windows, and stays decided
    assert seen.count(Zone.OVERCORRECTION) >= 3 and pp.p_next == high - 1
    pp2 = f.new_page(10)
    for i in range(9):
        f.up_page(pp2, FlaresAccess.READ, 0, True, 10 + i)  # decode failures
    d = f.up_page(pp2, FlaresAccess.READ, 0, True, 20)
    assert d.zone == Zone.FAILURE and d.invalidate and pp2.p_next >= 11
    pp3 = f.new_page(3)
    assert f.evaluate(pp3, 10 * 365 * 86_400).zone != Zone.ALARM  # eq. 5: no retention loss at 0 P/E
    pp3.pecycles = 5000
    d = f.evaluate(pp3, 10 * 365 * 86_400)  # a worn page left ten years without a rewrite
    assert d.zone == Zone.ALARM and d.alarm


def test_measurement_is_per_read_and_the_projection_looks_a_window_ahead():
    """meas counts the window's reads only (a program adds no errors), and the model terms are taken at the wear
    the window now starting will reach: today's P/E plus what the last window added."""
    ft, _ = tables_for(load_params("flares-taco2014"))
    f = Flares(ft, FlaresConfig(wsize=10, mix_pm=1000, req_ret_s=0))  # the projection is meas alone

    def window(programs: int, pe_step: int) -> Decision:
        pp = f.new_page(20, 3000)
        for k in range(10):
            if k < programs:
                pp.pecycles += pe_step - 1  # the host names the block's wear; upPage adds one
                d = f.up_page(pp, FlaresAccess.PROGRAM, 0, False, 0)
            else:
                d = f.up_page(pp, FlaresAccess.READ, 30, False, 0)
        return d

    all_reads, with_programs = window(0, 1), window(2, 1)
    assert all_reads.proj == with_programs.proj == (30 << 48) // ft.codeword_bits  # 30 errors per read in both
    f = Flares(ft, FlaresConfig(wsize=10, mix_pm=0, req_ret_s=365 * 86_400))  # the model alone
    worn = window(1, 900)  # the block was cycled 900 times in this window: the next one is expected to add as much
    assert worn.proj == ft.rber_wr(3900 + 900) + ft.rber_rd(3900 + 900, 365 * 86_400)


def test_guarded_flares_counts_a_programs_first_read_only():
    """Rereading one program's data finds the same weak cells: the type's counts take its first read, so ten
    rereads do not make the model look tested (mlc-small's die 7 fell under target that way)."""
    ft, _ = tables_for(load_params("flares-taco2014"))
    f = Flares(ft, FlaresConfig(wsize=1000, guarded=True))
    pp = f.new_page(20, 999)
    f.up_page(pp, FlaresAccess.PROGRAM, 0, False, 0)
    for k in range(10):
        f.up_page(pp, FlaresAccess.READ, 3, False, 10 + k, errors=3)
    once = (f.types.errors[0], f.types.expected_q16[0])
    assert once[0] == 3 and once[1] > 0
    f.up_page(pp, FlaresAccess.PROGRAM, 0, False, 100)
    f.up_page(pp, FlaresAccess.READ, 4, False, 110, errors=4)
    assert f.types.errors[0] == 7 and f.types.expected_q16[0] > once[1]  # new data: counted again


def test_firmware_builds_for_the_soft_core():
    assert shutil.which("riscv64-unknown-elf-gcc"), "tools/setup.sh installs gcc-riscv64-unknown-elf"
    r = subprocess.run(["make", "-s", "-C", str(ROOT / "firmware/flares"), "rv32", "BUILD=/tmp/nandrig-flares-rv32"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    text = int(r.stdout.split("\n")[1].split()[0])
    assert 0 < text < 64 * 1024


def test_tables_sent_at_run_time_are_read_as_written_or_refused_whole(tmp_path):
    """The blob both sides read (nandrig.characterization.flares_wire): Python reads back what it wrote; the C module
    takes a well-formed one for its own dimensions and refuses the rest, leaving its tables untouched."""
    fts, _ = tables_for(PARAM_SETS["per-page-type"])
    sent = blob.encode(list(fts))
    assert tuple(blob.decode(sent.data)) == fts and sent.models == 2
    lib = fw.Native(fw.build(tables_for(PARAM_SETS["paper"])[1], tmp_path))
    assert lib.decode_tables(sent.data) is not None and lib.decode_tables(blob.encode([fts[0]]).data) is not None
    paper, t40 = load_params("flares-taco2014"), CorrTable.build(1e-11, 4096 * 8, 1, 40)
    narrow = FixedTables.build(paper, t40, RetentionGrid.build(paper, t40, 10_000, 250))
    flat = bytearray(sent.data)
    grid_at = blob.HEAD.size + 8 * (fts[0].t_max - fts[0].t_min + 1)
    flat[grid_at + 4:grid_at + 8] = flat[grid_at:grid_at + 4]  # two equal time-grid points
    for bad in (blob.encode([narrow]).data,  # t up to 40: not this build's range
                sent.data[:-1], sent.data + b"\0", bytes(flat), b"\2" + sent.data[1:],
                sent.data[:2] + b"\x0f" + sent.data[3:]):  # GF(2^15): not this engine's
        assert lib.decode_tables(bad) is None
    with pytest.raises(NandrigError, match="bytes"):
        blob.decode(sent.data[:-1])
