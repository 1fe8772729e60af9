"""Endurance: cycle the blocks to a P/E count, measuring every page at checkpoints."""
from __future__ import annotations

from dataclasses import dataclass

import click
import numpy as np

from nandrig.chip.geometry import Geometry, PageMap
from nandrig.host.kinds import steps
from nandrig.host.kinds.base import CampaignKind, KindParams, parse_int_list


@dataclass(frozen=True)
class EnduranceParams(KindParams):
    cycles: int
    checkpoints: tuple[int, ...]


def checkpoints(cycles: int, step: int) -> list[int]:
    """1, 10, 100, 1000, ... below ``step``, then every ``step``, and the end."""
    cps = [10**k for k in range(7) if 10**k < min(step, cycles)]
    cps += list(range(step, cycles, step)) + [cycles]
    return sorted(set(c for c in cps if c >= 1))


def plan(p: EnduranceParams, g: Geometry) -> list[steps.Step]:
    out: list[steps.Step] = []
    have = 0
    for cp in steps.checkpoints_ahead(p.checkpoints, p.worn):
        out += steps.cycle_to(list(p.blocks), have, cp, p.seed, worn=p.worn)
        have = cp
        out += steps.measure(list(p.blocks), p.seed, g, steps.Checkpoint(label=f"pe={cp}", pe=cp))
    return out


def from_cli(cycles: int, checkpoints_text: str | None, step: int) -> dict:
    cps = sorted(set(parse_int_list(checkpoints_text, "--checkpoints"))) if checkpoints_text else checkpoints(cycles, step)
    if cps[0] < 1 or cps[-1] > cycles:
        raise click.BadParameter(f"checkpoints must lie in 1..{cycles}")
    return {"cycles": cycles, "checkpoints": cps}


def page_profile(r, c, p, pm: PageMap) -> None:
    """Per-page error rate at the last checkpoint, lower and upper pages apart."""
    rows = r.store.rows(c.id)
    last = rows[-1].label
    sel = [x for x in rows if x.label == last]
    pages = np.array([x.page for x in sel])
    errs = np.array([x.err_1to0 + x.err_0to1 for x in sel], float)
    bits = np.array([x.bits for x in sel], float)
    idx = np.arange(len(pm.pages))
    rate = np.array([errs[pages == q].sum() / max(bits[pages == q].sum(), 1) for q in idx])
    up = np.array([pm.is_upper(int(q)) for q in idx])
    fig, ax = r.subplots(figsize=(8, 3.8))
    ax.bar(idx[~up], rate[~up], color="tab:blue", label="lower (LSB) pages")
    ax.bar(idx[up], rate[up], color="tab:red", label="upper (MSB) pages")
    ax.set_xlabel("page index in block")
    ax.set_ylabel("bit error rate (errors / bit)")
    ax.set_title(f"Errors by page across a block: campaign {c.id}, checkpoint {last}")
    ax.legend()
    r.fig(fig, f"pages_{c.id}", f"Per-page error rate at {last} (campaign {c.id}, {c.kind}), averaged over its blocks")


KIND = CampaignKind(
    name="endurance", help="Cycle the blocks to --cycles, measuring every page at checkpoints.",
    params=EnduranceParams, plan=plan, feeds_fit=True, report=page_profile, from_cli=from_cli,
    options=(
        click.option("--cycles", type=click.IntRange(min=1), default=10_000, show_default=True,
                     help="P/E cycles this campaign adds to each block (checkpoints count from its start)."),
        click.option("--checkpoints", "checkpoints_text",
                     help="P/E counts to measure at (default: 1, 10, 100, then every --step)."),
        click.option("--step", type=click.IntRange(min=1), default=1000, show_default=True,
                     help="P/E cycles between checkpoints after 1, 10 and 100."),
    ))
