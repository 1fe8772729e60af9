"""Vth states: sweep each read reference on its own and rebuild the four states' threshold-voltage distributions.

An MLC page's bits read 1 below VR1 or above VR3 (upper page) and below VR2 (lower page). Moving one reference
by an offset while the others stay put, the cells of one stored value that cross it are counted by the page's
error counts: on upper pages, stored-0 cells (L1, L2) read 1 below VR1 and above VR3, stored-1 cells (L0, L3)
read 0 between them. So each state's cumulative distribution near a reference is one error count as that
reference sweeps, and its density the count's change per step (SAFARI's per-reference sweeps). Voltages are
relative to the reference they were measured at: a chip does not tell where its references sit.
"""
from __future__ import annotations

from dataclasses import dataclass

import click
import numpy as np

from nandrig.chip.geometry import Geometry, PageMap
from nandrig.chip.read_retry import REFERENCES, require_offsets, require_table
from nandrig.host.kinds import steps
from nandrig.host.kinds.base import OVEN_OPTIONS, CampaignKind, KindParams, oven_fields, parse_hours, parse_int_list

# per state: the reference it is seen at, the error count that is its cumulative distribution there (on upper
# pages), and the sign that makes that count's change a density
STATE_VIEW = {"L0": ("VR1", "err_1to0", -1), "L1": ("VR1", "err_0to1", 1),
              "L2": ("VR3", "err_0to1", -1), "L3": ("VR3", "err_1to0", 1)}
EDGE_FRACTION = 0.01  # a state's mean is given when its density at both ends of the sweep is below this of its peak
CORE_FRACTION = 0.1  # its Gaussian core is fitted to the points above this fraction of its peak


@dataclass(frozen=True)
class VthStatesParams(KindParams):
    pe: tuple[int, ...]  # one wear level per group of blocks
    retention_h: float  # then every level again after this retention (0: fresh only)
    offsets: tuple[int, ...]  # each reference sweeps these, the others at 0
    references: tuple[str, ...] = REFERENCES


def plan(p: VthStatesParams, g: Geometry) -> list[steps.Step]:
    groups = steps.groups(list(p.blocks), len(p.pe))
    out = steps.cycle_groups_but_last_round(groups, p.pe, p.seed, p.worn)
    out += [s for grp, pe in zip(groups, p.pe) for s in steps.cycle_to(grp, pe - 1, pe, p.seed, worn=p.worn)]
    for hours in (0.0, p.retention_h) if p.retention_h > 0 else (0.0,):
        if hours:
            out.append(steps.wait(p.oven, p.temp_c, hours))
        for ref in p.references:
            for off in p.offsets:
                out.append(steps.SetRefs(tuple(off if r == ref else 0 for r in REFERENCES)))
                for grp, pe in zip(groups, p.pe):
                    out += steps.measure(grp, p.seed, g, steps.Checkpoint(label=ref, pe=pe, offset=off, retention=True))
    out.append(steps.SetRefs((0, 0, 0)))
    return out


def check_chip(p: VthStatesParams, chip: dict) -> None:
    """Refused before anything is read: a chip without a read-retry table, or offsets outside its range."""
    require_offsets(chip["manufacturer"], chip["model"], p.offsets)


def from_cli(oven: str | None, temp_c: float, chamber_file: str | None, pe: str, retention: str, offsets: str,
             references: str) -> dict:
    try:
        a, b, s = (int(x) for x in offsets.split(":"))
        offs = list(range(a, b + 1, s))
    except ValueError:
        raise click.BadParameter(f"--offsets must be FIRST:LAST:STEP, got {offsets!r}") from None
    if len(offs) < 3:
        raise click.BadParameter("--offsets must give at least three offsets (a density needs two steps)")
    refs = tuple(r.strip().upper() for r in references.split(",") if r.strip())
    if not refs or set(refs) - set(REFERENCES):
        raise click.BadParameter(f"--references takes {', '.join(REFERENCES)}, got {references!r}")
    ret = 0.0 if retention in ("0", "0h") else parse_hours(retention)[0]
    levels = sorted(set(parse_int_list(pe, "--pe")))
    if 0 in levels:
        raise click.BadParameter("--pe levels must be 1 or more: the sweep reads programmed pages")
    return {"pe": levels, "retention_h": ret, "offsets": offs, "references": refs,
            **oven_fields(oven, temp_c, chamber_file)}


