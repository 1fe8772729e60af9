"""A page-mapped flash translation layer over a :class:`~nandrig.host.ftl.flash.Flash`: logical pages to physical
pages, garbage collection (greedy or cost-benefit), dynamic and static wear leveling, factory and grown bad
blocks, over-provisioning, and the ECC strength and density (MLC or pseudo-SLC) of every block from a policy.

Every host write goes to the open host block in page order; garbage collection and wear leveling move pages to
a block of their own, so data they move (older, colder) does not mix with fresh writes. A block's mode is
chosen when it is opened, from the policy and the block's wear, and holds until it is erased again.

Under an LDPC policy with AccessEval (FlexLevel), data the host reads often and whose reads need soft sensing
gathers until it fills a reduced-state block (three quarters of an MLC block's pages), which is then programmed
whole while the host is idle (``background``); the capacity it gives up is paid for in garbage collection, as
the drive's logical capacity is fixed.
"""
from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field

import numpy as np

from nandrig.chip.geometry import PageType
from nandrig.errors import NandrigError
from nandrig.host.ftl.flash import Flash
from nandrig.host.ftl.policy import BlockMode, EccPolicy, LdpcSensing
from nandrig.host.ftl.reduced import ReducedLayout, content_bits

UNMAPPED = -1
_STATE_ARRAYS = ("state", "pe", "mode", "l2p", "p2l", "seed", "t_of", "valid", "written_at", "fill", "clean", "owed",
                 "lost", "hot", "candidate")
_LATER_ARRAYS = ("hot", "candidate")  # AccessEval's: a checkpoint from before them restores without


class FlashFull(NandrigError):
    """No free block is left to write into: every spare has been retired (the end of the flash's life)."""


class BlockState(enum.IntEnum):
    FREE = 0
    OPEN = 1
    FULL = 2
    BAD = 3  # marked by the factory
    RETIRED = 4  # failed an erase or a program


class Victim(enum.Enum):
    """How garbage collection picks the block to reclaim."""

    GREEDY = "greedy"  # the fewest valid pages
    COST_BENEFIT = "cost-benefit"  # (1 - u) age / 2u, Kawaguchi et al.: old, mostly stale blocks first


@dataclass(frozen=True)
class FtlConfig:
    over_provisioning: float = 0.10  # of the good blocks' capacity kept from the host
    victim: Victim = Victim.GREEDY
    gc_free_blocks: int = 2  # collect while fewer free blocks remain
    static_wl_spread: int | None = 200  # move cold data when erase counts spread more (None: no static leveling)

    def __post_init__(self) -> None:
        if not 0.0 < self.over_provisioning < 0.9:
            raise NandrigError(f"over-provisioning {self.over_provisioning}: between 0 and 0.9 of the capacity")
        if self.gc_free_blocks < 1:
            raise NandrigError("garbage collection needs at least one free block to move pages into")


@dataclass
class FtlCounters:
    host_writes: int = 0
    host_reads: int = 0
    flash_programs: int = 0
    programmed_t: int = 0  # the sum of the programs' t
    flash_reads: int = 0
    erases: int = 0
    gc_moves: int = 0  # pages garbage collection moved
    wl_moves: int = 0  # pages static wear leveling moved
    uncorrectable_reads: int = 0  # host reads reported lost (the decoder gave up)
    uncorrectable_codewords: int = 0  # on every page read: the decoder gave up, or decoded wrong (caught)
    lost_pages: int = 0  # logical pages whose data was lost (read uncorrectable during a move)
    silent_caught: int = 0  # codewords decoded to other data than was written, caught by the end-to-end check
    retired_blocks: int = 0
    bit_errors: int = 0  # raw, on every page read
    bits_read: int = 0
    busy_ns: int = 0  # the array's time, all operations
    decoded_reads: int = 0  # page reads through the decoder (t > 0)
    decoded_t: int = 0  # the sum of their t (a decoder's time grows with t)
    pslc_refused: int = 0  # blocks the policy wanted in pseudo-SLC that opened as MLC: no room left for them
    bulk_cycles: int = 0  # P/E cycles given in bulk before an erase (``Ftl.age_evenly``)
    # an LDPC policy's reads (host/ftl/sensing.py): every read's sensing levels (one read counts as many page
    # reads, each costing the first one's array and bus time), those that needed more than the hard read, and
    # those beyond the measured reach (reported uncorrectable)
    sensed_reads: int = 0
    sensed_levels: int = 0
    soft_reads: int = 0
    beyond_reach: int = 0
    # AccessEval: reduced-state blocks programmed, logical pages moved there, and their reads
    reduced_blocks: int = 0
    reduced_moves: int = 0
    reduced_reads: int = 0
    reduced_refused: int = 0  # a block's worth of hot data left in MLC: no room for the capacity it costs

    @property
    def write_amplification(self) -> float:
        return self.flash_programs / self.host_writes if self.host_writes else 0.0


