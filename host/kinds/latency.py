"""Latency: per-page program, read and erase busy times at several wear levels, and on a rig with a current-sense
front end the energy of each (nJ/bit per operation and page type, beside Grupp et al.'s Table 3)."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import click
import numpy as np

from nandrig.characterization.energy import (GRUPP_MLC_IDLE_MW, GRUPP_MLC_NJ_PER_BIT, GRUPP_MLC_TRANSFER_MW,
                                              per_bit, within)
from nandrig.chip.geometry import Geometry, PageMap, PageType
from nandrig.host.kinds import steps
from nandrig.host.kinds.base import CampaignKind, KindParams, parse_int_list


@dataclass(frozen=True)
class LatencyParams(KindParams):
    checkpoints: tuple[int, ...]


def plan(p: LatencyParams, g: Geometry) -> list[steps.Step]:
    out: list[steps.Step] = []
    have = 0
    for cp in steps.checkpoints_ahead(p.checkpoints, p.worn):
        out += steps.cycle_to(list(p.blocks), have, cp - 1, p.seed, worn=p.worn, leaves_pattern=False)
        for b in p.blocks:
            out.append(steps.Erase(b, pe=cp, energy=True))
            out += [steps.Program(b, page, p.seed, pe=cp, energy=True) for page in range(g.pages_per_block)]
            out += [steps.Read(b, page, p.seed, energy=True) for page in range(g.pages_per_block)]
        have = cp
        out += steps.measure(list(p.blocks), p.seed, g, steps.Checkpoint(label=f"pe={cp}", pe=cp), timed=True)
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
    energy_report(r, c, p, pm)
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
    reads = [(x.page, x.pe, x.busy_ns) for x in r.store.rows(c.id) if x.busy_ns is not None]
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


def results(store, c, p: LatencyParams, pm: PageMap) -> dict:
    """Per wear level: median busy time per operation and page type, and where the rig metered them the energy
    per data bit (busy and transfer apart) beside Grupp's MLC range."""
    chip = store.chip(c.chip_id)
    page_bits = chip["page_bytes"] * 8
    block_bits = page_bits * chip["pages_per_block"]
    times, energy = defaultdict(list), defaultdict(list)
    for t in store.op_times(c.id):
        times[(t.pe, _key(t.op, t.page, pm))].append(t.busy_ns)
    idle = []
    for t, (bpj, bns, tpj, tns, idle_uw) in store.op_energy(c.id):
        energy[(t.pe, _key(t.op, t.page, pm))].append(per_bit(bpj, bns, tpj, tns, block_bits if t.op == "erase"
                                                                else page_bits))
        idle.append(idle_uw / 1e3)
    out = []
    for pe in sorted({pe for pe, _ in times}):
        ops = {}
        for key in sorted({k for q, k in times if q == pe}):
            row = {"busy_us": float(np.median(times[(pe, key)])) / 1e3, "count": len(times[(pe, key)])}
            e = energy.get((pe, key))
            if e:
                band = GRUPP_MLC_NJ_PER_BIT["read" if key.startswith("read") else key]
                nj = float(np.median([x.busy_nj_per_bit for x in e]))
                row.update(nj_per_bit=nj, transfer_nj_per_bit=float(np.median([x.transfer_nj_per_bit for x in e])),
                           busy_mw=float(np.median([x.busy_mw for x in e])),
                           transfer_mw=float(np.median([x.transfer_mw for x in e])),
                           grupp_mlc=list(band), within_2x=within(nj, band))
            ops[key] = row
        out.append({"pe": pe, "ops": ops})
    res = {"checkpoints": out, "metered": bool(energy)}
    if idle:
        res["idle_mw"] = float(np.median(idle))
        res["idle_grupp_mlc_mw"] = list(GRUPP_MLC_IDLE_MW)
        res["transfer_mw"] = {op: float(np.median([x.transfer_mw for (_, k), xs in energy.items() if k.startswith(op)
                                                   for x in xs])) for op in GRUPP_MLC_TRANSFER_MW}
        res["transfer_grupp_mlc_mw"] = {op: list(band) for op, band in GRUPP_MLC_TRANSFER_MW.items()}
    return res


