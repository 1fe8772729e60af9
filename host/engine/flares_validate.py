"""``nandrig run flares-validate``: FLARES against errors the rig really measures.

Scenarios (after the FLARES paper's validation, Sec. 5.1), with seeded
patterns programmed and read on the rig:

* ``operating-points``: five wear levels, 1,000 random operations each (20 %
  programs). Every program is followed by a bake worth one year less one hour
  at 25 degC (about 11 minutes at 125 degC), as in the paper's Fig. 5d: reads
  see the end of the life FLARES protects (one year), which a rewrite alarm
  may only flag when the t in use cannot reach it. Where the rig runs FLARES
  (``--on-rig``) the host tells it each bake's credit (FLARES_CLOCK), so the
  rig's FLARES ages a page by the year it had, not the minutes of its clock.
* ``long-retention``: wear 5,000; every program is followed by a bake worth
  two years at 25 degC, beyond the one year FLARES protects for: rewrite
  alarms expected.
  Data read or kept past both that year and the retention its t was
  written for (its tables' max_ret_time at its wear: the policy's promise,
  known when it wrote the data) is due a refresh: counted apart, not as
  under target.
* ``continuous-wear``: 1,000 operating points from 1,000 to 10,000 P/E, each
  a program (with its bake) and nine reads.

What makes the figures checkable:

* every scenario has fresh blocks of its own (each operating point one), worn
  by CYCLE to the planned P/E; the run reports planned and actual P/E per
  operating point and refuses to report when they differ;
* a program writes the whole block (erase, then every page in order), and the
  pages under test are the lower and the upper page of one wordline in the
  middle of the block: fully programmed, like the pages FLARES' model was
  calibrated on, and both page types, each with its own results;
* FLARES' clock sees a bake as its 25 degC-equivalent duration (Arrhenius), so
  the age its model projects from is the age the data really has;
* a target t beyond reach is uncoverable: counted on its own, never as met
  (beyond the tables' t_max; in the rig, beyond the t its spare area and
  engine give, ``t_reach``); every operation whose t was below its target
  carries the UBER expected at its page's measured RBER.

FLARES' model comes from the same chip: eight other blocks are characterized
(wear 1,000 to 10,000, retention 0 to one year) and eq. 5 is fitted to the
lower and the upper pages separately; each page type's FLARES uses its own.

The physical sequence does not depend on the t FLARES picks (an ECC is
digital), so each scenario is measured once and FLARES is replayed over the
trace for every WSIZE and MIX; decoding succeeds exactly when the page's
data-codeword error count is at most the t in use. Rewrite alarms are counted,
not acted on. The target t of an operation is the t that its page's measured
RBER around it requires (UBER 1e-11, one 4096-byte codeword over GF(2^16)).
"""
from __future__ import annotations

import dataclasses
import random
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from nandrig.characterization.arrhenius import acceleration_factor
from nandrig.characterization.flares import Flares, FlaresAccess, FlaresConfig, Zone
from nandrig.characterization.flares_tables import FixedTables
from nandrig.characterization.flares_wire import RIG_DIMS, TablesBlob, decode, rig_blob
from nandrig.characterization.rber import RberParams
from nandrig.characterization.tables import PAPER_CODEWORD_BYTES, CorrTable, RetentionGrid
from nandrig.characterization.uber import uber
from nandrig.chip.geometry import PageMap, PageType, page_map
from nandrig import jsonsafe
from nandrig.errors import NandrigError
from nandrig import protocol as P
from nandrig.host.engine.chip_access import format_blocks, known_chip, open_for_chip, parse_blocks, versions
from nandrig.host.engine.recorder import CallRecorder
from nandrig.host.kinds.steps import contiguous
from nandrig.host.link.rig import FlaresStep, Rig
from nandrig.host.storage.store import Store

UBER = 1e-11
BAKE_C = 125.0
YEAR_H = 8760.0
REQ_RET_H = FlaresConfig().req_ret_s / 3600.0  # the retention target every t is chosen for
ORACLE_KEY, ORACLE_VALUE = struct.Struct("<IId"), struct.Struct("<d")  # a recorded oracle answer: block, page, age
AGED_H = YEAR_H - 1.0  # reads at the end of the protected year, not past it
WSIZES = (10, 100)
MIXES_PM = (0, 500, 1000)
# read-intensive, balanced, write-intensive (the paper's videoserver, webserver, varmail)
WORKLOADS = {"videoserver": 0.9, "webserver": 0.5, "varmail": 0.2}
# decode latency for a 4 KB codeword at 8-bit parallelism, 100 MHz (FLARES paper): 83.9 us at t=1, 194 us at t=50
DECODE_US = (83.9, 194.0)
BUS_NS_PER_BYTE = 25  # ONFI timing mode 4
OPERATING_POINTS = (10, 100, 1000, 3000, 10000)  # P/E levels of the paper's operating-points experiment
LONG_RETENTION_PE = 5000
SCENARIOS = ("operating-points", "long-retention", "continuous-wear")
KIND = "flares-validate"  # as a campaign of the chip's database
CALIBRATION_WEAR = (1000, 3000, 6000, 10000)
CALIBRATION_HOURS = (0.0, 24.0, 720.0, YEAR_H)
CALIBRATION_BLOCKS = 8
PAGE_TYPES = {False: "lower", True: "upper"}
# FLARES as the paper has it (an alarm ends the evaluation), and with the evaluation run through an alarm
ON_ALARM = {False: "stops", True: "evaluates"}
PAPER = {
    "operating-points": "WSIZE 10 reacts fast but overestimates early in life; WSIZE 100 is more precise with some "
                        "delay; MIX 0 tracks the model, MIX 1 over-reacts and sometimes underestimates; "
                        "t can lag for a while after a sharp jump between operating points",
    "long-retention": "pages kept past the required retention must be refreshed (rewrite alarms)",
    "continuous-wear": "with WSIZE 10 and 100, FLARES never underestimated the target t",
    "throughput": "about +50 % throughput for read-intensive work early in life versus a fixed t = 50",
}


def blocks_needed(scenario: str) -> int:
    return len(OPERATING_POINTS) if scenario == "operating-points" else 1


def pages_under_test(pages_per_block: int, wordline: int | None = None) -> tuple[int, int]:
    """The lower and the upper page of ``wordline`` (default: the block's middle one)."""
    wordlines = pages_per_block // 2
    wl = wordlines // 2 if wordline is None else wordline
    if not 0 <= wl < wordlines:
        raise NandrigError(f"wordline {wl} is outside 0..{wordlines - 1}")
    kinds = {page_map(p, pages_per_block): p for p in range(pages_per_block)}
    return kinds[(wl, False)], kinds[(wl, True)]


@dataclass
class Trace:
    """What the rig did and measured: one entry per operation; page-dependent fields hold one value per page
    under test, in the order of ``pages``."""

    pages: tuple[int, ...]
    ops: list[int] = field(default_factory=list)  # FlaresAccess.READ / FlaresAccess.PROGRAM
    errors: list[tuple[int, ...]] = field(default_factory=list)  # data-codeword errors of reads (0 for programs)
    now_s: list[int] = field(default_factory=list)  # FLARES' clock: bakes count as their 25 degC equivalent
    pe: list[int] = field(default_factory=list)
    point: list[int] = field(default_factory=list)  # operating-point index
    read_busy_ns: list[int] = field(default_factory=list)
    prog_busy_ns: list[int] = field(default_factory=list)
    planned_pe: list[int] = field(default_factory=list)  # per operating point
    actual_pe: list[int] = field(default_factory=list)  # per operating point: the block's P/E at its first program
    # FLARES in the rig (live runs): the t each operation used, and what the rig's decoder and FLARES reported
    t_used: list[tuple[int, ...]] = field(default_factory=list)
    failed: list[tuple[bool, ...]] = field(default_factory=list)
    zone: list[tuple[int, ...]] = field(default_factory=list)
    alarm: list[tuple[bool, ...]] = field(default_factory=list)  # rewrite alarms
    beyond: list[tuple[bool, ...]] = field(default_factory=list)  # BEYOND_REACH: the projection needs > t_cap
    # a virtual chip's oracle: the smallest t that holds the data the operation serves at the target UBER through
    # the retention target, from the page's true RBER after it (0: no data)
    oracle_t: list[tuple[int, ...]] = field(default_factory=list)
    # density control (live runs): the block's mode at each operation, and which pages under test it holds
    mode: list[str] = field(default_factory=list)  # "mlc" or "pslc"
    present: list[tuple[bool, ...]] = field(default_factory=list)
    switches: list[dict] = field(default_factory=list)  # each mode change: op index, block, P/E, from, to

    def column(self, name: str, i: int) -> np.ndarray:
        return np.array([v[i] for v in getattr(self, name)])

    def in_service(self, i: int) -> np.ndarray:
        """Per operation, whether page ``i`` held data (a pSLC block leaves its upper pages unwritten)."""
        return self.column("present", i).astype(bool) if self.present else np.ones(len(self.ops), bool)

    def wear_mismatches(self) -> list[tuple[int, int]]:
        return [(p, a) for p, a in zip(self.planned_pe, self.actual_pe) if p != a]


