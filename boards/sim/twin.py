"""A chip's digital twin: a virtual chip profile fitted to that chip's own campaigns (`nandrig sim profile
--from-db`), so questions the campaigns did not ask can be put to the twin without wearing the chip.

What each part of the profile comes from:

- identity, geometry and the ONFI fields: the chip's parameter page, as the store keeps it (exact);
- timing: every timed operation of its campaigns (latency campaigns time each erase, program and read): the
  read time per page type, the program time per page type and how it drops with wear, the erase time and how
  it grows, and the per-operation jitter, each a least-squares fit with a 95 % interval
  (characterization/twin.py);
- supply current per phase: the metered operations (a rig with a current sense): busy energy over busy time
  per phase, transfer energy over transfer time, the idle power;
- the cell physics' wear and retention: the chip's RBER rows (endurance, retention and any campaign that
  reads pages back): the physics' wear and retention constants fitted to them directly
  (nandrig/virtual_chip/calibrate.py), so the twin's blocks read, on average, as the chip's did; FLARES' eq. 5
  fitted to the same rows gives the laws' intervals;
- read disturb: the law's size (physics.rd_shift) fitted to the rows of read-disturb campaigns, over the blocks'
  spread of onset;
- factory-bad blocks: those the chip's scans found;
- block-to-block spread: the scatter of the blocks' RBER beyond counting noise at well-counted levels, through
  the fitted physics' sensitivity to the constants a block varies (characterization/twin.py's block_spread);
- die-to-die spread: none (the twin is this die: its chip factor and the spread of its verify levels and wear
  rate are zero, so every seed of the twin is this chip).

What the data cannot identify keeps the generic profile's value (``mlc-3x``'s, a typical MLC design) and is
listed with the campaign that would identify it; a profile part no campaign of this version identifies (the Vth
placement, the bit-error direction, wear-out, read disturb's growth and onset) says so.
"""
from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from nandrig.characterization.twin import (GENERIC, Part, TwinInputs, block_levels, block_spread, fit_power,
                                           fit_timing, rber_laws)
from nandrig.chip.param_page import decode_dump
from nandrig.virtual_chip.calibrate import FREE, fit_points, population_rber
from nandrig.virtual_chip.physics import Physics, block_rber
from nandrig.virtual_chip.profile import ChipProfile, load_profile

RD_FREE = ("rd_shift",)  # the read-disturb law's size; its growth past onset and with wear need richer sweeps
ONSET_NODES = 16  # quadrature over the blocks' read-disturb onset
SPREAD = ("sigma_prog", "ret_alpha")  # the constants a virtual chip varies from block to block (chip.py)
SENSITIVITY_STEP = 0.05  # in log space
REFIT_SHIFT = 0.02  # the fitted spread moves the blocks' mean RBER more than this: the physics is fitted again
CALIBRATION_EVALS = 30  # the physics' least squares: iterations at most (each 9 evaluations of 0.1 s)
BLOCK_SPREAD = 0.1  # relative scatter of a pooled level's RBER from its blocks (a weight, not a fitted value)


@dataclass
class Twin:
    profile: dict  # a chip profile mapping (nandrig/virtual_chip/profile.py), with the parts under "twin"
    parts: list[Part]


