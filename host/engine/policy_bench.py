"""``nandrig bench policy``: FLARES against guarded FLARES over many virtual dies, and both against an oracle (the
smallest t that holds each program's data a year at the target UBER, from the virtual chip's true RBER of the page).

Each die (a virtual chip of one profile and seed) is characterized and measured once, as
``nandrig run flares-validate`` does on a virtual rig: one model per page type calibrated on eight of its
blocks (at the bound's confidence), then the three scenarios on fresh blocks. Both policies are then replayed
on the host over the measured traces for every WSIZE and MIX (an ECC is digital: the physics does not depend
on the t chosen), an alarm stopping the evaluation as in the paper. Beside them, the bound's projection alone
(the tables' t at each program, nothing else): the floor guarded FLARES never writes below, so what the bound itself
costs against the oracle is a number. Dies run in parallel processes.
"""
from __future__ import annotations

import time
from concurrent.futures import ProcessPoolExecutor

from nandrig.errors import NandrigError
from nandrig.host.engine.flares_validate import (MIXES_PM, PAGE_TYPES, SCENARIOS, WSIZES, Validator, calibrate,
                                                 chip_oracle, pages_under_test, plan)
from nandrig.host.link.rig import Rig

POLICIES = {False: "FLARES", True: "guarded FLARES"}
FLOOR = "the bound's projection alone (guarded FLARES' floor)"  # t at each program from the tables, nothing else


def die_runs(chip: str, seed: int, scale: float, bound: float) -> tuple[list[dict], str | None]:
    """One die: every scenario x page type x WSIZE x MIX, for both policies; or why the die gave none (a
    calibration that does not bound the model)."""
    with Rig.open("sim", chip=chip, seed=seed) as rig:
        info = rig.info()
        pages = pages_under_test(info.pages_per_block)
        bad = set(rig.scan_bad(0, min(64, info.blocks)))
        use = plan([b for b in range(min(64, info.blocks)) if b not in bad], True)
        try:
            models, _ = calibrate(rig, use["calibration"], bound=bound)
        except NandrigError as e:
            return [], str(e)
        v = Validator(rig, models, pages, oracle=chip_oracle(rig))
        rows = []
        for scenario in SCENARIOS:
            tr = v.measure(scenario, use[scenario], scale)
            for i in range(len(pages)):
                target, rber = v.targets(tr, i)
                r = v.bound_floor(tr, i, target, rber)
                rows.append({"die": seed, "policy": FLOOR, "scenario": scenario, "page_type": PAGE_TYPES[v.upper[i]],
                             **_figures(r)})
                for guarded, policy in POLICIES.items():
                    for wsize in WSIZES:
                        for mix in MIXES_PM:
                            r = v.replay(tr, i, target, rber, wsize, mix, False, guarded)
                            rows.append({"die": seed, "policy": policy, "scenario": scenario,
                                         "page_type": PAGE_TYPES[v.upper[i]], "wsize": wsize, "mix": mix / 1000,
                                         **_figures(r)})
    return rows, None


def _figures(r: dict) -> dict:
    """What the bench keeps of a replay's outcome."""
    return {"ops": r["ops"], "under_target_ops": r["under_target_ops"], "worst_uber": r["below_target_uber_max"],
            "mean_t": r["mean_t"], "mean_needed_t": r["mean_target_t"], "oracle_ops": r["oracle_ops"],
            "mean_oracle_t": r["mean_oracle_t"], "mean_t_where_oracle": r["mean_t_where_oracle"],
            "under_oracle_ops": r["under_oracle_ops"], "past_retention_ops": r["past_retention_ops"],
            "past_retention_under_target": r["past_retention_under_target"]}