def decode_us(t: int) -> float:
    lo, hi = DECODE_US
    return lo + (hi - lo) * (t - 1) / 49.0


def calibrate(rig: Rig, blocks: list[int], seed: int = 7,
              on_wear: Callable[[int, int], None] = lambda block, cycles: None,
              bound: float | None = None) -> tuple[dict[bool, RberParams], dict]:
    """Fit eq. 5 to the lower and to the upper pages measured on ``blocks`` (one model per page type); each
    block's cycles go to ``on_wear`` as they are done. With ``bound`` (a confidence), each model is its fit's upper
    prediction bound (characterization/bound.py) from the blocks' own scatter, not the fitted curve."""
    from nandrig.characterization.bound import bounded_fit
    from nandrig.characterization.fitting import fit

    info = rig.info()
    upper = np.array([page_map(p, info.pages_per_block)[1] for p in range(info.pages_per_block)])
    groups = [blocks[i::len(CALIBRATION_WEAR)] for i in range(len(CALIBRATION_WEAR))]
    for grp, pe in zip(groups, CALIBRATION_WEAR):
        for b in grp:
            on_wear(b, rig.cycle(b, 1, pe, seed).done[b])
    points: dict[bool, list] = {False: [], True: []}  # pooled over a level's blocks: what the curve is fitted to
    rows: dict[bool, list] = {False: [], True: []}  # one per block and level: what the bound's scatter comes from
    elapsed = 0.0
    for hours in CALIBRATION_HOURS:
        rig.advance(hours=hours - elapsed)
        elapsed = hours
        for grp, pe in zip(groups, CALIBRATION_WEAR):
            errs = [rig.measure(b, 1, seed).errors[0] for b in grp]
            for kind, sel in ((False, ~upper), (True, upper)):
                bits = int(sel.sum()) * info.raw_page_bytes * 8
                counts = [int(e[sel].sum()) for e in errs]
                rows[kind] += [(pe, hours, k / bits, bits) for k in counts]
                if sum(counts):
                    points[kind].append((pe, hours, sum(counts) / (len(grp) * bits), len(grp) * bits))
    models, about = {}, {}
    for kind, pts in points.items():
        a = np.array(pts, float)
        name = f"calibrated on blocks {blocks[0]}-{blocks[-1]}, {PAGE_TYPES[kind]} pages"
        if bound is None:
            res, b, why = fit(a[:, 0], a[:, 1], a[:, 2], a[:, 3]), None, None
        else:
            res, b, why = bounded_fit(tuple(a.T), tuple(np.array(rows[kind], float).T), bound,
                                      CALIBRATION_WEAR[-1], YEAR_H)
        models[kind] = res.rber_params(name)
        about[PAGE_TYPES[kind]] = {"model": name, "r2_log": res.r2_log, "points": len(pts),
                                   "params": models[kind].as_dict(), "law": res.law}
        if b is not None:
            models[kind] = b.apply(models[kind])
            about[PAGE_TYPES[kind]].update(model=models[kind].name, bound=b.to_json(),
                                           params=models[kind].as_dict(), **({"law_chosen": why} if why else {}))
    return models, about


class BlockRetired(Exception):
    """Density control took a block out of service: not even pSLC keeps its pages within the rig's reach."""


def _local_rate(errors: np.ndarray, pe: np.ndarray, at: float) -> float:
    """Errors per read at wear ``at`` from the reads around it: a Poisson regression of their counts on
    log(P/E) (a power law locally, as the RBER model's wear term), taken at ``at``. A window's mean would be
    biased where the window is one-sided (the first and last operating points of continuous wear, where the
    RBER keeps rising) and by the curve's bend within it."""
    if errors.size == 0 or errors.sum() == 0:
        return 0.0
    x = np.log(pe / at) if np.all(pe > 0) else np.zeros_like(pe)
    if np.ptp(x) == 0:
        return float(errors.mean())
    beta = np.array([np.log(errors.mean()), 0.0])
    design = np.column_stack([np.ones_like(x), x])
    for _ in range(25):  # Newton's method on the Poisson log-likelihood (IRLS)
        mu = np.exp(design @ beta)
        step = np.linalg.solve(design.T @ (design * mu[:, None]), design.T @ (errors - mu))
        beta += step
        if np.max(np.abs(step)) < 1e-9:
            break
    return float(np.exp(beta[0]))