def build_twin(data: TwinInputs, name: str | None = None) -> Twin:
    """The twin of the chip ``data`` describes."""
    base = load_profile(GENERIC)
    decoded = decode_dump(data.param_page)
    page = decoded.page
    endurance = page.endurance_cycles or base.onfi["endurance_cycles"]
    prof = json.loads(json.dumps(dataclasses.asdict(base)))  # a plain mapping to fill in
    prof["name"] = name or f"twin-{data.label}"
    prof["description"] = f"digital twin of chip {data.label}, fitted to its campaigns in {data.database}"
    prof["identity"] = {"manufacturer": page.manufacturer, "model": page.model, "jedec_id": page.jedec_id,
                        "read_id": list(data.read_id)}
    prof["geometry"] = {"page_bytes": page.page_bytes, "spare_bytes": page.spare_bytes,
                        "pages_per_block": page.pages_per_block, "blocks": page.blocks_per_lun * page.luns,
                        "luns": page.luns}
    prof["onfi"] = {**base.onfi, "timing_modes": list(page.timing_modes), "endurance_cycles": endurance,
                    "programs_per_page": page.programs_per_page, "max_bad_blocks": page.max_bad_blocks_per_lun,
                    "t_ccs_ns": page.t_ccs_ns}
    if decoded.ecc is not None:
        prof["onfi"]["ecc_bits"], prof["onfi"]["ecc_step_bytes"] = decoded.ecc.bits, decoded.ecc.step_bytes
    laws, names = rber_laws(data.rber_rows, data.rber_campaigns)  # refused first: the one part that is a must
    parts = [Part("geometry", None, None, "the parameter page (exact)")]
    parts += fit_timing(prof["timing"], data.ops, data.page_map, endurance)
    parts += fit_power(prof["power"], data.metered)
    # this die's factory-bad blocks, not a seed's draw (a block no scan read is taken as good)
    prof["defects"]["factory_bad"] = sorted(data.factory_bad)
    parts.append(Part("defects.factory_bad", float(len(data.factory_bad)), None,
                      f"the blocks the chip's scans found marked bad, {len(data.factory_bad)} of the {data.scanned} "
                      "scanned (the others taken as good)"))
    prof["timing"]["chip_sigma"] = 0.0  # the twin is this die, whatever its seed
    prof["variation"].update(chip_sigma=0.0, place_sigma=0.0, wear_sigma=0.0)
    physics = _physics(prof, data.rber_rows, names)
    before = _population(prof, data.rber_rows)
    spread = _block_spread(prof, data.block_rows, names)
    if spread.ci95 is not None and np.max(np.abs(_population(prof, data.rber_rows) / before - 1)) > REFIT_SHIFT:
        physics = _physics(prof, data.rber_rows, names)  # the mean over blocks moved with their spread: again
    parts += laws + physics + [spread] + _read_disturb(prof, data.disturb_rows)
    not_fitted = [("physics.rd_log", "read disturb's growth past onset: not fitted by this version"),
                  ("physics.mu", "the Vth placement and page-type split: `nandrig run vth-states` measures it; "
                                 "not fitted by this version"),
                  ("physics.knee", "wear past the rated endurance: endurance beyond it would show it; not fitted "
                                   "by this version"),
                  ("defects.wearout_median", "wear-out: an endurance campaign to failure would show it; not "
                                             "fitted by this version")]
    for f, why in not_fitted:
        section, key = f.split(".")
        v = prof[section][key]
        parts.append(Part(f, None if isinstance(v, list) else float(v), None,
                          f"not identified: {GENERIC}'s value kept ({why})"))
    prof["twin"] = {"chip": data.label, "database": data.database, "campaigns": list(data.campaigns),
                    "parts": [dataclasses.asdict(p) for p in parts]}
    ChipProfile.from_mapping(prof)  # the twin is a profile a rig can load
    return Twin(prof, parts)


def _population(prof: dict, rows: list[dict]) -> np.ndarray:
    """The twin's mean block RBER at the rows' levels, as the profile stands."""
    p = ChipProfile.from_mapping(prof)
    return population_rber(p.physics, p, np.array([r["pe"] for r in rows], float),
                           np.array([r["retention_h"] for r in rows], float))


def _block_spread(prof: dict, rows: list[dict], names: str) -> Part:
    """The block-to-block spread of the cells' program noise and retention rate, from the scatter of the blocks'
    RBER at well-counted levels, given how strongly the fitted physics' RBER follows each (its sensitivities)."""
    levels = block_levels(rows)
    if not levels:
        return Part("variation.block_sigma", float(prof["variation"]["block_sigma"]), None,
                    f"not identified: {GENERIC}'s value kept (no level where three blocks or more each read 50 "
                    "errors: `nandrig run retention` on several blocks per level identifies it)")
    p = ChipProfile.from_mapping(prof)
    ph, wls = p.physics, p.geometry.wordlines
    pe, hours = np.array([lv.pe for lv in levels]), np.array([lv.retention_h for lv in levels])
    gain = np.zeros(len(levels))
    for k in SPREAD:  # d log RBER / d log constant, by central differences
        up, down = (dataclasses.replace(ph, **{k: getattr(ph, k) * math.exp(s * SENSITIVITY_STEP)}) for s in (1, -1))
        gain += ((np.log(block_rber(up, pe, hours, wordlines=wls)) - np.log(block_rber(down, pe, hours, wordlines=wls)))
                 / (2 * SENSITIVITY_STEP)) ** 2
    sigma, ci = block_spread(levels, gain)
    prof["variation"]["block_sigma"] = sigma
    blocks = sum(len(lv.errors) for lv in levels)
    return Part("variation.block_sigma", sigma, ci, f"the scatter of the blocks' RBER beyond counting noise at "
                                                   f"{len(levels)} levels ({blocks} block readings) of {names}")


