"""Workloads as request streams: block-level traces in the formats people have, and synthetic generators.

Formats read:

- ``msr``: SNIA IOTTA's MSR Cambridge CSV (``Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime``;
  Windows filetime in 100 ns ticks, offsets and sizes in bytes, no header);
- ``blkparse``: blkparse's default text output (``8,0 3 1 0.000000000 4162 Q WS 3417048 + 8 [proc]``), one event
  kind kept (queued, ``Q``, by default), sectors of 512 bytes, RWBS read, write or discard;
- ``fio``: fio's iolog, version 2 (``file action offset length``, no time) or 3 (``usec file action ...``).

A request's time is from the trace's first request; idle time between requests is real time for the chip, which
ages the data stored on it (retention).
"""
from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from nandrig.errors import NandrigError

SECTOR_BYTES = 512
FILETIME_NS = 100


class IoOp(enum.Enum):
    READ = "read"
    WRITE = "write"
    TRIM = "trim"


@dataclass(frozen=True)
class Request:
    time_ns: int  # after the trace's first request
    op: IoOp
    offset: int  # bytes
    length: int  # bytes


FORMATS = ("msr", "blkparse", "fio")


def read_trace(lines: Iterable[str], fmt: str, name: str = "trace") -> Iterator[Request]:
    """The requests of a trace in ``fmt``; a line that is not of the format stops it with one line naming the
    line and what it should be."""
    parse = {"msr": _msr, "blkparse": _blkparse, "fio": _fio}.get(fmt)
    if parse is None:
        raise NandrigError(f"trace format {fmt!r}: one of {', '.join(FORMATS)}")
    start = None
    for request in parse(_numbered(lines, name)):
        start = request.time_ns if start is None else start
        yield Request(request.time_ns - start, request.op, request.offset, request.length)


def _numbered(lines: Iterable[str], name: str) -> Iterator[tuple[str, str]]:
    for k, line in enumerate(lines, 1):
        line = line.strip()
        if line:
            yield f"{name}:{k}", line


