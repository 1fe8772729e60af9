"""The RTL rig (SoC + firmware in Verilator, the virtual chip on its pins) against the virtual rig."""
import dataclasses
import json
import time

import numpy as np
import pytest

from nandrig.virtual_chip.chip import VirtualChip
from nandrig.boards.sim.rtl.build import clock_drift
from nandrig.boards.sim.rtl.run import HOST_TIMEOUT_S, RtlRig
from nandrig.boards.catalog import board_clocks
from nandrig import protocol as P
from nandrig.boards.sim.server import VirtualRig
from nandrig.boards.sim.wiring import Wiring
from nandrig.characterization.flares import FlaresConfig
from nandrig.errors import NandrigError
from nandrig.host.link.rig import Rig, RigError
from nandrig.host.link.transport import InProcessTransport
from nandrig.protocol import Err, Limit, Opcode
from tests.boards.short_busy import short_busy_chip

PROFILE, SEED = "mlc-small", 11


@pytest.fixture(scope="module")
def rtl():
    with RtlRig(VirtualChip(PROFILE, SEED)) as rig:
        yield rig


@pytest.mark.slow
def test_rig_info_reads_the_chip_identity_from_its_parameter_page(rtl, run_cli):
    got = run_cli("rig", "info", "--rig", rtl.url, "--json")
    assert got.code == 0, got.err
    want = run_cli("rig", "info", "--rig", "sim", "--chip", PROFILE, "--seed", SEED, "--json")
    g, w = json.loads(got.out), json.loads(want.out)
    assert g.pop("rig_kind") == "rtl" and w.pop("rig_kind") == "virtual"
    assert g.pop("rig").startswith("nandrig-rtl")
    w.pop("rig")
    assert g == w


@pytest.mark.slow
def test_erase_program_read_count_the_same_errors_as_the_virtual_rig(rtl):
    pages = range(4)
    results = {}
    with Rig.open(rtl.url) as r, Rig.open("sim", chip=PROFILE, seed=SEED, exact=True) as v:
        for name, rig in (("rtl", r), ("virtual", v)):
            t0 = time.monotonic()
            erase = rig.erase(3)
            progs = [rig.program(3, p, seed=77) for p in pages]
            reads = [rig.read(3, p, seed=77) for p in pages]
            results[name] = (erase.chip_status, [p.chip_status for p in progs],
                             [rd.codewords for rd in reads])
            results[name + "_busy"] = erase.busy_ns
            results[name + "_wall"] = time.monotonic() - t0
    assert results["rtl"] == results["virtual"]
    # the controller measures busy time from R/B#, within a cycle or two of the chip's own figure, and the
    # simulator runs the clock at whole picoseconds a period (43 ppm fast at 90.625 MHz)
    cycle_ns = 1e9 / rtl.clk_hz
    slack = 2 * cycle_ns + results["virtual_busy"] * abs(clock_drift(rtl.clk_hz))
    assert abs(results["rtl_busy"] - results["virtual_busy"]) <= slack


class _DamagedReplies:
    """A link that flips a bit in about one reply byte in 300 (requests go clean: a lost one costs a timeout), and
    counts the parts at offset 0 each reply's frames held before the damage."""

    def __init__(self, inner, seed: int = 5) -> None:
        import random

        self.inner, self.rng, self.description = inner, random.Random(seed), inner.description
        self.clean, self.from_start, self.flipped = P.Deframer(), {}, 0

    def write(self, data: bytes) -> None:
        self.inner.write(data)

    def read(self, timeout: float) -> bytes:
        data = bytearray(self.inner.read(timeout))
        for f in self.clean.feed(bytes(data)):
            if f.type == P.PART_TYPE and f.status == 0:
                self.from_start[f.seq] = self.from_start.get(f.seq, 0) + 1
        for i in range(len(data)):
            if self.rng.random() < 1 / 300:
                data[i] ^= 1 << self.rng.randrange(8)
                self.flipped += 1
        return bytes(data)

    def reopen(self) -> None:
        self.inner.reopen()

    def close(self) -> None:
        self.inner.close()


@pytest.fixture(scope="module")
def worn_rtl():
    """An RTL rig of its own for the tests that wear most of its chip's blocks, which the tests on ``rtl`` compare
    with a fresh virtual chip."""
    with RtlRig(VirtualChip(PROFILE, SEED)) as rig:
        yield rig