def bench_policy(chip: str, dies: int, scale: float, bound: float, jobs: int) -> dict:
    """The two policies over ``dies`` dies (seeds 0..dies-1): per policy and configuration, the operations under
    target, the dies that met it, the worst expected UBER and the mean t against the mean t the measured errors
    needed (post hoc), and per policy over everything."""
    t0 = time.monotonic()
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        done = list(pool.map(die_runs, [chip] * dies, range(dies), [scale] * dies, [bound] * dies))
    wall = time.monotonic() - t0
    rows = [r for die, _ in done for r in die]
    uncalibrated = {seed: why for seed, (_, why) in enumerate(done) if why}
    if not rows:
        raise NandrigError(f"no die of {chip} could be calibrated: {next(iter(uncalibrated.values()))}")
    floor = [r for r in rows if r["policy"] == FLOOR]  # one per scenario and page: no WSIZE or MIX
    rows = [r for r in rows if r["policy"] != FLOOR]
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["policy"], r["scenario"], r["page_type"], r["wsize"], r["mix"]), []).append(r)
    table = [{"policy": k[0], "scenario": k[1], "page_type": k[2], "wsize": k[3], "mix": k[4], **_sums(g)}
             for k, g in sorted(groups.items())]
    overall = {p: _sums([r for r in rows if r["policy"] == p]) for p in POLICIES.values()}
    if floor:
        overall[FLOOR] = _sums(floor)
    return {"chip": chip, "dies": dies - len(uncalibrated), "uncalibrated": uncalibrated, "scale": scale,
            "bound": bound, "wall_s": round(wall, 1), "jobs": jobs,
            "method": "host replays over each die's measured traces (docs/flares.md)", "policies": overall,
            "configurations": table}


def _sums(rows: list[dict]) -> dict:
    ops = sum(r["ops"] for r in rows)
    needed = [(r["mean_needed_t"], r["ops"]) for r in rows if r["mean_needed_t"] is not None]
    mean_t = sum(r["mean_t"] * r["ops"] for r in rows) / ops if ops else None
    need = sum(t * n for t, n in needed) / sum(n for _, n in needed) if needed else None
    dies = {r["die"] for r in rows}
    missed = {r["die"] for r in rows if r["under_target_ops"]}
    o_ops = sum(r["oracle_ops"] for r in rows)
    oracle = sum(r["mean_oracle_t"] * r["oracle_ops"] for r in rows if r["oracle_ops"])
    t_there = sum(r["mean_t_where_oracle"] * r["oracle_ops"] for r in rows if r["oracle_ops"])
    return {"mean_oracle_t": oracle / o_ops if o_ops else None, "over_oracle": t_there / oracle - 1.0 if oracle else None,
            "under_oracle_ops": sum(r["under_oracle_ops"] or 0 for r in rows), "ops": ops,
            "under_target_ops": sum(r["under_target_ops"] for r in rows),
            "past_retention_ops": sum(r["past_retention_ops"] for r in rows),
            "past_retention_under_target": sum(r["past_retention_under_target"] for r in rows),
            "dies_met": len(dies - missed), "dies_missed": sorted(missed),
            "worst_uber": max(r["worst_uber"] for r in rows), "mean_t": mean_t, "mean_needed_t": need,
            "over_need": mean_t / need - 1.0 if mean_t and need else None}


def summary_lines(res: dict) -> list[str]:
    out = [f"{res['dies']} dies of {res['chip']} at {res['scale']:g} of the paper's operations, tables from the fit's "
           f"{res['bound'] * 100:g}% bound, both policies over every scenario, WSIZE and MIX ({res['wall_s']:.0f} s):"]
    out += [f"  die {seed} left out: {why}" for seed, why in res["uncalibrated"].items()]
    for policy, s in res["policies"].items():
        out.append(f"  {policy}: {s['under_target_ops']:,} of {s['ops']:,} operations under target, "
                   f"{s['dies_met']} of {res['dies']} dies met it everywhere, worst expected UBER "
                   f"{s['worst_uber']:.2g}, mean t {s['mean_t']:.1f} for a measured need of {s['mean_needed_t']:.1f} "
                   f"({s['over_need']:+.0%}); {s['over_oracle']:+.0%} over the oracle's t for a year "
                   f"({s['mean_oracle_t']:.1f}), {s['under_oracle_ops']:,} operations below it; "
                   f"{s['past_retention_ops']:,} operations on data kept past the retention its t was written for "
                   f"({s['past_retention_under_target']:,} of them under target), counted apart")
    return out
