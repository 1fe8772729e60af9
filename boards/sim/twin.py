"""A chip's digital twin: a virtual chip profile fitted to that chip's own campaigns (`nandrig sim profile
--from-db`), so questions the campaigns did not ask can be put to the twin without wearing the chip.

What each part of the profile comes from:

- identity, geometry and the ONFI fields: the chip's parameter page, as the store keeps it (exact);
- timing: every timed operation of its campaigns (latency campaigns time each erase, program and read): the
  read time per page type, the program time per page type and how it drops with wear, the erase time and how
  it grows, and the per-operation jitter, each a least-squares fit with a 95 % interval;
- supply current per phase: the metered operations (a rig with a current sense): busy energy over busy time
  per phase, transfer energy over transfer time, the idle power;
- the cell physics' wear and retention: the chip's RBER rows (endurance, retention and any campaign that
  reads pages back): the physics' wear and retention constants fitted to them directly
  (nandrig/virtual_chip/calibrate.py), so the twin's blocks read, on average, as the chip's did; FLARES' eq. 5
  fitted to the same rows gives the laws' intervals;
- die-to-die spread: none (the twin is this die: its chip factor and the spread of its verify levels and wear
  rate are zero, so every seed of the twin is this chip); block-to-block spread is the generic profile's.

What the data cannot identify keeps the generic profile's value (``mlc-3x``'s, a typical MLC design) and is
listed with the campaign that would identify it; a profile part no campaign of this version identifies (read
disturb, the Vth placement, the bit-error direction, wear-out) says so.
"""
from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass

import numpy as np

from nandrig.characterization.fitting import fit_measurements
from nandrig.chip.geometry import PageType
from nandrig.chip.param_page import decode_dump
from nandrig.errors import NandrigError
from nandrig.host.storage.store import Store
from nandrig.host.views.export import export_rows, measurements
from nandrig.virtual_chip.calibrate import FREE, fit_points, population_rber
from nandrig.virtual_chip.profile import ChipProfile, load_profile

GENERIC = "mlc-3x"
CALIBRATION_EVALS = 30  # the physics' least squares: iterations at most (each 9 evaluations of 0.1 s)
BLOCK_SPREAD = 0.1  # relative scatter of a pooled level's RBER from its blocks (a weight, not a fitted value)
RBER_KINDS = ("endurance", "retention", "latency")  # campaigns whose rows read pattern pages back (no stress)


@dataclass(frozen=True)
class Part:
    """One fitted (or kept) value of the twin's profile."""

    field: str  # its place in the profile, e.g. "timing.t_r_us"
    value: float | None  # None: not one number (the geometry, the verify levels)
    ci95: tuple[float, float] | None
    source: str  # what identified it, or why it is the generic value


@dataclass
class Twin:
    profile: dict  # a chip profile mapping (nandrig/virtual_chip/profile.py), with the parts under "twin"
    parts: list[Part]


def _linear(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float, float]:
    """y = a + b x by least squares: a, b and their standard errors (b's 0 when x does not vary)."""
    if np.ptp(x) == 0:
        sd = float(np.std(y, ddof=1)) if len(y) > 1 else 0.0
        return float(np.mean(y)), 0.0, sd / math.sqrt(len(y)), 0.0
    A = np.column_stack([np.ones_like(x), x])
    coef, *_ = np.linalg.lstsq(A, y, rcond=None)
    resid = y - A @ coef
    s2 = float(resid @ resid) / max(len(y) - 2, 1)
    cov = s2 * np.linalg.inv(A.T @ A)
    return float(coef[0]), float(coef[1]), math.sqrt(cov[0, 0]), math.sqrt(cov[1, 1])


def _ci(v: float, se: float) -> tuple[float, float]:
    return (v - 1.96 * se, v + 1.96 * se)


