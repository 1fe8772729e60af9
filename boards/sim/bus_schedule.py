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
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class JobOps:
    """A job's operations in order: each one's bus time, then its array time (ns); ``cached``: its transfer
    overlaps the operation before it (a cache program after a program)."""

    bus_ns: np.ndarray
    array_ns: np.ndarray
    cached: np.ndarray

    @classmethod
    def join(cls, runs: list["JobOps"]) -> "JobOps":
        return cls(*(np.concatenate([getattr(r, f) for r in runs]) for f in ("bus_ns", "array_ns", "cached")))

    def state(self) -> list[bytes]:
        """The arrays as raw bytes: a CYCLE's job holds an entry per operation, hundreds of thousands, saved
        after the CYCLE; element by element, encoding them took most of a campaign's time."""
        return [self.bus_ns.astype("<i8").tobytes(), self.array_ns.astype("<i8").tobytes(),
                self.cached.astype(bool).tobytes()]

    @classmethod
    def from_state(cls, saved: list) -> "JobOps":
        """From ``state()``'s bytes (or the lists earlier state files hold)."""
        bus, arr, cached = saved
        if isinstance(bus, bytes):
            return cls(np.frombuffer(bus, "<i8").astype(np.int64), np.frombuffer(arr, "<i8").astype(np.int64),
                       np.frombuffer(cached, bool).copy())
        return cls(np.array(bus, np.int64), np.array(arr, np.int64), np.array(cached, bool))


def alone_ns(ops: JobOps) -> int:
    """A job's time with the bus to itself: operation i's array starts at a_i = a_{i-1} + (its transfer overlaps
    the array before it ? max(its transfer, the array before) : the array before + its transfer)."""
    if not len(ops.bus_ns):
        return 0
    bus, arr = ops.bus_ns.astype(np.int64), ops.array_ns.astype(np.int64)
    step = np.where(ops.cached[1:], np.maximum(bus[1:], arr[:-1]), arr[:-1] + bus[1:])
    return int(bus[0] + step.sum() + arr[-1])


def job_ends(start_ns: int, jobs: Mapping[int, JobOps]) -> dict[int, int]:
    """Each target's job's end (ns), all launched at ``start_ns`` on one free bus."""
    live = {k: ops for k, ops in jobs.items() if len(ops.bus_ns)}
    ends = dict.fromkeys(jobs, start_ns)
    if len(live) == 1:
        (k, ops), = live.items()
        return {**ends, k: start_ns + alone_ns(ops)}
    return {**ends, **shared_bus_ends(start_ns, live)}


def shared_bus_ends(start_ns: int, live: Mapping[int, JobOps]) -> dict[int, int]:
    """The event by event schedule of :func:`job_ends` (every job at least one operation)."""
    ends = {}
    lists = {k: (ops.bus_ns.tolist(), ops.array_ns.tolist(), ops.cached.tolist()) for k, ops in live.items()}
    at = dict.fromkeys(live, 0)
    array_start = dict.fromkeys(live, start_ns)
    array_end = dict.fromkeys(live, start_ns)
    ready = [(start_ns, k) for k in sorted(live)]  # when each target next wants the bus
    bus_free = start_ns
    while ready:
        want, k = heapq.heappop(ready)
        bus, arr, cached = lists[k]
        i = at[k]
        sent = max(want, bus_free) + bus[i]
        bus_free = sent
        array_start[k] = max(sent, array_end[k])
        array_end[k] = array_start[k] + arr[i]
        at[k] = i + 1
        if i + 1 == len(bus):
            ends[k] = array_end[k]
        else:
            heapq.heappush(ready, (array_start[k] if cached[i + 1] else array_end[k], k))
    return ends
