"""Latency: per-page program, read and erase busy times at several wear levels."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import click
import numpy as np

from nandrig.chip.geometry import Geometry, PageMap, PageType
from nandrig.host.kinds import steps
from nandrig.host.kinds.base import CampaignKind, KindParams, parse_int_list


@dataclass(frozen=True)
class LatencyParams(KindParams):
    checkpoints: tuple[int, ...]


def plan(p: LatencyParams, g: Geometry) -> list[steps.Step]:
    out: list[steps.Step] = []
    have = 0
    for cp in p.checkpoints:
        out += steps.cycle_to(list(p.blocks), have, cp - 1, p.seed)
        for b in p.blocks:
            out.append(steps.erase(b, pe=cp))
            out += [steps.program(b, page, p.seed, pe=cp) for page in range(g.pages_per_block)]
        have = cp
        out += steps.measure(list(p.blocks), p.seed, g, {"label": f"pe={cp}", "pe": cp})
    return out


def from_cli(checkpoints: str) -> dict:
    cps = sorted(set(parse_int_list(checkpoints, "--checkpoints")))
    if cps[0] < 1:
        raise click.BadParameter("latency checkpoints start at 1")
    return {"checkpoints": cps}


def report(r, c, p: LatencyParams, pm: PageMap) -> None:
    ops = r.store.op_times(c.id)
    progs = [(x.block, x.page, x.pe, x.busy_ns) for x in ops if x.op == "program"]
    erases = [(x.pe, x.busy_ns) for x in ops if x.op == "erase"]
    if not progs:
        return
    fig, ax = r.subplots(figsize=(8, 4))
    by_pe = defaultdict(list)
    for _block, page, pe, busy in progs:
        by_pe[pe].append((page, busy))
    for pe in sorted(by_pe):
        pts = np.array(sorted(by_pe[pe]))
        ax.plot(pts[:, 0], pts[:, 1] / 1000, ".", ms=4, label=f"P/E {pe}")
    ax.set_xlabel("page index in block")
    ax.set_ylabel("program time tPROG (µs)")
    ax.set_title("Program latency by page: fast (lower) and slow (upper) pages")
    ax.legend(fontsize=8)
    r.fig(fig, f"latency_{c.id}", "Program busy time per page index at each wear level (campaign %d)" % c.id)
    histograms(r, c, progs, pm)
    lines = []
    for pe in sorted(by_pe):
        pts = np.array(by_pe[pe])
        up = np.array([pm.is_upper(int(q)) for q in pts[:, 0]])
        lsb, msb = pts[~up, 1].mean() / 1000, pts[up, 1].mean() / 1000
        lines.append(f"<tr><td>{pe}</td><td>{lsb:.0f}</td><td>{msb:.0f}</td><td>{msb / lsb:.2f}</td></tr>")
    er = defaultdict(list)
    for pe, busy in erases:
        er[pe].append(busy)
    r.sections.append("<table><tr><th>P/E</th><th>lower-page tPROG (µs)</th><th>upper-page tPROG (µs)</th>"
                      "<th>ratio</th></tr>" + "".join(lines) + "</table>")
    r.p("Erase time tBERS: " + ", ".join(f"{np.mean(v) / 1e6:.2f} ms at P/E {pe}" for pe, v in sorted(er.items())))


def histograms(r, c, progs: list[tuple], pm: PageMap) -> None:
    """How program and read times spread, lower and upper pages apart, each wear level its own colour."""
    reads = [(x.page, x.pe, x.busy_ns) for x in r.store.rows(c.id)]
    fig, axes = r.subplots(1, 2, figsize=(10, 3.8))
    for ax, what, pts in ((axes[0], "program time tPROG", [(q, pe, ns) for _b, q, pe, ns in progs]),
                          (axes[1], "read time tR", reads)):
        if not pts:
            ax.set_visible(False)
            continue
        us = np.array([ns for _, _, ns in pts]) / 1000
        bins = np.linspace(us.min(), us.max() + 1e-9, 40)
        levels = sorted({pe for _, pe, _ in pts}) if pts is not reads else [None]  # tR barely moves with wear
        for i, pe in enumerate(levels):
            for kind in (PageType.LOWER, PageType.UPPER):
                sel = [ns / 1000 for q, w, ns in pts if pe in (None, w) and pm.page_type(q) == kind]
                if sel:
                    ax.hist(sel, bins=bins, histtype="step", lw=1.4, color=f"C{i if pe is not None else kind}",
                            ls="-" if kind == PageType.LOWER else "--",
                            label=(f"P/E {pe}, " if pe is not None else "") + f"{kind.name.lower()} pages")
        ax.set_xlabel(f"{what} (µs)")
        ax.set_ylabel("pages")
        ax.legend(fontsize=7)
    fig.suptitle(f"Latency distributions, campaign {c.id}")
    r.fig(fig, f"latency_hist_{c.id}", f"Program busy times per wear level (colours) and read busy times over all "
                                        f"levels, lower (solid) and upper (dashed) pages (campaign {c.id})")


KIND = CampaignKind(
    name="latency", help="Per-page program, read and erase busy times at several wear levels.",
    params=LatencyParams, plan=plan, report=report, from_cli=from_cli,
    options=(click.option("--checkpoints", default="1,1000,3000,10000", show_default=True, help="P/E counts to time at."),))
