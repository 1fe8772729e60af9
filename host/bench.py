"""``nandrig bench link``: wire cost of a MEASURE and command rate over TCP to the virtual rig."""
from __future__ import annotations

import statistics
import time

from nandrig.virtual_chip.chip import VirtualChip
from nandrig.boards.sim.server import VirtualRig
from nandrig.boards.sim.tcp_link import serve_in_thread
from nandrig.host.link.rig import Rig
from nandrig.host.link.transport import SerialTransport


class CountingTransport:
    """Counts the bytes each way on the wire."""

    def __init__(self, inner) -> None:
        self.inner, self.description = inner, inner.description
        self.sent = self.received = 0

    def write(self, data: bytes) -> None:
        self.sent += len(data)
        self.inner.write(data)

    def read(self, timeout: float) -> bytes:
        data = self.inner.read(timeout)
        self.received += len(data)
        return data

    def reopen(self) -> None:
        self.inner.reopen()

    def close(self) -> None:
        self.inner.close()


def bench_link(profile: str = "mlc-3x", repeats: int = 3, seconds: float = 1.0) -> dict:
    vr = VirtualRig(VirtualChip(profile, seed=1))
    port, stop, th = serve_in_thread(vr)
    try:
        counter = CountingTransport(SerialTransport(f"socket://127.0.0.1:{port}"))
        rig = Rig(counter)
        info = rig.info()
        block = next(b for b in range(info.blocks) if b not in vr.chip.factory_bad)
        rig.cycle(block, 1, 1000, seed=3)
        counter.sent = counter.received = 0
        rig.measure(block, 1, seed=3)
        pages = info.pages_per_block
        sent, received = counter.sent, counter.received
        wire = sent + received
        rates, measure_s = [], []
        for _ in range(repeats):
            n, t0 = 0, time.perf_counter()
            while time.perf_counter() - t0 < seconds:
                rig.time_ns()
                n += 1
            rates.append(n / (time.perf_counter() - t0))
            t0 = time.perf_counter()
            rig.measure(block, 1, seed=3)
            measure_s.append(time.perf_counter() - t0)
        rig.close()
    finally:
        stop.set()
        th.join(5)
    return {
        "profile": profile, "pages_per_block": pages,
        "measure_block_wire_bytes": wire, "measure_request_bytes": sent, "measure_reply_bytes": received,
        "wire_bytes_per_page": wire / pages, "target_bytes_per_page": 32,
        "meets_target": wire / pages <= 32,
        "commands_per_s_tcp": statistics.median(rates), "measure_block_s_tcp": statistics.median(measure_s),
        "repeats": repeats,
    }
