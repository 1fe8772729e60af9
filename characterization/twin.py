"""The statistics of a chip's digital twin (`nandrig sim profile --from-db`, boards/sim/twin.py): what a chip's
campaigns say of its timing, its supply currents and its wear and retention laws, each with a 95 % interval,
and how a twin's RBER compares with the chip's on held-out conditions. Plain data in, plain data out: the
store's side gathers the inputs (host/views/twin_inputs.py), the simulated board's side makes the profile.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from nandrig.characterization.fitting import fit_measurements
from nandrig.characterization.measurements import Measurements
from nandrig.chip.geometry import PageMap, PageType
from nandrig.errors import NandrigError

GENERIC = "mlc-3x"  # the virtual chip profile whose values a twin keeps where its chip's data say nothing


@dataclass(frozen=True)
class BlockLevel:
    """A (P/E, retention) level's errors and bits per block (its page types pooled)."""

    pe: float
    retention_h: float
    errors: np.ndarray
    bits: np.ndarray


def block_levels(rows: list[dict], min_errors: int = 50) -> list[BlockLevel]:
    """The levels of by-block rows (``export_rows(..., by_block=True)``) at which three blocks or more each have
    ``min_errors`` errors: where a block's RBER is known well enough for its scatter to show."""
    by: dict[tuple, dict[int, list[int]]] = {}
    for r in rows:
        e_b = by.setdefault((r["campaign"], r["pe"], r["retention_h"]), {}).setdefault(r["block"], [0, 0])
        e_b[0] += r["errors"]
        e_b[1] += r["bits"]
    out = []
    for (_, pe, h), blocks in sorted(by.items()):
        e, b = (np.array(v, float) for v in zip(*blocks.values()))
        if len(e) >= 3 and e.min() >= min_errors:
            out.append(BlockLevel(float(pe), float(h), e, b))
    return out


def block_spread(levels: list[BlockLevel], gain: np.ndarray) -> tuple[float, tuple[float, float]]:
    """The block-to-block spread sigma (a block's constants scale as exp(sigma z)) that accounts for the scatter
    of the blocks' log RBER beyond their counting noise, level by level: its variance is 1/errors per block plus
    sigma^2 ``gain`` (the level's sum of squared sensitivities of log RBER to the varied constants). Pooled by
    moments over the levels, each by its degrees of freedom; the 95 % interval from the sample variances'
    chi-square spread."""
    k = np.array([len(lv.errors) - 1 for lv in levels], float)
    var = np.array([np.var(np.log(lv.errors / lv.bits), ddof=1) for lv in levels])
    counting = np.array([np.mean(1 / lv.errors) for lv in levels])
    den = float(np.sum(k * gain))
    s2 = float(np.sum(k * (var - counting))) / den
    se = math.sqrt(float(np.sum(2 * k * var**2))) / den  # var of a sample variance: 2 sigma^4 / dof
    lo, hi = max(s2 - 1.96 * se, 0.0), max(s2 + 1.96 * se, 0.0)
    return math.sqrt(max(s2, 0.0)), (math.sqrt(lo), math.sqrt(hi))


@dataclass(frozen=True)
class TwinInputs:
    """What a store holds of one chip for its twin."""

    label: str
    database: str
    campaigns: tuple[int, ...]
    param_page: bytes  # the READ PARAMETER PAGE dump the store kept
    read_id: bytes
    page_map: PageMap
    ops: list  # (campaign id, OpTime): every timed operation
    metered: list  # (campaign id, (OpTime, (busy_pj, busy_ns, transfer_pj, transfer_ns, idle_uw)))
    rber_rows: list[dict]  # export rows (host/views/export.py) of the campaigns that read pattern pages back
    rber_campaigns: tuple[int, ...]
    block_rows: list[dict] = field(default_factory=list)  # the same rows per block and page type
    disturb_rows: list[dict] = field(default_factory=list)  # rows read after read disturb
    factory_bad: tuple[int, ...] = ()  # the blocks its scans found marked bad
    scanned: int = 0  # how many blocks were scanned


@dataclass(frozen=True)
class Part:
    """One fitted (or kept) value of the twin's profile."""

    field: str  # its place in the profile, e.g. "timing.t_r_us"
    value: float | None  # None: not one number (the geometry, the verify levels)
    ci95: tuple[float, float] | None
    source: str  # what identified it, or why it is the generic value


