"""FLARES (Indaco et al., TACO 2014): the reference implementation, Alg. 1 (upPage) and Alg. 2.

It decides in the firmware's fixed point (:mod:`.flares_tables`): RBERs are
Q48 integers, MIX and SAFERANGE are per-mille, times are seconds. The C
module in ``firmware/flares/`` implements the same arithmetic; tests check
that both take identical decisions.

Where the paper leaves points open, this implementation decides:

* ``overc`` and ``criticalc`` are per page, kept with ``errc`` and ``failc``:
  a global counter would let one page's history move another page's t;
* one BCH codeword per page: 4096 data bytes protected over GF(2^16) (the
  paper's GF(2^13) cannot hold 32,768 data bits); PAGESIZE_bits = 32,768;
* the measured estimate ``meas`` is clamped at 0: a negative write-time RBER
  (the chip retaining better than the model) carries no information;
* a program encodes the page with ``p_next`` (so ``p_cur = p_next`` after it);
* "reset the counters" (overcorrection, critical) resets both ``overc`` and
  ``criticalc``; below their thresholds those zones leave ``p_next`` as it
  was, so a decision taken earlier waits for the next program instead of
  being undone; ``errc`` is zeroed at the end of every evaluation that does
  not stop on a rewrite alarm, and ``p_next`` stays within [t_min, t_max];
* ``meas`` divides ``errc`` by the bits of the window's *reads* (``reads``, kept with ``errc``), not of its
  WSIZE operations: a program adds no error count, so dividing by WSIZE would understate the page's RBER by
  the window's share of programs (20 % in the validation's mixes);
* the model terms of the projection (``RBER_wr`` and the retention term at REQ_RET_TIME) are taken at the
  wear the page will have when the window now starting ends: ``pecycles`` plus the wear the last window
  added (``pe_win`` is ``pecycles`` at the last evaluation, alarm or not). ``p_next`` serves every program
  until the next evaluation, so the data it protects is written up to a window's wear later; projecting at
  today's wear lags the chip by a window (90 P/E at WSIZE 100 in the continuous-wear scenario). The
  retention already seen (``RBER_rd(pecycles, ret)``) and the alarm stay at today's wear.
"""
from __future__ import annotations

import dataclasses
import enum
import math
from dataclasses import dataclass, field

from nandrig.characterization.flares_tables import GUARD_MEMORY, GUARD_MIN_EXPECTED, FixedTables
from nandrig.errors import NandrigError

ERRC_MAX = (1 << 15) - 1  # errc saturates here so errc << 48 fits 64 bits
READS_MAX = 0xFFFF  # reads saturate at 16 bits (errc, which they divide, saturates long before)
FAILC_MAX = 0xFF  # failc saturates at 8 bits (maxfail is at most 255)
U64_MAX = (1 << 64) - 1
U32_MAX = (1 << 32) - 1


class Zone(enum.IntEnum):
    NONE = 0  # no evaluation this operation
    ALARM = 1  # rewrite alarm: retention beyond max_ret_time(p_cur, pecycles)
    FAILURE = 2
    FAST = 3
    OVERCORRECTION = 4
    CRITICAL = 5
    SAFE = 6
    MEASURED = 7  # guarded FLARES: the page type's measured errors raised t above FLARES' decision


class FlaresAccess(enum.IntEnum):
    READ = 0
    PROGRAM = 1


@dataclass(frozen=True)
class FlaresConfig:
    wsize: int = 100
    mix_pm: int = 500  # MIX in per mille
    saferange_pm: int = 50
    maxfail: int = 3
    maxcritical: int = 5
    maxover: int = 15
    req_ret_s: int = 365 * 24 * 3600
    t_cap: int = 0  # the largest t the rig can use (its spare area, its engine); 0: the tables' t_max
    evaluate_on_alarm: bool = False  # True: an alarm does not stop Alg. 2 (not the paper's; docs/flares.md)
    # Guarded FLARES (docs/flares.md): FLARES' decision, never below the model's projection (tables from a
    # bound) times what the page type's measured errors say of it; reads that use more than alarm_use_pm of
    # their t raise a rewrite alarm
    guarded: bool = False
    guard_z10: int = 20  # the count bounds' z, in tenths: k + z*sqrt(k + 1) + z^2
    alarm_use_pm: int = 750

    def __post_init__(self) -> None:
        if not (1 <= self.wsize <= 1024 and 0 <= self.mix_pm <= 1000 and 0 <= self.saferange_pm <= 1000
                and 0 <= self.maxfail <= 255 and 0 <= self.maxcritical <= 255 and 0 <= self.maxover <= 255
                and 0 <= self.req_ret_s < 1 << 32 and 0 <= self.t_cap <= 255 and 0 <= self.guard_z10 <= 100
                and 0 <= self.alarm_use_pm <= 1000):
            raise NandrigError("FLARES constants out of range (wsize 1..1024, MIX, SAFERANGE and alarm use 0..1000 "
                               "per mille, thresholds and t cap 0..255, guard z 0..10.0)")

    @property
    def policy(self) -> str:
        return "guarded FLARES" if self.guarded else "FLARES"