def _int(text: str, where: str, what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise NandrigError(f"{where}: {what} {text!r} is not a whole number") from None
    if value < 0:
        raise NandrigError(f"{where}: {what} {value} is negative")
    return value


def _msr(lines: Iterator[tuple[str, str]]) -> Iterator[Request]:
    ops = {"read": IoOp.READ, "write": IoOp.WRITE}
    for where, line in lines:
        f = line.split(",")
        if len(f) != 7 or f[3].lower() not in ops:
            raise NandrigError(f"{where}: not an MSR Cambridge line (Timestamp,Hostname,DiskNumber,Type,Offset,Size,"
                               f"ResponseTime with Type Read or Write): {line[:60]!r}")
        yield Request(_int(f[0], where, "timestamp") * FILETIME_NS, ops[f[3].lower()], _int(f[4], where, "offset"),
                      _int(f[5], where, "size"))


def _blkparse(lines: Iterator[tuple[str, str]], action: str = "Q") -> Iterator[Request]:
    for where, line in lines:
        f = line.split()
        if f[0].startswith(("CPU", "Total")):
            return  # blkparse's summary follows the events
        if len(f) < 7 or "," not in f[0]:
            raise NandrigError(f"{where}: not a blkparse event (dev cpu seq time pid action rwbs ...): {line[:60]!r}")
        if f[5] != action or len(f) < 10 or f[8] != "+":
            continue  # other actions, and events without a sector range (plugs, messages)
        rwbs = f[6]
        op = IoOp.TRIM if "D" in rwbs else IoOp.WRITE if "W" in rwbs else IoOp.READ if "R" in rwbs else None
        if op is None:
            continue  # a flush alone carries no data
        try:
            seconds = float(f[3])
        except ValueError:
            raise NandrigError(f"{where}: time {f[3]!r} is not seconds") from None
        yield Request(round(seconds * 1e9), op, _int(f[7], where, "sector") * SECTOR_BYTES,
                      _int(f[9], where, "sector count") * SECTOR_BYTES)


def _fio(lines: Iterator[tuple[str, str]]) -> Iterator[Request]:
    ops = {"read": IoOp.READ, "write": IoOp.WRITE, "trim": IoOp.TRIM}
    where, header = next(lines, ("trace:1", ""))
    versions = {"fio version 2 iolog": 2, "fio version 3 iolog": 3}
    if header not in versions:
        raise NandrigError(f"{where}: not a fio iolog (its first line is 'fio version 2 iolog' or '... 3 iolog')")
    timed = versions[header] == 3
    for where, line in lines:
        f = line.split()
        at = 1 if timed else 0
        if len(f) < at + 2:
            raise NandrigError(f"{where}: not a fio iolog line ({'usec ' if timed else ''}file action ...)")
        action = f[at + 1]
        if action not in ops:
            continue  # add, open, close, sync, datasync, wait
        if len(f) != at + 4:
            raise NandrigError(f"{where}: {action} needs an offset and a length")
        time_ns = _int(f[0], where, "time") * 1000 if timed else 0
        yield Request(time_ns, ops[action], _int(f[at + 2], where, "offset"), _int(f[at + 3], where, "length"))


# -- synthetic workloads ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Synthetic:
    """A generated workload over ``span`` bytes: ``access`` uniform, zipf (``zipf_s``: its exponent) or sequential
    (runs of ``run`` requests); ``reads``: the share of reads; requests of ``size`` bytes arriving ``gap_us`` apart
    on average (exponential)."""

    access: str = "uniform"
    reads: float = 0.5
    size: int = 4096
    gap_us: float = 100.0
    zipf_s: float = 1.1
    run: int = 64

    def __post_init__(self) -> None:
        if self.access not in ("uniform", "zipf", "sequential"):
            raise NandrigError(f"access {self.access!r}: uniform, zipf or sequential")
        if not 0.0 <= self.reads <= 1.0 or self.size <= 0 or self.gap_us < 0 or self.zipf_s <= 1.0 or self.run < 1:
            raise NandrigError("a synthetic workload needs reads in 0..1, a size > 0, a gap >= 0, zipf_s > 1, run >= 1")


# FileBench-like profiles (their shape, not FileBench's code): a video server streams whole files and now and then
# stores a new one; a file server mixes; a web proxy reads hot objects
PROFILES = {
    "uniform": Synthetic(),
    "zipf": Synthetic("zipf", reads=0.7),
    "sequential": Synthetic("sequential", reads=0.0, run=256),
    "video-server": Synthetic("sequential", reads=0.95, size=65536, gap_us=500.0, run=1024),
    "file-server": Synthetic("zipf", reads=0.5, size=16384, zipf_s=1.2),
    "web-proxy": Synthetic("zipf", reads=0.85, size=4096, zipf_s=1.4, gap_us=50.0),
}


def synthetic(profile: Synthetic, span: int, n: int, seed: int = 1) -> Iterator[Request]:
    """``n`` requests of ``profile`` over ``span`` bytes, reproducible from ``seed``."""
    slots = span // profile.size
    if slots < 1:
        raise NandrigError(f"a span of {span} bytes holds no {profile.size}-byte request")
    rng = np.random.default_rng(seed)
    chunk = 65536
    t = 0.0
    cursor = int(rng.integers(slots))
    # zipf over the slots by rank, ranks scattered over the span so hot data is not all at its start
    ranks = rng.permutation(slots) if profile.access == "zipf" else None
    weights = None
    if ranks is not None:
        w = 1.0 / np.arange(1, slots + 1) ** profile.zipf_s
        weights = np.cumsum(w / w.sum())
    for first in range(0, n, chunk):
        m = min(chunk, n - first)
        gaps = rng.exponential(profile.gap_us * 1000.0, m) if profile.gap_us else np.zeros(m)
        reads = rng.random(m) < profile.reads
        if profile.access == "uniform":
            where = rng.integers(slots, size=m)
        elif profile.access == "zipf":
            where = ranks[np.minimum(np.searchsorted(weights, rng.random(m)), slots - 1)]
        else:
            where = np.empty(m, np.int64)
            for k in range(m):
                if (first + k) % profile.run == 0:
                    cursor = int(rng.integers(slots))
                where[k] = cursor
                cursor = (cursor + 1) % slots
        for k in range(m):
            t += gaps[k]
            yield Request(int(t), IoOp.READ if reads[k] else IoOp.WRITE, int(where[k]) * profile.size, profile.size)


def pages_of(request: Request, page_bytes: int) -> range:
    """The logical pages a request touches."""
    if request.length == 0:
        return range(0)
    return range(request.offset // page_bytes, math.ceil((request.offset + request.length) / page_bytes))
