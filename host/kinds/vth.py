"""Vth: sweep the read-retry offset and measure; the error curves give the threshold-voltage distributions."""
from __future__ import annotations

from dataclasses import dataclass

import click
import numpy as np

from nandrig.chip.geometry import Geometry, PageMap
from nandrig.chip.read_retry import require_offsets, table_for
from nandrig.host.kinds import steps
from nandrig.host.kinds.base import OVEN_OPTIONS, CampaignKind, KindParams, oven_fields, parse_hours


@dataclass(frozen=True)
class VthParams(KindParams):
    pe: int
    retention_h: float
    offsets: tuple[int, ...]
    retry_step_mv: float | None = None  # the read-retry step in mV, over the chip's table's (plots)


def plan(p: VthParams, g: Geometry) -> list[steps.Step]:
    blocks = list(p.blocks)
    out = steps.cycle_to(blocks, 0, p.pe, p.seed, worn=p.worn)
    if p.retention_h > 0:
        out.append(steps.wait(p.oven, p.temp_c, p.retention_h))
    for off in p.offsets:
        out.append(steps.SetOffset(off))
        out += steps.measure(blocks, p.seed, g, steps.Checkpoint(f"offset={off}", p.pe, retention=True,
                                                                         offset=off))
    out.append(steps.SetOffset(0))
    return out


def check_chip(p: VthParams, chip: dict) -> None:
    """Refused before anything is worn: a chip without a read-retry table, or offsets outside its range."""
    require_offsets(chip["manufacturer"], chip["model"], p.offsets)


def from_cli(oven: str | None, temp_c: float, chamber_file: str | None, pe: int, retention: str, offsets: str,
             retry_step_mv: float | None) -> dict:
    try:
        a, b, s = (int(x) for x in offsets.split(":"))
        offs = list(range(a, b + 1, s))
    except ValueError:
        raise click.BadParameter(f"--offsets must be FIRST:LAST:STEP, got {offsets!r}") from None
    if not offs or any(not -128 <= o <= 127 for o in offs):
        raise click.BadParameter("--offsets must give offsets within -128..127")
    ret = 0.0 if retention in ("0", "0h") else parse_hours(retention)[0]
    return {"pe": pe, "retention_h": ret, "offsets": offs, "retry_step_mv": retry_step_mv,
            **oven_fields(oven, temp_c, chamber_file)}


def _curves(rows, pm: PageMap) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Per page type, the cells crossing a reference per offset step as it moves: the derivative of the error
    counts over the sweep is the Vth density near the references (1->0: upper tails, 0->1: lower tails)."""
    offs = sorted({x.offset for x in rows})
    counts = {k: np.zeros((len(offs), 2)) for k in ("lower", "upper")}
    for x in rows:
        counts["upper" if pm.is_upper(x.page) else "lower"][offs.index(x.offset)] += (x.err_1to0, x.err_0to1)
    o = np.array(offs, float)
    return (o[1:] + o[:-1]) / 2, {k: np.abs(np.diff(c, axis=0)) / np.diff(o)[:, None] for k, c in counts.items()}


def report(r, c, p: VthParams, pm: PageMap) -> None:
    """Every Vth sweep of the chip in one figure (one colour per condition: wear and retention), drawn with the
    chip's first sweep; on a log axis, in millivolts when the sweep gave the retry step size."""
    mine = [x for x in r.store.campaigns() if x.kind == "vth" and x.chip_id == c.chip_id and r.store.rows(x.id)]
    rows = r.store.rows(c.id)
    best = {}
    for kind in ("lower", "upper"):
        sel = [x for x in rows if pm.is_upper(x.page) == (kind == "upper")]
        offs = sorted({x.offset for x in sel})
        errs = [sum(x.err_1to0 + x.err_0to1 for x in sel if x.offset == o) for o in offs]
        best[kind] = offs[int(np.argmin(errs))]
    r.p("Offset with the fewest errors: " + ", ".join(f"{k} pages {v:+d}" for k, v in best.items()))
    if not mine or mine[0].id != c.id:
        return
    chip = r.store.chip(c.chip_id)
    table = table_for(chip["manufacturer"], chip["model"])
    step_mv = table.step_mv if table else None
    fig, axes = r.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for i, x in enumerate(mine):
        q = VthParams.from_mapping(x.params)
        mid, dens = _curves(r.store.rows(x.id), pm)
        scale = q.retry_step_mv or step_mv or 1.0
        for ax, (kind, d) in zip(axes, dens.items()):
            for col, style in ((0, "v-"), (1, "^--")):
                y = d[:, col] / scale
                ax.plot(mid * scale, np.where(y > 0, y, np.nan), style, color=f"C{i}", ms=3, lw=1,
                        label=f"{q.pe} P/E, {q.retention_h:g} h" if col == 0 else None)
    units = "mV" if step_mv or all(VthParams.from_mapping(x.params).retry_step_mv for x in mine) else "read-retry steps"
    for ax, kind in zip(axes, ("lower", "upper")):
        ax.set_yscale("log")
        ax.set_xlabel(f"read-reference shift ({units})")
        ax.set_title(f"{kind} pages (solid: stored 1 read 0; dashed: 0 read 1)", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel(f"cells per {units[:-1] if units == 'read-retry steps' else units}")
    axes[0].legend(fontsize=7, title="condition", title_fontsize=7)
    fig.suptitle("Vth density near the read references, from read-retry sweeps")
    r.fig(fig, f"vth_{c.id}", f"Vth density estimates of every sweep on this chip ({len(mine)} condition"
                              f"{'s' if len(mine) > 1 else ''}), log scale")


KIND = CampaignKind(
    name="vth", help="Sweep the read-retry offset and measure: the error curves give the Vth distributions.",
    params=VthParams, plan=plan, report=report, from_cli=from_cli, check_chip=check_chip,
    options=(*OVEN_OPTIONS,
             click.option("--pe", type=click.IntRange(min=0), default=10_000, show_default=True,
                          help="P/E cycles of wear before the sweep."),
             click.option("--retention", "retention", default="1y", show_default=True,
                          help="Retention before the sweep (0 for none)."),
             click.option("--offsets", default="-60:20:4", show_default=True, help="Read-retry offsets FIRST:LAST:STEP."),
             click.option("--retry-step-mv", type=click.FloatRange(min=0.0, min_open=True),
                          help="The read-retry step in mV to plot with (default: the chip's read-retry table's, "
                               "nandrig/chip/read_retry.py).")))
