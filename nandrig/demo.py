"""``nandrig demo``: the main job end to end on the embedded default.

Until the virtual chip lands (issue 3) the measurements are drawn the way a
rig makes them (bit errors ~ Binomial(bits read, RBER) of the
``flares-taco2014`` model); the demo says so in its output.
"""
from __future__ import annotations

import html
import json
import time
from pathlib import Path

import click
import numpy as np

from nandrig.characterization.fitting import fit, synthetic
from nandrig.characterization.measurements import Measurements, write_csv
from nandrig.characterization.plots import plot_rber_vs_pe, plot_required_t
from nandrig.characterization.rber import load_params
from nandrig.characterization.tables import CorrTable, RetentionGrid, c_header, tables_json

CHECKPOINTS = [0, 1, 10, 100, 300, 1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10000]
RETENTION_H = [0.0, 24.0, 168.0, 720.0, 2160.0, 8760.0]
BITS = 16 * 128 * 4096 * 8  # a 16-block checkpoint


def run_demo(out: Path, seed: int = 1) -> dict:
    t0 = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    truth = load_params("flares-taco2014")
    pe, h = np.meshgrid(CHECKPOINTS, RETENTION_H)
    data = Measurements(*synthetic(truth, pe.ravel(), h.ravel(), BITS, seed=seed))
    write_csv(out / "measurements.csv", data)

    res = fit(data.pe, data.retention_h, data.rber, data.bits)
    (out / "fit.json").write_text(json.dumps(res.to_json(), indent=2, allow_nan=False) + "\n")
    params = res.rber_params("demo-fit")
    params.to_json(out / "params.json")

    table = CorrTable.build(1e-11, 4096 * 8)
    grid = RetentionGrid.build(params, table, 10_000, 250)
    (out / "flares_tables.h").write_text(c_header(params, table, grid))
    (out / "tables.json").write_text(json.dumps(tables_json(params, table, grid), allow_nan=False) + "\n")
    plot_rber_vs_pe(params, out / "rber_vs_pe.png", data)
    plot_required_t(params, table, out / "required_t.png")

    wall = time.perf_counter() - t0
    report = out / "index.html"
    report.write_text(_html(res, wall))
    click.echo("measurements: synthetic (binomial sampling of flares-taco2014, as a rig counts errors)")
    click.echo(f"fit: R^2(log) {res.r2_log:.4f}, max |rel err| {res.max_rel_err:.3f}, "
               f"required t fresh {int(table.t_for(params.rber(0)))}, "
               f"10k P/E + 1 year {int(table.t_for(params.rber(10_000, 8760)))}")
    click.echo(f"report: {report.resolve()}")
    click.echo(f"wall time: {wall:.1f} s")
    return {"report": str(report), "wall_s": wall}


def _html(res, wall: float) -> str:
    rows = "".join(
        f"<tr><td>{k}</td><td>{v:.5g}</td><td>[{res.ci95[k][0]:.4g}, {res.ci95[k][1]:.4g}]</td>"
        f"<td>{'poorly determined' if k in res.poorly_determined else ''}</td></tr>"
        for k, v in res.params.items() if v is not None
    )
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>nandrig demo</title>
<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto}}td,th{{padding:.2em .8em}}</style></head><body>
<h1>nandrig demo</h1>
<p>Measurements: synthetic, binomially sampled from the flares-taco2014 model. Wall time {wall:.1f} s.</p>
<h2>Fitted RBER model (FLARES eq. 5)</h2>
<p>R&sup2; (log space) {res.r2_log:.4f}; max |relative error| {res.max_rel_err:.3f}; {res.n_points} points.</p>
<table><tr><th>parameter</th><th>value</th><th>95% CI</th><th></th></tr>{rows}</table>
<h2>RBER vs P/E</h2><img src="rber_vs_pe.png" alt="RBER vs P/E">
<h2>Required t vs P/E</h2><img src="required_t.png" alt="required t vs P/E">
<p>Files: {html.escape(", ".join(["measurements.csv", "fit.json", "params.json", "tables.json", "flares_tables.h"]))}</p>
</body></html>
"""