def fit_twin(store: Store, label: str, name: str | None = None, campaign_ids: list[int] | None = None) -> Twin:
    """The twin of chip ``label`` of ``store`` from every campaign it ran (``campaign_ids``: those alone, the rest
    held out to check it)."""
    chip_id = store.chip_id(label)
    if chip_id is None:
        known = ", ".join(r[0] for r in store.db.execute("SELECT label FROM chips").fetchall()) or "none"
        raise NandrigError(f"no chip {label!r} in {store.name} (chips there: {known})")
    row = store.chip(chip_id)
    pm = store.page_map(chip_id)
    campaigns = [c for c in store.campaigns() if c.chip_id == chip_id and (not campaign_ids or c.id in campaign_ids)]
    if campaign_ids and (other := sorted(set(campaign_ids) - {c.id for c in campaigns})):
        raise NandrigError(f"campaign {other[0]} is not one of chip {label}'s in {store.name}")
    base = load_profile(GENERIC)
    decoded = decode_dump(bytes(row["param_page"]))
    page = decoded.page
    endurance = page.endurance_cycles or base.onfi["endurance_cycles"]
    parts: list[Part] = []
    prof = json.loads(json.dumps(dataclasses.asdict(base)))  # a plain mapping to fill in
    prof["name"] = name or f"twin-{label}"
    prof["description"] = f"digital twin of chip {label}, fitted to its campaigns in {store.name}"
    prof["identity"] = {"manufacturer": page.manufacturer, "model": page.model, "jedec_id": page.jedec_id,
                        "read_id": list(bytes.fromhex(row["read_id"]))}
    prof["geometry"] = {"page_bytes": page.page_bytes, "spare_bytes": page.spare_bytes,
                        "pages_per_block": page.pages_per_block, "blocks": page.blocks_per_lun * page.luns,
                        "luns": page.luns}
    prof["onfi"] = {**base.onfi, "timing_modes": list(page.timing_modes), "endurance_cycles": endurance,
                    "programs_per_page": page.programs_per_page, "max_bad_blocks": page.max_bad_blocks_per_lun,
                    "t_ccs_ns": page.t_ccs_ns}
    if decoded.ecc is not None:
        prof["onfi"]["ecc_bits"], prof["onfi"]["ecc_step_bytes"] = decoded.ecc.bits, decoded.ecc.step_bytes
    parts.append(Part("geometry", None, None, "the parameter page (exact)"))
    ops = [(c.id, o) for c in campaigns for o in store.op_times(c.id)]
    parts += _timing(prof, ops, pm, endurance)
    parts += _power(prof, [(c.id, e) for c in campaigns for e in store.op_energy(c.id)])
    parts += _physics(prof, store, [c for c in campaigns if c.kind in RBER_KINDS])
    prof["timing"]["chip_sigma"] = 0.0  # the twin is this die, whatever its seed
    prof["variation"].update(chip_sigma=0.0, place_sigma=0.0, wear_sigma=0.0)
    for f, why in (("physics.rd_shift", "read disturb: `nandrig run read-disturb` measures it; not fitted by "
                                        "this version"),
                   ("physics.mu", "the Vth placement and page-type split: `nandrig run vth-states` measures it; "
                                  "not fitted by this version"),
                   ("variation.block_sigma", "block-to-block spread: not fitted by this version"),
                   ("defects.wearout_median", "wear-out: an endurance campaign to failure would show it; not "
                                              "fitted by this version")):
        section, key = f.split(".")
        v = prof[section][key]
        parts.append(Part(f, None if isinstance(v, list) else float(v), None,
                          f"not identified: {GENERIC}'s value kept ({why})"))
    prof["twin"] = {"chip": label, "database": store.name, "campaigns": [c.id for c in campaigns],
                    "parts": [dataclasses.asdict(p) for p in parts]}
    ChipProfile.from_mapping(prof)  # the twin is a profile a rig can load
    return Twin(prof, parts)


def _kept(field: str, value: float, campaign: str) -> Part:
    return Part(field, value, None, f"not identified: {GENERIC}'s value kept; `nandrig run {campaign}` on this "
                                    "chip identifies it")


