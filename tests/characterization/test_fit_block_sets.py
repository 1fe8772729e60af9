"""The fit's intervals against what another set of blocks of the same chip gives.

The demo's model campaigns (endurance to 10k P/E and retention at four wear
levels, 16 + 16 blocks) run on five disjoint block sets of one virtual chip,
each fitted on its own. If the reported intervals are honest, the spread of a
parameter across sets matches them: with estimates x_s and standard errors
se_s (the interval's half-width over its t quantile, on the interval's scale:
log for the scale parameters), X = sum((x_s - x_w)^2 / se_s^2) around the
inverse-variance mean x_w follows chi^2 with K - 1 = 4 degrees of freedom.
The test asks X below its 99.9 % point (the intervals are not too narrow)
and above its 0.1 % point (not uselessly wide), for every parameter each set
identifies, and shows that intervals from counting noise alone fail it.
"""
import dataclasses
import math

import numpy as np
import pytest
from scipy import stats

from nandrig.characterization.fitting import fit_measurements
from nandrig.demo import CHIP, SEED, free_runs, model_plans
from nandrig.host.engine.campaigns import create, run
from nandrig.host.engine.chip_access import open_for_chip
from nandrig.host.views.export import export_rows, measurements
from nandrig.host.storage.store import Store

SETS = 5
LOG_SCALE = {"A", "Bo", "tau_h", "rber_at_0_pe", "wear_slope_per_cycle"}


def _estimate(res, name):
    """(value, standard error) on the interval's scale, or None when the fit gives no interval."""
    if name in res.derived:
        d = res.derived[name]
        lo, hi, v = d["ci95_lo"], d["ci95_hi"], d["value"]
    elif res.ci95.get(name) is not None:
        (lo, hi), v = res.ci95[name], res.params[name]
    else:
        return None
    if hi is None or not math.isfinite(hi) or (name in LOG_SCALE and lo <= 0):
        return None
    if name in LOG_SCALE:
        return math.log(v), math.log(hi / lo) / (2 * res.ci_quantile)
    return v, (hi - lo) / (2 * res.ci_quantile)


def _spread(results, name, counting_only=False):
    est = [_estimate(r, name) for r in results]
    if any(e is None for e in est):
        return None
    x, se = np.array(est).T
    if counting_only:  # the Fisher information alone: undo the overdispersion factor
        se = se / np.sqrt([max(r.chi2_dof, 1.0) for r in results])
    w = 1 / se**2
    return float(np.sum((x - np.sum(w * x) / np.sum(w)) ** 2 * w))


@pytest.fixture(scope="module")
def block_sets(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("sets") / "sets.db")
    data = []
    try:
        rig, chip_id = open_for_chip(store, "sim", CHIP, SEED)
        with rig:
            runs = free_runs(set(rig.scan_bad(0, 256)), [16] * (2 * SETS), rig.info().blocks)
            for s in range(SETS):
                ids = []
                for kind, params in model_plans(runs[2 * s], runs[2 * s + 1]):
                    cid = create(store, rig, chip_id, kind, params, "sim")
                    run(store, rig, cid)
                    ids.append(cid)
                data.append(measurements([r for cid in ids for r in export_rows(store, store.campaign(cid),
                                                                                  by_block=True)]))
    finally:
        store.close()
    return data


@pytest.mark.slow
def test_spread_across_block_sets_matches_the_reported_intervals(block_sets):
    results = [fit_measurements(d) for d in block_sets]
    assert len({r.law for r in results}) == 1, [r.law for r in results]
    names = [k for k in (*results[0].params, *results[0].derived) if k not in results[0].unidentifiable]
    lo, hi = stats.chi2.ppf([0.001, 0.999], SETS - 1)
    checked = {}
    for name in names:
        x = _spread(results, name)
        if x is not None:
            checked[name] = x
    assert {"m", "n", "Bo", "rber_at_0_pe", "wear_slope_per_cycle"} <= set(checked), checked
    bad = {k: round(v, 2) for k, v in checked.items() if not lo < v < hi}
    assert not bad, f"chi^2(4) outside [{lo:.3f}, {hi:.1f}]: {bad} (all: {checked})"


@pytest.mark.slow
def test_counting_noise_alone_understates_the_spread(block_sets):
    """Intervals from the Poisson information alone (no blocks, no overdispersion) are far too narrow."""
    results = [fit_measurements(dataclasses.replace(d, block=None)) for d in block_sets]
    hi = stats.chi2.ppf(0.999, SETS - 1)
    spreads = {k: _spread(results, k, counting_only=True) for k in ("m", "n", "Bo")}
    # measured: Bo 87.5 (its spread ~4.7x what counting noise says), m 9.0, n 10.2 (expected 4 if honest)
    assert spreads["Bo"] > hi and all(v > SETS - 1 for v in spreads.values()), spreads
