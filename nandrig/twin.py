"""``nandrig sim profile --from-db``: a chip's digital twin. The store's side gathers what the chip's campaigns
hold (host/views/twin_inputs.py) and the simulated board's side fits a virtual chip profile to it
(boards/sim/twin.py); the command joins the two, which import neither each other nor this."""
from __future__ import annotations

import json
from pathlib import Path

import click

from nandrig import jsonsafe
from nandrig.host.cli import DatabaseLocation


@click.command("profile")
@click.option("--from-db", "db", required=True, type=DatabaseLocation(exists=True),
              help="The database holding the chip's campaigns (an SQLite file or a postgresql:// URL).")
@click.option("--chip", "label", required=True, help="The chip's label there (`nandrig ls` shows them).")
@click.option("--out", required=True, type=click.Path(dir_okay=False, writable=True),
              help="Write the twin's chip profile here (JSON): `--rig sim --chip FILE` runs it.")
@click.option("--name", help="The twin profile's name.  [default: twin-LABEL]")
@click.option("--campaign", "campaign_ids", type=int, multiple=True,
              help="Fit to this campaign (repeatable; default: all the chip's): hold the others out to check the twin.")
@click.option("--json", "as_json", is_flag=True, help="Print every fitted part as JSON.")
def profile_cmd(db, label, out, name, campaign_ids, as_json) -> None:
    """Fit a virtual chip profile to one chip's campaigns: its digital twin (docs/twin.md)."""
    from nandrig.boards.sim.twin import build_twin
    from nandrig.host.storage.store import Store
    from nandrig.host.views.twin_inputs import twin_inputs

    store = Store(db, read_only=True)
    try:
        data = twin_inputs(store, label, list(campaign_ids))
    finally:
        store.close()
    twin = build_twin(data, name)
    try:
        Path(out).write_text(jsonsafe.dumps(twin.profile, indent=1))
    except OSError as e:
        raise click.ClickException(f"cannot write {out}: {e.strerror}") from None
    if as_json:
        click.echo(json.dumps(twin.profile["twin"], indent=2))
        return
    click.echo(f"twin of {label}: {out}")
    for p in twin.parts:
        ci = f" [{p.ci95[0]:.4g}, {p.ci95[1]:.4g}]" if p.ci95 else ""
        value = "" if p.value is None else f" = {p.value:.4g}{ci}"
        click.echo(f"  {p.field}{value}: {p.source}")
