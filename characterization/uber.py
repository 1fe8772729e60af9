"""UBER of a t-correcting binary BCH codeword (FLARES eq. 1), computed in log space.

UBER(p, t) = P(E > t) / n, E ~ Binomial(n, p), where n = k + m*t is the
codeword length in bits (data plus parity) and m is the smallest Galois-field
degree with 2**m - 1 >= k + m*t. The paper's eq. 1 divides by "the number n
of bits in the page"; we use the codeword length for both the binomial and
the divisor, since parity bits fail exactly like data bits.

P(E > t) is a sum of binomial terms taken from i = t+1 upward with
log-sum-exp, so it never forms ``1 - cdf`` and never underflows: log UBER of
1e-300 or below is still exact to double precision.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln, logsumexp

from nandrig.errors import NandrigError

T_LIMIT = 2048  # beyond any ECC a NAND controller carries; guards runaway scans


def gf_degree(k_bits: int, t: int) -> int:
    """Smallest m with 2**m - 1 >= k + m*t (the BCH code's field GF(2**m))."""
    if k_bits <= 0 or t < 0:
        raise NandrigError(f"codeword needs k > 0 data bits and t >= 0 (got k={k_bits}, t={t})")
    m = 2
    while (1 << m) - 1 < k_bits + m * t:
        m += 1
    return m


def codeword_bits(k_bits: int, t: int) -> int:
    return k_bits + gf_degree(k_bits, t) * t


def log_binom_sf(t: int, n: int, p: float) -> float:
    """log P(X > t) for X ~ Binomial(n, p), accurate far into the tail."""
    if not 0.0 <= p <= 1.0:
        raise NandrigError(f"bit error probability must lie in [0, 1], got {p}")
    if t >= n:
        return -math.inf
    if t < 0:
        return 0.0
    if p == 0.0:
        return -math.inf
    if p == 1.0:
        return 0.0
    mode = int((n + 1) * p)
    sd = math.sqrt(n * p * (1.0 - p))
    reach = int(40.0 * sd) + 60  # beyond mode +- reach the terms are below e^-700 of the peak
    if t + 1 > mode:
        return _log_sum_pmf(t + 1, min(n, t + 1 + reach), n, p)
    # t below the mode: the upper tail is close to 1 and summing it would carry the
    # lgamma rounding (~1e-11 absolute); 1 - lower tail is exact when the lower tail is small
    lower = _log_sum_pmf(max(0, mode - reach), t, n, p)
    return math.log1p(-math.exp(lower)) if lower < -1e-300 else -math.inf


def _log_sum_pmf(lo: int, hi: int, n: int, p: float) -> float:
    """log of sum_{i=lo..hi} binom(n, i) p^i (1-p)^(n-i), by log-sum-exp."""
    i = np.arange(lo, hi + 1, dtype=float)
    logpmf = (
        gammaln(n + 1.0) - gammaln(i + 1.0) - gammaln(n - i + 1.0)
        + i * math.log(p) + (n - i) * math.log1p(-p)
    )
    return float(logsumexp(logpmf))


def log_uber(rber: float, t: int, k_bits: int) -> float:
    n = codeword_bits(k_bits, t)
    return log_binom_sf(t, n, rber) - math.log(n)


def uber(rber: float, t: int, k_bits: int) -> float:
    """Uncorrectable bit error rate (may underflow to 0.0; use log_uber for tiny values)."""
    return math.exp(log_uber(rber, t, k_bits))


def check_rber(rber: float) -> float:
    if not (isinstance(rber, (int, float)) and math.isfinite(rber) and 0.0 < rber < 0.5):
        raise NandrigError(f"RBER must lie in (0, 0.5), got {rber}")
    return float(rber)


def check_uber(target: float) -> float:
    if not (isinstance(target, (int, float)) and math.isfinite(target) and 0.0 < target < 1.0):
        raise NandrigError(f"target UBER must lie in (0, 1), got {target}")
    return float(target)


def required_t(rber: float, target_uber: float, k_bits: int, t_min: int = 1, t_max: int = 100) -> int:
    """Smallest t in [t_min, t_max] whose UBER at ``rber`` is at or below the target.

    Raises NandrigError when even t_max cannot meet the target.
    """
    rber = check_rber(rber)
    log_target = math.log(check_uber(target_uber))
    if not 0 <= t_min <= t_max <= T_LIMIT:
        raise NandrigError(f"need 0 <= t_min <= t_max <= {T_LIMIT} (got {t_min}..{t_max})")
    for t in range(t_min, t_max + 1):
        if log_uber(rber, t, k_bits) <= log_target:
            return t
    raise NandrigError(
        f"impossible target: RBER {rber:.3g} needs more than t={t_max} for UBER {target_uber:g} "
        f"on a {k_bits // 8}-byte codeword"
    )


def rber_max(t: int, target_uber: float, k_bits: int) -> float:
    """Largest RBER that t corrects to the target UBER (capped at 0.5)."""
    from scipy.optimize import brentq

    log_target = math.log(check_uber(target_uber))

    def f(log_p: float) -> float:
        return log_uber(math.exp(log_p), t, k_bits) - log_target

    lo, hi = math.log(1e-30), math.log(0.5)
    if f(hi) <= 0:
        return 0.5
    if f(lo) > 0:
        return 0.0
    return math.exp(brentq(f, lo, hi, xtol=1e-13, rtol=1e-13))
