"""The virtual MLC NAND chip: the ground truth every rig and test is checked against.

Two APIs share one state and one physics (:mod:`.physics`):

* the byte path (:meth:`VirtualChip.read`) draws every cell's threshold
  voltage and returns the bytes a real chip would;
* the statistical path (:meth:`VirtualChip.measure`) returns per-page bit-error
  counts drawn from the exact error probabilities of pattern-programmed pages,
  without materialising cells: thousands of times faster, same distribution.

Page order within a block (``page_map``) is the usual MLC shuffle: the lower
page of wordline k+1 is programmed before the upper page of wordline k, so a
wordline only sees interference from its neighbour's upper-page step.

Program-order rules, as a real part enforces them (status FAIL, nothing
written): pages go in increasing order within a block (skipping is allowed);
an upper page needs its wordline's lower page. Programming the last page
again without erase (a second partial program, NOP > 1) is accepted as many
MLC parts accept it, with its physics: bits only go 1 -> 0 (new data = old
AND new), and the neighbouring wordlines' erased cells get disturbed.

Randomness is keyed by physical coordinates and history (:mod:`.rng`), so the
same operations give the same bytes whatever happens on other blocks.
"""
from __future__ import annotations

import dataclasses
import hashlib
import math
import secrets
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.special import ndtr

from nandrig.virtual_chip import rng
from nandrig.virtual_chip.state_file import load_state, record, save_state
from nandrig.virtual_chip.power import EnergyMeter
from nandrig.virtual_chip.physics import (
    LSB_OF_STATE, MSB_OF_STATE, STATE_OF_BITS, PageCondition, Physics, lsb_only_error_probs, one_page_error_probs,
    page_error_probs,
)
from nandrig.virtual_chip.profile import ChipProfile, load_profile
from nandrig.characterization.arrhenius import acceleration_factor
from nandrig.chip.geometry import page_map, page_of
from nandrig.chip.onfi import (UNIQUE_ID_BYTES, UNIQUE_ID_COPIES, Feature, StatusBit,
                               unique_id_copies)
from nandrig.chip.pattern import bits, flips, page_seed, prbs31_bytes
from nandrig.errors import NandrigError

STATUS_FAIL = StatusBit.FAIL
STATUS_READY = StatusBit.RDY | StatusBit.ARDY
STATUS_NOT_PROTECTED = StatusBit.WP_N
_STATUS_DONE = int(STATUS_READY | STATUS_NOT_PROTECTED)  # an int: IntFlag's | runs in Python, at every operation
FEATURE_TIMING_MODE = Feature.TIMING_MODE
NS_PER_HOUR = 3_600_000_000_000
STATE_VERSION = 2  # 2: blocks keep their wear apart from their P/E count


@record
@dataclass
class PageData:
    """What a page holds: a PRBS pattern seed (cheap) or explicit bytes. ``ecc_t``: a pattern page whose spare
    holds BCH parity at that t, as the virtual rig writes it on its statistical read path, which draws the page's
    errors and decodes by count, never making its bytes (its spare reads back as pattern on the byte path)."""

    seed: int | None = None
    raw: bytes | None = None
    ecc_t: int = 0

    def bytes(self, n: int) -> bytes:
        return self.raw if self.raw is not None else prbs31_bytes(self.seed, n)


@record
@dataclass
class Wordline:
    lsb: PageData | None = None
    msb: PageData | None = None
    n: float = 0.0  # the block's wear (MLC-equivalent P/E) when programmed: what the physics ages by
    t_prog_h: float = 0.0  # equivalent-hours clock at the last program of this wordline
    serial: int = 0  # program events on this wordline since erase (keys its noise)
    pd: int = 0  # extra program pulses from neighbouring wordlines
    coupled: bool = False  # the next wordline's upper page was programmed after this one's
    # PV1..PV3's offsets in steps when its upper page was programmed (the design's verify feature); None: unmoved
    verify: tuple[int, ...] | None = None


@record
@dataclass
class Block:
    pe: int = 0  # erases: the P/E count every rig and store counts
    wear: float = 0.0  # MLC-equivalent cycles: a pSLC cycle stresses the oxide less (Physics.pslc_stress)
    reads: int = 0  # reads since erase
    last_page: int = -1
    wls: dict[int, Wordline] = field(default_factory=dict)


