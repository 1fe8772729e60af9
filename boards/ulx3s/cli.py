"""``nandrig board build|load ulx3s``."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import click

from nandrig.boards.ulx3s.build import BOARD_BCH, CLOCKS, SEED
from nandrig.errors import NandrigError
from nandrig.gateware.clocks import Clocks
from nandrig.gateware.bch.config import BchConfig

BOARDS = click.Choice(["ulx3s"])


@click.group("board")
def board_grp() -> None:
    """Real boards: build the rig's bitstream, load it."""


@board_grp.command("build")
@click.argument("board", type=BOARDS, metavar="BOARD")
@click.option("--clock-mhz", type=click.FloatRange(10, 100), default=CLOCKS.sys_hz / 1e6, show_default=True,
              help="System clock.")
@click.option("--nand-clock-mhz", type=click.FloatRange(0, 200), default=(CLOCKS.nand_hz or 0) / 1e6,
              show_default=True, help="The ONFI PHY's own clock (0: the PHY on the system clock).")
@click.option("--capture-steps", type=click.Choice(["1", "4"]), default=str(CLOCKS.capture_steps), show_default=True,
              help="DQ samples per PHY cycle: 4 with the IDDRX2F input gearing (needs the NAND clock).")
@click.option("--seed", type=int, default=SEED, show_default=True, help="nextpnr placement seed.")
@click.option("--bch-t-max", type=click.IntRange(1, BchConfig().t_max), default=BOARD_BCH.t_max, show_default=True,
              help="The BCH engine's t_max (the rig's code).")
@click.option("--bch-lanes", type=click.Choice(["8", "16", "24", "32"]), default=str(BOARD_BCH.chien_parallelism),
              show_default=True, help="Chien search degrees per cycle (area against decode time).")
@click.option("--targets", type=click.IntRange(1, 8), default=1, show_default=True,
              help="Sockets on the adapter's bus, each its own CE# and R/B# (docs/ulx3s.md).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON only.")
def build_cmd(board, clock_mhz, nand_clock_mhz, capture_steps, seed, bch_t_max, bch_lanes, targets, as_json) -> None:
    """SoC + firmware + ONFI controller + BCH engine for the board; bitstream with yowasp yosys / nextpnr / ecppack."""
    from nandrig.boards.ulx3s.build import build

    bch = dataclasses.replace(BOARD_BCH, t_max=bch_t_max, chien_parallelism=int(bch_lanes))
    clocks = Clocks(int(clock_mhz * 1e6), int(nand_clock_mhz * 1e6) or None, int(capture_steps))
    if clocks.capture_steps > 1 and not clocks.nand_hz:
        raise NandrigError(f"--capture-steps {capture_steps}: the input gearing needs the NAND clock (--nand-clock-mhz)")
    res = build(clocks=clocks, seed=seed, bch=bch, sockets=targets,
                echo=(lambda s: None) if as_json else (lambda s: click.echo(s, err=True)))
    if as_json:
        click.echo(json.dumps(res, indent=2))
        return
    click.echo(f"bitstream: {res['bitstream']} ({res['bitstream_bytes']} bytes) for {res['device']}")
    for k in ("lut4", "ff", "bram"):
        click.echo(f"{k.upper():>5}: {res[k]['used']:>6} / {res[k]['available']}")
    click.echo(f" UART: {res['uart_baud']} baud (the host's rate for the board's serial port)")
    click.echo(f"  BCH: t up to {res['bch_t_max']} per {res['bch_codeword_bytes']}-byte codeword, "
               f"{res['bch_chien_lanes']} Chien degrees per cycle at {res['bch_search_clock_ratio']}x the system clock")
    for name, c in res["clocks"].items():
        ok = "meets" if c["margin"] >= 0 else "MISSES"
        click.echo(f" Fmax: {c['fmax_mhz']} MHz for the {name} clock ({ok} {c['clock_mhz']} MHz, "
                   f"margin {c['margin']:+.1%}; placed and routed for {c['placed_for_mhz']:g} MHz)")


@board_grp.command("load")
@click.argument("board", type=BOARDS, metavar="BOARD")
@click.option("--bitstream", type=click.Path(dir_okay=False, path_type=Path), help="Default: the last build's.")
@click.option("--flash", is_flag=True, help="Write the configuration flash instead of the FPGA's SRAM.")
def load_cmd(board, bitstream, flash) -> None:
    """Load the bitstream through openFPGALoader."""
    from nandrig.boards.ulx3s.build import BUILD, NAME
    from nandrig.boards.ulx3s.load import load

    load(bitstream or BUILD / "gateware" / f"{NAME}.bit", flash)
    click.echo("loaded" + (" into flash" if flash else ""))
