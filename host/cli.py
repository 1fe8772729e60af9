"""``nandrig rig ...``: talk to any rig by URL."""
from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path

import click

from nandrig import jsonsafe
from nandrig.errors import NandrigError
from nandrig.host.ftl.policy import POLICIES
from nandrig.host.workload.evaluate import CACHE_CONTROLLERS
from nandrig.host.ftl.ftl import Victim
from nandrig.host.workload.trace import FORMATS, PROFILES, Synthetic
from nandrig.host.kinds import KINDS, CampaignKind
from nandrig.host.lab.oven import SCPI, make_oven
from nandrig.protocol import Cap, Limit

RIG_OPTIONS = [
    click.option("--rig", "url", required=True, help="sim, socket://host:port, /dev/ttyUSB0, or any pyserial URL."),
    click.option("--chip", "profile", default="mlc-3x", show_default=True, help="Chip profile (--rig sim only)."),
    click.option("--seed", type=int, default=0, show_default=True, help="Chip seed (--rig sim only)."),
    click.option("--state", type=click.Path(dir_okay=False), help="Virtual rig state file (--rig sim only)."),
    click.option("--wiring", help="Simulated adapter (--rig sim only): delay=NS round trip, dqN=0 or dqN=1 stuck, "
                                  "dqA~dqB shorted; comma-separated."),
    click.option("--target", type=click.IntRange(0, Limit.TARGETS_MAX - 1), default=0, show_default=True,
                 help="The chip on the rig's CE# K (a rig with several; nandrig rig info lists them)."),
]


class DatabaseLocation(click.ParamType):
    """An SQLite file, or a lab's PostgreSQL database as ``postgresql://[user@]host[:port]/name``."""

    name = "database"

    def __init__(self, exists: bool = False) -> None:
        self.file = click.Path(dir_okay=False, exists=exists)

    def convert(self, value, param, ctx):
        from nandrig.host.storage.databases import is_url

        return value if is_url(value) else self.file.convert(value, param, ctx)


DB_HELP = "SQLite file, or postgresql://[user@]host[:port]/name for a lab's shared store."


def rig_options(f):
    for opt in reversed(RIG_OPTIONS):
        f = opt(f)
    return f


def open_rig(url: str, profile: str, seed: int, state: str | None, wiring: str | None = None, **kw):
    from nandrig.host.link.rig import Rig

    if wiring and url != "sim":
        raise click.BadParameter("--wiring simulates an adapter: it applies to --rig sim only")
    return Rig.open(url, chip=profile, seed=seed, state=state, wiring=wiring, **kw)


@click.group("rig")
def rig_grp() -> None:
    """Talk to a rig."""


@rig_grp.command("info")
@rig_options
@click.option("--json", "as_json", is_flag=True)
@click.option("--dump-param-page", "dump_path", type=click.Path(dir_okay=False),
              help="Also write what READ PARAMETER PAGE returned (copies, then the extended page) to this file.")
def info_cmd(url, profile, seed, state, wiring, target, as_json, dump_path) -> None:
    """Chip identity and geometry, read from the chip's ONFI parameter page, and the rig's read capture."""
    from nandrig.chip.param_page import decode_dump
    from nandrig.chip.read_retry import table_for

    with open_rig(url, profile, seed, state, wiring, observe=True, target=target) as rig:  # a look: a running campaign keeps it
        hello = rig.hello_info
        info = rig.info()
        raw = rig.read_param_page()
        if dump_path:
            Path(dump_path).write_bytes(raw)
        info.require_chip()
        decoded = decode_dump(raw)
        ident = rig.read_id(0x00)
        onfi = rig.read_id(0x20)
    pp = decoded.page
    notes = list(decoded.notes) + ([] if onfi == b"ONFI" else [f"READ ID 20h gave {onfi!r}, not b'ONFI'"])
    if ident[:1] != bytes([pp.jedec_id]):  # hosts take the maker (and its bad-block rule) from READ ID
        notes.append(f"READ ID byte 0 (0x{ident[0]:02x}) is not the parameter page's JEDEC byte (0x{pp.jedec_id:02x})")
    out = {
        "rig": hello.identity, "rig_kind": hello.kind.name.lower(), "protocol": ".".join(map(str, hello.version)),
        "read_id": ident.hex(), "onfi_signature": onfi.decode("ascii", "replace"), **decoded.fields(), "notes": notes,
        "blocks": info.blocks, "unique_id": info.unique_id.hex() if info.unique_id else None,
        "codeword_bytes": info.codeword_bytes, "timing_mode": info.timing_mode,
        "capture": {"rd_trim": info.rd_trim, "passing_trims": info.passing_trims, "step_ps": info.capture_step_ps,
                    "setup_hold_ps_at_least": info.capture_margins_ps},
        "read_retry": dataclasses.asdict(retry) if (retry := table_for(pp.manufacturer, pp.model)) else None,
        "energy": Cap.ENERGY in hello.capabilities, "target": info.target, "targets": list(info.targets),
    }
    if as_json:
        click.echo(json.dumps(out, indent=2))
        return
    click.echo(f"rig:      {out['rig']} ({out['rig_kind']}, protocol {out['protocol']})")
    click.echo(f"target:   {info.target} of the rig's targets with a chip: {', '.join(map(str, info.targets))}")
    click.echo(f"chip:     {pp.manufacturer} {pp.model} (JEDEC 0x{pp.jedec_id:02x}, ID {ident.hex()}, {onfi.decode('ascii', 'replace')})")
    click.echo(f"unique:   {out['unique_id'] or 'none (READ UNIQUE ID not listed or no copy checked out): name it with --chip-label'}")
    click.echo("geometry: " + _geometry_line(decoded))
    click.echo("ONFI:     " + _onfi_line(decoded))
    passing, margins = info.passing_trims, info.capture_margins_ps
    click.echo(f"capture:  mode {info.timing_mode}, trim {info.rd_trim:+d} steps of {info.capture_step_ps / 1000:g} ns "
               f"(passing: {' '.join(f'{t:+d}' for t in passing)})"
               + (f"; setup and hold at least {margins[0] / 1000:g} and {margins[1] / 1000:g} ns (the sweep's "
                  "failing trims either side)" if margins else ""))
    click.echo(f"retry:    {retry.name}: each reference {retry.min_offset:+d}..{retry.max_offset:+d} steps of "
               f"{retry.step_mv:g} mV" if retry else "retry:    no read-retry table for this part: its references stay put")
    click.echo(f"energy:   {'metered (supply-current front end)' if out['energy'] else 'not metered (no front end)'}")
    for note in notes:
        click.echo(f"note:     {note}")


def _geometry_line(d) -> str:
    p = d.page
    return (f"{p.page_bytes}+{p.spare_bytes}-byte pages, {p.pages_per_block} pages/block, {p.blocks_per_lun} blocks "
            f"x {p.luns} LUN{'s' if p.luns > 1 else ''}, {p.bits_per_cell}-bit cells, x{p.bus_width}")


def _onfi_line(d) -> str:
    p = d.page
    ecc = f"{d.ecc.bits} bits per {d.ecc.step_bytes} B" if d.ecc else "not given"
    return (f"ONFI {d.fields()['revision']}; timing modes {','.join(map(str, p.timing_modes))}; ECC {ecc}"
            f"{' (extended page)' if p.ecc_bits == 0xFF and d.ecc else ''}; endurance {p.endurance_cycles} cycles; "
            f"tCCS {p.t_ccs_ns} ns")


