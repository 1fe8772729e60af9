"""JSON a strict parser reads: a number that is not finite (NaN, an unbounded interval's infinity) becomes null,
and the document says why under ``nulls`` (its path, then the reason)."""
from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any


def finite(doc: Any, reasons: Mapping[str, str] | None = None) -> Any:
    """``doc`` with every non-finite float replaced by None; a mapping at the top gains ``nulls``: for each
    replaced value its path (``a.b[2]``) and why: ``reasons`` by the path's last key, or what the number was."""
    nulls: dict[str, str] = {}

    def walk(o: Any, path: str) -> Any:
        if isinstance(o, Mapping):
            return {k: walk(v, f"{path}.{k}" if path else str(k)) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [walk(v, f"{path}[{i}]") for i, v in enumerate(o)]
        if isinstance(o, float) and not math.isfinite(o):
            key = path.rsplit(".", 1)[-1].split("[", 1)[0]
            nulls[path] = (reasons or {}).get(key) or ("not a number" if math.isnan(o) else
                                                       "unbounded: the data do not limit it")
            return None
        if hasattr(o, "item") and hasattr(o, "dtype"):  # numpy scalars
            return walk(o.item(), path)
        return o

    out = walk(doc, "")
    if nulls and isinstance(out, dict):
        out["nulls"] = {**out.get("nulls", {}), **nulls}
    return out


def dumps(doc: Any, reasons: Mapping[str, str] | None = None, **kw) -> str:
    """:func:`finite` then strict ``json.dumps`` (NaN or Infinity can no longer reach the output)."""
    return json.dumps(finite(doc, reasons), allow_nan=False, **kw)