def _linear(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float, float]:
    """y = a + b x by least squares: a, b and their standard errors (b's 0 when x does not vary)."""
    if np.ptp(x) == 0:
        sd = float(np.std(y, ddof=1)) if len(y) > 1 else 0.0
        return float(np.mean(y)), 0.0, sd / math.sqrt(len(y)), 0.0
    A = np.column_stack([np.ones_like(x), x])
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    resid = y - A @ coef
    s2 = float(resid @ resid) / max(len(y) - 2, 1)
    cov = s2 * np.linalg.inv(A.T @ A)
    return float(coef[0]), float(coef[1]), math.sqrt(cov[0, 0]), math.sqrt(cov[1, 1])


def _ci(v: float, se: float) -> tuple[float, float]:
    return (v - 1.96 * se, v + 1.96 * se)


def kept(field: str, value: float, campaign: str) -> Part:
    return Part(field, value, None, f"not identified: {GENERIC}'s value kept; `nandrig run {campaign}` on this "
                                    "chip identifies it")


def fit_timing(t: dict, ops: list, pm: PageMap, endurance: int) -> list[Part]:
    """Fit ``t`` (a profile's timing fields, generic values in) to the timed operations; the parts."""
    out: list[Part] = []
    src = lambda rows: (f"{len(rows):,} timed operations of campaign{'s' if len({c for c, _ in rows}) > 1 else ''} "  # noqa: E731
                        f"{', '.join(str(c) for c in sorted({c for c, _ in rows}))}")
    jitter_rel: list[np.ndarray] = []
    reads = {pt: [(c, o) for c, o in ops if o.op == "read" and pm.page_type(o.page) == pt] for pt in PageType}
    for pt, field in ((PageType.UPPER, "t_r_us"), (PageType.LOWER, "t_r_lsb_us")):
        rows = reads[pt]
        if not rows:
            out.append(kept(f"timing.{field}", t[field] or t["t_r_us"], "latency"))
            continue
        us = np.array([o.busy_ns for _, o in rows], float) / 1e3
        t[field] = float(us.mean())
        out.append(Part(f"timing.{field}", t[field], _ci(t[field], us.std(ddof=1) / math.sqrt(len(us))), src(rows)))
        jitter_rel.append(us / us.mean() - 1)
    drops = []
    for pt, field in ((PageType.LOWER, "t_prog_lsb_us"), (PageType.UPPER, "t_prog_msb_us")):
        rows = [(c, o) for c, o in ops if o.op == "program" and pm.page_type(o.page) == pt]
        if not rows:
            out.append(kept(f"timing.{field}", t[field], "latency"))
            continue
        # the chip's program time: t (1 - drop x) at x = min(P/E / endurance, 1.5)
        x = np.minimum(np.array([o.pe for _, o in rows], float) / endurance, 1.5)
        us = np.array([o.busy_ns for _, o in rows], float) / 1e3
        a, b, sa, sb = _linear(x, us)
        t[field] = a
        out.append(Part(f"timing.{field}", a, _ci(a, sa), src(rows)))
        if np.ptp(x) > 0:
            drops.append((-b / a, sb / a, rows))
        jitter_rel.append(us / (a + b * x) - 1)
    if drops:
        w = np.array([1 / max(s, 1e-12) ** 2 for _, s, _ in drops])
        d = float(np.sum(w * [v for v, _, _ in drops]) / w.sum())
        t["t_prog_drop"] = d
        out.append(Part("timing.t_prog_drop", d, _ci(d, 1 / math.sqrt(w.sum())),
                        src([r for _, _, rows in drops for r in rows])))
    else:
        out.append(kept("timing.t_prog_drop", t["t_prog_drop"], "latency --checkpoints at two wear levels or more"))
    rows = [(c, o) for c, o in ops if o.op == "erase"]
    if rows:
        x = np.minimum(np.array([o.pe for _, o in rows], float) / endurance, 2.0)
        us = np.array([o.busy_ns for _, o in rows], float) / 1e3
        a, b, sa, sb = _linear(x, us)
        t["t_bers_us"] = a
        out.append(Part("timing.t_bers_us", a, _ci(a, sa), src(rows)))
        if np.ptp(x) > 0:
            t["t_bers_growth"] = b / a
            out.append(Part("timing.t_bers_growth", b / a, _ci(b / a, sb / a), src(rows)))
        else:
            out.append(kept("timing.t_bers_growth", t["t_bers_growth"], "latency --checkpoints at two wear levels"))
        jitter_rel.append(us / (a + b * x) - 1)
    else:
        out += [kept("timing.t_bers_us", t["t_bers_us"], "latency"),
                kept("timing.t_bers_growth", t["t_bers_growth"], "latency")]
    if jitter_rel:
        rel = np.concatenate(jitter_rel)
        # each operation's time is the mean times (1 + jitter u), u uniform on [-1, 1]: sd jitter / sqrt(3)
        j = math.sqrt(3) * float(np.std(rel, ddof=1))
        t["jitter"] = j
        out.append(Part("timing.jitter", j, None, f"the spread of {len(rel):,} timed operations about their fits"))
    else:
        out.append(kept("timing.jitter", t["jitter"], "latency"))
    return out