@rig_grp.command("decode-param-page")
@click.argument("dump_file", metavar="FILE", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True)
@click.option("--check-rig", is_flag=True, help="Also say whether this rig can drive the chip (exit 1 when not).")
def decode_param_page_cmd(dump_file, as_json, check_rig) -> None:
    """Decode a parameter-page dump (what READ PARAMETER PAGE streams: copies, then the extended page) without a
    rig, by the Linux kernel's rules: first copy with a good CRC, else the copies' bit-wise majority; ECC from the
    extended page when byte 112 is 0xFF."""
    from nandrig.chip.param_page import RIG_LIMITS, check_drivable, decode_dump

    raw = Path(dump_file).read_bytes()
    d = decode_dump(raw)
    if check_rig:
        check_drivable(d.page, RIG_LIMITS)
    if as_json:
        click.echo(json.dumps(d.fields(), indent=2))
        return
    p = d.page
    source = f"copy {d.copy}" if d.copy is not None else "bit-wise majority of the copies"
    click.echo(f"chip:     {p.manufacturer} {p.model} (JEDEC 0x{p.jedec_id:02x}; {source})")
    click.echo("geometry: " + _geometry_line(d))
    click.echo("ONFI:     " + _onfi_line(d))
    click.echo(f"times:    tPROG {p.t_prog_max_us} us, tBERS {p.t_bers_max_us} us, tR {p.t_r_max_us} us, "
               + (f"tADL {p.t_adl_ns} ns" if p.t_adl_ns else "tADL not given"))
    for note in d.notes:
        click.echo(f"note:     {note}")


@rig_grp.command("bad-blocks")
@rig_options
@click.option("--take-over", is_flag=True, help="Take the rig from another host session holding it.")
@click.option("--json", "as_json", is_flag=True)
def bad_blocks_cmd(url, profile, seed, state, wiring, target, take_over, as_json) -> None:
    """The chip's factory bad blocks (their marks as the rig first read them, before any erase)."""
    from nandrig.host.engine.chip_access import format_blocks

    with open_rig(url, profile, seed, state, wiring, take_over=take_over, target=target) as rig:
        blocks = rig.info().blocks
        bad = rig.scan_bad(0, blocks)
    if as_json:
        click.echo(json.dumps({"blocks": blocks, "bad": bad}))
        return
    click.echo(f"{len(bad)} of {blocks} blocks carry a factory bad-block mark" + (f": {format_blocks(bad)}" if bad else ""))


@rig_grp.command("selftest")
@rig_options
@click.option("--block", type=click.IntRange(min=0), required=True,
              help="Block to erase and program once with walking patterns: one P/E cycle of wear.")
@click.option("--force", is_flag=True, help="Allow a factory bad block.")
@click.option("--db", type=DatabaseLocation(),
              help="Record that P/E cycle against the chip in this database, and refuse a block a campaign holds.")
@click.option("--chip-label", help="Name of this physical chip in --db (real rigs; default: read ID and model).")
@click.option("--take-over", is_flag=True, help="Take the rig from another host session holding it.")
@click.option("--json", "as_json", is_flag=True)
def selftest_cmd(url, profile, seed, state, wiring, target, block, force, db, chip_label, take_over, as_json) -> None:
    """Check a freshly wired adapter: capture window, ONFI identity, and each DQ line by a walking-pattern
    program/read on one block (docs/ulx3s.md, bring-up)."""
    from nandrig.host.engine.chip_access import open_for_chip
    from nandrig.host.engine.selftest import selftest
    from nandrig.host.storage.store import Store

    if wiring and url != "sim":
        raise click.BadParameter("--wiring simulates an adapter: it applies to --rig sim only")
    if db is None:
        with open_rig(url, profile, seed, state, wiring, take_over=take_over, target=target) as rig:
            out = selftest(rig, block, force)
    else:
        store = Store(db)
        try:
            rig, chip_id = open_for_chip(store, url, profile, seed, chip_label, wiring, take_over, target=target)
            with rig:
                store.check_unreserved(chip_id, block)
                out = selftest(rig, block, force)
                if "erase_status" in out:
                    store.add_loose_erase(chip_id, block, bool(out["erase_status"] & 1), f"rig selftest on block {block}")
        finally:
            store.close()
    if as_json:
        click.echo(json.dumps(out, indent=2))
    else:
        click.echo(f"capture:   {out['capture']}, mode {out['timing_mode']}, trim {out['rd_trim']:+d} "
                   f"(passing: {' '.join(f'{t:+d}' for t in out['passing_trims']) or 'none'})")
        click.echo(f"identity:  READ ID 20h {out['read_id_20h']}; {out['param_copies_good']} of 3 parameter-page copies good")
        for v in out.get("lines", []):
            seen = (f"{v['wrong_bits']} of {v['bits']} bits wrong" if v["wrong_bits"] >= 0
                    else f"in {v['bits']} bytes the chip returned")
            click.echo(f"DQ{v['line']}:       {v['verdict']} ({seen})")
        click.echo(f"summary:   {out['summary']}")
    if out["summary"] != "every DQ line reads what was written":
        raise click.exceptions.Exit(1)


# -- one page or block by hand (nandtest's, Glasgow memory-onfi's): a campaign's safety rules apply --------------
def _by_hand(url, profile, seed, state, wiring, target, db, chip_label, take_over, block: int, page: int | None, wears: bool,
             work) -> dict:
    """Open the rig (through --db: the chip's record, its reservations) and run ``work(rig)``; an erase is
    recorded against the chip. A chip with a history cannot be worn without its database."""
    from nandrig.host.engine.chip_access import known_chip, open_for_chip
    from nandrig.host.storage.store import Store

    if wiring and url != "sim":
        raise click.BadParameter("--wiring simulates an adapter: it applies to --rig sim only")
    if db is None:
        if wears and (url != "sim" or state):
            raise click.BadParameter("this wears the chip: name its database (--db) so the P/E cycle is recorded and "
                                     "campaigns' blocks are refused")
        with open_rig(url, profile, seed, state, wiring, take_over=take_over, target=target) as rig:
            return work(rig)
    def check(chip_id: int, blocks: int, pages: int) -> None:
        if block >= blocks:
            raise click.BadParameter(f"--block {block} is outside the chip's blocks 0..{blocks - 1}")
        if page is not None and page >= pages:
            raise click.BadParameter(f"--page {page} is outside the block's pages 0..{pages - 1}")
        store.check_unreserved(chip_id, block)

    store = Store(db)
    try:
        store.check_integrity()
        known = known_chip(store, url, profile, seed, chip_label)
        if known is not None:  # refused from the database, before a rig is taken
            check(known, store.chip(known)["blocks"], store.chip(known)["pages_per_block"])
        rig, chip_id = open_for_chip(store, url, profile, seed, chip_label, wiring, take_over, target=target)
        with rig:
            check(chip_id, rig.info().blocks, rig.info().pages_per_block)
            out = work(rig)
            if "erase_status" in out:
                store.add_loose_erase(chip_id, block, bool(out["erase_status"] & 1), f"rig erase of block {block}")
        return out
    finally:
        store.close()


def _by_hand_options(f):
    for opt in reversed([
        click.option("--block", type=click.IntRange(min=0), required=True, help="Block."),
        click.option("--db", type=DatabaseLocation(),
                     help="The chip's database: an erase is recorded against it, a block a campaign holds refused "
                          "(needed to wear a real chip or a simulated one with --state)."),
        click.option("--chip-label", help="Name of this physical chip in --db (real rigs; default: its unique ID)."),
        click.option("--take-over", is_flag=True, help="Take the rig from another host session holding it."),
        click.option("--json", "as_json", is_flag=True),
    ]):
        f = opt(f)
    return f


def _chip_result(what: str, r) -> dict:
    return {"op": what, "status": f"0x{r.chip_status:02x}", "fail": r.fail, "busy_us": r.busy_ns / 1e3}


def _chip_line(out: dict) -> str:
    where = f"block {out['block']}" + (f" page {out['page']}" if "page" in out else "")
    verify = f", verify levels PV1..PV3 at {', '.join(f'{o:+d}' for o in out['verify'])}" if "verify" in out else ""
    return (f"{out['op']} {where}: {'FAIL' if out['fail'] else 'pass'} (status {out['status']}), "
            f"busy {out['busy_us']:.0f} us{verify}")


def _say(out: dict, as_json: bool, text: str) -> None:
    click.echo(json.dumps(out, indent=2) if as_json else text)
    if out.get("fail"):
        raise click.exceptions.Exit(1)


