"""FLARES on the rig (FLARES_CONFIG / FLARES_PROGRAM / FLARES_READ) on the virtual rig, the firmware's golden
model: t per page from its profile, the profile in the spare, decisions as the reference takes them."""
import ctypes
import dataclasses
import subprocess
from pathlib import Path

import pytest

from nandrig.boards.sim import rig_flares
from nandrig.boards.sim.server import VirtualRig
from nandrig.characterization.flares import Flares, FlaresAccess, FlaresConfig, Zone
from nandrig.characterization.flares_wire import TableRecipe
from nandrig.characterization.rber import load_params
from nandrig.errors import NandrigError
from nandrig import protocol as P
from nandrig.protocol import Cap, Decide, Err, Opcode, ProfileSource, TablesSource
from nandrig.characterization import flares_wire as blobs
from nandrig.host.engine.flares_validate import validate
from nandrig.host.link.rig import FlaresRigTables, Rig, RigError
from nandrig.host.link.transport import InProcessTransport

ROOT = Path(__file__).resolve().parents[2]
BLOCK = 5


def open_rig(profile: str = "mlc-small", seed: int = 4, **kw) -> Rig:
    return Rig(InProcessTransport(VirtualRig.open(profile, seed, **kw)))


def test_committed_rig_header_is_current():
    """The firmware compiles firmware/rig/rig_flares_tables.h; the virtual rig builds the same from RIG_TABLES."""
    assert (ROOT / "firmware/rig/rig_flares_tables.h").read_text() == rig_flares.RIG_TABLES.build()[1]


