"""``nandrig rig ...``: talk to any rig by URL."""
from __future__ import annotations

import json

import click

RIG_OPTIONS = [
    click.option("--rig", "url", required=True, help="sim, socket://host:port, /dev/ttyUSB0, or any pyserial URL."),
    click.option("--chip", "profile", default="mlc-3x", show_default=True, help="Chip profile (--rig sim only)."),
    click.option("--seed", type=int, default=0, show_default=True, help="Chip seed (--rig sim only)."),
    click.option("--state", type=click.Path(dir_okay=False), help="Virtual rig state file (--rig sim only)."),
]


def rig_options(f):
    for opt in reversed(RIG_OPTIONS):
        f = opt(f)
    return f


def open_rig(url: str, profile: str, seed: int, state: str | None):
    from nandrig.host.rig import Rig

    return Rig.open(url, chip=profile, seed=seed, state=state)


@click.group("rig")
def rig_grp() -> None:
    """Talk to a rig."""


@rig_grp.command("info")
@rig_options
@click.option("--json", "as_json", is_flag=True)
def info_cmd(url, profile, seed, state, as_json) -> None:
    """Chip identity and geometry, read from the chip's ONFI parameter page."""
    from nandrig.boards.sim.onfi_identity import decode_first_valid

    with open_rig(url, profile, seed, state) as rig:
        hello = rig.hello_info
        pp = decode_first_valid(rig.read_param_page())
        ident = rig.read_id(0x00)
        onfi = rig.read_id(0x20)
        info = rig.info()
    out = {
        "rig": hello.identity, "rig_kind": hello.kind.name.lower(), "protocol": ".".join(map(str, hello.version)),
        "read_id": ident.hex(), "onfi_signature": onfi.decode("ascii", "replace"),
        "manufacturer": pp.manufacturer, "model": pp.model, "jedec_id": pp.jedec_id,
        "page_bytes": pp.page_bytes, "spare_bytes": pp.spare_bytes, "pages_per_block": pp.pages_per_block,
        "blocks": pp.blocks_per_lun, "luns": pp.luns, "bits_per_cell": pp.bits_per_cell,
        "timing_modes": list(pp.timing_modes), "ecc_bits": pp.ecc_bits, "endurance_cycles": pp.endurance_cycles,
        "codeword_bytes": info.codeword_bytes,
    }
    if as_json:
        click.echo(json.dumps(out, indent=2))
        return
    click.echo(f"rig:      {out['rig']} ({out['rig_kind']}, protocol {out['protocol']})")
    click.echo(f"chip:     {pp.manufacturer} {pp.model} (JEDEC 0x{pp.jedec_id:02x}, ID {ident.hex()}, {onfi.decode('ascii', 'replace')})")
    click.echo(f"geometry: {pp.page_bytes}+{pp.spare_bytes}-byte pages, {pp.pages_per_block} pages/block, "
               f"{pp.blocks_per_lun} blocks x {pp.luns} LUN, {pp.bits_per_cell} bits/cell")
    click.echo(f"ONFI:     timing modes {','.join(map(str, pp.timing_modes))}; ECC {pp.ecc_bits} bits; "
               f"endurance {pp.endurance_cycles} cycles")


@click.command("link")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (the default output too).")
def bench_link_cmd(as_json) -> None:
    """Wire bytes per page of a 128-page MEASURE, and commands per second over TCP."""
    from nandrig.host.bench import bench_link

    click.echo(json.dumps(bench_link(), indent=2))
