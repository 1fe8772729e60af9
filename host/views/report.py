"""``nandrig report``: one HTML page with PNG plots for everything a database holds.

Upper/lower page roles come from each chip's page map, stored with the chip's
record (nandrig.chip.geometry.PageMap).
"""
from __future__ import annotations

import html
import json
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from nandrig.characterization.fitting import FitResult, fit_page_types, fit_summary, fit_table  # noqa: E402
from nandrig.characterization.plots import plot_rber_vs_pe, plot_required_t  # noqa: E402
from nandrig.characterization.tables import CorrTable  # noqa: E402
from nandrig.errors import NandrigError  # noqa: E402
from nandrig.host.kinds import KINDS, kind  # noqa: E402
from nandrig.host.engine.campaigns import summaries  # noqa: E402
from nandrig.host.views.export import export_rows, measurements  # noqa: E402
from nandrig.host.engine.flares_validate import verdict  # noqa: E402
from nandrig.host.views.report_data import data_section  # noqa: E402
from nandrig.host.views.report_page import Report, page_html  # noqa: E402
from nandrig.host.engine.twin_replay import TwinProfile, TwinRun, read_twin, replay  # noqa: E402
from nandrig.host.views.report_twin import twin_section  # noqa: E402
from nandrig.host.views.report_workload import workload_section  # noqa: E402
from nandrig.host.engine.workload_run import KIND as WORKLOAD  # noqa: E402
from nandrig.host.storage.store import Campaign, Store  # noqa: E402

UBER = 1e-11


def model_section(r: Report, chip_id: int, campaigns: list[Campaign]) -> FitResult | None:
    """The RBER model fitted to the chip's endurance and retention campaigns, with its plots."""
    data = measurements([row for c in campaigns if (k := KINDS.get(c.kind)) and k.feeds_fit
                         for row in export_rows(r.store, c, by_block=True)])
    if np.count_nonzero(data.rber > 0) < 7 or len(set(data.pe[data.rber > 0].tolist())) < 3:
        r.p("Not enough endurance/retention checkpoints with errors to fit the RBER model.")
        return None
    try:
        fits = fit_page_types(data)
    except NandrigError as e:
        r.p(f"RBER fit not possible: {html.escape(str(e))}")
        return None
    res = fits["all"]
    r.h2("RBER model (FLARES eq. 5 or its log-time form, chosen by AIC)")
    chip = r.store.chip(chip_id)
    table = CorrTable.build(UBER, chip["page_bytes"] * 8)
    if not res.undetermined:
        params = res.rber_params(f"chip {chip['label']}")
        src = plot_rber_vs_pe(params, r.out / f"rber_vs_pe_{chip_id}.png", data, band=res.rber_band,
                              title=f"RBER vs P/E, {chip['label']} (dots: measured; lines: fit)")
        r.img(src, "RBER vs P/E cycles per retention time, with the fitted model (all pages) and its 95 % "
                       "confidence band")
        for page_type in ("lower", "upper"):  # each page type against its own fit: upper pages err more
            fit = fits.get(page_type)
            if fit is None or fit.undetermined:
                continue
            src = plot_rber_vs_pe(fit.rber_params(f"{page_type} pages"),
                                  r.out / f"rber_vs_pe_{page_type}_{chip_id}.png",
                                  data.select(data.page_type == page_type), band=fit.rber_band,
                                  title=f"RBER vs P/E, {page_type} pages of {chip['label']} (dots: measured; lines: fit)")
            r.img(src, f"RBER vs P/E cycles of the {page_type} pages per retention time: their own fit, its 95 % "
                       "confidence band, and the measured points with their Poisson intervals")
        src = plot_required_t(params, table, r.out / f"required_t_{chip_id}.png")
        r.img(src, f"Required BCH t vs P/E for UBER {UBER:g} and a {chip['page_bytes']}-byte codeword")
    for name, fit in fits.items():
        r.p(f"<b>{'all pages' if name == 'all' else name + ' pages'}</b>: {html.escape(fit_summary(fit))}")
        r.sections.append("<pre>" + html.escape("\n".join(fit_table(fit))) + "</pre>")
        if not fit.undetermined:
            t = int(table.t_for(fit.rber_params().rber(10_000, 8760)))
            r.p(f"Required t at 10,000 P/E + 1 year: {t if t > 0 else f'more than {table.t_max}'}.")
    return res


