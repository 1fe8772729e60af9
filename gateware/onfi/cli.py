"""``nandrig bench onfi``."""
from __future__ import annotations

import json

import click


@click.command("onfi")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (the default output too).")
@click.option("--no-synth", is_flag=True, help="Skip the ECP5 synthesis.")
@click.option("--board", type=click.Choice(["ulx3s"]), help="Run the controller at this board's clock (default: 100 MHz).")
def bench_onfi_cmd(as_json, no_synth, board) -> None:
    """Bus bandwidth, overhead and timing checks per ONFI mode (simulated controller + chip model), ECP5 area."""
    from nandrig.gateware.onfi.bench import bench_onfi
    from nandrig.gateware.onfi.timing import DEFAULT_CLK_HZ

    clk_hz = DEFAULT_CLK_HZ
    if board == "ulx3s":
        from nandrig.boards.ulx3s.build import SYS_CLK_HZ as clk_hz
    click.echo(json.dumps(bench_onfi(not no_synth, clk_hz=clk_hz, echo=lambda s: click.echo(s, err=True)), indent=2))