def _timing(prof: dict, ops: list, pm, endurance: int) -> list[Part]:
    t = prof["timing"]
    out: list[Part] = []
    src = lambda rows: (f"{len(rows):,} timed operations of campaign{'s' if len({c for c, _ in rows}) > 1 else ''} "  # noqa: E731
                        f"{', '.join(str(c) for c in sorted({c for c, _ in rows}))}")
    jitter_rel: list[np.ndarray] = []
    reads = {pt: [(c, o) for c, o in ops if o.op == "read" and pm.page_type(o.page) == pt] for pt in PageType}
    for pt, field in ((PageType.UPPER, "t_r_us"), (PageType.LOWER, "t_r_lsb_us")):
        rows = reads[pt]
        if not rows:
            out.append(_kept(f"timing.{field}", t[field] or t["t_r_us"], "latency"))
            continue
        us = np.array([o.busy_ns for _, o in rows], float) / 1e3
        t[field] = float(us.mean())
        out.append(Part(f"timing.{field}", t[field], _ci(t[field], us.std(ddof=1) / math.sqrt(len(us))), src(rows)))
        jitter_rel.append(us / us.mean() - 1)
    drops = []
    for pt, field in ((PageType.LOWER, "t_prog_lsb_us"), (PageType.UPPER, "t_prog_msb_us")):
        rows = [(c, o) for c, o in ops if o.op == "program" and pm.page_type(o.page) == pt]
        if not rows:
            out.append(_kept(f"timing.{field}", t[field], "latency"))
            continue
        # the chip's program time: t (1 - drop x) at x = min(P/E / endurance, 1.5)
        x = np.minimum(np.array([o.pe for _, o in rows], float) / endurance, 1.5)
        us = np.array([o.busy_ns for _, o in rows], float) / 1e3
        a, b, sa, sb = _linear(x, us)
        t[field] = a
        out.append(Part(f"timing.{field}", a, _ci(a, sa), src(rows)))
        if np.ptp(x) > 0:
            drops.append((-b / a, sb / a, rows))
        jitter_rel.append(us / (a + b * x) - 1)
    if drops:
        w = np.array([1 / max(s, 1e-12) ** 2 for _, s, _ in drops])
        d = float(np.sum(w * [v for v, _, _ in drops]) / w.sum())
        t["t_prog_drop"] = d
        out.append(Part("timing.t_prog_drop", d, _ci(d, 1 / math.sqrt(w.sum())),
                        src([r for _, _, rows in drops for r in rows])))
    else:
        out.append(_kept("timing.t_prog_drop", t["t_prog_drop"], "latency --checkpoints at two wear levels or more"))
    rows = [(c, o) for c, o in ops if o.op == "erase"]
    if rows:
        x = np.minimum(np.array([o.pe for _, o in rows], float) / endurance, 2.0)
        us = np.array([o.busy_ns for _, o in rows], float) / 1e3
        a, b, sa, sb = _linear(x, us)
        t["t_bers_us"] = a
        out.append(Part("timing.t_bers_us", a, _ci(a, sa), src(rows)))
        if np.ptp(x) > 0:
            t["t_bers_growth"] = b / a
            out.append(Part("timing.t_bers_growth", b / a, _ci(b / a, sb / a), src(rows)))
        else:
            out.append(_kept("timing.t_bers_growth", t["t_bers_growth"], "latency --checkpoints at two wear levels"))
        jitter_rel.append(us / (a + b * x) - 1)
    else:
        out += [_kept("timing.t_bers_us", t["t_bers_us"], "latency"),
                _kept("timing.t_bers_growth", t["t_bers_growth"], "latency")]
    if jitter_rel:
        rel = np.concatenate(jitter_rel)
        # each operation's time is the mean times (1 + jitter u), u uniform on [-1, 1]: sd jitter / sqrt(3)
        j = math.sqrt(3) * float(np.std(rel, ddof=1))
        t["jitter"] = j
        out.append(Part("timing.jitter", j, None, f"the spread of {len(rel):,} timed operations about their fits"))
    else:
        out.append(_kept("timing.jitter", t["jitter"], "latency"))
    return out


def _power(prof: dict, metered: list) -> list[Part]:
    pw = prof["power"]
    vcc = pw["vcc_v"]  # a current sense integrates current x its own supply: energy is what it pins
    out: list[Part] = []
    phases = {"read": "icc_read_ma", "program": "icc_program_ma", "erase": "icc_erase_ma"}
    for op, field in phases.items():
        rows = [e for _, (o, e) in metered if o.op == op and e[1] > 0]
        if not rows:
            out.append(_kept(f"power.{field}", pw[field], "latency on a rig with a current sense"))
            continue
        ma = np.array([e[0] / e[1] / vcc for e in rows])
        pw[field] = float(ma.mean())
        se = ma.std(ddof=1) / math.sqrt(len(ma)) if len(ma) > 1 else 0.0
        step = 0.5 / min(e[1] for e in rows) / vcc  # the meter counts whole pJ: its resolution bounds the mean's
        lo, hi = _ci(pw[field], se)
        out.append(Part(f"power.{field}", pw[field], (lo - step, hi + step), f"{len(rows):,} metered {op}s"))
    rows = [e for _, (_, e) in metered if e[3] > 0]
    if rows:
        pw["icc_io_ma"] = float(sum(e[2] for e in rows) / sum(e[3] for e in rows) / vcc)
        out.append(Part("power.icc_io_ma", pw["icc_io_ma"], None, f"{len(rows):,} metered transfers"))
    else:
        out.append(_kept("power.icc_io_ma", pw["icc_io_ma"], "latency on a rig with a current sense"))
    idle = [e[4] for _, (_, e) in metered if e[4]]
    if idle:
        pw["icc_idle_ma"] = float(np.mean(idle)) / 1e3 / vcc
        out.append(Part("power.icc_idle_ma", pw["icc_idle_ma"], None, f"{len(idle):,} idle readings"))
    else:
        out.append(_kept("power.icc_idle_ma", pw["icc_idle_ma"], "latency on a rig with a current sense"))
    return out