@pytest.mark.slow
def test_a_measure_whose_parts_arrive_damaged_measures_as_over_a_clean_link(worn_rtl):
    """Protocol 1.18 on the firmware: a MEASURE's reply goes in parts while it runs; a damaged part makes the host
    ask again at once, and the firmware sends its parts again from the start (still measuring, or from its reply
    cache once done) until the host holds them all."""
    from nandrig.host.link.transport import SerialTransport

    with Rig.open(worn_rtl.url, timeout=HOST_TIMEOUT_S) as rig:
        blocks = rig.info().blocks
        bad = set(rig.scan_bad(0, blocks))
        first = next(b for b in range(blocks - 3) if not bad & set(range(b, b + 4)))
        rig.cycle(first, 4, 1, 9)
        clean = rig.measure(first, 4, 10)  # 4 blocks of 32 pages, a 1 KiB reply; another pattern: counts in the 1000s
    link = _DamagedReplies(SerialTransport(worn_rtl.url))
    with Rig(link, timeout=HOST_TIMEOUT_S) as rig:
        noisy = rig.measure(first, 4, 10)
    assert link.flipped > 0 and max(link.from_start.values()) >= 2  # damaged, and sent again from the start
    # within the chip's read noise (a bit or two a page between reads) of the clean run
    assert np.abs(noisy.errors - clean.errors).max() <= 3 and noisy.errors.min() > 1000


@pytest.mark.slow
def test_an_abort_ends_a_measure_in_parts_with_the_blocks_it_measured(worn_rtl):
    """ABORT while the firmware sends a MEASURE in parts: STATUS and ABORT are answered between two parts, and the
    end frame says ABORTED and completes the payload with whole blocks, as measured over a clean run."""
    import socket
    from urllib.parse import urlparse

    with Rig.open(worn_rtl.url, timeout=HOST_TIMEOUT_S) as rig:
        info = rig.info()
        blocks, pages = info.blocks, info.pages_per_block
        good = [b for b in range(12) if b not in set(rig.scan_bad(0, blocks))]
        for b in good:  # a factory bad block is only read
            rig.cycle(b, 1, 1, 21)
        clean = rig.measure(0, 12, 22)  # against another pattern: counts in the 1000s
    url = urlparse(worn_rtl.url)
    d, frames = P.Deframer(), []
    with socket.create_connection((url.hostname, url.port)) as s:
        s.settimeout(0.2)

        def until(pred, timeout=120.0):
            end = time.monotonic() + timeout
            while time.monotonic() < end and not (hit := next((f for f in frames if pred(f)), None)):
                try:
                    frames.extend(d.feed(s.recv(65536)))
                except socket.timeout:
                    pass
            assert hit is not None, [(chr(f.type), f.op, f.seq, f.status) for f in frames]
            return hit

        s.sendall(P.request(Opcode.HELLO, 1, P.HELLO_REQ.pack(*P.VERSION, 0x5EED, 0)).encode())
        assert until(lambda f: f.seq == 1).status == Err.OK
        s.sendall(P.request(Opcode.MEASURE, 2, P.MEASURE_REQ.pack(0, 12, 0, pages, 22, 0)).encode())
        until(lambda f: f.seq == 2 and f.type == P.PART_TYPE)
        s.sendall(P.request(Opcode.STATUS, 3).encode() + P.request(Opcode.ABORT, 4).encode())
        status = P.STATUS_REPLY.unpack(until(lambda f: f.seq == 3).payload)
        assert until(lambda f: f.seq == 4).payload == b"\x01" and status.opcode == Opcode.MEASURE
        until(lambda f: f.seq == 2 and f.type == P.END_TYPE)
        s.sendall(P.request(Opcode.HELLO, 5, P.HELLO_REQ.pack(*P.VERSION, 0x5EED, P.HelloFlag.RELEASE)).encode())
        until(lambda f: f.seq == 5)
    assembly = P.ReplyAssembly(Opcode.MEASURE, 2)
    rep = [r for f in frames if (r := assembly.take(f)) is not None][0]
    per_block = pages * P.MEASURE_PAGE.size
    got = len(rep.payload) // per_block
    assert rep.status == Err.ABORTED and len(rep.payload) % per_block == 0 and 0 < got < 12
    counts = np.array([c.err_1to0 + c.err_0to1 for c in (P.MEASURE_PAGE.unpack(rep.payload, i * P.MEASURE_PAGE.size)
                                                          for i in range(got * pages))]).reshape(got, pages)
    measured = [b for b in good if b < got]
    # the chip's read noise moves a count by a bit or two between reads; a record out of place would move it by
    # about the spread between pages (about 90 bits at these counts)
    assert np.abs(counts[measured] - clean.errors[measured]).max() <= 3 and counts[measured].min() > 1000


