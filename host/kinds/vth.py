"""Vth: sweep the read-retry offset and measure; the error curves give the threshold-voltage distributions."""
from __future__ import annotations

from dataclasses import dataclass

import click
import numpy as np

from nandrig.chip.geometry import Geometry, PageMap
from nandrig.host.kinds import steps
from nandrig.host.kinds.base import OVEN_OPTIONS, CampaignKind, KindParams, parse_hours


@dataclass(frozen=True)
class VthParams(KindParams):
    pe: int
    retention_h: float
    offsets: tuple[int, ...]


def plan(p: VthParams, g: Geometry) -> list[steps.Step]:
    blocks = list(p.blocks)
    out = steps.cycle_to(blocks, 0, p.pe, p.seed)
    if p.retention_h > 0:
        out.append(steps.wait(p.oven, p.temp_c, p.retention_h))
    for off in p.offsets:
        out.append(steps.set_offset(off))
        out += steps.measure(blocks, p.seed, g, {"label": f"offset={off}", "pe": p.pe, "offset": off, "retention": True})
    out.append(steps.set_offset(0))
    return out


def from_cli(oven: str | None, temp_c: float, pe: int, retention: str, offsets: str) -> dict:
    try:
        a, b, s = (int(x) for x in offsets.split(":"))
        offs = list(range(a, b + 1, s))
    except ValueError:
        raise click.BadParameter(f"--offsets must be FIRST:LAST:STEP, got {offsets!r}") from None
    if not offs or any(not -128 <= o <= 127 for o in offs):
        raise click.BadParameter("--offsets must give offsets within -128..127")
    ret = 0.0 if retention in ("0", "0h") else parse_hours(retention)[0]
    return {"pe": pe, "retention_h": ret, "offsets": offs, "oven": oven, "temp_c": temp_c}


def report(r, c, p: VthParams, pm: PageMap) -> None:
    rows = r.store.rows(c.id)
    offs = sorted({x.offset for x in rows})
    curves = {k: np.zeros((len(offs), 2)) for k in ("lower", "upper")}
    for x in rows:
        kind = "upper" if pm.is_upper(x.page) else "lower"
        curves[kind][offs.index(x.offset)] += (x.err_1to0, x.err_0to1)
    fig, axes = r.subplots(1, 2, figsize=(11, 4))
    o = np.array(offs, float)
    mid = (o[1:] + o[:-1]) / 2
    for ax, (kind, cur) in zip(axes, curves.items()):
        # cells crossing a reference as it moves: the derivative of the error counts is their density
        ax.plot(mid, np.abs(np.diff(cur[:, 0])) / np.diff(o), "v-", label="stored 1 read 0 (upper tails)")
        ax.plot(mid, np.abs(np.diff(cur[:, 1])) / np.diff(o), "^-", label="stored 0 read 1 (lower tails)")
        ax.set_xlabel("read-reference offset (read-retry steps)")
        ax.set_ylabel("cells per offset step (count / step)")
        ax.set_title(f"{kind} pages: Vth density near the references")
        ax.legend(fontsize=8)
        ax.grid(True, alpha=0.3)
    r.fig(fig, f"vth_{c.id}", f"Vth distribution estimate from a read-retry sweep at {p.pe} P/E, "
                              f"{p.retention_h:g} h retention (campaign {c.id})")
    best = {k: offs[int(np.argmin(cur.sum(axis=1)))] for k, cur in curves.items()}
    r.p("Offset with the fewest errors: " + ", ".join(f"{k} pages {v:+d}" for k, v in best.items()))


KIND = CampaignKind(
    name="vth", help="Sweep the read-retry offset and measure: the error curves give the Vth distributions.",
    params=VthParams, plan=plan, report=report, from_cli=from_cli,
    options=(*OVEN_OPTIONS,
             click.option("--pe", type=click.IntRange(min=0), default=10_000, show_default=True,
                          help="P/E cycles of wear before the sweep."),
             click.option("--retention", "retention", default="1y", show_default=True,
                          help="Retention before the sweep (0 for none)."),
             click.option("--offsets", default="-60:20:4", show_default=True, help="Read-retry offsets FIRST:LAST:STEP.")))