@rig_grp.command("erase")
@rig_options
@_by_hand_options
@click.option("--force", is_flag=True, help="Erase a factory bad block (its mark is lost for good).")
def erase_cmd(url, profile, seed, state, wiring, target, block, db, chip_label, take_over, as_json, force) -> None:
    """Erase one block: one P/E cycle of wear."""
    def work(rig):
        r = rig.erase(block, force=force)
        return {**_chip_result("erase", r), "block": block, "erase_status": r.chip_status}

    out = _by_hand(url, profile, seed, state, wiring, target, db, chip_label, take_over, block, None, True, work)
    _say(out, as_json, _chip_line(out))


@rig_grp.command("program")
@rig_options
@_by_hand_options
@click.option("--page", type=click.IntRange(min=0), required=True, help="Page in the block.")
@click.option("--pattern-seed", type=int, help="Program the rig's PRBS pattern of this seed (the default: 1).")
@click.option("--data", "data_path", type=click.Path(dir_okay=False, exists=True),
              help="Program this file's bytes instead (at most data + spare bytes).")
@click.option("--t", "t", type=click.IntRange(0, 255), default=0, show_default=True,
              help="Add BCH parity for t errors per codeword in the spare area.")
@click.option("--reduced", is_flag=True,
              help="Program the page's share of its wordline in reduced state (3 levels a cell, ReduceCode; the data: "
                   "the pattern seed's, as `run flexlevel` programs it).")
@click.option("--verify", "verify", metavar="PV1,PV2,PV3",
              help="Program with L1..L3's program-verify levels at these offsets (the chip design's verify feature, "
                   "NUNMA; an upper page's program places the wordline's levels), set back to 0 after.")
@click.option("--force", is_flag=True, help="Program a factory bad block.")
def program_cmd(url, profile, seed, state, wiring, target, block, db, chip_label, take_over, as_json, page, pattern_seed,
                data_path, t, reduced, verify, force) -> None:
    """Program one page (erase its block first)."""
    from pathlib import Path

    if pattern_seed is not None and data_path:
        raise click.BadParameter("--pattern-seed and --data are two sources: give one")
    if reduced and (data_path or t):
        raise click.BadParameter("--reduced programs the pattern seed's data without parity: not with --data or --t")
    data = Path(data_path).read_bytes() if data_path else None
    pattern_seed = 1 if pattern_seed is None else pattern_seed
    from nandrig.host.kinds.flexlevel import parse_offsets

    levels = parse_offsets(verify, "--verify", "PV1,PV2,PV3", 3) if verify else None

    def work(rig):
        nonlocal data
        info = rig.info() if reduced or levels else None
        if reduced:
            from nandrig.host.kinds.flexlevel import reduced_page

            data = reduced_page(pattern_seed, block, page, info.pages_per_block, info.raw_page_bytes)
        if levels is None:
            r = rig.program(block, page, seed=None if data else pattern_seed, data=data, t=t, force=force)
            return {**_chip_result("program", r), "block": block, "page": page}
        from nandrig.chip.read_retry import require_verify

        require_verify(info.manufacturer, info.model).check(levels)  # refused before anything is written
        rig.set_verify_levels(*levels)
        try:
            r = rig.program(block, page, seed=None if data else pattern_seed, data=data, t=t, force=force)
        finally:
            rig.set_verify_levels(0, 0, 0)
        return {**_chip_result("program", r), "block": block, "page": page, "verify": list(levels)}

    out = _by_hand(url, profile, seed, state, wiring, target, db, chip_label, take_over, block, page, True, work)
    _say(out, as_json, _chip_line(out))


@rig_grp.command("read")
@rig_options
@_by_hand_options
@click.option("--page", type=click.IntRange(min=0), required=True, help="Page in the block.")
@click.option("--pattern-seed", type=int, help="Count bit errors against the PRBS pattern of this seed.")
@click.option("--t", "t", type=click.IntRange(0, 255), default=0, show_default=True,
              help="Decode BCH codewords programmed with this t.")
@click.option("--out", "out_path", type=click.Path(dir_okay=False),
              help="Write the page's raw bytes here (--reduced: its wordline's data bytes).")
@click.option("--reduced", "reduced_refs", metavar="VR2,VR3",
              help="Read the page's wordline as reduced state (`rig program --reduced`), VR2 and VR3 at these read-retry "
                   "offsets (the middle of L1 and L3); data-bit errors against the pattern seed's data.")
def read_cmd(url, profile, seed, state, wiring, target, block, db, chip_label, take_over, as_json, page, pattern_seed, t,
             out_path, reduced_refs) -> None:
    """Read one page: bit errors per codeword against a pattern, and its raw bytes."""
    from pathlib import Path

    if reduced_refs is not None:
        _read_reduced(url, profile, seed, state, wiring, target, block, db, chip_label, take_over, as_json, page,
                      pattern_seed, t, out_path, reduced_refs)
        return

    def work(rig):
        r = rig.read(block, page, seed=pattern_seed, t=t, raw=bool(out_path))
        if out_path:
            Path(out_path).write_bytes(r.data)
        return {"op": "read", "block": block, "page": page, "status": f"0x{r.chip_status:02x}",
                "busy_us": r.busy_ns / 1e3, "errors": r.errors if pattern_seed is not None else None,
                "codewords": [{"err_1to0": c.err_1to0, "err_0to1": c.err_0to1, "corrected": c.corrected}
                              for c in r.codewords]}

    out = _by_hand(url, profile, seed, state, wiring, target, db, chip_label, take_over, block, page, False, work)
    text = f"read block {block} page {page}: busy {out['busy_us']:.0f} us"
    if out["errors"] is not None:
        cws = out["codewords"]
        text += (f"; {out['errors']} bit errors against pattern seed {pattern_seed} (1->0 "
                 f"{sum(c['err_1to0'] for c in cws)}, 0->1 {sum(c['err_0to1'] for c in cws)}) over {len(cws)} codewords")
        if t:
            text += f"; decoded at t={t}: " + (f"{sum(c['corrected'] == -1 for c in cws)} failed" if any(
                c["corrected"] == -1 for c in cws) else f"{sum(c['corrected'] for c in cws)} bits corrected")
    if out_path:
        text += f"; raw bytes in {out_path}"
    _say(out, as_json, text)


def _read_reduced(url, profile, seed, state, wiring, target, block, db, chip_label, take_over, as_json, page,
                  pattern_seed, t, out_path, reduced_refs: str) -> None:
    from pathlib import Path

    from nandrig.host.kinds.flexlevel import parse_reduced_refs, read_reduced

    if t:
        raise click.BadParameter("--reduced reads data without parity: not with --t")
    refs = parse_reduced_refs(reduced_refs, "--reduced")
    out = _by_hand(url, profile, seed, state, wiring, target, db, chip_label, take_over, block, page, False,
                   lambda rig: read_reduced(rig, block, page, refs, pattern_seed))
    data = out.pop("data")
    if out_path:
        Path(out_path).write_bytes(data)
    text = (f"read block {block} wordline {out['wordline']} (pages {out['pages'][0]}, {out['pages'][1]}) as reduced "
            f"state, VR2 {refs[0]:+d} VR3 {refs[1]:+d}: busy {out['busy_us']:.0f} us, {out['data_bits']} data bits")
    if out["errors"] is not None:
        text += f"; {out['errors']} data-bit errors against pattern seed {pattern_seed}"
    text += f"; {out['l3_l3_pairs']} cell pairs read (L3, L3)"
    if out_path:
        text += f"; data bytes in {out_path}"
    _say(out, as_json, text)


@click.command("link")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (the default output too).")
def bench_link_cmd(as_json) -> None:
    """Wire bytes per page of a 128-page MEASURE, and commands per second over TCP."""
    from nandrig.host.bench import bench_link

    click.echo(json.dumps(bench_link(), indent=2))


@click.command("policy")
@click.option("--chip", "profile", default="mlc-3x", show_default=True, help="Virtual chip profile.")
@click.option("--dies", type=click.IntRange(1, 1024), default=32, show_default=True, help="Dies: seeds 0..N-1.")
@click.option("--scale", type=click.FloatRange(0.01, 1.0), default=0.1, show_default=True,
              help="Fraction of the paper's operation counts.")