class BlockTable(dict):
    """The chip's blocks, noting each one that may have changed since ``take_touched``: every access that hands
    a block out counts (its caller may change it), so a save that rewrites only those misses no wear. Keys,
    ``in`` and ``len`` hand out no block; nor does ``dict(table)`` (CPython copies a dict subclass without its
    methods), which only ``state`` uses, for the saver."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.touched: set[int] = set(self)  # a new table: all of it unsaved

    def __getitem__(self, block: int) -> "Block":
        self.touched.add(block)
        return super().__getitem__(block)

    def __setitem__(self, block: int, value: "Block") -> None:
        self.touched.add(block)
        super().__setitem__(block, value)

    def __delitem__(self, block: int) -> None:
        self.touched.add(block)
        super().__delitem__(block)

    def setdefault(self, block: int, default: "Block | None" = None) -> "Block":
        self.touched.add(block)
        return super().setdefault(block, default)

    def get(self, block: int, default=None):
        self.touched.add(block)
        return super().get(block, default)

    def pop(self, block: int, *default):
        self.touched.add(block)
        return super().pop(block, *default)

    def values(self):
        self.touched.update(self)
        return super().values()

    def items(self):
        self.touched.update(self)
        return super().items()

    def copy(self) -> dict:
        self.touched.update(self)
        return super().copy()

    def popitem(self):
        raise TypeError("a chip's blocks are not popped")

    def update(self, *args, **kw) -> None:
        new = dict(*args, **kw)
        self.touched.update(new)
        super().update(new)

    def clear(self) -> None:
        self.touched.update(self)
        super().clear()

    def take_touched(self) -> set[int]:
        """The blocks that may have changed since the last call (the caller saves them)."""
        out, self.touched = self.touched, set()
        return out


@dataclass(frozen=True)
class ChipOp:
    status: int
    busy_ns: int

    @property
    def fail(self) -> bool:
        return bool(self.status & STATUS_FAIL)


@dataclass(frozen=True)
class ChipRead:
    data: bytes
    busy_ns: int


@dataclass(frozen=True)
class PageCounts:
    """Statistical-path result for a run of pages: errors against the programmed data."""

    pages: np.ndarray
    err_1to0: np.ndarray  # stored 1, read 0
    err_0to1: np.ndarray  # stored 0, read 1
    bits: int  # bits per page (data + spare)
    busy_ns: np.ndarray

    @property
    def errors(self) -> np.ndarray:
        return self.err_1to0 + self.err_0to1


class VirtualChip:
    def __init__(self, profile: ChipProfile | str = "mlc-3x", seed: int = 0) -> None:
        self.profile = load_profile(profile) if isinstance(profile, str) else profile
        self.seed = int(seed)
        g = self.profile.geometry
        self.geometry = g
        self.cells = g.raw_page_bytes * 8
        self.instance = secrets.randbits(32)  # this chip's life: a fresh chip of the same seed has another
        self.clock_ns = 0
        self.equiv_h = 0.0
        self.temperature_c = 25.0
        self.busy_ns_by_phase: Counter[str] = Counter()  # array time so far per phase (a rig's schedule diffs it)
        self.power_up()
        self.blocks = BlockTable()
        self._phys_cache: dict[int, Physics] = {}
        self._onset_cache: dict[int, tuple[float, float]] = {}
        self._stat_draws = rng.Rekeyed()
        self.factory_bad = self._factory_bad()
        for b in self.factory_bad:  # marked where the part's maker marks them (nandrig.chip.vendor)
            self.blocks[b] = self._marked_block()
        t = self.profile.timing
        self._time_scale = math.exp(t.chip_sigma * rng.generator(rng.TIMING, self.seed, -1).standard_normal())

    def _factory_bad(self) -> frozenset[int]:
        """Blocks the factory found bad: each with the profile's rate, block 0 never; a LUN with more than the
        parameter page's maximum fails the factory's screen, so the worst of them are what a part ships with."""
        g, d = self.geometry, self.profile.defects
        if d.factory_bad is not None:
            return frozenset(d.factory_bad)
        bad: set[int] = set()
        for lun in range(g.luns):
            first = lun * g.blocks_per_lun
            draws = sorted((rng.uniform(rng.DEFECT, self.seed, b, 0), b)
                           for b in range(max(first, 1), first + g.blocks_per_lun))
            bad.update(b for u, b in draws[:self.profile.onfi["max_bad_blocks"]] if u < d.factory_bad_rate)
        return frozenset(bad)

    def _marked_block(self) -> Block:
        """A factory-bad block: the first spare byte zero on each page the maker's convention names."""
        g = self.geometry
        blank = bytes(b"\xff" * g.raw_page_bytes)
        marked = bytearray(blank)
        marked[g.page_bytes] = 0x00
        blk = Block()
        for page in self.profile.bad_block_pages:
            wl_idx, upper = page_map(page, g.pages_per_block)
            wl = blk.wls.setdefault(wl_idx, Wordline(lsb=PageData(raw=blank)))
            setattr(wl, "msb" if upper else "lsb", PageData(raw=bytes(marked)))
            blk.last_page = max(blk.last_page, page)
        return blk

    # -- identity and features ------------------------------------------------
    def read_id(self, address: int) -> bytes:
        if address == 0x00:
            return self.profile.read_id()
        if address == 0x20:
            return b"ONFI"
        return bytes(4)

    @property
    def unique_id(self) -> bytes:
        """This chip's ONFI unique ID: one per profile and seed, as one per physical part."""
        return hashlib.blake2b(f"{self.profile.name}:{self.seed}".encode(), digest_size=UNIQUE_ID_BYTES).digest()

    def read_unique_id(self) -> bytes:
        """What READ UNIQUE ID streams; a part without the command leaves the bus high."""
        if self.profile.onfi.get("unique_id", True):
            return unique_id_copies(self.unique_id)
        return b"\xff" * (2 * UNIQUE_ID_BYTES * UNIQUE_ID_COPIES)

    def read_parameter_page(self) -> bytes:
        """The parameter page and its redundant copies, as READ PARAMETER PAGE streams them."""
        return self.profile.parameter_dump()

    def set_features(self, address: int, params: bytes) -> ChipOp:
        if len(params) != 4:
            raise NandrigError("SET FEATURES takes 4 parameter bytes")
        if address == FEATURE_TIMING_MODE and params[0] & 0x0F not in self.profile.onfi["timing_modes"]:
            return self._done(STATUS_FAIL, 1_000)
        self.features[address] = bytes(params)
        return self._done(0, 1_000)

    def get_features(self, address: int) -> bytes:
        return self.features.get(address, bytes(4))

    @property
    def read_offsets(self) -> tuple[int, int, int]:
        """VR1..VR3's read-retry offsets in steps, as the chip's retry features hold them (its table's sense)."""
        t = self.profile.read_retry
        return t.decode(self.features) if t is not None else (0, 0, 0)

    def set_read_offsets(self, offsets: tuple[int, int, int]) -> ChipOp:
        """What a host does through the chip's read-retry table: its SET FEATURES writes."""
        if self.profile.read_retry is None:
            raise NandrigError(f"chip profile {self.profile.name} has no read-retry table")
        return [self.set_features(a, p) for a, p in self.profile.read_retry.encode(offsets)][-1]

    @property
    def verify_offsets(self) -> tuple[int, int, int] | None:
        """PV1..PV3's offsets in steps as the design's verify-level feature holds them; None when unmoved (or the
        design has no such feature)."""
        t = self.profile.read_retry
        got = t.verify.decode(self.features) if t is not None and t.verify is not None else (0, 0, 0)
        return got if any(got) else None

    def set_verify_offsets(self, offsets: tuple[int, int, int]) -> ChipOp:
        """What a host does through the design's verify-level feature (NUNMA): its SET FEATURES writes."""
        t = self.profile.read_retry
        if t is None or t.verify is None:
            raise NandrigError(f"chip profile {self.profile.name} cannot move its program-verify levels")
        return [self.set_features(a, p) for a, p in t.verify.encode(offsets)][-1]

    def reset(self) -> ChipOp:
        self.features = {FEATURE_TIMING_MODE: bytes(4)}
        return self._done(0, 5_000)

    # -- time -----------------------------------------------------------------
    def advance_ns(self, ns: int) -> None:
        if ns < 0:
            raise NandrigError("time only moves forward")
        self.clock_ns += int(ns)
        self.equiv_h += ns / NS_PER_HOUR * acceleration_factor(self.temperature_c)

    def wait(self, hours: float = 0.0, temp_c: float | None = None) -> None:
        """Let time pass (at ``temp_c`` if given: a bake), e.g. a retention step."""
        if not math.isfinite(hours) or hours < 0:
            raise NandrigError(f"wait needs hours >= 0, got {hours}")
        saved = self.temperature_c
        if temp_c is not None:
            self.temperature_c = temp_c
        try:
            self.advance_ns(int(round(hours * NS_PER_HOUR)))
        finally:
            self.temperature_c = saved

    # -- operations -----------------------------------------------------------
    def erase(self, block: int) -> ChipOp:
        self._check_block(block)
        blk = self.blocks.setdefault(block, Block())
        busy = self._jitter(self._t_bers(blk.wear), block, -1, blk.pe, 0)
        fail = self._wearout_fails(block, blk.pe, 0, blk.wear)
        self.blocks[block] = Block(pe=blk.pe + 1, wear=blk.wear + self._cycle_stress(block, blk))
        return self._done(STATUS_FAIL if fail else 0, busy, "erase")

    def program(self, block: int, page: int, data: bytes | None = None, *, seed: int | None = None,
                ecc_t: int = 0) -> ChipOp:
        """Program a page with explicit bytes (data + spare, shorter data pads with 0xFF) or a PRBS seed (``ecc_t``:
        parity at that t in its spare, see :class:`PageData`)."""
        self._check_page(block, page)
        g = self.geometry
        if (data is None) == (seed is None):
            raise NandrigError("program needs either data or a pattern seed")
        if data is not None:
            if len(data) > g.raw_page_bytes:
                raise NandrigError(f"page data is {len(data)} bytes; a page holds {g.raw_page_bytes}")
            content = PageData(raw=bytes(data) + b"\xff" * (g.raw_page_bytes - len(data)))
        else:
            content = PageData(seed=int(seed) & 0x7FFFFFFF, ecc_t=ecc_t)
        blk = self.blocks.setdefault(block, Block())
        wl_idx, upper = page_map(page, g.pages_per_block)
        wl = blk.wls.get(wl_idx)
        held = wl is not None and (wl.msb if upper else wl.lsb) is not None
        if not held and (page < blk.last_page or (upper and (wl is None or wl.lsb is None))):
            return self._done(STATUS_FAIL, 10_000)  # order violation: rejected, nothing written
        t_us = self.profile.timing.t_prog_msb_us if upper else self.profile.timing.t_prog_lsb_us
        busy = self._jitter(t_us * self._prog_factor(blk.wear) * 1_000, block, page, blk.pe, 1 + (wl.serial if wl else 0))
        if wl is None:
            wl = blk.wls[wl_idx] = Wordline()
        if upper:  # the upper page's program places the final levels, at the verify levels in force
            wl.verify = self.verify_offsets
        if held:
            self._program_again(blk, wl, wl_idx, upper, content)
        elif upper:
            wl.msb = content
            prev = blk.wls.get(wl_idx - 1)
            if prev is not None and prev.msb is not None:
                prev.coupled = True
        else:
            wl.lsb = content
        wl.n, wl.t_prog_h, wl.serial = blk.wear, self.equiv_h + busy / NS_PER_HOUR, wl.serial + 1
        blk.last_page = max(blk.last_page, page)
        fail = self._wearout_fails(block, blk.pe, 1 + page, blk.wear)
        return self._done(STATUS_FAIL if fail else 0, busy, "program")

    def _program_again(self, blk: Block, wl: Wordline, wl_idx: int, upper: bool, content: PageData) -> None:
        """A page programmed again without an erase. Cells only gain charge: a bit goes 1 -> 0 where the cell can
        get there by rising, and the program pulses disturb the neighbouring wordlines' erased cells.
        Lower page, upper page unwritten: L0 -> LM, as the first time. Lower page under a written upper page: the
        lower-page program takes a cell to LM, which reads as L2 (lower 0, upper 0): an L1 cell is right, an L0
        cell also loses its upper bit (it should have become L3). Upper page: L0 -> L1 works; an L3 cell cannot
        fall to L2, so its bit stays 1."""
        n = self.geometry.raw_page_bytes
        arr = lambda d: np.frombuffer(d.bytes(n), np.uint8)  # noqa: E731
        want = arr(content)
        lsb = arr(wl.lsb)
        if upper:
            wl.msb = PageData(raw=(arr(wl.msb) & (want | ~lsb)).astype(np.uint8).tobytes())
        else:
            if wl.msb is not None:
                wl.msb = PageData(raw=(arr(wl.msb) & ~(lsb & ~want)).astype(np.uint8).tobytes())
            wl.lsb = PageData(raw=(lsb & want).astype(np.uint8).tobytes())
        for nb in (wl_idx - 1, wl_idx + 1):
            if 0 <= nb < self.geometry.wordlines:
                blk.wls.setdefault(nb, Wordline(n=blk.wear)).pd += 1

    def content(self, block: int, page: int) -> PageData | None:
        """What the page was last programmed with (None: erased or never programmed)."""
        self._check_page(block, page)
        blk = self.blocks.get(block)
        wl_idx, upper = page_map(page, self.geometry.pages_per_block)
        wl = blk.wls.get(wl_idx) if blk else None
        return None if wl is None else wl.msb if upper else wl.lsb

    def read(self, block: int, page: int) -> ChipRead:
        """Byte path: every cell drawn from its Vth distribution, read at the current references."""
        self._check_page(block, page)
        blk = self.blocks.setdefault(block, Block())
        wl_idx, upper = page_map(page, self.geometry.pages_per_block)
        busy = self._t_r(block, page, blk)
        cells = self._read_bits(block, blk, wl_idx, upper, page)
        blk.reads += 1
        self._done(0, busy, "read")
        return ChipRead(np.packbits(cells).tobytes(), busy)

    def measure(self, block: int, pages: list[int] | range | None = None) -> PageCounts:
        """Statistical path: bit errors per page against what was programmed, each page read once.

        Pattern pages use the exact per-bit error probabilities, with the data
        treated as uniformly random (half ones, neighbours' states uniform);
        pages on a wordline holding explicit bytes go through the byte path.
        Unprogrammed pages are compared with all-ones.
        """
        g = self.geometry
        pages = np.arange(g.pages_per_block) if pages is None else np.asarray(list(pages), dtype=np.int64)
        for p in pages:
            self._check_page(block, int(p))
        blk = self.blocks.setdefault(block, Block())
        e10 = np.zeros(len(pages), np.int64)
        e01 = np.zeros(len(pages), np.int64)
        busy = np.zeros(len(pages), np.int64)
        groups: dict[str, list[tuple[int, int, Wordline | None]]] = {"lsb": [], "msb": [], "lsb_only": []}
        for i, p in enumerate(int(x) for x in pages):
            wl_idx, upper = page_map(p, g.pages_per_block)
            wl = blk.wls.get(wl_idx)
            busy[i] = self._t_r(block, p, blk)
            if wl is not None and (any(c is not None and c.raw is not None for c in (wl.lsb, wl.msb))
                                   or self._verify_moved(blk, wl_idx)):
                content = wl.msb if upper else wl.lsb
                want = bits(content.bytes(g.raw_page_bytes)) if content else np.ones(self.cells, np.uint8)
                e10[i], e01[i] = flips(want, self._read_bits(block, blk, wl_idx, upper, p))
            elif not (upper and (wl is None or wl.msb is None)):  # an unprogrammed upper page reads all ones
                full = wl is not None and wl.msb is not None
                groups[("msb" if upper else "lsb") if full else "lsb_only"].append((i, blk.reads, wl))
            blk.reads += 1
        for kind, members in groups.items():
            if not members:
                continue
            p10, p01 = self._error_probs(block, blk, kind, [m[2] for m in members], [m[1] for m in members])
            for j, (i, reads_at, wl) in enumerate(members):
                programmed = wl is not None and wl.lsb is not None
                ones = self.cells // 2 if programmed else self.cells
                gen = self._stat_draws(rng.STAT_READ, self.seed, block, int(pages[i]), blk.pe, reads_at)
                e10[i] = gen.binomial(ones, min(float(p10[j]), 1.0))
                e01[i] = gen.binomial(self.cells - ones, min(float(p01[j]), 1.0))
        self._done(0, int(busy.sum()), "read")
        return PageCounts(pages, e10, e01, self.cells, busy)

    def cycle(self, block: int, count: int, seed: int, program: bool = True, pslc: bool = False) -> tuple[int, bool]:
        """``count`` erase + program-all cycles with PRBS pages, in bulk (mean busy times).

        ``pslc``: each round programs only the lower pages (pseudo-SLC), which
        ages the block by ``Physics.pslc_stress`` per cycle instead of one.
        Returns (cycles done, failed): cycling stops at the first erase or
        program FAIL of a worn-out block. The block ends programmed with the
        pattern of ``seed`` (or erased when ``program`` is false).
        """
        self._check_block(block)
        if count < 0:
            raise NandrigError("cycle count must be >= 0")
        g, t = self.geometry, self.profile.timing
        blk = self.blocks.setdefault(block, Block())
        start = blk.pe
        stress = self._physics(block).pslc_stress if (program and pslc) else 1.0
        # wear at each erase k: the first erase ends what the block holds now, the later ones this mode's rounds
        first = self._cycle_stress(block, blk)
        at_erase = blk.wear + np.concatenate([[0.0], first + stress * np.arange(max(count - 1, 0))])[:count]
        worn = at_erase + np.where(np.arange(count) == 0, first, stress)  # wear while each round programs
        done, failed = count, False
        onset = self._wearout_onset(block)
        if count and worn[-1] > onset:
            for k in range(int(np.searchsorted(worn, onset)), count):
                if self._wearout_fails(block, start + k, 0, at_erase[k]) or (
                        program and self._wearout_fails(block, start + k + 1, 1, worn[k])):
                    done, failed = k + 1, True
                    break
            at_erase, worn = at_erase[:done], worn[:done]
        per_cycle = self._t_bers(at_erase)
        self._meter("erase", int(np.sum(per_cycle)))
        lower = [page_of(w, False, g.pages_per_block) for w in range(g.wordlines)]
        if program:
            half = g.pages_per_block // 2
            per_page_us = t.t_prog_lsb_us + (0.0 if pslc else t.t_prog_msb_us)
            programs = half * per_page_us * 1_000 * self._prog_factor(worn)
            self._meter("program", int(np.sum(programs)))
            per_cycle = per_cycle + programs
        total = int(np.sum(per_cycle))
        self.blocks[block] = Block(pe=start + done, wear=float(worn[-1]) if done else blk.wear)
        self.advance_ns(total)
        if program and not failed:
            new = self.blocks[block]
            verify = None if pslc else self.verify_offsets
            for w in range(g.wordlines):
                new.wls[w] = Wordline(
                    lsb=PageData(seed=page_seed(seed, block, lower[w])),
                    msb=None if pslc else PageData(seed=page_seed(seed, block, page_of(w, True, g.pages_per_block))),
                    n=new.wear, t_prog_h=self.equiv_h, serial=1, coupled=not pslc and w < g.wordlines - 1,
                    verify=verify)
            new.last_page = max(lower) if pslc else g.pages_per_block - 1
        return done, failed

    def hammer(self, block: int, page: int, count: int) -> int:
        """``count`` reads of one page in bulk (a read-disturb stress); returns the busy time in ns."""
        self._check_page(block, page)
        if count < 0:
            raise NandrigError("read count must be >= 0")
        blk = self.blocks.setdefault(block, Block())
        busy = int(round(count * self._t_r_us(page) * 1_000 * self._time_scale))
        blk.reads += int(count)
        self._done(0, busy, "read")
        return busy

    def pe_count(self, block: int) -> int:
        self._check_block(block)
        return self.blocks[block].pe if block in self.blocks else 0

    # -- state ----------------------------------------------------------------
    def power_up(self) -> None:
        """What a chip holds only while powered: its features (timing mode 0, no read-retry offset), its status,
        and the supply energy a meter has not yet taken."""
        self.features: dict[int, bytes] = {FEATURE_TIMING_MODE: bytes(4)}
        self.energy = EnergyMeter()
        self.last_phase = "other"  # what the last operation's busy time was: read, program, erase or other
        self.status = STATUS_READY | STATUS_NOT_PROTECTED

    def state(self) -> dict:
        return {
            "version": STATE_VERSION, "profile": self._profile_map(), "seed": self.seed,
            "instance": self.instance,
            "clock_ns": self.clock_ns, "equiv_h": self.equiv_h, "temperature_c": self.temperature_c,
            "features": dict(self.features), "status": self.status, "blocks": dict(self.blocks),
        }

    def _profile_map(self) -> dict:
        """The profile as a state holds it: made once per profile (it is frozen; a save of every operation would
        spend a fifth of its time here)."""
        made = getattr(self, "_profile_made", None)
        if made is None or made[0] is not self.profile:
            made = self._profile_made = (self.profile, dataclasses.asdict(self.profile))
        return made[1]

    @classmethod
    def from_state(cls, state: dict) -> "VirtualChip":
        if state.get("version") == 1:  # every cycle was a full one: wear = P/E
            for blk in state["blocks"].values():
                blk.wear = float(blk.pe)
        elif state.get("version") != STATE_VERSION:
            raise NandrigError(f"chip state has version {state.get('version')}, expected 1 or {STATE_VERSION}")
        chip = cls(ChipProfile.from_mapping(state["profile"]), state["seed"])
        for k in ("clock_ns", "equiv_h", "temperature_c", "features", "status"):
            setattr(chip, k, state[k])
        chip.blocks = BlockTable(state["blocks"])
        chip.instance = int(state.get("instance", 0))  # states saved before chips had one: 0
        return chip

    def save(self, path: str | Path) -> None:
        """Write the whole chip state atomically (a trusted local file)."""
        save_state(path, self.state())

    @classmethod
    def load(cls, path: str | Path) -> "VirtualChip":
        return cls.from_state(load_state(path))

    # -- internals ------------------------------------------------------------
    def _check_block(self, block: int) -> None:
        if not (isinstance(block, (int, np.integer)) and 0 <= block < self.geometry.blocks):
            raise NandrigError(f"block {block} is out of range 0..{self.geometry.blocks - 1}")

    def _check_page(self, block: int, page: int) -> None:
        self._check_block(block)
        if not (isinstance(page, (int, np.integer)) and 0 <= page < self.geometry.pages_per_block):
            raise NandrigError(f"page {page} is out of range 0..{self.geometry.pages_per_block - 1}")

    def _done(self, fail: int, busy_ns: int, phase: str = "other") -> ChipOp:
        self._meter(phase, busy_ns)
        self.last_phase = phase
        self.status = _STATUS_DONE | fail
        self.advance_ns(busy_ns)
        return ChipOp(self.status, int(busy_ns))

    def _meter(self, phase: str, busy_ns: int) -> None:
        pw = self.profile.power
        self.energy.add_busy(busy_ns, pw.busy_ma(phase), pw.vcc_v)
        self.busy_ns_by_phase[phase] += int(busy_ns)

    def _physics(self, block: int) -> Physics:
        ph = self._phys_cache.get(block)
        if ph is None:
            base = self.profile.physics
            v = self.profile.variation
            chip_z = rng.generator(rng.VARIATION, self.seed, -1).standard_normal(2)
            blk_z = rng.generator(rng.VARIATION, self.seed, block).standard_normal(2)
            die_z = rng.generator(rng.VARIATION, self.seed, -2).standard_normal(4)  # L1..L3 verify levels, wear
            ph = dataclasses.replace(
                base,
                sigma_prog=base.sigma_prog * math.exp(v.chip_sigma * chip_z[0] + v.block_sigma * blk_z[0]),
                ret_alpha=base.ret_alpha * math.exp(v.chip_sigma * chip_z[1] + v.block_sigma * blk_z[1]),
                mu=(base.mu[0], *(m + v.place_sigma * float(z) for m, z in zip(base.mu[1:], die_z[:3]))),
                wear_rate=math.exp(v.wear_sigma * die_z[3]),
            )
            self._phys_cache[block] = ph
        return ph

    def _onsets(self, block: int) -> tuple[float, float]:
        """The block's read-disturb onset (reads) and wear-out onset (wear): drawn once, kept (every op asks)."""
        got = self._onset_cache.get(block)
        if got is None:
            v, d = self.profile.variation, self.profile.defects
            u = rng.uniform(rng.VARIATION, self.seed, block, 1)
            z = rng.generator(rng.DEFECT, self.seed, block, 1).standard_normal()
            got = (v.rd_onset_min * (v.rd_onset_max / v.rd_onset_min) ** u,
                   d.wearout_median * math.exp(d.wearout_sigma * z))
            self._onset_cache[block] = got
        return got

    def _rd_onset(self, block: int) -> float:
        return self._onsets(block)[0]

    def _wearout_onset(self, block: int) -> float:
        return self._onsets(block)[1]

    def _wearout_fails(self, block: int, pe: int, op: int, wear: float) -> bool:
        """Past its onset (in wear) a block's program/erase fails more and more often; factory-bad blocks often.
        The draw is keyed by the P/E count, so the same history fails at the same operation."""
        onset = self._wearout_onset(block)
        p = 0.3 if block in self.factory_bad else 0.0
        if wear >= onset:
            p = max(p, min(1.0, 0.02 + (wear - onset) / onset))
        return p > 0 and rng.uniform(rng.DEFECT, self.seed, block, pe, op) < p

    def _cycle_stress(self, block: int, blk: Block) -> float:
        """Wear the erase of ``blk`` adds: a pSLC cycle's (lower pages only) or a full one. Erasing a block that
        holds no page counts as full: the rigs' erase-only bulk wear stands for MLC cycling."""
        wls = [wl for wl in blk.wls.values() if wl.lsb is not None]
        return self._physics(block).pslc_stress if wls and all(wl.msb is None for wl in wls) else 1.0

    def _prog_factor(self, wear) -> np.ndarray | float:
        t = self.profile.timing
        if isinstance(wear, (int, float)):  # one page's: the same arithmetic in plain floats
            life = min(wear / self.profile.onfi["endurance_cycles"], 1.5)
        else:
            life = np.minimum(np.asarray(wear, float) / self.profile.onfi["endurance_cycles"], 1.5)
        return self._time_scale * (1.0 - t.t_prog_drop * life)

    def _t_bers(self, wear) -> np.ndarray | float:
        t = self.profile.timing
        life = np.minimum(np.asarray(wear, float) / self.profile.onfi["endurance_cycles"], 2.0)
        return t.t_bers_us * 1_000 * self._time_scale * (1.0 + t.t_bers_growth * life)

    def _t_r_us(self, page: int) -> float:
        """A lower page senses at one reference, an upper page at two (Kgil et al., ISCA'08: 25 us for an SLC
        page read, 50 us for MLC)."""
        t = self.profile.timing
        upper = page_map(page, self.geometry.pages_per_block)[1]
        return t.t_r_us if upper or t.t_r_lsb_us is None else t.t_r_lsb_us

    def _t_r(self, block: int, page: int, blk: Block) -> int:
        """This read's busy time: keyed by the block's read count, so both APIs agree."""
        return self._jitter(self._t_r_us(page) * 1_000 * self._time_scale, block, page, blk.pe, 1_000_000 + blk.reads)

    def _jitter(self, ns: float, block: int, page: int, pe: int, serial: int) -> int:
        z = rng.uniform(rng.TIMING, self.seed, block, page, pe, serial) * 2.0 - 1.0
        return int(round(float(ns) * (1.0 + self.profile.timing.jitter * z)))

    def _error_probs(self, block: int, blk: Block, kind: str, wls: list[Wordline | None],
                     reads: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """Per-bit error probabilities (1 read as 0, 0 read as 1) of pages of one kind (``lsb``, ``msb``, or
        ``lsb_only`` for a wordline whose upper page is unwritten), over every way their cells could have been
        programmed."""
        ph = self._physics(block)
        if kind != "lsb_only" and len(wls) == 1:  # one page read (the replay's): in plain floats, same sums
            wl = wls[0]
            one = one_page_error_probs(ph, wl.n, max(self.equiv_h - wl.t_prog_h, 0.0), reads[0], self._rd_onset(block),
                                       wl.pd, bool(wl.coupled), self.read_offsets, msb=kind == "msb")
            return np.array(one[:1]), np.array(one[1:])
        cond = PageCondition(
            n=np.array([wl.n if wl else blk.wear for wl in wls], float),
            t_h=np.array([max(self.equiv_h - wl.t_prog_h, 0.0) if wl and wl.lsb else 0.0 for wl in wls]),
            reads=np.array(reads, float),
            onset=np.full(len(wls), self._rd_onset(block)),
            pd=np.array([wl.pd if wl else 0 for wl in wls], float),
            coupled=np.array([bool(wl and wl.coupled) for wl in wls]),
            offset=np.array(self.read_offsets, float),
        )
        if kind == "lsb_only":
            return lsb_only_error_probs(ph, cond)
        return page_error_probs(ph, cond, msb=kind == "msb")

    @staticmethod
    def _verify_moved(blk: Block, wl_idx: int) -> bool:
        """Whether the wordline's levels, or its next neighbour's (which couple into them), sit at moved verify
        levels: the statistical path assumes the design's, so such a page's cells are drawn one by one."""
        return any(w is not None and w.verify for w in (blk.wls.get(wl_idx), blk.wls.get(wl_idx + 1)))

    def _wl_states(self, wl: Wordline | None) -> tuple[np.ndarray, bool, bool]:
        """Cell states of a wordline (3 stands for the lower-page-only intermediate state)."""
        g = self.geometry
        if wl is None or wl.lsb is None:
            return np.zeros(self.cells, np.uint8), False, False
        lsb = np.unpackbits(np.frombuffer(wl.lsb.bytes(g.raw_page_bytes), np.uint8))
        if wl.msb is None:
            return np.where(lsb == 1, 0, 3).astype(np.uint8), True, False
        msb = np.unpackbits(np.frombuffer(wl.msb.bytes(g.raw_page_bytes), np.uint8))
        return STATE_OF_BITS[lsb, msb], True, True

    def page_rber(self, block: int, page: int, age_h: float | None = None) -> float:
        """The page's true RBER: the mean over its cells, as they were programmed, of the chance that a read
        returns the wrong bit (read noise is all that is left to chance), at its age now or, with ``age_h``, at that
        25 degC-equivalent age since its wordline was programmed (reads since erase as they are now). What an
        oracle knows and a rig never does; a page's few tail cells make it differ from its kind's mean."""
        self._check_page(block, page)
        blk = self.blocks.setdefault(block, Block())
        wl_idx, upper = page_map(page, self.geometry.pages_per_block)
        wl = blk.wls.get(wl_idx)
        if wl is None or wl.lsb is None or (upper and wl.msb is None):
            return 0.0  # erased (or an unwritten upper page): reads all ones against all ones
        content = wl.msb if upper else wl.lsb
        want = bits(content.bytes(self.geometry.raw_page_bytes)).astype(bool)
        vth, vref, full = self._cell_vth(block, blk, wl_idx, age_h)
        below = lambda v: ndtr((v - vth) / self._physics(block).sigma_read)  # noqa: E731  P(read below v)
        if not full:
            ones = below(vref[0])
        elif upper:
            ones = below(vref[0]) + 1.0 - below(vref[2])
        else:
            ones = below(vref[1])
        return float(np.mean(np.where(want, 1.0 - ones, ones)))

    def _cell_vth(self, block: int, blk: Block, wl_idx: int, age_h: float | None = None,
                  read_noise: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, bool]:
        """A programmed wordline's cells' Vth as read (at its age now, or at ``age_h``; with ``read_noise``, in
        units of the read's sigma, or without it), the read references, and whether both its pages are written."""
        ph = self._physics(block)
        wl = blk.wls.get(wl_idx)
        states, has_lsb, full = self._wl_states(wl)
        n = wl.n if wl else blk.wear
        serial = wl.serial if wl else 0
        gen = rng.generator(rng.PROGRAM_NOISE, self.seed, block, wl_idx, blk.pe, serial)
        z_prog = gen.standard_normal(self.cells)
        tail = gen.random(self.cells) < ph.tail_w(n)
        z_ret = rng.generator(rng.RETENTION, self.seed, block, wl_idx, blk.pe, serial).standard_normal(self.cells)

        t_h = (max(self.equiv_h - wl.t_prog_h, 0.0) if age_h is None else age_h) if has_lsb else 0.0
        shift, var_add = ph.retention(n, t_h)
        core = float(ph.core_sigma(n))
        # lower-page-only wordlines hold L0 and LM (encoded as state 3, with L3's charge-loss factor)
        placed, k = ph.placed_levels(wl.verify if full else None)
        mu = placed if full else np.array([ph.mu[0], 0.0, 0.0, ph.mu_lm])
        kk = k[states]
        sd = np.where(tail, core * ph.tail_scale, core)
        vth = mu[states] - kk * shift + sd * z_prog + np.sqrt(kk * var_add) * z_ret
        erased = states == 0
        disturb = float(ph.read_disturb(blk.reads, self._rd_onset(block), n)) + ph.pd_shift * (wl.pd if wl else 0)
        vth = np.where(erased, ph.mu[0] + disturb + ph.sigma_erase * z_prog, vth)
        if read_noise is not None:
            vth = vth + ph.sigma_read * read_noise
        if full and wl.coupled:
            nb = blk.wls.get(wl_idx + 1)
            nb_states, _, nb_full = self._wl_states(nb)
            if nb_full:
                vth = vth + ph.coupling * ph.interference_steps(nb.verify)[nb_states]
        return vth, np.asarray(ph.vref) + ph.retry_step * np.asarray(self.read_offsets), full

    def _read_bits(self, block: int, blk: Block, wl_idx: int, upper: bool, page: int) -> np.ndarray:
        wl = blk.wls.get(wl_idx)
        if upper and not self._wl_states(wl)[2]:
            return np.ones(self.cells, np.uint8)  # unprogrammed upper page: the chip's flag reads 0xFF
        z_read = rng.generator(rng.READ_NOISE, self.seed, block, page, blk.pe, blk.reads).standard_normal(self.cells)
        vth, vref, full = self._cell_vth(block, blk, wl_idx, read_noise=z_read)
        if not full:
            return (vth < vref[0]).astype(np.uint8)  # lower page alone is read between L0 and LM
        if upper:
            return ((vth < vref[0]) | (vth > vref[2])).astype(np.uint8)
        return (vth < vref[1]).astype(np.uint8)


__all__ = ["VirtualChip", "ChipOp", "ChipRead", "PageCounts", "page_map", "page_of",
           "LSB_OF_STATE", "MSB_OF_STATE", "FEATURE_TIMING_MODE"]