def fit_power(pw: dict, metered: list) -> list[Part]:
    """Fit ``pw`` (a profile's power fields, generic values in) to the metered operations; the parts."""
    vcc = pw["vcc_v"]  # a current sense integrates current x its own supply: energy is what it pins
    out: list[Part] = []
    phases = {"read": "icc_read_ma", "program": "icc_program_ma", "erase": "icc_erase_ma"}
    for op, field in phases.items():
        rows = [e for _, (o, e) in metered if o.op == op and e[1] > 0]
        if not rows:
            out.append(kept(f"power.{field}", pw[field], "latency on a rig with a current sense"))
            continue
        ma = np.array([e[0] / e[1] / vcc for e in rows])
        pw[field] = float(ma.mean())
        se = ma.std(ddof=1) / math.sqrt(len(ma)) if len(ma) > 1 else 0.0
        step = 0.5 / min(e[1] for e in rows) / vcc  # the meter counts whole pJ: its resolution bounds the mean's
        lo, hi = _ci(pw[field], se)
        out.append(Part(f"power.{field}", pw[field], (lo - step, hi + step), f"{len(rows):,} metered {op}s"))
    rows = [e for _, (_, e) in metered if e[3] > 0]
    if rows:
        pw["icc_io_ma"] = float(sum(e[2] for e in rows) / sum(e[3] for e in rows) / vcc)
        out.append(Part("power.icc_io_ma", pw["icc_io_ma"], None, f"{len(rows):,} metered transfers"))
    else:
        out.append(kept("power.icc_io_ma", pw["icc_io_ma"], "latency on a rig with a current sense"))
    idle = [e[4] for _, (_, e) in metered if e[4]]
    if idle:
        pw["icc_idle_ma"] = float(np.mean(idle)) / 1e3 / vcc
        out.append(Part("power.icc_idle_ma", pw["icc_idle_ma"], None, f"{len(idle):,} idle readings"))
    else:
        out.append(kept("power.icc_idle_ma", pw["icc_idle_ma"], "latency on a rig with a current sense"))
    return out


def rber_laws(rows: list[dict], campaigns: tuple[int, ...]) -> tuple[list[Part], str]:
    """FLARES' eq. 5 fitted to the chip's RBER rows: its laws' parts, and the words naming those rows. Refused in
    one line, naming the campaigns to run, without two wear levels and a retention time."""
    levels = {(r["pe"], r["retention_h"]) for r in rows}
    if len({pe for pe, _ in levels}) < 2 or not any(h > 0 for _, h in levels):
        have = f"{len(rows)} RBER rows at {len(levels)} (P/E, retention) levels" if rows else "no RBER rows"
        raise NandrigError(f"the twin's wear and retention need RBER at several wear levels and retention times "
                           f"({have}): `nandrig run endurance` on this chip gives the wear, `nandrig run retention "
                           f"--wear ... --hours ...` the retention")
    names = f"campaign{'s' if len(campaigns) > 1 else ''} {', '.join(map(str, campaigns))}"
    col = lambda k: np.array([r[k] for r in rows], float)  # noqa: E731
    fit = fit_measurements(Measurements(col("pe"), col("retention_h"), col("rber"), col("bits")))
    parts = [Part(f"rber.{k}", float(v), tuple(fit.ci95[k]) if fit.ci95.get(k) else None,
                  f"FLARES' eq. 5 fitted to the {fit.n_points} RBER rows of {names} (R^2 log {fit.r2_log:.3f})")
             for k, v in fit.params.items() if isinstance(v, (int, float))]
    return parts, names


Z_AGREE = 2.0  # a level agrees when chip and twin are within this many standard deviations
SHARE_AGREE = 0.9  # and a campaign's RBER when this share of its levels do (issue 46's held-out criterion)
TIME_AGREE = 0.02  # a mean busy time per operation and page type: within 2 % (the latency criterion)
ENERGY_AGREE = 0.05  # a mean busy energy per operation: within 5 % (the energy criterion)


@dataclass(frozen=True)
class LevelCheck:
    """A level of a campaign (P/E, retention, read count and read-reference offset): the chip's RBER and the
    twin's under the same campaign, and how far apart they are in their combined noise (counting, and the
    spread of the blocks each pooled)."""

    pe: int
    retention_h: float
    measured: float
    twin: float
    z: float
    reads: int = 0
    offset: int = 0
    sd: float = 0.0  # the difference's standard deviation: z = (measured - twin) / sd