def _disturbed_rber(ph: Physics, profile: ChipProfile, pe, hours, reads) -> np.ndarray:
    """Block RBER after ``reads`` of the block, averaged over the profile's spread of blocks' read-disturb onset
    (log-uniform between its bounds, as chip.py draws it)."""
    v = profile.variation
    u, w = np.polynomial.legendre.leggauss(ONSET_NODES)
    out = 0.0
    for ui, wi in zip((u + 1) / 2, w / 2):
        onset = v.rd_onset_min * (v.rd_onset_max / v.rd_onset_min) ** ui
        out = out + wi * block_rber(ph, pe, hours, reads, onset, wordlines=profile.geometry.wordlines)
    return out


def _read_disturb(prof: dict, rows: list[dict]) -> list[Part]:
    """The read-disturb law's size (physics.rd_shift) fitted in log space to the rows read after read disturb, the
    cells' wear and retention as already fitted; the onset's spread, the growth before and after it and its rise
    with wear kept (a sweep of a few points to a few million reads leaves them confounded with the size)."""
    seen = [r for r in rows if r["errors"] > 0]
    campaigns = sorted({r["campaign"] for r in seen})
    if len({r["reads"] for r in seen}) < 2:
        return [Part(f"physics.{k}", float(prof["physics"][k]), None,
                     f"not identified: {GENERIC}'s value kept (`nandrig run read-disturb` on this chip identifies it)")
                for k in RD_FREE]
    p = ChipProfile.from_mapping(prof)
    pe, hours, reads, rber, errors = (np.array([r[k] for r in seen], float)
                                      for k in ("pe", "retention_h", "reads", "rber", "errors"))
    weights = 1.0 / np.sqrt(1.0 / errors + BLOCK_SPREAD**2)

    def make(x: np.ndarray) -> Physics:
        return dataclasses.replace(p.physics, **{k: float(np.exp(v)) for k, v in zip(RD_FREE, x)})

    def resid(x: np.ndarray) -> np.ndarray:
        return weights * (np.log(_disturbed_rber(make(x), p, pe, hours, reads)) - np.log(rber))

    fit = optimize.least_squares(resid, np.log([getattr(p.physics, k) for k in RD_FREE]), max_nfev=60)
    dof = max(len(seen) - len(RD_FREE), 1)
    try:
        cov = np.linalg.inv(fit.jac.T @ fit.jac) * (2 * fit.cost / dof)
    except np.linalg.LinAlgError:
        cov = None
    out = []
    names = f"campaign{'s' if len(campaigns) > 1 else ''} {', '.join(map(str, campaigns))}"
    for i, k in enumerate(RD_FREE):
        v = float(np.exp(fit.x[i]))
        prof["physics"][k] = v
        ci = None
        if cov is not None and np.isfinite(cov[i, i]) and cov[i, i] >= 0:
            half = 1.96 * math.sqrt(cov[i, i])
            ci = (float(np.exp(fit.x[i] - half)), float(np.exp(fit.x[i] + half)))
        out.append(Part(f"physics.{k}", v, ci, f"fitted to the {len(seen)} RBER rows read after read disturb of "
                                               f"{names}"))
    return out


def _physics(prof: dict, rows: list[dict], names: str) -> list[Part]:
    """The physics' wear and retention constants fitted to the RBER rows, in log space."""
    twin_prof = ChipProfile.from_mapping({**prof, "variation": {**prof["variation"], "chip_sigma": 0.0}})
    seen = [r for r in rows if r["errors"] > 0]
    pe, hours, rber, errors = (np.array([r[k] for r in seen], float) for k in ("pe", "retention_h", "rber", "errors"))
    # a level's log RBER is known to its counting noise and the spread of the blocks it pooled
    weights = 1.0 / np.sqrt(1.0 / errors + BLOCK_SPREAD**2)
    ph = fit_points(twin_prof, pe, hours, rber, weights, starts=1, max_nfev=CALIBRATION_EVALS)
    for k in FREE:
        prof["physics"][k] = float(getattr(ph, k))
    out = [Part(f"physics.{k}", float(getattr(ph, k)), None, f"fitted to the {len(seen)} RBER rows of {names}")
           for k in FREE]
    well = errors >= 100
    if np.any(well):
        off = population_rber(ph, twin_prof, pe[well], hours[well]) / rber[well] - 1
        out.append(Part("physics.misfit", float(np.max(np.abs(off))), None,
                        f"the largest |twin / measured - 1| over the {int(well.sum())} rows with 100 errors or more"))
    return out
