"""A campaign's measurements as rows: per checkpoint, or per checkpoint, block and page type (what ``nandrig fit``
reads best: blocks for its intervals, page types for a model each). The tables every export writes are in
:mod:`nandrig.host.views.tables`."""
from __future__ import annotations

import math

import numpy as np

from nandrig.characterization.measurements import Measurements
from nandrig.host.storage.store import Campaign, Store


EXPORT_COLUMNS = ["campaign", "kind", "checkpoint", "label", "pe", "retention_h", "actual_h", "temp_c", "reads",
                  "offset", "blocks", "pages", "bits", "err_1to0", "err_0to1", "errors", "rber", "pe_uncertain"]
BY_BLOCK_COLUMNS = EXPORT_COLUMNS[:10] + ["block", "page_type"] + EXPORT_COLUMNS[11:]


def export_rows(store: Store, c: Campaign, by_block: bool = False) -> list[dict]:
    """One row per checkpoint and P/E level (with ``by_block``: and per block and page type)."""
    rows = store.rows(c.id)
    pmap = store.page_map(c.chip_id) if by_block else None
    out: dict[tuple, dict] = {}
    for label, pe, ret, actual, temp, reads, offset, block, page, e10, e01, bits, _busy, unc in rows:
        key: tuple = (label, pe)
        if pmap is not None:
            key += (block, pmap.page_type(page).name.lower())
        r = out.get(key)
        if r is None:
            r = out[key] = {"campaign": c.id, "kind": c.kind, "checkpoint": len(out), "label": label, "pe": pe,
                            "retention_h": ret, "actual_h": actual, "temp_c": temp, "reads": reads,
                            "offset": offset, "blocks": set(), "pages": 0, "bits": 0, "err_1to0": 0,
                            "err_0to1": 0, "pe_uncertain": 0}
            if pmap is not None:
                r["block"], r["page_type"] = block, key[3]
        r["blocks"].add(block)
        r["pages"] += 1
        r["bits"] += bits
        r["err_1to0"] += e10
        r["err_0to1"] += e01
        r["pe_uncertain"] = max(r["pe_uncertain"], unc)  # a block's P/E beyond the row's may be this many more
    result = []
    for r in out.values():
        r["blocks"] = len(r["blocks"])
        r["errors"] = r["err_1to0"] + r["err_0to1"]
        r["rber"] = r["errors"] / r["bits"] if r["bits"] else math.nan
        result.append(r)
    return result


def measurements(rows: list[dict]) -> Measurements:
    """Rows of :func:`export_rows` as the fitter takes them (blocks and page types when the rows have them)."""
    col = lambda k: np.array([r[k] for r in rows], float)  # noqa: E731
    split = bool(rows) and "block" in rows[0]
    return Measurements(col("pe"), col("retention_h"), col("rber"), col("bits"),
                        col("block") if split else None,
                        np.array([r["page_type"] for r in rows]) if split else None)
