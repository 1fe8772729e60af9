import struct

import bchlib
import numpy as np
import pytest

from nandrig.boards.sim import ecc_layout as ecc
from nandrig.virtual_chip.chip import VirtualChip, page_map, page_of
from nandrig.chip.pattern import page_seed, prbs31_bytes
from nandrig.boards.sim.server import VirtualRig
from nandrig import protocol as P
from nandrig.errors import NandrigError
from nandrig.protocol import Err, Opcode
from nandrig.host.link.rig import Rig, RigError
from nandrig.host.link.transport import InProcessTransport


def make(profile="mlc-small", seed=1, **kw):
    vr = VirtualRig(VirtualChip(profile, seed), **kw)
    return vr, Rig(InProcessTransport(vr))


def raw_call(vr, op, payload=b"", seq=1):
    return vr.handle(P.request(op, seq, payload))


def test_hello_info_and_identity():
    vr, rig = make()
    assert rig.hello_info.kind == P.RigKind.VIRTUAL and rig.hello_info.version == P.VERSION
    info = rig.info()
    assert (info.page_bytes, info.spare_bytes, info.pages_per_block, info.blocks) == (2048, 64, 32, 16)
    assert rig.read_id(0x20) == b"ONFI" and rig.read_id(0)[0] == 0x4E
    assert len(rig.read_param_page()) == P.Limit.PARAM_PAGE_REPLY_BYTES


def test_version_mismatch():
    vr, _ = make()
    rep = raw_call(vr, Opcode.HELLO, struct.pack("<HHI", 9, 0, 0))
    assert rep.status == Err.VERSION_MISMATCH
    assert struct.unpack_from("<HH", rep.payload) == P.VERSION


def test_erase_program_read_round_trip_counts_errors_per_codeword():
    vr, rig = make()
    assert not rig.erase(2).fail
    assert not rig.program(2, 0, seed=99).fail
    r = rig.read(2, 0, seed=99, raw=True)
    assert len(r.codewords) == 2  # one 2048-byte data codeword + spare
    want = prbs31_bytes(page_seed(99, 2, 0), 2112)
    got_errors = int(np.sum(np.unpackbits(np.frombuffer(want, np.uint8)) != np.unpackbits(np.frombuffer(r.data, np.uint8))))
    assert r.errors == got_errors
    explicit = bytes(range(256)) * 8
    rig.program(2, 1, data=explicit)
    assert rig.read(2, 1, raw=True).data[:2048] == explicit