@pytest.mark.slow
def test_a_request_to_a_target_without_a_chip_is_refused_alike_on_both_rigs(rtl):
    """This firmware drives one target (protocol 1.13): INFO lists it; a chip request to any other is
    OUT_OF_RANGE and touches nothing; the host names the targets that hold a chip."""
    for url, kw in ((rtl.url, {}), ("sim", {"chip": PROFILE, "seed": SEED, "exact": True})):
        with Rig.open(url, **kw) as rig:
            assert (rig.info().target, rig.info().targets) == (0, (0,))
            before = rig.read(7, 0, raw=True).data
            rig.target = 1
            with pytest.raises(RigError) as e:
                rig.erase(7)
            assert e.value.code == Err.OUT_OF_RANGE
            rig.target = 0
            assert rig.read(7, 0, raw=True).data == before
        with Rig.open(url, target=5, **kw) as rig, \
                pytest.raises(NandrigError, match=r"no chip on target 5 \(targets with a chip: 0\)"):
            rig.info()


@pytest.mark.slow
def test_chips_on_several_targets_answer_as_on_the_virtual_rig():
    """Chips in sockets 0, 2 and 5 of one bus (socket 5 another part, of two LUNs, socket 2 a longer trace): the firmware finds
    them at start-up, each target identified and calibrated on its own (socket 2's capture trim is its own), and
    each target's INFO, CYCLE, MEASURE and READ replies equal the virtual rig's over the same chips on the same
    targets; a cycle's wear lands on the addressed chip alone; an empty socket is refused in one line, and so is
    FLARES beside target 0 (this firmware keeps FLARES' state for one chip)."""
    def chips():
        return short_busy_chip(PROFILE, SEED), {2: short_busy_chip(PROFILE, SEED + 1),
                                                5: short_busy_chip("mlc-small-2lun", SEED + 2)}

    long_trace = {2: Wiring(delay_ns=15.0)}
    results, wear = {}, {}
    c0, others = chips()
    with RtlRig(c0, others=others, socket_wiring=long_trace) as sim:
        with Rig.open(sim.url, timeout=HOST_TIMEOUT_S) as r:
            v0, v_others = chips()
            v = Rig(InProcessTransport(VirtualRig(v0, exact=True, others=v_others, socket_wiring=long_trace,
                                                  bch_t_max=0)))  # the default build: no BCH engine
            for name, rig in (("rtl", r), ("virtual", v)):
                out = {}
                for t in (0, 2, 5):
                    rig.target = t
                    info = rig.info()
                    bad = set(rig.scan_bad(0, 16))
                    block = next(b for b in range(1, 16) if b not in bad)
                    cyc = rig.cycle(block, 1, 2, 40 + t)
                    meas = rig.measure(block, 1, 40 + t)
                    out[t] = (dataclasses.replace(info, capabilities=0), block, cyc.done, cyc.failed,
                              meas.errors.tolist(), rig.read(block, 1, seed=40 + t).codewords)
                results[name] = out
            r.target = 2
            with pytest.raises(RigError) as e:
                r.flares_config(FlaresConfig())
        wear = {k: c.pe_count(results["rtl"][k][1]) for k, c in sim.sockets.items()}
        with Rig.open(sim.url, target=4) as empty, \
                pytest.raises(NandrigError, match=r"no chip on target 4 \(targets with a chip: 0, 2, 5\)"):
            empty.info()
    assert e.value.code == Err.UNSUPPORTED
    for t in (0, 2, 5):
        for k, (a, b) in enumerate(zip(results["rtl"][t], results["virtual"][t])):
            assert a == b, (t, k, a, b)
    infos = {t: results["rtl"][t][0] for t in (0, 2, 5)}
    assert {t: i.targets for t, i in infos.items()} == {t: (0, 2, 5) for t in (0, 2, 5)}
    assert (infos[5].luns, infos[0].luns) == (2, 1) and infos[2].unique_id != infos[0].unique_id
    assert infos[2].rd_trim != infos[0].rd_trim  # the longer trace: its own capture point
    assert wear == {0: 2, 2: 2, 5: 2}


