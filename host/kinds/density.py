"""Density: the same chip's blocks run as MLC and as pseudo-SLC (only the lower page of each wordline programmed,
Kgil et al., ISCA'08), side by side over wear: RBER, program, read and erase times of each mode."""
from __future__ import annotations

from dataclasses import dataclass

import click
import numpy as np

from nandrig import protocol as P
from nandrig.characterization.measurements import poisson_interval
from nandrig.chip.geometry import Geometry, PageMap, PageType
from nandrig.host.kinds import steps
from nandrig.host.kinds.base import (OVEN_OPTIONS, CampaignKind, KindParams, oven_fields, parse_hours,
                                     parse_int_list)

MODES = ("mlc", "pslc")


@dataclass(frozen=True)
class DensityParams(KindParams):
    checkpoints: tuple[int, ...]  # P/E counts both groups are measured at
    times_h: tuple[float, ...] = ()  # retention after each checkpoint's programming, 25 degC-equivalent hours


def mode_groups(p: DensityParams) -> dict[str, list[int]]:
    """The first half of the blocks runs as MLC, the second as pSLC."""
    return dict(zip(MODES, steps.groups(list(p.blocks), 2, "modes (MLC and pSLC)")))


def label(mode: str, pe: int, hours: float) -> str:
    return f"{mode} pe={pe}" + (f" t={hours:g}h" if hours else "")


def plan(p: DensityParams, g: Geometry) -> list[steps.Step]:
    lower = list(PageMap.shuffled_mlc(g.pages_per_block).of_type(PageType.LOWER))  # the one page order here
    pages = {"mlc": list(range(g.pages_per_block)), "pslc": lower}
    page_set = {"mlc": None, "pslc": P.page_set_bytes(lower, g.pages_per_block)}
    grps = mode_groups(p)
    out: list[steps.Step] = []
    have = 0
    for cp in steps.checkpoints_ahead(p.checkpoints, p.worn):
        for mode, grp in grps.items():
            out += steps.cycle_to(grp, have, cp - 1, p.seed, page_set[mode], worn=p.worn, leaves_pattern=False)
            for b in grp:  # the checkpoint's own cycle, each operation timed
                out.append(steps.Erase(b, pe=cp))
                out += [steps.Program(b, q, p.seed, pe=cp) for q in pages[mode]]
        have = cp
        times = (0.0, *p.times_h)
        for i, hours in enumerate(times):
            if hours:
                out.append(steps.wait(p.oven, p.temp_c, hours - times[i - 1], fresh=i == 1))
            for mode, grp in grps.items():
                meta = steps.Checkpoint(label=label(mode, cp, hours), pe=cp, retention=bool(hours))
                for run in steps.contiguous(pages[mode]):  # the fresh reads' tR compares the modes: timed
                    out += steps.measure(grp, p.seed, g, meta, first_page=run[0], n_pages=len(run), timed=not hours)
    return out


def from_cli(oven: str | None, temp_c: float, chamber_file: str | None, checkpoints: str, times: str | None) -> dict:
    cps = sorted(set(parse_int_list(checkpoints, "--checkpoints")))
    if cps[0] < 1:
        raise click.BadParameter("density checkpoints start at 1")
    return {"checkpoints": cps, "times_h": parse_hours(times) if times else [],
            **oven_fields(oven, temp_c, chamber_file)}


def _rate(errors: int, bits: int) -> dict:
    lo, hi = poisson_interval(np.array([errors]), np.array([bits]))
    return {"rber": errors / bits if bits else None, "rber_95": [float(lo[0]), float(hi[0])], "errors": int(errors),
            "bits": int(bits)}


def results(store, c, p: DensityParams, pm: PageMap) -> dict:
    """Per checkpoint (and retention time): each mode's RBER with its 95 % interval and its operation times;
    the pSLC/MLC ratios (RBER: its 95 % upper limit too, which is all a count of zero gives)."""
    mode_of = {b: m for m, grp in mode_groups(p).items() for b in grp}
    point = {label(m, pe, h): (m, pe, h) for m in MODES for pe in p.checkpoints for h in (0.0, *p.times_h)}
    acc: dict[tuple, dict] = {}
    for x in store.rows(c.id):
        mode, pe, hours = point[x.label]
        a = acc.setdefault((pe, hours), {m: {"lower": [0, 0], "upper": [0, 0], "tr": []} for m in MODES})
        m = a[mode]
        kind = "upper" if pm.is_upper(x.page) else "lower"
        m[kind][0] += x.err_1to0 + x.err_0to1
        m[kind][1] += x.bits
        if not x.retention_h:
            m["tr"].append(x.busy_ns / 1e3)
    ops: dict[tuple, list] = {}
    for t in store.op_times(c.id):
        kind = ("upper" if pm.is_upper(t.page) else "lower") if t.op == "program" else ""
        ops.setdefault((t.pe, mode_of[t.block], t.op, kind), []).append(t.busy_ns / 1e3)
    mean = lambda v: float(np.mean(v)) if v else None  # noqa: E731
    out = []
    for (pe, hours), a in sorted(acc.items()):
        row: dict = {"pe": pe, "retention_h": hours}
        for mode in MODES:
            m = a[mode]
            e, n = m["lower"][0] + m["upper"][0], m["lower"][1] + m["upper"][1]
            row[mode] = {**_rate(e, n), **{k: _rate(*m[k]) if m[k][1] else None for k in ("lower", "upper")}}
            if not hours:
                lo, up = ops.get((pe, mode, "program", "lower"), []), ops.get((pe, mode, "program", "upper"), [])
                row[mode].update(tprog_us=mean(lo + up), tprog_lower_us=mean(lo), tprog_upper_us=mean(up),
                                 tbers_us=mean(ops.get((pe, mode, "erase", ""), [])), tr_us=mean(m["tr"]))
        s, m = row["pslc"], row["mlc"]
        row["rber_ratio"] = s["rber"] / m["rber"] if s["errors"] and m["errors"] else None
        row["rber_ratio_95_upper"] = s["rber_95"][1] / m["rber"] if m["errors"] else None
        if not hours:  # a pSLC page's program and read against the mean MLC page's
            row["tprog_ratio"] = s["tprog_us"] / m["tprog_us"] if s["tprog_us"] and m["tprog_us"] else None
            row["tr_ratio"] = s["tr_us"] / m["tr_us"] if s["tr_us"] and m["tr_us"] else None
        out.append(row)
    failed = {b for b, s in store.block_states(c.chip_id).items() if s.failed}
    return {"blocks": mode_groups(p), "worn_out": {m: [b for b in grp if b in failed] for m, grp in mode_groups(p).items()},
            "pslc_capacity": 0.5, "checkpoints": out}


