"""Fitting the RBER model (eq. 5, its log-time form, or eq. 2 alone) to measurements.

Likelihood. With bit counts (what a rig measures), errors are counts: the fit
maximises the Poisson likelihood of k errors given bits*RBER (the binomial's
limit at RBER << 1), through deviance residuals, so rows with no error count
as what they are. With rates only (a published table), it fits log RBER by
least squares, since RBER spans five decades.

Parameterisation. Parameters are fitted in a transformed, scaled space where
the data constrain each direction and physical bounds are box bounds:

    theta = [ln c0, ln S, b, ln Bo', m, n (, ln tau')]
    RBER  = c0 + S*g(b, x) + Bo' * (x**n * h(u))**m,  g = (exp(b*x) - 1)/b,
            x = pe/PE_s, u = t_h/H_s, h(u) = u (power law) or ln(1 + u/tau')

with c0 = A + C (RBER at 0 P/E), b = B*PE_s and S = A*b (the initial wear
slope). Real parts wear almost linearly (the paper's B*PE is 0.09 at 10k
cycles): then b cannot be told from 0, A = S/b and C = c0 - A are not
identifiable, and the fit says so in words, reports c0 and the slope with
their intervals, and keeps A, B, C out of the interval table (their values
still reproduce the fitted curve, which is all the tables need).

Intervals. By default from the Fisher information, widened by the
overdispersion (Pearson chi^2/dof) when the data scatter more than counting
noise. With ``groups`` (the block each row came from), from the cluster-robust
(sandwich) covariance over blocks: what varies from block to block, the thing
that decides what the next block of this chip will do, is in the interval.
A parameter at the edge of its allowed range is held there and named.

Model choice. With retention data both laws are fitted and compared by AIC
(BIC reported too); the lower AIC is the result.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize, special, stats

from nandrig.characterization.measurements import Measurements
from nandrig.characterization.rber import PARAM_NAMES, RETENTION_LAWS, RberParams
from nandrig.errors import NandrigError

# Box bounds in theta space: RBER at 0 P/E and the slope between 1e-17 and 0.5/5;
# b up to e^12 growth over the data's P/E range; exponents in physical ranges;
# the log law's time constant from 1e-7 to 1e3 times the longest retention time.
_LO = np.array([math.log(1e-17), math.log(1e-17), 1e-6, math.log(1e-17), 0.05, 0.05, math.log(1e-7)])
_HI = np.array([math.log(0.5), math.log(5.0), 12.0, math.log(0.5), 3.0, 6.0, math.log(1e3)])
THETA_NAMES = ("rber_at_0_pe", "wear_slope", "B", "Bo", "m", "n", "tau_h")
SUBSAMPLE = 2000


@dataclass
class FitResult:
    params: dict[str, float | str | None]
    ci95: dict[str, tuple[float, float] | None]
    model: str  # "eq5" or "eq2"
    r2_log: float
    rel_err: np.ndarray  # model / measured - 1 per row; nan where no error was measured
    n_points: int
    undetermined: dict[str, str] = field(default_factory=dict)  # no value at all (and why)
    unidentifiable: dict[str, str] = field(default_factory=dict)  # a value the curve needs, but no interval (why)
    poorly_determined: list[str] = field(default_factory=list)
    cost: float = 0.0
    starts: int = 0
    # what the data pin even when A, B, C alone are loose: A + C and the initial slope A*B
    derived: dict[str, dict[str, float | None]] = field(default_factory=dict)
    law: str | None = None  # retention law, None for eq. 2
    likelihood: str = "poisson"  # "poisson" (error counts) or "log-normal" (rates only)
    chi2_dof: float | None = None  # Pearson chi^2 per degree of freedom (counts only)
    aic: float = math.nan
    bic: float = math.nan
    n_params: int = 0
    intervals: str = ""  # how the intervals were made
    laws: dict[str, dict] = field(default_factory=dict)  # every law tried: aic, bic, chi2_dof, max_rel_err
    ci_quantile: float = 1.96  # the t quantile the 95 % intervals use
    # model / measured - 1 per (P/E, retention) level, its rows (blocks, page types) pooled: the model's misfit
    # without the counting noise of single rows
    level_rel_err: np.ndarray = field(default_factory=lambda: np.zeros(0))
    band_state: tuple | None = field(default=None, repr=False)  # (theta, cov, pe_s, h_s): for rber_band

    def rber_band(self, pe, t_h) -> tuple[np.ndarray, np.ndarray]:
        """95 % confidence band of the fitted RBER at each (pe, t_h), from the parameters' covariance.

        Parameters held at a bound add nothing; one the data do not constrain makes the band unbounded.
        """
        theta, cov, pe_s, h_s = self.band_state
        pe, t_h = np.broadcast_arrays(np.asarray(pe, float), np.asarray(t_h, float))
        d = _Data(pe.ravel() / pe_s, t_h.ravel() / h_s, np.ones(pe.size), np.ones(pe.size), None, pe_s, h_s)
        f, df = _model(theta, d, self.law)
        c = np.where(np.isnan(cov), 0.0, cov)
        with np.errstate(invalid="ignore"):
            var = np.einsum("ij,jk,ik->i", df, np.where(np.isinf(c), 0.0, c), df)
        touched = np.any(np.isinf(c), axis=0)
        var = np.where(np.any(np.abs(df[:, touched]) > 0, axis=1), np.inf, var) if np.any(touched) else var
        half = self.ci_quantile * np.sqrt(np.maximum(var, 0.0)) / f  # on a log scale: the band stays positive
        lo, hi = f * np.exp(-np.minimum(half, 700)), f * np.exp(np.minimum(half, 700))
        return lo.reshape(pe.shape), hi.reshape(pe.shape)

    @property
    def max_rel_err(self) -> float:
        return _max_abs(self.level_rel_err if self.level_rel_err.size else self.rel_err)

    def rber_params(self, name: str = "fit") -> RberParams:
        if self.undetermined:
            raise NandrigError(
                "the fit leaves " + ", ".join(sorted(self.undetermined)) + " undetermined; "
                "measure retention > 0 at several wear levels and times"
            )
        extra = {"law": self.law, "tau_h": float(self.params["tau_h"])} if self.law == "log" else {}
        return RberParams(**{k: float(self.params[k]) for k in PARAM_NAMES}, name=name, **extra)

    def to_json(self) -> dict:
        a = np.abs(self.rel_err[np.isfinite(self.rel_err)])
        q = (lambda p: float(np.quantile(a, p))) if a.size else (lambda p: 0.0)
        return {
            **self.params,
            "law": self.law,
            "model": self.model,
            "likelihood": self.likelihood,
            "r2_log": self.r2_log,
            "chi2_dof": self.chi2_dof,
            "aic": self.aic,
            "bic": self.bic,
            "n_params": self.n_params,
            "max_rel_err": self.max_rel_err,
            "max_rel_err_rows": _max_abs(self.rel_err),
            "n_points": self.n_points,
            "intervals": self.intervals,
            # an unbounded side (the data does not constrain it) is null in JSON
            "ci95": {k: ([x if math.isfinite(x) else None for x in v] if v is not None else None)
                     for k, v in self.ci95.items()},
            "rel_err_quantiles": {"median": q(0.5), "p90": q(0.9), "p99": q(0.99), "max": self.max_rel_err},
            "undetermined": self.undetermined,
            "unidentifiable": self.unidentifiable,
            "poorly_determined": self.poorly_determined,
            "derived": self.derived,
            "laws": self.laws,
            "starts": self.starts,
        }


# why a fit's JSON carries null where a number would be (nandrig.jsonsafe)
NULL_REASONS = {
    "r2_log": "the measured nonzero rates do not vary (or fewer than two have errors): R^2 is undefined",
    "aic": "no likelihood: nothing was fitted", "bic": "no likelihood: nothing was fitted",
    "ci95_hi": "unbounded: the data do not limit it from above",
}


def _max_abs(x: np.ndarray) -> float:
    a = np.abs(x[np.isfinite(x)])
    return float(a.max()) if a.size else 0.0


@dataclass(frozen=True)
class _Data:
    x: np.ndarray  # pe / pe_s
    u: np.ndarray  # t_h / h_s
    y: np.ndarray  # measured rber
    w: np.ndarray  # log-space weight
    bits: np.ndarray | None
    pe_s: float
    h_s: float

    @property
    def k(self) -> np.ndarray:
        assert self.bits is not None
        return self.y * self.bits

    def subset(self, idx: np.ndarray) -> "_Data":
        return _Data(self.x[idx], self.u[idx], self.y[idx], self.w[idx],
                     None if self.bits is None else self.bits[idx], self.pe_s, self.h_s)


def _n_theta(law: str | None) -> int:
    return 3 if law is None else 6 if law == "power" else 7


def _growth(b: float, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """g = expm1(b*x)/b and dg/db, with a series where the closed form cancels."""
    if b < 1e-3:
        x2 = x * x
        return x + b * x2 / 2 + b * b * x2 * x / 6, x2 / 2 + b * x2 * x / 3 + b * b * x2 * x2 / 8
    e = np.expm1(b * x)
    return e / b, (x * (e + 1.0) * b - e) / (b * b)


def _model(theta: np.ndarray, d: _Data, law: str | None) -> tuple[np.ndarray, np.ndarray]:
    """RBER and d(RBER)/d(theta) for each point."""
    c0, slope, b = math.exp(theta[0]), math.exp(theta[1]), theta[2]
    g, dg = _growth(b, d.x)
    f = c0 + slope * g
    cols = [np.full_like(d.x, c0), slope * g, slope * dg]
    if law is not None:
        bo, m, n = math.exp(theta[3]), theta[4], theta[5]
        pos = (d.x > 0) & (d.u > 0)
        lx = np.log(np.where(pos, d.x, 1.0))
        u = np.where(pos, d.u, 1.0)
        if law == "power":
            lh = np.log(u)
        else:
            r = u / math.exp(theta[6])
            big = np.log1p(r)
            lh = np.log(big)
            dlh = -r / (1.0 + r) / big  # d ln h / d ln tau'
        z = n * lx + lh
        rd = np.where(pos, bo * np.exp(np.clip(m * z, -700, 700)), 0.0)
        f = f + rd
        cols += [rd, rd * z, rd * m * lx]
        if law == "log":
            cols.append(rd * m * dlh)
    return f, np.column_stack(cols)


# -- residuals: log space (rates) or Poisson deviance (counts) ------------------------
def _log_residuals(theta, d: _Data, law):
    f, _ = _model(theta, d, law)
    return d.w * (np.log(np.maximum(f, 1e-300)) - np.log(d.y))


def _log_jacobian(theta, d: _Data, law):
    f, df = _model(theta, d, law)
    return (d.w / np.maximum(f, 1e-300))[:, None] * df


def _deviance_parts(theta, d: _Data, law):
    f, df = _model(theta, d, law)
    f = np.maximum(f, 1e-300)
    mu, k = d.bits * f, d.k
    with np.errstate(divide="ignore", invalid="ignore"):
        klog = np.where(k > 0, k * np.log(np.where(k > 0, k, 1.0) / mu), 0.0)
    dev = np.maximum(2.0 * (klog - (k - mu)), 0.0)
    r = np.sign(mu - k) * np.sqrt(dev)
    return f, df, mu, k, r


def _dev_residuals(theta, d: _Data, law):
    return _deviance_parts(theta, d, law)[4]


def _dev_jacobian(theta, d: _Data, law):
    _, df, mu, k, r = _deviance_parts(theta, d, law)
    with np.errstate(divide="ignore", invalid="ignore"):
        # dr/dmu = (1 - k/mu)/r, whose limit at r = 0 is 1/sqrt(mu)
        drdmu = np.where(np.abs(r) > 1e-6, (1.0 - k / mu) / r, 1.0 / np.sqrt(mu))
    return (drdmu * d.bits)[:, None] * df


def _solve(theta0: np.ndarray, d: _Data, law, loss: str, counts: bool):
    k = len(theta0)
    fun, jac = (_dev_residuals, _dev_jacobian) if counts else (_log_residuals, _log_jacobian)
    theta0 = np.clip(theta0, _LO[:k] + 1e-9, _HI[:k] - 1e-9)
    return optimize.least_squares(fun, theta0, jac=jac, args=(d, law), bounds=(_LO[:k], _HI[:k]),
                                  method="trf", x_scale="jac", loss=loss, max_nfev=400)


def _validate(pe, t_h, rber, bits, groups):
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
    b = None
    if bits is not None:
        b = np.asarray(bits, dtype=float).ravel()
        if b.size != pe.size or np.any(~np.isfinite(b)) or np.any(b <= 0):
            raise NandrigError("bit counts must be positive and one per measurement")
    low = 0.0 if b is not None else None  # with bit counts, no error in so many bits is a measurement
    ok = np.isfinite(rber) & (rber < 0.5) & ((rber >= 0) if low is not None else (rber > 0))
    if not np.all(ok):
        bad = rber[~ok][0]
        raise NandrigError(f"every rber must lie in {'[0' if b is not None else '(0'}, 0.5); found {bad}"
                           + ("" if b is not None else " (a zero needs bit counts)"))
    if b is not None and not np.any(rber > 0):
        # the exact 95 % upper limit of a zero count is -ln(0.025) = 3.69 errors
        raise NandrigError(f"no measurement has an error ({pe.size} rows): each row's RBER is only bounded, at most "
                           f"{-math.log(0.025) / float(np.min(b)):.2g} (95 % upper limit); nothing to fit a model to")
    g = None
    if groups is not None:
        g = np.asarray(groups).ravel()
        if g.size != pe.size:
            raise NandrigError("groups (blocks) must be one per measurement")
    return pe, t_h, rber, b, g


def _starts(d: _Data, law, rng: np.random.Generator, count: int) -> list[np.ndarray]:
    nz = d.y > 0
    y, x, u = d.y[nz], d.x[nz], d.u[nz]
    zero_ret = u == 0
    low = y[zero_ret & (x <= np.quantile(x, 0.2))] if np.any(zero_ret) else y
    c0 = float(np.median(low)) if low.size else float(np.min(y))
    top = y[zero_ret & (x >= np.quantile(x[zero_ret], 0.8))] if np.any(zero_ret) else y
    rise = max(float(np.median(top)) - c0, c0 * 0.1) if top.size else c0
    starts = []
    for i in range(count):
        b = [0.1, 1.0, 3.0, 0.02][i % 4] * (1.0 if i < 4 else math.exp(rng.normal(0, 0.5)))
        th = [math.log(c0), math.log(rise * b / math.expm1(b)), b]
        if law is not None:
            m = [0.6, 1.0, 0.3, 1.5][(i // 2) % 4] * (1.0 if i < 8 else math.exp(rng.normal(0, 0.3)))
            n = [2.0, 1.0, 3.5][i % 3] * (1.0 if i < 8 else math.exp(rng.normal(0, 0.3)))
            ret = y[~zero_ret] if np.any(~zero_ret) else y
            bo = max(float(np.median(ret)) - c0, c0)
            th += [math.log(bo), m, n]
            if law == "log":
                th.append(math.log([1e-4, 1e-2, 1e-1][i % 3]))
        starts.append(np.array(th))
    return starts


def fit(
    pe, retention_h, rber, bits=None, *, groups=None, model: str = "auto", law: str = "auto", starts: int = 12,
    loss: str = "linear", seed: int = 0,
) -> FitResult:
    """Fit eq. 5 (``model="eq5"``), eq. 2 (``"eq2"``) or whichever the data can support ("auto").

    ``law``: the retention law, ``power`` (eq. 5), ``log`` or ``auto`` (both, the lower AIC wins).
    ``groups``: the block each row came from; intervals then include block-to-block variation.
    """
    pe, t_h, rber, bits, groups = _validate(pe, retention_h, rber, bits, groups)
    if loss not in ("linear", "soft_l1", "huber", "cauchy"):
        raise NandrigError(f"unknown loss {loss!r} (linear, soft_l1, huber, cauchy)")
    if law not in ("auto", *RETENTION_LAWS):
        raise NandrigError(f"unknown retention law {law!r} (auto, {', '.join(RETENTION_LAWS)})")
    undetermined: dict[str, str] = {}
    n_pe = np.unique(pe).size
    ret = (t_h > 0) & (pe > 0)
    if n_pe < 3:
        if model != "eq2" and np.unique(pe[ret]).size == 1 and np.unique(t_h[ret]).size >= 2:
            return _fit_one_level(pe, t_h, rber, bits, n_pe)
        raise NandrigError(f"need at least 3 distinct P/E values to determine A, B and C (got {n_pe}: "
                           f"{', '.join(f'{v:g}' for v in np.unique(pe))})"
                           + ("" if np.any(ret) else "; and no retention > 0 to fit on its own"))
    with_rd = model == "eq5"
    # what these data cannot tell apart, in words: kept as the reason beside the parameter the fit flags
    words: dict[str, str] = {}
    if model == "auto":
        if not np.any(ret):
            undetermined.update(dict.fromkeys(("Bo", "m", "n"), "no measurement has retention > 0 at P/E > 0"))
        else:
            pes, times = np.unique(pe[ret]), np.unique(t_h[ret])
            if pes.size < 2:
                words["n"] = (f"retention was measured at one wear level ({pes[0]:g} P/E): how retention loss "
                              "grows with wear (n) needs two or more")
                words["Bo"] = f"depends on n: only the retention term at {pes[0]:g} P/E is determined (derived)"
            if times.size < 2:
                words["m"] = (f"retention was measured at one time ({times[0]:g} h): its time exponent (m) needs "
                              "two or more")
                words["n"] = words.get("n") or "depends on m: only the product m*n is determined"
                words["Bo"] = f"depends on m: only the retention term at {times[0]:g} h is determined (derived)"
        with_rd = not undetermined
    elif model not in ("eq5", "eq2"):
        raise NandrigError(f"unknown model {model!r} (eq5, eq2, auto)")
    if not with_rd and np.any(t_h > 0):
        keep = t_h == 0  # eq. 2 describes retention-0 data only
        if not np.any(keep):
            raise NandrigError("eq. 2 needs retention-0 measurements")
        pe, t_h, rber = pe[keep], t_h[keep], rber[keep]
        bits = bits[keep] if bits is not None else None
        groups = groups[keep] if groups is not None else None
    laws: tuple[str | None, ...] = (None,)
    if with_rd:
        laws = RETENTION_LAWS if law == "auto" else (law,)
        if np.unique(t_h[ret]).size < 3:
            laws = tuple(x for x in laws if x == "power") or laws  # tau' needs three times to be seen
    n_par = _n_theta(laws[0])
    if pe.size <= n_par:
        raise NandrigError(f"need more than {n_par} measurements to fit {n_par} parameters (got {pe.size})")

    # scales: the largest P/E and time; with retention at one level, that level, so that the retention term
    # these data determine there is the fitted coefficient itself (its interval untouched by n or m)
    # (not below a quarter of the largest P/E: the wear law's growth bound is set on that scale)
    pe_s = float(np.max(pe[ret])) if words and np.max(pe[ret]) >= np.max(pe) / 4 else float(np.max(pe))
    h_s = float(np.max(t_h[t_h > 0])) if np.any(t_h > 0) else 1.0
    w = np.sqrt(np.maximum(bits * rber, 1.0)) if bits is not None else np.ones_like(rber)
    d = _Data(pe / pe_s, t_h / h_s, rber, w, bits, pe_s, h_s)
    results = {lw: _fit_law(d, lw, groups, loss, seed, starts) for lw in laws}
    best = min(results.values(), key=lambda r: r.aic)
    if len(results) > 1:
        best.laws = {lw: {"aic": r.aic, "bic": r.bic, "chi2_dof": r.chi2_dof, "max_rel_err": r.max_rel_err,
                          "n_params": r.n_params} for lw, r in results.items()}
    if words:  # these data cannot pin them, whatever the optimiser left there: no value, the reason, and the
        # retention term these data do determine (at the one wear level, or the one time, they have)
        theta, cov = best.band_state[0], best.band_state[1]
        pe0, h0 = float(np.max(pe[ret])), float(np.max(t_h[ret]))
        probe = _Data(np.array([pe0 / pe_s]), np.array([h0 / h_s]), np.ones(1), np.ones(1), None, pe_s, h_s)
        c0, _ = _model(theta[:3], probe, None)
        ln_rd = lambda th: math.log(max(float(_model(th, probe, best.law)[0][0] - c0[0]), 1e-300))  # noqa: E731
        grad = optimize.approx_fprime(theta, ln_rd, 1e-6)
        grad[:3] = 0.0  # the wear part is held: this is the retention term alone
        best.derived[f"retention_rber_at_{pe0:g}_pe_{h0:g}_h"] = _derived(math.exp(ln_rd(theta)),
                                                                          best.ci_quantile * math.sqrt(_var(grad, cov)))
        for k, why in words.items():
            undetermined[k] = why
            best.unidentifiable.pop(k, None)
            if k in best.poorly_determined:
                best.poorly_determined.remove(k)
    for k in undetermined:
        best.params[k], best.ci95[k] = None, None
    for k in ("Bo", "m", "n"):  # every parameter without a value says why
        if best.params.get(k) is None and k not in undetermined:
            undetermined[k] = "no retention term fitted (eq. 2)"
    best.undetermined = undetermined
    return best


def _fit_one_level(pe, t_h, rber, bits, n_pe: int) -> FitResult:
    """Retention at a single wear level, the one thing such data identify: RBER(t) = R0 + K * t^m at that
    P/E (Poisson likelihood with bit counts, log least squares without), m with its interval; the wear law
    and n are left undetermined in words."""
    p0 = float(np.max(pe[t_h > 0]))
    keep = pe == p0
    t, y = t_h[keep], rber[keep]
    nb = bits[keep] if bits is not None else None
    h_s = float(np.max(t))
    u = t / h_s

    def model(th):
        r0, k, m = math.exp(th[0]), math.exp(th[1]), th[2]
        tm = np.where(u > 0, np.power(np.where(u > 0, u, 1.0), m), 0.0)
        f = r0 + k * tm
        lu = np.log(np.where(u > 0, u, 1.0))
        return f, np.column_stack([np.full_like(u, r0), k * tm, k * tm * lu])

    def resid(th):
        f, _ = model(th)
        if nb is None:
            return np.log(f) - np.log(y)
        mu, kk = nb * f, nb * y
        with np.errstate(divide="ignore", invalid="ignore"):
            klog = np.where(kk > 0, kk * np.log(np.where(kk > 0, kk, 1.0) / mu), 0.0)
        return np.sign(mu - kk) * np.sqrt(np.maximum(2.0 * (klog - (kk - mu)), 0.0))

    base = float(np.mean(y[u == 0])) if np.any(u == 0) and np.any(y[u == 0] > 0) else float(np.min(y[y > 0]))
    top = max(float(np.max(y)) - base, base * 0.1)
    lo, hi = [math.log(1e-17), math.log(1e-17), 0.01], [math.log(0.5), math.log(0.5), 3.0]
    best = min((optimize.least_squares(resid, np.clip([math.log(base), math.log(top), m0], lo, hi), bounds=(lo, hi))
                for m0 in (0.3, 0.7, 1.2)), key=lambda r: r.cost)
    f, df = model(best.x)
    n, k = y.size, 3
    dof = max(n - k, 1)
    if nb is not None:
        mu, kk = nb * f, nb * y
        info = (df * (nb / f)[:, None]).T @ df
        chi2: float | None = float(np.sum((kk - mu) ** 2 / mu)) / dof
        ll = float(np.sum(kk * np.log(mu) - mu - special.gammaln(kk + 1.0)))
        scale, likelihood = max(chi2, 1.0), "poisson"
    else:
        r = np.log(f) - np.log(y)
        info = (df / f[:, None]).T @ (df / f[:, None]) / max(float(r @ r) / dof, 1e-300)
        chi2, ll, scale, likelihood = None, -0.5 * n * (math.log(2 * math.pi * max(float(r @ r) / n, 1e-300)) + 1), \
            1.0, "log-normal"
    q = float(stats.t.ppf(0.975, dof))
    cov = np.linalg.pinv(info) * scale
    sd = np.sqrt(np.maximum(np.diag(cov), 0.0))
    r0, kc, m = math.exp(best.x[0]), math.exp(best.x[1]) / h_s ** best.x[2], float(best.x[2])
    sd_lk = math.sqrt(max(cov[1, 1] + math.log(h_s) ** 2 * cov[2, 2] - 2 * math.log(h_s) * cov[1, 2], 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(y > 0, f / y - 1.0, np.nan)
    ly = np.log(y[y > 0])
    ss = float(np.sum((ly - ly.mean()) ** 2))
    r2 = 1.0 - float(np.sum((ly - np.log(f[y > 0])) ** 2)) / ss if ss > 0 else math.nan
    wear = f"the wear law needs 3 or more wear levels (got {n_pe}: retention at {p0:g} P/E)"
    undetermined = {"A": wear, "B": wear, "C": wear,
                    "n": f"retention was measured at one wear level ({p0:g} P/E): n needs two or more",
                    "Bo": f"depends on n: only the retention term at {p0:g} P/E is determined (derived)"}
    params: dict[str, float | str | None] = {"A": None, "B": None, "C": None, "Bo": None, "m": m, "n": None}
    ci: dict[str, tuple[float, float] | None] = {k: None for k in params}
    ci["m"] = (m - q * sd[2], m + q * sd[2])
    derived = {f"rber_at_{p0:g}_pe_0_h": _derived(r0, q * sd[0]),
               f"retention_coefficient_at_{p0:g}_pe_per_h^m": _derived(kc, q * sd_lk)}
    return FitResult(params, ci, f"retention at {p0:g} P/E", r2, rel, int(n), undetermined, {},
                     ["m"] if q * sd[2] > abs(m) else [], float(best.cost), 3, derived, "power", likelihood, chi2,
                     -2 * ll + 2 * k, -2 * ll + math.log(n) * k, k,
                     "Fisher information" + (f" x overdispersion {scale:.3g}" if scale > 1 else ""), {}, q, rel, None)


def fit_measurements(m: Measurements, **kw) -> FitResult:
    """:func:`fit` on a :class:`Measurements` (its blocks, if any, as the groups)."""
    return fit(m.pe, m.retention_h, m.rber, m.bits, groups=m.block, **kw)


def fit_page_types(m: Measurements, **kw) -> dict[str, FitResult]:
    """All pages together ("all") and, when rows carry a page type, each page type alone."""
    out = {"all": fit_measurements(m, **kw)}
    for t in m.page_types():
        out[t] = fit_measurements(m.select(m.page_type == t), **kw)
    return out


def _fit_law(d: _Data, law: str | None, groups, loss: str, seed: int, n_starts: int) -> FitResult:
    counts = d.bits is not None
    rng = np.random.default_rng(seed)
    nz = np.flatnonzero(d.y > 0)
    pos = d.subset(nz)  # log-space starts need an error in each row
    small = pos.subset(rng.choice(nz.size, SUBSAMPLE, replace=False)) if nz.size > SUBSAMPLE else pos
    trials = sorted((_solve(s, small, law, loss, False) for s in _starts(d, law, rng, n_starts)), key=lambda r: r.cost)
    cands = trials[:2]
    if counts and small is not pos and len(cands) > 1:
        # the subsample's two best, judged on all rows by their deviance there: only the better one is polished
        # (a polish on 100,000 rows costs what the whole multi-start search on the subsample does)
        cands = [min(cands, key=lambda c: float(np.sum(_dev_residuals(c.x, d, law) ** 2)))]
    best = None
    for cand in cands:
        # polish on all rows: the deviance (counts) straight from the subsample's optimum
        res = _solve(cand.x, d, law, loss, True) if counts else (
            _solve(cand.x, pos, law, loss, False) if small is not pos else cand)
        if best is None or res.cost < best.cost:
            best = res
    assert best is not None
    theta = best.x

    f, _ = _model(theta, d, law)
    ly, lf = np.log(pos.y), np.log(f[nz])
    ss_tot = float(np.sum((ly - ly.mean()) ** 2))
    r2 = 1.0 - float(np.sum((ly - lf) ** 2)) / ss_tot if ss_tot > 0 else float("nan")
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(d.y > 0, f / d.y - 1.0, np.nan)
    inf = _inference(theta, d, law, groups)
    params, ci, unident, poor, derived = _natural(theta, d, law, inf)
    return FitResult(params, ci, "eq5" if law else "eq2", r2, rel, int(d.y.size), {}, unident, poor,
                     float(best.cost), len(trials), derived, law, "poisson" if counts else "log-normal",
                     inf.chi2_dof, inf.aic, inf.bic, inf.n_params, inf.how, {}, inf.q, _level_rel_err(d, f),
                     (theta, inf.cov, d.pe_s, d.h_s))


def _level_rel_err(d: _Data, f: np.ndarray) -> np.ndarray:
    """Model / measured - 1 per (P/E, retention) level, all its rows pooled (by their bits when known)."""
    _, idx = np.unique(np.column_stack([d.x, d.u]), axis=0, return_inverse=True)
    idx = idx.ravel()
    wgt = d.bits if d.bits is not None else np.ones_like(d.y)
    model, measured = np.bincount(idx, f * wgt), np.bincount(idx, d.y * wgt)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(measured > 0, model / measured - 1.0, np.nan)


@dataclass(frozen=True)
class _Inference:
    cov: np.ndarray  # theta covariance; inf where the data do not constrain, nan for parameters held at a bound
    held: np.ndarray  # bool per theta: at a bound, held there
    q: float
    how: str
    chi2_dof: float | None
    aic: float
    bic: float
    n_params: int


def _inference(theta: np.ndarray, d: _Data, law, groups) -> _Inference:
    k = theta.size
    span = _HI[:k] - _LO[:k]
    held = (theta - _LO[:k] < 1e-6 * span) | (_HI[:k] - theta < 1e-6 * span)
    free = ~held
    f, df = _model(theta, d, law)
    f = np.maximum(f, 1e-300)
    jf = df[:, free]
    n, p = d.y.size, int(free.sum())
    dof = max(n - p, 1)
    if d.bits is not None:
        mu, kk = d.bits * f, d.k
        info = (jf * (d.bits / f)[:, None]).T @ jf
        scores = ((kk - mu) / f)[:, None] * jf
        chi2_dof: float | None = float(np.sum((kk - mu) ** 2 / mu)) / dof
        scale = max(chi2_dof, 1.0)
        ll = float(np.sum(kk * np.log(mu) - mu - special.gammaln(kk + 1.0)))
        n_ll = k  # every parameter of the law counts, held at a bound or not
    else:
        jr = (d.w / f)[:, None] * jf
        r = d.w * (np.log(f) - np.log(d.y))
        s2 = float(r @ r) / dof
        info = jr.T @ jr / s2
        scores = (-r / s2)[:, None] * jr
        chi2_dof, scale = None, 1.0
        sig2 = float(r @ r) / n  # Gaussian log-likelihood at the ML variance
        ll = -0.5 * n * (math.log(2 * math.pi * max(sig2, 1e-300)) + 1.0)
        n_ll = k + 1
    bread, blind = _inverse(info)
    g_ids = None if groups is None else np.unique(groups, return_inverse=True)[1]
    n_groups = 0 if g_ids is None else int(g_ids.max()) + 1
    if n_groups >= 3:
        sg = np.zeros((n_groups, p))
        np.add.at(sg, g_ids, scores)
        meat = n_groups / (n_groups - 1) * sg.T @ sg
        cf = bread @ meat @ bread
        q = float(stats.t.ppf(0.975, n_groups - 1))
        how = f"cluster-robust over {n_groups} blocks (t quantile, {n_groups - 1} dof)"
    else:
        cf = bread * scale
        q = float(stats.t.ppf(0.975, dof))
        how = ("Fisher information" + (f" x overdispersion {scale:.3g}" if scale > 1 else "")
               if d.bits is not None else "log-space least squares")
    cf[blind, :] = np.inf
    cf[:, blind] = np.inf
    cov = np.full((k, k), np.nan)
    cov[np.ix_(free, free)] = cf
    aic = -2.0 * ll + 2.0 * n_ll
    bic = -2.0 * ll + math.log(n) * n_ll
    return _Inference(cov, held, q, how, chi2_dof, aic, bic, n_ll)


def _inverse(info: np.ndarray, rcond: float = 1e-12) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of the information on the directions the data constrain, and which parameters touch the others.

    A plain pseudo-inverse would give zero variance along unconstrained directions:
    a falsely tight interval for parameters the data cannot separate.
    """
    scale = np.sqrt(np.maximum(np.diag(info), 0.0))
    scale[scale == 0] = 1.0
    evals, evecs = np.linalg.eigh(info / np.outer(scale, scale))
    ok = evals > rcond * max(float(evals.max()), 1e-300)
    inv = (evecs[:, ok] / evals[ok]) @ evecs[:, ok].T / np.outer(scale, scale)
    blind = np.any(np.abs(evecs[:, ~ok]) > 1e-3, axis=1) if np.any(~ok) else np.zeros(info.shape[0], bool)
    return inv, blind


