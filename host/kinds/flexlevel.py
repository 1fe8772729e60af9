"""FlexLevel's questions measured: soft reads at 1, 2, ... sensing levels after wear and retention, each page's
bits turned into LLRs, and the rate-8/9 LDPC code decoding frames cut from them (characterization/soft_read.py,
characterization/ldpc_code.py): raw BER, the sensing levels a frame error rate needs, decoder iterations and the
read latency each level costs, per page type, wear and retention.

The blocks are split into one group per wear level and cycled there (their last round programs the pattern);
at each retention point every page is read raw once per sensing level, the references moved by that level's
offset (every reference at once: a lower page reads at VR2, an upper page at VR1 and VR3), and where each bit
error is goes to the store. Nothing is decoded on the rig: the analysis runs on what the store holds.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import click
import numpy as np

from nandrig.characterization import bitmaps, reduced_level
from nandrig.characterization.ldpc_code import LdpcDecoder, QcLdpcCode
from nandrig.characterization.soft_read import (
    MAX_LEVELS, decode_levels, frames_to_show, levels_needed, sensing_offsets,
)
from nandrig.chip.geometry import Geometry, PageMap, PageType
from nandrig.chip.param_page import ParameterPage
from nandrig.chip.pattern import bits, page_bits, page_seed, prbs31_bytes
from nandrig.chip.read_retry import require_offsets, require_table, require_verify
from nandrig.chip.timing import limit_ns
from nandrig.errors import NandrigError
from nandrig.host.kinds import steps
from nandrig.host.kinds.base import OVEN_OPTIONS, CampaignKind, KindParams, oven_fields, parse_hours, parse_int_list

FER_TARGET = 1e-3  # FlexLevel's frame error rate
REDUCED = "reduced"  # the label's end of reduced-state reads
REDUCED_SEED_BASE = 1 << 20  # reduced wordlines' data seeds, apart from the pages' (page_seed(seed, block, page))


@dataclass(frozen=True)
class FlexLevelParams(KindParams):
    pe: tuple[int, ...]  # one wear level per group of blocks
    retention_h: tuple[float, ...]  # read at each (25 degC-equivalent hours since programming, rising; 0: fresh)
    levels: int = 5  # sensing levels of the soft read (1: hard reads only)
    step: int = 4  # read-retry steps between sensing levels
    pages: tuple[int, ...] = ()  # pages read in each block; () for all
    # reduced state: each wear group's second half of blocks holds three levels per cell (ReduceCode), read with
    # VR2 and VR3 at these offsets (the middle of L1 and L3, from a vth-states sweep); () for none
    reduced_refs: tuple[int, ...] = ()
    # NUNMA: the reduced blocks' upper pages programmed with PV1..PV3 at these offsets (the design's verify-level
    # feature), so their levels sit where the margins should be; () for the design's levels
    reduced_verify: tuple[int, ...] = ()


def _label(hours: float, offset: int) -> str:
    """A checkpoint's label: its retention point and sensing offset (each level's reads are a checkpoint)."""
    return f"{hours:g}h at {offset:+d}"


def _hours(label: str) -> float:
    return float(label.split("h")[0])


def _split(p: FlexLevelParams, grp: list[int]) -> tuple[list[int], list[int]]:
    """A wear group's blocks in normal state and in reduced state (its second half, with --reduced-refs)."""
    if not p.reduced_refs:
        return grp, []
    if len(grp) < 2:
        raise NandrigError(f"reduced state takes half of each wear level's blocks: {len(grp)} block(s) per level "
                           "leave none for it (give at least two per --pe level)")
    return grp[:len(grp) // 2], grp[len(grp) // 2:]


def reduced_data(seed: int, block: int, wordline: int, raw_page_bytes: int) -> np.ndarray:
    """The data bits a reduced wordline stores: the campaign's pattern, seeded per block and wordline."""
    n = reduced_level.data_bits_per_wordline(raw_page_bytes)
    return bits(prbs31_bytes(page_seed(seed, block, REDUCED_SEED_BASE + wordline), n // 8))[:n]


def reduced_page(seed: int, block: int, page: int, pages_per_block: int, raw_page_bytes: int) -> bytes:
    """One page's bytes of a reduced block (its share of its wordline's levels; the common MLC page map)."""
    wl, t = PageMap.shuffled_mlc(pages_per_block).pages[page]
    return reduced_level.wordline_pages(reduced_data(seed, block, wl, raw_page_bytes))[t]


def read_reduced(rig, block: int, page: int, refs: tuple[int, int], seed: int | None) -> dict:
    """Page ``page``'s wordline read as reduced state by hand: both its pages with VR2 and VR3 at ``refs`` (the
    references back at 0 after), its cells' levels checked (a wordline not in reduced state refused), its data bits
    decoded and, with ``seed``, compared with what ``reduced_page`` programs."""
    info = rig.info()
    require_table(info.manufacturer, info.model).check((0, *refs))
    pm = PageMap.shuffled_mlc(info.pages_per_block)
    wl = pm.wordline(page)
    pages = [pm.page_of(wl, t) for t in PageType]
    rig.set_read_refs(0, *refs)
    try:
        reads = [rig.read(block, p, raw=True) for p in pages]
    finally:
        rig.set_read_refs(0, 0, 0)
    levels = reduced_level.levels_read(*(bits(r.data) for r in reads))
    forbidden = reduced_level.check_reduced(levels, f"block {block} wordline {wl} (pages {pages[0]} and {pages[1]})")
    data, _ = reduced_level.bits_of(levels)
    errors = None if seed is None else int(np.sum(data != reduced_data(seed, block, wl, info.raw_page_bytes)))
    return {"op": "read", "block": block, "page": page, "wordline": wl, "pages": pages, "refs": list(refs),
            "busy_us": sum(r.busy_ns for r in reads) / 1e3, "data_bits": int(data.size), "errors": errors,
            "l3_l3_pairs": forbidden, "data": np.packbits(data).tobytes()}


def _reduced_pages(seed: int, block: int, g: Geometry) -> list[bytes]:
    """Every page's bytes of a block in reduced state, in page order (the common MLC page map)."""
    pm = PageMap.shuffled_mlc(g.pages_per_block)
    out: list[bytes] = [b""] * g.pages_per_block
    for wl in range(g.wordlines):
        lower, upper = reduced_level.wordline_pages(reduced_data(seed, block, wl, g.raw_page_bytes))
        out[pm.page_of(wl, PageType.LOWER)], out[pm.page_of(wl, PageType.UPPER)] = lower, upper
    return out


def plan(p: FlexLevelParams, g: Geometry) -> list[steps.Step]:
    pages = list(p.pages) or list(range(g.pages_per_block))
    for page in pages:
        steps.check_page(page, g, "--pages")
    groups = [_split(p, grp) for grp in steps.groups(list(p.blocks), len(p.pe))]
    out = steps.cycle_groups_but_last_round([normal + red for normal, red in groups], p.pe, p.seed, p.worn)
    reduced_pages: dict[int, list[bytes]] = {}
    for (normal, red), pe in zip(groups, p.pe):
        out += steps.cycle_to(normal, pe - 1, pe, p.seed, worn=p.worn)
        if red and p.reduced_verify:  # the levels moved for these programs alone: the next group cycles at the design's
            out.append(steps.SetVerify(tuple(p.reduced_verify)))
        for b in red:  # the last round by hand: an erase, then every page with its share of the wordline's levels
            reduced_pages[b] = _reduced_pages(p.seed, b, g)
            out.append(steps.Erase(b, pe))
            out += [steps.Program(b, page, pe=pe, data=data) for page, data in enumerate(reduced_pages[b])]
        if red and p.reduced_verify:
            out.append(steps.SetVerify((0, 0, 0)))
    now = 0.0
    for hours in p.retention_h:
        if hours > now:
            out.append(steps.wait(p.oven, p.temp_c, hours - now))
            now = hours
        for off in sensing_offsets(p.levels, p.step):
            out.append(steps.SetRefs((off, off, off)))
            for (normal, _), pe in zip(groups, p.pe):
                first = len(out)
                at = steps.Checkpoint(_label(hours, off), pe, retention=True, offset=off, first_step=first,
                                      cumulative=True)
                out += [steps.raw_read(b, page, p.seed, g, at) for b in normal for page in pages]
        if p.reduced_refs:
            out.append(steps.SetRefs((0, *p.reduced_refs)))
            for (_, red), pe in zip(groups, p.pe):
                first = len(out)
                at = steps.Checkpoint(f"{hours:g}h {REDUCED}", pe, retention=True, first_step=first, cumulative=True)
                out += [steps.raw_read(b, page, p.seed, g, at, expected=reduced_pages[b][page])
                        for b in red for page in range(g.pages_per_block)]
    out.append(steps.SetRefs((0, 0, 0)))
    return out


def check_chip(p: FlexLevelParams, chip: dict) -> None:
    """Refused before anything is worn: a chip without a read-retry table, sensing or reduced-state offsets outside
    its range, or reduced state on a chip whose page map is not the one the plan programs by."""
    t = require_offsets(chip["manufacturer"], chip["model"], sensing_offsets(p.levels, p.step),
                         f"{p.levels} sensing levels {p.step} steps apart take offsets")
    if p.reduced_verify and not p.reduced_refs:
        raise NandrigError("--reduced-verify moves the reduced blocks' levels: it needs --reduced-refs")
    if p.reduced_refs:
        t.check((0, *p.reduced_refs))
        if p.reduced_verify:
            require_verify(chip["manufacturer"], chip["model"]).check(tuple(p.reduced_verify))
        if PageMap.from_json(chip["page_map"]) != PageMap.shuffled_mlc(chip["pages_per_block"]):
            raise NandrigError("reduced state programs wordlines by the common MLC page map; this chip's differs")


def from_cli(oven: str | None, temp_c: float, chamber_file: str | None, pe: str, retention: str, levels: int,
             step: int, pages: str | None, reduced_refs: str | None, reduced_verify: str | None) -> dict:
    wear = sorted(set(parse_int_list(pe, "--pe")))
    if 0 in wear:
        raise click.BadParameter("--pe levels must be 1 or more: the reads need programmed pages")
    points = [0.0] + [h for item in retention.split(",") if item.strip() not in ("0", "0h")
                      for h in parse_hours(item)] if retention.strip() else [0.0]
    chosen = parse_int_list(pages, "--pages") if pages else []
    refs = list(parse_reduced_refs(reduced_refs, "--reduced-refs")) if reduced_refs else []
    verify = list(parse_offsets(reduced_verify, "--reduced-verify", "PV1,PV2,PV3", 3)) if reduced_verify else []
    return {"pe": wear, "retention_h": sorted(set(points)), "levels": levels, "step": step,
            "pages": sorted(set(chosen)), "reduced_refs": refs, "reduced_verify": verify,
            **oven_fields(oven, temp_c, chamber_file)}


def parse_offsets(text: str, option: str, names: str, count: int) -> tuple[int, ...]:
    try:
        got = tuple(int(x) for x in text.split(","))
    except ValueError:
        got = ()
    if len(got) != count:
        raise click.BadParameter(f"{option} takes {names} offsets in the chip's steps (e.g. "
                                 f"{','.join(['9', '-9', '0'][:count])}), got {text!r}")
    return got


def parse_reduced_refs(text: str, option: str) -> tuple[int, int]:
    return parse_offsets(text, option, "VR2,VR3", 2)  # type: ignore[return-value]


@dataclass
class _Condition:
    """One (retention, wear, page type)'s pages: per page its reads' error codes by offset, and its busy times."""

    pages: dict[tuple[int, int], dict[int, np.ndarray]]
    busy_ns: list[int]


def _conditions(store, c, pm: PageMap) -> dict[tuple[float, int, str], _Condition]:
    out: dict[tuple[float, int, str], _Condition] = defaultdict(lambda: _Condition({}, []))
    for label, pe, off, block, page, busy, codes in store.bit_error_reads(c.id):
        if label.endswith(REDUCED):
            continue
        cond = out[_hours(label), pe, "upper" if pm.is_upper(page) else "lower"]
        cond.pages.setdefault((block, page), {})[off] = bitmaps.decode(codes)
        if off == 0:
            cond.busy_ns.append(busy)
    return dict(out)


def _reads(codes_by_offset: dict[int, np.ndarray], offsets: tuple[int, ...], stored: np.ndarray) -> list[np.ndarray]:
    out = []
    for off in offsets:
        read = stored.copy()
        read[codes_by_offset[off] >> 1] ^= 1  # an error code is bit * 2 + direction
        out.append(read)
    return out


def results(store, c, p: FlexLevelParams, pm: PageMap) -> dict:
    chip = store.chip(c.chip_id)
    raw_bytes = chip["page_bytes"] + chip["spare_bytes"]
    offsets = sensing_offsets(p.levels, p.step)
    mode = max(ParameterPage.decode(bytes(chip["param_page"])).timing_modes or (0,))
    transfer_us = raw_bytes * limit_ns(mode)[1] / 1000
    decoder = LdpcDecoder(QcLdpcCode())
    out = []
    for (hours, pe, ptype), cond in sorted(_conditions(store, c, pm).items()):
        keys = sorted(k for k, v in cond.pages.items() if set(offsets) <= set(v))
        if len(keys) < 2:
            continue
        stored = {k: page_bits(c.seed, k[0], k[1], raw_bytes) for k in keys}
        halves = keys[0::2], keys[1::2]  # training and test pages, interleaved through the blocks
        cat = [(np.concatenate([stored[k] for k in h]),
                [np.concatenate(x) for x in zip(*(_reads(cond.pages[k], offsets, stored[k]) for k in h))])
               for h in halves]
        hard_errors = sum(len(cond.pages[k][0]) for k in keys)
        t_r_us = float(np.mean(cond.busy_ns)) / 1000 if cond.busy_ns else 0.0
        try:
            outcomes = decode_levels(cat[0][0], cat[0][1], cat[1][0], cat[1][1], decoder, stop_when_clean=True)
        except NandrigError:  # too few test bits for a frame
            outcomes = []
        out.append({
            "retention_h": hours, "pe": pe, "page_type": ptype, "pages": len(keys),
            "rber": hard_errors / (len(keys) * raw_bytes * 8),
            "levels": [{"levels": o.levels, "frames": o.frames, "failures": o.failures, "fer": o.fer,
                        "fer_upper": o.fer_upper, "mean_iterations": o.mean_iterations,
                        "llr_rber": o.raw_errors / (o.frames * decoder.code.n),
                        "read_us": o.levels * (t_r_us + transfer_us)} for o in outcomes],
            "levels_needed": levels_needed(outcomes, FER_TARGET),
            "levels_decoding_all": next((o.levels for o in outcomes if not o.failures), None),
        })
    return {"code": {"n": decoder.code.n, "k": decoder.code.k, "rate": decoder.code.rate},
            "reduced": _reduced_results(store, c, p, out, decoder, transfer_us),
            "reduced_refs": list(p.reduced_refs), "reduced_verify": list(p.reduced_verify) or [0, 0, 0],
            "offsets": list(offsets), "fer_target": FER_TARGET, "frames_to_show_target": frames_to_show(FER_TARGET),
            "timing_mode": mode, "conditions": out}


def _reduced_results(store, c, p: FlexLevelParams, normal: list[dict], decoder: LdpcDecoder,
                     transfer_us: float) -> list[dict]:
    """Per retention point and wear: reduced wordlines' data bits read back through ReduceCode, their error rate
    against normal pages' (the hard read's, lower and upper pooled: both carry data bits), their LDPC frames
    decoded from that one read (LLRs fitted on every other wordline's data), and what a read of data costs in each
    state: reduced, both pages of the wordline; normal, one page at the sensing levels its frames need."""
    if not p.reduced_refs:
        return []
    chip = store.chip(c.chip_id)
    g = Geometry(chip["page_bytes"], chip["spare_bytes"], chip["pages_per_block"], chip["blocks"])
    pm = PageMap.shuffled_mlc(g.pages_per_block)
    reads: dict[tuple[float, int], dict[tuple[int, int], np.ndarray]] = defaultdict(dict)
    busy: dict[tuple[float, int, PageType], list[int]] = defaultdict(list)
    for label, pe, _off, block, page, busy_ns, codes in store.bit_error_reads(c.id):
        if label.endswith(REDUCED):
            reads[_hours(label), pe][block, page] = bitmaps.decode(codes)
            busy[_hours(label), pe, pm.page_type(page)].append(busy_ns)
    out = []
    for (hours, pe), pages in sorted(reads.items()):
        data_errors = page_errors = unknown = 0
        wanted, decoded = [], []  # per wordline
        for b in sorted({blk for blk, _ in pages}):
            written = _reduced_pages(c.seed, b, g)
            for wl in range(g.wordlines):
                lo, up = pm.page_of(wl, PageType.LOWER), pm.page_of(wl, PageType.UPPER)
                if (b, lo) not in pages or (b, up) not in pages:
                    continue
                got = []
                for page in (lo, up):
                    read = bits(written[page])
                    read[pages[b, page] >> 1] ^= 1  # an error code is bit * 2 + direction
                    got.append(read)
                    page_errors += len(pages[b, page])
                data, odd = reduced_level.bits_of(reduced_level.levels_read(*got))
                want = reduced_data(c.seed, b, wl, g.raw_page_bytes)
                data_errors += int(np.count_nonzero(data != want))
                wanted.append(want)
                decoded.append(data)
                unknown += odd
        data_bits = sum(w.size for w in wanted)
        try:
            frames = decode_levels(np.concatenate(wanted[0::2]), [np.concatenate(decoded[0::2])],
                                   np.concatenate(wanted[1::2]), [np.concatenate(decoded[1::2])], decoder)[0]
        except (NandrigError, ValueError):  # too few wordlines for a frame
            frames = None
        same = [x for x in normal if x["retention_h"] == hours and x["pe"] == pe]
        rber = data_errors / data_bits if data_bits else None
        base = float(np.mean([x["rber"] for x in same])) if same else None
        mean_us = {t: float(np.mean(busy[hours, pe, t])) / 1000 for t in PageType if busy[hours, pe, t]}
        out.append({"retention_h": hours, "pe": pe, "data_bits": data_bits, "data_rber": rber,
                    "page_rber": page_errors / (2 * data_bits / 3 * 2) if data_bits else None,
                    "pairs_read_as_l3_l3": unknown, "normal_rber": base,
                    "normal_over_reduced": base / rber if base is not None and rber else None,
                    "frames": None if frames is None else {
                        "frames": frames.frames, "failures": frames.failures, "fer_upper": frames.fer_upper,
                        "mean_iterations": frames.mean_iterations},
                    "levels_needed": levels_needed([frames], FER_TARGET) if frames is not None else None,
                    # a read of a page's worth of data: the wordline's two pages (1.5 pages of data) at one level
                    "read_us": sum(mean_us.values()) + 2 * transfer_us if len(mean_us) == 2 else None,
                    "normal_read_us": {x["page_type"]: _normal_read_us(x) for x in same}})
    return out


def _normal_read_us(cond: dict) -> float | None:
    """A normal page's read at the sensing levels its frames need (shown at the target, else those that decoded
    every frame read), or None when no level decoded them all."""
    k = cond["levels_needed"] or cond["levels_decoding_all"]
    return None if k is None else cond["levels"][k - 1]["read_us"]


def summary_lines(res: dict) -> list[str]:
    out = [f"  rate-{res['code']['rate']:.3f} QC-LDPC frames of {res['code']['k'] // 8} bytes; sensing offsets "
           f"{', '.join(f'{o:+d}' for o in res['offsets'])} (read-retry steps), in that order; a frame error rate "
           f"of {res['fer_target']:g} is shown by {res['frames_to_show_target']} frames all decoding",
           f"  {'retention':>9} {'P/E':>6} {'page':>5} {'raw BER':>9} {'frames':>6}  per sensing level: failed "
           f"frames (mean iterations, read us)"]
    for x in res["conditions"]:
        per = "  ".join(f"{o['levels']}: {o['failures']} ({o['mean_iterations']:.1f}, {o['read_us']:.0f})"
                        for o in x["levels"])
        frames = x["levels"][0]["frames"] if x["levels"] else 0
        out.append(f"  {x['retention_h']:>8g}h {x['pe']:>6} {x['page_type']:>5} {x['rber']:>9.2e} {frames:>6}  "
                   f"{per or 'too few pages for a frame'}")
    if res["reduced"]:
        v = res.get("reduced_verify", [0, 0, 0])
        levels = "the design's verify levels" if not any(v) else \
            "verify levels PV1..PV3 " + ", ".join(f"{o:+d}" for o in v) + " steps (NUNMA)"
        out.append(f"  reduced state (3 levels per cell, ReduceCode, 25 % less capacity; {levels}, read at VR2, VR3 "
                   + ", ".join(f"{o:+d}" for o in res.get("reduced_refs", [])) + "): data-bit error rate against "
                   "normal pages' at the hard read")
        for x in res["reduced"]:
            ratio = "-" if x["normal_over_reduced"] is None else f"{x['normal_over_reduced']:.1f}x lower"
            red = "-" if x["data_rber"] is None else f"{x['data_rber']:.2e}"
            base = "-" if x["normal_rber"] is None else f"{x['normal_rber']:.2e}"
            fr = x["frames"]
            frames = "no frame" if fr is None else f"{fr['failures']} of {fr['frames']} frames failed"
            lat = "  ".join(f"{t} page {us:.0f} us" for t, us in sorted(x["normal_read_us"].items()) if us is not None)
            read = "-" if x["read_us"] is None else f"{x['read_us']:.0f} us"
            out.append(f"  {x['retention_h']:>8g}h {x['pe']:>6}  reduced {red} ({x['data_bits']} bits, {frames}, "
                       f"a read {read})  normal {base} ({lat})  {ratio}")
    conds = [x for x in res["conditions"] if x["levels"]]
    failing = [x for x in conds if x["levels_decoding_all"] is None]
    if failing:
        out.append("  verdict: frames still fail with every sensing level read at " + ", ".join(
            f"{x['retention_h']:g} h {x['pe']} P/E {x['page_type']}" for x in failing))
    elif conds:
        hard = sum(x["levels_decoding_all"] == 1 for x in conds)
        most = max(conds, key=lambda x: x["levels_decoding_all"])
        bound = max(x["levels"][x["levels_decoding_all"] - 1]["fer_upper"] for x in conds)
        out.append(f"  verdict: every frame decoded, with hard reads alone at {hard} of {len(conds)} conditions and "
                   f"at most {most['levels_decoding_all']} sensing level(s) ({most['retention_h']:g} h, "
                   f"{most['pe']} P/E, {most['page_type']} pages); "
                   + (f"a frame error rate of at most {res['fer_target']:g} is shown everywhere" if all(
                       x["levels_needed"] is not None for x in conds) else
                      f"the frames read bound the frame error rate at {bound:.3g} (95 %), not "
                      f"{res['fer_target']:g}: that takes {res['frames_to_show_target']} frames per condition"))
    return out


def report(r, c, p: FlexLevelParams, pm: PageMap) -> None:
    res = results(r.store, c, p, pm)
    if not res["conditions"]:
        return
    fig, (ax_ber, ax_lat) = r.subplots(1, 2, figsize=(11, 4))
    for x in res["conditions"]:
        tag = f"{x['pe']} P/E, {x['retention_h']:g} h, {x['page_type']}"
        lv = [o["levels"] for o in x["levels"]]
        line = ax_ber.plot(lv, [max(o["llr_rber"], 1e-9) for o in x["levels"]], "o-", ms=3, lw=1, label=tag)[0]
        ax_lat.plot(lv, [o["read_us"] for o in x["levels"]], "o-", ms=3, lw=1, color=line.get_color())
    ax_ber.set_yscale("log")
    ax_ber.set_xlabel("sensing levels")
    ax_ber.set_ylabel("bits the LLRs decide wrong (0 drawn at 1e-9)")
    ax_ber.legend(fontsize=6)
    ax_lat.set_xlabel("sensing levels")
    ax_lat.set_ylabel("read latency: sensing and transfer (us)")
    for ax in (ax_ber, ax_lat):
        ax.grid(True, which="both", alpha=0.3)
    fig.suptitle(f"Soft reads (campaign {c.id}): levels added until every frame decodes")
    r.fig(fig, f"flexlevel_{c.id}", "Raw errors left after the LLRs' decision, and the read latency, against the "
                                    "sensing levels read, per wear, retention and page type")
    for line in summary_lines(res):
        r.p(line.strip())


KIND = CampaignKind(
    name="flexlevel", help="Soft reads and LDPC: sensing levels, decoder iterations and read latency after wear "
                           "and retention (FlexLevel).",
    params=FlexLevelParams, plan=plan, report=report, from_cli=from_cli, results=results, summary=summary_lines,
    check_chip=check_chip,
    options=(*OVEN_OPTIONS,
             click.option("--pe", default="1000,5000,10000", show_default=True,
                          help="P/E levels, one group of the blocks each."),
             click.option("--retention", default="1mo,1y", show_default=True,
                          help="Retention points read after the fresh one (25 degC-equivalent: 1d, 1mo, 1y, ...)."),
             click.option("--levels", type=click.IntRange(1, MAX_LEVELS), default=5, show_default=True,
                          help="Sensing levels of the soft read (1: hard reads only)."),
             click.option("--step", type=click.IntRange(min=1), default=4, show_default=True,
                          help="Read-retry steps between sensing levels."),
             click.option("--pages", help="Pages read in each block, comma-separated (default: all)."),
             click.option("--reduced-refs", help="VR2,VR3 offsets (read-retry steps) at the middle of L1 and L3: half "
                                                 "of each wear level's blocks then hold three levels per cell "
                                                 "(ReduceCode), read there."),
             click.option("--reduced-verify", help="PV1,PV2,PV3 offsets (the chip's verify steps) the reduced "
                                                   "blocks are programmed at (NUNMA: wider margins for the levels "
                                                   "that lose most charge); needs the design's verify feature.")),
)
