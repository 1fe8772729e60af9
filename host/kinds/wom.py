"""WOM: write a page twice between erases with a two-write WOM code, and find which pages take it.

Grupp et al. (MICRO'09, §5) wrote "WOM-safe" MLC pages twice with a Rivest-Shamir code (two bits in three
cells, characterization/wom.py): the second write only programs cells, so no erase comes between. Whether a page
takes a second write depends on what else its cells hold. Three classes of page, one group of blocks each:

* ``lower-alone``: the lower pages of wordlines whose upper page is never written (the first write programs
  only lower pages): the second write moves cells from L0 to LM, as a first write does.
* ``lower-under-upper``: lower pages written again after the whole block was written once.
* ``upper``: upper pages written again after the whole block was written once.

Every written page is read back raw and compared with what it should hold (the second write's codeword on the
pages written twice, the first's on the others): errors on the pages written twice, and on the pages beside
them, per class.
"""
from __future__ import annotations

from dataclasses import dataclass

import click
import numpy as np

from nandrig import protocol as P
from nandrig.characterization import wom
from nandrig.chip.geometry import Geometry, PageMap, PageType
from nandrig.chip.pattern import page_seed, prbs31_bytes
from nandrig.host.kinds import steps
from nandrig.host.kinds.base import CampaignKind, KindParams

CLASSES = ("lower-alone", "lower-under-upper", "upper")
SECOND_WRITE = 0x5A5A5A5A  # keys the second write's data apart from the first's


@dataclass(frozen=True)
class WomParams(KindParams):
    pe: int  # wear before the writes


def area_bytes(g: Geometry) -> int:
    """The bytes the code writes: the page's data area, or as much of it as one PROGRAM request carries."""
    return min(g.page_bytes, P.MAX_PAYLOAD - P.PROGRAM_HEAD.size)


def data_bits(seed: int, block: int, page: int, g: Geometry) -> np.ndarray:
    """A write's data: the pattern's first bits, as many as the code fits in the written area."""
    n = wom.capacity(area_bytes(g))
    return np.unpackbits(np.frombuffer(prbs31_bytes(page_seed(seed, block, page), -(-n // 8)), np.uint8))[:n]


def pages_of(cls: str, pm: PageMap) -> tuple[list[int], list[int]]:
    """(pages the first write programs, in order; pages the second write programs again)."""
    lower = pm.of_type(PageType.LOWER)
    if cls == "lower-alone":
        return list(lower), list(lower)
    every = list(range(len(pm.pages)))
    return every, list(lower if cls == "lower-under-upper" else pm.of_type(PageType.UPPER))


def plan(p: WomParams, g: Geometry) -> list[steps.Step]:
    groups = steps.groups(list(p.blocks), len(CLASSES), "classes of page")
    pm = PageMap.shuffled_mlc(g.pages_per_block)
    out = [s for grp in groups for s in steps.cycle_to(grp, 0, p.pe, p.seed, worn=p.worn)]
    for cls, grp in zip(CLASSES, groups):
        first, again = pages_of(cls, pm)
        expected = {}
        for b in grp:
            out.append(steps.Erase(b))
            for page in first:
                expected[(b, page)] = wom.encode(data_bits(p.seed, b, page, g), area_bytes(g))
                out.append(steps.Program(b, page, data=expected[(b, page)]))
            for page in again:
                expected[(b, page)] = wom.encode(data_bits(p.seed ^ SECOND_WRITE, b, page, g), area_bytes(g),
                                                 before=expected[(b, page)])
                out.append(steps.Program(b, page, data=expected[(b, page)]))
        for role, pages in (("written twice", again), ("written once", [q for q in first if q not in again])):
            if not pages:
                continue
            checkpoint = len(out)  # the step that opens the checkpoint its reads share
            meta = steps.Checkpoint(label=f"{cls}: {role}", pe=p.pe + 1, first_step=checkpoint)
            out += [steps.verify(b, q, expected[(b, q)], g, meta) for b in grp for q in pages]
    return out


def from_cli(pe: int) -> dict:
    return {"pe": pe}


def results(store, c, p: WomParams, pm: PageMap) -> dict:
    out = {}
    for x in store.rows(c.id):
        cls, role = x.label.split(": ")
        r = out.setdefault(cls, {}).setdefault(role, {"pages": 0, "err_1to0": 0, "err_0to1": 0, "bits": 0})
        r["pages"] += 1
        r["err_1to0"] += x.err_1to0
        r["err_0to1"] += x.err_0to1
        r["bits"] += x.bits
    for roles in out.values():
        for r in roles.values():
            r["error_rate"] = (r["err_1to0"] + r["err_0to1"]) / r["bits"] if r["bits"] else None
    return {"pe": p.pe + 1, "code_rate": 2 / 3, "classes": out}


def summary_lines(res: dict) -> list[str]:
    out = [f"  at {res['pe']} P/E; cell error rate against what each page should hold (the data area)",
           f"  {'class':<18} {'pages':<14} {'count':>5} {'errors':>8} {'rate':>9}"]
    for cls, roles in res["classes"].items():
        for role, r in roles.items():
            out.append(f"  {cls:<18} {role:<14} {r['pages']:>5} {r['err_1to0'] + r['err_0to1']:>8} "
                       f"{r['error_rate']:9.2e}")
    return out


def report(r, c, p: WomParams, pm: PageMap) -> None:
    res = results(r.store, c, p, pm)
    if not res["classes"]:
        return
    fig, ax = r.subplots(figsize=(8, 4))
    labels, twice, once = [], [], []
    for cls in CLASSES:
        roles = res["classes"].get(cls, {})
        labels.append(cls)
        twice.append(roles.get("written twice", {}).get("error_rate") or np.nan)
        once.append(roles.get("written once", {}).get("error_rate") or np.nan)
    x = np.arange(len(labels))
    ax.bar(x - 0.2, np.maximum(twice, 1e-9), 0.4, label="pages written twice")
    ax.bar(x + 0.2, np.maximum(once, 1e-9), 0.4, label="the other pages of those blocks")
    ax.set_xticks(x, labels)
    ax.set_yscale("log")
    ax.set_ylabel("cell error rate after the second write")
    ax.set_title(f"WOM second writes by page class, {res['pe']} P/E (campaign {c.id})")
    ax.legend(fontsize=8)
    r.fig(fig, f"wom_{c.id}", "Errors after a second (WOM-coded) write without erase, per class of page")
    for line in summary_lines(res):
        r.p(line.strip())


KIND = CampaignKind(
    name="wom", help="Write pages twice between erases with a WOM code: which page classes take a second write.",
    params=WomParams, plan=plan, report=report, from_cli=from_cli, results=results, summary=summary_lines,
    options=(click.option("--pe", type=click.IntRange(min=0), default=1000, show_default=True,
                          help="P/E cycles of wear before the writes."),))
