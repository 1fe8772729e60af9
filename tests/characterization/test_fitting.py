import math

import numpy as np
import pytest

from nandrig.characterization import CorrTable, RberParams, load_params
from nandrig.characterization.fitting import fit, synthetic
from nandrig.errors import NandrigError

PAPER = load_params("flares-taco2014")
PES = np.array([0, 100, 300, 1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10000])
RETS = np.array([0, 24, 168, 720, 2160, 4380, 8760])
BITS = 16 * 128 * 4096 * 8


def grid(pes=PES, rets=RETS):
    pe, h = np.meshgrid(pes, rets)
    return pe.ravel().astype(float), h.ravel().astype(float)


def test_noise_free_data_recovers_all_six_parameters():
    truth = RberParams(A=2e-6, B=2e-4, C=-1.5e-6, Bo=1.691e-11, m=0.6027, n=2.167)  # visibly curved wear
    pe, h = grid()
    res = fit(pe, h, truth.rber(pe, h))
    for k, v in truth.as_dict().items():
        assert res.params[k] == pytest.approx(v, rel=1e-3), k
    assert res.r2_log > 0.999999 and res.max_rel_err < 1e-4
    assert not res.poorly_determined


@pytest.mark.parametrize("seed", range(4))
def test_binomial_noise_recovers_the_required_t_table(seed):
    pe, h = grid()
    res = fit(*synthetic(PAPER, pe, h, BITS, seed=seed))
    table = CorrTable.build(1e-11, 4096 * 8)
    gp, gh = np.meshgrid(np.arange(0, 10_001, 100), np.array([0, 1, 24, 168, 720, 2160, 4380, 8760]))
    truth = table.t_for(PAPER.rber(gp, gh))
    got = table.t_for(res.rber_params().rber(gp, gh))
    assert np.all(truth > 0) and np.max(np.abs(got - truth)) <= 1
    assert res.r2_log > 0.99


def test_confidence_intervals_cover_the_truth_at_about_their_level():
    pe, h = grid()
    hits = {k: 0 for k in ("Bo", "m", "n", "band")}
    runs = 40
    probe = (np.array([0.0, 5000.0, 10_000.0]), np.array([0.0, 720.0, 8760.0]))
    for seed in range(runs):
        res = fit(*synthetic(PAPER, pe, h, BITS, seed=1000 + seed))
        for k in ("Bo", "m", "n"):
            lo, hi = res.ci95[k]
            hits[k] += lo <= getattr(PAPER, k) <= hi
        lo, hi = res.rber_band(*probe)  # the curve's 95 % band holds the true RBER
        fitted = res.rber_params().rber(*probe)
        assert np.all(lo < fitted) and np.all(fitted < hi)
        hits["band"] += int(np.sum((lo <= PAPER.rber(*probe)) & (PAPER.rber(*probe) <= hi))) / probe[0].size
    # nominal 95 % (the band per point); 40 runs put the 1-in-1000 lower bound near 80 %
    assert all(v / runs >= 0.8 for v in hits.values()), hits


def test_nearly_linear_wear_says_in_words_what_it_cannot_identify_instead_of_an_infinite_interval():
    pe, h = grid()
    res = fit(*synthetic(PAPER, pe, h, BITS, seed=7))
    assert set(res.unidentifiable) == {"A", "B", "C"}
    assert "linear" in res.unidentifiable["B"] and "rber_at_0_pe" in res.unidentifiable["A"]
    assert all(res.ci95[k] is None for k in "ABC")
    assert all(math.isfinite(x) for k in ("Bo", "m", "n") for x in res.ci95[k])
    # the values still reproduce the fitted curve (what the tables need)
    assert res.rber_params().rber(10_000.0, 8760.0) == pytest.approx(PAPER.rber(10_000.0, 8760.0), rel=0.1)
    # what the data do pin: RBER at 0 P/E (A + C) and the initial slope (A*B), with tight intervals
    c0, slope = res.derived["rber_at_0_pe"], res.derived["wear_slope_per_cycle"]
    assert c0["ci95_lo"] <= PAPER.A + PAPER.C <= c0["ci95_hi"] and c0["ci95_hi"] / c0["ci95_lo"] < 1.5
    assert slope["ci95_hi"] / slope["ci95_lo"] < 3
    assert slope["value"] == pytest.approx(PAPER.A * PAPER.B, rel=0.5)


def test_retention_zero_only_fits_eq2_and_says_why():
    pe = PES.astype(float)
    res = fit(*synthetic(PAPER, pe, np.zeros_like(pe), BITS, seed=1))
    assert res.model == "eq2"
    assert set(res.undetermined) == {"Bo", "m", "n"}
    assert "retention" in res.undetermined["Bo"]
    assert res.params["Bo"] is None and res.params["A"] is not None
    assert res.params["A"] + res.params["C"] == pytest.approx(5e-7, rel=0.3)
    with pytest.raises(NandrigError, match="undetermined"):
        res.rber_params()