def flares_section(r: Report, runs: list) -> None:
    for run_id, chip, block, page, res, _campaign in runs:
        r.sections.append(f"<h1>FLARES validation {run_id} ({html.escape(chip)})</h1>")
        v = verdict(res)
        r.p(f"<b>Verdict: {'met' if v['met'] else 'missed'}.</b> " + html.escape(v["words"]))
        model = res.get("model", {})
        about = [model] if "model" in model else [dict(m, kind=k) for k, m in model.items()]
        r.p("FLARES' model: " + "; ".join(html.escape(m["model"]) + (f" (R&sup2; log {m['r2_log']:.4f})"
                                                                     if "r2_log" in m else "") for m in about)
            + (f"; in the rig as tables sent at run time (CRC {res['rig_tables']['crc']})" if res.get("rig_tables") else "")
            + f". UBER {res['uber']:g}, {res['codeword_bytes']}-byte codeword. Decode latency: "
            + html.escape(res["decode_latency_source"]) + ".")
        for scenario, w in res.get("wear", {}).items():
            r.p(f"{scenario}: blocks {', '.join(map(str, w['blocks']))}; P/E planned {w['planned_pe'][:5]}"
                f"{' ...' if len(w['planned_pe']) > 5 else ''}, actual {w['actual_pe'][:5]}"
                f"{' ...' if len(w['actual_pe']) > 5 else ''}")
        if res.get("scale", 1.0) < 1.0:
            r.p(f"<b>Warning</b>: run at --scale {res['scale']:g}: {res['scale']:.0%} of the paper's operations, "
                "too few for FLARES' windows to settle; the plots and counts below show the machinery, not its "
                "verdict.")
        for scenario, tr in res["traces"].items():
            # older runs kept one page's targets as a list
            targets = tr["target_t"] if isinstance(tr["target_t"], dict) else {str(page): tr["target_t"]}
            for pg, target in targets.items():
                sel = [x for x in res["runs"] if x["scenario"] == scenario and "chosen_t" in x
                       and str(x.get("page", page)) == pg]
                if not sel:
                    continue
                kind = sel[0].get("page_type", "")
                rows, cols = -(-len(sel) // 3), min(3, len(sel))
                fig, axes = plt.subplots(rows, cols, figsize=(max(6.5, 4.4 * cols), 3.2 * rows), sharex=True,
                                         sharey=True, squeeze=False)
                pe = np.asarray(tr.get("pe", []), float)
                # continuous wear: against the P/E the page had; operating points: in operation order
                along = pe if scenario == "continuous-wear" and len(pe) == len(target) else np.arange(len(target))
                for ax, x in zip(axes.ravel(), sel):
                    ax.plot(along, np.array(x["chosen_t"], dtype=float), lw=0.8, label="t chosen by FLARES")  # gaps: pSLC
                    ax.plot(along, target, ":", color="k", lw=1, label="target t")
                    ax.set_title(f"WSIZE {x['wsize']}, MIX {x['mix']:g}"
                                 + (f", alarm {x['on_alarm']}" if "on_alarm" in x else ""), fontsize=9)
                    ax.set_xlabel("P/E cycles of the page's block" if along is pe else
                                  "operation (operating points in order of wear)")
                    ax.set_ylabel("correction capability t (bits)")
                axes.ravel()[0].legend(fontsize=7)
                fig.suptitle(f"{scenario}, {kind} page {pg}: t per operation (like the paper's Fig. 5)")
                r.fig(fig, f"flares_{run_id}_{scenario}" + (f"_{kind}" if kind else ""),
                      f"FLARES {scenario}, {kind} page {pg}: chosen t (solid) and target t (dotted)")
        rows = "".join(
            f"<tr><td>{x['scenario']}</td><td>{x.get('page_type', '')} {x.get('page', page)}</td>"
            f"<td>{x.get('on_alarm', 'stops')}</td><td>{x['wsize']}</td>"
            f"<td>{x['mix']:g}</td><td>{x['ops']}</td><td>{x['under_target_ops']}</td>"
            f"<td>{x.get('uncoverable_ops', '')}</td><td>{_num(x.get('below_target_uber_max'))}</td>"
            f"<td>{x['decode_failures'] + (x.get('uncoverable_failures') or 0)}</td>"
            f"<td>{_num(x.get('past_retention_ops'), 'd')}</td>"
            f"<td>{_num(x['mean_overprovision'], '.1f')}</td>"
            f"<td>{_oracle(x)}</td><td>{_num(x.get('under_oracle_ops'), 'd')}</td><td>{x['rewrite_alarms']}</td>"
            + "".join(f"<td>{v:+.0%}</td>" for v in x["read_gain_vs_fixed50"].values()) + "</tr>"
            for x in res["runs"])
        r.sections.append("<table><tr><th>scenario</th><th>page</th><th>FLARES on an alarm</th><th>WSIZE</th>"
                          "<th>MIX</th><th>ops</th>"
                          "<th>t below target</th><th>uncoverable (target beyond reach)</th>"
                          "<th>worst UBER below target</th><th>decode failures (beyond reach included)</th>"
                          "<th>operations on data kept past the retention its t was written for (refresh due)</th>"
                          "<th>mean t − target</th><th>mean t / oracle's t (virtual chip)</th>"
                          "<th>below the oracle's t</th><th>rewrite alarms</th><th>gain videoserver</th>"
                          "<th>gain webserver</th><th>gain varmail</th></tr>" + rows + "</table>")
        r.h2("The paper's findings beside ours")
        r.sections.append("<table><tr><th>topic</th><th>FLARES paper (TACO 2014)</th></tr>" + "".join(
            f"<tr><td>{html.escape(k)}</td><td>{html.escape(v)}</td></tr>" for k, v in res["paper"].items()) + "</table>")


def _oracle(x: dict) -> str:
    """The policy's mean t against the oracle's over the same operations (runs before the oracle: empty)."""
    if x.get("mean_oracle_t") is None:
        return ""
    return f"{x['mean_t_where_oracle']:.1f} / {x['mean_oracle_t']:.1f}"


def _num(v, fmt: str = ".2g") -> str:
    return "" if v is None else format(v, fmt)


def write_report(db: str | Path, out: str | Path, campaign_ids: list[int] | None = None,
                 twin_paths: Sequence[str] = (), twin_db: str | None = None,
                 echo: Callable[[str], None] = lambda s: None) -> Path:
    """The report of every campaign in ``db``, or of ``campaign_ids`` alone (and the validations among them);
    each twin in ``twin_paths`` set against its chip's campaigns, which it runs again in a scratch database (or,
    for one twin, in the new database ``twin_db``, kept)."""
    if twin_db is not None and (len(twin_paths) != 1 or Path(twin_db).exists()):
        raise NandrigError(f"--twin-db {twin_db}: one --twin's runs go into a new database" if len(twin_paths) == 1
                           else "--twin-db keeps the runs of one --twin: give exactly one")
    store = Store(db, read_only=True)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    scratch = tempfile.TemporaryDirectory(prefix="nandrig-twin-")
    twin_runs: list[TwinRun] = []
    try:
        r = Report(store, out)
        campaigns = store.campaigns()
        flares_runs = store.flares_runs()
        if campaign_ids:
            for cid in campaign_ids:
                store.campaign(cid)  # an unknown id is refused by name
            campaigns = [c for c in campaigns if c.id in campaign_ids]
            flares_runs = [f for f in flares_runs if f[5] in campaign_ids]
        if not campaigns and not flares_runs:
            raise NandrigError(f"{db} holds no campaigns to report")
        dbs = [Path(twin_db)] if twin_db else [Path(scratch.name) / f"twin{k}.db" for k in range(len(twin_paths))]
        _run_twins(store, campaigns, [read_twin(p) for p in twin_paths], dbs, twin_runs, echo)
        # states as `nandrig ls` says them: "running" only while a process holds the campaign
        listing = summaries(store)
        states, listed = {x["id"]: x["state"] for x in listing}, {x["id"]: x["blocks"] for x in listing}
        for chip_id in sorted({c.chip_id for c in campaigns}):
            chip = store.chip(chip_id)
            mine = [c for c in campaigns if c.chip_id == chip_id]
            ppb, pm = chip["pages_per_block"], store.page_map(chip_id)
            r.sections.append(f"<h1>Chip {html.escape(chip['label'])}</h1>")
            r.p(f"{html.escape(chip['manufacturer'])} {html.escape(chip['model'])}, read ID {chip['read_id']}; "
                f"{chip['page_bytes']}+{chip['spare_bytes']}-byte pages, {ppb} pages per block, "
                f"{chip['blocks']} blocks (identity from its ONFI parameter page).")
            model_section(r, chip_id, mine)
            for tr in twin_runs:
                if tr.twin.chip == chip["label"]:
                    twin_section(r, tr, mine)
            for c in mine:
                if c.kind == WORKLOAD and (res := store.result_of(c.id)) is not None:
                    r.h2(f"Campaign {c.id}: {c.kind}")
                    workload_section(r, c.id, res)
                    continue
                if not store.rows(c.id) and not store.op_times(c.id):
                    continue
                r.h2(f"Campaign {c.id}: {c.kind}")
                k = kind(c.kind)
                k.report(r, c, k.params.from_mapping(c.params), pm)
                data_section(r, c, pm)
            r.h2("Campaigns and provenance")
            rows = []
            for c in mine:
                params = {k: v for k, v in c.params.items() if k != "blocks"}
                events = store.events(c.id)
                rows.append(
                    f"<tr><td>{c.id}</td><td>{c.kind}</td><td>{states[c.id]}</td><td>{listed[c.id]}</td>"
                    f"<td><code>{html.escape(json.dumps(params))}</code></td>"
                    f"<td>{html.escape(c.rig_identity)}<br><code>{html.escape(json.dumps(c.versions))}</code></td>"
                    f"<td>{len(events)} events{_failures(events)}</td></tr>")
            r.sections.append("<table><tr><th>id</th><th>kind</th><th>state</th><th>blocks</th><th>parameters</th>"
                              "<th>rig and versions</th><th>log</th></tr>" + "".join(rows) + "</table>")
        if flares_runs:
            flares_section(r, flares_runs)
        page = out / "index.html"
        page.write_text(page_html(r.sections, f"<code>{html.escape(str(db))}</code>"))
        return page
    finally:
        for tr in twin_runs:
            tr.store.close()
        scratch.cleanup()
        store.close()


def _run_twins(store: Store, campaigns: list[Campaign], twins: list[TwinProfile], dbs: list[Path],
               runs: list[TwinRun], echo: Callable[[str], None]) -> None:
    """Each twin's run of its chip's campaigns into ``runs``: every one up to the last reported, so its blocks'
    history is the chip's."""
    chips = {store.chip(i)["label"]: i for i in {c.chip_id for c in campaigns}}
    for t in twins:  # all refused before any runs
        if t.chip not in chips:
            raise NandrigError(f"twin {t.name} is of chip {t.chip}, which the reported campaigns are not of "
                               f"(theirs: {', '.join(sorted(chips)) or 'none'})")
    for t, db in zip(twins, dbs):
        last = max(c.id for c in campaigns if c.chip_id == chips[t.chip])
        history = [c for c in store.campaigns() if c.chip_id == chips[t.chip] and c.id <= last]
        runs.append(replay(t, history, db, echo))


def _failures(events) -> str:
    bad = [d for _, k, d in events if k in ("block_failed", "program_fail")]
    return ("; " + html.escape("; ".join(bad[:5]))) if bad else ""


__all__ = ["write_report"]
