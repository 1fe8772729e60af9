import math

import mpmath
import numpy as np
import pytest
from scipy import stats

from nandrig.characterization import load_params, required_t
from nandrig.characterization.uber import codeword_bits, gf_degree, log_binom_sf, log_uber, rber_max
from nandrig.errors import NandrigError

K4096 = 4096 * 8


def mp_log_sf(t: int, n: int, p: float) -> float:
    """Exact log P(X > t) by summing the upper tail at 60 significant digits."""
    mpmath.mp.dps = 60
    p_ = mpmath.mpf(p)
    q_ = 1 - p_
    total = mpmath.mpf(0)
    term = mpmath.binomial(n, t + 1) * p_ ** (t + 1) * q_ ** (n - t - 1)
    i = t + 1
    while i <= n:
        total += term
        if term < total * mpmath.mpf(10) ** -40:
            break
        term = term * (n - i) / (i + 1) * p_ / q_
        i += 1
    return float(mpmath.log(total))


@pytest.mark.parametrize("k_bits,t,m", [
    (4096 * 8, 1, 16), (4096 * 8, 100, 16), (1024 * 8, 40, 14), (512 * 8, 4, 13), (512 * 8, 8, 13),
    (2048 * 8, 1, 15), (100, 5, 8), (52, 5, 7),  # k=52, t=5: the paper's PPROF code in GF(2^7)
])
def test_gf_degree_is_smallest_field_holding_the_codeword(k_bits, t, m):
    assert gf_degree(k_bits, t) == m
    assert 2**m - 1 >= k_bits + m * t
    assert 2 ** (m - 1) - 1 < k_bits + (m - 1) * t


@pytest.mark.parametrize("t,n,p", [
    (3, 32816, 5e-7), (50, 33568, 6.75e-4), (0, 1000, 1e-3), (100, 34368, 1e-7),
    (100, 34368, 1e-9), (40, 8752, 1e-6), (10, 200, 0.3), (5, 33000, 1e-12),
])
def test_log_tail_matches_exact_arithmetic(t, n, p):
    assert log_binom_sf(t, n, p) == pytest.approx(mp_log_sf(t, n, p), rel=1e-9, abs=1e-9)


def test_deep_tails_do_not_underflow():
    # P(E > 100) at RBER 1e-9 is ~1e-1200: far below double range, still exact in log space
    lu = log_uber(1e-9, 100, K4096)
    assert math.isfinite(lu) and lu / math.log(10) < -600  # ~1e-615, below the smallest double
    assert lu == pytest.approx(mp_log_sf(100, codeword_bits(K4096, 100), 1e-9) - math.log(codeword_bits(K4096, 100)), rel=1e-10)


def test_bulk_of_distribution_gives_log_sf_near_zero_without_cancellation():
    # t far below the mean: P(X > t) = 1 - tiny; log must be a tiny negative number, not 0 - noise
    v = log_binom_sf(10, 33000, 0.01)
    exact = mp_log_sf(10, 33000, 0.01)
    assert v <= 0 and v == pytest.approx(exact, abs=1e-12)


def test_paper_headline_required_t():
    p = load_params("flares-taco2014")
    assert required_t(float(p.rber(0, 0)), 1e-11, K4096) == 3
    assert required_t(float(p.rber(10_000, 8760)), 1e-11, K4096) == 50


def scipy_required_t(rber: float, target: float, k_bits: int, t_max: int = 100) -> int:
    """Independent inversion through scipy's incomplete-beta binomial tail."""
    for t in range(1, t_max + 1):
        n = codeword_bits(k_bits, t)
        if stats.binom.sf(t, n, rber) / n <= target:
            return t
    return -1


@pytest.mark.parametrize("target", [1e-11, 1e-15])
def test_required_t_grid_matches_scipy(target):
    p = load_params("flares-taco2014")
    for pe in (0, 100, 1000, 3000, 6000, 10_000):
        for h in (0, 24, 720, 8760):
            r = float(p.rber(pe, h))
            expect = scipy_required_t(r, target, K4096)
            if expect < 0:
                with pytest.raises(NandrigError, match="impossible target"):
                    required_t(r, target, K4096)
            else:
                assert required_t(r, target, K4096) == expect, (pe, h)


def test_required_t_other_codeword_sizes_match_scipy():
    for k_bytes in (512, 1024, 2048):
        for r in (1e-6, 3e-5, 2e-4, 1e-3):
            assert required_t(r, 1e-16, k_bytes * 8) == scipy_required_t(r, 1e-16, k_bytes * 8)


def test_uber_is_monotone_in_rber_and_t():
    rs = np.logspace(-8, -3, 25)  # above ~1e-3 P(E > 1) is 1 to double precision
    for t in (1, 8, 40):
        vals = [log_uber(r, t, K4096) for r in rs]
        assert all(b > a for a, b in zip(vals, vals[1:]))
    assert all(log_uber(1e-4, t + 1, K4096) < log_uber(1e-4, t, K4096) for t in range(1, 100))


def test_rber_max_is_the_boundary():
    for t in (1, 3, 50, 100):
        r = rber_max(t, 1e-11, K4096)
        assert log_uber(r * (1 - 1e-9), t, K4096) <= math.log(1e-11) + 1e-9
        assert log_uber(r * (1 + 1e-6), t, K4096) > math.log(1e-11)


@pytest.mark.parametrize("rber,target,msg", [
    (0.0, 1e-11, "RBER"), (0.5, 1e-11, "RBER"), (-1e-3, 1e-11, "RBER"), (float("nan"), 1e-11, "RBER"),
    (1e-4, 0.0, "UBER"), (1e-4, 1.5, "UBER"), (0.2, 1e-11, "impossible target"),
])
def test_bad_inputs_raise_clear_errors(rber, target, msg):
    with pytest.raises(NandrigError, match=msg):
        required_t(rber, target, K4096)