def _log_ci(v: float, half: float) -> tuple[float, float]:
    """Interval v*exp(+-half) for a log-scale parameter, unbounded when half is."""
    if not math.isfinite(half) or half > 700:
        return (0.0, math.inf)
    return (v * math.exp(-half), v * math.exp(half))


def _var(g: np.ndarray, cov: np.ndarray) -> float:
    """g' cov g over the parameters g touches; nan if one is held at a bound, inf if one is unconstrained."""
    idx = np.flatnonzero(g)
    sub = cov[np.ix_(idx, idx)]
    if np.any(np.isnan(sub)):
        return math.nan
    if np.any(np.isinf(sub)):
        return math.inf
    return max(float(g[idx] @ sub @ g[idx]), 0.0)


def _natural(theta: np.ndarray, d: _Data, law, inf: _Inference):
    """Parameters A..n (and tau_h), intervals for the identifiable ones, reasons for the others."""
    k, q, cov = theta.size, inf.q, inf.cov
    unit = np.eye(k)
    sd = {i: math.sqrt(v) if math.isfinite(v) else v for i, v in ((i, _var(unit[i], cov)) for i in range(k))}
    c0, slope, b = math.exp(theta[0]), math.exp(theta[1]), theta[2]
    a = slope / b
    params: dict[str, float | str | None] = {"A": a, "B": b / d.pe_s, "C": c0 - a}
    ci: dict[str, tuple[float, float] | None] = {}
    unident: dict[str, str] = {}
    poor: list[str] = []
    derived = {"rber_at_0_pe": _derived(c0, q * sd[0]), "wear_slope_per_cycle": _derived(slope / d.pe_s, q * sd[1])}
    top = f"{d.pe_s:g}"
    if inf.held[2] or not math.isfinite(sd[2]) or b - q * sd[2] <= 0:
        why = (f"wear is linear in P/E over 0..{top} cycles: B*PE cannot be told from 0"
               + (" (B held at its lower bound)" if inf.held[2] else f" (95 % interval of B*{top} reaches 0)"))
        unident["B"] = why
        unident["A"] = unident["C"] = ("with B unidentifiable only A + C (rber_at_0_pe) and A*B "
                                       "(wear_slope_per_cycle) are determined; see derived")
    else:
        # ln A = theta1 - ln b; C = c0 - A: delta method on theta's covariance
        sd_la = math.sqrt(_var(np.r_[0.0, 1.0, -1.0 / b, np.zeros(k - 3)], cov))
        sd_c = math.sqrt(_var(np.r_[c0, -a, a / b, np.zeros(k - 3)], cov))
        ci["A"] = _log_ci(a, q * sd_la)
        ci["B"] = ((b - q * sd[2]) / d.pe_s, (b + q * sd[2]) / d.pe_s)
        ci["C"] = (c0 - a - q * sd_c, c0 - a + q * sd_c)
        poor += [nm for nm, bad in (("A", q * sd_la > math.log(10)), ("B", q * sd[2] > 0.5 * b),
                                    ("C", q * sd_c > abs(c0 - a))) if bad]
    for i, nm in ((0, "rber_at_0_pe"), (1, "wear_slope_per_cycle")):
        if inf.held[i]:
            unident[nm] = "held at the edge of its allowed range"
    if law is not None:
        m, n = theta[4], theta[5]
        ln_pe = math.log(d.pe_s)
        if law == "power":
            bo = math.exp(theta[3] - m * n * ln_pe - m * math.log(d.h_s))
            g_bo = np.r_[0, 0, 0, 1.0, -(n * ln_pe + math.log(d.h_s)), -m * ln_pe]
        else:
            bo = math.exp(theta[3] - m * n * ln_pe)
            g_bo = np.r_[0, 0, 0, 1.0, -n * ln_pe, -m * ln_pe, 0.0]
        params.update(Bo=bo, m=m, n=n)
        ci["Bo"] = _log_ci(bo, q * math.sqrt(_var(g_bo, cov)))
        ci["m"] = (m - q * sd[4], m + q * sd[4])
        ci["n"] = (n - q * sd[5], n + q * sd[5])
        if law == "log":
            tau = math.exp(theta[6]) * d.h_s
            params["tau_h"] = tau
            ci["tau_h"] = _log_ci(tau, q * sd[6])
        for i, nm in ((3, "Bo"), (4, "m"), (5, "n"), (6, "tau_h")):
            if i >= k or nm not in ci:
                continue
            lo, hi = ci[nm]
            if inf.held[i]:
                unident[nm] = f"held at the edge of its allowed range ({params[nm]:.4g}): the data push it further"
            elif not (math.isfinite(lo) and math.isfinite(hi)) or (nm in ("Bo", "tau_h") and lo == 0):
                unident[nm] = "the data do not constrain it (its interval is unbounded)"
            elif (nm in ("Bo", "tau_h") and hi / lo > 10) or (nm in ("m", "n") and hi - lo > abs(params[nm])):
                poor.append(nm)
    else:
        params.update(Bo=None, m=None, n=None)
        ci.update(Bo=None, m=None, n=None)
    for nm in unident:
        ci.pop(nm, None)
    for nm in ("A", "B", "C"):
        if nm in unident:
            ci[nm] = None
    return params, ci, unident, poor, derived