@pytest.mark.slow
def test_read_references_move_the_same_on_both_rigs(rtl):
    """SET_READ_REFS through the generated read-retry table: the same feature writes reach the chip behind the pins,
    the same reads come back, and out-of-range offsets are refused before the chip is touched."""
    results = {}
    with Rig.open(rtl.url) as r, Rig.open("sim", chip=PROFILE, seed=SEED, exact=True) as v:
        for name, rig in (("rtl", r), ("virtual", v)):
            rig.erase(6)
            for p in range(4):
                rig.program(6, p, seed=9)
            reads = []
            for refs in ((0, 0, 0), (60, -80, 90), (-100, 100, -100)):
                rig.set_read_refs(*refs)
                reads.append([rig.read(6, p, seed=9).codewords for p in range(4)])
            with pytest.raises(RigError, match="BAD_PARAMETER"):
                rig.set_read_refs(0, -101, 0)
            results[name] = reads
    assert rtl.chip.read_offsets == (-100, 100, -100)  # the refused request wrote nothing
    assert results["rtl"] == results["virtual"]
    assert results["rtl"][1] != results["rtl"][0] != results["rtl"][2]


@pytest.mark.slow
def test_energy_per_operation_is_the_virtual_rigs_to_a_sample_at_each_end(rtl):
    """The supply meter in the SoC samples the ADC modelled at the pins (the chip's current from its profile);
    each operation's busy and transfer energy and time match what the virtual rig integrates exactly, to the
    ADC's sample period at each end of each window; its idle power is the chip's idle current to a code and to
    what a sample at each end of a busy or a transfer window, counted idle, adds over the idle time (by the rig's
    clock: CI measured +92 uW over ~140 idle samples, one bus sample's 4 mA over idle, and +420 uW after an
    erase over 130, one sample of the erase's 22 mA counted idle)."""
    from nandrig.chip.supply import FRONT_END

    results = {}
    with Rig.open(rtl.url) as r, Rig.open("sim", chip=PROFILE, seed=SEED, exact=True) as v:
        for name, rig in (("rtl", r), ("virtual", v)):
            assert P.Cap.ENERGY in rig.hello_info.capabilities
            rig.scan_bad(8, 1)  # the factory mark read before, not inside the erase
            rig.energy()
            since = rig.time_ns()

            def taken(op: str, busy_ns: int) -> tuple:
                nonlocal since
                e, now = rig.energy(), rig.time_ns()
                window, since = now - since, now
                return op, busy_ns, e, window

            rows = [taken("erase", rig.erase(8).busy_ns)]
            rows += [taken(f"program {p}", rig.program(8, p, seed=4).busy_ns) for p in range(3)]
            rows += [taken(f"read {p}", rig.read(8, p, seed=4).busy_ns) for p in range(3)]
            results[name] = rows
    pw = rtl.chip.profile.power
    step = FRONT_END.sample_ns
    for (op, busy, got, window), (_, _, want, _) in zip(results["rtl"], results["virtual"]):
        assert abs(got.busy_ns - busy) <= 2 * step, (op, got, busy)
        assert abs(got.busy_pj - want.busy_pj) <= 2 * step * pw.busy_ma("program") * pw.vcc_v + 0.001 * want.busy_pj, \
            (op, got, want)
        assert abs(got.transfer_ns - want.transfer_ns) <= 2 * step, (op, got, want)
        assert abs(got.transfer_pj - want.transfer_pj) <= 2 * step * pw.icc_io_ma * pw.vcc_v + 0.001 * want.transfer_pj, \
            (op, got, want)
        idle_ns = window - got.busy_ns - got.transfer_ns  # the window: from one TIME after a take to the next
        # a sample at each end of the busy and the transfer window can fall between the chip's current changing
        # and the meter seeing it (R/B# through its synchronizer): counted idle at the busy or the bus current
        edge_pj = 2 * step * (pw.busy_ma(op.split()[0]) + pw.icc_io_ma - 2 * pw.icc_idle_ma) * pw.vcc_v
        edges_uw = edge_pj * 1e3 / idle_ns
        assert abs(got.idle_uw - want.idle_uw) <= FRONT_END.na_per_code * pw.vcc_v / 1e3 + edges_uw + 1, \
            (op, got, want, idle_ns)


