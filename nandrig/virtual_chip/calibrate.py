"""Calibrating a chip design's Vth physics to an RBER model (how mlc-3x got its constants).

The free constants (program-noise width and its growth, tail weight, and the
retention law's coefficients, exponents and time constant) are fitted so that
the mean RBER of a whole block, measured as a rig measures it (random data,
programmed in page order, read after a retention time), follows the target
model in log space over P/E 0-10k and retention 0-1 year. The block RBER is
averaged over the chip-to-chip and block-to-block variation of the program
noise and the retention rate (Gauss-Hermite quadrature); the die's verify
levels and wear rate stay at the centre of their spread, so the calibrated
chip is the typical die and its siblings scatter about it (``nandrig bench
chip`` measures how a pool of them sits against the target).

Run ``python -m nandrig.virtual_chip.calibrate`` to print the constants for the
mlc-3x profile.
"""
from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
from scipy import optimize

from nandrig.virtual_chip.physics import Physics, block_rber
from nandrig.virtual_chip.profile import ChipProfile, load_profile
from nandrig.characterization.rber import RberParams, load_params

FREE = ("sigma_prog", "sigma_growth", "tail_weight", "ret_alpha", "ret_beta", "ret_t0_h", "ret_an", "ret_bn")
GRID_PE = np.array([0, 100, 1000, 2000, 3000, 5000, 7000, 10000.0])
GRID_H = np.array([0, 24, 720, 8760.0])
_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(7)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()


def population_rber(ph: Physics, profile: ChipProfile, pe, hours) -> np.ndarray:
    """Block RBER averaged over the profile's variation of sigma_prog and ret_alpha."""
    v = profile.variation
    spread = math.hypot(v.chip_sigma, v.block_sigma)
    out = 0.0
    for z1, w1 in zip(_NODES, _WEIGHTS):
        for z2, w2 in zip(_NODES, _WEIGHTS):
            varied = dataclasses.replace(ph, sigma_prog=ph.sigma_prog * math.exp(spread * z1),
                                         ret_alpha=ph.ret_alpha * math.exp(spread * z2))
            out = out + w1 * w2 * block_rber(varied, pe, hours, wordlines=profile.geometry.wordlines)
    return out


def calibrate(profile: ChipProfile, target: RberParams, starts: int = 3, max_nfev: int | None = None) -> Physics:
    """The profile's physics with its FREE constants fitted to ``target`` over P/E 0-10k and retention 0-1 year
    (``max_nfev``: at most that many iterations a start, for a target the physics can only approach)."""
    pe, hours = (a.ravel() for a in np.meshgrid(GRID_PE, GRID_H))
    return fit_points(profile, pe, hours, target.rber(pe, hours), None, starts, max_nfev)


def fit_points(profile: ChipProfile, pe: np.ndarray, hours: np.ndarray, rber: np.ndarray,
               weights: np.ndarray | None = None, starts: int = 3, max_nfev: int | None = None) -> Physics:
    """The profile's physics with its FREE constants fitted, in log space, to block RBER ``rber`` measured at
    (``pe``, ``hours``), each point's log residual weighted by ``weights`` (None: alike)."""
    want = np.log(rber)
    w = np.ones(len(want)) if weights is None else np.asarray(weights, float)
    base = profile.physics

    def make(x: np.ndarray) -> Physics:
        return dataclasses.replace(base, **{k: float(np.exp(v)) for k, v in zip(FREE, x)})

    def resid(x: np.ndarray) -> np.ndarray:
        return w * (np.log(population_rber(make(x), profile, pe, hours)) - want)

    x0 = np.log([getattr(base, k) for k in FREE])
    rng = np.random.default_rng(0)
    best = None
    for s in range(starts):
        r = optimize.least_squares(resid, x0 + (rng.normal(0, 0.3, x0.size) if s else 0.0), max_nfev=max_nfev)
        if best is None or r.cost < best.cost:
            best = r
    return make(best.x)


def main() -> None:
    prof = load_profile("mlc-3x")
    ph = calibrate(prof, load_params("flares-taco2014"))
    print(json.dumps({k: float(f"{getattr(ph, k):.4g}") for k in FREE}, indent=2))


if __name__ == "__main__":
    main()
