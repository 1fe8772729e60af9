"""``nandrig bench onfi``."""
from __future__ import annotations

import json

import click

from nandrig.gateware.soc.clocks import BOARDS


@click.command("onfi")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (the default output too).")
@click.option("--no-synth", is_flag=True, help="Skip the ECP5 synthesis.")
@click.option("--board", type=click.Choice(BOARDS), help="Run the controller at this board's bitstream clocks (default: 100 MHz).")
def bench_onfi_cmd(as_json, no_synth, board) -> None:
    """Bus bandwidth, overhead and timing checks per ONFI mode (simulated controller + chip model), ECP5 area."""
    from nandrig.gateware.soc.clocks import board_clocks
    from nandrig.gateware.onfi.bench import bench_onfi

    res = bench_onfi(not no_synth, clocks=board_clocks(board), board=board, echo=lambda s: click.echo(s, err=True))
    click.echo(json.dumps(res, indent=2))