@dataclass
class Pprof:
    """A page's profile. p_cur, pecycles and writestamp live in the spare area; the rest in RAM."""

    p_cur: int
    p_next: int
    pecycles: int = 0
    writestamp: int = 0
    errc: int = 0
    failc: int = 0
    overc: int = 0
    criticalc: int = 0
    ops: int = 0
    reads: int = 0  # reads whose errors errc holds
    pe_win: int = 0  # pecycles at the last evaluation (or when the profile began)
    p_flares: int = 0  # guarded: FLARES' own t for the data now on the page (its Alg. 2 runs on it, not on p_cur)
    counted: bool = False  # guarded: the data now on the page is in the type's counts (its first read was)


def count_bound(k: int, z10: int) -> int:
    """A one-sided upper bound on a Poisson count of which ``k`` was seen: k + z*sqrt(k + 1) + z^2, with z in
    tenths, rounded up, in integers (the firmware's arithmetic; conservative against the exact bound: 6 for
    k = 0 at z = 2.0, where the exact 97.7 % bound is 3.8; 124 for k = 100, where it is 122)."""
    return k + -(-z10 * math.isqrt(100 * (k + 1)) // 100) + -(-z10 * z10 // 100)


def age_s(now: int, stamp: int) -> int:
    """Seconds from a write stamp to ``now`` on FLARES' u32 clock, modulo 2**32 (as the firmware's unsigned
    subtraction): right across a wrap of the clock (136 years, which a run's baked retention can pass). A stamp
    from before a rig restart reads as old data: alarmed, the safe side."""
    return (now - stamp) & U32_MAX


def mul_div(a: int, b: int, c: int) -> int:
    """a * b // c for unsigned 64-bit a, b, c > 0, saturating at 2^64 - 1 (the firmware's 128-bit product)."""
    return min(a * b // c, U64_MAX)


@dataclass
class TypeCounts:
    """Guarded FLARES' online estimate of each page type's RBER against its model (index: PageType): the errors
    its reads measured and the errors the model expected of the same reads (Q16), halved together as the
    expectation passes GUARD_MEMORY errors, so the estimate follows the chip as it wears."""

    errors: list[int] = field(default_factory=lambda: [0, 0])
    expected_q16: list[int] = field(default_factory=lambda: [0, 0])
    pe_ref: list[int] = field(default_factory=lambda: [0, 0])  # the wear the counts were gathered at

    def near(self, page_type: int, pe: int) -> bool:
        """Whether counts gathered at pe_ref say anything of wear ``pe``: within a factor of 2 of it (a model's
        error at one wear is not its error at another)."""
        ref = self.pe_ref[page_type]
        return pe <= 2 * ref and ref <= 2 * pe


@dataclass(frozen=True)
class Decision:
    zone: Zone
    p: int = 0  # the t FLARES computed for the projected RBER
    proj: int = 0  # projected RBER, Q48
    alarm: bool = False
    invalidate: bool = False
    beyond_reach: bool = False  # the projection needs more than t_cap corrects (the C module's ``beyond``)


@dataclass
class Flares:
    tables: FixedTables  # the model for every page, or for lower pages when ``upper`` is given
    config: FlaresConfig = field(default_factory=FlaresConfig)
    upper: FixedTables | None = None  # upper pages' own model (the C module's FLARES_MODELS 2)
    types: TypeCounts = field(default_factory=lambda: TypeCounts())  # guarded FLARES' counts per page type

    def model(self, page_type: int) -> FixedTables:
        """The tables serving a page type (nandrig.chip.geometry.PageType: 0 lower, 1 upper)."""
        return self.upper if page_type == 1 and self.upper is not None else self.tables

    @property
    def t_cap(self) -> int:
        cap = self.config.t_cap
        return min(cap, self.tables.t_max) if cap else self.tables.t_max

    def end_projection(self, pe: int, page_type: int = 0) -> int:
        """The model's RBER (Q48) for data written at wear ``pe`` at the end of the retention target."""
        ft = self.model(page_type)
        return ft.rber_wr(pe) + ft.rber_rd(pe, self.config.req_ret_s)

    def _cold_proj(self, pe: int, page_type: int) -> int:
        """FLARES doubles the model's projection (its stated accuracy); guarded FLARES takes its own projection
        (the model from a bound, raised by what the page type's reads measured)."""
        if self.config.guarded:
            return self.guarded_t(pe, page_type)[1]
        return 2 * self.end_projection(pe, page_type)

    def reach(self, page_type: int = 0) -> int:
        """The largest RBER (Q48) t_cap corrects: a projection above it is beyond the rig's reach."""
        ft = self.model(page_type)
        return ft.rber_max[self.t_cap - ft.t_min]

    def cold_start(self, pe: int, page_type: int = 0) -> int:
        """The t for a page with no history at wear ``pe``: the model's projection with a margin of 2,
        the model's stated accuracy (a measurement corrects it after the first window)."""
        if self.config.guarded:
            return min(self.guarded_t(pe, page_type)[0], self.t_cap)
        return min(self.model(page_type).t_for(self._cold_proj(pe, page_type)), self.t_cap)

    def cold_start_beyond(self, pe: int, page_type: int = 0) -> bool:
        """Whether that projection needs more than t_cap corrects."""
        return self._cold_proj(pe, page_type) > self.reach(page_type)

    def new_page(self, t: int | None = None, pe: int = 0) -> Pprof:
        """A profile for a page with no history, encoded at ``t``, its block at wear ``pe``."""
        t = self.tables.t_min if t is None else t
        return Pprof(p_cur=t, p_next=t, pecycles=pe, pe_win=pe, p_flares=self.tables.t_min)

    def up_page(self, pp: Pprof, access: FlaresAccess, deterr: int, fail: bool, now: int,
                page_type: int = 0, errors: int | None = None, codewords: int = 1) -> Decision:
        """Alg. 1 for one operation on the page, then Alg. 2 when its window is full. Guarded FLARES counts a
        read as it was: ``errors`` corrected over its ``codewords`` data codewords (default: ``deterr`` over one;
        a failed read adds t + 1 for its failure), where FLARES' ``deterr`` is their mean rounded up."""
        cfg = self.config
        used = False  # guarded: this read used more of its t than the alarm allows, or its data is too old
        if access == FlaresAccess.READ:
            pp.errc = min(pp.errc + (pp.p_cur + 1 if fail else deterr), ERRC_MAX)
            pp.reads = min(pp.reads + 1, READS_MAX)
            pp.failc = min(pp.failc + fail, FAILC_MAX)
            if cfg.guarded:
                # a read of data older than its t protects: due a refresh now, not at the window's end
                used = (fail or deterr * 1000 > cfg.alarm_use_pm * pp.p_cur
                        or self._past_retention(pp, page_type, age_s(now, pp.writestamp)))
                if not pp.counted:  # a program's first read only: rereads find the same weak cells again,
                    pp.counted = True  # and counting them as new evidence would narrow the bound falsely
                    seen = (deterr if errors is None else errors) + (pp.p_cur + 1 if fail else 0)
                    self._count(pp, page_type, min(seen, U32_MAX), max(codewords, 1), now)
        else:
            pp.pecycles += 1
            pp.writestamp = now
            pp.p_cur = pp.p_next
            pp.counted = False
            if cfg.guarded:  # the data written now gets FLARES' t or the guard's at this wear, whichever is more
                pp.p_cur = min(max(pp.p_flares, self.guarded_t(pp.pecycles, page_type)[0]), self.t_cap)
        pp.ops += 1
        if pp.ops < cfg.wsize:
            return Decision(Zone.NONE, alarm=used)
        pp.ops = 0
        d = self.evaluate(pp, now, page_type)
        return dataclasses.replace(d, alarm=True) if used else d

    def evaluate(self, pp: Pprof, now: int, page_type: int = 0) -> Decision:
        """Alg. 2."""
        ft, cfg = self.model(page_type), self.config
        ret = age_s(now, pp.writestamp)
        ahead = pp.pecycles + max(pp.pecycles - pp.pe_win, 0)  # the wear at the end of the next window
        pp.pe_win = pp.pecycles
        alarm = self._past_retention(pp, page_type, ret)
        rd_now = ft.rber_rd(pp.pecycles, ret)
        meas = (pp.errc << 48) // (ft.codeword_bits * max(pp.reads, 1))
        meas = max(meas - rd_now, 0)
        model = ft.rber_wr(ahead)
        avg = (cfg.mix_pm * meas + (1000 - cfg.mix_pm) * model) // 1000
        proj = avg + ft.rber_rd(ahead, cfg.req_ret_s)
        seen = proj  # the projection the decision reports: FLARES', or the guard's when that is more
        if cfg.guarded:
            t, guarded, raised = self.guarded_t(ahead, page_type)  # what the next programs will get, as it stands
            seen = max(proj, guarded)
        if alarm and not cfg.evaluate_on_alarm:  # Alg. 2 stops here; whether any t can hold the data still counts
            return Decision(Zone.ALARM, alarm=True, beyond_reach=seen > self.reach(page_type))
        p = ft.t_for(proj)
        cur = pp.p_flares if cfg.guarded else pp.p_cur  # guarded: FLARES runs on its own t, the guard beside it
        nxt = pp.p_flares if cfg.guarded else pp.p_next  # overcorrection and critical below their thresholds keep it
        top = ft.rber_max[cur - ft.t_min]
        invalidate = False
        if pp.failc > cfg.maxfail:
            zone = Zone.FAILURE
            invalidate = True
            nxt = max(pp.p_cur + 1, p)  # above the t that failed, whichever track chose it
            pp.failc = 0
        elif p > cur:
            zone = Zone.FAST
            nxt = p
        elif p < cur:
            zone = Zone.OVERCORRECTION
            pp.overc += 1
            if pp.overc > cfg.maxover:
                nxt = cur - 1
                pp.overc = pp.criticalc = 0
        elif proj * 1000 >= top * (1000 - cfg.saferange_pm):
            zone = Zone.CRITICAL
            pp.criticalc += 1
            if pp.criticalc > cfg.maxcritical:
                nxt = cur + 1
                pp.overc = pp.criticalc = 0
        else:
            zone = Zone.SAFE
            nxt = cur
        nxt = min(max(nxt, ft.t_min), self.t_cap)
        if cfg.guarded:
            pp.p_flares = nxt
            if t > nxt:
                nxt = min(t, self.t_cap)
                zone = Zone.MEASURED if raised else zone
        pp.p_next = nxt
        pp.errc = pp.reads = 0
        return Decision(zone, p, seen, alarm, invalidate, seen > self.reach(page_type))

    def _past_retention(self, pp: Pprof, page_type: int, ret: int) -> bool:
        """Whether the page's data, ``ret`` seconds old, is older than its t protects at its wear."""
        limit = self.model(page_type).max_ret_seconds(pp.p_cur, pp.pecycles)
        return limit is not None and ret > limit

    def _count(self, pp: Pprof, page_type: int, errors: int, codewords: int, now: int) -> None:
        """A read of the page type: its errors, and the errors the model expects of its ``codewords`` (at the
        page's wear and age), into the type's counts; both halve as the expectation passes GUARD_MEMORY errors,
        and start over at a wear the counts do not speak for."""
        ft, n = self.model(page_type), self.types
        rate = ft.rber_wr(pp.pecycles) + ft.rber_rd(pp.pecycles, age_s(now, pp.writestamp))
        if not n.expected_q16[page_type] or not n.near(page_type, pp.pecycles):  # a new wear band
            while n.expected_q16[page_type] >= GUARD_MIN_EXPECTED << 16:  # what was measured below it stays a
                n.errors[page_type] >>= 1  # prior (guarded_t): weighed below a test of the model, so this
                n.expected_q16[page_type] >>= 1  # band's reads soon outweigh it
            n.pe_ref[page_type] = pp.pecycles
        n.errors[page_type] = min(n.errors[page_type] + errors, U32_MAX)
        n.expected_q16[page_type] += mul_div(rate, ft.codeword_bits * codewords, 1 << 32)
        if n.expected_q16[page_type] > GUARD_MEMORY << 16:
            n.errors[page_type] >>= 1
            n.expected_q16[page_type] >>= 1

    def guarded_t(self, pe: int, page_type: int) -> tuple[int, int, bool]:
        """Guarded FLARES' t at wear ``pe``: the model's projection to the end of the retention target times the
        page type's measured-to-expected ratio, at its upper count bound (errors + z*sqrt(errors + 1) + z^2 over
        what the model expected of the same reads), never less than the model's own. Until the type's reads have
        tested the model (GUARD_MIN_EXPECTED errors expected, at a wear near ``pe``), FLARES' margin of 2 stands
        in, or the ratio the type's reads measured at a lower wear (its point value) when that is more. Returns
        the t, the projection, and whether the measurement raised it above the model's."""
        ft, n = self.model(page_type), self.types
        end = self.end_projection(pe, page_type)
        errors, expected = n.errors[page_type], n.expected_q16[page_type]
        if expected < GUARD_MIN_EXPECTED << 16 or not n.near(page_type, pe):
            # untested here: FLARES' margin of 2, or the ratio measured at a lower wear when that is more (a chip
            # worse than its model at 1,000 P/E is not better at 2,000 before a read says so)
            prior = mul_div(end, errors << 16, expected) if expected else 0
            proj = max(2 * end, prior)
            return ft.t_for(proj), proj, prior > 2 * end and ft.t_for(prior) > ft.t_for(2 * end)
        measured = mul_div(end, count_bound(errors, self.config.guard_z10) << 16, expected)
        if measured <= end:
            return ft.t_for(end), end, False
        return ft.t_for(measured), measured, ft.t_for(measured) > ft.t_for(end)
