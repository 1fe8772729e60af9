"""``nandrig demo``: the main job end to end on the embedded default, a virtual mlc-3x chip.

Campaigns through the rig protocol into a measurement database (endurance to
10,000 P/E, retention series at four wear levels to one year, latency, read
disturb, a read-retry Vth sweep), then the RBER fit, the FLARES tables and
their C header, FLARES validated on a rig of the same chip with tables from
that fit sent to it (a tenth of the paper's operations; density control on),
and the HTML report.
"""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import click

from nandrig.characterization.bound import prediction_bound
from nandrig.characterization.fitting import fit_page_types, fit_summary, fit_table
from nandrig.characterization.tables import PAPER_CODEWORD_BYTES, CorrTable, RetentionGrid, tables_json
from nandrig.characterization.flares_tables import c_header
from nandrig.host.kinds import endurance, latency, read_disturb, retention, vth
from nandrig.host.views.report import write_report
from nandrig.host.engine.campaigns import create, run
from nandrig.host.engine.chip_access import open_for_chip
from nandrig.host.views.export import export_rows, measurements
from nandrig.host.storage.store import Store

CHIP, SEED = "mlc-3x", 1
UBER = 1e-11
VALIDATION_SCALE = 0.1  # of the paper's operations: the loop closed once, in seconds
BOUND = 0.999  # FLARES' tables cover the fit's upper prediction bound at this confidence, not its curve: the one
# at which guarded FLARES put no operation under target on 32 dies (docs/flares.md)


def model_plans(endur: list[int], reten: list[int]) -> list[tuple[str, object]]:
    """The campaigns the RBER model is fitted to: endurance to 10k P/E and retention at four wear levels."""
    return [
        ("endurance", endurance.EnduranceParams(
            tuple(endur), 1, cycles=10_000, checkpoints=tuple(endurance.checkpoints(10_000, 1000)))),
        ("retention", retention.RetentionParams(
            tuple(reten), 1, wear=(1000, 3000, 6000, 10000), times_h=(24.0, 168.0, 720.0, 2160.0, 8760.0))),
    ]


def free_runs(bad: set[int], sizes: list[int], total: int) -> list[list[int]]:
    """Consecutive block ranges of the given sizes that avoid factory bad blocks."""
    out, b = [], 0
    for n in sizes:
        while any(x in bad for x in range(b, b + n)):
            b += 1
        if b + n > total:
            raise click.ClickException("the chip has too few good blocks for the demo")
        out.append(list(range(b, b + n)))
        b += n
    return out


def validate_on_rig(params: list, about: str) -> tuple[str, dict]:
    """The loop closed: the rig gets FLARES tables from this fit (per page type) and runs guarded FLARES itself on
    fresh blocks (its measured errors in the loop: docs/flares.md); its verdict in words, and the run. On a volatile rig over the same chip seed (the same cells): the
    demo's own rig writes its chip to disk after every command, which host-paced FLARES (a command per page)
    would make minutes of."""
    from nandrig.characterization.flares import FlaresConfig
    from nandrig.host.engine.flares_validate import pages_under_test, validate, verdict
    from nandrig.host.link.rig import Rig

    with Rig.open("sim", chip=CHIP, seed=SEED) as rig:
        info = rig.info()
        bad = set(rig.scan_bad(0, 64))
        res = validate(rig, params, [b for b in range(64) if b not in bad], pages_under_test(info.pages_per_block),
                       VALIDATION_SCALE, live=FlaresConfig(guarded=True))
    switches = res["density_control"]["continuous-wear"]["switches"]
    return (f"FLARES in the rig (tables from {about}, CRC {res['rig_tables']['crc']}, sent at run time): "
            + verdict(res)["words"]
            + "".join(f"; density control: block {s['block']} {s['from']} -> {s['to']} at P/E {s['pe']}"
                      for s in switches)), res