def test_single_wear_level_in_retention_data_leaves_n_undetermined():
    pe0, h0 = PES.astype(float), np.zeros(PES.size)
    pe1, h1 = np.full(RETS.size - 1, 5000.0), RETS[1:].astype(float)
    res = fit(*synthetic(PAPER, np.r_[pe0, pe1], np.r_[h0, h1], BITS, seed=2))
    assert "n" in res.undetermined and "Bo" in res.undetermined and "5000 P/E" in res.undetermined["n"]
    assert res.params["n"] is None and res.params["Bo"] is None
    lo, hi = res.ci95["m"]  # the time exponent is what these data do identify
    assert lo < PAPER.m < hi and hi - lo < 0.5
    term = res.derived["retention_rber_at_5000_pe_8760_h"]  # and the retention term at that wear level
    truth = PAPER.rber(5000.0, 8760.0) - PAPER.rber(5000.0, 0.0)
    assert term["ci95_lo"] < truth < term["ci95_hi"]
    assert all(res.params[k] is not None or k in res.undetermined for k in res.params)


def test_one_wear_level_alone_fits_its_retention_law_and_says_the_wear_law_needs_more():
    """A first retention campaign at one wear level: m and the level's terms, A, B, C, n, Bo left in words."""
    h = np.array([0.0, 24.0, 168.0, 720.0, 2160.0, 8760.0])
    res = fit(*synthetic(PAPER, np.full(h.size, 10000.0), h, BITS, seed=5))
    assert set(res.undetermined) == {"A", "B", "C", "Bo", "n"}
    assert "3 or more wear levels" in res.undetermined["A"]
    lo, hi = res.ci95["m"]
    assert lo < PAPER.m < hi
    with pytest.raises(NandrigError, match="undetermined"):
        res.rber_params()


def test_bit_count_weighting_is_accepted_and_helps_with_unequal_counts():
    pe, h = grid()
    bits = np.where(np.arange(pe.size) % 2, BITS, BITS // 400)  # half the points are from few pages
    d = synthetic(PAPER, pe, h, bits, seed=3)
    weighted = fit(*d)
    unweighted = fit(*d[:3])
    probe_pe, probe_h = np.array([2000.0, 8000.0, 10000.0]), np.array([168.0, 2160.0, 8760.0])
    err = lambda r: np.max(np.abs(r.rber_params().rber(probe_pe, probe_h) / PAPER.rber(probe_pe, probe_h) - 1))
    assert err(weighted) <= err(unweighted) + 0.02


def test_robust_loss_resists_an_outlier():
    pe, h = grid()
    d = list(synthetic(PAPER, pe, h, BITS, seed=4))
    d[2] = d[2].copy()
    d[2][40] *= 50  # a bad DQ line or a mislabeled point
    plain, robust = fit(*d[:3]), fit(*d[:3], loss="soft_l1")
    pr = lambda r: r.rber_params().rber(10_000.0, 8760.0)
    truth = PAPER.rber(10_000.0, 8760.0)
    assert abs(pr(robust) / truth - 1) < abs(pr(plain) / truth - 1)
    assert abs(pr(robust) / truth - 1) < 0.1


@pytest.mark.parametrize("pe,h,r,msg", [
    ([0, 1, 2, 3], [0, 0, 0, 0], [1e-6, 0.0, 1e-6, 1e-6], "rber"),
    ([0, -1, 2, 3], [0, 0, 0, 0], [1e-6] * 4, "P/E"),
    ([0, 1, 2, 3], [0, -5, 0, 0], [1e-6] * 4, "retention"),
    ([0, 0, 5, 5, 5], [0] * 5, [1e-6] * 5, "3 distinct"),
    ([], [], [], "no measurements"),
    ([0, 1, 2], [0, 0, 0], [1e-6, 2e-6, 3e-6], "more than"),
])
def test_fit_bad_input(pe, h, r, msg):
    with pytest.raises(NandrigError, match=msg):
        fit(pe, h, r)


def test_a_dozen_published_rates_still_fit_well():
    """The FlexLevel-style use: a small table of RBER (rates only, no bit counts) read off a paper."""
    pe = np.linspace(0, 11_000, 12)
    rng = np.random.default_rng(5)
    rber = PAPER.rber(pe) * np.exp(rng.normal(0, 0.03, pe.size))  # 3 % read-off error
    res = fit(pe, np.zeros_like(pe), rber)
    assert res.model == "eq2" and res.likelihood == "log-normal" and res.n_points == 12
    assert res.max_rel_err < 0.1 and res.r2_log > 0.99
    c0 = res.derived["rber_at_0_pe"]
    assert c0["ci95_lo"] <= PAPER.A + PAPER.C <= c0["ci95_hi"]
