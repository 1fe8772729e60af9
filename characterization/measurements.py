"""RBER measurements as the fitter takes them, and their CSV form.

The CSV has a header with at least ``pe,retention_h,rber``; an optional
``bits`` column (bits read behind each rber) weights the fit. Other columns
(as ``nandrig export`` writes them) are ignored. With ``bits`` present, a
row with rber 0 is a real measurement (no error in that many bits) that a
log-space fit cannot use: it is skipped and counted, not rejected.
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
    skipped_zero: int = 0  # rows with no errors, skipped (only with a bits column)

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
    skipped = 0
    for lineno, row in enumerate(rows, start=2):
        if not row or all(not x.strip() for x in row):
            continue
        rec = {c: _number(path, lineno, row, c, i) for c, i in cols.items()}
        for c in ("pe", "retention_h"):
            if rec[c] < 0:
                raise NandrigError(f"{path}:{lineno}: negative {c} ({rec[c]:g})")
        if "bits" in rec and rec["bits"] <= 0:
            raise NandrigError(f"{path}:{lineno}: bits must be > 0")
        if rec["rber"] == 0.0 and "bits" in rec:
            skipped += 1  # no error in this many bits: below what the log-space fit can use
            continue
        if not 0.0 < rec["rber"] < 0.5:
            raise NandrigError(f"{path}:{lineno}: rber {rec['rber']:g} is outside (0, 0.5)")
        for c, v in rec.items():
            values[c].append(v)
    if not values["pe"]:
        raise NandrigError(f"{path} has a header but no measurements")
    arr = {c: np.asarray(v, dtype=float) for c, v in values.items()}
    return Measurements(arr["pe"], arr["retention_h"], arr["rber"], arr.get("bits"), skipped)


def _number(path: Path, lineno: int, row: list[str], column: str, index: int) -> float:
    if index >= len(row):
        raise NandrigError(f"{path}:{lineno}: missing value for {column}")
    try:
        v = float(row[index])
    except ValueError:
        raise NandrigError(f"{path}:{lineno}: {column} is not a number: {row[index].strip()!r}") from None
    if not math.isfinite(v):
        raise NandrigError(f"{path}:{lineno}: {column} is not finite")
    return v


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
