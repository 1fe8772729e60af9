"""An upper prediction bound of a page type's RBER: what a block not yet measured will show, at a stated confidence.

A fit's curve is what the average measured row does. Tables built on it give every block above that average
too little t from its first program (the cold start FLARES misses on). The bound scales the fitted model by
one factor, k = exp(z * s), with

* ``s_row``: how far one measured row (a block at one wear level and time) sits from the curve beyond its
  counting noise, on a log scale: the method of moments over the rows with errors, weighted by their counts
  (sum(count * r^2 - 1) / sum(count), r = ln(measured / model): a row of few errors says little), times
  rows / (rows - max(levels, parameters)), the scatter the fitted curve absorbed. Block-to-block spread and
  the model's misfit both land here;
* ``s_fit``: the curve's own uncertainty (its 95 % band over the fit's t quantile, on a log scale) at the
  retention the tables promise, the largest from the least-worn row to the wear they serve (the t a table
  gives covers the RBER a page reaches at that retention: fresh reads have less, however loose the fit is there);
* ``z``: the one-sided quantile of the confidence, Student's t with the rows' degrees of freedom.

One factor keeps eq. 5's form (A, C and Bo scale; B, m and n stay), so the tables, the rig's fixed point and
every consumer of :class:`RberParams` take the bound unchanged. Assumed: a row's log error is normal about the
curve with one spread at every wear level and time (the rows a fit has rarely show more), and the dies the
tables will serve are like the ones measured (a bound from one die says nothing of another). Below the
least-worn row's wear the curve is an extrapolation the rows do not test (at 10 P/E from rows at 1,000 P/E, one
virtual die's upper-page bound was 1.3e-6 where its reads measured 1.1e-5); RBER grows with wear, so there the bound serves the RBER at that row's
wear (``pe_floor``). Likewise in time: the retention a table promises for a t (max_ret_time, what rewrite
alarms fire on) is never longer than the longest retention measured (``hours_max``): the model's time law beyond
it is untested, and dies read at two years broke the tables' longer promises (docs/flares.md).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from scipy import stats

from nandrig.characterization.fitting import FitResult, fit
from nandrig.characterization.rber import RETENTION_LAWS, RberParams
from nandrig.errors import NandrigError

ROWS_MIN = 3  # rows with errors the spread is estimated from (fewer: no bound, said so)
GRID = 25  # wear levels the curve's uncertainty is evaluated at


class Unbounded(NandrigError):
    """The fit leaves a parameter the data do not constrain, so its band (and any bound) is infinite."""


@dataclass(frozen=True)
class RberBound:
    confidence: float  # one-sided: the fraction of rows the bound is meant to hold above
    s_row: float  # a row's scatter about the curve beyond counting noise (log scale)
    s_fit: float  # the curve's own uncertainty, largest over the domain (log scale)
    rows: int  # rows with errors s_row was estimated from
    dof: int  # its degrees of freedom: rows less the levels (or parameters) the curve took
    pe_floor: float = 0.0  # the least-worn row's wear: below it the bound serves that wear's RBER
    hours_max: float = math.inf  # the longest retention measured: no table promises more

    @property
    def z(self) -> float:
        """Student's t quantile: s_row is itself an estimate from a few blocks, and a bound from eight is wider
        than the normal quantile makes it."""
        return float(stats.t.ppf(self.confidence, self.dof))

    @property
    def factor(self) -> float:
        return math.exp(self.z * math.hypot(self.s_row, self.s_fit))

    def apply(self, params: RberParams) -> RberParams:
        k = self.factor
        return replace(params, A=params.A * k, C=params.C * k, Bo=params.Bo * k, pe_floor=self.pe_floor,
                       hours_max=self.hours_max,
                       name=f"{params.name or 'fit'} at its {self.confidence * 100:g}% upper bound (x{k:.2f})")

    def to_json(self) -> dict:
        return {"confidence": self.confidence, "quantile": self.z, "s_row": self.s_row, "s_fit": self.s_fit,
                "rows": self.rows, "dof": self.dof, "factor": self.factor,
                "pe_floor": self.pe_floor, "hours_max": self.hours_max if math.isfinite(self.hours_max) else None}


def check_confidence(confidence: float) -> float:
    if not 0.5 <= confidence < 1.0:
        raise NandrigError(f"a bound's confidence is a fraction in [0.5, 1) (got {confidence:g})")
    return confidence


def prediction_bound(res: FitResult, rows: tuple, confidence: float, pe_max: float, hours: float) -> RberBound:
    """The bound of the fit ``res`` from measured ``rows`` (pe, retention_h, rber, bits arrays: one row per block
    and level, whether or not the fit pooled them), for tables serving wear up to ``pe_max`` and retention up to
    ``hours``."""
    check_confidence(confidence)
    pe, t_h, rber, bits = (np.asarray(x, float) for x in rows)
    counts = rber * bits
    model = res.rber_params().rber(pe, t_h)
    use = (counts >= 1) & (model > 0)
    if int(use.sum()) < ROWS_MIN:
        raise NandrigError(f"a bound needs {ROWS_MIN} or more rows with errors (got {int(use.sum())}): "
                           "measure longer or at higher wear")
    r, k = np.log(rber[use] / model[use]), counts[use]
    # rows weighted by their counts; the curve was fitted to these rows' levels, which took their share of the
    # scatter (two blocks per level: half of it): the residual's degrees of freedom give it back
    n, levels = int(use.sum()), len(set(zip(pe[use], t_h[use])))
    dof = n - max(levels, res.n_params)
    if dof < 1:
        raise NandrigError(f"a bound needs more rows with errors than levels or parameters ({n} rows, {levels} levels,"
                           f" {res.n_params} parameters): measure more blocks per level")
    s_row = math.sqrt(max(0.0, float(np.sum(k * r ** 2 - 1.0) / np.sum(k))) * n / dof)
    grid = np.linspace(float(np.min(pe)), max(pe_max, float(np.min(pe))), GRID)  # below the rows' wear the curve
    # is extrapolated (its C may be loose there); RBER grows with wear, so the bound at the least-worn row serves
    lo, hi = res.rber_band(grid, np.full(GRID, hours))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        half = np.log(hi / lo) / 2.0
    if not np.all(np.isfinite(half)):
        raise Unbounded(f"the fit does not bound RBER everywhere up to {pe_max:g} P/E and {hours:g} h "
                           "(a parameter the data do not constrain): measure nearer that wear and time")
    longest = float(np.max(t_h))
    return RberBound(confidence, s_row, float(np.max(half)) / res.ci_quantile, n, dof, float(np.min(pe)),
                     longest if longest > 0 else math.inf)


def bounded_fit(points: tuple, rows: tuple, confidence: float, pe_max: float,
                hours: float) -> tuple[FitResult, RberBound, str | None]:
    """Eq. 5 fitted to ``points`` (pe, retention_h, rber, bits) with the retention law the AIC prefers, and its
    bound from ``rows``; when that law leaves a parameter the data do not constrain (the log law's time constant
    on a small chip's few errors), the next law by AIC that the data do bound, and why it was taken."""
    best = fit(*points)
    try:
        return best, prediction_bound(best, rows, confidence, pe_max, hours), None
    except Unbounded as first:
        aic = best.laws or {best.law: {"aic": best.aic}}
        for law in sorted((x for x in RETENTION_LAWS if x != best.law), key=lambda x: aic.get(x, {}).get("aic", 0.0)):
            res = fit(*points, law=law)
            try:
                bound = prediction_bound(res, rows, confidence, pe_max, hours)
            except Unbounded:
                continue
            return res, bound, (f"the {best.law} retention law (lower AIC) leaves a parameter the data do not "
                                f"constrain; the {law} law bounds them")
        raise first
