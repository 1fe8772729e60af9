"""RBER measurements as the fitter takes them, and their CSV form.

The CSV has a header with at least ``pe,retention_h,rber``; an optional
``bits`` column (bits read behind each rber) weights the fit. Other columns
(as ``nandrig export`` writes them) are ignored.
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from nandrig.errors import NandrigError

REQUIRED = ("pe", "retention_h", "rber")


@dataclass(frozen=True)
class Measurements:
    pe: np.ndarray
    retention_h: np.ndarray
    rber: np.ndarray
    bits: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.pe.size)


def read_csv(path: str | Path) -> Measurements:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise NandrigError(f"cannot read {path}: {e.strerror}") from None
    except UnicodeDecodeError:
        raise NandrigError(f"{path} is not a text CSV file") from None
    rows = csv.reader(text.splitlines())
    header = next(rows, None)
    if not header or not any(h.strip() for h in header):
        raise NandrigError(f"{path} is empty (expected a header with {','.join(REQUIRED)})")
    names = [h.strip().lower() for h in header]
    missing = [c for c in REQUIRED if c not in names]
    if missing:
        raise NandrigError(f"{path} lacks column(s) {', '.join(missing)} (header: {','.join(names)})")
    cols = {c: names.index(c) for c in (*REQUIRED, "bits") if c in names}
    values: dict[str, list[float]] = {c: [] for c in cols}
    for lineno, row in enumerate(rows, start=2):
        if not row or all(not x.strip() for x in row):
            continue
        for c, i in cols.items():
            if i >= len(row):
                raise NandrigError(f"{path}:{lineno}: missing value for {c}")
            try:
                v = float(row[i])
            except ValueError:
                raise NandrigError(f"{path}:{lineno}: {c} is not a number: {row[i].strip()!r}") from None
            if not math.isfinite(v):
                raise NandrigError(f"{path}:{lineno}: {c} is not finite")
            if c in ("pe", "retention_h") and v < 0:
                raise NandrigError(f"{path}:{lineno}: negative {c} ({v:g})")
            if c == "rber" and not 0.0 < v < 0.5:
                raise NandrigError(f"{path}:{lineno}: rber {v:g} is outside (0, 0.5)")
            if c == "bits" and v <= 0:
                raise NandrigError(f"{path}:{lineno}: bits must be > 0")
            values[c].append(v)
    if not values["pe"]:
        raise NandrigError(f"{path} has a header but no measurements")
    arr = {c: np.asarray(v, dtype=float) for c, v in values.items()}
    return Measurements(arr["pe"], arr["retention_h"], arr["rber"], arr.get("bits"))


def write_csv(path: str | Path, m: Measurements) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        cols = ["pe", "retention_h", "rber"] + (["bits"] if m.bits is not None else [])
        w.writerow(cols)
        for i in range(len(m)):
            row = [f"{m.pe[i]:g}", f"{m.retention_h[i]:g}", repr(float(m.rber[i]))]
            if m.bits is not None:
                row.append(f"{m.bits[i]:.0f}")
            w.writerow(row)