def test_record_round_trip_and_correction():
    pp = rig_flares.Pprof(p_cur=13, p_next=13, pecycles=98_765, writestamp=0xDEADBEEF)
    rec = bytearray(rig_flares.pack(pp))
    assert len(rec) == rig_flares.RECORD_BYTES
    for bit in (0, 17, 60, 88, 90):  # bits 91-95 pad the 35 parity bits
        rec[bit // 8] ^= 0x80 >> (bit % 8)
    n, got = rig_flares.unpack(bytes(rec))
    assert n == 5 and (got.p_cur, got.pecycles, got.writestamp) == (13, 98_765, 0xDEADBEEF)
    assert rig_flares.unpack(b"\xff" * 12) == (-2, None)


def test_rig_decisions_follow_the_reference_on_the_errors_it_measured():
    """Wear the block far beyond what the program announces, so reads fail and FLARES must react."""
    with open_rig() as rig:
        assert rig.hello().capabilities & Cap.FLARES
        cfg = FlaresConfig(wsize=4, mix_pm=1000, maxfail=1)
        got = rig.flares_config(cfg)
        t_min, t_cap, slots = got.t_min, got.t_cap, got.profile_slots
        assert (t_min, t_cap, slots) == (1, rig.info().t_max, rig_flares.PROFILE_SLOTS)
        rig.cycle(BLOCK, 1, 6000, seed=3)
        ref = Flares(rig_flares.rig_tables(), FlaresConfig(wsize=4, mix_pm=1000, maxfail=1, t_cap=t_cap))
        pp = None
        zones, fails = [], 0
        for rnd in range(4):
            rig.erase(BLOCK)
            for page in (0, 1):  # page 2 is an upper page: its lower page is written first, as on a real chip
                rig.flares_program(BLOCK, page, seed=rnd, pe=10)
            pr = rig.flares_program(BLOCK, 2, seed=rnd, pe=10)  # the host claims 10 P/E: a model far too kind
            now = rig.time_ns() // 10**9
            if pp is None:
                assert pr.step.flags & Decide.NEW_PROFILE
                pp = ref.new_page(ref.cold_start(10), 9)
            pp.pecycles = 9
            d = ref.up_page(pp, FlaresAccess.PROGRAM, 0, False, now)
            assert (pr.step.t, pr.step.zone, pr.step.p) == (pp.p_cur, d.zone, d.p)
            rig.advance(hours=24, temp_c=125)
            for _ in range(4):
                r = rig.flares_read(BLOCK, 2, seed=rnd)
                assert r.source == ProfileSource.RAM and r.step.t == pp.p_cur
                corrected = [c.corrected for c in r.read.codewords[:-1]]
                assert r.failed == corrected.count(-1)
                assert r.deterr == -(-sum(c for c in corrected if c > 0) // len(corrected))
                d = ref.up_page(pp, FlaresAccess.READ, r.deterr, r.failed > 0, rig.time_ns() // 10**9)
                assert (r.step.zone, r.step.p, bool(r.step.flags & Decide.INVALIDATE)) == (d.zone, d.p, d.invalidate)
                zones.append(d.zone)
                fails += r.failed
        assert fails > 0 and Zone.FAILURE in zones  # failures seen, and acted on
        assert pp.p_cur > ref.cold_start(10)  # t went up from the model's guess


def test_profile_survives_in_the_spare_area():
    with open_rig() as rig:
        rig.erase(BLOCK)
        first = rig.flares_program(BLOCK, 0, seed=1, pe=2500).step
        rig.program(BLOCK, 1, seed=1, t=4)  # ECC but no profile
        rig.program(BLOCK, 2, seed=1)  # pattern where the record would be
        rig.flares_config(FlaresConfig())  # the rig forgets its RAM profiles
        r = rig.flares_read(BLOCK, 0, seed=1)
        assert r.source == ProfileSource.SPARE and r.step.t == first.t and r.failed == 0
        assert rig.flares_read(BLOCK, 0, seed=1).source == ProfileSource.RAM
        none = rig.flares_read(BLOCK, 1, seed=1)
        assert (none.source, none.step.t, none.step.zone, none.deterr) == (ProfileSource.NONE, 0, Zone.NONE, 0)
        assert rig.flares_read(BLOCK, 2, seed=1).source == ProfileSource.UNREADABLE
        # the next program continues the profile the spare held (no new one)
        rig.erase(BLOCK)
        assert not rig.flares_program(BLOCK, 0, seed=2, pe=2501).step.flags & Decide.NEW_PROFILE


def test_profiles_persist_with_the_rig_state(tmp_path):
    state = tmp_path / "rig.json"
    with open_rig(state_path=state) as rig:
        rig.erase(BLOCK)
        t = rig.flares_program(BLOCK, 3, seed=1, pe=100).step.t
        rig.flares_read(BLOCK, 3, seed=1)
        rig.flares_clock(2 * 365 * 86_400)  # a bake's credit to FLARES' clock goes with the state too
    with open_rig(state_path=state) as rig:
        assert rig.t.rig.flares.clock_credit_s == 2 * 365 * 86_400
        r = rig.flares_read(BLOCK, 3, seed=1)
        assert (r.source, r.step.t) == (ProfileSource.RAM, t)


def test_a_rig_of_an_older_protocol_is_refused_flares_clock_in_one_line():
    with open_rig() as rig:
        rig.hello_info = dataclasses.replace(rig.hello_info, version=(1, 13))
        with pytest.raises(NandrigError, match=r"speaks protocol 1.13: ageing FLARES' pages by a bake \(FLARES_CLOCK\) "
                                               r"needs 1.14 \(update its firmware\)"):
            rig.flares_clock(0)
        before = rig.time_ns()
        with pytest.raises(NandrigError, match="needs 1.14"):  # a live validation, before any wear
            validate(rig, None, list(range(1, 30)), (2, 3), live=FlaresConfig(guarded=True))
        assert rig.time_ns() == before and all(b.pe == 0 for b in rig.t.rig.chip.blocks.values())


@pytest.mark.parametrize("call, code", [
    (lambda r: r.flares_config(FlaresConfig(wsize=1024, mix_pm=1000)), None),
    (lambda r: r.flares_config(FlaresConfig(evaluate_on_alarm=True)), None),
    (lambda r: r.call(Opcode.FLARES_CONFIG, b"\x00" * 14), Err.BAD_PARAMETER),  # wsize 0
    (lambda r: r.call(Opcode.FLARES_CONFIG, b"\x0a" + b"\x00" * 12 + b"\x80"), Err.BAD_PARAMETER),  # unknown flag
    (lambda r: r.call(Opcode.FLARES_CONFIG, b"\x0a" + b"\x00" * 12 + b"\x02"), Err.BAD_FRAME),  # GUARDED, no constants
    (lambda r: r.call(Opcode.FLARES_CONFIG, b"\x00" * 13), Err.BAD_FRAME),
    (lambda r: r.flares_program(BLOCK, 0, seed=1, pe=0), Err.BAD_PARAMETER),
    (lambda r: r.flares_program(BLOCK, 0, seed=1, pe=1 << 17), Err.BAD_PARAMETER),
    (lambda r: r.flares_program(99, 0, seed=1, pe=1), Err.OUT_OF_RANGE),
    (lambda r: r.flares_read(BLOCK, 32, seed=1), Err.OUT_OF_RANGE),
    (lambda r: r.call(Opcode.FLARES_CLOCK, b"\x00" * 4), Err.BAD_FRAME),
])
def test_bad_requests_are_refused(call, code):
    with open_rig() as rig:
        if code is None:
            call(rig)
            return
        with pytest.raises(RigError) as e:
            call(rig)
        assert e.value.code == code


def test_table_full_is_refused_and_loses_nothing(monkeypatch):
    monkeypatch.setattr(rig_flares, "PROFILE_SLOTS", 3)
    with open_rig() as rig:
        rig.erase(BLOCK)
        ts = [rig.flares_program(BLOCK, p, seed=1, pe=50).step.t for p in range(3)]
        with pytest.raises(RigError) as e:
            rig.flares_program(BLOCK, 3, seed=1, pe=50)
        assert e.value.code == Err.NO_SPACE
        with pytest.raises(RigError):
            rig.flares_read(BLOCK, 3, seed=1)
        assert [rig.flares_read(BLOCK, p, seed=1).step.t for p in range(3)] == ts


def test_a_rig_without_a_decoder_refuses_flares():
    with open_rig() as rig:
        rig._info = None
        rig.t.rig.t_max = 0  # as a SoC without the engine reports
        rig.t.rig.flares = rig_flares.RigFlares(0)
        assert not rig.hello().capabilities & Cap.FLARES
        with pytest.raises(RigError) as e:
            rig.flares_read(BLOCK, 0, seed=1)
        assert e.value.code == Err.UNSUPPORTED


def test_profile_table_in_c_finds_adds_and_fills(tmp_path):
    lib = tmp_path / "libprofiles.so"
    subprocess.run(["gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", f"-I{ROOT / 'firmware/flares'}",
                    f"-I{ROOT / 'firmware/flares/tables'}", "-o", str(lib), str(ROOT / "firmware/rig/profiles.c")], check=True)
    so = ctypes.CDLL(str(lib))
    so.profiles_find.restype = so.profiles_add.restype = ctypes.c_void_p
    so.profiles_find.argtypes = so.profiles_add.argtypes = [ctypes.c_uint32, ctypes.c_uint32]
    so.profiles_clear()
    keys = [(b, p) for b in range(8) for p in range(128)]  # 1024: the table's size, neighbours collide
    slots = [so.profiles_add(b, p) for b, p in keys]
    assert all(slots) and len(set(slots)) == len(keys) == rig_flares.PROFILE_SLOTS
    assert so.profiles_add(9, 0) is None and so.profiles_used() == len(keys)
    assert [so.profiles_find(b, p) for b, p in keys] == slots
    assert so.profiles_find(9, 0) is None
    so.profiles_clear()
    assert so.profiles_find(0, 0) is None and so.profiles_used() == 0


def _per_page_type_tables():
    """Rig-sized tables from the demo's two models: upper pages far worse than lower (as on the virtual chip)."""
    return [TableRecipe(params=load_params("mlc-3x-demo", t)).fixed() for t in ("lower", "upper")]


def test_tables_sent_at_run_time_decide_per_page_type_and_are_refused_whole():
    fts = _per_page_type_tables()
    sent = blobs.encode(fts)
    with open_rig() as rig:
        cfg = FlaresConfig(wsize=2, mix_pm=500)
        assert rig.flares_config(cfg).tables.source == TablesSource.BUILTIN
        got = rig.flares_tables(sent)
        assert (got.source, got.crc, got.models) == (TablesSource.LOADED, sent.crc, 2)
        assert rig.flares_config(cfg).tables == FlaresRigTables(TablesSource.LOADED, sent.crc)
        ref = Flares(fts[0], dataclasses.replace(cfg, t_cap=rig.flares_config(cfg).t_cap), upper=fts[1])
        rig.cycle(BLOCK, 1, 3000, seed=3)
        rig.erase(BLOCK)
        for page, upper in ((0, False), (1, False), (2, True)):  # page 2: wordline 0's upper page
            step = rig.flares_program(BLOCK, page, seed=1, pe=3001, upper=upper).step
            assert step.t == ref.cold_start(3001, int(upper))
        assert rig.flares_read(BLOCK, 2, seed=1, upper=True).step.t > rig.flares_read(BLOCK, 1, seed=1).step.t

        bad = [blobs.TablesBlob(sent.data[:-1] + bytes([sent.data[-1] ^ 1])),  # a flipped bit: the CRC names it
               blobs.encode([dataclasses.replace(rig_flares.RIG_TABLES, t_max=70).fixed()])]  # beyond the engine
        crc_of = lambda b: blobs.TablesBlob(b.data).crc
        with pytest.raises(RigError) as e:  # a corrupted copy, sent as the host would
            for k in range(0, len(bad[0].data), 8192):
                rig.call(Opcode.FLARES_TABLES, P.FLARES_TABLES_REQ.pack(
                    k, len(sent.data), sent.crc, P.FlaresTablesFlag.COMMIT if k + 8192 >= len(sent.data) else 0)
                    + bad[0].data[k:k + 8192])
        assert e.value.code == Err.BAD_PARAMETER
        with pytest.raises(NandrigError, match=r"t range 1\.\.70 do not fit the rig's engine \(t range 1\.\.64\)"):
            rig.flares_tables(bad[1])
        with pytest.raises(RigError) as e:  # the same, past the host's check
            rig.call(Opcode.FLARES_TABLES, P.FLARES_TABLES_REQ.pack(0, len(bad[1].data), crc_of(bad[1]),
                                                                    P.FlaresTablesFlag.COMMIT) + bad[1].data)
        assert e.value.code == Err.BAD_PARAMETER
        assert rig.flares_config(cfg).tables.crc == sent.crc  # nothing half loaded: the old tables stay
        assert rig.flares_tables(None).source == TablesSource.BUILTIN


def test_a_rig_that_restarted_says_its_tables_are_gone(tmp_path):
    state = tmp_path / "rig.state"
    sent = blobs.encode(_per_page_type_tables())
    with open_rig(state_path=state) as rig:
        rig.flares_tables(sent)
    with open_rig(state_path=state) as rig:  # the same rig, still up: its RAM kept them
        assert rig.flares_config(FlaresConfig()).tables.crc == sent.crc
    with open_rig(state_path=state, volatile=True) as rig:  # powered up again
        assert rig.flares_config(FlaresConfig()).tables.source == TablesSource.BUILTIN
