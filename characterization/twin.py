"""The statistics of a chip's digital twin (`nandrig sim profile --from-db`, boards/sim/twin.py): what a chip's
campaigns say of its timing, its supply currents and its wear and retention laws, each with a 95 % interval,
and how a twin's RBER compares with the chip's on held-out conditions. Plain data in, plain data out: the
store's side gathers the inputs (host/views/twin_inputs.py), the simulated board's side makes the profile.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from nandrig.characterization.fitting import fit_measurements
from nandrig.characterization.measurements import Measurements
from nandrig.chip.geometry import PageMap, PageType
from nandrig.errors import NandrigError

GENERIC = "mlc-3x"  # the virtual chip profile whose values a twin keeps where its chip's data say nothing


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


@dataclass(frozen=True)
class LevelCheck:
    """A held-out (P/E, retention) level: the chip's RBER and the twin's under the same campaign, and how far
    apart they are in their combined noise (counting, and the spread of the blocks each pooled)."""

    pe: int
    retention_h: float
    measured: float
    twin: float
    z: float


def check_rber(measured: list[dict], twin: list[dict]) -> list[LevelCheck]:
    """Rows of the same campaign on the chip and on its twin (``export_rows(..., by_block=True)``), level by level."""
    def levels(rows):
        out: dict[tuple, list[dict]] = {}
        for r in rows:
            out.setdefault((r["pe"], r["retention_h"]), []).append(r)
        return out

    def mean_var(rs) -> tuple[float, float]:
        errors, bits = sum(r["errors"] for r in rs), sum(r["bits"] for r in rs)
        block = [sum(x["errors"] for x in rs if x["block"] == b) / sum(x["bits"] for x in rs if x["block"] == b)
                 for b in sorted({x["block"] for x in rs})]
        mean = errors / bits
        spread = float(np.var(block, ddof=1)) / len(block) if len(block) > 1 else 0.0
        return mean, max(errors, 1) / bits**2 + spread  # counting (Poisson) plus the blocks' scatter about it

    out = []
    twin_levels = levels(twin)
    for key, rs in sorted(levels(measured).items()):
        if key not in twin_levels:
            continue
        (m, vm), (t, vt) = mean_var(rs), mean_var(twin_levels[key])
        out.append(LevelCheck(int(key[0]), float(key[1]), m, t, (m - t) / math.sqrt(vm + vt)))
    return out