def _physics(prof: dict, store: Store, campaigns: list) -> list[Part]:
    rows = [r for c in campaigns for r in export_rows(store, c) if r["reads"] == 0 and r["offset"] == 0]
    levels = {(r["pe"], r["retention_h"]) for r in rows}
    if len({pe for pe, _ in levels}) < 2 or not any(h > 0 for _, h in levels):
        have = f"{len(rows)} RBER rows at {len(levels)} (P/E, retention) levels" if rows else "no RBER rows"
        raise NandrigError(f"the twin's wear and retention need RBER at several wear levels and retention times "
                           f"({have}): `nandrig run endurance` on this chip gives the wear, `nandrig run retention "
                           f"--wear ... --hours ...` the retention")
    fit = fit_measurements(measurements(rows))
    twin_prof = ChipProfile.from_mapping({**prof, "variation": {**prof["variation"], "chip_sigma": 0.0}})
    seen = [r for r in rows if r["errors"] > 0]
    pe, hours, rber, errors = (np.array([r[k] for r in seen], float) for k in ("pe", "retention_h", "rber", "errors"))
    # a level's log RBER is known to its counting noise and the spread of the blocks it pooled
    weights = 1.0 / np.sqrt(1.0 / errors + BLOCK_SPREAD**2)
    ph = fit_points(twin_prof, pe, hours, rber, weights, starts=1, max_nfev=CALIBRATION_EVALS)
    for k in FREE:
        prof["physics"][k] = float(getattr(ph, k))
    names = f"campaign{'s' if len(campaigns) > 1 else ''} {', '.join(str(c.id) for c in campaigns)}"
    out = [Part(f"rber.{k}", float(v), tuple(fit.ci95[k]) if fit.ci95.get(k) else None,
                f"FLARES' eq. 5 fitted to the {fit.n_points} RBER rows of {names} (R^2 log {fit.r2_log:.3f})")
           for k, v in fit.params.items() if isinstance(v, (int, float))]
    out += [Part(f"physics.{k}", float(getattr(ph, k)), None, f"fitted to the {len(seen)} RBER rows of {names}")
            for k in FREE]
    well = errors >= 100
    if np.any(well):
        off = population_rber(ph, twin_prof, pe[well], hours[well]) / rber[well] - 1
        out.append(Part("physics.misfit", float(np.max(np.abs(off))), None,
                        f"the largest |twin / measured - 1| over the {int(well.sum())} rows with 100 errors or more"))
    return out


@dataclass(frozen=True)
class LevelCheck:
    """A held-out (P/E, retention) level: the chip's RBER and the twin's under the same campaign, and how far
    apart they are in their combined noise (counting, and the spread of the blocks each pooled)."""

    pe: int
    retention_h: float
    measured: float
    twin: float
    z: float


def check_rber(measured: list[dict], twin: list[dict]) -> list[LevelCheck]:
    """Rows of the same campaign on the chip and on its twin (``export_rows(..., by_block=True)``), level by level."""
    def levels(rows):
        out: dict[tuple, list[dict]] = {}
        for r in rows:
            out.setdefault((r["pe"], r["retention_h"]), []).append(r)
        return out

    def mean_var(rs) -> tuple[float, float]:
        errors, bits = sum(r["errors"] for r in rs), sum(r["bits"] for r in rs)
        block = [sum(x["errors"] for x in rs if x["block"] == b) / sum(x["bits"] for x in rs if x["block"] == b)
                 for b in sorted({x["block"] for x in rs})]
        mean = errors / bits
        spread = float(np.var(block, ddof=1)) / len(block) if len(block) > 1 else 0.0
        return mean, max(errors, 1) / bits**2 + spread  # counting (Poisson) plus the blocks' scatter about it

    out = []
    twin_levels = levels(twin)
    for key, rs in sorted(levels(measured).items()):
        if key not in twin_levels:
            continue
        (m, vm), (t, vt) = mean_var(rs), mean_var(twin_levels[key])
        out.append(LevelCheck(int(key[0]), float(key[1]), m, t, (m - t) / math.sqrt(vm + vt)))
    return out
