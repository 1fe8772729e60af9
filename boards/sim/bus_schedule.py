"""When CYCLE jobs on several targets of one bus end: the firmware's job schedule (firmware/rig/cycle_job.c) in
virtual time.

A job is a run of chip operations on its own target, each a bus transfer (command, address and data cycles,
and the status read that ends the operation before it) followed by the target's array time. Targets work in
parallel; the bus carries one transfer at a time, given to the targets in the order they became ready for it
(ties to the lower target, as the firmware steps its jobs). A program issued as ONFI cache program takes its
page in while the page before it still programs: its transfer waits only for the array to have taken that page
(R/B# after 15h), and its own array time starts when both its transfer and the page before are done.
"""
from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class JobOps:
    """Operations in order, issued ``repeat`` times over: each one's bus time, then its array time (ns); ``cached``:
    its transfer overlaps the operation before it (a cache program after a program). A job is a sequence of these:
    a CYCLE's rounds are one round held with its count, not an entry per operation (600 blocks cycled 1,000 times
    would be 77 million)."""

    bus_ns: np.ndarray
    array_ns: np.ndarray
    cached: np.ndarray
    repeat: int = 1

    def __len__(self) -> int:
        return len(self.bus_ns) * self.repeat

    def state(self) -> list:
        return [self.bus_ns.astype("<i8").tobytes(), self.array_ns.astype("<i8").tobytes(),
                self.cached.astype(bool).tobytes(), self.repeat]

    @classmethod
    def from_state(cls, saved: list) -> "JobOps":
        """From ``state()`` (or the per-operation lists earlier state files hold)."""
        bus, arr, cached, *repeat = saved
        if isinstance(bus, bytes):
            return cls(np.frombuffer(bus, "<i8").astype(np.int64), np.frombuffer(arr, "<i8").astype(np.int64),
                       np.frombuffer(cached, bool).copy(), int(repeat[0]) if repeat else 1)
        return cls(np.array(bus, np.int64), np.array(arr, np.int64), np.array(cached, bool))


Job = JobOps | Sequence[JobOps]


def _runs(job: Job) -> list[JobOps]:
    return [r for r in ([job] if isinstance(job, JobOps) else job) if len(r)]


def _step(bus: int, cached: bool, array_before: int) -> int:
    """From the array start of one operation to the next's (see alone_ns)."""
    return max(bus, array_before) if cached else array_before + bus


def alone_ns(job: Job) -> int:
    """A job's time with the bus to itself: operation i's array starts at a_i = a_{i-1} + (its transfer overlaps
    the array before it ? max(its transfer, the array before) : the array before + its transfer)."""
    runs = _runs(job)
    if not runs:
        return 0
    total, before = int(runs[0].bus_ns[0]), None
    for r in runs:
        bus, arr = r.bus_ns.astype(np.int64), r.array_ns.astype(np.int64)
        inner = int(np.where(r.cached[1:], np.maximum(bus[1:], arr[:-1]), arr[:-1] + bus[1:]).sum())
        if before is not None:
            total += _step(int(bus[0]), bool(r.cached[0]), before)
        total += inner * r.repeat + _step(int(bus[0]), bool(r.cached[0]), int(arr[-1])) * (r.repeat - 1)
        before = int(arr[-1])
    return total + before


def _ops(runs: list[JobOps]) -> Iterator[tuple[int, int, bool]]:
    for r in runs:
        one = list(zip(r.bus_ns.tolist(), r.array_ns.tolist(), r.cached.tolist()))
        for _ in range(r.repeat):
            yield from one


def job_ends(start_ns: int, jobs: Mapping[int, Job]) -> dict[int, int]:
    """Each target's job's end (ns), all launched at ``start_ns`` on one free bus."""
    live = {k: runs for k, job in jobs.items() if (runs := _runs(job))}
    ends = dict.fromkeys(jobs, start_ns)
    if len(live) == 1:
        (k, runs), = live.items()
        return {**ends, k: start_ns + alone_ns(runs)}
    return {**ends, **shared_bus_ends(start_ns, live)}


def shared_bus_ends(start_ns: int, live: Mapping[int, Job]) -> dict[int, int]:
    """The event by event schedule of :func:`job_ends` (every job at least one operation)."""
    ends = {}
    streams = {k: _ops(_runs(job)) for k, job in live.items()}
    nxt = {k: next(stream) for k, stream in streams.items()}
    array_start = dict.fromkeys(live, start_ns)
    array_end = dict.fromkeys(live, start_ns)
    ready = [(start_ns, k) for k in sorted(live)]  # when each target next wants the bus
    bus_free = start_ns
    while ready:
        want, k = heapq.heappop(ready)
        bus, arr, _ = nxt[k]
        sent = max(want, bus_free) + bus
        bus_free = sent
        array_start[k] = max(sent, array_end[k])
        array_end[k] = array_start[k] + arr
        following = next(streams[k], None)
        if following is None:
            ends[k] = array_end[k]
        else:
            nxt[k] = following
            heapq.heappush(ready, (array_start[k] if following[2] else array_end[k], k))
    return ends
