"""Replaying a workload on the FTL: each request's pages written, read or trimmed, its service time from what the
chip's operations cost, a queue in front (one request served at a time, in arrival order), and the figures a
system evaluation compares (throughput, latency percentiles, write amplification, losses).

A request's service time is the array time the chip reported for each of its operations, each page's transfer
at the chip's timing mode (tWC in, tRC out), and each decoded read's time in the BCH engine beyond its transfer
(the engine decodes as the page streams in; ``EngineLatency``). Garbage collection and wear leveling a write
sets off are the write's: a host waits for them. Work the controller does in the host's idle time (``Ftl.background``)
takes the device from when it fell idle, and a request arriving meanwhile waits for it.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from nandrig.chip.pattern import key
from nandrig.chip.timing import limit_ns
from nandrig.host.ftl.ftl import Ftl
from nandrig.host.workload.trace import IoOp, Request, pages_of

IDLE_STEP_NS = 1e9  # idle time reaches the chip in steps of a second (a retention clock, not a request clock)


@dataclass(frozen=True)
class EngineLatency:
    """The rig's BCH engine's decode time beyond a page's input, in engine cycles: ``base + per_t * t`` for a
    4096-byte page (two 2048-byte codewords), scaled to the page. Fitted to `nandrig bench bch --no-synth`'s
    decode cycles less the input bound (docs/bch.md): 1,035 at t 1 and 1,283 at t 64."""

    base_cycles: float = 1031.1
    per_t_cycles: float = 3.937
    clock_hz: float = 100e6

    def ns(self, reads: int, t_sum: int, page_bytes: int) -> float:
        """The decode time of ``reads`` decoded pages whose t add up to ``t_sum``."""
        return (self.base_cycles * reads + self.per_t_cycles * t_sum) * page_bytes / 4096 * 1e9 / self.clock_hz


@dataclass(frozen=True)
class BusTiming:
    """The chip's bus at its timing mode: ns per byte in (tWC) and out (tRC), and a page's bytes on it."""

    t_wc_ns: float
    t_rc_ns: float
    raw_page_bytes: int

    @property
    def page_in_ns(self) -> float:
        return self.raw_page_bytes * self.t_wc_ns

    @property
    def page_out_ns(self) -> float:
        return self.raw_page_bytes * self.t_rc_ns

    @classmethod
    def of(cls, rig) -> "BusTiming":
        """The rig's chip at the timing mode it runs: ONFI's cycle times for that mode, which the rig's
        controller meets exactly at its 100 MHz clock (docs/onfi.md)."""
        info = rig.info()
        t_wc, t_rc = limit_ns(info.timing_mode)
        return cls(t_wc, t_rc, info.raw_page_bytes)


@dataclass
class ReplayResult:
    requests: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    unwritten_reads: int = 0  # pages read before any write (nothing to check)
    damaged_reads: int = 0  # pages whose read was reported lost (uncorrectable, or moved lost)
    read_latency_ns: list[float] = field(default_factory=list)
    write_latency_ns: list[float] = field(default_factory=list)
    end_ns: float = 0.0  # when the last request finished (from the first's arrival)
    service_ns: float = 0.0  # the device's time serving the requests (their waits apart)
    unaged_ns: float = 0.0  # idle time not yet given to the chip (it is given in steps of IDLE_STEP_NS)
    background_ns: float = 0.0  # the controller's own work in the host's idle time (AccessEval's moves)

    def percentiles(self, op: IoOp) -> dict[str, float]:
        lat = np.array(self.read_latency_ns if op == IoOp.READ else self.write_latency_ns)
        if not len(lat):
            return {}
        return {f"p{q:g}_us": float(np.percentile(lat, q)) / 1000 for q in (50, 99, 99.9)}

    def throughput_mb_s(self) -> float:
        return (self.bytes_read + self.bytes_written) / self.end_ns * 1e3 if self.end_ns else 0.0

    def iops(self) -> float:
        return self.requests / self.end_ns * 1e9 if self.end_ns else 0.0

    def device_mb_s(self) -> float:
        """What the device sustains on this mix: bytes over its service time (the trace's idle time apart), where
        ``throughput_mb_s`` is what the trace offered when the device kept up."""
        return (self.bytes_read + self.bytes_written) / self.service_ns * 1e3 if self.service_ns else 0.0


def replay(ftl: Ftl, requests: Iterable[Request], bus: BusTiming, engine: EngineLatency = EngineLatency(),
           result: ReplayResult | None = None) -> ReplayResult:
    """Serve ``requests`` in arrival order on ``ftl``; a request that finds the device busy waits (its latency
    counts the wait). Every write stores content of its own (a pattern seed from the page and the write count)."""
    out = result or ReplayResult()
    page_bytes = ftl.flash.geometry.page_bytes
    c = ftl.counters
    free_at = out.end_ns  # a replay in parts goes on from where the last part left the device

    def since(before: tuple[int, ...]) -> float:
        """The device's time for the operations since ``before``: array, bus, and the engine's decoding."""
        return ((c.busy_ns - before[0]) + (c.flash_programs - before[1]) * bus.page_in_ns
                + (c.flash_reads - before[2]) * bus.page_out_ns
                + engine.ns(c.decoded_reads - before[3], c.decoded_t - before[4], page_bytes))

    for req in requests:
        if req.time_ns > free_at:  # idle until the request: the controller's background work, then the data ages
            before = (c.busy_ns, c.flash_programs, c.flash_reads, c.decoded_reads, c.decoded_t)
            if ftl.background():  # a request arriving meanwhile waits for it
                work = since(before)
                free_at += work
                out.service_ns += work
                out.background_ns += work
        if req.time_ns > free_at:
            out.unaged_ns += req.time_ns - free_at
            if out.unaged_ns >= IDLE_STEP_NS:
                ftl.flash.idle(out.unaged_ns)
                out.unaged_ns = 0.0
        before = (c.busy_ns, c.flash_programs, c.flash_reads, c.decoded_reads, c.decoded_t)
        for lpn in pages_of(req, page_bytes):
            lpn %= ftl.logical_pages  # a trace addressing more than the FTL holds wraps onto it
            if req.op == IoOp.WRITE:
                ftl.write(lpn, key(lpn, c.host_writes) & 0x7FFF_FFFF)  # every write's content its own
            elif req.op == IoOp.READ:
                if not ftl.holds(lpn):
                    out.unwritten_reads += 1
                elif not ftl.read(lpn):
                    out.damaged_reads += 1
            else:
                ftl.trim(lpn)
        service = since(before)
        start = max(float(req.time_ns), free_at)
        free_at = start + service
        out.service_ns += service
        (out.read_latency_ns if req.op == IoOp.READ else out.write_latency_ns).append(free_at - req.time_ns)
        out.requests += 1
        out.bytes_read += req.length if req.op == IoOp.READ else 0
        out.bytes_written += req.length if req.op == IoOp.WRITE else 0
    out.end_ns = free_at
    return out
