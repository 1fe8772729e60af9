"""The chip server behind the RTL rig's NAND pins: each target's virtual chip's bus model, driven by bus cycles.

The Verilator module ``nandbridge`` turns pin activity into bus cycles and
sends them here; they go to the same :class:`NandBusModel` that checks the
controller at pin level in Amaranth's simulator (its command layer, not a
second chip model), with busy times unscaled. Each message carries the
simulated time: the chip's clock is moved up to it before the cycle is
applied, so its clock follows simulated time, plus whatever ADVANCE added.
"""
from __future__ import annotations

import socket
import struct
import threading
from dataclasses import dataclass

from nandrig.virtual_chip.chip import FEATURE_TIMING_MODE, VirtualChip
from nandrig.gateware.onfi.bfm import NandBusModel
from nandrig.gateware.onfi.timing import DEFAULT_CLK_HZ

HEADER = struct.Struct("<BBBQI")  # kind, target, wp_n, now_ns, payload bytes
REPLY = struct.Struct("<IBBBIII")  # busy_ns, status, has_out, mode, array_ns, busy_ua, n
CMD, ADDR, DIN, ADVANCE = 1, 2, 3, 4
NS_PER_HOUR = 3.6e12


@dataclass
class BusTally:
    """What crossed the pins, for the rig-overhead benchmark: the chip's busy time and the bus cycles."""
    busy_ns: int = 0
    commands: int = 0
    addresses: int = 0
    data_in: int = 0


class ChipBridge:
    def __init__(self, chip: VirtualChip, clk_hz: float = DEFAULT_CLK_HZ) -> None:
        self.chip = chip
        self.model = NandBusModel(chip, clk_hz, busy_scale=1.0)
        self.tally = BusTally()
        self.ahead_ns = 0  # ADVANCE steps: the chip's clock runs this far ahead of simulated time
        self.base_ns = chip.clock_ns  # the chip's clock when the simulation started (a resumed chip keeps its age)

    def _sync(self, now_ns: int) -> None:
        target = self.base_ns + self.ahead_ns + now_ns
        if target > self.chip.clock_ns:
            self.chip.advance_ns(target - self.chip.clock_ns)

    def handle(self, kind: int, wp_n: int, now_ns: int, payload: bytes) -> bytes:
        m = self.model
        self._sync(now_ns)
        before_busy = m.busy.end
        if kind == CMD:
            m._command(now_ns, payload[0], {"wp_n": wp_n})
        elif kind == ADDR:
            m._address(now_ns, payload[0])
        elif kind == DIN:
            for b in payload:
                m._data_in(now_ns, b)
        elif kind == ADVANCE:
            ns, temp = struct.unpack("<Qh", payload)
            start = self.chip.clock_ns
            self.chip.wait(ns / NS_PER_HOUR, temp_c=temp / 100.0)
            self.ahead_ns += self.chip.clock_ns - start
        started = m.busy.end != before_busy and m.busy.end > now_ns
        busy = int(m.busy.end - now_ns) if started else 0
        # what the front end's ADC reads while the array works (its R/B# may rise before: cache operations)
        array = int(m.array.end - now_ns) if started else 0
        busy_ua = round(self.chip.profile.power.busy_ma(self.chip.last_phase) * 1000) if started else 0
        t = self.tally
        t.busy_ns += busy
        t.commands += kind == CMD
        t.addresses += kind == ADDR
        t.data_in += len(payload) if kind == DIN else 0
        # after a command or address the output (if any) starts afresh: send it; 70h reads status, not output
        fresh = kind in (CMD, ADDR) and m.out is not None and not m.out_status
        out = bytes(m.out[m.ptr:]) if fresh else b""
        mode = self.chip.get_features(FEATURE_TIMING_MODE)[0] & 0x0F  # shapes the data-valid windows
        return REPLY.pack(busy, m.status_at(now_ns), int(fresh), mode, array, busy_ua, len(out)) + out


def _recv(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        part = sock.recv(n - len(buf))
        if not part:
            raise ConnectionError
        buf += part
    return bytes(buf)


def handle(bridges: dict[int, ChipBridge], target: int, kind: int, wp_n: int, now_ns: int, payload: bytes) -> bytes:
    """A message for one target's chip; ADVANCE moves every chip's clock (the rig has one), answered by target's."""
    if kind == ADVANCE:
        replies = {k: b.handle(kind, wp_n, now_ns, payload) for k, b in bridges.items()}
        return replies[target]
    return bridges[target].handle(kind, wp_n, now_ns, payload)


def serve(bridges: dict[int, ChipBridge], lsock: socket.socket, after: callable = lambda: None) -> None:
    """Serve one simulator connection until it closes; ``after`` runs after every message (state saving)."""
    conn, _ = lsock.accept()
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    with conn:
        try:
            while True:
                kind, target, wp_n, now_ns, n = HEADER.unpack(_recv(conn, HEADER.size))
                reply = handle(bridges, target, kind, wp_n, now_ns, _recv(conn, n) if n else b"")
                after()
                conn.sendall(reply)
        except ConnectionError:
            return


def start(bridges: dict[int, ChipBridge]) -> tuple[int, threading.Thread]:
    lsock = socket.create_server(("127.0.0.1", 0))
    port = lsock.getsockname()[1]
    th = threading.Thread(target=serve, args=(bridges, lsock), daemon=True)
    th.start()
    return port, th
