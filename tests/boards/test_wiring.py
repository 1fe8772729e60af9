"""The simulated adapter: read-capture calibration against the chip's data-valid window, and DQ faults."""
import sqlite3

import pytest

from nandrig.virtual_chip.chip import VirtualChip
from nandrig.boards.sim.server import VirtualRig
from nandrig.boards.sim.tcp_link import serve_in_thread
from nandrig.boards.sim.wiring import Wiring
from nandrig.errors import NandrigError
from nandrig.chip.timing import MODES
from nandrig.boards.ulx3s.build import CLOCKS as ULX3S
from nandrig.gateware.onfi.timing import DEFAULT_CLK_HZ, data_window_ps, mode_cycles, trim_centre
from nandrig.host.link.rig import Rig
from nandrig.host.link.transport import InProcessTransport
from nandrig.protocol import Capture, Limit

CLOCKS = (DEFAULT_CLK_HZ, ULX3S.sys_hz)  # the default build's, and the ULX3S's system clock (its single-clock build)


def info(wiring: Wiring, clk_hz: float = DEFAULT_CLK_HZ):
    return Rig(InProcessTransport(VirtualRig(VirtualChip("mlc-small", 1), clk_hz=clk_hz, wiring=wiring))).info()


@pytest.mark.parametrize("clk_hz", CLOCKS)
def test_trim_zero_reads_every_mode_across_the_design_delay_range(clk_hz):
    """The capture edge the timing model picks needs no calibration for 0-8 ns of round trip."""
    for delay in (0, 2, 4, 6, 8):
        for mode in MODES:
            assert 0 in [Limit.CAPTURE_TRIM_MIN + i for i in range(16) if Wiring(delay).trim_pass(mode, clk_hz) >> i & 1]


@pytest.mark.parametrize("clk_hz", CLOCKS)
def test_the_calibrated_trim_samples_inside_the_window_with_the_most_room(clk_hz):
    period = round(1e12 / clk_hz)
    for delay in range(0, 70, 3):
        for mode in MODES:
            passing = Wiring(delay).trim_pass(mode, clk_hz)
            trim = trim_centre(passing, Limit.CAPTURE_TRIM_MIN)
            assert trim is not None, (delay, mode)
            first, last = data_window_ps(mode, clk_hz, delay)
            edge = (mode_cycles(mode, clk_hz).sample + trim) * period
            assert first < edge <= last
            # no other passing edge is further from both window ends than the centre, by more than a cycle
            assert min(edge - first, last - edge) + period >= (last - first) // 2 - period


def test_the_virtual_rig_runs_its_fastest_mode_at_the_centre_of_the_window():
    got = info(Wiring(delay_ns=20))
    assert got.capture == Capture.CALIBRATED and got.timing_mode == 5
    assert got.passing_trims == [1, 2] and got.rd_trim == 2  # 20 ns late: trim 0 reads too early


def test_no_passing_window_leaves_the_chip_unidentified_at_mode_0(run_cli, tmp_path):
    got = info(Wiring(delay_ns=120))
    assert (got.capture, got.timing_mode, got.trim_pass, got.blocks, got.model) == (Capture.NO_WINDOW, 0, 0, 0, "")
    with pytest.raises(NandrigError, match="cannot read its chip"):
        got.require_chip()
    r = run_cli("rig", "info", "--rig", "sim", "--wiring", "delay=120")
    assert r.code == 1 and r.err.count("\n") == 1 and "no read-capture trim" in r.err
    port, stop, _ = serve_in_thread(VirtualRig(VirtualChip("mlc-small", 1), wiring=Wiring(delay_ns=120)))
    try:
        r = run_cli("run", "endurance", "--rig", f"socket://127.0.0.1:{port}", "--db", tmp_path / "m.db",
                    "--blocks", "1-2", "--cycles", "10")
    finally:
        stop.set()
    assert r.code == 1 and "cannot read its chip" in r.err
    with sqlite3.connect(tmp_path / "m.db") as db:  # no chip registered from the zeros it reported
        assert db.execute("SELECT COUNT(*) FROM chips").fetchone() == (0,)
        assert db.execute("SELECT COUNT(*) FROM campaigns").fetchone() == (0,)


@pytest.mark.parametrize("spec, wiring", [
    ("", Wiring()),
    ("delay=12", Wiring(delay_ns=12)),
    ("delay=4.5ns, dq3=0,dq5=1", Wiring(4.5, stuck0=0x08, stuck1=0x20)),
    ("dq1~dq2,dq6~dq7", Wiring(shorts=((1, 2), (6, 7)))),
])
def test_wiring_specs_parse(spec, wiring):
    assert Wiring.parse(spec) == wiring


@pytest.mark.parametrize("spec, message", [
    ("dq8=0", "DQ8 does not exist"), ("dq3=2", "not understood"), ("dq2~dq2", "itself"),
    ("dq1=0,dq1=1", "stuck at 0 and at 1"), ("delay=-3", "not understood"), ("speed=3", "not understood"),
])
def test_bad_wiring_specs_are_refused(spec, message):
    with pytest.raises(NandrigError, match=message):
        Wiring.parse(spec)


def test_faults_act_on_the_lines_they_name():
    w = Wiring.parse("dq0=0,dq7=1,dq2~dq3")
    assert w.apply(0x01) == 0x80  # DQ0 cannot rise, DQ7 cannot fall
    assert w.apply(0x04) == 0x80 and w.apply(0x0C) == 0x8C  # a shorted pair reads its wired-AND
    assert w.apply_bytes(bytes([0x01, 0x0C])) == bytes([0x80, 0x8C])
