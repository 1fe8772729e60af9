"""Retention: program block groups at several wear levels, then re-read them after each retention time."""
from __future__ import annotations

from dataclasses import dataclass

import click
import numpy as np

from nandrig.characterization.measurements import poisson_interval
from nandrig.chip.geometry import Geometry, PageMap, PageType
from nandrig.host.kinds import steps
from nandrig.host.kinds.base import (OVEN_OPTIONS, CampaignKind, KindParams, oven_fields, parse_hours,
                                     parse_int_list)
from nandrig.host.kinds.endurance import page_profile


@dataclass(frozen=True)
class RetentionParams(KindParams):
    wear: tuple[int, ...]
    times_h: tuple[float, ...]  # 25 degC-equivalent hours


def plan(p: RetentionParams, g: Geometry) -> list[steps.Step]:
    out: list[steps.Step] = []
    grps = steps.groups(list(p.blocks), len(p.wear))
    for grp, pe in zip(grps, p.wear):
        out += steps.cycle_to(grp, 0, pe, p.seed, worn=p.worn)
    times = [0.0, *p.times_h]
    for i, hours in enumerate(times):
        if i:
            out.append(steps.wait(p.oven, p.temp_c, hours - times[i - 1]))
        for grp, pe in zip(grps, p.wear):
            out += steps.measure(grp, p.seed, g, steps.Checkpoint(label=f"t={hours:g}h", pe=pe, retention=True))
    return out


def from_cli(oven: str | None, temp_c: float, chamber_file: str | None, wear: str, times: str) -> dict:
    return {"wear": parse_int_list(wear, "--wear"), "times_h": parse_hours(times),
            **oven_fields(oven, temp_c, chamber_file)}


def report(r, c, p: RetentionParams, pm: PageMap) -> None:
    """RBER against retention time, one colour per wear level, lower and upper pages apart, with 95 % intervals."""
    rows = r.store.rows(c.id)
    if rows:
        level = {b: pe for grp, pe in zip(steps.groups(list(p.blocks), len(p.wear)), p.wear) for b in grp}
        acc: dict[tuple, list] = {}
        for x in rows:
            e = acc.setdefault((level[x.block], pm.page_type(x.page), x.retention_h), [0, 0])
            e[0] += x.err_1to0 + x.err_0to1
            e[1] += x.bits
        fig, ax = r.subplots(figsize=(8, 4.6))
        colours = dict(zip(p.wear, ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown",
                                    "tab:pink", "tab:gray", "tab:olive", "tab:cyan")))
        for pe in p.wear:
            for kind, style in ((PageType.LOWER, "o-"), (PageType.UPPER, "s--")):
                pts = sorted((h, e) for (w, k, h), e in acc.items() if w == pe and k == kind)
                if not pts:
                    continue
                h = np.array([t for t, _ in pts])
                k, n = np.array([e[0] for _, e in pts], float), np.array([e[1] for _, e in pts], float)
                lo, hi = poisson_interval(k, n)
                rate = np.where(k > 0, k / n, hi)  # no error seen: drawn at its upper limit
                ax.errorbar(np.maximum(h, 0.1), rate, yerr=[rate - lo, hi - rate], fmt=style, ms=4, capsize=2,
                            color=colours.get(pe), mfc="none" if kind == PageType.UPPER else None,
                            label=f"P/E {pe}, {kind.name.lower()} pages")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("retention time, 25 °C-equivalent hours (0 drawn at 0.1 h)")
        ax.set_ylabel("raw bit error rate (errors / bit)")
        ax.set_title(f"RBER vs retention time per wear level: campaign {c.id}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, ncol=2)
        r.fig(fig, f"retention_{c.id}", f"RBER vs retention time at each wear level (campaign {c.id}); bars: 95 % "
                                        "Poisson intervals of each count, points without errors at their upper limit")
    page_profile(r, c, p, pm)


KIND = CampaignKind(
    name="retention", help="Program blocks at several wear levels, then re-read them after each retention time.",
    params=RetentionParams, plan=plan, feeds_fit=True, report=report, from_cli=from_cli,
    options=(*OVEN_OPTIONS,
             click.option("--wear", default="1000,3000,10000", show_default=True, help="P/E levels, one block group each."),
             click.option("--times", default="1d,1w,1mo,3mo,1y", show_default=True,
                          help="25 degC-equivalent retention times.")))
