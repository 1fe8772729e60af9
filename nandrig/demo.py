"""``nandrig demo``: the main job end to end on the embedded default, a virtual mlc-3x chip.

Endurance on 16 blocks to 10,000 P/E with measurement checkpoints, retention
series at four wear levels (1 day to 1 year), then the RBER fit, the FLARES
tables and their C header, and a report. Until the rig protocol and the
campaign store land, the demo drives the chip's statistical path directly
(exactly what a rig's MEASURE returns: per-page bit-error counts).
"""
from __future__ import annotations

import html
import json
import time
from pathlib import Path

import click
import numpy as np

from nandrig.boards.sim.bench import program_block, usable_blocks
from nandrig.boards.sim.chip import VirtualChip
from nandrig.characterization.fitting import fit
from nandrig.characterization.measurements import Measurements, write_csv
from nandrig.characterization.plots import plot_rber_vs_pe, plot_required_t
from nandrig.characterization.tables import CorrTable, RetentionGrid, c_header, tables_json

CHECKPOINTS = [1, 10, 100, 300, 1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10000]
RETENTION_WEAR = [1000, 3000, 6000, 10000]
RETENTION_H = [24.0, 168.0, 720.0, 2160.0, 8760.0]
BLOCKS = 16


def _rber(chip: VirtualChip, blocks: list[int]) -> tuple[float, int]:
    errors = sum(int(chip.measure(b).errors.sum()) for b in blocks)
    bits = len(blocks) * chip.geometry.pages_per_block * chip.cells
    return errors / bits, bits


def measure_chip(chip: VirtualChip, seed: int = 1) -> Measurements:
    rows: list[tuple[float, float, float, int]] = []
    endurance = usable_blocks(chip, BLOCKS)
    for cp in CHECKPOINTS:
        for b in endurance:
            chip.cycle(b, cp - 1 - chip.pe_count(b), seed=seed, program=False)
            program_block(chip, b, campaign_seed=seed + cp)
        rows.append((cp, 0.0, *_rber(chip, endurance)))
    start = endurance[-1] + 1
    groups = {}
    for pe in RETENTION_WEAR:
        groups[pe] = usable_blocks(chip, BLOCKS // 2, start)
        start = groups[pe][-1] + 1
        for b in groups[pe]:
            chip.cycle(b, pe - 1, seed=seed, program=False)
            program_block(chip, b, campaign_seed=seed + pe)
    t0 = chip.equiv_h
    for hours in RETENTION_H:
        chip.wait(t0 + hours - chip.equiv_h)
        for pe, blocks in groups.items():
            rows.append((pe, hours, *_rber(chip, blocks)))
    a = np.array(rows, dtype=float)
    return Measurements(a[:, 0], a[:, 1], a[:, 2], a[:, 3])


def run_demo(out: Path, seed: int = 1) -> dict:
    t0 = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    chip = VirtualChip("mlc-3x", seed)
    data = measure_chip(chip, seed)
    keep = data.rber > 0  # a checkpoint without a single error carries no RBER
    data = Measurements(data.pe[keep], data.retention_h[keep], data.rber[keep], data.bits[keep])
    write_csv(out / "measurements.csv", data)

    res = fit(data.pe, data.retention_h, data.rber, data.bits)
    (out / "fit.json").write_text(json.dumps(res.to_json(), indent=2, allow_nan=False) + "\n")
    params = res.rber_params("demo-fit")
    params.to_json(out / "params.json")

    table = CorrTable.build(1e-11, 4096 * 8)
    grid = RetentionGrid.build(params, table, 10_000, 250)
    (out / "flares_tables.h").write_text(c_header(params, table, grid))
    (out / "tables.json").write_text(json.dumps(tables_json(params, table, grid), allow_nan=False) + "\n")
    plot_rber_vs_pe(params, out / "rber_vs_pe.png", data, title="Virtual mlc-3x: measured RBER and fitted model")
    plot_required_t(params, table, out / "required_t.png")

    wall = time.perf_counter() - t0
    report = out / "index.html"
    report.write_text(_html(res, wall, chip))
    click.echo(f"chip: virtual mlc-3x, seed {seed}; {len(data)} measurements over "
               f"{chip.clock_ns / 8.64e13:.1f} virtual days ({chip.equiv_h / 24:.0f} days 25 degC-equivalent)")
    click.echo(f"fit: R^2(log) {res.r2_log:.4f}, max |rel err| {res.max_rel_err:.3f}, "
               f"required t fresh {int(table.t_for(params.rber(0)))}, "
               f"10k P/E + 1 year {int(table.t_for(params.rber(10_000, 8760)))}")
    click.echo(f"report: {report.resolve()}")
    click.echo(f"wall time: {wall:.1f} s")
    return {"report": str(report), "wall_s": wall}


def _html(res, wall: float, chip: VirtualChip) -> str:
    rows = "".join(
        f"<tr><td>{k}</td><td>{v:.5g}</td><td>[{res.ci95[k][0]:.4g}, {res.ci95[k][1]:.4g}]</td>"
        f"<td>{'poorly determined' if k in res.poorly_determined else ''}</td></tr>"
        for k, v in res.params.items() if v is not None
    )
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>nandrig demo</title>
<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto}}td,th{{padding:.2em .8em}}</style></head><body>
<h1>nandrig demo</h1>
<p>Measured on a virtual {html.escape(chip.profile.name)} chip (seed {chip.seed}): endurance to 10,000 P/E on
{BLOCKS} blocks and retention series at {", ".join(str(p) for p in RETENTION_WEAR)} P/E.
Wall time {wall:.1f} s.</p>
<h2>Fitted RBER model (FLARES eq. 5)</h2>
<p>R&sup2; (log space) {res.r2_log:.4f}; max |relative error| {res.max_rel_err:.3f}; {res.n_points} points.</p>
<table><tr><th>parameter</th><th>value</th><th>95% CI</th><th></th></tr>{rows}</table>
<h2>RBER vs P/E</h2><img src="rber_vs_pe.png" alt="RBER vs P/E">
<h2>Required t vs P/E</h2><img src="required_t.png" alt="required t vs P/E">
<p>Files: {html.escape(", ".join(["measurements.csv", "fit.json", "params.json", "tables.json", "flares_tables.h"]))}</p>
</body></html>
"""