def summary_lines(res: dict) -> list[str]:
    out = [f"  {'P/E':>6} {'retention h':>11} {'RBER MLC':>9} {'RBER pSLC':>12} {'ratio':>9} {'tPROG ratio':>11} "
           f"{'tR ratio':>8}"]
    for r in res["checkpoints"]:
        s = r["pslc"]
        pslc = f"{s['rber']:.2e}" if s["errors"] else f"<{s['rber_95'][1]:.1e}"
        ratio = (f"{r['rber_ratio']:.2e}" if r["rber_ratio"] is not None else
                 f"<{r['rber_ratio_95_upper']:.1e}" if r["rber_ratio_95_upper"] is not None else "-")
        tp = f"{r['tprog_ratio']:.3f}" if r.get("tprog_ratio") else "-"
        tr = f"{r['tr_ratio']:.3f}" if r.get("tr_ratio") else "-"
        out.append(f"  {r['pe']:>6} {r['retention_h']:>11.4g} {r['mlc']['rber']:>9.2e} {pslc:>12} {ratio:>9} "
                   f"{tp:>11} {tr:>8}")
    out.append("  (pSLC holds half the bits of an MLC block; a pSLC RBER without errors is its 95 % upper limit)")
    for mode, blocks in res["worn_out"].items():
        if blocks:
            out.append(f"  {mode} blocks that wore out (an erase or program FAILed): {', '.join(map(str, blocks))}")
    return out


def report(r, c, p: DensityParams, pm: PageMap) -> None:
    res = results(r.store, c, p, pm)
    rows = res["checkpoints"]
    if not rows:
        return
    fig, (ax, bx) = r.subplots(1, 2, figsize=(11, 4.2))
    for hours in sorted({x["retention_h"] for x in rows}):
        sel = [x for x in rows if x["retention_h"] == hours]
        pe = np.array([x["pe"] for x in sel])
        tag = f", {hours:g} h" if hours else ""
        for key, sub, style, label in (("mlc", "lower", "o-", "MLC lower pages"), ("mlc", "upper", "s-", "MLC upper pages"),
                                       ("pslc", None, "^--", "pSLC")):
            rates = [x[key][sub] if sub else x[key] for x in sel]
            k = np.array([q["errors"] for q in rates], float)
            y = np.array([q["rber"] if q["errors"] else q["rber_95"][1] for q in rates])
            ax.plot(pe, y, style, ms=4, mfc="none" if not k.all() else None, label=label + tag)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("P/E cycles")
    ax.set_ylabel("raw bit error rate")
    ax.set_title("RBER: MLC vs pseudo-SLC (hollow: no error, 95 % upper limit)")
    ax.legend(fontsize=7)
    fresh = [x for x in rows if not x["retention_h"]]
    w = 0.25
    idx = np.arange(len(fresh))
    for i, (mode, sub, label) in enumerate((("mlc", "tprog_lower_us", "MLC lower page"),
                                           ("mlc", "tprog_upper_us", "MLC upper page"), ("pslc", "tprog_us", "pSLC page"))):
        bx.bar(idx + (i - 1) * w, [x[mode][sub] or 0 for x in fresh], w, label=label)
    bx.set_xticks(idx, [str(x["pe"]) for x in fresh])
    bx.set_xlabel("P/E cycles")
    bx.set_ylabel("median tPROG (µs)")
    bx.set_title("Program time per page")
    bx.legend(fontsize=7)
    r.fig(fig, f"density_{c.id}", f"MLC and pseudo-SLC blocks of one chip over wear (campaign {c.id}): RBER per mode "
                                  "and page type, program time per page")
    r.p("pSLC/MLC: " + "; ".join(f"P/E {x['pe']}" + (f" after {x['retention_h']:g} h" if x["retention_h"] else "") +
                                 ": RBER ratio " + (f"{x['rber_ratio']:.2e}" if x["rber_ratio"] is not None else
                                                    f"< {x['rber_ratio_95_upper']:.1e}" if x["rber_ratio_95_upper"]
                                                    else "-") +
                                 (f", tPROG ratio {x['tprog_ratio']:.3f}" if x.get("tprog_ratio") else "")
                                 for x in rows))


KIND = CampaignKind(
    name="density", help="MLC and pseudo-SLC blocks side by side over wear: RBER and operation times of each mode.",
    params=DensityParams, plan=plan, report=report, from_cli=from_cli, results=results, summary=summary_lines,
    options=(*OVEN_OPTIONS,
             click.option("--checkpoints", default="1000,3000,10000", show_default=True,
                          help="P/E counts to measure both modes at."),
             click.option("--times", default=None,
                          help="25 degC-equivalent retention times to re-read each checkpoint after (e.g. 1mo,1y).")))
