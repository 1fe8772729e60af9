"""``nandrig bench chip``."""
from __future__ import annotations

import json

import click


@click.command("chip")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (the default output too).")
@click.option("--chip", "profile", default="mlc-3x", show_default=True, help="Chip profile.")
def bench_chip_cmd(as_json, profile) -> None:
    """Calibration grid vs eq. 5, byte/statistical path rates, and a whole-life run."""
    from nandrig.boards.sim.bench import bench_chip
    from nandrig.boards.sim.profile import load_profile

    load_profile(profile)  # a clear error for an unknown profile before any work
    click.echo(json.dumps(bench_chip(profile), indent=2))