@dataclass
class Ftl:
    flash: Flash
    policy: EccPolicy
    config: FtlConfig = field(default_factory=FtlConfig)
    initial_wear: np.ndarray | None = None  # P/E per block before the FTL's first erase
    factory_bad: frozenset[int] | None = None  # the flash's factory bad blocks where known (None: scanned)

    def __post_init__(self) -> None:
        g = self.flash.geometry
        self.ppb, self.n_blocks = g.pages_per_block, g.blocks
        self.state = np.full(g.blocks, BlockState.FREE, dtype=np.int8)
        for b in self.flash.factory_bad() if self.factory_bad is None else self.factory_bad:
            self.state[b] = BlockState.BAD
        self.pe = np.zeros(g.blocks, np.int64) if self.initial_wear is None else np.array(self.initial_wear, np.int64)
        self.mode = np.full(g.blocks, BlockMode.MLC, dtype=np.int8)
        self.pages = {m: np.array(g.pages_in(m == BlockMode.PSLC), np.int64) for m in BlockMode}
        self.sensing = self.policy if isinstance(self.policy, LdpcSensing) else None
        self.layout = ReducedLayout(g.page_map, g.page_bytes, g.raw_bytes)
        # logical pages a block holds in each mode
        self.capacity = np.array([len(self.pages[BlockMode.MLC]), len(self.pages[BlockMode.PSLC]), self.layout.slots])
        good = int(np.sum(self.state == BlockState.FREE))
        spare = self.config.gc_free_blocks + 2  # the two open blocks and collection's headroom never hold host data
        self.logical_pages = int((good - spare) * self.ppb * (1.0 - self.config.over_provisioning))
        if self.logical_pages < 1:
            raise NandrigError(f"{good} good blocks leave no room for data beside {spare} kept free")
        self.l2p = np.full(self.logical_pages, UNMAPPED, np.int64)
        self.p2l = np.full(g.blocks * self.ppb, UNMAPPED, np.int64)
        self.seed = np.zeros(self.logical_pages, np.int64)  # each logical page's content (its pattern seed)
        self.t_of = np.zeros(g.blocks * self.ppb, np.int16)  # the t each physical page was programmed with
        self.valid = np.zeros(g.blocks, np.int64)
        self.written_at = np.zeros(g.blocks, np.int64)  # the host write count when a block was last programmed
        self.fill = np.zeros(g.blocks, np.int64)  # pages of its mode's order programmed so far
        self.counters = FtlCounters()
        self.clean = np.zeros(g.blocks, bool)  # erased by the FTL since: a block is erased before its first use
        self.owed = np.zeros(g.blocks, np.int64)  # cycles a block is aged by (counted in pe) but not yet given
        self.open: dict[str, int | None] = {"host": None, "move": None}  # opened when a page needs one
        self.lost = np.zeros(self.logical_pages, bool)
        self.hot = np.zeros(self.logical_pages, np.int64)  # host reads since the page was last written
        self.candidate = np.zeros(self.logical_pages, bool)  # AccessEval's: waiting for a reduced block
        self.level_due = True  # erase counts or the full blocks changed since static leveling last looked

    # -- its state, as a checkpoint keeps it ---------------------------------------------------------------------
    def snapshot(self) -> tuple[dict[str, np.ndarray], dict]:
        """What the FTL knows (the flash holds the rest): its arrays, and its counters and open blocks."""
        return {k: getattr(self, k) for k in _STATE_ARRAYS}, {"counters": asdict(self.counters), "open": self.open}

    def restore(self, arrays: dict[str, np.ndarray], rest: dict) -> None:
        """Take up a :meth:`snapshot` of an FTL over the same flash, policy and configuration."""
        for k in _STATE_ARRAYS:
            if k in _LATER_ARRAYS and k not in arrays:
                continue
            mine = getattr(self, k)
            if arrays[k].shape != mine.shape:
                raise NandrigError(f"an FTL snapshot's {k} has shape {arrays[k].shape}, this FTL's {mine.shape}")
            setattr(self, k, arrays[k].astype(mine.dtype))
        self.counters = FtlCounters(**rest["counters"])
        self.open = dict(rest["open"])
        self.level_due = True

    # -- the host's view -------------------------------------------------------------------------------------
    def write(self, lpn: int, seed: int) -> None:
        """Logical page ``lpn`` now holds the page the pattern ``seed`` makes."""
        self._check(lpn)
        self.counters.host_writes += 1
        self._collect()  # first: the host opens its next block only from what collection leaves free
        self._place(lpn, seed, "host")
        self.lost[lpn] = False
        self.hot[lpn], self.candidate[lpn] = 0, False

    def read(self, lpn: int) -> bool:
        """Read logical page ``lpn`` and check it end to end; whether its data came back intact (an unwritten or
        lost page: False)."""
        self._check(lpn)
        self.counters.host_reads += 1
        ppn = int(self.l2p[lpn])
        if ppn == UNMAPPED:
            return False
        levels_before = self.counters.sensed_levels
        ok = self._read_page(ppn, int(self.seed[lpn])) and not self.lost[lpn]
        if not ok:
            self.counters.uncorrectable_reads += 1
        if self.sensing and self.sensing.access_eval:
            self._access_eval(lpn, ppn, ok, self.counters.sensed_levels - levels_before)
        return ok

    def background(self) -> bool:
        """Work a controller does while the host is idle: AccessEval's move of a reduced block's worth of waiting
        pages, when there are that many. Whether it did any."""
        if self.sensing is None or int(self.candidate.sum()) < self.layout.slots:
            return False
        self._move_to_reduced()
        return True

    def _access_eval(self, lpn: int, ppn: int, ok: bool, levels: int) -> None:
        """Count a host read of ``lpn``; one read often that needed soft sensing joins the pages waiting for a
        reduced block (moved in the background)."""
        ae = self.sensing.access_eval
        self.hot[lpn] += 1
        if ok and self.mode[ppn // self.ppb] != BlockMode.REDUCED and self.hot[lpn] >= ae.hot_reads \
                and levels >= ae.min_levels:
            self.candidate[lpn] = True

    def holds(self, lpn: int) -> bool:
        """Whether logical page ``lpn`` holds data (written and not trimmed since)."""
        self._check(lpn)
        return bool(self.l2p[lpn] != UNMAPPED)

    def trim(self, lpn: int) -> None:
        self._check(lpn)
        self._invalidate(lpn)
        self.l2p[lpn] = UNMAPPED
        self.hot[lpn], self.candidate[lpn] = 0, False

    # -- placement -------------------------------------------------------------------------------------------
    def _place(self, lpn: int, seed: int, stream: str) -> None:
        """Program the next page of the stream's open block with ``seed`` for ``lpn``; a program that fails retires
        the block, its valid pages move, and the page goes to a fresh block."""
        while True:
            if self.open[stream] is None:
                if stream == "host":  # collection keeps its free blocks after the host takes one
                    self._collect(keep=self.config.gc_free_blocks + 1)
                self.open[stream] = self._take_free()
            b = self.open[stream]
            mode = BlockMode(self.mode[b])
            page = int(self.pages[mode][self.fill[b]])
            t = self.policy.t_for(int(self.pe[b]), self.flash.geometry.page_type(page), mode)
            r = self.flash.program(b, page, seed, t)
            self.counters.flash_programs += 1
            self.counters.programmed_t += t
            self.counters.busy_ns += r.busy_ns
            self.fill[b] += 1
            if r.fail:
                self._retire(b, stream)
                continue
            ppn = b * self.ppb + page
            self._invalidate(lpn)
            self.l2p[lpn], self.p2l[ppn], self.t_of[ppn], self.seed[lpn] = ppn, lpn, t, seed
            self.valid[b] += 1
            self.written_at[b] = self.counters.host_writes
            if self.fill[b] == len(self.pages[mode]):
                self.state[b] = BlockState.FULL
                self.level_due = True
                self.open[stream] = None  # the next one is opened when a page needs it
            return

    def _invalidate(self, lpn: int) -> None:
        old = int(self.l2p[lpn])
        if old != UNMAPPED:
            self.p2l[old] = UNMAPPED
            self.valid[old // self.ppb] -= 1

    def _read_page(self, ppn: int, seed: int) -> bool:
        b, page = divmod(ppn, self.ppb)
        if self.mode[b] == BlockMode.REDUCED:
            return self._read_reduced(b, page, seed)
        t = int(self.t_of[ppn])
        r = self.flash.read(b, page, seed, t)
        c = self.counters
        c.flash_reads += 1
        c.busy_ns += r.busy_ns
        c.bit_errors += r.raw_errors
        c.bits_read += self.flash.geometry.page_bytes * 8
        if self.sensing:
            return self._sensed(r.raw_errors, self.flash.geometry.raw_bytes * 8, self.flash.geometry.page_type(page),
                                1, r.busy_ns)
        c.silent_caught += r.miscorrected
        c.uncorrectable_codewords += r.uncorrectable + r.miscorrected
        c.decoded_reads += t > 0
        c.decoded_t += t
        return r.uncorrectable == 0 and r.miscorrected == 0

    def _sensed(self, errors: int, bits: int, page_type: PageType | None, reads: int, busy_ns: int) -> bool:
        """An LDPC read of ``reads`` page reads that found ``errors`` in ``bits``: the further sensing levels its
        raw BER needs (the measured reach's; ``page_type`` None: data on both), each as many page reads again;
        whether it decodes. A read beyond the reach has sensed every level the table knows and is reported
        uncorrectable."""
        levels = self.sensing.reach.levels(errors / bits, page_type)
        c = self.counters
        used = levels or self.sensing.reach.max_levels
        c.sensed_reads += 1
        c.sensed_levels += used
        c.soft_reads += used > 1
        c.flash_reads += (used - 1) * reads
        c.busy_ns += (used - 1) * busy_ns
        if levels is None:
            c.beyond_reach += 1
            c.uncorrectable_codewords += 1
        return levels is not None

    def _read_reduced(self, b: int, slot: int, seed: int) -> bool:
        """A logical page in reduced state: the wordlines holding it read with VR2 and VR3 moved, its data bits
        through ReduceCode, against the pattern its seed makes."""
        reads, busy = {}, 0
        for wl in self.layout.wordlines_of(slot):
            lower, upper, ns = self.flash.read_wordline(b, wl, self.sensing.access_eval.refs)
            reads[wl], busy = (lower, upper), busy + ns
        got = self.layout.slot_bits(slot, reads)
        errors = int(np.count_nonzero(got != content_bits(seed, self.flash.geometry.page_bytes)))
        c = self.counters
        c.reduced_reads += 1
        c.flash_reads += 2 * len(reads)
        c.busy_ns += busy
        c.bit_errors += errors
        c.bits_read += got.size
        return self._sensed(errors, got.size, None, 2 * len(reads), busy)

    def _move_to_reduced(self) -> None:
        """AccessEval: a reduced block's worth of hot pages, each read once more and checked, programmed into a
        free block in reduced state and remapped there; a page read lost stays where it is. No room for the
        capacity a reduced block gives up: the pages stay in MLC (counted)."""
        lpns = [int(x) for x in np.flatnonzero(self.candidate)[:self.layout.slots]]
        self.candidate[lpns] = False
        if not self._room_for(-1, BlockMode.REDUCED):  # first: collection only ends when the data fits
            self.counters.reduced_refused += 1
            return
        self._collect(keep=self.config.gc_free_blocks + 1)  # a block for it, collection's free ones kept
        read_lost = [lpn for lpn in lpns if not self._read_page(int(self.l2p[lpn]), int(self.seed[lpn]))]
        if read_lost:  # left in MLC, lost, where a later read reports them; the others wait again
            self.lost[read_lost] = True
            self.counters.lost_pages += len(read_lost)
            self.candidate[lpns] = True
            self.candidate[read_lost] = False
            return
        b = self._take_free(BlockMode.REDUCED)
        c = self.counters
        for page, data in enumerate(self.layout.block_pages([int(self.seed[lpn]) for lpn in lpns])):
            if not data:
                continue
            r = self.flash.program_data(b, page, data)
            c.flash_programs += 1
            c.busy_ns += r.busy_ns
            if r.fail:  # nothing in it was mapped yet: the pages stay where they are, the block retires
                self.state[b] = BlockState.RETIRED
                c.retired_blocks += 1
                self.level_due = True
                self.candidate[lpns] = True
                return
        for slot, lpn in enumerate(lpns):
            ppn = b * self.ppb + slot  # a reduced block's slots are its page numbers in the FTL's maps
            self._invalidate(lpn)
            self.l2p[lpn], self.p2l[ppn], self.t_of[ppn] = ppn, lpn, 0
        self.valid[b], self.fill[b] = len(lpns), self.layout.slots
        self.written_at[b] = c.host_writes
        self.state[b] = BlockState.FULL
        c.reduced_blocks += 1
        c.reduced_moves += len(lpns)
        self.level_due = True

    def _take_free(self, mode: BlockMode | None = None) -> int:
        """Dynamic wear leveling: the least-worn free block, opened in ``mode`` or the one the policy gives its
        wear."""
        free = np.flatnonzero(self.state == BlockState.FREE)
        if not len(free):
            raise FlashFull("the flash has no free block left: every spare block is retired (end of life)")
        b = int(free[np.argmin(self.pe[free])])
        if not self.clean[b]:  # what it held before the FTL (an earlier campaign's pages) goes first
            self._erase(b)
            if self.state[b] == BlockState.RETIRED:
                return self._take_free(mode)
        self.state[b] = BlockState.OPEN
        self.clean[b] = False
        self.mode[b] = self.policy.mode_for(int(self.pe[b])) if mode is None else mode
        if self.mode[b] == BlockMode.PSLC and not self._room_for(b, BlockMode.PSLC):
            self.mode[b] = BlockMode.MLC  # the drive's capacity is fixed: density gives way to it
            self.counters.pslc_refused += 1
        self.fill[b] = 0
        return b

    def _room_for(self, b: int, mode: BlockMode) -> bool:
        """Whether block ``b`` (-1: a free one) can open in ``mode`` and the flash still hold every logical page
        beside the blocks collection keeps free and the two open ones (free blocks counted in MLC)."""
        alive = np.isin(self.state, (BlockState.FREE, BlockState.OPEN, BlockState.FULL))
        if b >= 0:
            alive[b] = False
        pages = self.capacity[self.mode]
        pages[self.state == BlockState.FREE] = self.ppb
        room = int(pages[alive].sum()) + int(self.capacity[mode]) - (0 if b >= 0 else self.ppb)
        return room - (self.config.gc_free_blocks + 2) * self.ppb >= self.logical_pages

    # -- reclaiming ------------------------------------------------------------------------------------------
    def _collect(self, keep: int | None = None) -> None:
        """Reclaim blocks while fewer than ``keep`` (``gc_free_blocks``) are free: a move that finds no free block
        is the flash's end, so collection always starts with one to spare beside a victim that retires."""
        while int(np.sum(self.state == BlockState.FREE)) < (keep or self.config.gc_free_blocks):
            victim = self._victim()
            if victim is None:
                return
            self._reclaim(victim, "gc")
        self._level()

    def _victim(self) -> int | None:
        full = np.flatnonzero(self.state == BlockState.FULL)
        if not len(full):
            return None
        u = self.valid[full] / self.capacity[self.mode[full]]
        if self.config.victim == Victim.GREEDY:
            return int(full[np.argmin(u)])
        age = self.counters.host_writes - self.written_at[full] + 1
        score = np.where(u == 0, np.inf, (1.0 - u) * age / (2.0 * np.maximum(u, 1e-12)))
        return int(full[np.argmax(score)])

    def _level(self) -> None:
        """Static wear leveling: when the most-worn block in use has seen ``static_wl_spread`` more erases than
        the least-worn full one, that one's (cold) data moves so its block joins the free pool."""
        spread = self.config.static_wl_spread
        if spread is None or not self.level_due:  # nothing it looks at has changed since: a write costs no scan
            return
        self.level_due = False
        full = np.flatnonzero(self.state == BlockState.FULL)
        in_use = np.flatnonzero(np.isin(self.state, (BlockState.FULL, BlockState.OPEN, BlockState.FREE)))
        if not len(full) or self.pe[in_use].max() - self.pe[full].min() <= spread:
            return
        self._reclaim(int(full[np.argmin(self.pe[full])]), "wl")

    def _reclaim(self, b: int, why: str) -> None:
        """Move block ``b``'s valid pages to the move stream, then erase it."""
        moved = self._move_valid(b)
        if why == "gc":
            self.counters.gc_moves += moved
        else:
            self.counters.wl_moves += moved
        self._erase(b)

    def _move_valid(self, b: int) -> int:
        """Block ``b``'s valid pages, each read and checked, to the move stream; how many."""
        moved = 0
        for ppn in range(b * self.ppb, (b + 1) * self.ppb):
            lpn = int(self.p2l[ppn])
            if lpn == UNMAPPED:
                continue
            if not self._read_page(ppn, int(self.seed[lpn])):
                self.counters.lost_pages += 1
                self.lost[lpn] = True  # moved as it was read: a later host read reports it lost
            self._place(lpn, int(self.seed[lpn]), "move")
            moved += 1
        return moved

    def age_evenly(self, cycles: int) -> int:
        """Every block in use counts ``cycles`` more P/E at once, as if the workload had gone on that long with
        the wear evenly spread (host/workload/lifetime.py); the chip gives each block its cycles in bulk just
        before the FTL next erases it, when what it holds is no longer needed (a free block is erased again
        first). How many blocks were aged."""
        alive = np.flatnonzero(np.isin(self.state, (BlockState.FREE, BlockState.OPEN, BlockState.FULL)))
        self.pe[alive] += cycles
        self.owed[alive] += cycles
        self.level_due = True
        self.clean[self.state == BlockState.FREE] = False
        return len(alive)

    def _erase(self, b: int) -> None:
        self.level_due = True
        owed, self.owed[b] = int(self.owed[b]), 0
        if owed:  # the cycles it was aged by, in the mode it was last opened in, before this erase
            done, failed = self.flash.wear(b, owed, self.mode[b] == BlockMode.PSLC)  # a reduced block wears as MLC
            self.counters.bulk_cycles += done
            if failed:  # worn out on the way
                self.pe[b] -= owed - done
                self.state[b], self.valid[b] = BlockState.RETIRED, 0
                self.counters.retired_blocks += 1
                return
        r = self.flash.erase(b)
        self.counters.erases += 1
        self.counters.busy_ns += r.busy_ns
        self.pe[b] += 1
        self.valid[b] = 0
        self.clean[b] = not r.fail
        if r.fail:
            self.state[b] = BlockState.RETIRED
            self.counters.retired_blocks += 1
        else:
            self.state[b] = BlockState.FREE

    def _retire(self, b: int, stream: str) -> None:
        """A program failed on ``b``: it takes no more data; its valid pages move and it is retired."""
        self.state[b] = BlockState.RETIRED
        self.counters.retired_blocks += 1
        self.level_due = True
        self.open[stream] = None
        self._move_valid(b)
        self.valid[b] = 0

    def _check(self, lpn: int) -> None:
        if not 0 <= lpn < self.logical_pages:
            raise NandrigError(f"logical page {lpn} is outside 0..{self.logical_pages - 1}")