def run_demo(out: Path) -> dict:
    t0 = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    db = out / "demo.db"
    for stale in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        stale.unlink(missing_ok=True)
    shutil.rmtree(out / "demo.db.rigs", ignore_errors=True)
    store = Store(db)
    try:
        rig, chip_id = open_for_chip(store, "sim", CHIP, SEED)
        with rig:
            bad = set(rig.scan_bad(0, 128))
            endur, reten, lat, rd, vth_blocks = free_runs(bad, [16, 16, 2, 2, 2], rig.info().blocks)
            plans = [
                *model_plans(endur, reten),
                ("latency", latency.LatencyParams(tuple(lat), 1, checkpoints=(1, 3000, 10000))),
                ("read-disturb", read_disturb.ReadDisturbParams(
                    tuple(rd), 1, pe=3000, read_points=(10_000, 100_000, 300_000, 1_000_000, 3_000_000, 10_000_000),
                    page=0)),
                ("vth", vth.VthParams(tuple(vth_blocks), 1, pe=10_000, retention_h=8760.0,
                                      offsets=tuple(range(-80, 25, 5)))),
            ]
            ids = []
            for kind, params in plans:
                blocks = params.blocks
                cid = create(store, rig, chip_id, kind, params, "sim")
                run(store, rig, cid)
                ids.append(cid)
                click.echo(f"  {kind:<13} blocks {blocks[0]}-{blocks[-1]}: done ({store.campaign(cid).steps} steps, "
                           f"{time.perf_counter() - t0:.0f} s so far)", err=True)
        # per block and page type: blocks for honest intervals, page types for a model each
        data = measurements([r for cid in ids[:2] for r in export_rows(store, store.campaign(cid), by_block=True)])
    finally:
        store.close()
    fits = fit_page_types(data)
    res = fits["all"]
    (out / "fit.json").write_text(json.dumps({**res.to_json(), "page_types": {
        t: r.to_json() for t, r in fits.items() if t != "all"}}, indent=2, allow_nan=False) + "\n")
    models = {t: r.rber_params(f"demo-fit-{t}") for t, r in fits.items()}
    params = models["all"]
    params.to_json(out / "params.json")
    table = CorrTable.build(UBER, PAPER_CODEWORD_BYTES * 8)
    grid = RetentionGrid.build(params, table, 10_000, 250)
    # the tables per page type: the fit's upper prediction bound (what the next block will do), not its curve
    bounds = {t: prediction_bound(fits[t], (d.pe, d.retention_h, d.rber, d.bits), BOUND, 10_000, 8760.0)
              for t in ("lower", "upper") for d in [data.select(data.page_type == t)]}
    bounded = {t: b.apply(models[t]) for t, b in bounds.items()}
    lower = bounded["lower"]
    (out / "flares_tables.h").write_text(c_header(lower, table, RetentionGrid.build(lower, table, 10_000, 250),
                                                  upper=bounded["upper"]))
    (out / "tables.json").write_text(json.dumps({**tables_json(params, table, grid), "page_types": {
        t: {**tables_json(p, table, RetentionGrid.build(p, table, 10_000, 250)), "bound": bounds[t].to_json()}
        for t, p in bounded.items()}}, allow_nan=False) + "\n")
    loop, flares = validate_on_rig([bounded["lower"], bounded["upper"]],
                                   f"this fit's {BOUND * 100:g}% upper prediction bound, "
                                   + " / ".join(f"{t} x{b.factor:.2f}" for t, b in bounds.items()))
    store = Store(db)
    try:  # for the report; the run wore a volatile copy of the chip, so it is filed apart from this chip's wear
        store.add_flares_run(f"sim:{CHIP}:{SEED} (volatile copy: its wear is not in this database)",
                             flares["blocks"]["operating-points"][0], flares["pages"][0], flares)
    finally:
        store.close()
    report = write_report(db, out)
    wall = time.perf_counter() - t0
    click.echo(f"chip: virtual {CHIP}, seed {SEED}; database {db}")
    click.echo("fit: " + fit_summary(res))
    for line in fit_table(res):
        click.echo("  " + line)

    def need(p):
        t = int(table.t_for(p.rber(10_000, 8760)))
        return str(t) if t > 0 else f"> {table.t_max}"

    click.echo(f"required t (UBER {UBER:g}, {PAPER_CODEWORD_BYTES}-byte codeword): fresh {int(table.t_for(params.rber(0)))}; "
               "10k P/E + 1 year: " + ", ".join(f"{t} pages {need(p)}" for t, p in models.items()))
    click.echo(f"FLARES tables (per page type, the fit's {BOUND * 100:g}% upper prediction bound): {out / 'flares_tables.h'}")
    click.echo(loop)
    click.echo(f"report: {report.resolve()}")
    click.echo(f"wall time: {wall:.1f} s")
    return {"report": str(report), "wall_s": wall, "fit": res}
