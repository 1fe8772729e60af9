"""Run the RTL rig: Verilator with the chip server on its NAND pins and its UART on a TCP port."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from nandrig.virtual_chip.chip import VirtualChip
from nandrig.boards.sim.rtl import bridge
from nandrig.boards.sim.wiring import Wiring
from nandrig.boards.sim.rtl.build import RTL_TARGETS, build, build_dir, rtl_bch, sim_config
from nandrig.boards.catalog import board_clocks
from nandrig import protocol as P
from nandrig.errors import NandrigError
from nandrig.protocol import Deframer, Opcode


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def booted(port: int, timeout_s: float) -> bool:
    """Whether the firmware answers a STATUS on the UART port within ``timeout_s`` (it needs no session, so the
    probe takes nothing from the client that follows; its connection closes before that one opens). The port
    listens from the simulator's start, the firmware answers once it has identified its chips: with several
    targets and a loaded machine that is longer than a host's first HELLO waits."""
    probe = P.request(Opcode.STATUS, 1).encode()
    deframer = Deframer()
    end = time.monotonic() + timeout_s
    with socket.create_connection(("127.0.0.1", port), timeout=1.0) as s:
        s.sendall(probe)
        while time.monotonic() < end:
            try:
                data = s.recv(4096)
            except socket.timeout:
                s.sendall(probe)
                continue
            if not data:
                return False
            if any(f.type == P.REPLY_TYPE for f in deframer.feed(data)):
                return True
    return False


def listening(port: int) -> bool:
    """Whether something listens on the TCP port (Linux: from /proc/net/tcp)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for ln in lines:
            local, state = ln.split()[1], ln.split()[3]
            if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                return True
    return False


# how long a host waits in silence before it sends a request again on this rig: its slowest short command takes
# seconds of wall time, and a request frame the simulated link now and then loses (docs/rtl-rig.md, "Link") costs
# this much before the resend, which the firmware's reply cache answers once
HOST_TIMEOUT_S = 15.0


class RtlRig:
    """``with RtlRig(chip) as rig: rig.url`` is a pyserial URL every nandrig command accepts."""

    def __init__(self, chip: VirtualChip, port: int = 0, echo=lambda s: None, bch: bool = False,
                 rebuild: bool = False, board: str | None = None, wiring: Wiring = Wiring(),
                 others: Mapping[int, VirtualChip] | None = None, socket_wiring: Mapping[int, Wiring] | None = None,
                 link_baud: int = 0) -> None:
        """``bch``: the SoC with its BCH engine (``rtl_bch(board)``), about six times slower to simulate;
        ``rebuild``: build it even if no source changed; ``board``: run at that board's system clock;
        ``wiring``: the adapter's round-trip delay (the chip's data-valid windows arrive that late) and DQ faults;
        ``others``: chips in further sockets (target -> chip), the rest of the rig's RTL_TARGETS sockets empty;
        ``socket_wiring``: a socket's round-trip delay where it differs from ``wiring``'s (DQ faults are the bus's,
        ``wiring``'s, on every target); ``link_baud``: the serial link at a real UART's pace (0: as fast as the
        simulation moves bytes)."""
        self.wiring, self.link_baud = wiring, link_baud
        self.chip, self.port, self.echo, self.rebuild = chip, port or free_port(), echo, rebuild
        self.sockets = {0: chip, **(others or {})}
        self.delays = {k: (socket_wiring or {}).get(k, wiring).delay_ns for k in self.sockets}
        if not all(0 < k < RTL_TARGETS for k in others or {}):
            raise NandrigError(f"the RTL rig's sockets are 0..{RTL_TARGETS - 1}")
        self.out, self.bch = build_dir(board, bch), rtl_bch(board) if bch else None
        self.clocks = board_clocks(board)
        self.clk_hz = self.clocks.phy_hz  # what the bus model and the calibration count in
        self.proc: subprocess.Popen | None = None
        self.bridges = {k: bridge.ChipBridge(c, self.clk_hz) for k, c in self.sockets.items()}
        self.bridge = self.bridges[0]  # target 0's

    @property
    def url(self) -> str:
        return f"socket://127.0.0.1:{self.port}"

    def __enter__(self) -> "RtlRig":
        binary = build(self.out, force=self.rebuild, echo=self.echo, bch=self.bch, clocks=self.clocks)
        chip_port, _ = bridge.start(self.bridges)
        # a run directory of its own: the simulator reads sim_config.js and modules/ from its cwd
        runs = self.out / "runs"
        runs.mkdir(exist_ok=True)
        self.run_dir = Path(tempfile.mkdtemp(dir=runs))
        gw = binary.parents[1]
        for f in list(gw.glob("*.init")) + [gw / "modules"]:
            os.symlink(f, self.run_dir / f.name)
        (self.run_dir / "sim_config.js").write_text(sim_config(self.port, chip_port, self.clocks, self.wiring,
                                                                   self.chip.profile.power, self.delays,
                                                                   self.link_baud).get_json())
        self.log = open(self.run_dir / "sim.log", "w")
        # SIGPIPE stays ignored (restore_signals=False): the UART module writes to a client that may have gone
        self.proc = subprocess.Popen([str(binary)], cwd=self.run_dir, stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, restore_signals=False)
        deadline = time.monotonic() + 60
        while not listening(self.port):  # not a probe connection: the UART module serves one client at a time
            if self.proc.poll() is not None:
                raise NandrigError(f"the RTL rig exited at start (see {self.run_dir / 'sim.log'})")
            if time.monotonic() > deadline:
                self.__exit__()
                raise NandrigError("the RTL rig did not open its UART port within 60 s")
            time.sleep(0.1)
        if not booted(self.port, 300.0):
            self.__exit__()
            raise NandrigError(f"the RTL rig's firmware did not answer within 300 s (see {self.run_dir / 'sim.log'})")
        return self

    def __exit__(self, *exc) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        if self.proc:
            self.log.close()
            if not exc or exc[0] is None:
                shutil.rmtree(self.run_dir, ignore_errors=True)