@pytest.mark.parametrize("board", [None, "ulx3s"], ids=["default", "ulx3s"])
@pytest.mark.slow
def test_bench_rig_measures_a_block_cycle_against_its_floor(board):
    """Both builds: rig time (the firmware's system-clock timer) and the chip's busy times (PHY cycles) in ns."""
    from nandrig.boards.sim.rtl.bench import bench_rig

    j = bench_rig(PROFILE, SEED, repeats=1, board=board)
    clocks = board_clocks(board)
    assert (j["sys_clk_mhz"], j["nand_clk_mhz"]) == (clocks.sys_hz / 1e6, clocks.phy_hz / 1e6)
    run = j["runs"][0]
    assert run["data_in_bytes"] == run["data_out_bytes"] == 32 * 2112  # every page programmed and read in full
    assert run["array_ns"] > 0 and j["overhead_ratio"] < 2.0
    assert j["overhead_ratio_without_host"] < j["overhead_ratio"]
    # the firmware programs with cache program (the last page with 10h): R/B# is high while pages come in and the
    # array programs; the plain floor need not hold then, the cache floor (below it) does
    assert run["cache_programs"] == 31 and run["rb_low_ns"] < run["array_ns"]
    assert run["cache_floor_ns"] < run["floor_ns"] and 1.0 < j["cache_ratio"] < j["overhead_ratio"] * 1.25
    assert 0 < j["firmware"]["code_bytes"] < 64 * 1024


# round-trip board delays (ns) the RTL rig is wired with, by the PHY's clock and its capture steps, with the input
# gearing's latency in steps where it is not the nominal: without gearing inside the design range (0-8 ns), where
# trim 0 already reads, and beyond it, where only the start-up calibration finds the capture point; with it, the
# round trips the sweep must reach (0-20 ns) at either latency of the IDDRX2F; then one no trim reaches (the trim's
# 16 steps are whole PHY cycles of the default build, or 2.76 ns with the board's input gearing)
CAPTURE_WIRING = {None: ((0, None), (8, None), (20, None), (40, None), (75, None)),
                  "ulx3s": ((0, None), (8, None), (15, None), (20, None), (20, 9), (0, 9))}
NO_WINDOW_DELAY = {None: 100, "ulx3s": 40}


@pytest.mark.parametrize("board", [None, "ulx3s"], ids=["default", "ulx3s"])
@pytest.mark.slow
def test_start_up_calibration_finds_the_capture_point_the_data_valid_window_allows(board):
    """The nandbridge drives DQ only inside the chip's data-valid window, moved by the board's delay; the
    firmware's sweep finds the same passing trims the virtual rig computes from the timing model, settles on
    their centre, runs the fastest mode, and reads a programmed page without an error."""
    from nandrig.boards.sim.server import VirtualRig
    from nandrig.boards.sim.wiring import Wiring
    from nandrig.host.link.transport import InProcessTransport
    from nandrig.protocol import Capture

    from nandrig.gateware.onfi.timing import data_window_ps, mode_cycles

    clocks = board_clocks(board)
    phy_hz = clocks.phy_hz
    for delay, latency in CAPTURE_WIRING[board]:
        wiring = Wiring(delay_ns=delay, latency_steps=latency)
        sim = RtlRig(VirtualChip(PROFILE, SEED), board=board, wiring=wiring)
        with sim, Rig.open(sim.url, timeout=HOST_TIMEOUT_S) as r:
            got = r.info()
            r.erase(3)
            r.program(3, 0, seed=5)
            errors = sum(c.errors for c in r.read(3, 0, seed=5).codewords)
        want = Rig(InProcessTransport(VirtualRig(VirtualChip(PROFILE, SEED), clk_hz=sim.clk_hz, wiring=wiring,
                                                 capture_steps=clocks.capture_steps))).info()
        assert got.capture == Capture.CALIBRATED and got.timing_mode == 5, delay
        assert (got.rd_trim, got.passing_trims) == (want.rd_trim, want.passing_trims), delay
        assert errors == 0, delay
        # the chosen trim's setup and hold in the chip's window (mode 5), and what the sweep's edges show of them
        first, last = data_window_ps(5, phy_hz, delay, steps=clocks.capture_steps, latency_steps=latency)
        point = (mode_cycles(5, phy_hz, steps=clocks.capture_steps).sample + got.rd_trim) * got.capture_step_ps
        shown = got.capture_margins_ps
        assert shown is not None and shown[0] <= point - first and shown[1] <= last - point, (delay, latency)
        assert min(point - first, last - point) >= 1000 * (clocks.capture_steps > 1), (delay, latency)
        if delay > 8 + 1e9 / phy_hz:  # beyond the design range (0-8 ns) by more than a PHY cycle
            assert 0 not in got.passing_trims, delay  # trim 0 would read garbage: the sweep is what reads the chip
    sim = RtlRig(VirtualChip(PROFILE, SEED), board=board, wiring=Wiring(delay_ns=NO_WINDOW_DELAY[board]))
    with sim, Rig.open(sim.url, timeout=HOST_TIMEOUT_S) as r:
        got = r.info()
    assert (got.capture, got.timing_mode, got.trim_pass, got.blocks) == (Capture.NO_WINDOW, 0, 0, 0)


