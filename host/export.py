"""A campaign's measurements as rows and CSV: per checkpoint (what ``nandrig fit`` reads) or per page."""
from __future__ import annotations

import csv
import io
import math

from nandrig.host.store import Campaign, Store


EXPORT_COLUMNS = ["campaign", "kind", "checkpoint", "label", "pe", "retention_h", "actual_h", "temp_c", "reads",
                  "offset", "blocks", "pages", "bits", "err_1to0", "err_0to1", "errors", "rber"]


def export_rows(store: Store, c: Campaign) -> list[dict]:
    """One row per checkpoint and P/E level: what ``nandrig fit`` reads."""
    rows = store.rows(c.id)
    out: dict[tuple, dict] = {}
    for label, pe, ret, actual, temp, reads, offset, block, _page, e10, e01, bits, _busy in rows:
        key = (label, pe)
        r = out.setdefault(key, {"campaign": c.id, "kind": c.kind, "checkpoint": len(out), "label": label, "pe": pe,
                                 "retention_h": ret, "actual_h": actual, "temp_c": temp, "reads": reads,
                                 "offset": offset, "blocks": set(), "pages": 0, "bits": 0, "err_1to0": 0,
                                 "err_0to1": 0})
        r["blocks"].add(block)
        r["pages"] += 1
        r["bits"] += bits
        r["err_1to0"] += e10
        r["err_0to1"] += e01
    result = []
    for r in out.values():
        r["blocks"] = len(r["blocks"])
        r["errors"] = r["err_1to0"] + r["err_0to1"]
        r["rber"] = r["errors"] / r["bits"] if r["bits"] else math.nan
        result.append(r)
    return result


def export_csv(store: Store, c: Campaign, per_page: bool = False) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    if per_page:
        w.writerow(["label", "pe", "retention_h", "actual_h", "temp_c", "reads", "offset", "block", "page",
                    "err_1to0", "err_0to1", "bits", "busy_ns"])
        w.writerows(store.rows(c.id))
        return buf.getvalue()
    w.writerow(EXPORT_COLUMNS)
    for r in export_rows(store, c):
        w.writerow([_fmt(r[k]) for k in EXPORT_COLUMNS])
    return buf.getvalue()


def _fmt(v) -> str:
    return repr(v) if isinstance(v, float) else str(v)
