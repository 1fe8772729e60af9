"""Kgil et al.'s flash disk cache (ISCA 2008) over a rig's chip: a DRAM page cache in front, the flash split into a
read region (clean copies of disk pages) and a write region (the host's writes, dirty until flushed), and a
disk behind. Each region is a log of blocks: pages go to its open block, and when it needs room its oldest block
is evicted (a read block's pages dropped, a write block's dirty pages read and written to the disk) and erased,
which also spreads wear evenly over the region. A controller is programmable when each block opens with the
policy's ECC strength and density for its wear (pseudo-SLC halves a block and the cache holds less), or fixed:
one t for life in MLC, Kgil's baseline being BCH t = 1.

A flash read the decoder gives up on is a miss for a clean page (the disk has it) and a loss for a dirty one.
The cache's life ends when a region has no block left to write into (Kgil's total failure), or, for a cache
that may not lose a write, at its first lost dirty page (``stop_at_loss``); both are reported.

Lifetime runs skip ahead as the drive's do (host/workload/lifetime.py), by requests: after a window replayed
operation by operation, every block owes the cycles its region erased per block in that window, scaled to the
requests skipped, given in bulk before its next erase.
"""
from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field

import numpy as np

from nandrig.chip.pattern import key
from nandrig.errors import NandrigError
from nandrig.host.ftl.flash import Flash
from nandrig.host.ftl.policy import BlockMode, EccPolicy
from nandrig.host.workload.replay import BusTiming, EngineLatency
from nandrig.host.workload.trace import IoOp, Request, pages_of


@dataclass(frozen=True)
class CacheConfig:
    read_share: float = 0.9  # of the good blocks, the read region's (Kgil: a 90/10 split)
    dram_pages: int = 64  # the DRAM page cache in front, LRU
    disk_ns: float = 8e6  # a disk access, read or write (a laptop drive's seek and rotation, as Kgil's Table 3)
    dram_ns: float = 100.0  # a DRAM page hit

    def __post_init__(self) -> None:
        if not 0.0 < self.read_share < 1.0 or self.dram_pages < 0:
            raise NandrigError("a disk cache needs a read share between 0 and 1 and a DRAM size >= 0")


@dataclass
class CacheCounters:
    requests: int = 0
    page_reads: int = 0
    dram_hits: int = 0
    flash_hits: int = 0
    misses: int = 0  # read from the disk
    flash_read_failures: int = 0  # the decoder gave up: a clean page became a miss, a dirty one a loss
    lost_dirty: int = 0
    disk_reads: int = 0
    disk_writes: int = 0  # dirty pages flushed on eviction
    flash_programs: int = 0
    flash_reads: int = 0
    erases: int = 0
    retired_blocks: int = 0
    pslc_opens: int = 0
    bulk_cycles: int = 0
    service_ns: float = 0.0

    @property
    def hit_rate(self) -> float:
        """Page reads served from DRAM or flash."""
        return (self.dram_hits + self.flash_hits) / self.page_reads if self.page_reads else 0.0


@dataclass
class Region:
    name: str
    blocks: list[int]
    log: deque = field(default_factory=deque)  # full blocks, oldest first
    free: list[int] = field(default_factory=list)
    open: int | None = None
    fill: int = 0
    erases: int = 0  # by the cache (bulk wear apart)


class CacheFull(NandrigError):
    """A region has no block left to write into."""