@pytest.mark.parametrize("spec, summary", [
    ("", "every DQ line reads what was written"),
    ("dq2=0", "DQ2 stuck at 0"),  # READ ID's 90h survives DQ2 at 0: the signature names the line
    ("dq5=1", "the bus reads DQ5 apart from the other lines: suspect"),  # 90h becomes B0h: the chip stays silent
    ("dq7=0", "the chip drives nothing"),
])
@pytest.mark.slow
def test_selftest_on_the_rtl_rig_where_faults_corrupt_commands_too(spec, summary):
    """In the RTL rig a faulty DQ line changes every byte on the bus, commands included, as on a board: most
    faults leave the chip silent, and the report says so rather than blaming lines it cannot see."""
    from nandrig.boards.sim.wiring import Wiring
    from nandrig.host.engine.selftest import selftest

    sim = RtlRig(VirtualChip(PROFILE, SEED), wiring=Wiring.parse(spec))
    with sim, Rig.open(sim.url, timeout=HOST_TIMEOUT_S) as r:
        out = selftest(r, 3)
    assert summary in out["summary"]
    assert ("erase_status" in out) == (spec == "")  # the block is touched only when the chip answers


def _sessions_meanwhile(open_rig, chip, others: int) -> int:
    """Session A erases block 5 and is cut off; ``others`` sessions each erase block 6 three times; A resends
    its erase under its old session and seq. The erases block 5 got beyond A's one."""
    before = chip.pe_count(5)
    with open_rig() as a:
        a.erase(5)
        session, seq = a.session, a.last_seq
    for _ in range(others):
        with open_rig() as b:
            for _ in range(3):
                b.erase(6)
    with open_rig(session=session) as again:
        again.call(Opcode.ERASE, P.ERASE_REQ.pack(5, 0), seq=seq, ok=tuple(Err))
    return chip.pe_count(5) - before - 1


@pytest.mark.parametrize("kind", ["virtual", pytest.param("rtl", marks=pytest.mark.slow)])
def test_an_interrupted_sessions_last_reply_outlives_other_sessions(kind, request):
    """Keyed by session, the rig's reply cache keeps a cut-off host's last reply while other hosts use the rig
    (a retried erase is not applied twice); it is gone only after REPLY_CACHE_SESSIONS newer sessions."""
    if kind == "rtl":
        rtl = request.getfixturevalue("rtl")
        chip, open_rig = rtl.chip, lambda **kw: Rig.open(rtl.url, **kw)
    else:
        vr = VirtualRig(VirtualChip(PROFILE, SEED))
        chip, open_rig = vr.chip, lambda **kw: Rig(InProcessTransport(vr), **kw)
    assert _sessions_meanwhile(open_rig, chip, Limit.REPLY_CACHE_SESSIONS - 1) == 0
    assert _sessions_meanwhile(open_rig, chip, Limit.REPLY_CACHE_SESSIONS) == 1  # evicted: executed again


@pytest.mark.parametrize("kind", ["virtual", pytest.param("rtl", marks=pytest.mark.slow)])
def test_a_rig_held_by_a_dead_host_refuses_others_until_taken_over(kind, request):
    from nandrig.host.link.rig import RigHeld

    if kind == "rtl":
        rtl = request.getfixturevalue("rtl")
        open_rig = lambda **kw: Rig.open(rtl.url, **kw)  # noqa: E731
    else:
        vr = VirtualRig(VirtualChip(PROFILE, SEED))
        open_rig = lambda **kw: Rig(InProcessTransport(vr), **kw)  # noqa: E731
    dead = open_rig()
    dead.t.close()  # gone without releasing the rig, as a killed host
    with pytest.raises(RigHeld):
        open_rig()
    with open_rig(observe=True) as look:
        assert look.info().blocks == 16
    with open_rig(take_over=lambda holder: holder == dead.session) as taker:
        taker.erase(4)
    with open_rig() as after:  # the taker released it on closing
        after.erase(4)