def _key(op: str, page: int, pm: PageMap) -> str:
    """erase, or the operation and the page's type: program_lower, read_upper, ..."""
    return op if op == "erase" else f"{op}_{pm.page_type(page).name.lower()}"


def summary_lines(res: dict) -> list[str]:
    out = [f"  {'P/E':>6} {'operation':<14} {'busy us':>8} {'nJ/bit':>7} {'transfer':>8} {'Grupp MLC':>13}"]
    for cp in res["checkpoints"]:
        for key, r in cp["ops"].items():
            nj = f"{r['nj_per_bit']:7.3f}" if "nj_per_bit" in r else f"{'-':>7}"
            tr = f"{r['transfer_nj_per_bit']:8.3f}" if "nj_per_bit" in r else f"{'-':>8}"
            band = f"{r['grupp_mlc'][0]:.3g}-{r['grupp_mlc'][1]:.3g}" if "grupp_mlc" in r else "-"
            out.append(f"  {cp['pe']:>6} {key:<14} {r['busy_us']:8.1f} {nj} {tr} {band:>13}")
    if "idle_mw" in res:
        out.append(f"  idle power {res['idle_mw']:.1f} mW (Grupp's MLC parts: {res['idle_grupp_mlc_mw'][0]}-"
                   f"{res['idle_grupp_mlc_mw'][1]} mW)")
    elif res["checkpoints"]:
        out.append("  energy: not metered (the rig has no current-sense front end)")
    return out


def energy_report(r, c, p: LatencyParams, pm: PageMap) -> None:
    """nJ/bit per operation and page type at each wear level, beside Grupp's MLC range (log scale)."""
    res = results(r.store, c, p, pm)
    if not res["metered"]:
        return
    keys = list(GRUPP_MLC_NJ_PER_BIT)
    names = {"read": ("read_lower", "read_upper"), "program_lower": ("program_lower",),
             "program_upper": ("program_upper",), "erase": ("erase",)}
    fig, ax = r.subplots(figsize=(8, 4))
    xs = np.arange(len(keys))
    for i, k in enumerate(keys):
        lo, hi = GRUPP_MLC_NJ_PER_BIT[k]
        ax.fill_between([i - 0.4, i + 0.4], lo, hi, color="0.85", label="Grupp et al. Table 3, MLC" if i == 0 else None)
    for j, cp in enumerate(res["checkpoints"]):
        for i, k in enumerate(keys):
            for m, key in enumerate(names[k]):
                if "nj_per_bit" in cp["ops"].get(key, {}):
                    ax.plot(i - 0.25 + 0.5 * j / max(len(res["checkpoints"]), 1), cp["ops"][key]["nj_per_bit"],
                            "os"[m], color=f"C{j}", label=f"P/E {cp['pe']}" if i == 0 and m == 0 else None)
    ax.set_xticks(xs, ["read (o lower, s upper)", "program, lower pages", "program, upper pages", "erase"], fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("energy per data bit (nJ), transfers excluded")
    ax.set_title(f"Energy per operation, campaign {c.id}")
    ax.legend(fontsize=7)
    r.fig(fig, f"energy_{c.id}", "Energy per bit of each operation and page type at each wear level, against the "
                                 "range Grupp et al. measured on MLC parts (grey)")
    r.p(f"Idle power {res['idle_mw']:.1f} mW; power while transferring: " + ", ".join(
        f"{op} {mw:.1f} mW (Grupp's MLC parts {lo}-{hi})" for op, mw in res["transfer_mw"].items()
        for lo, hi in [res["transfer_grupp_mlc_mw"][op]]))


KIND = CampaignKind(
    name="latency", help="Per-page program, read and erase busy times at several wear levels.",
    params=LatencyParams, plan=plan, report=report, from_cli=from_cli, results=results, summary=summary_lines,
    options=(click.option("--checkpoints", default="1,1000,3000,10000", show_default=True, help="P/E counts to time at."),))
