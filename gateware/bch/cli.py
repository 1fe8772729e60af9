"""``nandrig bench bch``."""
from __future__ import annotations

import json

import click


@click.command("bch")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (the default output too).")
@click.option("--t", "t_list", default="1,2,4,8,16,24,32,40", show_default=True, help="t values to measure.")
@click.option("--no-synth", is_flag=True, help="Skip the ECP5 synthesis (minutes).")
def bench_bch_cmd(as_json, t_list, no_synth) -> None:
    """Encode/decode cycles per t for a 4096-byte page (simulated gateware) and ECP5 area/Fmax."""
    from nandrig.gateware.bch.bench import bench_bch

    try:
        ts = tuple(int(x) for x in t_list.split(","))
    except ValueError:
        raise click.BadParameter(f"--t must be a comma-separated list of integers, got {t_list!r}") from None
    if any(not 1 <= t <= 40 for t in ts):
        raise click.BadParameter("--t values must lie in 1..40 (the default configuration's t_max)")
    click.echo(json.dumps(bench_bch(ts, not no_synth, echo=lambda s: click.echo(s, err=True)), indent=2))
