"""Bit-error maps: cycle the blocks to each wear level, then read every page raw and keep where each bit error
is (characterization/bitmaps.py), for per-page, wordline, bitline and DQ-line maps (Grupp et al., MICRO'09,
Fig. 9: error rates by page within a block)."""
from __future__ import annotations

from dataclasses import dataclass

import click
import numpy as np

from nandrig.characterization import bitmaps
from nandrig.chip.geometry import Geometry, PageMap
from nandrig.host.kinds import steps
from nandrig.host.kinds.base import OVEN_OPTIONS, CampaignKind, KindParams, oven_fields, parse_hours, parse_int_list

BITLINE_BANDS = 64


@dataclass(frozen=True)
class BitmapParams(KindParams):
    wear: tuple[int, ...]  # P/E levels, strictly rising: every block is taken to each in turn and mapped there
    pages: tuple[int, ...] = ()  # pages mapped in each block; () for all
    after_h: float = 0.0  # 25 degC-equivalent retention between programming and the reads, at each level


def plan(p: BitmapParams, g: Geometry) -> list[steps.Step]:
    pages = list(p.pages) or list(range(g.pages_per_block))
    for page in pages:
        steps.check_page(page, g, "--pages")
    out: list[steps.Step] = []
    have = 0
    for pe in p.wear:
        out += steps.cycle_to(list(p.blocks), have, pe, p.seed, worn=p.worn)  # its last round leaves the pattern programmed
        have = pe
        label = f"pe={pe}"
        if p.after_h:
            out.append(steps.wait(p.oven, p.temp_c, p.after_h))
            label += f" t={p.after_h:g}h"
        first = len(out)  # the level's checkpoint is keyed by its first read
        out += [steps.raw_read(b, page, p.seed, g, steps.Checkpoint(label, pe, retention=bool(p.after_h),
                                                                     first_step=first))
                for b in p.blocks for page in pages]
    return out


def from_cli(oven: str | None, temp_c: float, chamber_file: str | None, wear: str, pages: str | None,
             after: str) -> dict:
    levels = parse_int_list(wear, "--wear")
    if levels[0] < 1 or any(b <= a for a, b in zip(levels, levels[1:])):
        raise click.BadParameter(f"--wear levels must rise from 1 P/E up (every block passes each), got {wear!r}")
    chosen = parse_int_list(pages, "--pages") if pages else []
    after_h = 0.0 if after in ("0", "0h") else parse_hours(after)[0]
    return {"wear": levels, "pages": sorted(set(chosen)), "after_h": after_h, **oven_fields(oven, temp_c, chamber_file)}


def report(r, c, p: BitmapParams, pm: PageMap) -> None:
    maps = r.store.bit_errors(c.id)
    if not maps:
        return
    chip = r.store.chip(c.chip_id)
    page_bits = (chip["page_bytes"] + chip["spare_bytes"]) * 8
    by_level: dict[str, dict[tuple[int, int], np.ndarray]] = {}  # per checkpoint label, in the campaign's order
    for label, _pe, block, page, blob in maps:
        by_level.setdefault(label, {})[block, page] = bitmaps.decode(blob)

    fig, ax = r.subplots(figsize=(8, 4))
    for label, pages in by_level.items():
        per_page: dict[int, list[int]] = {}
        for (_b, page), codes in pages.items():
            per_page.setdefault(page, []).append(len(codes))
        xs = np.array(sorted(per_page))
        rate = np.array([np.mean(per_page[x]) / page_bits for x in xs])
        upper = np.array([pm.is_upper(int(x)) for x in xs], bool)
        line = ax.plot(xs[~upper], np.maximum(rate[~upper], 1e-9), "o", ms=3, label=f"{label} lower")[0]
        ax.plot(xs[upper], np.maximum(rate[upper], 1e-9), "s", ms=3, color=line.get_color(), mfc="none",
                label=f"{label} upper")
    ax.set_yscale("log")
    ax.set_xlabel("page within the block")
    ax.set_ylabel("raw bit error rate (mean over blocks)")
    ax.set_title(f"Errors by page (campaign {c.id}; 0 errors drawn at 1e-9)")
    ax.legend(fontsize=7, ncol=2)
    ax.grid(True, which="both", alpha=0.3)
    r.fig(fig, f"bitmap_pages_{c.id}", "Raw bit error rate of each page of the block, lower and upper pages apart "
                                       "(as Grupp et al.'s Fig. 9)")

    label, pages = list(by_level.items())[-1]  # the highest wear
    blocks = sorted({b for b, _ in pages})
    wordlines = max(pm.wordline(page) for page in range(len(pm.pages))) + 1
    grid = np.zeros((len(blocks), wordlines))
    for (b, page), codes in pages.items():
        grid[blocks.index(b), pm.wordline(page)] += len(codes)
    fig, (wl, bl, dq) = r.subplots(1, 3, figsize=(12, 3.6), gridspec_kw={"width_ratios": [3, 3, 1.4]})
    im = wl.imshow(grid, aspect="auto", interpolation="nearest", cmap="viridis")
    wl.set_yticks(range(len(blocks)), [str(b) for b in blocks] if len(blocks) <= 16 else None)
    wl.set_xlabel("wordline")
    wl.set_ylabel("block")
    wl.figure.colorbar(im, ax=wl, label="bit errors")
    codes = list(pages.values())
    band = bitmaps.bitline_profile(codes, page_bits, BITLINE_BANDS)
    bl.bar(np.arange(BITLINE_BANDS) * page_bits / BITLINE_BANDS / 8, band, width=page_bits / BITLINE_BANDS / 8,
           align="edge")
    bl.axvline(chip["page_bytes"], color="k", lw=0.8, ls="--")
    bl.set_xlabel("column (byte; spare right of the dashed line)")
    bl.set_ylabel("bit errors per band")
    dq.bar(range(8), bitmaps.dq_profile(codes))
    dq.set_xticks(range(8))
    dq.set_xlabel("DQ line")
    fig.suptitle(f"Where the errors are at {label} (campaign {c.id}, {len(codes)} pages)")
    r.fig(fig, f"bitmap_maps_{c.id}", "Bit errors by wordline and block, by column band (bitlines), and by DQ "
                                      "line: a band or a line far above the rest is a weak bitline or the wiring")


KIND = CampaignKind(
    name="bitmap", help="Map raw bit errors: every page read raw at each wear level, each error's place kept.",
    params=BitmapParams, plan=plan, report=report, from_cli=from_cli,
    options=(
        click.option("--wear", default="3000", show_default=True,
                     help="P/E levels, rising: the blocks are cycled to each and every page mapped there."),
        click.option("--pages", help="Pages to map in each block, comma-separated (default: all)."),
        click.option("--after", default="0", show_default=True,
                     help="Retention before the reads at each level (25 degC-equivalent: 1d, 1mo, 1y, ...)."),
        *OVEN_OPTIONS,
    ))