class Validator:
    """Measures scenarios on the rig. ``models`` gives FLARES' RBER model per page type (False: lower, True:
    upper). With ``live`` the rig runs FLARES itself (FLARES_PROGRAM / FLARES_READ, the tables it holds, its
    BCH decoder; the host names each page's type): the trace then holds the t it chose and the failures it saw."""

    def __init__(self, rig: Rig, models: dict[bool, RberParams] | None, pages: tuple[int, ...], seed: int = 1,
                 echo: Callable[[str], None] = lambda s: None, live: FlaresConfig | None = None,
                 on_wear: Callable[[int, int], None] = lambda block, cycles: None, density: bool = True,
                 oracle: Callable[[int, int, float], float] | None = None) -> None:
        """``on_wear(block, cycles)`` hears each rig operation's wear as its reply arrives (for the chip's record).
        ``density`` (live runs): when FLARES in the rig says a page under test is beyond its reach, the block runs
        as pseudo-SLC from its next erase (only lower pages written), and is retired when that is not enough.
        ``oracle(block, page, age_h)``: a page's true RBER at that 25 degC-equivalent age (a virtual chip's
        :meth:`~nandrig.virtual_chip.chip.VirtualChip.page_rber`, see :func:`chip_oracle`)."""
        self.rig, self.pages, self.seed, self.echo, self.live = rig, tuple(pages), seed, echo, live
        self.density = density and live is not None
        self.mode: dict[int, str] = {}  # block -> "mlc", "pslc" or "retired"
        self.pending: set[int] = set()  # blocks a BEYOND_REACH decision asks to step down at their next erase
        self.on_wear = on_wear
        self.oracle = oracle
        self.block_oracle: dict[int, tuple[int, ...]] = {}  # the oracle's t of each block's pages under test
        info = rig.info()
        self.pages_per_block = info.pages_per_block
        for p in self.pages:
            if not 0 <= p < info.pages_per_block:
                raise NandrigError(f"page {p} is outside 0..{info.pages_per_block - 1}")
        if live and not info.capabilities & P.Cap.FLARES:
            raise NandrigError("this rig does not run FLARES itself (it needs a BCH decoder and room for parity)")
        self.upper = tuple(page_map(p, info.pages_per_block)[1] for p in self.pages)
        self.lower_pages = frozenset(PageMap.shuffled_mlc(info.pages_per_block).of_type(PageType.LOWER))
        self.data_codewords = -(-info.page_bytes // info.codeword_bytes)
        self.page_bits = info.page_bytes * 8
        # targets for the codeword FLARES protects: the paper's 4096 bytes (a page's, when it is smaller: a read
        # measures the page, and FLARES counts its errors over a codeword's bits), or the rig's own
        self.table = CorrTable.build(UBER, (info.codeword_bytes if live else min(PAPER_CODEWORD_BYTES,
                                                                                  info.page_bytes)) * 8)
        self.tables: dict[bool, FixedTables] = {}
        for kind, params in (models or {}).items():
            self.tables[kind] = FixedTables.build(params, self.table, RetentionGrid.build(params, self.table, 10_000, 250))
        # the largest t that can protect a page: the table's, or in the rig what its spare and engine give; a
        # target above it is beyond reach (uncoverable), counted apart from targets FLARES missed
        self.t_reach = rig.flares_config(live).t_cap if live else self.table.t_max
        self.wear: dict[int, int] = {}  # P/E this run gave each block (fresh blocks start at 0)
        self.programs = 0
        self.bake_credit_s = 0  # what bakes add to the rig's clock to make FLARES' 25 degC-equivalent clock

    # -- measuring on the rig --------------------------------------------------------
    def now_s(self) -> int:
        return self.rig.time_ns() // 1_000_000_000 + self.bake_credit_s  # the rig's FLARES: this modulo 2**32

    def _to_wear(self, trace: Trace, block: int, pe: int) -> None:
        """Cycle ``block`` so that its next program is its ``pe``-th (never backwards); a pSLC block's cycles
        program its lower pages only."""
        have = self.wear.setdefault(block, 0)
        if pe - 1 > have:
            self._step_down(trace, block)  # the cycles begin with an erase
            pages = sorted(self.lower_pages) if self.mode.get(block) == "pslc" else None
            res = self.rig.cycle(block, 1, pe - 1 - have, self.seed, pages=pages)
            self.wear[block] = have + res.done[block]
            self.on_wear(block, res.done[block])

    def _step_down(self, trace: Trace, block: int) -> None:
        """Density control at the block's erase: MLC -> pSLC -> retired, after a BEYOND_REACH decision."""
        if block not in self.pending:
            return
        self.pending.discard(block)
        was = self.mode.get(block, "mlc")
        now = "pslc" if was == "mlc" else "retired"
        self.mode[block] = now
        trace.switches.append({"op": len(trace.ops), "block": block, "pe": self.wear.get(block, 0) + 1,
                               "from": was, "to": now})
        self.echo(f"  block {block} beyond FLARES' reach as {was.upper()}: "
                  + ("run as pSLC from this erase" if now == "pslc" else "retired"))
        if now == "retired":
            raise BlockRetired(block)

    def _program(self, trace: Trace, block: int, point: int, retention_h: float) -> None:
        """Write the block, then bake it at BAKE_C for ``retention_h`` at 25 degC's worth (minutes of the rig's
        clock; FLARES' clock is told the rest)."""
        self._step_down(trace, block)
        pslc = self.mode.get(block) == "pslc"
        self.rig.erase(block)
        self.wear[block] = self.wear.get(block, 0) + 1
        self.on_wear(block, 1)
        self.programs += 1
        seed = self.seed * 1_000_003 + self.programs
        steps, busy = [], []
        for p in range(self.pages_per_block):  # the whole block, in page order (pSLC: its lower pages)
            if pslc and p not in self.lower_pages:
                continue
            if self.live and p in self.pages and pslc:  # FLARES' MLC models do not describe pSLC pages
                res = self.rig.program(block, p, seed=seed, t=self.t_reach)
                steps.append(self._fixed_step())
            elif self.live and p in self.pages:
                res = self.rig.flares_program(block, p, seed=seed, pe=self.wear[block],
                                              upper=self.upper[self.pages.index(p)])
                steps.append(res.step)
            else:
                res = self.rig.program(block, p, seed=seed)
            if p in self.pages:
                busy.append(res.busy_ns)
        if self.oracle is not None:
            self.block_oracle[block] = tuple(self._oracle_t(block, p) if self._holds(block, p) else 0
                                             for p in self.pages)
        now = self.now_s()
        bake_h = retention_h / acceleration_factor(BAKE_C)
        self.rig.advance(hours=bake_h, temp_c=BAKE_C)
        self.bake_credit_s += round((retention_h - bake_h) * 3600.0)
        if self.live:  # the rig's FLARES ages its pages by its clock, which the bake moved by minutes: say the rest
            self.rig.flares_clock(self.bake_credit_s)
        self._record(trace, FlaresAccess.PROGRAM, (0,) * len(self.pages), now, point, block)
        trace.prog_busy_ns.extend(busy)
        if self.live:
            self._record_live(trace, block, steps, [False] * len(self.pages))

    def _read(self, trace: Trace, block: int, point: int) -> None:
        seed = self.seed * 1_000_003 + self.programs
        errors, steps, failed = [], [], []
        for p, upper in zip(self.pages, self.upper):
            if not self._holds(block, p):
                errors.append(0)
                steps.append(None)
                failed.append(False)
                continue
            if self.live and self.mode.get(block) == "pslc":
                r = self.rig.read(block, p, seed=seed, t=self.t_reach)
                used = [c.corrected for c in r.codewords[:self.data_codewords]]
                steps.append(self._fixed_step())
                failed.append(min(used) < 0)
                if min(used) < 0 or max(used) > self.t_reach // 2:  # pSLC's margin half gone: retire the block
                    self.pending.add(block)
            elif self.live:
                fr = self.rig.flares_read(block, p, seed=seed, upper=upper)
                r = fr.read
                steps.append(fr.step)
                failed.append(fr.failed > 0)
            else:
                r = self.rig.read(block, p, seed=seed)
            errors.append(sum(c.errors for c in r.codewords[:self.data_codewords]))
            trace.read_busy_ns.append(r.busy_ns)
        self._record(trace, FlaresAccess.READ, tuple(errors), self.now_s(), point, block)
        if self.live:
            self._record_live(trace, block, steps, failed)

    def _oracle_t(self, block: int, page: int) -> int:
        """The smallest t that keeps the page just written at the target UBER through a year (t_max + 1: none)."""
        t = int(self.table.t_for(self.oracle(block, page, REQ_RET_H)))
        return t if t >= 0 else self.table.t_max + 1

    def _fixed_step(self) -> FlaresStep:
        """A pSLC page's operation: written and read at the rig's strongest t, outside FLARES."""
        return FlaresStep(self.t_reach, Zone.NONE, 0, P.Decide(0))

    def _holds(self, block: int, page: int) -> bool:
        return self.mode.get(block) != "pslc" or page in self.lower_pages

    def _record_live(self, trace: Trace, block: int, steps: list, failed: list[bool]) -> None:
        """One operation's decisions, page by page (None: the page holds no data in the block's mode)."""
        if len(steps) < len(self.pages):  # a program's steps: the pages under test that were written
            written = iter(steps)
            steps = [next(written) if self._holds(block, p) else None for p in self.pages]
        flag = lambda s, f: s is not None and bool(s.flags & f)  # noqa: E731
        trace.t_used.append(tuple(s.t if s else 0 for s in steps))
        trace.failed.append(tuple(failed))
        trace.zone.append(tuple(int(s.zone) if s else int(Zone.NONE) for s in steps))
        trace.alarm.append(tuple(flag(s, P.Decide.ALARM) for s in steps))
        trace.beyond.append(tuple(flag(s, P.Decide.BEYOND_REACH) for s in steps))
        trace.mode.append(self.mode.get(block, "mlc"))
        trace.present.append(tuple(s is not None for s in steps))
        if self.density and any(trace.beyond[-1]):
            self.pending.add(block)

    def _record(self, trace: Trace, op: FlaresAccess, errors: tuple[int, ...], now: int, point: int,
                block: int) -> None:
        trace.ops.append(int(op))
        trace.errors.append(errors)
        trace.now_s.append(now)
        trace.pe.append(self.wear[block])
        trace.point.append(point)
        if self.oracle is not None:
            trace.oracle_t.append(self.block_oracle.get(block, (0,) * len(self.pages)))

    def _start_point(self, tr: Trace, block: int, point: int, pe: int, retention_h: float) -> None:
        """An operating point opens with the block's ``pe``-th program."""
        self._to_wear(tr, block, pe)
        self._program(tr, block, point, retention_h)
        tr.planned_pe.append(pe)
        tr.actual_pe.append(self.wear[block])

    def measure(self, scenario: str, blocks: list[int], scale: float = 1.0,
                wear: tuple[int, ...] = OPERATING_POINTS) -> Trace:
        """One scenario's operations and their measured errors on its own ``blocks`` (operating points: one
        per wear level in ``wear``)."""
        rng = random.Random(zlib.crc32(scenario.encode()) ^ self.seed)  # str hash() is salted per process
        tr = Trace(self.pages)
        n = max(10, int(1000 * scale))

        def ops(block: int, point: int, retention_h: float) -> None:
            for _ in range(n - 1):
                if rng.random() < 0.2:
                    self._program(tr, block, point, retention_h)
                else:
                    self._read(tr, block, point)

        if scenario not in SCENARIOS:
            raise NandrigError(f"unknown scenario {scenario!r}")
        try:  # a retired block ends its operating point (and a one-block scenario)
            if scenario == "operating-points":
                if len(blocks) < len(wear):
                    raise NandrigError(f"operating points need {len(wear)} blocks, got {len(blocks)}")
                for k, pe in enumerate(wear):
                    try:
                        self._start_point(tr, blocks[k], k, pe, AGED_H)
                        ops(blocks[k], k, AGED_H)
                    except BlockRetired:
                        continue
                    self.echo(f"  operating point {k + 1}/{len(wear)} (P/E {pe}, block {blocks[k]}) measured")
            elif scenario == "long-retention":
                self._start_point(tr, blocks[0], 0, LONG_RETENTION_PE, 2 * YEAR_H)
                ops(blocks[0], 0, 2 * YEAR_H)
            else:
                points = max(10, int(1000 * scale))
                for k in range(points):
                    self._start_point(tr, blocks[0], k, 1000 + (9000 * k) // (points - 1), AGED_H)
                    for _ in range(9):
                        self._read(tr, blocks[0], k)
                    if (k + 1) % 100 == 0:
                        self.echo(f"  continuous wear: {k + 1}/{points} operating points "
                                  f"(P/E {self.wear[blocks[0]]})")
        except BlockRetired:
            pass
        return tr

    # -- FLARES over a trace -------------------------------------------------------------
    def targets(self, tr: Trace, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Per operation on page ``tr.pages[i]``: the target t its operating point's measured RBER (or its
        neighbourhood's, in continuous wear) requires, ``t_max + 1`` where no t of the table is enough
        (uncoverable), and that RBER."""
        ops, errs, point = np.array(tr.ops), tr.column("errors", i).astype(float), np.array(tr.point)
        mode = np.array(tr.mode) if tr.mode else np.full(len(ops), "mlc")
        reads = (ops == int(FlaresAccess.READ)) & tr.in_service(i)
        target = np.zeros(len(ops), dtype=int)
        rber = np.zeros(len(ops))
        n_points = point.max() + 1
        half = 25 if n_points > 50 else 0  # continuous wear: smooth over +-25 operating points
        pe = np.array(tr.pe, dtype=float)
        for k in range(n_points):
            for m in set(mode[point == k]):  # a pSLC block's reads say nothing about it as MLC, and back
                sel = reads & (np.abs(point - k) <= half) & (mode == m)
                here_pe = float(pe[(point == k) & (mode == m)][0])
                per_read = _local_rate(errs[sel], pe[sel], here_pe) if half else errs[sel].mean() if sel.any() else 0.0
                r = min(max(per_read / self.page_bits, 1e-12), 0.49)
                here = (point == k) & (mode == m)
                rber[here] = r
                target[here] = int(self.table.t_for(r))
        target[target < 0] = self.table.t_max + 1
        return target, rber

    def outcome(self, tr: Trace, i: int, target: np.ndarray, rber: np.ndarray, chosen: list[int],
                failed: np.ndarray, evaluated: np.ndarray, alarm_ops: list[int],
                keep: np.ndarray | None = None) -> dict:
        """A run's figures from the t chosen per operation on page ``tr.pages[i]`` against the target t (and the
        oracle's, when the trace has it), over the operations ``keep`` marks (those where the page held data;
        default all). ``failed`` marks the reads that did not decode, ``evaluated`` the operations after the
        policy's first evaluation. A read of data older than the retention target and than the retention its t
        was written for (the tables' max_ret_time at its wear: the policy's own promise, known when it wrote the
        data), and the program of such data, are counted apart, not as under target: the data's refresh was
        due."""
        keep = np.ones(len(tr.ops), bool) if keep is None else keep
        kept = np.flatnonzero(keep)  # operation numbers
        past_all = self.past_retention(tr, i, chosen)
        cov_all = target <= self.t_reach
        chosen_a, target, rber, past = np.array(chosen)[keep], target[keep], rber[keep], past_all[keep]
        coverable = cov_all[keep]
        below = chosen_a < target
        under = np.flatnonzero(below & coverable & ~past)
        below_ops = np.flatnonzero(below & ~past)
        # the UBER each operation below its target was exposed to, at its page's measured RBER
        ubers = [uber(float(rber[j]), int(chosen_a[j]), self.table.k_bits) for j in below_ops]
        worst = {name: max((u for j, u in zip(below_ops, ubers) if coverable[j] == c), default=0.0)
                 for name, c in (("under", True), ("uncoverable", False))}
        is_read = np.array(tr.ops) == int(FlaresAccess.READ)
        reads = [int(c) for c in chosen_a[is_read[keep]]]
        fails = failed & keep
        stale_reads = past_all & keep & is_read
        alarmed, flagged = np.zeros(len(tr.ops), bool), False  # a stale read the policy flagged: an alarm since
        alarm_at = set(alarm_ops)  # its data's program, at or before it
        for j, op in enumerate(tr.ops):
            flagged = (j in alarm_at) or (flagged and op != FlaresAccess.PROGRAM)
            alarmed[j] = flagged
        return {**self._against_oracle(tr, i, chosen_a, keep), "ops": int(keep.sum()), "reads": len(reads),
                "under_target_ops": int(under.size),
                "under_target_ops_after_first_evaluation": int(np.sum(evaluated[keep] & below & coverable & ~past)),
                "uncoverable_ops": int(np.sum(~coverable)),
                "below_target_uber_max": worst["under"],  # of the operations under target
                "uncoverable_uber_max": worst["uncoverable"],  # of those whose target was beyond reach
                "below_target_uber": ubers,
                "first_below_target_op": int(kept[below_ops[0]]) if below_ops.size else None,
                "first_alarm_op": alarm_ops[0] if alarm_ops else None,
                "decode_failures": int(np.sum(fails & ~past_all & cov_all)),
                # where no t in reach could hold the data (density control's to prevent): apart, as their targets are
                "uncoverable_failures": int(np.sum(fails & ~past_all & ~cov_all)),
                "past_retention_ops": int(past.sum()),
                "past_retention_under_target": int(np.sum(past & below & coverable)),
                "past_retention_failures": int(np.sum(fails & past_all)),
                "past_retention_flagged": int(np.sum(stale_reads & alarmed)),
                "past_retention_reads": int(np.sum(stale_reads)),
                "mean_overprovision": float(np.mean((chosen_a - target)[coverable])) if coverable.any() else None,
                "rewrite_alarms": len(alarm_ops), "mean_t": float(np.mean(chosen_a)) if chosen_a.size else None,
                "mean_target_t": float(np.mean(target[coverable])) if coverable.any() else None,
                "read_gain_vs_fixed50": self.gains(tr, reads), "chosen_t": [int(c) if k else None for c, k in zip(chosen, keep)]}  # None: out of service

    def past_retention(self, tr: Trace, i: int, chosen: list[int]) -> np.ndarray:
        """Per operation: a read of MLC data older than both the retention target and the retention its t protects
        at the wear it was written at, by the page type's tables (the policy kept its promise; a t that promised
        less than the target is the policy's miss), and the program of data so read or so kept until the next
        program overwrote it. False where there are no tables."""
        past = np.zeros(len(tr.ops), bool)
        tables = self.tables.get(self.upper[i])
        if tables is None:
            return past
        written: int | None = None  # the operation that programmed the data the page holds

        def kept_past(now: int) -> bool:
            t = int(chosen[written])
            if (tr.mode and tr.mode[written] != "mlc") or not tables.t_min <= t <= tables.t_max:
                return False
            limit = tables.max_ret_seconds(t, tr.pe[written])
            return limit is not None and now - tr.now_s[written] > max(limit, REQ_RET_H * 3600.0)

        for j, (op, now) in enumerate(zip(tr.ops, tr.now_s)):
            if written is not None and kept_past(now):
                past[j] = op == FlaresAccess.READ
                past[written] = True  # a program's data read, or overwritten, past its retention
            if op == FlaresAccess.PROGRAM:
                written = j
        return past

    def _against_oracle(self, tr: Trace, i: int, chosen: np.ndarray, keep: np.ndarray) -> dict:
        """The oracle's mean t over the MLC operations the policy decided and the oracle could cover, the policy's
        mean t over the same, and those whose t was below the oracle's (data that would not hold a year at the
        target UBER). A pSLC page's t is the rig's strongest, not the policy's choice."""
        if not tr.oracle_t:
            return {"oracle_ops": 0, "mean_oracle_t": None, "mean_t_where_oracle": None, "under_oracle_ops": None}
        oracle = tr.column("oracle_t", i)[keep]
        sel = (oracle > 0) & (oracle <= self.t_reach)
        if tr.mode:
            sel &= np.array(tr.mode)[keep] == "mlc"
        if not sel.any():
            return {"oracle_ops": 0, "mean_oracle_t": None, "mean_t_where_oracle": None, "under_oracle_ops": 0}
        return {"oracle_ops": int(sel.sum()), "mean_oracle_t": float(np.mean(oracle[sel])),
                "mean_t_where_oracle": float(np.mean(chosen[sel])),
                "under_oracle_ops": int(np.sum(chosen[sel] < oracle[sel]))}

    def live_run(self, tr: Trace, i: int, target: np.ndarray, rber: np.ndarray) -> dict:
        """The figures of a scenario FLARES ran in the rig: its t, its decoder's failures."""
        keep = tr.in_service(i)
        reads = (np.array(tr.ops) == int(FlaresAccess.READ)) & keep
        failed = tr.column("failed", i) & reads
        zone = tr.column("zone", i)
        t_used = tr.column("t_used", i)
        evaluated = np.cumsum(zone != Zone.NONE) > 0
        beyond = np.flatnonzero(tr.column("beyond", i))
        mode = np.array(tr.mode)
        density = {"beyond_reach_decisions": int(beyond.size),
                   "first_beyond_reach_op": int(beyond[0]) if beyond.size else None,
                   "pslc_ops": int(np.sum(keep & (mode == "pslc"))), "not_in_service_ops": int(np.sum(~keep))}
        out = {**self.outcome(tr, i, target, rber, t_used.tolist(), failed, evaluated,
                              np.flatnonzero(tr.column("alarm", i) & keep).tolist(), keep), **density}
        # a pSLC page needs far less t than the MLC page it was: the two modes' protection apart, not pooled
        for name, sel in (("", keep & (mode != "pslc")), ("pslc_", keep & (mode == "pslc"))):
            need = sel & (target <= self.t_reach)
            out.update({f"{name}mean_t": float(np.mean(t_used[sel])) if sel.any() else None,
                        f"{name}mean_target_t": float(np.mean(target[need])) if need.any() else None,
                        f"{name}mean_t_ops": int(sel.sum())})
        return out

    def replay(self, tr: Trace, i: int, target: np.ndarray, rber: np.ndarray, wsize: int, mix_pm: int,
               evaluate_on_alarm: bool = False, guarded: bool = False) -> dict:
        """FLARES (or guarded FLARES) on the host over page ``tr.pages[i]``'s trace, with its page type's
        tables."""
        f = Flares(self.tables[self.upper[i]], FlaresConfig(wsize=wsize, mix_pm=mix_pm,
                                                            evaluate_on_alarm=evaluate_on_alarm, guarded=guarded))
        pp = f.new_page(f.cold_start(tr.pe[0]), tr.pe[0] - 1)
        n = len(tr.ops)
        chosen, failed, evaluated, alarms = [], np.zeros(n, bool), np.zeros(n, bool), []
        for j, (op, errs, now, pe) in enumerate(zip(tr.ops, tr.errors, tr.now_s, tr.pe)):
            err = errs[i]
            if op == FlaresAccess.PROGRAM:
                pp.pecycles = pe - 1  # the rig's cycling programmed this page too; upPage counts this one
            failed[j] = fail = op == FlaresAccess.READ and err > pp.p_cur
            d = f.up_page(pp, FlaresAccess(op), err, fail, now, errors=0 if fail else err)
            if d.alarm:
                alarms.append(j)
            evaluated[j] = d.zone != 0 or (j > 0 and evaluated[j - 1])
            chosen.append(pp.p_cur)
        return self.outcome(tr, i, target, rber, chosen, failed, evaluated, alarms)

    def bound_floor(self, tr: Trace, i: int, target: np.ndarray, rber: np.ndarray) -> dict:
        """The t the page type's tables project for each program's data to the end of the retention target, and
        nothing else (the floor guarded FLARES never writes below), over page ``tr.pages[i]``'s trace: with tables
        from a bound, what the bound alone costs against the oracle."""
        f = Flares(self.tables[self.upper[i]])
        chosen, t = [], f.tables.t_min
        for op, pe in zip(tr.ops, tr.pe):
            if op == FlaresAccess.PROGRAM or not chosen:
                t = max(min(f.tables.t_for(f.end_projection(pe)), f.t_cap), f.tables.t_min)
            chosen.append(t)
        none = np.zeros(len(chosen), bool)
        return self.outcome(tr, i, target, rber, chosen, none, none, [])

    def gains(self, tr: Trace, read_ts: list[int]) -> dict:
        """Throughput with FLARES' t against a fixed t = 50 for each operation mix."""
        raw = (self.page_bits // 8) * BUS_NS_PER_BYTE / 1000.0  # us on the bus
        t_read = np.mean(tr.read_busy_ns) / 1000.0 + raw
        t_prog = np.mean(tr.prog_busy_ns) / 1000.0 + raw
        dec = float(np.mean([decode_us(t) for t in read_ts])) if read_ts else decode_us(50)
        out = {}
        for name, share in WORKLOADS.items():
            flares = share * (t_read + dec) + (1 - share) * t_prog
            fixed = share * (t_read + decode_us(50)) + (1 - share) * t_prog
            out[name] = fixed / flares - 1.0
        return out


def chip_oracle(rig: Rig) -> Callable[[int, int, float], float] | None:
    """The virtual chip's :meth:`~nandrig.virtual_chip.chip.VirtualChip.page_rber` when ``rig`` is a virtual rig in
    this process (None for any other rig: a real chip has no oracle, its post-hoc measured RBER stands in). Under a
    resumable campaign every answer is recorded among its requests: a resumed run reads what the first run saw."""
    chip = getattr(getattr(rig.t, "rig", None), "chip", None)
    if chip is None:
        return None

    def oracle(block: int, page: int, age_h: float) -> float:
        def ask() -> bytes:
            return ORACLE_VALUE.pack(chip.page_rber(block, page, age_h))

        rec = rig.recorder
        raw = rec.note(ORACLE_KEY.pack(block, page, age_h), ask) if isinstance(rec, CallRecorder) else ask()
        return ORACLE_VALUE.unpack(raw)[0]
    return oracle


def plan(good: list[int], calibrate_model: bool) -> dict[str, list[int]]:
    """Fresh blocks for each scenario (and the calibration), from ``good``; too few fail before any wear."""
    need = {s: blocks_needed(s) for s in SCENARIOS}
    if calibrate_model:
        need["calibration"] = CALIBRATION_BLOCKS
    total = sum(need.values())
    if len(good) < total:
        parts = ", ".join(f"{n} for {s}" for s, n in need.items())
        raise NandrigError(f"this validation needs {total} fresh good blocks ({parts}); {len(good)} given")
    out, at = {}, 0
    for s, n in need.items():
        out[s] = good[at:at + n]
        at += n
    return out


def live_tables(rig: Rig, sent: TablesBlob, echo: Callable[[str], None]) -> dict:
    """Give the rig FLARES tables (``rig_blob`` of one model, or lower and upper); what it then decides with."""
    echo(f"sending FLARES tables ({len(sent.data):,} bytes, CRC {sent.crc:08x}) to the rig")
    got = rig.flares_tables(sent)
    return {"crc": f"{got.crc:08x}", "models": got.models, "codeword_bytes": RIG_DIMS.codeword_bytes,
            "t_range": list(RIG_DIMS.t_range), "bytes": len(sent.data)}


def configure_live(rig: Rig, live: FlaresConfig, sent: TablesBlob) -> None:
    """FLARES' constants on the rig; a rig that lost the tables sent (a power cycle, a reset) gets them again."""
    cfg = rig.flares_config(live)
    if cfg.tables.crc != sent.crc:
        live_tables(rig, sent, lambda s: None)
        rig.flares_config(live)


def validate(rig: Rig, params: list[RberParams] | None, blocks: list[int], pages: tuple[int, ...], scale: float = 1.0,
             echo: Callable[[str], None] = lambda s: None, live: FlaresConfig | None = None,
             on_wear: Callable[[int, int], None] = lambda block, cycles: None, density_control: bool = True,
             bound: float | None = None, guarded: bool = False) -> dict:
    """Run the three scenarios on fresh ``blocks``. FLARES' models: ``params`` (one model for both page types,
    or lower and upper), or with None one per page type calibrated on 8 more blocks first (with ``bound``, each
    its upper prediction bound at that confidence).

    With ``live`` the rig runs FLARES itself with those constants over its decoder and tables sent to it from
    those models, one run per scenario and page; nothing is replayed. ``guarded``: the host replays run guarded
    FLARES (a live run's policy is its configuration's)."""
    if live:  # before any wear: every program's bake is told to the rig's FLARES
        rig.require((1, 14), "ageing FLARES' pages by a bake (FLARES_CLOCK)")
    use = plan(blocks, params is None)
    worn: dict[int, int] = {}  # P/E cycles this run gave each block

    def wore(block: int, cycles: int) -> None:
        worn[block] = worn.get(block, 0) + cycles
        on_wear(block, cycles)

    if params is not None:
        models = {False: params[0], True: params[-1]}
        model = {"model": " / ".join(p.name for p in params) + (" (lower, upper pages)" if len(params) > 1
                                                                   else " (both page types)")}
    else:
        cal = use["calibration"]
        echo(f"calibrating one RBER model per page type on blocks {cal[0]}-{cal[-1]}"
             + (f", tables from its {bound * 100:g}% upper prediction bound" if bound is not None else ""))
        models, model = calibrate(rig, cal, on_wear=wore, bound=bound)
        params = [models[False], models[True]]
    blob = sent = None
    if live:  # the rig decides with tables made from the same models, sent to it; nothing is replayed
        blob = rig_blob(params, UBER)
        sent, models = live_tables(rig, blob, echo), None
    v = Validator(rig, models, pages, echo=echo, live=live, on_wear=wore, density=density_control,
                  oracle=chip_oracle(rig))
    if live:  # the retention the rig's t promise is its tables': what the verdict holds the rig to
        held = decode(blob.data)
        v.tables = {False: held[0], True: held[-1]}
    runs, traces, wear, density = [], {}, {}, {}
    for scenario in SCENARIOS:
        echo(f"measuring {scenario} on block(s) {', '.join(map(str, use[scenario]))}, pages {pages}"
             + (" with FLARES in the rig" if live else ""))
        if live:
            configure_live(rig, live, blob)  # every scenario starts without page history
        tr = v.measure(scenario, use[scenario], scale)
        if bad := tr.wear_mismatches():
            raise NandrigError(f"{scenario}: blocks {use[scenario]} reached P/E {bad[0][1]} where the plan says "
                               f"{bad[0][0]} (a block failed or was not fresh); nothing reported")
        wear[scenario] = {"blocks": use[scenario], "planned_pe": tr.planned_pe, "actual_pe": tr.actual_pe}
        if live:
            density[scenario] = {"switches": tr.switches, "pslc_ops": int(np.sum(np.array(tr.mode) == "pslc")),
                                 "retired_blocks": [s["block"] for s in tr.switches if s["to"] == "retired"]}
        traces[scenario] = {"pe": tr.pe, "point": tr.point, "ops": tr.ops, "pages": list(pages), "target_t": {}}
        for i, page in enumerate(pages):
            target, rber = v.targets(tr, i)
            traces[scenario]["target_t"][str(page)] = target.tolist()
            head = {"scenario": scenario, "page": page, "page_type": PAGE_TYPES[v.upper[i]]}
            if live:
                runs.append({**head, "wsize": live.wsize, "mix": live.mix_pm / 1000,
                             "on_alarm": ON_ALARM[live.evaluate_on_alarm], **v.live_run(tr, i, target, rber)})
                continue
            for evaluate in (False, True):
                for wsize in WSIZES:
                    for mix in MIXES_PM:
                        runs.append({**head, "wsize": wsize, "mix": mix / 1000, "on_alarm": ON_ALARM[evaluate],
                                     **v.replay(tr, i, target, rber, wsize, mix, evaluate, guarded)})
    return {
        "blocks": use, "pages": list(pages), "model": model, "uber": UBER,
        "codeword_bytes": v.table.k_bits // 8, "t_max": v.table.t_max, "t_reach": v.t_reach,
        "flares_in_rig": live is not None, "rig_tables": sent, "wear": wear,
        "policy": (live.policy if live else FlaresConfig(guarded=guarded).policy),
        "density_control": density if live and v.density else None,
        "flares_clock": "25 degC-equivalent (bakes count as their Arrhenius-equivalent duration, Ea 1.1 eV)",
        "decode_latency_source": "FLARES paper, 83.9 us (t=1) to 194 us (t=50), linear" + (
            "; decode failures are the rig decoder's" if live else "; failures inferred from errors > t"),
        "paper": PAPER, "runs": runs, "traces": traces, "scale": scale,
        "block_wear": {str(b): n for b, n in sorted(worn.items())},
    }


SUMMARY_KEYS = ("scenario", "page", "page_type", "on_alarm", "wsize", "mix", "ops", "under_target_ops",
                "under_target_ops_after_first_evaluation", "uncoverable_ops", "beyond_reach_decisions",
                "first_beyond_reach_op", "pslc_ops", "not_in_service_ops", "below_target_uber_max",
                "uncoverable_uber_max", "first_below_target_op", "first_alarm_op", "decode_failures",
                "uncoverable_failures", "past_retention_ops", "past_retention_under_target", "past_retention_failures",
                "past_retention_reads", "past_retention_flagged", "mean_overprovision",
                "rewrite_alarms", "read_gain_vs_fixed50", "mean_t", "mean_target_t", "oracle_ops", "mean_oracle_t",
                "mean_t_where_oracle", "under_oracle_ops")


# what each column of a run's row counts (the CLI's legend, the report's table head)
COLUMNS = {
    "ops": "operations on the page (programs and reads) while it held data",
    "under": "operations FLARES served with a t below the target t that the page's measured RBER needs for the "
             "target UBER (and that the ECC could reach): each an exposure above the target",
    "uncov": "operations whose target t is beyond the ECC's reach: no t meets the target there (density control's "
             "cases)",
    "fails": "reads the decoder could not correct (those whose target was beyond reach included)",
    "past": "operations on data kept past the retention target and the retention its t was written for (the "
            "tables' max_ret_time at its wear): due a refresh, counted apart from under and fails",
    "over": "mean t chosen minus target t over coverable operations (ECC spent beyond need)",
    "alarms": "rewrite alarms (retention past what the chosen t protects)",
    "gain": "read throughput against a fixed t = 50 (paper's decode latencies) for read-heavy / balanced / "
            "write-heavy work",
}
# the configuration a host replay's verdict is given for: the paper's, and --on-rig's default
VERDICT_RUN = {"wsize": 10, "mix": 0.5, "on_alarm": ON_ALARM[False]}


def verdict(result: dict) -> dict:
    """Whether FLARES met its target: per page type over every scenario, for the rig's own runs (--on-rig) or
    the host replays in the paper's configuration (WSIZE 10, MIX 0.5, an alarm stopping the evaluation). Met:
    no operation under its target t and no decode failure; the worst expected UBER of the operations under
    target says by how much it missed."""
    target = result["uber"]
    runs = result["runs"] if result.get("flares_in_rig") else [
        r for r in result["runs"] if all(r.get(k) == v for k, v in VERDICT_RUN.items())]
    kinds: dict[str, dict] = {}
    for r in runs:
        k = kinds.setdefault(r["page_type"], {"ops": 0, "under_target_ops": 0, "uncoverable_ops": 0,
                                              "decode_failures": 0, "uncoverable_failures": 0, "worst_expected_uber": 0.0, "missed_in": [],
                                              "oracle_ops": 0, "oracle_sum": 0.0, "t_oracle_sum": 0.0,
                                              "under_oracle_ops": 0, "past_retention_ops": 0,
                                              "past_retention_under_target": 0, "past_retention_failures": 0,
                                              "past_retention_reads": 0, "past_retention_flagged": 0})
        for f in ("ops", "under_target_ops", "uncoverable_ops", "decode_failures", "uncoverable_failures",
                  "past_retention_ops",
                  "past_retention_under_target", "past_retention_failures", "past_retention_reads",
                  "past_retention_flagged"):
            k[f] += int(r.get(f) or 0)
        for mode in ("", "pslc_"):  # MLC and pSLC operations apart (a replay's are all MLC)
            n = int(r.get(f"{mode}mean_t_ops", r.get("ops") if not mode else 0) or 0)
            m = k.setdefault(mode, {"t_sum": 0.0, "t_ops": 0, "need_sum": 0.0, "need_ops": 0})
            if r.get(f"{mode}mean_t") is not None:
                m["t_sum"] += float(r[f"{mode}mean_t"]) * n
                m["t_ops"] += n
            if r.get(f"{mode}mean_target_t") is not None:
                m["need_sum"] += float(r[f"{mode}mean_target_t"]) * n
                m["need_ops"] += n
        if r.get("oracle_ops"):
            k["oracle_ops"] += r["oracle_ops"]
            k["oracle_sum"] += r["mean_oracle_t"] * r["oracle_ops"]
            k["t_oracle_sum"] += r["mean_t_where_oracle"] * r["oracle_ops"]
            k["under_oracle_ops"] += r["under_oracle_ops"]
        k["worst_expected_uber"] = max(k["worst_expected_uber"], float(r.get("below_target_uber_max") or 0.0))
        if r.get("under_target_ops") or r.get("decode_failures"):
            k["missed_in"].append(r["scenario"])
    for kind, k in kinds.items():
        k["met"] = k["under_target_ops"] == 0 and k["decode_failures"] == 0
        # the protection paid for: the mean t written against the mean t the measured errors needed (post hoc)
        for mode in ("", "pslc_"):
            m = k.pop(mode)
            k[f"{mode}mean_t"] = m["t_sum"] / m["t_ops"] if m["t_ops"] else None
            k[f"{mode}mean_needed_t"] = m["need_sum"] / m["need_ops"] if m["need_ops"] else None
        k["pslc_ops"] = sum(int(r.get("pslc_ops") or 0) for r in runs if r["page_type"] == kind)
        # the protection against what a policy that knew the page's true RBER would write (virtual chips only)
        o_ops, o_sum, t_o_sum = k.pop("oracle_ops"), k.pop("oracle_sum"), k.pop("t_oracle_sum")
        k["mean_oracle_t"] = o_sum / o_ops if o_ops else None
        k["over_oracle"] = t_o_sum / o_sum - 1.0 if o_sum else None
        if not o_ops:
            k["under_oracle_ops"] = None
    met = all(k["met"] for k in kinds.values()) and bool(kinds)
    how = "in the rig" if result.get("flares_in_rig") else \
        f"host replay, WSIZE {VERDICT_RUN['wsize']}, MIX {VERDICT_RUN['mix']:g}, alarm {VERDICT_RUN['on_alarm']}"

    def cost(k: dict) -> str:
        if k["mean_t"] is None or not k["mean_needed_t"]:
            return ""
        oracle = "" if k["over_oracle"] is None else (
            f"; {k['over_oracle']:+.0%} over the oracle's t for a year, {k['mean_oracle_t']:.1f}"
            + (f", {k['under_oracle_ops']:,} operations below it" if k["under_oracle_ops"] else ""))
        pslc = "" if not k["pslc_ops"] or k["pslc_mean_t"] is None else (
            f"; as pSLC after density control, {k['pslc_ops']:,} operations, mean t {k['pslc_mean_t']:.1f}"
            + (f" for a measured need of {k['pslc_mean_needed_t']:.1f}" if k["pslc_mean_needed_t"] is not None else ""))
        mlc = "MLC, " if k["pslc_ops"] else ""
        return f" ({mlc}mean t {k['mean_t']:.1f} for a measured need of {k['mean_needed_t']:.1f}{oracle}{pslc})"

    def past(k: dict) -> str:
        if not k["past_retention_ops"]:
            return ""
        return (f"; {k['past_retention_ops']:,} operations on data kept past the retention target and the "
                f"retention its t was written for, due a refresh, counted apart "
                f"({k['past_retention_under_target']:,} of them under target"
                + (f", {k['past_retention_failures']:,} failed to decode" if k["past_retention_failures"] else "")
                + f"; {k['past_retention_flagged']:,} of its {k['past_retention_reads']:,} reads came with a "
                  "rewrite alarm since the data's program)")

    def said(kind: str, k: dict) -> str:
        if k["met"]:
            return f"{kind} pages met it in all {k['ops'] - k['past_retention_ops']:,} operations" + cost(k) + past(k)
        worst = k["worst_expected_uber"]
        return (f"{kind} pages missed it: {k['under_target_ops']:,} of {k['ops']:,} operations under target"
                + (f", {k['decode_failures']} decode failures" if k["decode_failures"] else "")
                + f" (in {', '.join(dict.fromkeys(k['missed_in']))}), worst expected UBER {worst:.2g}"
                + (f", {_times(worst / target)} times the target" if worst > target else "") + cost(k) + past(k))

    words = (f"{result.get('policy', 'FLARES')} {'met' if met else 'missed'} its target UBER {target:g} ({how}"
             + (f", {result['scale']:g} of the paper's operations" if result.get("scale", 1.0) < 1.0 else "")
             + "): " + "; ".join(said(n, k) for n, k in sorted(kinds.items()))
             + (f"; {sum(k['uncoverable_ops'] for k in kinds.values()):,} operations needed a t beyond the ECC's reach"
                if any(k["uncoverable_ops"] for k in kinds.values()) else "")
             + (f" ({lost:,} of their reads failed to decode)" if (lost := sum(k["uncoverable_failures"]
                                                                          for k in kinds.values())) else ""))
    return {"met": met, "target_uber": target, "runs": how, "page_types": kinds, "words": words}


def _times(ratio: float) -> str:
    return f"{ratio:.3g}" if ratio < 100 else f"{ratio:,.0f}"


def summary(result: dict) -> dict:
    """The JSON the CLI prints: the verdict, then per run, without the per-operation traces."""
    out = {"verdict": verdict(result), **{k: v for k, v in result.items() if k not in ("runs", "traces")}}
    out["runs"] = [{k: r.get(k) for k in SUMMARY_KEYS} for r in result["runs"]]
    return out


def dumps(result: dict) -> str:
    return jsonsafe.dumps(summary(result), indent=2)


def wanted_blocks(rig: Rig, blocks: str | None, taken: Callable[[int], str | None]) -> list[int]:
    """The blocks of ``blocks`` (default: the first 64 that ``taken`` gives no reason against), refusing one for
    which ``taken`` gives a reason (the database's: a campaign holds it, it carries wear)."""
    info = rig.info()
    if not blocks:
        return [b for b in range(info.blocks) if not taken(b)][:64]
    wanted = parse_blocks(blocks, info.blocks)
    if why := next(filter(None, map(taken, wanted)), None):
        raise NandrigError(why)
    return wanted


def validate_blocks(rig: Rig, blocks: str | None, wordline: int | None, params, scale: float, echo, live,
                    density_control: bool, bound: float | None = None,
                    guarded: bool = False) -> tuple[dict, tuple[int, ...]]:
    """The validation on the fresh good blocks of ``blocks`` of a chip nothing records (a virtual one)."""
    pages = pages_under_test(rig.info().pages_per_block, wordline)
    wanted = wanted_blocks(rig, blocks, lambda b: None)
    bad = set(rig.scan_bad(min(wanted), max(wanted) - min(wanted) + 1))
    return validate(rig, params, [b for b in wanted if b not in bad], pages, scale, echo, live,
                    density_control=density_control, bound=bound, guarded=guarded), pages


@dataclass(frozen=True)
class ValidationParams:
    """A flares-validate campaign's parameters, as the store keeps them: its blocks in the order the scenarios
    (then the calibration) take them, the pages under test, FLARES' models (None: calibrated on the chip) and
    how FLARES runs."""

    blocks: tuple[int, ...]
    pages: tuple[int, ...]
    models: tuple[dict, ...] | None
    scale: float
    live: dict | None  # FlaresConfig's fields: the rig runs FLARES (--on-rig)
    density_control: bool
    bound: float | None
    guarded: bool  # the policy of the host replays (a live run's is in ``live``)

    @classmethod
    def from_mapping(cls, d: dict) -> "ValidationParams":
        return cls(tuple(d["blocks"]), tuple(d["pages"]), tuple(d["models"]) if d["models"] else None, d["scale"],
                   d["live"], d["density_control"], d["bound"], d["guarded"])

    def to_mapping(self) -> dict:
        return dataclasses.asdict(self)


def start_campaign(db, url: str, profile: str, seed: int, chip_label: str | None, take_over: bool,
                   blocks: str | None, wordline: int | None, params: list[RberParams] | None, scale: float, echo,
                   live: FlaresConfig | None, density_control: bool, bound: float | None = None,
                   guarded: bool = False) -> tuple[dict, int]:
    """The validation as a campaign of the chip's database: blocks a campaign holds or that carry recorded wear are
    refused (from the database alone when it knows the chip), the ones it takes reserved, every rig request
    journaled and its reply and wear recorded as it arrives (``nandrig resume`` goes on after a kill), the result
    stored for ``nandrig report``. Returns the result and the campaign's id."""
    store = Store(db)
    try:
        store.check_integrity()

        def taken(chip_id: int):
            why = {b: f"block {b} is reserved by campaign {s.reserved_by}" if s.reserved_by else
                   f"block {b} has {s.pe} P/E cycles recorded; the validation needs fresh blocks"
                   for b, s in store.block_states(chip_id).items() if s.reserved_by or s.pe}
            return why.get

        known = known_chip(store, url, profile, seed, chip_label)
        if known is not None and blocks:  # refused from the database alone, before a rig is taken
            if why := next(filter(None, map(taken(known), parse_blocks(blocks, store.chip(known)["blocks"]))), None):
                raise NandrigError(why)
        rig, chip_id = open_for_chip(store, url, profile, seed, chip_label, take_over=take_over)
        with rig:
            pages = pages_under_test(rig.info().pages_per_block, wordline)
            wanted = wanted_blocks(rig, blocks, taken(chip_id))
            for run_ in contiguous(store.unscanned(chip_id, wanted)):  # factory marks before anything is worn
                store.record_scan(chip_id, run_, rig.scan_bad(run_[0], len(run_)))
            bad = set(store.factory_bad(chip_id, wanted))
            use = plan([b for b in wanted if b not in bad], params is None)
            chosen = [b for part in use.values() for b in part]
            p = ValidationParams(tuple(chosen), pages, tuple(m.as_dict() | {"name": m.name} for m in params)
                                 if params else None, scale, dataclasses.asdict(live) if live else None,
                                 density_control, bound, guarded)
            cid = store.create_campaign(chip_id, KIND, p.to_mapping(), sorted(chosen), url, rig.hello_info.identity,
                                        versions(rig), 0, rig.target)
            echo(f"campaign {cid}: {KIND} on blocks {format_blocks(sorted(chosen))} in {store.name}")
            with store.lock(cid):
                return run_campaign(store, rig, cid, echo), cid
    finally:
        store.close()


def run_campaign(store: Store, rig: Rig, campaign_id: int, echo: Callable[[str], None] = lambda s: None) -> dict:
    """Run (or go on with) a flares-validate campaign, under its lock; its stored result once done."""
    c = store.campaign(campaign_id)
    if c.state != "running":
        return store.flares_run_of(c.id)
    p = ValidationParams.from_mapping(c.params)
    models = [RberParams.from_mapping(m) for m in p.models] if p.models else None
    with CallRecorder(store, rig, c) as rec:
        said = lambda s: None if rec.replaying else echo(s)  # noqa: E731 (what a replay passes was said before)
        result = validate(rig, models, list(p.blocks), p.pages, p.scale, said,
                          FlaresConfig(**p.live) if p.live else None, density_control=p.density_control,
                          bound=p.bound, guarded=p.guarded)
        with store.tx() as db:  # the result and the end together: a resume never stores a second result
            store.add_flares_run(store.chip(c.chip_id)["label"], result["blocks"]["operating-points"][0], p.pages[0],
                                 result, c.id, db)
            store.set_state(c.id, "done", f"{rec.n} rig requests", db)
    return result


def text_lines(result: dict) -> list[str]:
    """The run as text: each scenario's blocks and wear, the columns' meanings, a row per replay, the verdict."""
    out = []
    for scenario, w in result["wear"].items():
        out.append(f"{scenario}: blocks {format_blocks(w['blocks'])}, P/E planned {_span(w['planned_pe'])}, "
                   f"actual {_span(w['actual_pe'])}")
        for sw in (result["density_control"] or {}).get(scenario, {}).get("switches", []):
            out.append(f"  density control: block {sw['block']} {sw['from']} -> {sw['to']} at P/E {sw['pe']} "
                       f"(operation {sw['op']})")
    for name, meaning in COLUMNS.items():
        out.append(f"  {name}: {meaning}")
    out.append(f"{'scenario':<17} {'page':>9} {'alarm':>9} {'WSIZE':>5} {'MIX':>4} {'ops':>6} {'under':>6} {'uncov':>6} "
               f"{'fails':>6} {'past':>6} {'over':>6} {'alarms':>6}  gain video/web/varmail")
    for r in summary(result)["runs"]:
        g = r["read_gain_vs_fixed50"]
        over = "-" if r["mean_overprovision"] is None else f"{r['mean_overprovision']:.1f}"
        out.append(f"{r['scenario']:<17} {r['page_type']:>5} {r['page']:>3} {r['on_alarm']:>9} {r['wsize']:>5} {r['mix']:>4} "
                   f"{r['ops']:>6} {r['under_target_ops']:>6} {r['uncoverable_ops']:>6} "
                   f"{r['decode_failures'] + (r.get('uncoverable_failures') or 0):>6} "
                   f"{r['past_retention_ops'] or 0:>6} "
                   f"{over:>6} {r['rewrite_alarms']:>6}  "
                   f"{g['videoserver']:+.0%}/{g['webserver']:+.0%}/{g['varmail']:+.0%}")
    out.append(verdict(result)["words"])
    return out


def _span(values: list[int]) -> str:
    return str(values[0]) if len(values) == 1 else f"{values[0]}..{values[-1]} ({len(values)} points)"
