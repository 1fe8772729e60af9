"""``nandrig bench onfi`` and ``nandrig bench bch``: the gateware's benches, run with the default build's figures
or with a board's (``--board``), which this module looks up and passes in."""
from __future__ import annotations

import json

import click

from nandrig.boards.catalog import BOARDS, board_build, board_clocks
from nandrig.gateware.bch.config import BchConfig


@click.command("onfi")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (the default output too).")
@click.option("--no-synth", is_flag=True, help="Skip the ECP5 synthesis.")
@click.option("--board", type=click.Choice(BOARDS), help="Run the controller at this board's bitstream clocks (default: 100 MHz).")
def bench_onfi_cmd(as_json, no_synth, board) -> None:
    """Bus bandwidth, overhead and timing checks per ONFI mode (simulated controller + chip model), ECP5 area."""
    from nandrig.gateware.onfi.bench import bench_onfi

    res = bench_onfi(not no_synth, clocks=board_clocks(board), board=board, echo=lambda s: click.echo(s, err=True))
    click.echo(json.dumps(res, indent=2))


T_VALUES = (1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64)


@click.command("bch")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (the default output too).")
@click.option("--t", "t_list",
              help=f"t values to measure [default: {','.join(map(str, T_VALUES))} up to the engine's t_max].")
@click.option("--no-synth", is_flag=True, help="Skip the ECP5 synthesis (minutes).")
@click.option("--board", type=click.Choice(BOARDS),
              help="The engine this board's build carries (default: the rig's).")
def bench_bch_cmd(as_json, t_list, no_synth, board) -> None:
    """Encode/decode cycles per t for a 4096-byte page (simulated gateware) and ECP5 area/Fmax."""
    from nandrig.gateware.bch.bench import bench_bch

    cfg = board_build(board).bch if board else BchConfig()
    t_max = cfg.t_max
    try:
        ts = tuple(int(x) for x in t_list.split(",")) if t_list else tuple(t for t in T_VALUES if t <= t_max)
    except ValueError:
        raise click.BadParameter(f"--t must be a comma-separated list of integers, got {t_list!r}") from None
    if any(not 1 <= t <= t_max for t in ts):
        raise click.BadParameter(f"--t values must lie in 1..{t_max} (the engine's t_max)")
    click.echo(json.dumps(bench_bch(ts, not no_synth, echo=lambda s: click.echo(s, err=True), cfg=cfg), indent=2))