def _derived(v: float, half: float) -> dict[str, float | None]:
    lo, hi = _log_ci(v, half) if math.isfinite(half) else (0.0, math.inf)
    return {"value": v, "ci95_lo": lo, "ci95_hi": hi if math.isfinite(hi) else None}


def synthetic(params: RberParams, pe, t_h, bits: float | np.ndarray, seed: int = 0,
              keep_zeros: bool = False) -> tuple[np.ndarray, ...]:
    """Measurements as a rig makes them: error counts ~ Binomial(bits, RBER).

    Rows without an error are dropped unless ``keep_zeros`` (a rig keeps them; rate-only tables do not).
    """
    rng = np.random.default_rng(seed)
    pe = np.asarray(pe, dtype=float)
    t_h = np.asarray(t_h, dtype=float)
    p = params.rber(pe, t_h)
    nbits = np.broadcast_to(np.asarray(bits, dtype=float), p.shape)
    errors = rng.binomial(nbits.astype(np.int64), p)
    keep = np.ones(p.shape, bool) if keep_zeros else errors > 0
    return pe[keep], t_h[keep], errors[keep] / nbits[keep], nbits[keep]


def fit_summary(r) -> str:
    """One line: the model chosen, how well it fits, how the intervals were made."""
    law = ""
    if r.law:
        others = ", ".join(f"{k} {v['aic']:.1f}" for k, v in r.laws.items() if k != r.law)
        law = f", {r.law}-time retention (AIC {r.aic:.1f}" + (f"; {others}" if others else "") + ")"
    chi = f", chi^2/dof {r.chi2_dof:.2f}" if r.chi2_dof is not None else ""
    r2 = f"{r.r2_log:.4f}" if math.isfinite(r.r2_log) else "undefined (the nonzero rates do not vary)"
    return (f"model {r.model}{law}, {r.n_points} points, {r.likelihood} likelihood{chi}, R^2 (log) {r2}, "
            f"max |relative error| {r.max_rel_err:.3f}; intervals: {r.intervals}")


def fit_table(r) -> list[str]:
    """Each parameter with its 95 % interval, or why it has none."""
    out = []
    for k, v in r.params.items():
        if v is None:
            out.append(f"{k:5} undetermined: {r.undetermined[k]}")
        elif k in r.unidentifiable:
            out.append(f"{k:5} not identifiable: {r.unidentifiable[k]}")
        else:
            lo, hi = r.ci95[k]
            flag = "  (poorly determined by these data)" if k in r.poorly_determined else ""
            out.append(f"{k:5} = {v: .6g}   95% CI [{lo:.4g}, {hi:.4g}]{flag}")
    for k, d in r.derived.items():
        if k in r.unidentifiable:
            continue
        hi = f"{d['ci95_hi']:.4g}" if d["ci95_hi"] is not None else "inf"
        out.append(f"{k} = {d['value']:.6g}   95% CI [{d['ci95_lo']:.4g}, {hi}]")
    return out