def densities(rows, pm: PageMap, pe: int, retention_h: float) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per state: (offset midpoints, fraction of the state's cells per offset step) from the upper pages."""
    out = {}
    for state, (ref, field, sign) in STATE_VIEW.items():
        sel = [x for x in rows if x.label == ref and x.pe == pe and x.retention_h == retention_h
               and pm.is_upper(x.page)]
        offs = sorted({x.offset for x in sel})
        if len(offs) < 2:
            continue
        count = np.array([sum(getattr(x, field) for x in sel if x.offset == o) for o in offs], float)
        cells = sum(x.bits for x in sel if x.offset == offs[0]) / 4  # random data: a quarter of the cells per state
        o = np.array(offs, float)
        out[state] = ((o[1:] + o[:-1]) / 2, np.clip(sign * np.diff(count) / np.diff(o), 0, None) / cells)
    return out


def _mean(x: np.ndarray, d: np.ndarray) -> float | None:
    """The density's mean, or None when the state runs past an end of the sweep (its mean would be biased)."""
    if not d.sum() or max(d[0], d[-1]) > EDGE_FRACTION * d.max():
        return None
    return float((x * d).sum() / d.sum())


def _core(x: np.ndarray, d: np.ndarray) -> tuple[float, float] | None:
    """(centre, sigma) of a Gaussian fitted to the log density around its peak: where the states overlap or the
    sweep ends, the tails bias a mean but not the core. None when the peak is at an end of the sweep."""
    if not len(d) or not d.max() or int(np.argmax(d)) in (0, len(d) - 1):
        return None
    keep = d >= CORE_FRACTION * d.max()
    if keep.sum() < 3:
        return None
    a, b, _ = np.polyfit(x[keep], np.log(d[keep]), 2)
    if a >= 0:
        return None
    return float(-b / (2 * a)), float(np.sqrt(-1 / (2 * a)))


def results(store, c, p: VthStatesParams, pm: PageMap) -> dict:
    rows = store.rows(c.id)
    step = _step_mv(store, c)
    conds = sorted({(x.pe, x.retention_h) for x in rows})
    out = []
    for pe, hours in conds:
        dens = densities(rows, pm, pe, hours)
        states = {}
        for s, (x, d) in dens.items():
            mean, core = _mean(x, d), _core(x, d)
            states[s] = {"reference": STATE_VIEW[s][0], "mean": None if mean is None else mean * step,
                         "centre": None if core is None else core[0] * step,
                         "sigma": None if core is None else core[1] * step}
        out.append({"pe": pe, "retention_h": hours, "states": states})
    shifts = []
    for pe in p.pe:
        fresh = next((x for x in out if x["pe"] == pe and x["retention_h"] == 0), None)
        later = next((x for x in out if x["pe"] == pe and x["retention_h"] > 0), None)
        if fresh and later:
            def moved(s: str, key: str) -> float | None:
                a, b = fresh["states"][s][key], later["states"].get(s, {}).get(key)
                return None if a is None or b is None else b - a

            shifts.append({"pe": pe, "retention_h": later["retention_h"],
                           "centre_shift": {s: moved(s, "centre") for s in fresh["states"]},
                           "mean_shift": {s: moved(s, "mean") for s in fresh["states"]}})
    return {"unit": "mV", "conditions": out, "shifts": shifts}


def summary_lines(res: dict) -> list[str]:
    u = res["unit"]
    fmt = lambda v: f"{v:+9.1f}" if v is not None else "        -"  # noqa: E731
    out = [f"  state centres ({u}, from the reference each is seen at; Gaussian core; -: its peak is past the sweep)",
           f"  {'P/E':>6} {'retention h':>11} " + " ".join(f"{s:>9}" for s in STATE_VIEW)]
    for x in res["conditions"]:
        out.append(f"  {x['pe']:>6} {x['retention_h']:>11.4g} " +
                   " ".join(fmt(x["states"].get(s, {}).get("centre")) for s in STATE_VIEW))
    for x in res["shifts"]:
        out.append(f"  shift after {x['retention_h']:g} h at {x['pe']} P/E ({u}): " +
                   ", ".join(f"{s} {fmt(v).strip()}" for s, v in x["centre_shift"].items()))
    return out


def report(r, c, p: VthStatesParams, pm: PageMap) -> None:
    rows = r.store.rows(c.id)
    conds = sorted({(x.pe, x.retention_h) for x in rows})
    if not conds:
        return
    step = _step_mv(r.store, c)
    fig, axes = r.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for i, (pe, hours) in enumerate(conds):
        for state, (x, d) in densities(rows, pm, pe, hours).items():
            ax = axes[0 if STATE_VIEW[state][0] == "VR1" else 1]
            ax.plot(x * step, np.where(d > 0, d / step, np.nan), "-" if hours == 0 else "--", color=f"C{i % 10}",
                    lw=1, label=f"{state}: {pe} P/E, {hours:g} h")
    for ax, ref in zip(axes, ("VR1", "VR3")):
        ax.set_yscale("log")
        ax.set_xlabel(f"Vth relative to {ref} (mV)")
        ax.set_title(f"{' and '.join(s for s, v in STATE_VIEW.items() if v[0] == ref)}, seen at {ref}", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6)
    axes[0].set_ylabel("fraction of the state's cells per mV")
    fig.suptitle("Vth distributions per state, one read reference swept at a time (upper pages)")
    r.fig(fig, f"vth_states_{c.id}", "Vth distribution of each programmed state from per-reference sweeps, "
                                      "fresh (solid) and after retention (dashed), log scale")
    for line in summary_lines(results(r.store, c, p, pm)):
        r.p(line.strip())


def _step_mv(store, c) -> float:
    """The chip's read-retry step: offsets become millivolts."""
    chip = store.chip(c.chip_id)
    return require_table(chip["manufacturer"], chip["model"]).step_mv


KIND = CampaignKind(
    name="vth-states", help="Sweep each read reference alone: the four states' Vth distributions, fresh and after "
                            "retention.",
    params=VthStatesParams, plan=plan, report=report, from_cli=from_cli, results=results, summary=summary_lines,
    check_chip=check_chip,
    options=(*OVEN_OPTIONS,
             click.option("--pe", default="1000,10000", show_default=True,
                          help="P/E levels, one group of the blocks each."),
             click.option("--retention", "retention", default="1y", show_default=True,
                          help="Retention after the fresh sweep, before the second (0 for none)."),
             click.option("--offsets", default="-100:100:4", show_default=True,
                          help="Each reference's offsets FIRST:LAST:STEP in the chip's retry steps."),
             click.option("--references", default=",".join(REFERENCES), show_default=True,
                          help="The references to sweep.")))
