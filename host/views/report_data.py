"""What every campaign's data shows in the report beyond its kind's own section: how blocks spread, which way bits
flip, how operation times are distributed, and the campaign's tables as CSV files beside the page (each figure's
data, downloadable)."""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from nandrig.chip.geometry import PageMap
from nandrig.host.storage.store import Campaign
from nandrig.host.views.report_page import Report
from nandrig.host.views.tables import TABLES, csv_text

PERCENTILES = (50, 90, 99)


def data_section(r: Report, c: Campaign, pm: PageMap) -> None:
    rows = {name: list(t.rows(r.store, c)) for name, t in TABLES.items()}  # each read once: figures and CSV
    named = {name: [dict(zip(TABLES[name].names, row)) for row in rows[name]] for name in ("by_block", "pages",
                                                                                          "operations")}
    _spread(r, c, named["by_block"])
    _latency(r, c, pm, named["operations"], named["pages"])
    links = []
    for name, mine in rows.items():
        if mine:
            path = r.out / f"campaign_{c.id}_{name}.csv"
            path.write_text(csv_text(r.store, c, name, mine))
            links.append(f'<a href="{path.name}" download>{name}</a> ({len(mine):,} rows)')
    if links:
        r.p(f"Campaign {c.id}'s data as CSV (units in the column names; docs/api.md): " + ", ".join(links) + ".")


def _spread(r: Report, c: Campaign, rows: list[dict]) -> None:
    """RBER per block at each P/E level and page type (a box per level: the median, the middle half, the range),
    and the share of errors that were 1 read as 0."""
    fresh = [x for x in rows if x["bits"] and x["retention_h"] == 0]
    levels = sorted({x["pe"] for x in fresh})
    if len(levels) < 2:
        return
    fig, (ax, ax_dir) = r.subplots(1, 2, figsize=(11, 3.8))
    kinds = sorted({x["page_type"] for x in fresh})
    width = 0.8 / len(kinds)
    table = []
    for k, (kind, color) in enumerate(zip(kinds, ("tab:blue", "tab:red", "tab:green"))):
        per_level = [[x["rber"] for x in fresh if x["pe"] == pe and x["page_type"] == kind] for pe in levels]
        pos = np.arange(len(levels)) + (k - (len(kinds) - 1) / 2) * width
        bp = ax.boxplot(per_level, positions=pos, widths=width * 0.9, patch_artist=True, showfliers=True)
        for patch in bp["boxes"]:
            patch.set(facecolor=color, alpha=0.4)
        ax.plot([], [], "s", color=color, alpha=0.4, label=f"{kind} pages")
        e10 = np.array([sum(x["err_1to0"] for x in fresh if x["pe"] == pe and x["page_type"] == kind) for pe in levels])
        e01 = np.array([sum(x["err_0to1"] for x in fresh if x["pe"] == pe and x["page_type"] == kind) for pe in levels])
        total = e10 + e01
        share = np.where(total > 0, e10 / np.maximum(total, 1), np.nan)
        ax_dir.plot(levels, share, "o-", color=color, label=f"{kind} pages")
        for pe, vals, a, b in zip(levels, per_level, e10, e01):
            v = np.array(vals)
            table.append(f"<tr><td>{pe:,}</td><td>{kind}</td><td>{len(v)}</td><td>{np.median(v):.3g}</td>"
                         f"<td>{v.min():.3g}</td><td>{v.max():.3g}</td><td>{a:,}</td><td>{b:,}</td></tr>")
    ax.set_xticks(np.arange(len(levels)), [f"{pe:,}" for pe in levels], rotation=45, fontsize=8)
    ax.set(xlabel="P/E cycles", ylabel="RBER per block (errors per bit)", title="Block-to-block spread, fresh reads")
    ax.set_yscale("symlog", linthresh=1e-8)  # a block with no error stays on the plot, at 0
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    ax_dir.axhline(0.5, color="k", lw=0.6, ls=":")
    ax_dir.set(xlabel="P/E cycles", ylabel="share of errors: stored 1 read 0", ylim=(0, 1),
               title="Error direction")
    ax_dir.legend(fontsize=8)
    r.fig(fig, f"spread_{c.id}", f"Campaign {c.id}: RBER of each block at each wear level per page type (boxes: "
                                 "median and middle half, whiskers 1.5 IQR), and the share of errors that were 1→0")
    r.sections.append("<table><tr><th>P/E</th><th>page type</th><th>blocks</th><th>median RBER</th>"
                      "<th>lowest block</th><th>highest block</th><th>errors 1→0</th><th>errors 0→1</th></tr>"
                      + "".join(table) + "</table>")


def _latency(r: Report, c: Campaign, pm: PageMap, ops: list[dict], reads: list[dict]) -> None:
    """Each operation's busy time as a CDF per operation and page type, and its percentiles per wear level; the
    checkpoints' reads (``reads``) too, where their tR was seen (a cache read shows a block's first page's)."""
    groups: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    for x in ops:
        kind = "" if x["op"] == "erase" else pm.page_type(int(x["page"])).name.lower()
        groups[(x["op"], kind)].append((int(x["pe"]), int(x["busy_ns"])))
    for x in reads:  # a page whose tR a cache read hid has none
        if x["busy_ns"] is not None:
            groups[("read", pm.page_type(int(x["page"])).name.lower())].append((int(x["pe"]), int(x["busy_ns"])))
    groups = {k: v for k, v in groups.items() if any(ns > 0 for _, ns in v)}
    if not any(op != "read" for op, _ in groups):  # reads alone: the checkpoints' campaigns, not a timing one
        return
    shown = [op for op in ("program", "read", "erase") if any(o == op for o, _ in groups)]
    fig, axes = r.subplots(1, len(shown), figsize=(4.4 * len(shown), 3.8), squeeze=False)
    table = []
    for ax, op in zip(axes[0], shown):
        for (o, kind), pts in sorted(groups.items()):
            if o != op:
                continue
            us = np.sort(np.array([ns for _, ns in pts], float)) / 1000
            ax.step(us, np.arange(1, len(us) + 1) / len(us), where="post",
                    label=f"{kind} pages ({len(us):,})" if kind else f"blocks ({len(us):,})")
            for pe in sorted({p for p, _ in pts}):
                v = np.array([ns for p, ns in pts if p == pe], float) / 1000
                table.append(f"<tr><td>{op}</td><td>{kind or 'block'}</td><td>{pe:,}</td><td>{len(v):,}</td>"
                             + "".join(f"<td>{np.percentile(v, q):,.1f}</td>" for q in PERCENTILES)
                             + f"<td>{v.max():,.1f}</td></tr>")
        ax.set(xlabel=f"{op} busy time (µs)", ylabel="fraction of operations ≤ x", title=f"{op}: CDF over all wear")
        ax.legend(fontsize=8)
    r.fig(fig, f"latency_cdf_{c.id}", f"Campaign {c.id}: distribution of busy time (R/B#) per operation and page type")
    r.sections.append("<table><tr><th>operation</th><th>page type</th><th>P/E</th><th>operations</th>"
                      + "".join(f"<th>p{q} (µs)</th>" for q in PERCENTILES) + "<th>max (µs)</th></tr>"
                      + "".join(table) + "</table>")


__all__ = ["data_section"]
