"""Retention: program block groups at several wear levels, then re-read them after each retention time."""
from __future__ import annotations

from dataclasses import dataclass

import click

from nandrig.chip.geometry import Geometry
from nandrig.host.kinds import steps
from nandrig.host.kinds.base import OVEN_OPTIONS, CampaignKind, KindParams, parse_hours, parse_int_list
from nandrig.host.kinds.endurance import page_profile


@dataclass(frozen=True)
class RetentionParams(KindParams):
    wear: tuple[int, ...]
    times_h: tuple[float, ...]  # 25 degC-equivalent hours


def plan(p: RetentionParams, g: Geometry) -> list[steps.Step]:
    out: list[steps.Step] = []
    grps = steps.groups(list(p.blocks), len(p.wear))
    for grp, pe in zip(grps, p.wear):
        out += steps.cycle_to(grp, 0, pe, p.seed)
    times = [0.0, *p.times_h]
    for i, hours in enumerate(times):
        if i:
            out.append(steps.wait(p.oven, p.temp_c, hours - times[i - 1]))
        for grp, pe in zip(grps, p.wear):
            out += steps.measure(grp, p.seed, g, {"label": f"t={hours:g}h", "pe": pe, "retention": True})
    return out


def from_cli(oven: str | None, temp_c: float, wear: str, times: str) -> dict:
    return {"wear": parse_int_list(wear, "--wear"), "times_h": parse_hours(times), "oven": oven, "temp_c": temp_c}


KIND = CampaignKind(
    name="retention", help="Program blocks at several wear levels, then re-read them after each retention time.",
    params=RetentionParams, plan=plan, feeds_fit=True, report=page_profile, from_cli=from_cli,
    options=(*OVEN_OPTIONS,
             click.option("--wear", default="1000,3000,10000", show_default=True, help="P/E levels, one block group each."),
             click.option("--times", default="1d,1w,1mo,3mo,1y", show_default=True,
                          help="25 degC-equivalent retention times.")))