@pytest.mark.slow
@pytest.mark.parametrize("profile, block, pages", [
    ("mlc-small-2lun", 23, range(4)),  # LUN 1, block 3: the row address puts the LUN above a 5-bit block field
    ("mlc-16k", 5, range(2)),  # 16384+1280-byte pages through the 32 KiB page buffer
])
def test_other_lun_and_large_pages_count_the_same_errors_as_the_virtual_rig(profile, block, pages):
    """The firmware addresses what the parameter page describes; the virtual rig is the reference."""
    results = {}
    with RtlRig(VirtualChip(profile, SEED)) as rtl_rig, Rig.open(rtl_rig.url) as r, \
            Rig.open("sim", chip=profile, seed=SEED, exact=True) as v:
        for name, rig in (("rtl", r), ("virtual", v)):
            info = rig.info()
            rig.erase(block)
            progs = [rig.program(block, p, seed=5).chip_status for p in pages]
            reads = [rig.read(block, p, seed=5).codewords for p in pages]
            raw = rig.read(block, 0, raw=True).data  # 16 KiB pages: beyond one reply, through READ_BUFFER
            results[name] = (info.blocks, info.luns, info.page_bytes, progs, reads, raw, rig.scan_bad(0, 32))
        behind = rtl_rig.chip  # the chip behind the RTL rig's pins saw the block it was sent
        assert behind.blocks[block].pe == 1 and all(b.pe == 0 for k, b in behind.blocks.items() if k != block)
    assert results["rtl"] == results["virtual"]


SAMSUNG_SCAN = 96  # blocks scanned: this seed's first marks are blocks 68, 76 and 91


@pytest.mark.slow
def test_samsung_marks_on_the_last_page_are_found():
    """A Samsung MLC marks bad blocks on the last page: SCAN_BAD finds every one the factory marked (of the first
    SAMSUNG_SCAN blocks)."""
    chip = VirtualChip("mlc-samsung", SEED)
    marked = sorted(b for b in chip.factory_bad if b < SAMSUNG_SCAN)
    assert len(marked) >= 2 and all(chip.blocks[b].last_page == 127 for b in marked)
    with RtlRig(VirtualChip("mlc-samsung", SEED)) as rtl_rig, Rig.open(rtl_rig.url) as r, \
            Rig.open("sim", chip="mlc-samsung", seed=SEED) as v:
        assert r.scan_bad(0, SAMSUNG_SCAN) == v.scan_bad(0, SAMSUNG_SCAN) == marked
        for rig in (r, v):  # no read-retry table for this part: the rig writes no vendor feature to it
            with pytest.raises(RigError, match="UNSUPPORTED"):
                rig.set_read_offset(-5)


@pytest.mark.slow
# LUN 1's blocks worn to 10,000 P/E beforehand: at 5,000 four cycles read no error (twelve read one); past about
# 11,000 this die's blocks are worn out (every page in error)
@pytest.mark.parametrize("profile, blocks, checkpoints, pre_wear", [("mlc-small-2lun", [21, 22], [1, 4], 10_000),
                                                                    ("mlc-16k", [3], [1], 5000)])
def test_a_campaign_on_lun_1_and_on_16k_pages_measures_as_the_virtual_rig(profile, blocks, checkpoints, pre_wear,
                                                                          tmp_path):
    """An endurance campaign on LUN 1's blocks, and one on 16 KiB pages (one cycle: each of its reads takes the
    RTL rig seconds), on blocks worn beforehand so that there are errors to count: the RTL rig's export is the
    virtual rig's (busy times to a few cycles)."""
    from nandrig.host.engine.campaigns import create, run
    from nandrig.host.storage.store import Store
    cycles = checkpoints[-1]

    def campaign(rig: Rig, db) -> list:
        store = Store(db)
        try:
            info = rig.info()
            chip_id = store.add_chip(f"{info.model}:{SEED}", info, rig.read_param_page(), None)
            cid = create(store, rig, chip_id, "endurance", {"blocks": blocks, "seed": 5, "cycles": cycles,
                                                            "checkpoints": checkpoints, "oven": "virtual"}, "lun")
            assert run(store, rig, cid, progress=False).state == "done"
            return store.rows(cid)
        finally:
            store.close()

    def worn() -> VirtualChip:
        c = short_busy_chip(profile, SEED)
        for b in blocks:
            c.cycle(b, pre_wear, seed=9, program=False)  # bulk wear; ends erased, factory mark intact
        return c

    with RtlRig(worn()) as sim, Rig.open(sim.url, timeout=HOST_TIMEOUT_S) as r:
        got = campaign(r, tmp_path / "rtl.db")
        assert {b: sim.chip.blocks[b].pe for b in blocks} == {b: pre_wear + cycles for b in blocks}
    with Rig(InProcessTransport(VirtualRig(worn(), exact=True))) as v:
        want = campaign(v, tmp_path / "virtual.db")
    assert len(want) == len(checkpoints) * len(blocks) * VirtualChip(profile).geometry.pages_per_block
    assert sum(w.err_1to0 + w.err_0to1 for w in want) > 0  # something to compare
    flipped = 0
    for w, g in zip(want, got, strict=True):
        timeless = dict(actual_h=0.0, busy_ns=0, err_1to0=0, err_0to1=0)
        assert w._replace(**timeless) == g._replace(**timeless)
        assert (w.busy_ns is None) == (g.busy_ns is None)  # the same pages' tR hidden by cache reads
        assert abs((w.busy_ns or 0) - (g.busy_ns or 0)) <= 100
        flipped += abs(w.err_1to0 - g.err_1to0) + abs(w.err_0to1 - g.err_0to1)
    # a cell within microvolts of a reference reads as its page's age says, and the two rigs' clocks differ: the
    # firmware moves each 16 KiB page over the bus between reads, the virtual rig after them (the last page read
    # 166 ms after its program on the RTL rig, 24 ms on the virtual one): one such bit in a campaign at most
    assert flipped <= 1, flipped