@click.option("--bound", type=click.FloatRange(0.5, 1.0, max_open=True), default=0.999, show_default=True,
              help="Confidence of the upper prediction bound the tables come from.")
@click.option("--jobs", type=click.IntRange(min=1), default=os.cpu_count() or 1, show_default="the cores",
              help="Dies measured at once.")
@click.option("--json", "as_json", is_flag=True, help="Print every configuration's figures as JSON.")
def bench_policy_cmd(profile, dies, scale, bound, jobs, as_json) -> None:
    """FLARES against guarded FLARES on virtual dies: every scenario x WSIZE x MIX x page type."""
    from nandrig.host.engine.policy_bench import bench_policy, summary_lines

    res = bench_policy(profile, dies, scale, bound, jobs)
    if as_json:
        click.echo(jsonsafe.dumps(res, indent=2))
        return
    for line in summary_lines(res):
        click.echo(line)


@click.command("workload")
@click.option("--requests", type=click.IntRange(min=1), default=1_000_000, show_default=True,
              help="Requests replayed, after the drive is filled once.")
@click.option("--workload", type=click.Choice(sorted(PROFILES)), default="zipf", show_default=True,
              help="The synthetic trace's profile.")
@click.option("--chip", "profile", default="mlc-3x", show_default=True, help="Virtual chip profile.")
@click.option("--blocks", type=click.IntRange(min=4), default=64, show_default=True,
              help="Blocks the FTL manages (at most the chip's).")
@click.option("--t", "ecc_t", type=click.IntRange(min=0), default=8, show_default=True, help="ECC strength, fixed.")
@click.option("--repeats", type=click.IntRange(min=1), default=1, show_default=True, help="Runs; the median reported.")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
def bench_workload_cmd(requests, workload, profile, blocks, ecc_t, repeats, as_json) -> None:
    """Replay speed of the FTL over the virtual rig (in process, statistical reads): requests per wall second."""
    from nandrig.host.workload.bench import bench_workload

    res = bench_workload(requests, workload, profile, blocks=blocks, t=ecc_t, repeats=repeats)
    if as_json:
        click.echo(jsonsafe.dumps(res, indent=2))
        return
    r = res["replay"]
    click.echo(f"{requests} {workload} requests on {profile} ({res['blocks']} blocks, t {ecc_t}): "
               f"{res['wall_s']} s wall (median of {repeats}), {res['requests_per_s']} requests/s, "
               f"{res['wall_per_1M_requests_min']} min per million")
    click.echo(f"replayed: write amplification {res['ftl']['write_amplification']}, "
               f"{r['damaged_reads']} reads lost, {res['ftl']['silent_caught']} miscorrections caught")


@click.group("workload")
def workload_grp() -> None:
    """Workloads replayed on an FTL over the rig: policies compared to the end of the flash's life."""


@workload_grp.command("lifetime")
@click.option("--chip", "profile", default="mlc-small", show_default=True, help="Virtual chip profile.")
@click.option("--seed", type=int, default=1, show_default=True, help="Virtual chip seed (every policy on this die).")
@click.option("--workload", type=click.Choice(sorted(PROFILES)), default="zipf", show_default=True,
              help="The synthetic trace's profile.")
@click.option("--reads", type=click.FloatRange(0.0, 1.0), help="Share of reads (default: the profile's).")
@click.option("--gap-us", type=click.FloatRange(min=0.0), help="Mean time between requests (default: the profile's).")
@click.option("--policies", default=",".join(POLICIES), show_default=True, help="ECC/density policies, comma-separated.")
@click.option("--models", default="mlc-3x-demo", show_default=True,
              help="Lower- and upper-page RBER models the policies' t comes from (a name or a `fit --save` file).")
@click.option("--rated-pe", type=click.IntRange(min=1), default=10_000, show_default=True,
              help="The wear fixed t is provisioned for.")
@click.option("--skip", type=click.IntRange(min=0), default=500, show_default=True,
              help="P/E cycles every block is aged by between replayed windows (0: every write replayed).")