def flip(buf: bytearray, positions) -> None:
    for b in positions:
        buf[b // 8] ^= 0x80 >> (b % 8)


def test_ecc_layout_program_encodes_and_read_decodes_with_lib_bch():
    vr, rig = make()
    assert rig.info().t_max == 26  # 14 + ceil(15 t / 8) <= 64 spare bytes: one 2048-byte codeword over GF(2^15)
    rig.erase(2)
    rng = np.random.default_rng(3)
    data = rng.integers(0, 256, 2048, dtype=np.uint8).tobytes()
    good = ecc.encode_page(data + b"\xff" * 64, 2048, 6)
    assert good[2048:2062] == b"\xff" * 14  # bad-block mark and the empty page-profile slot
    assert good[2062:2062 + 12] == bytes(bchlib.BCH(6, prim_poly=0x8003).encode(data))
    bad = bytearray(good)
    flip(bad, [5, 900, 4000, 16000, 2062 * 8 + 3, 2062 * 8 + 77])  # 4 in data, 2 in its parity
    rig.program(2, 0, data=bytes(bad))  # t = 0: the page as given
    r = rig.read(2, 0, t=6, raw=True)
    assert [c.corrected for c in r.codewords] == [6, 0] and r.data[:2048] == data
    flip(bad, [(1024 + k * 97) * 8 for k in range(3)])  # 9 errors: beyond t
    rig.program(2, 1, data=bytes(bad))
    r = rig.read(2, 1, t=6, raw=True)
    assert [c.corrected for c in r.codewords] == [-1, 0] and r.data[:2048] == bytes(bad[:2048])  # stays as read
    # PROGRAM at t writes the layout itself; a compared READ counts the ECC area out of the spare entry
    rig.program(2, 2, seed=99, t=6)
    r = rig.read(2, 2, seed=99, t=6, raw=True)
    want = ecc.encode_page(prbs31_bytes(page_seed(99, 2, 2), 2112), 2048, 6)
    assert r.data[2048:] == want[2048:] and all(c.errors == c.corrected == 0 for c in r.codewords)
    erased = rig.read(2, 5, t=6, raw=True)
    assert [c.corrected for c in erased.codewords] == [0, 0] and erased.data == b"\xff" * 2112
    with pytest.raises(RigError, match="BAD_PARAMETER"):
        rig.read(2, 2, t=27)


def test_factory_bad_blocks_refused_unless_forced():
    vr, rig = make(seed=3)
    bad = rig.scan_bad()
    assert bad == sorted(vr.chip.factory_bad) and bad
    b = bad[0]
    for call in (lambda: rig.erase(b), lambda: rig.program(b, 1, seed=1), lambda: rig.cycle(b, 1, 5, seed=1)):
        with pytest.raises(RigError, match="BAD_BLOCK"):
            call()
    assert vr.chip.pe_count(b) == 0
    rig.erase(b, force=True)
    assert vr.chip.pe_count(b) == 1


def test_chip_fail_is_reported_not_hidden():
    vr, rig = make()
    rig.erase(4)
    r = rig.program(4, 2, seed=1)  # an upper page before its lower page: the chip says FAIL
    assert r.fail


@pytest.mark.parametrize("op,payload,code", [
    (Opcode.ERASE, struct.pack("<IB", 16, 0), Err.OUT_OF_RANGE),
    (Opcode.ERASE, struct.pack("<IB", 1, 0x80), Err.BAD_PARAMETER),
    (Opcode.ERASE, b"\x01", Err.BAD_FRAME),
    (Opcode.PROGRAM, P.PROGRAM_HEAD.pack(1, 32, 0, 0) + b"\0\0\0\0", Err.OUT_OF_RANGE),
    (Opcode.PROGRAM, P.PROGRAM_HEAD.pack(1, 0, 200, 0) + b"\0\0\0\0", Err.BAD_PARAMETER),
    (Opcode.PROGRAM, P.PROGRAM_HEAD.pack(1, 0, 0, 2) + bytes(5000), Err.BAD_FRAME),
    (Opcode.READ, struct.pack("<IHBBI", 1, 99, 0, 0, 0), Err.OUT_OF_RANGE),
    (Opcode.CYCLE, struct.pack("<IHIIB", 15, 2, 1, 0, 0), Err.OUT_OF_RANGE),
    (Opcode.MEASURE, P.MEASURE_REQ.pack(0, 1, 30, 5, 0, 0), Err.OUT_OF_RANGE),
    (Opcode.MEASURE, P.MEASURE_REQ.pack(0, 1, 0, 5, 0, 0x02), Err.BAD_PARAMETER),
    (Opcode.MEASURE, P.MEASURE_REQ.pack(0, 1, 0, 5, 0, 0)[:-1], Err.BAD_FRAME),
    (Opcode.SCAN_BAD, struct.pack("<IH", 0, 0), Err.OUT_OF_RANGE),
    (Opcode.ADVANCE, struct.pack("<Qh", 1, 32000), Err.BAD_PARAMETER),
    (0x7E, b"", Err.UNKNOWN_COMMAND),
])
def test_bad_requests_get_error_codes(op, payload, code):
    vr, _ = make()
    rep = raw_call(vr, op, payload, seq=77)
    assert rep.status == code and rep.payload == b""


def test_retry_with_same_seq_is_answered_from_cache_not_executed_again():
    vr, rig = make()
    pe0 = vr.chip.pe_count(5)
    req = P.request(Opcode.CYCLE, 500, struct.pack("<IHIIB", 5, 1, 10, 1, 0))
    first = vr.handle(req)
    again = vr.handle(req)
    assert first == again and vr.chip.pe_count(5) == pe0 + 10
    # a new session with the same seq and bytes is a new command
    vr.handle(P.request(Opcode.HELLO, 501, P.HELLO_REQ.pack(*P.VERSION, 0xABC, P.HelloFlag.TAKE_OVER)))
    vr.handle(req)
    assert vr.chip.pe_count(5) == pe0 + 20


def test_cycle_measure_and_virtual_time():
    vr, rig = make(seed=2)
    res = rig.cycle(0, 4, 300, seed=7)
    assert set(res.done.values()) == {300} and not any(res.failed.values())
    assert [vr.chip.pe_count(b) for b in range(4)] == [300] * 4
    m = rig.measure(0, 4, seed=7)  # by cache read: only each block's first page's tR shows
    assert m.errors.shape == (4, 32) and np.all(m.busy_ns[:, 0] > 30_000) and np.isnan(m.busy_ns[:, 1:]).all()
    timed = rig.measure(0, 4, seed=7, timed=True)
    assert np.all(timed.busy_ns > 30_000) and timed.busy_ns[:, 0] == pytest.approx(m.busy_ns[:, 0], rel=0.05)
    t0 = rig.time_ns()
    assert rig.advance(hours=24) == t0 + 24 * 3_600_000_000_000
    assert rig.read_disturb(1, 3, 1000) == (1000, pytest.approx(37_500, rel=0.1))  # page 3: a lower page


def test_exact_mode_measures_byte_by_byte():
    vr, rig = make(seed=4, exact=True)
    rig.cycle(6, 1, 3, seed=9)
    assert vr.chip.pe_count(6) == 3
    m = rig.measure(6, 1, seed=9)
    total = 0
    for p in range(32):
        total += rig.read(6, p, seed=9).errors
    assert abs(int(m.errors.sum()) - total) <= 5  # re-reading draws new read noise only


def test_state_file_persists_chip_and_reply_cache(tmp_path):
    state = tmp_path / "rig.state"
    with Rig.open("sim", chip="mlc-small", seed=8, state=str(state)) as rig:
        rig.cycle(2, 1, 50, seed=1)
        session, seq = rig.session, rig.last_seq
    with Rig.open("sim", chip="mlc-small", seed=8, state=str(state), session=session) as again:
        assert again.info().blocks == 16
        f = again.call(Opcode.CYCLE, struct.pack("<IHIIB", 2, 1, 50, 1, 0), seq=seq)  # the resent request
        assert struct.unpack_from("<I", f.payload)[0] == 50
    with Rig.open("sim", chip="mlc-small", seed=8, state=str(state)) as third:
        assert third.cycle(2, 1, 1, seed=1).done[2] == 1
    from nandrig.boards.sim.state_file import load_state
    assert VirtualChip.from_state(load_state(state)["chip"]).pe_count(2) == 51
    with pytest.raises(Exception, match="holds chip"):
        Rig.open("sim", chip="mlc-small", seed=9, state=str(state))


def test_a_cycles_time_reaches_the_clock_after_the_rig_is_opened_again(tmp_path):
    """A CYCLE's time is placed on the bus at the rig's next command. An in-process rig goes with its host: one
    killed between the two must leave that time in the state, so the clock a resumed campaign reads is the one an
    uninterrupted run reads (the last CI's flares-validate kill test found it lost)."""
    clocks = []
    for reopen in (False, True):
        state = tmp_path / f"{reopen}.state"
        with Rig.open("sim", chip="mlc-small", seed=8, state=str(state)) as rig:
            rig.cycle(2, 1, 40, seed=1)
            if not reopen:
                clocks.append(rig.advance(hours=0.0))
        if reopen:
            with Rig.open("sim", chip="mlc-small", seed=8, state=str(state)) as again:
                clocks.append(again.advance(hours=0.0))
    assert clocks[0] == clocks[1] and clocks[0] > 40 * 1e6  # forty erase + program rounds: well over 40 ms


class _Planted:
    def __reduce__(self):  # what a hostile pickle does on load: call something it names
        import os
        return (os.system, ("touch planted",))


def test_a_state_file_is_data_that_cannot_run_code(tmp_path, monkeypatch, run_cli):
    import pickle

    from nandrig.boards.sim.state_file import MAGIC, load_state, save_state

    monkeypatch.chdir(tmp_path)
    state = tmp_path / "rig.state"
    with Rig.open("sim", chip="mlc-small", seed=8, state=str(state)) as rig:
        rig.cycle(2, 1, 5, seed=1)
        rig.program(3, 0, seed=2)
    vr = VirtualRig.open("mlc-small", 8, state)
    assert vr.chip.state() == VirtualChip.from_state(load_state(state)["chip"]).state()  # records come back whole
    assert vr.chip.pe_count(2) == 5 and 2 in vr.bad and len(vr.cache) == 1
    evil = tmp_path / "evil.state"
    evil.write_bytes(pickle.dumps({"chip": _Planted()}))
    run_cli("rig", "info", "--rig", "sim", "--chip", "mlc-small", "--state", evil).assert_one_line_error("pickle")
    import zlib
    evil.write_bytes(MAGIC + zlib.compress(b'{"chip": {"$record": "Popen", "args": ["touch", "planted"]}}'))
    run_cli("rig", "info", "--rig", "sim", "--chip", "mlc-small", "--state", evil).assert_one_line_error("Popen")
    assert not (tmp_path / "planted").exists()
    with pytest.raises(TypeError, match="cannot hold"):
        save_state(tmp_path / "x", {"f": _Planted()})


def test_state_file_rewrites_only_changed_parts_and_reads_every_format(tmp_path, run_cli):
    import json
    import zlib

    from nandrig.boards.sim.server import STATE_APART
    from nandrig.boards.sim.state_file import MAGIC, MAGIC_PARTS, encode, load_state, save_state

    state = tmp_path / "rig.state"
    with Rig.open("sim", chip="mlc-small", seed=8, state=str(state)) as rig:
        rig.cycle(2, 2, 5, seed=1)
        rig.program(4, 0, seed=2)
        rig.read(4, 0, raw=True)
        rig.read_disturb(4, 0, 100)
        rig.measure(2, 2, seed=1)
        rig.erase(5)
    vr = VirtualRig.open("mlc-small", 8, state)
    live = {"chip": vr.chip.state(), "bad": vr.bad, "flares": vr.flares.state()}
    back = load_state(state)
    assert {k: back[k] for k in live} == live  # every block, written apart, comes back in its place
    assert sorted(back["chip"]["blocks"]) == sorted(vr.chip.blocks)

    parts: dict = {}
    st = {"chip": vr.chip.state(), "flares": vr.flares.state()}
    save_state(state, st, STATE_APART, parts)
    before = dict(parts)
    vr.chip.program(5, 0, seed=3)  # one block changes
    st = {"chip": vr.chip.state(), "flares": vr.flares.state()}
    save_state(state, st, STATE_APART, parts)
    changed = {k for k in parts if parts[k][1] is not before.get(k, (None, None))[1]}
    assert changed == {(), ("chip", "blocks", 5)}
    assert load_state(state)["chip"] == vr.chip.state()

    # files written before parts (one compressed JSON) still load; broken or hostile parts are refused
    old = tmp_path / "old.state"
    old.write_bytes(MAGIC + zlib.compress(json.dumps(encode(st)).encode()))
    assert load_state(old)["chip"] == vr.chip.state()
    cut = tmp_path / "cut.state"
    cut.write_bytes(state.read_bytes()[:-7])
    with pytest.raises(NandrigError, match="cannot load state .*truncated"):
        load_state(cut)
    evil = tmp_path / "evil.state"
    name, body = b"[]", zlib.compress(b'{"chip": {"$record": "Popen", "args": ["touch", "planted"]}}')
    evil.write_bytes(MAGIC_PARTS + len(name).to_bytes(2, "big") + len(body).to_bytes(4, "big") + name + body)
    run_cli("rig", "info", "--rig", "sim", "--chip", "mlc-small", "--state", evil).assert_one_line_error("Popen")


def test_one_host_session_holds_the_rig_others_look_or_take_over():
    from nandrig.host.link.rig import RigHeld

    vr = VirtualRig(VirtualChip("mlc-small", 1))
    a = Rig(InProcessTransport(vr))
    assert vr.holder == a.session
    with pytest.raises(RigHeld, match=f"{a.session:08x}"):
        Rig(InProcessTransport(vr))
    with Rig(InProcessTransport(vr), observe=True) as look:  # a look takes nothing and changes no session
        assert look.info().blocks == 16
    assert (vr.holder, vr.session) == (a.session, a.session)
    with Rig(InProcessTransport(vr), take_over=lambda holder: holder == a.session) as b:
        assert vr.holder == b.session
        with pytest.raises(RigHeld):
            a.hello()  # what a campaign does before each step: it learns it lost the rig
    assert vr.holder == 0  # closing released it
    with Rig(InProcessTransport(vr)) as c:
        assert vr.holder == c.session
    rep = raw_call(vr, Opcode.HELLO, P.HELLO_REQ.pack(*P.VERSION, 5, 0x80))
    assert rep.status == Err.BAD_PARAMETER


def test_cycle_with_a_page_set_programs_only_those_pages():
    vr, rig = make("mlc-3x", seed=2)
    g = vr.chip.geometry
    lower = [p for p in range(g.pages_per_block) if not page_map(p, g.pages_per_block)[1]]
    assert rig.cycle(10, 2, 600, seed=3, pages=lower).done == {10: 600, 11: 600}
    assert rig.cycle(12, 1, 3, seed=3, pages=[0, 1, 3]).done == {12: 3}  # a set the bulk path does not know
    for b, programmed in ((10, lower), (12, [0, 1, 3])):
        blk = vr.chip.blocks[b]
        assert blk.pe == (600 if b == 10 else 3)
        assert sorted(page_of(w, False, g.pages_per_block) for w, wl in blk.wls.items() if wl.lsb) == programmed
        assert not any(wl.msb for wl in blk.wls.values())  # no upper page: every cell at L0 or LM
    # a pSLC round ages the block by the chip's pslc_stress, not by a whole MLC cycle
    assert vr.chip.blocks[10].wear == pytest.approx(1 + 599 * vr.chip._physics(10).pslc_stress)
    errs = rig.measure(10, 1, seed=3).errors[0]
    assert all(errs[p] < 10 for p in lower)  # the lower pages hold the pattern
    upper = next(p for p in range(g.pages_per_block) if p not in lower)
    assert set(rig.read(10, upper, seed=3, raw=True).data) == {0xFF}  # an upper page holds nothing


@pytest.mark.parametrize("tail, status", [(b"", Err.BAD_FRAME), (b"\xff" * 3, Err.BAD_FRAME),
                                          (bytes(16), Err.BAD_PARAMETER)])
def test_a_malformed_page_set_is_refused_and_wears_nothing(tail, status):
    vr, rig = make("mlc-3x", seed=2)
    rep = raw_call(vr, Opcode.CYCLE, P.CYCLE_REQ.pack(10, 1, 5, 1, P.CycleFlag.PAGE_SET) + tail, seq=rig.next_seq())
    assert rep.status == status
    assert vr.chip.pe_count(10) == 0


def test_read_references_move_through_the_chips_table_or_are_refused_untouched():
    vr, rig = make("mlc-small")  # table nandrig-a0: one feature per reference, -100..100
    assert rig.set_read_refs(-7, 20, 100) == vr.chip.status
    assert vr.chip.read_offsets == (-7, 20, 100)
    assert [vr.chip.get_features(a)[0] for a in (0xA0, 0xA1, 0xA2)] == [0xF9, 20, 100]
    assert rig.set_read_offset(-3) is not None and vr.chip.read_offsets == (-3, -3, -3)
    before = dict(vr.chip.features)
    for call in (lambda: rig.set_read_refs(0, 101, 0), lambda: rig.set_read_offset(-101)):
        with pytest.raises(RigError, match="BAD_PARAMETER"):
            call()
    assert vr.chip.features == before
    vr, rig = make("mlc-samsung")  # no read-retry table: nothing is written to it
    before = dict(vr.chip.features)
    for call in (lambda: rig.set_read_refs(0, 0, 0), lambda: rig.set_read_offset(0)):
        with pytest.raises(RigError, match="UNSUPPORTED"):
            call()
    assert vr.chip.features == before


def test_energy_meter_integrates_busy_and_transfer_per_operation_and_zeroes():
    """The virtual chip's supply current per phase (its profile) over R/B# low, and the bus's over each byte's
    cycle at the mode the rig runs: exact sums, taken and zeroed by each ENERGY."""
    from nandrig.gateware.onfi.timing import mode_cycles

    vr, rig = make("mlc-3x")
    assert P.Cap.ENERGY in rig.hello_info.capabilities
    pw, g = vr.chip.profile.power, vr.chip.geometry
    rig.scan_bad(5, 1)  # the factory mark read once, before: an ERASE reads it first otherwise
    rig.energy()
    erase = rig.erase(5)
    e = rig.energy()
    assert e.busy_ns == erase.busy_ns and e.busy_pj == round(pw.icc_erase_ma * pw.vcc_v * erase.busy_ns)
    assert e.transfer_pj == 0 and rig.energy().busy_pj == 0  # zeroed by the take
    c = mode_cycles(vr.chip.get_features(0x01)[0] & 0x0F, vr.clk_hz)
    got = {}
    for page in (0, 1, 2):  # lower, lower, upper
        prog = rig.program(5, page, seed=3)
        e = rig.energy()
        assert e.busy_ns == prog.busy_ns
        assert e.transfer_ns == round(g.raw_page_bytes * (c.wp + c.wh) * 1e9 / vr.clk_hz)
        assert e.transfer_pj == round(pw.icc_io_ma * pw.vcc_v * e.transfer_ns)
        read = rig.read(5, page, seed=3)
        r = rig.energy()
        assert r.busy_ns == read.busy_ns and r.transfer_ns == round(g.raw_page_bytes * (c.rp + c.reh) * 1e9 / vr.clk_hz)
        got[page] = (e.busy_pj, r.busy_pj)
    assert 5 < got[2][0] / got[0][0] < 7 and 1.8 < got[2][1] / got[0][1] < 2.2  # slow page, two-reference read
    assert e.idle_uw == round(pw.icc_idle_ma * pw.vcc_v * 1000)
