"""``nandrig bench onfi``."""
from __future__ import annotations

import json

import click


@click.command("onfi")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (the default output too).")
@click.option("--no-synth", is_flag=True, help="Skip the ECP5 synthesis.")
def bench_onfi_cmd(as_json, no_synth) -> None:
    """Bus bandwidth, overhead and timing checks per ONFI mode (simulated controller + chip model), ECP5 area."""
    from nandrig.gateware.onfi.bench import bench_onfi

    click.echo(json.dumps(bench_onfi(not no_synth, echo=lambda s: click.echo(s, err=True)), indent=2))