def _levels(rows: list[dict]) -> dict[tuple, list[dict]]:
    out: dict[tuple, list[dict]] = {}
    for r in rows:
        out.setdefault((r["pe"], r["retention_h"], r.get("reads", 0), r.get("offset", 0)), []).append(r)
    return out


def _mean_var(rs: list[dict]) -> tuple[float, float]:
    """A level's pooled RBER and its variance: counting (Poisson) plus its blocks' scatter about the mean."""
    errors, bits = sum(r["errors"] for r in rs), sum(r["bits"] for r in rs)
    block = [sum(x["errors"] for x in rs if x["block"] == b) / sum(x["bits"] for x in rs if x["block"] == b)
             for b in sorted({x["block"] for x in rs})]
    spread = float(np.var(block, ddof=1)) / len(block) if len(block) > 1 else 0.0
    return errors / bits, max(errors, 1) / bits**2 + spread


def check_rber(measured: list[dict], twin: list[dict]) -> list[LevelCheck]:
    """Rows of the same campaign on the chip and on its twin (``export_rows(..., by_block=True)``), level by level."""
    out = []
    twin_levels = _levels([r for r in twin if r["bits"]])
    for key, rs in sorted(_levels([r for r in measured if r["bits"]]).items()):
        if key not in twin_levels:
            continue
        (m, vm), (t, vt) = _mean_var(rs), _mean_var(twin_levels[key])
        sd = math.sqrt(vm + vt)
        out.append(LevelCheck(int(key[0]), float(key[1]), m, t, (m - t) / sd, int(key[2]), int(key[3]), sd))
    return out


@dataclass(frozen=True)
class OpCheck:
    """Timed operations of one kind (an erase, or a program or read of one page type) in the same campaign on the
    chip and on its twin: mean busy time and mean busy energy per operation (None: not metered)."""

    op: str
    page_type: str  # "" for an erase
    n: int
    measured_us: float
    twin_us: float
    measured_nj: float | None
    twin_nj: float | None

    @property
    def time_off(self) -> float:
        return self.twin_us / self.measured_us - 1

    @property
    def energy_off(self) -> float | None:
        if self.measured_nj is None or self.twin_nj is None:
            return None
        return self.twin_nj / self.measured_nj - 1


def check_ops(measured: list[tuple], twin: list[tuple]) -> list[OpCheck]:
    """Timed operations of the same campaign on the chip and on its twin, each (op, page type, busy ns, busy pJ
    or None), per operation and page type."""
    def groups(ops) -> dict[tuple[str, str], tuple[int, float, float | None]]:
        by: dict[tuple[str, str], list] = {}
        for op, pt, ns, pj in ops:
            by.setdefault((op, pt), []).append((ns, pj))
        out = {}
        for k, v in by.items():
            pj = [e for _, e in v if e is not None]
            out[k] = (len(v), float(np.mean([ns for ns, _ in v])) / 1e3, float(np.mean(pj)) / 1e3 if pj else None)
        return out

    m, t = groups(measured), groups(twin)
    return [OpCheck(op, pt, m[(op, pt)][0], m[(op, pt)][1], t[(op, pt)][1], m[(op, pt)][2], t[(op, pt)][2])
            for op, pt in sorted(m) if (op, pt) in t]


def verdict(levels: list[LevelCheck], ops: list[OpCheck]) -> str:
    """One line: whether the twin ran a campaign as the chip did, and where it did not."""
    off = []
    bad = [lv for lv in levels if abs(lv.z) > Z_AGREE]
    if levels and len(levels) - len(bad) < SHARE_AGREE * len(levels):
        worst = max(bad, key=lambda lv: abs(lv.z))
        at = f"{worst.pe:,} P/E, {worst.retention_h:g} h" + (f", {worst.reads:,} reads" if worst.reads else "")
        off.append(f"{len(bad)} of {len(levels)} RBER levels beyond |z| {Z_AGREE:g} (worst: {at}, z {worst.z:+.1f})")
    for o in ops:
        what = f"{o.op} {o.page_type}".strip()
        if abs(o.time_off) > TIME_AGREE:
            off.append(f"{what} time {o.time_off:+.1%}")
        if o.energy_off is not None and abs(o.energy_off) > ENERGY_AGREE:
            off.append(f"{what} energy {o.energy_off:+.1%}")
    return "differs: " + "; ".join(off) if off else "agrees"
