"""Program disturb: program one page again without erase and measure the pages before it (its neighbours)."""
from __future__ import annotations

from dataclasses import dataclass

import click

from nandrig.chip.geometry import Geometry, PageMap
from nandrig.host.kinds import steps
from nandrig.host.kinds.base import CampaignKind, KindParams, parse_int_list


@dataclass(frozen=True)
class ProgramDisturbParams(KindParams):
    pe: int
    page: int
    repeat_points: tuple[int, ...]


def plan(p: ProgramDisturbParams, g: Geometry) -> list[steps.Step]:
    steps.check_page(p.page, g)
    blocks, target = list(p.blocks), p.page
    out = steps.cycle_to(blocks, 0, p.pe, p.seed, worn=p.worn)
    for b in blocks:
        out.append(steps.Erase(b))
        out += [steps.Program(b, page, p.seed) for page in range(target + 1)]
    out += steps.measure(blocks, p.seed, g, steps.Checkpoint(label="repeats=0", pe=p.pe + 1, reads=0), n_pages=target)
    done = 0
    for r in p.repeat_points:
        for b in blocks:
            out += [steps.Program(b, target, p.seed) for _ in range(r - done)]
        done = r
        out += steps.measure(blocks, p.seed, g, steps.Checkpoint(label=f"repeats={r}", pe=p.pe + 1, reads=r), n_pages=target)
    return out


def from_cli(pe: int, page: int, repeats: str) -> dict:
    return {"pe": pe, "page": page, "repeat_points": sorted(set(parse_int_list(repeats, "--repeats")))}


def report(r, c, p: ProgramDisturbParams, pm: PageMap) -> None:
    rows = r.export_rows(c)
    fig, ax = r.subplots(figsize=(7, 4))
    ax.plot([x["reads"] for x in rows], [x["errors"] for x in rows], "o-")
    ax.set_xlabel(f"extra programs of page {p.page} without erase")
    ax.set_ylabel(f"bit errors in pages 0-{p.page - 1} (count)")
    ax.set_title(f"Program disturb on neighbouring pages (campaign {c.id})")
    ax.grid(True, alpha=0.3)
    r.fig(fig, f"program_disturb_{c.id}", "Program disturb: errors in the pages before the re-programmed one")


KIND = CampaignKind(
    name="program-disturb", help="Program one page again without erase and measure the pages before it (its neighbours).",
    params=ProgramDisturbParams, plan=plan, report=report, from_cli=from_cli,
    options=(
        click.option("--pe", type=click.IntRange(min=0), default=1000, show_default=True,
                     help="P/E cycles of wear before the page is programmed again."),
        click.option("--page", type=click.IntRange(min=1), default=9, show_default=True,
                     help="The page programmed again and again."),
        click.option("--repeats", default="1,2,5,10,20", show_default=True,
                     help="Extra programs of --page to measure after."),
    ))
