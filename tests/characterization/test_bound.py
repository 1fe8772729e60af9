"""The upper prediction bound tables are made from: it covers blocks the fit never saw, at about its confidence."""
import dataclasses
import math

import numpy as np
import pytest

from nandrig.characterization.bound import prediction_bound
from nandrig.characterization.fitting import fit
from nandrig.characterization.rber import load_params
from nandrig.errors import NandrigError

TRUTH = load_params("flares-taco2014")
WEAR, HOURS = (1000, 3000, 6000, 10000), (0.0, 24.0, 720.0, 8760.0)
BITS = 16 * 2112 * 8  # a block's lower pages


def blocks(spread: float, n: int, seed: int) -> tuple[np.ndarray, ...]:
    """Rows as the calibration makes them: n blocks per wear level, each block's RBER the model's times a
    log-normal factor (sd ``spread``), then counted (Poisson) at every retention time."""
    rng = np.random.default_rng(seed)
    pe, t_h, k = [], [], []
    for w in WEAR:
        for f in np.exp(rng.normal(0.0, spread, n)):
            for h in HOURS:
                pe.append(w), t_h.append(h), k.append(rng.poisson(f * float(TRUTH.rber(w, h)) * BITS))
    return np.array(pe, float), np.array(t_h, float), np.array(k, float) / BITS, np.full(len(k), float(BITS))


def pooled_fit(rows):
    pe, t_h, rber, bits = rows
    keys = sorted(set(zip(pe, t_h)))
    sel = [(pe == a) & (t_h == b) for a, b in keys]
    k = np.array([np.sum(rber[s] * bits[s]) for s in sel])
    n = np.array([np.sum(bits[s]) for s in sel])
    return fit(np.array([a for a, _ in keys]), np.array([b for _, b in keys]), k / n, n)


@pytest.mark.parametrize("spread", [0.1, 0.4])
def test_the_bound_covers_blocks_the_fit_never_saw_and_grows_with_their_spread(spread):
    """Eight calibration blocks (two per wear level); new blocks of the same die at the retention the tables
    promise (a year), where the t a table gives must hold."""
    rows = blocks(spread, 2, seed=1)
    res = pooled_fit(rows)
    b = prediction_bound(res, rows, 0.99, 10000, 8760.0)
    assert b.rows == int(np.sum(rows[2] * rows[3] >= 1))
    if spread >= 0.3:  # (a spread near the counting noise of a hundred errors is not resolved by 8 blocks)
        assert abs(b.s_row - spread) < 0.4 * spread
    bounded = b.apply(res.rber_params())
    truth = np.exp(np.random.default_rng(7).normal(0.0, spread, (4000, 1))) * TRUTH.rber(WEAR, 8760.0)
    covered = float(np.mean(truth <= bounded.rber(WEAR, 8760.0)))
    assert covered >= 0.97, (covered, b.to_json())
    if spread >= 0.3:
        assert float(np.mean(truth <= res.rber_params().rber(WEAR, 8760.0))) < 0.75  # the curve alone: 1 in 4 above


def test_the_bound_is_eq5_scaled_so_tables_and_the_rig_take_it_unchanged():
    rows = blocks(0.3, 2, seed=3)
    res = pooled_fit(rows)
    b = prediction_bound(res, rows, 0.95, 10000, 8760.0)
    p, q = res.rber_params(), b.apply(res.rber_params())
    assert (q.B, q.m, q.n, q.law) == (p.B, p.m, p.n, p.law)
    for w, h in ((1000, 0.0), (3000, 24.0), (10000, 8760.0)):
        assert math.isclose(float(q.rber(w, h)), b.factor * float(p.rber(w, h)), rel_tol=1e-12)
    assert "95% upper bound" in q.name and b.factor > 1
    # below the least-worn row the curve is not extrapolated: that row's wear serves, never less than the curve
    assert b.pe_floor == min(WEAR) == q.pe_floor
    for w, h in ((0, 0.0), (10, 8760.0), (500, 24.0)):
        assert float(q.rber(w, h)) == float(q.rber(1000, h)) >= b.factor * float(p.rber(w, h))
    assert type(q).from_mapping(q.as_dict()) == dataclasses.replace(q, name="")


@pytest.mark.parametrize("confidence", [0.4, 1.0, 1.5])
def test_a_confidence_outside_half_to_one_is_refused(confidence):
    rows = blocks(0.2, 2, seed=2)
    with pytest.raises(NandrigError, match="confidence"):
        prediction_bound(pooled_fit(rows), rows, confidence, 10000, 8760.0)


def test_too_few_rows_with_errors_give_no_bound():
    rows = blocks(0.2, 2, seed=2)
    res = pooled_fit(rows)
    few = tuple(x[:2] for x in rows)
    with pytest.raises(NandrigError, match="3 or more rows with errors"):
        prediction_bound(res, few, 0.99, 10000, 8760.0)