class DiskCache:
    """The cache over ``flash``: ``policy`` gives each block's t and mode as it opens (a fixed policy: one t, MLC)."""

    def __init__(self, flash: Flash, policy: EccPolicy, bus: BusTiming, config: CacheConfig = CacheConfig(),
                 engine: EngineLatency = EngineLatency()) -> None:
        self.flash, self.policy, self.bus, self.config, self.engine = flash, policy, bus, config, engine
        g = flash.geometry
        self.ppb = g.pages_per_block
        good = [b for b in range(g.blocks) if b not in flash.factory_bad()]
        n_read = max(2, int(round(config.read_share * len(good))))
        if len(good) - n_read < 2:
            raise NandrigError(f"{len(good)} good blocks: too few for a read and a write region of two each")
        self.regions = {"read": Region("read", good[:n_read], free=list(good[:n_read])),
                        "write": Region("write", good[n_read:], free=list(good[n_read:]))}
        self.pe = np.zeros(g.blocks, np.int64)
        self.owed = np.zeros(g.blocks, np.int64)
        self.mode = np.full(g.blocks, BlockMode.MLC, np.int8)
        self.t_of: dict[int, int] = {}  # physical page -> t it was programmed with
        self.where: dict[int, tuple[int, bool]] = {}  # disk page -> (physical page, dirty)
        self.owner: dict[int, int] = {}  # physical page -> disk page it holds (while it is that page's copy)
        self.seed: dict[int, int] = {}  # physical page -> its content
        self.version: dict[int, int] = {}  # disk page -> writes so far
        self.dram: OrderedDict[int, None] = OrderedDict()
        self.erased: set[int] = set()  # erased since it was last programmed
        self.counters = CacheCounters()

    # -- the host's view -------------------------------------------------------------------------------------
    def serve(self, req: Request) -> float:
        """One request: its service time in ns."""
        c = self.counters
        c.requests += 1
        ns = 0.0
        for lba in pages_of(req, self.flash.geometry.page_bytes):
            ns += self._write(lba) if req.op == IoOp.WRITE else self._read(lba) if req.op == IoOp.READ else 0.0
        c.service_ns += ns
        return ns

    def _read(self, lba: int) -> float:
        c = self.counters
        c.page_reads += 1
        if lba in self.dram:
            self.dram.move_to_end(lba)
            c.dram_hits += 1
            return self.config.dram_ns
        ns = 0.0
        if lba in self.where:
            ppn, dirty = self.where[lba]
            ok, ns = self._flash_read(ppn)
            if ok:
                c.flash_hits += 1
                self._to_dram(lba)
                return ns
            c.flash_read_failures += 1
            del self.where[lba], self.owner[ppn]
            if dirty:
                c.lost_dirty += 1  # the disk holds an older version: reported, never returned
                return ns
        c.misses += 1
        c.disk_reads += 1
        ns += self.config.disk_ns + self._place(lba, "read", dirty=False)
        self._to_dram(lba)
        return ns

    def _write(self, lba: int) -> float:
        self.version[lba] = self.version.get(lba, 0) + 1
        self._drop(lba)
        ns = self._place(lba, "write", dirty=True)
        self._to_dram(lba)
        return ns

    def _to_dram(self, lba: int) -> None:
        if self.config.dram_pages:
            self.dram[lba] = None
            self.dram.move_to_end(lba)
            if len(self.dram) > self.config.dram_pages:
                self.dram.popitem(last=False)

    def _drop(self, lba: int) -> None:
        """The flash copy of ``lba`` is stale."""
        if lba in self.where:
            ppn, _ = self.where.pop(lba)
            self.owner.pop(ppn, None)

    # -- the flash ---------------------------------------------------------------------------------------------
    def _place(self, lba: int, region: str, dirty: bool) -> float:
        """Program ``lba``'s current content into the region's open block; the time it took (an eviction's
        included)."""
        r = self.regions[region]
        ns = 0.0
        while True:
            if r.open is None:
                ns += self._open(r)
            b = r.open
            pages = self.flash.geometry.pages_in(self.mode[b] == BlockMode.PSLC)
            page = pages[r.fill]
            seed = key(lba, self.version.get(lba, 0)) & 0x7FFF_FFFF
            t = self.policy.t_for(int(self.pe[b]), self.flash.geometry.page_type(page), BlockMode(self.mode[b]))
            res = self.flash.program(b, page, seed, t)
            self.counters.flash_programs += 1
            ns += res.busy_ns + self.bus.page_in_ns
            r.fill += 1
            if r.fill == len(pages):
                r.log.append(b)
                r.open = None
            if res.fail:
                self._retire(r, b)
                continue
            ppn = b * self.ppb + page
            self.where[lba], self.owner[ppn], self.seed[ppn], self.t_of[ppn] = (ppn, dirty), lba, seed, t
            return ns

    def _flash_read(self, ppn: int) -> tuple[bool, float]:
        b, page = divmod(ppn, self.ppb)
        t = self.t_of[ppn]
        r = self.flash.read(b, page, self.seed[ppn], t)
        self.counters.flash_reads += 1
        ns = r.busy_ns + self.bus.page_out_ns + \
            self.engine.ns(1 if t else 0, t, self.flash.geometry.page_bytes)
        return r.uncorrectable == 0 and r.miscorrected == 0, ns

    def _open(self, r: Region) -> float:
        """A block to write into: a free one, else the region's oldest evicted; erased, its mode from the
        policy."""
        ns = 0.0
        while not r.free:
            if not r.log:
                raise CacheFull(f"the {r.name} region has no block left to write into")
            ns += self._evict(r, r.log.popleft())
        b = r.free.pop(0)
        if b not in self.erased:
            ns += self._erase(r, b)
            if b not in self.erased:
                return ns + self._open(r)
        self.erased.discard(b)
        self.mode[b] = self.policy.mode_for(int(self.pe[b]))
        self.counters.pslc_opens += int(self.mode[b] == BlockMode.PSLC)
        r.open, r.fill = b, 0
        return ns

    def _evict(self, r: Region, b: int) -> float:
        """Block ``b``'s copies leave the cache: dirty pages are read and written to the disk first."""
        ns = 0.0
        for ppn in range(b * self.ppb, (b + 1) * self.ppb):
            lba = self.owner.pop(ppn, None)
            if lba is None:
                continue
            _, dirty = self.where.pop(lba)
            if dirty:
                ok, t_read = self._flash_read(ppn)
                ns += t_read
                if ok:
                    self.counters.disk_writes += 1
                    ns += self.config.disk_ns
                else:
                    self.counters.flash_read_failures += 1
                    self.counters.lost_dirty += 1
        r.free.append(b)
        return ns

    def _erase(self, r: Region, b: int) -> float:
        ns = 0.0
        owed, self.owed[b] = int(self.owed[b]), 0
        if owed:
            done, failed = self.flash.wear(b, owed, self.mode[b] == BlockMode.PSLC)
            self.counters.bulk_cycles += done
            self.pe[b] += done
            if failed:
                self._retire(r, b)
                return ns
        res = self.flash.erase(b)
        self.counters.erases += 1
        r.erases += 1
        self.pe[b] += 1
        ns += res.busy_ns
        if res.fail:
            self._retire(r, b)
        else:
            self.erased.add(b)
        return ns

    def _retire(self, r: Region, b: int) -> None:
        """``b`` failed an erase or a program: what it holds leaves as on eviction (dirty pages to the disk)."""
        self.counters.retired_blocks += 1
        self._evict(r, b)
        for pool in (r.free, r.log):
            if b in pool:
                pool.remove(b)
        if r.open == b:
            r.open = None
        r.blocks.remove(b)

    def age(self, cycles_per_block: dict[str, float]) -> None:
        """Every block of each region owes that many more P/E, given in bulk before its next erase (a free
        block is erased again first)."""
        for name, cycles in cycles_per_block.items():
            blocks = self.regions[name].blocks
            self.owed[blocks] += int(round(cycles))
            self.erased.difference_update(blocks)


