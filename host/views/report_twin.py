"""``nandrig report --twin FILE``: a chip's digital twin against what each of the chip's campaigns measured, the
same campaign run on the twin (host/engine/twin_replay.py), with a verdict per campaign (characterization/twin.py
compares)."""
from __future__ import annotations

import html
from pathlib import Path

import numpy as np

from nandrig.characterization.twin import (ENERGY_AGREE, SHARE_AGREE, TIME_AGREE, Z_AGREE, LevelCheck, OpCheck,
                                           check_ops, check_rber, verdict)
from nandrig.host.engine.twin_replay import TwinRun
from nandrig.host.storage.store import Campaign, Store
from nandrig.host.views.export import export_rows
from nandrig.host.views.report_page import Report


def _same_database(a: str, b: str) -> bool:
    if "://" in a or "://" in b:
        return a == b
    return Path(a).resolve() == Path(b).resolve()


def _ops(store: Store, c: Campaign) -> list[tuple]:
    pm = store.page_map(c.chip_id)
    return [(op, "" if op == "erase" else pm.page_type(page).name.lower(), ns, pj)
            for op, _block, page, _pe, ns, pj, *_ in store.operations(c.id)]


def _level(lv: LevelCheck) -> str:
    h = lv.retention_h
    when = "fresh" if h == 0 else f"{h:,.0f} h" if h < 48 else f"{h / 24:,.0f} days"
    extra = (f", {lv.reads:,} reads" if lv.reads else "") + (f", offset {lv.offset:+d}" if lv.offset else "")
    return f"{lv.pe:,} P/E, {when}{extra}"


def twin_section(r: Report, tr: TwinRun, campaigns: list[Campaign]) -> None:
    """The twin against each of its chip's campaigns: the summary with a verdict each, a plot, the levels."""
    t = tr.twin
    fitted_here = _same_database(t.database, r.store.name)
    r.h2(f"Twin {t.name} against the measured campaigns")
    to = (f"campaigns {', '.join(map(str, t.fitted))} of this database" if fitted_here else
          f"campaigns of {t.database}")
    r.p(f"The twin ({html.escape(t.path)}) was fitted to {html.escape(to)}. Each campaign of the chip ran again on "
        f"the twin, the same kind, blocks and parameters in the chip's order, so its blocks carry the chip's history. "
        f"RBER per level (P/E, retention, read count, read offset; whole blocks pooled): z is the difference over "
        f"the root of both sides' variance (counting noise and the scatter of the blocks each pooled), and a "
        f"campaign's RBER agrees when {SHARE_AGREE:.0%} of its levels are within |z| ≤ {Z_AGREE:g}. Mean busy time "
        f"per operation and page type within {TIME_AGREE:.0%}, mean busy energy per operation within "
        f"{ENERGY_AGREE:.0%}. Where the twin keeps the generic profile's value (read disturb, the Vth placement: "
        f"`nandrig sim profile` lists them) a difference is expected, not a fault of the fit.")
    checked = []
    for c in campaigns:
        if c.id not in tr.pairs:
            continue
        twin_c = tr.store.campaign(tr.pairs[c.id])
        levels = check_rber(export_rows(r.store, c, by_block=True), export_rows(tr.store, twin_c, by_block=True))
        ops = check_ops(_ops(r.store, c), _ops(tr.store, twin_c))
        if levels or ops:
            checked.append((c, levels, ops))
    rows = []
    for c, levels, ops in checked:
        role = "fitted to" if fitted_here and c.id in t.fitted else "held out"
        n_ok = sum(abs(lv.z) <= Z_AGREE for lv in levels)
        t_ok = sum(abs(o.time_off) <= TIME_AGREE for o in ops)
        metered = [o for o in ops if o.energy_off is not None]
        e_ok = sum(abs(o.energy_off) <= ENERGY_AGREE for o in metered)
        rows.append(f"<tr><td>{c.id}</td><td>{c.kind}</td><td>{role}</td>"
                    f"<td>{f'{n_ok} of {len(levels)}' if levels else '–'}</td>"
                    f"<td>{f'{t_ok} of {len(ops)}' if ops else '–'}</td>"
                    f"<td>{f'{e_ok} of {len(metered)}' if metered else '–'}</td>"
                    f"<td>{html.escape(verdict(levels, ops))}</td></tr>")
    for cid, why in sorted(tr.skipped.items()):
        c = next(x for x in campaigns if x.id == cid)
        rows.append(f"<tr><td>{cid}</td><td>{c.kind}</td><td colspan=4>not compared</td>"
                    f"<td>{html.escape(why)}</td></tr>")
    r.sections.append("<table><tr><th>campaign</th><th>kind</th><th>for the twin</th>"
                      f"<th>RBER levels within |z| ≤ {Z_AGREE:g}</th><th>busy times within {TIME_AGREE:.0%}</th>"
                      f"<th>energies within {ENERGY_AGREE:.0%}</th><th>verdict</th></tr>" + "".join(rows) + "</table>")
    _plot(r, t.name, checked)
    for c, levels, ops in checked:
        if levels:
            r.sections.append(
                f"<table><caption>Campaign {c.id} ({c.kind}): RBER per level, chip and twin</caption>"
                "<tr><th>level</th><th>chip's RBER</th><th>twin's RBER</th><th>z</th></tr>"
                + "".join(f"<tr><td>{_level(lv)}</td><td>{lv.measured:.3e}</td><td>{lv.twin:.3e}</td>"
                          f"<td>{lv.z:+.2f}</td></tr>" for lv in levels) + "</table>")
        if ops:
            r.sections.append(
                f"<table><caption>Campaign {c.id} ({c.kind}): mean busy time and energy per operation</caption>"
                "<tr><th>operation</th><th>count</th><th>chip (µs)</th><th>twin (µs)</th><th>twin / chip − 1</th>"
                "<th>chip (nJ)</th><th>twin (nJ)</th><th>twin / chip − 1</th></tr>"
                + "".join(f"<tr><td>{o.op} {o.page_type}</td><td>{o.n:,}</td><td>{o.measured_us:,.2f}</td>"
                          f"<td>{o.twin_us:,.2f}</td><td>{o.time_off:+.2%}</td>" + _energy(o) + "</tr>"
                          for o in ops) + "</table>")


def _energy(o: OpCheck) -> str:
    if o.energy_off is None:
        return "<td colspan=3>not metered</td>"
    return f"<td>{o.measured_nj:,.1f}</td><td>{o.twin_nj:,.1f}</td><td>{o.energy_off:+.2%}</td>"


def _plot(r: Report, name: str, checked: list) -> None:
    with_levels = [(c, levels) for c, levels, _ in checked if levels]
    values = [v for _, ls in with_levels for lv in ls for v in (lv.twin, lv.measured) if v > 0]
    if not values:
        return
    fig, ax = r.subplots(figsize=(6, 5))
    for c, levels in with_levels:
        m = np.array([lv.measured for lv in levels])
        two_sd = np.array([2 * lv.sd for lv in levels])
        ax.errorbar([lv.twin for lv in levels], m, yerr=[np.minimum(two_sd, m * 0.999), two_sd], fmt="o", ms=4,
                    capsize=2, label=f"campaign {c.id} ({c.kind})")
    lo, hi = min(values), max(values)
    ax.plot([lo, hi], [lo, hi], "k-", lw=0.8, label="twin = chip")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("twin's RBER (the same campaign on the twin)")
    ax.set_ylabel("chip's RBER (bars: 2 standard deviations)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    r.fig(fig, f"twin_{Path(name).stem}", f"Twin {name}: each campaign's RBER per level on the chip against the same "
                                          "level on the twin")
