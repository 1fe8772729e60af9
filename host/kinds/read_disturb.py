"""Read disturb: read one page of each block over and over, measuring the whole block as reads accumulate."""
from __future__ import annotations

from dataclasses import dataclass

import click
import numpy as np

from nandrig.chip.geometry import Geometry, PageMap
from nandrig.host.kinds import steps
from nandrig.host.kinds.base import CampaignKind, KindParams


@dataclass(frozen=True)
class ReadDisturbParams(KindParams):
    pe: int
    read_points: tuple[int, ...]
    page: int


def plan(p: ReadDisturbParams, g: Geometry) -> list[steps.Step]:
    steps.check_page(p.page, g)
    blocks = list(p.blocks)
    out = steps.cycle_to(blocks, 0, p.pe, p.seed, worn=p.worn)
    out += steps.measure(blocks, p.seed, g, steps.Checkpoint(label="reads=0", pe=p.pe, reads=0))
    done = 0
    for target in p.read_points:
        out += [s for b in blocks for s in steps.read_disturb(b, p.page, target - done)]
        done = target
        out += steps.measure(blocks, p.seed, g, steps.Checkpoint(label=f"reads={target}", pe=p.pe, reads=target))
    return out


def from_cli(pe: int, reads: int, points: int, page: int) -> dict:
    pts = sorted({max(1, int(round(reads ** ((k + 1) / points)))) for k in range(points)} | {reads})
    return {"pe": pe, "read_points": pts, "page": page}


def report(r, c, p: ReadDisturbParams, pm: PageMap) -> None:
    rows = r.export_rows(c)
    reads = np.array([x["reads"] for x in rows], float)
    rber = np.array([x["rber"] for x in rows])
    fig, ax = r.subplots(figsize=(7, 4))
    ax.plot(np.maximum(reads, 1), np.maximum(rber, 1e-9), "o-")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("reads of one page since the block's erase")
    ax.set_ylabel("block raw bit error rate (errors / bit)")
    ax.set_title(f"Read disturb at {p.pe} P/E (campaign {c.id}; 0 errors drawn at 1e-9)")
    ax.grid(True, which="both", alpha=0.3)
    r.fig(fig, f"read_disturb_{c.id}", "Read-disturb curve: RBER of the whole block against reads")


KIND = CampaignKind(
    name="read-disturb", help="Read one page of each block over and over, measuring the whole block as reads accumulate.",
    params=ReadDisturbParams, plan=plan, report=report, from_cli=from_cli,
    options=(
        click.option("--pe", type=click.IntRange(min=0), default=3000, show_default=True, help="Wear before the reads."),
        click.option("--reads", type=click.IntRange(min=1), default=5_000_000, show_default=True,
                     help="Total reads of --page."),
        click.option("--points", type=click.IntRange(min=1, max=60), default=10, show_default=True,
                     help="Measurements (log-spaced)."),
        click.option("--page", type=click.IntRange(min=0), default=0, show_default=True,
                     help="The page read over and over."),
    ))