@dataclass(frozen=True)
class CacheWindow:
    skipped_requests: int  # the requests the skip before this window stands for
    requests: int
    hit_rate: float
    erases: dict  # per region, this window
    mean_pe: dict  # per region, at its end
    retired_blocks: int
    lost_dirty: int
    flash_read_failures: int
    service_ns: float
    energy_pj: int | None


@dataclass
class CacheLife:
    requests: int  # served, replayed and skipped, until the end
    end: str  # "no room", "dirty page lost" (stop_at_loss) or "workload ended"
    windows: list[CacheWindow]
    counters: CacheCounters
    # the request that lost the first dirty page seen in a window (counted as ``requests``): a skip hides the
    # losses it would have had, so with skips this is an upper bound (a rare loss comes late by up to
    # (skip + window) / window); `--skip 0` replays every request
    first_loss: int | None = None

    def summary(self) -> dict:
        return {"requests": self.requests, "end": self.end, "first_loss_request": self.first_loss,

                "hit_rate": self.counters.hit_rate, "counters": asdict(self.counters),
                "windows": [asdict(w) for w in self.windows]}


def run_cache_to_end(cache: DiskCache, requests: Iterator[Request], window: int, skip: int = 0,
                     warm_up: int = 0, max_windows: int = 10_000, stop_at_loss: bool = False) -> CacheLife:
    """``warm_up`` requests, then windows of ``window`` requests, each after ``skip`` requests' worth of wear
    given in bulk (each region's erases per block per request in the window before), until the cache's end."""
    c = cache.counters
    life = CacheLife(0, "workload ended", [], c)
    stream = iter(requests)
    last: tuple[int, dict] | None = None
    for k in range(max_windows + 1):
        stood_for = 0
        if k > 1 and skip and last is not None:
            n, per_region = last
            cache.age({name: skip * per_region[name] / (n * max(len(cache.regions[name].blocks), 1))
                       for name in cache.regions})
            stood_for = skip
        before = asdict(c)
        erases_at = {name: r.erases for name, r in cache.regions.items()}
        cache.flash.energy_pj()
        count = warm_up if k == 0 else window
        served = 0
        try:
            for req in _take(stream, count):
                cache.serve(req)
                served += 1
                if c.lost_dirty and life.first_loss is None:
                    life.first_loss = life.requests + served
                    if stop_at_loss:
                        life.end = "dirty page lost"
                        break
        except CacheFull:
            life.end = "no room"
        erases_in = {name: r.erases - erases_at[name] for name, r in cache.regions.items()}
        reads = c.page_reads - before["page_reads"]
        hits = c.dram_hits + c.flash_hits - before["dram_hits"] - before["flash_hits"]
        life.windows.append(CacheWindow(
            stood_for, served, hits / reads if reads else 0.0, erases_in,
            {name: float(np.mean(cache.pe[r.blocks])) if r.blocks else 0.0 for name, r in cache.regions.items()},
            c.retired_blocks, c.lost_dirty, c.flash_read_failures, c.service_ns - before["service_ns"],
            cache.flash.energy_pj()))
        life.requests += stood_for + served
        if k:
            last = (served, erases_in)
        if life.end != "workload ended" or served < count:
            break
    return life


def _take(stream: Iterator[Request], n: int) -> Iterator[Request]:
    for _ in range(n):
        req = next(stream, None)
        if req is None:
            return
        yield req
