"""Workload results as report pages: the policies against the flash's life (`nandrig workload lifetime
--report`), drawn as EF3S draws its evaluation (throughput, energy per operation and ECC against P/E, the wear
map across blocks), and a workload campaign's section in `nandrig report`."""
from __future__ import annotations

import html
from pathlib import Path

import numpy as np

from nandrig.host.views.report_page import Report, page_html

GB = 1e9


def _windows(run: dict) -> dict[str, np.ndarray]:
    """A policy's whole windows after the warm-up, as arrays (x: the mean P/E of the blocks in use at each's end);
    a last window the flash's end cut short is left out (a few writes on a dying flash say nothing of a window)."""
    st = run["stages"][1:]
    full = np.median([s["host_writes"] for s in st]) if st else 0
    st = [s for s in st if s["host_writes"] >= full / 2 or s["damaged_reads"]]
    col = lambda k: np.array([s[k] if s[k] is not None else np.nan for s in st], float)  # noqa: E731
    host_bytes, service = col("host_bytes"), col("service_ns")
    return {"pe": col("mean_pe"), "mb_s": np.divide(host_bytes * 1e3, service, out=np.full(len(st), np.nan),
                                                     where=service > 0),
            "j_gb": col("energy_pj") * 1e-12 / np.where(host_bytes > 0, host_bytes / GB, np.nan),
            "t": col("mean_t"), "rber": col("rber"), "wa": col("write_amplification"), "pslc": col("pslc_blocks"),
            "lost": col("damaged_reads")}


def lifetime_page(res: dict, lines: list[str], out: str | Path) -> Path:
    """``workload lifetime``'s result as a page in ``out``: its summary, then the plots against wear."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    r = Report(None, out)
    w = res["workload"]
    r.sections.append("<h1>Policies over the flash's life</h1>")
    r.sections.append("<pre>" + html.escape("\n".join(lines)) + "</pre>")
    runs = res["policies"]
    data = {name: _windows(run) for name, run in runs.items()}
    what = (f"{res['chip']} seed {res['seed']}, {w['access']} workload, {w['reads']:.0%} reads; each point a replayed "
            f"window, at the mean P/E of the blocks in use at its end")
    panels = [("mb_s", "device throughput (MB/s)", "like EF3S Fig. 3: throughput over the memory's life"),
              ("j_gb", "chip energy per GB moved (J)", "like EF3S Fig. 4: energy per operation over the life"),
              ("t", "mean t of the window's programs", "the ECC strength each policy programs with"),
              ("rber", "raw bit errors per bit read", "what the chip's pages read with, before ECC"),
              ("wa", "write amplification", "flash programs per host page write"),
              ("pslc", "blocks in pseudo-SLC", "density control: blocks that left MLC")]
    fig, axes = r.subplots(3, 2, figsize=(11, 10), sharex=True)
    styles = ["--", "-", "-.", ":"]  # policies often coincide (FLARES at its cap is fixed t): each its own dash
    for ax, (key, label, _) in zip(axes.ravel(), panels):
        for k, (name, d) in enumerate(data.items()):
            ax.plot(d["pe"], d[key], styles[k % len(styles)], marker=".", lw=1.2, ms=3, label=name)
            lost = d["lost"] > 0
            if np.any(lost):  # where a window lost a read: the end of that policy's life
                ax.plot(d["pe"][lost], d[key][lost], "x", color="red", ms=7)
        ax.set_ylabel(label)
        ax.set_yscale("log" if key == "rber" else "linear")
        ax.grid(alpha=0.3)
    for ax in axes[-1]:
        ax.set_xlabel("mean P/E of the blocks in use")
    axes[0, 0].legend(fontsize=8)
    fig.suptitle(what, fontsize=9)
    r.fig(fig, "lifetime_against_wear", "; ".join(f"{label}: {why}" for _, label, why in panels)
          + "; a red cross: a window that reported a read lost; a last window cut short by the end is not drawn")
    fig, axes = r.subplots(len(runs), 1, figsize=(11, 1.6 + 1.4 * len(runs)), sharex=True, squeeze=False)
    for ax, (name, run) in zip(axes[:, 0], runs.items()):
        pe = np.array(run["pe_map"], float)
        state = np.array(run["block_states"])
        colours = np.where(state >= 3, "tab:red", np.where(np.array(run["block_modes"]) == 1, "tab:orange",
                                                              "tab:blue"))
        ax.bar(np.arange(len(pe)), pe, color=colours, width=1.0)
        ax.set_ylabel(f"{name}\nP/E")
    axes[-1, 0].set_xlabel("block")
    r.fig(fig, "pe_map", "like EF3S Fig. 5: each block's P/E at the end of the life, per policy (blue MLC, orange "
                         "pseudo-SLC, red retired or factory bad)")
    page = out / "index.html"
    page.write_text(page_html(r.sections, f"nandrig workload lifetime ({res['chip']} seed {res['seed']})"))
    return page


def workload_section(r: Report, campaign_id: int, res: dict) -> None:
    """A workload campaign's figures and its blocks' wear."""
    from nandrig.host.engine.workload_run import text_lines

    r.sections.append("<pre>" + html.escape("\n".join(text_lines(res))) + "</pre>")
    fig, ax = r.subplots(figsize=(9, 2.6))
    pe = np.array(res["pe_map"], float)
    ax.bar(np.arange(len(pe)), pe, width=1.0,
           color=np.where(np.array(res["block_modes"]) == 1, "tab:orange", "tab:blue"))
    ax.set_xticks(np.arange(len(pe)), [str(b) for b in res["blocks"]], fontsize=6, rotation=90)
    ax.set_xlabel("block")
    ax.set_ylabel("P/E at the end")
    r.fig(fig, f"workload_{campaign_id}_pe_map", f"campaign {campaign_id}: each block's P/E after the replay "
                                                 "(orange: pseudo-SLC)")
