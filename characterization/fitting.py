"""Fitting the RBER model (eq. 5, or eq. 2 alone) to measurements.

Residuals are in log space (RBER spans five decades; a linear fit would only
see the worn points). Parameters are fitted in a transformed, scaled space so
the optimizer sees numbers of order one and physical bounds are box bounds:

    theta = [ln c0, ln S, b, ln Bo', m, n]
    RBER  = c0 + S*g(b, x) + Bo' * (x**n * u)**m,  g = (exp(b*x) - 1)/b,
            x = pe/PE_s, u = t_h/H_s

with c0 = A + C (the RBER at 0 P/E, so A + C >= 0 by construction), b = B*PE_s,
S = A*b (the initial slope) and Bo' = Bo * (PE_s**n * H_s)**m. Fitting the
slope instead of A keeps the problem well conditioned when b is small: real
parts wear almost linearly (the paper's B*PE is 0.09 at 10k cycles), so the
data pin down S and c0 tightly while A and C alone stay loose. Several starts run on a subsample; the best
is polished on all points. Confidence intervals come from the Jacobian at the
optimum (delta method back to A..n), scaled by the residual variance.

With bit counts, each point's log residual is weighted by sqrt(errors), the
inverse of its binomial standard deviation in log space (~1/sqrt(k)).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize, stats

from nandrig.characterization.rber import PARAM_NAMES, RberParams
from nandrig.errors import NandrigError

# Box bounds in theta space: RBER at 0 P/E and A between 1e-17 and 0.5; b up to
# e^12 growth over the data's P/E range; power-law exponents in physical ranges.
_LO = np.array([math.log(1e-17), math.log(1e-17), 1e-6, math.log(1e-17), 0.05, 0.05])
_HI = np.array([math.log(0.5), math.log(5.0), 12.0, math.log(0.5), 3.0, 6.0])
SUBSAMPLE = 2000


@dataclass
class FitResult:
    params: dict[str, float | None]
    ci95: dict[str, tuple[float, float] | None]
    model: str  # "eq5" or "eq2"
    r2_log: float
    rel_err: np.ndarray
    n_points: int
    undetermined: dict[str, str] = field(default_factory=dict)
    poorly_determined: list[str] = field(default_factory=list)
    cost: float = 0.0
    starts: int = 0
    # quantities the data pin even when A, B, C alone are loose: A + C and A*B
    derived: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def max_rel_err(self) -> float:
        return float(np.max(np.abs(self.rel_err))) if self.rel_err.size else 0.0

    def rber_params(self, name: str = "fit") -> RberParams:
        if self.undetermined:
            raise NandrigError(
                "the fit leaves " + ", ".join(sorted(self.undetermined)) + " undetermined; "
                "measure retention > 0 at several wear levels and times"
            )
        return RberParams(**{k: float(self.params[k]) for k in PARAM_NAMES}, name=name)

    def to_json(self) -> dict:
        a = np.abs(self.rel_err)
        return {
            **self.params,
            "r2_log": self.r2_log,
            "max_rel_err": self.max_rel_err,
            "n_points": self.n_points,
            "model": self.model,
            # an unbounded side (the data does not constrain it) is null in JSON
            "ci95": {k: ([x if math.isfinite(x) else None for x in v] if v is not None else None)
                     for k, v in self.ci95.items()},
            "rel_err_quantiles": {
                "median": float(np.median(a)), "p90": float(np.quantile(a, 0.9)),
                "p99": float(np.quantile(a, 0.99)), "max": self.max_rel_err,
            },
            "undetermined": self.undetermined,
            "poorly_determined": self.poorly_determined,
            "derived": self.derived,
            "starts": self.starts,
        }


@dataclass(frozen=True)
class _Data:
    x: np.ndarray  # pe / pe_s
    u: np.ndarray  # t_h / h_s
    logy: np.ndarray
    w: np.ndarray
    pe_s: float
    h_s: float


def _growth(b: float, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """g = expm1(b*x)/b and dg/db, with a series where the closed form cancels."""
    if b < 1e-3:
        x2 = x * x
        return x + b * x2 / 2 + b * b * x2 * x / 6, x2 / 2 + b * x2 * x / 3 + b * b * x2 * x2 / 8
    e = np.expm1(b * x)
    return e / b, (x * (e + 1.0) * b - e) / (b * b)


def _model(theta: np.ndarray, d: _Data, with_rd: bool) -> tuple[np.ndarray, np.ndarray]:
    """RBER and d(RBER)/d(theta) for each point."""
    c0, slope, b = math.exp(theta[0]), math.exp(theta[1]), theta[2]
    g, dg = _growth(b, d.x)
    f = c0 + slope * g
    cols = [np.full_like(d.x, c0), slope * g, slope * dg]
    if with_rd:
        bo, m, n = math.exp(theta[3]), theta[4], theta[5]
        pos = (d.x > 0) & (d.u > 0)
        lx = np.log(np.where(pos, d.x, 1.0))
        lu = np.log(np.where(pos, d.u, 1.0))
        z = n * lx + lu
        rd = np.where(pos, bo * np.exp(np.clip(m * z, -700, 700)), 0.0)
        f = f + rd
        cols += [rd, rd * z, rd * m * lx]
    return f, np.column_stack(cols)


def _residuals(theta: np.ndarray, d: _Data, with_rd: bool) -> np.ndarray:
    f, _ = _model(theta, d, with_rd)
    return d.w * (np.log(np.maximum(f, 1e-300)) - d.logy)


def _jacobian(theta: np.ndarray, d: _Data, with_rd: bool) -> np.ndarray:
    f, df = _model(theta, d, with_rd)
    return (d.w / np.maximum(f, 1e-300))[:, None] * df


def _validate(pe, t_h, rber, bits) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    pe = np.asarray(pe, dtype=float).ravel()
    t_h = np.asarray(t_h, dtype=float).ravel()
    rber = np.asarray(rber, dtype=float).ravel()
    if not (pe.size == t_h.size == rber.size):
        raise NandrigError("pe, retention_h and rber must have the same length")
    if pe.size == 0:
        raise NandrigError("no measurements to fit")
    if np.any(~np.isfinite(pe)) or np.any(pe < 0):
        raise NandrigError("P/E counts must be finite and >= 0")
    if np.any(~np.isfinite(t_h)) or np.any(t_h < 0):
        raise NandrigError("retention times must be finite and >= 0 hours")
    if np.any(~np.isfinite(rber)) or np.any(rber <= 0) or np.any(rber >= 0.5):
        bad = rber[~(np.isfinite(rber) & (rber > 0) & (rber < 0.5))][0]
        raise NandrigError(f"every rber must lie in (0, 0.5); found {bad}")
    b = None
    if bits is not None:
        b = np.asarray(bits, dtype=float).ravel()
        if b.size != pe.size or np.any(~np.isfinite(b)) or np.any(b <= 0):
            raise NandrigError("bit counts must be positive and one per measurement")
    return pe, t_h, rber, b


def _starts(d: _Data, with_rd: bool, rng: np.random.Generator, count: int) -> list[np.ndarray]:
    y = np.exp(d.logy)
    zero_ret = d.u == 0
    low = y[zero_ret & (d.x <= np.quantile(d.x, 0.2))] if np.any(zero_ret) else y
    c0 = float(np.median(low)) if low.size else float(np.min(y))
    top = y[zero_ret & (d.x >= np.quantile(d.x[zero_ret], 0.8))] if np.any(zero_ret) else y
    rise = max(float(np.median(top)) - c0, c0 * 0.1) if top.size else c0
    starts = []
    for i in range(count):
        b = [0.1, 1.0, 3.0, 0.02][i % 4] * (1.0 if i < 4 else math.exp(rng.normal(0, 0.5)))
        th = [math.log(c0), math.log(rise * b / math.expm1(b)), b]
        if with_rd:
            m = [0.6, 1.0, 0.3, 1.5][(i // 2) % 4] * (1.0 if i < 8 else math.exp(rng.normal(0, 0.3)))
            n = [2.0, 1.0, 3.5][i % 3] * (1.0 if i < 8 else math.exp(rng.normal(0, 0.3)))
            ret = y[~zero_ret] if np.any(~zero_ret) else y
            bo = max(float(np.median(ret)) - c0, c0)
            th += [math.log(bo), m, n]
        starts.append(np.clip(np.array(th), _LO[: len(th)] + 1e-9, _HI[: len(th)] - 1e-9))
    return starts


def _solve(theta0: np.ndarray, d: _Data, with_rd: bool, loss: str):
    k = len(theta0)
    return optimize.least_squares(
        _residuals, theta0, jac=_jacobian, args=(d, with_rd), bounds=(_LO[:k], _HI[:k]),
        method="trf", x_scale="jac", loss=loss, max_nfev=400,
    )


def _subset(d: _Data, idx: np.ndarray) -> _Data:
    return _Data(d.x[idx], d.u[idx], d.logy[idx], d.w[idx], d.pe_s, d.h_s)


def fit(
    pe, retention_h, rber, bits=None, *, model: str = "auto", starts: int = 12,
    loss: str = "linear", seed: int = 0,
) -> FitResult:
    """Fit eq. 5 (``model="eq5"``), eq. 2 (``"eq2"``) or whichever the data can support ("auto")."""
    pe, t_h, rber, bits = _validate(pe, retention_h, rber, bits)
    if loss not in ("linear", "soft_l1", "huber", "cauchy"):
        raise NandrigError(f"unknown loss {loss!r} (linear, soft_l1, huber, cauchy)")
    undetermined: dict[str, str] = {}
    n_pe = np.unique(pe).size
    if n_pe < 3:
        raise NandrigError(f"need at least 3 distinct P/E values to determine A, B and C (got {n_pe})")
    ret = (t_h > 0) & (pe > 0)
    with_rd = model == "eq5"
    if model == "auto":
        reasons = {}
        if not np.any(ret):
            reasons = dict.fromkeys(("Bo", "m", "n"), "no measurement has retention > 0 at P/E > 0")
        else:
            if np.unique(pe[ret]).size < 2:
                reasons["n"] = "retention data at a single P/E value cannot separate n from Bo"
            if np.unique(t_h[ret]).size < 2:
                reasons["m"] = "retention data at a single time cannot separate m from Bo"
            if reasons:
                reasons["Bo"] = "depends on the undetermined " + "/".join(sorted(reasons))
        undetermined.update(reasons)
        with_rd = not reasons
    elif model not in ("eq5", "eq2"):
        raise NandrigError(f"unknown model {model!r} (eq5, eq2, auto)")
    if not with_rd and np.any(t_h > 0) and np.any(t_h == 0):
        keep = t_h == 0  # eq. 2 describes retention-0 data only
        pe, t_h, rber = pe[keep], t_h[keep], rber[keep]
        bits = bits[keep] if bits is not None else None
    elif not with_rd and np.any(t_h > 0):
        raise NandrigError("eq. 2 needs retention-0 measurements")
    n_par = 6 if with_rd else 3
    if pe.size <= n_par:
        raise NandrigError(f"need more than {n_par} measurements to fit {n_par} parameters (got {pe.size})")

    pe_s = float(np.max(pe))
    h_s = float(np.max(t_h[t_h > 0])) if np.any(t_h > 0) else 1.0
    w = np.sqrt(np.maximum(bits * rber, 1.0)) if bits is not None else np.ones_like(rber)
    d = _Data(pe / pe_s, t_h / h_s, np.log(rber), w, pe_s, h_s)

    rng = np.random.default_rng(seed)
    small = _subset(d, rng.choice(pe.size, SUBSAMPLE, replace=False)) if pe.size > SUBSAMPLE else d
    trials = sorted((_solve(s, small, with_rd, loss) for s in _starts(d, with_rd, rng, starts)), key=lambda r: r.cost)
    best = None
    for cand in trials[:2]:
        res = _solve(cand.x, d, with_rd, loss) if small is not d else cand
        if best is None or res.cost < best.cost:
            best = res
    assert best is not None
    if bits is not None:
        # reweight by the model's expected error counts: weights from observed counts
        # favour points that came out low and bias the fit and its intervals
        f0, _ = _model(best.x, d, with_rd)
        d = _Data(d.x, d.u, d.logy, np.sqrt(np.maximum(bits * f0, 1.0)), d.pe_s, d.h_s)
        best = _solve(best.x, d, with_rd, loss)
    theta = best.x

    f, _ = _model(theta, d, with_rd)
    logf = np.log(f)
    ss_res = float(np.sum((d.logy - logf) ** 2))
    ss_tot = float(np.sum((d.logy - d.logy.mean()) ** 2))
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else float("nan")
    rel = f / rber - 1.0

    params, ci, poor, derived = _natural(theta, d, with_rd, best.fun)
    for k in undetermined:
        params[k], ci[k] = None, None
    return FitResult(params, ci, "eq5" if with_rd else "eq2", r2, rel, int(rber.size), undetermined, poor,
                     float(best.cost), len(trials), derived)


def _covariance_core(jac: np.ndarray, rcond: float = 1e-12) -> np.ndarray:
    """(J^T J)^-1, with infinite variance along directions the data does not constrain.

    A pseudo-inverse would report zero variance there, i.e. a falsely tight
    interval for parameters the data cannot separate (A and B when B*pe is small).
    """
    scale = np.linalg.norm(jac, axis=0)
    scale[scale == 0] = 1.0
    js = jac / scale
    evals, evecs = np.linalg.eigh(js.T @ js)
    ok = evals > rcond * max(float(evals.max()), 1e-300)
    inv = (evecs[:, ok] / evals[ok]) @ evecs[:, ok].T
    blind = evecs[:, ~ok]
    with np.errstate(invalid="ignore"):
        cov = inv / np.outer(scale, scale)
    if blind.size:
        touched = np.any(np.abs(blind) > 1e-3, axis=1)
        cov[touched, :] = np.inf
        cov[:, touched] = np.inf
    return cov


def _log_ci(v: float, half: float) -> tuple[float, float]:
    """Interval v*exp(+-half) for a log-scale parameter, unbounded when half is."""
    if not math.isfinite(half) or half > 700:
        return (0.0, math.inf)
    return (v * math.exp(-half), v * math.exp(half))


def _natural(theta: np.ndarray, d: _Data, with_rd: bool, fun: np.ndarray):
    """Parameters A..n, their 95 % intervals, and which ones the data barely pins down."""
    k = theta.size
    jac = _jacobian(theta, d, with_rd)
    dof = max(fun.size - k, 1)
    s2 = float(fun @ fun) / dof
    cov = s2 * _covariance_core(jac)
    q = float(stats.t.ppf(0.975, dof))
    sd = np.sqrt(np.where(np.isnan(np.diag(cov)), np.inf, np.maximum(np.diag(cov), 0.0)))
    c0, b = math.exp(theta[0]), theta[2]
    a = math.exp(theta[1]) / b
    params: dict[str, float | None] = {"A": a, "B": b / d.pe_s, "C": c0 - a}
    # ln A = theta1 - ln b; C = c0 - A: delta method on theta's covariance
    g_la = np.array([0.0, 1.0, -1.0 / b])
    g_c = np.array([c0, -a, a / b])
    with np.errstate(invalid="ignore"):
        var_la = float(g_la @ cov[:3, :3] @ g_la)
        var_c = float(g_c @ cov[:3, :3] @ g_c)
    sd_la = math.sqrt(var_la) if var_la >= 0 else math.inf
    ci: dict[str, tuple[float, float] | None] = {
        "A": _log_ci(a, q * sd_la),
        "B": ((b - q * sd[2]) / d.pe_s, (b + q * sd[2]) / d.pe_s),
    }
    sd_c = math.sqrt(var_c) if var_c >= 0 else math.inf  # inf - inf from a blind direction
    ci["C"] = (params["C"] - q * sd_c, params["C"] + q * sd_c)
    poor = []
    if sd_la * q > math.log(10):
        poor.append("A")
    if q * sd[2] > abs(b):
        poor.append("B")
    if q * sd_c > abs(params["C"]):
        poor.append("C")
    if with_rd:
        m, n = theta[4], theta[5]
        ln_scale = m * n * math.log(d.pe_s) + m * math.log(d.h_s)
        bo = math.exp(theta[3] - ln_scale)
        g = np.array([1.0, -(n * math.log(d.pe_s) + math.log(d.h_s)), -m * math.log(d.pe_s)])
        with np.errstate(invalid="ignore"):
            var_lbo = float(g @ cov[3:6, 3:6] @ g)
        sd_lbo = math.sqrt(var_lbo) if var_lbo >= 0 else math.inf
        params.update(Bo=bo, m=m, n=n)
        ci["Bo"] = _log_ci(bo, q * sd_lbo)
        ci["m"] = (m - q * sd[4], m + q * sd[4])
        ci["n"] = (n - q * sd[5], n + q * sd[5])
        if q * sd_lbo > math.log(10):
            poor.append("Bo")
        poor += [nm for nm, v, s in (("m", m, sd[4]), ("n", n, sd[5])) if q * s > 0.5 * abs(v)]
    else:
        params.update(Bo=None, m=None, n=None)
        ci.update(Bo=None, m=None, n=None)
    slope = math.exp(theta[1]) / d.pe_s
    derived = {
        "rber_at_0_pe": _derived(c0, q * sd[0]),
        "wear_slope_per_cycle": _derived(slope, q * sd[1]),
    }
    return params, ci, poor, derived


def _derived(v: float, half: float) -> dict[str, float | None]:
    lo, hi = _log_ci(v, half)
    return {"value": v, "ci95_lo": lo, "ci95_hi": hi if math.isfinite(hi) else None}


def synthetic(params: RberParams, pe, t_h, bits: float | np.ndarray, seed: int = 0) -> tuple[np.ndarray, ...]:
    """Measurements as a rig makes them: error counts ~ Binomial(bits, RBER); zero counts dropped."""
    rng = np.random.default_rng(seed)
    pe = np.asarray(pe, dtype=float)
    t_h = np.asarray(t_h, dtype=float)
    p = params.rber(pe, t_h)
    nbits = np.broadcast_to(np.asarray(bits, dtype=float), p.shape)
    errors = rng.binomial(nbits.astype(np.int64), p)
    keep = errors > 0
    return pe[keep], t_h[keep], errors[keep] / nbits[keep], nbits[keep]