@pytest.mark.slow
def test_the_firmware_reports_a_chip_it_cannot_drive_instead_of_running_on_zeros(tmp_path, run_cli):
    """32 KiB pages overflow the page buffer: the firmware's INFO says so (geometry zero, every block out of
    range) and the host prints one line naming the field."""
    import json as _json
    from pathlib import Path

    from nandrig.virtual_chip.profile import ChipProfile
    from nandrig.chip.onfi import ParamError

    prof = _json.loads((Path(__file__).resolve().parents[2] / "nandrig/virtual_chip/profiles/mlc-16k.json").read_text())
    prof.update(name="mlc-32k", geometry={"page_bytes": 32768, "spare_bytes": 2560, "pages_per_block": 64, "blocks": 16})
    with RtlRig(VirtualChip(ChipProfile.from_mapping(prof), SEED)) as sim:
        with Rig.open(sim.url) as r:
            info = r.info()
            assert (info.param_status, info.blocks, info.page_bytes) == (ParamError.PAGE_SIZE, 0, 0)
            assert info.read_id[0] == 0x98  # it read the chip: it will not drive it
        got = run_cli("rig", "info", "--rig", sim.url)
    assert got.code == 1 and got.err.count("\n") == 1 and "exceed the rig's page buffer" in got.err, got.err


def _block_failing_its_first_page(chip: VirtualChip) -> tuple[int, float]:
    """A worn block (set up on copies of the chip) whose erase passes and whose page 0 program fails."""
    from nandrig.virtual_chip.chip import Block

    for block in range(4, chip.geometry.blocks):
        if block in chip.factory_bad:
            continue
        trial = VirtualChip.from_state(chip.state())
        wear = 1.3 * trial._wearout_onset(block)
        trial.blocks[block] = Block(pe=100, wear=wear)
        if not trial.erase(block).fail and trial.program(block, 0, seed=1).fail:
            return block, wear
    raise AssertionError("no such block")


@pytest.mark.slow
def test_cycle_with_cache_program_stops_after_a_failed_page_and_lets_the_array_finish():
    """With cache program the failure of page 0 shows in FAILC after page 1's 15h, while the array programs
    page 1: the firmware reports the block failed after one round and waits for the array (ARDY) before its
    next command; the bus model sees no command while the array is busy."""
    from nandrig.virtual_chip.chip import Block

    chip = VirtualChip(PROFILE, SEED)
    block, wear = _block_failing_its_first_page(chip)
    chip.blocks[block] = Block(pe=100, wear=wear)
    with RtlRig(chip) as sim, Rig.open(sim.url, timeout=HOST_TIMEOUT_S) as r:
        res = r.cycle(block, 1, 1, seed=9)
        other = r.erase(block + 1)
        model = sim.bridge.model
        assert (res.done[block], res.failed[block]) == (1, True)
        assert chip.pe_count(block) == 101  # one erase, counted once
        assert chip.blocks[block].last_page == 1  # page 1 went in with page 0's failure still unreported
        assert not other.chip_status & 0x01
        assert model.log.violation_count == 0, model.log.violations
        # the round, then the other block's factory mark read and its erase
        assert [(name, args[0] if args else None) for name, args, _ in model.log.ops][-5:] == [
            ("erase", block), ("cache-program", block), ("cache-program", block), ("read", block + 1),
            ("erase", block + 1)]