@click.option("--over-provisioning", type=click.FloatRange(0.01, 0.89), default=0.1, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print every figure, windows and P/E map included, as JSON.")
@click.option("--csv", "csv_path", type=click.Path(dir_okay=False, writable=True),
              help="Write one row per policy and window here.")
@click.option("--report", "report_dir", type=click.Path(file_okay=False),
              help="Write a report page here (index.html): the policies against wear, as EF3S plots them.")
def workload_lifetime_cmd(profile, seed, workload, reads, gap_us, policies, models, rated_pe, skip,
                          over_provisioning, as_json, csv_path, report_dir) -> None:
    """Each policy on a fresh virtual chip of one die, the workload run to the flash's end: side by side."""
    import dataclasses

    from nandrig.host.workload.evaluate import lifetime_per_policy, summary_lines, write_csv

    names = [p.strip() for p in policies.split(",") if p.strip()]
    unknown = [n for n in names if n not in POLICIES]
    if unknown or not names:
        raise click.UsageError(f"--policies: {', '.join(unknown) or 'none'}; choose from {', '.join(POLICIES)}")
    shape = PROFILES[workload]
    shape = dataclasses.replace(shape, **{k: v for k, v in (("reads", reads), ("gap_us", gap_us)) if v is not None})
    res = lifetime_per_policy(names, shape, profile, seed, models, rated_pe, skip, over_provisioning)
    if csv_path:
        write_csv(res, csv_path)
    if report_dir:
        from nandrig.host.views.report_workload import lifetime_page

        click.echo(f"report: {lifetime_page(res, summary_lines(res), report_dir)}", err=True)
    if as_json:
        click.echo(jsonsafe.dumps(res, indent=2))
        return
    for line in summary_lines(res):
        click.echo(line)


@workload_grp.command("cache")
@click.option("--chip", "profile", default="mlc-small", show_default=True, help="Virtual chip profile.")
@click.option("--seed", type=int, default=1, show_default=True, help="Virtual chip seed (every controller on this die).")
@click.option("--controllers", default=",".join(CACHE_CONTROLLERS), show_default=True,
              help="bch1 (Kgil's baseline), fixed, flares, flares+density; comma-separated.")
@click.option("--reads", type=click.FloatRange(0.0, 1.0), default=0.9, show_default=True, help="Share of reads.")
@click.option("--zipf", "zipf_s", type=click.FloatRange(1.0, min_open=True), default=1.2, show_default=True,
              help="The server workload's zipf exponent over a working set twice the flash.")
@click.option("--window", type=click.IntRange(min=100), default=5000, show_default=True, help="Requests per window.")
@click.option("--skip", type=click.IntRange(min=0), default=200_000, show_default=True,
              help="Requests' worth of wear given in bulk between windows (0: every request replayed).")
@click.option("--json", "as_json", is_flag=True, help="Print every figure, windows included, as JSON.")
def workload_cache_cmd(profile, seed, controllers, reads, zipf_s, window, skip, as_json) -> None:
    """Kgil's flash disk cache on a synthetic server workload: hit rate and lifetime per controller."""
    from nandrig.host.workload.evaluate import cache_lifetime_per_controller, cache_summary_lines

    names = [p.strip() for p in controllers.split(",") if p.strip()]
    unknown = [n for n in names if n not in CACHE_CONTROLLERS]
    if unknown or not names:
        raise click.UsageError(f"--controllers: {', '.join(unknown) or 'none'}; choose from "
                               f"{', '.join(CACHE_CONTROLLERS)}")
    shape = Synthetic("zipf", reads=reads, size=2048, zipf_s=zipf_s, gap_us=1000.0)
    res = cache_lifetime_per_controller(names, shape, profile, seed, window=window, skip=skip)
    if as_json:
        click.echo(jsonsafe.dumps(res, indent=2))
        return
    for line in cache_summary_lines(res):
        click.echo(line)


@workload_grp.command("accesseval")
@click.option("--chip", "profile", default="mlc-3x", show_default=True, help="Virtual chip profile (with a read-retry table).")
@click.option("--seed", type=int, default=1, show_default=True, help="Virtual chip seed (both policies on this die).")
@click.option("--blocks", default="0-31", show_default=True,
              help="The FTL's blocks (at least 8): ranges A-B and blocks, comma-separated.")
@click.option("--pe", type=click.IntRange(min=0), default=10_000, show_default=True, help="Wear the blocks are cycled to first.")
@click.option("--retention", default="1y", show_default=True, help="Idle time after the data is written (30d, 1y, ...).")
@click.option("--requests", type=click.IntRange(min=1), default=5000, show_default=True, help="Requests replayed.")
@click.option("--reads", type=click.FloatRange(0.0, 1.0), default=0.9, show_default=True, help="Share of reads.")
@click.option("--zipf", "zipf_s", type=click.FloatRange(1.0, min_open=True), default=1.2, show_default=True,
              help="The workload's zipf exponent over the logical space.")
@click.option("--gap-us", type=click.FloatRange(min=0), default=2000.0, show_default=True,
              help="Mean time between requests (exponential).")
@click.option("--hot-reads", type=click.IntRange(min=1), default=4, show_default=True,
              help="AccessEval: host reads since written that make a page hot.")
@click.option("--min-levels", type=click.IntRange(min=1), default=2, show_default=True,
              help="AccessEval: sensing levels a hot page's read must need to move it.")
@click.option("--reduced-refs", default="60,-60", show_default=True,
              help="VR2,VR3 read-retry offsets that read a reduced wordline (the middle of L1 and L3).")
@click.option("--over-provisioning", type=click.FloatRange(0.0, 0.9, min_open=True, max_open=True), default=0.1,
              show_default=True, help="Share of the good blocks' capacity kept from the host.")
@click.option("--sensing", "sensing_file", type=click.Path(dir_okay=False), default=None,
              help="Sensing table (JSON, host/ftl/sensing.py); default: the one measured on the virtual mlc-3x.")
@click.option("--json", "as_json", is_flag=True, help="Print every figure as JSON.")
def workload_accesseval_cmd(profile, seed, blocks, pe, retention, requests, reads, zipf_s, gap_us, hot_reads,
                            min_levels, reduced_refs, over_provisioning, sensing_file, as_json) -> None:
    """FlexLevel's AccessEval: an LDPC drive with and without it on aged, retained data and a read-heavy workload."""
    from nandrig.host.ftl.policy import AccessEval
    from nandrig.host.ftl.sensing import DEFAULT, SensingReach
    from nandrig.host.engine.chip_access import parse_blocks
    from nandrig.host.kinds.base import parse_hours
    from nandrig.host.kinds.flexlevel import parse_reduced_refs
    from nandrig.host.workload.access_eval import compare, summary_lines

    refs = parse_reduced_refs(reduced_refs, "--reduced-refs")
    with open_rig("sim", profile, seed, None) as rig:  # the chip's geometry, as every campaign reads it
        chosen = parse_blocks(blocks, rig.info().blocks)
    hours = parse_hours(retention)
    if len(hours) != 1:
        raise click.BadParameter(f"one duration, not {retention!r}", param_hint="--retention")
    res = compare(SensingReach.load(sensing_file or DEFAULT), AccessEval(hot_reads, min_levels, refs),
                  Synthetic("zipf", reads=reads, zipf_s=zipf_s, gap_us=gap_us), requests, chip=profile, seed=seed,
                  blocks=chosen, pe=pe, retention_h=hours[0], over_provisioning=over_provisioning)
    if as_json:
        click.echo(jsonsafe.dumps(res, indent=2))
        return
    for line in summary_lines(res):
        click.echo(line)


# -- campaigns ------------------------------------------------------------------------
def _common(f):
    opts = [
        click.option("--rig", "url", required=True, help="sim, socket://host:port, /dev/ttyUSB0, or any pyserial URL."),
        click.option("--db", "db", required=True, type=DatabaseLocation(), help=f"Measurement database: {DB_HELP}"),
        click.option("--chip", "profile", default="mlc-3x", show_default=True, help="Chip profile (--rig sim)."),
        click.option("--seed", type=int, default=0, show_default=True, help="Chip seed (--rig sim)."),
        click.option("--chip-label", help="Name of this physical chip (real rigs; default: read ID and model)."),
        click.option("--target", default="0", show_default=True,
                     help="The chip on the rig's CE# K (a rig with several; nandrig rig info lists them); several "
                          "(0-3, 0,2): a campaign on each target's chip, the same blocks, run at once."),
        click.option("--blocks", required=True,
                     help="Blocks the campaign reserves: ranges A-B (inclusive) and blocks, comma-separated; "
                          "factory bad blocks among them are left out."),
        click.option("--pattern-seed", type=int, default=1, show_default=True, help="Seed of the PRBS data patterns."),
        click.option("--take-over", is_flag=True, help="Take the rig from another host session holding it (it "
                     "keeps it until it ends or dies; this database's own dead campaigns' sessions are taken back "
                     "without asking)."),
        click.option("--link-patience", type=click.FloatRange(min=1), default=120, show_default=True,
                     help="Seconds of nothing but damaged replies before a noisy link is given up on."),
        click.option("--json", "as_json", is_flag=True, help="End with the campaign's results as JSON."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


@click.group("run")
def run_grp() -> None:
    """Start a characterization campaign (it can be resumed if interrupted)."""


def _start(url, db, profile, seed, chip_label, target, blocks, take_over, patience_s, kind: str, params: dict,
           as_json: bool = False) -> None:
    from nandrig.host.engine.campaigns import check_plan, create, run
    from nandrig.host.engine.chip_access import format_blocks, known_chip, open_for_chip, parse_blocks, parse_targets
    from nandrig.host.storage.store import Store

    targets = parse_targets(target)
    if len(targets) > 1:
        _start_on_targets(url, db, chip_label, targets, blocks, take_over, patience_s, kind, params, as_json)
        return
    target = targets[0]
    store = Store(db)
    try:
        # the database first: a damaged one or blocks another campaign holds are refused before a rig is taken
        store.check_integrity()
        known = known_chip(store, url, profile, seed, chip_label)
        if known is not None:
            chosen = parse_blocks(blocks, store.chip(known)["blocks"])
            store.check_free(known, chosen)
            check_plan(store, known, kind, {**params, "blocks": chosen, "oven": params.get("oven") or "virtual"})
        if (params.get("oven") or "").startswith(SCPI):  # a chamber that does not answer stops us before any wear
            temp = make_oven(params["oven"], params.get("chamber")).measure()
            click.echo(f"chamber {params['oven'][len(SCPI):]} answers: {temp:g} degC", err=True)
        rig, chip_id = open_for_chip(store, url, profile, seed, chip_label, take_over=take_over, patience_s=patience_s,
                                     target=target)
        with rig:
            params = {"blocks": parse_blocks(blocks, rig.info().blocks), **params}
            if params.get("oven") is None:
                params["oven"] = "virtual" if url == "sim" else "wall"
            if params["oven"] == "virtual" and not rig.hello_info.capabilities & Cap.VIRTUAL_TIME:
                raise click.BadParameter("--oven virtual needs a simulated rig; use --oven wall or manual")
            cid = create(store, rig, chip_id, kind, params, url, skip_bad=True,
                         echo=lambda m: click.echo(m, err=True))
            c = store.campaign(cid)
            click.echo(f"campaign {cid}: {kind} on blocks {format_blocks(list(c.blocks))} ({c.steps} steps) "
                       f"in {db}", err=True)
            c = _interruptible(store, cid, lambda: run(store, rig, cid))
        _ended(store, c, as_json)
    finally:
        store.close()


def _start_on_targets(url, db, chip_label, targets: list[int], blocks, take_over, patience_s, kind: str,
                      params: dict, as_json: bool) -> None:
    """A campaign on each target's chip of one rig, the same parameters, run at once over one link."""
    from nandrig.host.engine.campaigns import check_plan, create
    from nandrig.host.engine.chip_access import chip_on, dead_sessions, format_blocks, parse_blocks
    from nandrig.host.engine.together import check_oven, run_together
    from nandrig.host.link.shared import open_targets
    from nandrig.host.storage.store import Store

    if chip_label:
        raise click.BadParameter("--chip-label names one chip: with several targets each chip is known by its unique "
                                 "ID (name them one target at a time first)")
    params = {**params, "oven": params.get("oven") or "wall"}
    store = Store(db)
    try:
        store.check_integrity()
        rigs = open_targets(url, targets, take_over=dead_sessions(store, take_over), patience_s=patience_s)
        try:
            chips = {k: chip_on(store, rigs[k], url) for k in targets}
            if len(set(chips.values())) < len(chips):
                raise NandrigError("two targets hold the same chip (one unique ID): " + ", ".join(
                    f"target {k}: {store.chip(i)['label']}" for k, i in chips.items()))
            chosen = {k: parse_blocks(blocks, rigs[k].info().blocks) for k in targets}
            for k in targets:  # every chip's plan checked before any campaign is made
                store.check_free(chips[k], chosen[k])
                kd, p, g = check_plan(store, chips[k], kind, {**params, "blocks": chosen[k]})
                check_oven(f"a {kind} campaign", params["oven"], kd.plan(p, g))
            cids = [create(store, rigs[k], chips[k], kind, {**params, "blocks": chosen[k]}, url, skip_bad=True,
                           echo=lambda m, k=k: click.echo(f"target {k}: {m}", err=True)) for k in targets]
        except BaseException:
            for r in rigs.values():
                r.close()
            raise
        for cid in cids:
            c = store.campaign(cid)
            click.echo(f"campaign {cid}: {kind} on target {c.target} ({store.chip(c.chip_id)['label']}), blocks "
                       f"{format_blocks(list(c.blocks))} ({c.steps} steps) in {db}", err=True)
        stopped = _interruptible(store, None, lambda: run_together(
            store.location, url, cids, rigs=rigs, echo=lambda m: click.echo(m, err=True)))
        if as_json:
            click.echo(json.dumps([_outcome(store, store.campaign(cid)) for cid in cids], indent=2))
        else:
            for cid in cids:
                _ended(store, store.campaign(cid), where=True)
    finally:
        store.close()
    if stopped:
        raise NandrigError(f"{len(stopped)} of {len(cids)} campaigns stopped short ("
                           + "; ".join(f"campaign {i}: {why}" for i, why in stopped) + ")")


def _results(store, c) -> dict | None:
    """A done campaign's results as its kind states them (None: not done, or a kind without)."""
    k = KINDS.get(c.kind)
    return k.results(store, c, k.params.from_mapping(c.params), store.page_map(c.chip_id)) \
        if k and k.results and c.state == "done" else None


def _outcome(store, c) -> dict:
    """A campaign's state and, when done, its results, as JSON holds them."""
    from nandrig.host.views.summary import summary

    res = _results(store, c)
    return {"campaign": c.id, "kind": c.kind, "state": c.state,
            **(res if res is not None else {"summary": summary(store, c) if c.state == "done" else []})}


def _ended(store, c, as_json: bool = False, where: bool = False) -> None:
    """A campaign's last word: its state and, when done, a summary of its results (or they, as JSON); ``where``:
    its target and chip named (one of several run at once)."""
    from nandrig.host.views.summary import summary

    if c.state == "done" and (validation := store.flares_run_of(c.id)) is not None:
        _validation_said(validation, as_json)
        return
    if as_json:
        click.echo(json.dumps(_outcome(store, c), indent=2))
        return
    k = KINDS.get(c.kind)
    res = _results(store, c)
    click.echo(f"campaign {c.id} {c.state}" + (f" (target {c.target}, {store.chip(c.chip_id)['label']})" if where else ""))
    for line in (summary(store, c) + (k.summary(res) if res and k.summary else []) if c.state == "done" else []):
        click.echo(line)


def _interruptible(store, campaign_id: int | None, work):
    """Ctrl-C, a full disk or a failing file end ``work`` with where each unfinished campaign stands and how to
    go on (every step before is committed; the one under way is journaled)."""
    from nandrig.errors import Interrupted, NandrigError
    from nandrig.host.engine.campaigns import position
    from nandrig.host.storage.databases import connection_errors, database_errors, first_line

    def where() -> str:
        try:
            left = [c for c in store.campaigns() if c.state == "running" and campaign_id in (None, c.id)]
        except database_errors():  # the database itself went away: what it holds says where
            return "every step before is in the database"
        return "; ".join(f"campaign {c.id} at {position(c)}" for c in left) or "nothing left undone"

    try:
        return work()
    except KeyboardInterrupt:
        raise Interrupted(f"{where()}: `nandrig resume --db {store.name}` continues exactly there") from None
    except (OSError, *connection_errors()) as e:
        cause = (f"{e.strerror} ({e.filename})" if e.filename else e.strerror) if isinstance(e, OSError) and \
            e.strerror else f"database {store.name}: {first_line(e)}"
        raise NandrigError(f"{cause}: {where()}; `nandrig resume --db {store.name}` continues there once that is "
                           "fixed") from None


def _kind_command(k: CampaignKind) -> click.Command:
    """``nandrig run NAME``: the common options, then the ones the kind declares."""

    def start(url, db, profile, seed, chip_label, target, blocks, pattern_seed, take_over, link_patience, as_json,
              **opts) -> None:
        _start(url, db, profile, seed, chip_label, target, blocks, take_over, link_patience, k.name,
               {"seed": pattern_seed, **k.from_cli(**opts)}, as_json)

    for option in reversed(k.options):
        start = option(start)
    return click.command(k.name, help=k.help)(_common(start))


for _k in KINDS.values():
    run_grp.add_command(_kind_command(_k))


@run_grp.command("flares-validate")
@click.option("--rig", "url", required=True, help="sim, socket://host:port, or a serial port.")
@click.option("--chip", "profile", default="mlc-3x", show_default=True, help="Chip profile (--rig sim).")
@click.option("--seed", type=int, default=0, show_default=True, help="Chip seed (--rig sim).")
@click.option("--params", "params_name", help="RBER model behind FLARES' tables (a name or a `nandrig fit --save` "
              "file; one with lower- and upper-page models gives each page type its own); default: calibrate one "
              "per page type on 8 more fresh blocks. With --on-rig the rig is sent tables made from them "
              "(--params flares-taco2014: the tables compiled into it).")
@click.option("--blocks", help="Fresh blocks the validation may wear: ranges A-B and blocks, comma-separated; it "
              "takes 7 (one per operating point, long retention, continuous wear) and 8 more to calibrate the model; "
              "factory bad blocks are left out.  [default: the chip's first good blocks]")
@click.option("--wordline", type=click.IntRange(min=0), help="Wordline whose lower and upper pages are under test "
              "(default: the block's middle one).")
@click.option("--scale", type=click.FloatRange(0.01, 1.0), default=1.0, show_default=True,
              help="Fraction of the paper's operation counts (for quick looks).")
@click.option("--on-rig", is_flag=True, help="Let the rig run FLARES (with tables sent to it, its BCH decoder) instead "
              "of replaying FLARES on the host over the measured errors.")
@click.option("--wsize", type=click.IntRange(1, 1024), help="WSIZE for --on-rig.  [default: 10]")
@click.option("--mix", type=click.FloatRange(0.0, 1.0), help="MIX for --on-rig.  [default: 0.5]")
@click.option("--evaluate-on-alarm", is_flag=True, help="With --on-rig: a rewrite alarm does not end FLARES' "
              "evaluation (the paper's Alg. 2 stops; docs/flares.md). Host replays try both.")
@click.option("--density-control/--no-density-control", default=True, show_default=True,
              help="With --on-rig: a block whose page FLARES finds beyond the rig's ECC runs as pseudo-SLC from its "
                   "next erase (lower pages only), and is retired when that is not enough either.")
@click.option("--policy", type=click.Choice(["flares", "guarded"]), default="flares", show_default=True,
              help="FLARES as the paper has it, or guarded FLARES (docs/flares.md): never below the model's "
                   "projection, raised when the page type's measured errors exceed what the model expects, a rewrite "
                   "alarm when a read uses more than 3/4 of its t. Use it with --bound.")
@click.option("--bound", type=click.FloatRange(0.5, 1.0, max_open=True), metavar="CONF",
              help="Make the calibrated models their upper prediction bound at this one-sided confidence (e.g. 0.999: "
                   "the blocks' scatter about the fit and the fit's own uncertainty), not the fitted curve.")
@click.option("--db", type=DatabaseLocation(),
              help="The chip's database: blocks campaigns hold or that carry wear are refused, the wear this run "
                   "gives is recorded, the run is stored for `nandrig report` (needed on a real rig).")
@click.option("--chip-label", help="Name of this physical chip in --db (real rigs; default: its unique ID).")
@click.option("--take-over", is_flag=True, help="Take the rig from another host session holding it.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
def run_flares_validate(url, profile, seed, params_name, blocks, wordline, scale, on_rig, wsize, mix,
                        evaluate_on_alarm, density_control, policy, bound, db, chip_label, take_over, as_json) -> None:
    """Validate FLARES against errors measured on the rig (the paper's Sec. 5.1 experiments)."""
    from nandrig.characterization.flares import FlaresConfig
    from nandrig.characterization.rber import load_models
    from nandrig.host.engine.flares_validate import start_campaign, validate_blocks
    from nandrig.host.link.rig import Rig

    if not on_rig and (wsize is not None or mix is not None or evaluate_on_alarm):
        raise click.UsageError("--wsize, --mix and --evaluate-on-alarm set FLARES in the rig: use them with --on-rig "
                               "(host replays try WSIZE 10 and 100, MIX 0, 0.5 and 1, an alarm stopping and not)")
    if bound is not None and params_name:
        raise click.UsageError("--bound bounds the model calibrated on the chip's own blocks (its rows' scatter): "
                               "leave out --params")
    live = FlaresConfig(wsize=wsize or 10, mix_pm=round(1000 * (0.5 if mix is None else mix)),
                        evaluate_on_alarm=evaluate_on_alarm, guarded=policy == "guarded") if on_rig else None
    params = load_models(params_name) if params_name else None
    echo = (lambda s: None) if as_json else (lambda s: click.echo(s, err=True))
    if db is None:
        if url != "sim":
            raise click.BadParameter("this wears a real chip's blocks: name its database (--db) so their wear is "
                                     "recorded and campaigns' blocks are left alone")
        with Rig.open(url, chip=profile, seed=seed, take_over=take_over) as rig:
            result, _ = validate_blocks(rig, blocks, wordline, params, scale, echo, live, density_control, bound,
                                        policy == "guarded")
    else:
        from nandrig.host.storage.store import Store

        store = Store(db)  # what Ctrl-C leaves running is said from it
        try:
            result, _ = _interruptible(store, None, lambda: start_campaign(
                db, url, profile, seed, chip_label, take_over, blocks, wordline, params, scale, echo, live,
                density_control, bound, policy == "guarded"))
        finally:
            store.close()
    _validation_said(result, as_json)


@run_grp.command("workload")
@click.option("--rig", "url", required=True, help="sim, socket://host:port, or a serial port.")
@click.option("--db", type=DatabaseLocation(), required=True,
              help="The chip's database: the blocks are reserved there, every request journaled (resume continues "
                   "after a kill), the result stored for `nandrig report`.")
@click.option("--chip", "profile", default="mlc-small", show_default=True, help="Chip profile (--rig sim).")
@click.option("--seed", type=int, default=0, show_default=True, help="Chip seed (--rig sim).")
@click.option("--chip-label", help="Name of this physical chip in --db (real rigs; default: its unique ID).")
@click.option("--blocks", required=True, help="Blocks the FTL manages (reserved): ranges A-B and blocks, "
              "comma-separated; factory bad blocks among them are left out.")
@click.option("--workload", type=click.Choice(sorted(PROFILES)), default="zipf", show_default=True,
              help="A synthetic trace's profile (without --trace).")
@click.option("--trace", "trace_path", type=click.Path(dir_okay=False), help="A block trace file to replay instead.")
@click.option("--format", "trace_format", type=click.Choice(FORMATS), help="The trace file's format (with --trace).")
@click.option("--requests", type=click.IntRange(min=1), help="Requests replayed after the fill (a trace: its first "
              "ones; default: all of it).  [synthetic default: 10000]")
@click.option("--reads", type=click.FloatRange(0.0, 1.0), help="Share of reads (synthetic; default: the profile's).")
@click.option("--gap-us", type=click.FloatRange(min=0.0), help="Mean time between requests (synthetic; default: the "
              "profile's).")
@click.option("--trace-seed", type=int, default=1, show_default=True, help="Seed of the synthetic trace.")
@click.option("--policy", type=click.Choice(POLICIES), default="flares", show_default=True,
              help="ECC/density policy: t and pseudo-SLC per block (docs/workloads.md).")
@click.option("--models", default="mlc-3x-demo", show_default=True,
              help="Lower- and upper-page RBER models the policy's t comes from (a name or a `fit --save` file).")
@click.option("--rated-pe", type=click.IntRange(min=1), default=10_000, show_default=True,
              help="The wear fixed t is provisioned for.")
@click.option("--over-provisioning", type=click.FloatRange(0.01, 0.89), default=0.1, show_default=True)
@click.option("--victim", type=click.Choice([v.value for v in Victim]), default="greedy", show_default=True,
              help="Garbage collection's choice of block.")
@click.option("--fill/--no-fill", default=True, show_default=True,
              help="Write every logical page once before the trace (a drive in use, not a new one).")
@click.option("--checkpoint-every", "checkpoint_s", type=click.FloatRange(min=0.1),
              help="Seconds of wall time between checkpoints (default 5): at most what a resumed run answers from "
              "its record.")
@click.option("--take-over", is_flag=True, help="Take the rig from another host session holding it.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def run_workload(url, db, profile, seed, chip_label, blocks, workload, trace_path, trace_format, requests, reads,
                 gap_us, trace_seed, policy, models, rated_pe, over_provisioning, victim, fill, checkpoint_s, take_over,
                 as_json) -> None:
    """Replay a workload on the FTL over reserved blocks of the rig's chip: throughput, latency, energy, write
    amplification, errors and wear, as a resumable campaign."""
    from nandrig.characterization.rber import load_models
    from nandrig.host.engine.workload_run import start_campaign, text_lines, trace_of
    from nandrig.host.storage.store import Store

    if trace_path and (reads is not None or gap_us is not None):
        raise click.UsageError("--reads and --gap-us shape a synthetic trace: a trace file has its own")
    if bool(trace_path) != bool(trace_format):
        raise click.UsageError("--trace and --format go together: the file and its format (msr, blkparse or fio)")
    if trace_path:
        trace = trace_of(trace_path, trace_format, requests)
    else:
        shape = PROFILES[workload]
        shape = dataclasses.replace(shape, **{k: v for k, v in (("reads", reads), ("gap_us", gap_us)) if v is not None})
        trace = {"synthetic": dataclasses.asdict(shape), "seed": trace_seed, "requests": requests or 10_000}
    found = load_models(models)
    lower, upper = found if len(found) == 2 else (found[0], found[0])  # one model: both page types'
    echo = (lambda s: None) if as_json else (lambda s: click.echo(s, err=True))
    store = Store(db)  # what Ctrl-C leaves running is said from it
    try:
        result, _ = _interruptible(store, None, lambda: start_campaign(
            db, url, profile, seed, chip_label, take_over, blocks, trace, policy, models, lower, upper, rated_pe,
            over_provisioning, victim, fill, echo, checkpoint_s))
    finally:
        store.close()
    if as_json:
        click.echo(jsonsafe.dumps(result, indent=2))
        return
    for line in text_lines(result):
        click.echo(line)


def _validation_said(result: dict, as_json: bool) -> None:
    from nandrig.host.engine.flares_validate import dumps, text_lines

    if as_json:
        click.echo(dumps(result))
        return
    for line in text_lines(result):
        click.echo(line)


@click.command("resume")
@click.option("--db", "db", required=True, type=DatabaseLocation(exists=True), help=DB_HELP)
@click.option("--campaign", "campaign_id", type=int, help="Only this campaign.")
@click.option("--rig", "url", help="Rig URL, when it moved since the campaign started (real rigs).")
@click.option("--target", type=click.IntRange(0, Limit.TARGETS_MAX - 1),
              help="With --campaign: its chip moved to this socket of the rig (checked by its unique ID).")
@click.option("--take-over", is_flag=True, help="Take the rig from another host session holding it.")
@click.option("--link-patience", type=click.FloatRange(min=1), default=120, show_default=True,
              help="Seconds of nothing but damaged replies before a noisy link is given up on.")
def resume_cmd(db, campaign_id, url, target, take_over, link_patience) -> None:
    """Continue interrupted campaigns exactly where they stopped."""
    from nandrig.host.engine.resume import resume
    from nandrig.host.storage.store import Store

    store = Store(db)
    not_resumed: list[tuple[int, str]] = []
    try:
        store.check_integrity()
        done = _interruptible(store, campaign_id, lambda: resume(
            store, campaign_id, url, echo=lambda s: click.echo(s, err=True), take_over=take_over,
            not_resumed=not_resumed, target=target, patience_s=link_patience))
        for c in done:
            _ended(store, c, where=len(done) > 1)
    finally:
        store.close()
    if not_resumed:
        raise NandrigError(f"{len(not_resumed)} campaign{'s' if len(not_resumed) > 1 else ''} not resumed "
                           f"({', '.join(str(i) for i, _ in not_resumed)}: why above); {len(done)} resumed")


@click.command("ls")
@click.option("--db", "db", required=True, type=DatabaseLocation(exists=True), help=DB_HELP)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per campaign, in a list.")
def ls_cmd(db, as_json) -> None:
    """List the campaigns in a database: running (live), interrupted (resume continues it), failed,
    cancelled or done."""
    from nandrig.host.engine.campaigns import summaries
    from nandrig.host.storage.store import Store

    store = Store(db, read_only=True)
    try:
        rows = summaries(store)
    finally:
        store.close()
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    head = {"id": "id", "kind": "kind", "state": "state", "step": "steps", "blocks": "blocks", "chip": "chip",
            "rig": "rig", "created": "created", "running_in": "running in"}
    cells = [head] + [{**r, "step": f"{r['step']}/{r['steps']}" if r["steps"] else f"{r['step']} requests"}
                      for r in rows]
    widths = {k: max(len(str(r[k])) for r in cells) for k in head}
    for r in cells:
        click.echo("  ".join(str(r[k]).rjust(widths[k]) if k in ("id", "step") else str(r[k]).ljust(widths[k])
                             for k in head).rstrip())


@click.command("cancel")
@click.option("--db", "db", required=True, type=DatabaseLocation(exists=True), help=DB_HELP)
@click.option("--campaign", "campaign_id", type=int, required=True)
@click.option("--rig", "url", help="Rig URL, when it moved since the campaign started (real rigs).")
@click.option("--take-over", is_flag=True, help="Take the rig from another host session holding it.")
def cancel_cmd(db, campaign_id, url, take_over) -> None:
    """End an interrupted campaign for good: its blocks are freed, their wear stays recorded (a request it had
    in flight is settled on its rig first, so what it did is counted)."""
    from nandrig.host.engine.campaigns import cancel
    from nandrig.host.engine.chip_access import format_blocks
    from nandrig.host.storage.store import Store

    store = Store(db)
    try:
        store.check_integrity()
        c = cancel(store, campaign_id, url, take_over)
    finally:
        store.close()
    click.echo(f"campaign {c.id} cancelled at step {c.step} of {c.steps}; blocks "
               f"{format_blocks(list(c.blocks))} freed")


@click.command("export")
@click.option("--db", "db", required=True, type=DatabaseLocation(exists=True), help=DB_HELP)
@click.option("--campaign", "campaign_id", type=int, required=True)
@click.option("--csv", "fmt", flag_value="csv", default=True, help="CSV (the default).")
@click.option("--parquet", "fmt", flag_value="parquet",
              help="Parquet, with each column's type and description (needs pandas and pyarrow: "
                   "pip install 'nandrig[analysis]'; and --out).")
@click.option("--per-page", is_flag=True, help="One row per page read instead of per checkpoint.")
@click.option("--by-block", is_flag=True,
              help="One row per checkpoint, block and page type: nandrig fit then fits each page type and puts "
                   "block-to-block variation in its intervals.")
@click.option("--bit-errors", is_flag=True, help="One row per flipped bit, with its page and direction (bitmap "
                                                "campaigns).")
@click.option("--ops", is_flag=True, help="One row per timed operation (erase, program, read): its P/E, busy time "
                                          "and, where the rig metered it, its energy.")
@click.option("--vth-states", is_flag=True, help="One row per state, condition and read-retry step: each state's Vth "
                                                 "density (vth-states campaigns).")
@click.option("--out", type=click.Path(dir_okay=False), help="Write here instead of standard output.")
def export_cmd(db, campaign_id, fmt, per_page, by_block, bit_errors, ops, vth_states, out) -> None:
    """Export one of a campaign's tables (units in the column names); the default CSV feeds `nandrig fit --csv`."""
    from pathlib import Path

    from nandrig.host.views.tables import csv_text, write_parquet
    from nandrig.host.storage.store import Store

    layouts = {"pages": per_page, "by_block": by_block, "bit_errors": bit_errors, "operations": ops,
               "vth_states": vth_states}
    if sum(layouts.values()) > 1:
        raise click.UsageError("--per-page, --by-block, --bit-errors, --ops and --vth-states are different tables: "
                               "choose one")
    name = next((n for n, on in layouts.items() if on), "checkpoints")
    if fmt == "parquet" and not out:
        raise click.UsageError("--parquet writes a file: give it --out FILE")
    store = Store(db, read_only=True)
    try:
        c = store.campaign(campaign_id)
        if fmt == "parquet":
            rows = write_parquet(store, c, name, out)
            click.echo(f"{name} of campaign {c.id}: {rows} rows in {out}", err=True)
            return
        text = csv_text(store, c, name)
    finally:
        store.close()
    if out:
        Path(out).write_text(text)
    else:
        click.echo(text, nl=False)


@click.command("serve")
@click.option("--db", "db", required=True, type=DatabaseLocation(exists=True), help=DB_HELP)
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (the page has no login: keep it on loopback unless the network is yours).")
@click.option("--port", type=click.IntRange(0, 65535), default=8080, show_default=True, help="0: any free port.")
@click.option("--refresh", "refresh_s", type=click.FloatRange(min=0.5), default=5.0, show_default=True,
              help="Seconds between the page's updates.")
def serve_cmd(db, host, port, refresh_s) -> None:
    """A live page of the database's campaigns: progress, P/E per block, the latest RBER and its plot."""
    from nandrig.host.views.live import serve

    serve(db, host, port, refresh_s, echo=lambda m: click.echo(m, err=True))


@click.command("report")
@click.option("--db", "db", required=True, type=DatabaseLocation(exists=True), help=DB_HELP)
@click.option("--out", "out", required=True, type=click.Path(file_okay=False), help="Folder for index.html and its plots.")
@click.option("--campaign", "campaign_ids", type=int, multiple=True,
              help="Report this campaign (repeat for more); default: every one.")
@click.option("--twin", "twin_paths", type=click.Path(dir_okay=False), multiple=True,
              help="A chip's twin (`nandrig sim profile --from-db`): its chip's campaigns run again on it and set "
              "against the chip's, with a verdict per campaign (repeatable).")
@click.option("--twin-db", type=click.Path(dir_okay=False),
              help="Keep the twin's runs in this new database (one --twin); default: a scratch one, removed.")
def report_cmd(db, out, campaign_ids, twin_paths, twin_db) -> None:
    """Write an HTML report with plots, tables and the data as CSV of the database's campaigns."""
    from nandrig.host.views.report import write_report

    page = write_report(db, out, list(campaign_ids) or None, twin_paths, twin_db,
                        echo=lambda m: click.echo(m, err=True) if sys.stderr.isatty() else None)
    click.echo(f"report: {page.resolve()}")
