"""RBER measurements as the fitter takes them, and their CSV form.

The CSV has a header with at least ``pe,retention_h,rber``. Optional columns:
``bits`` (bits read behind each rber: the fit then treats errors as counts,
and a row with rber 0, no error in that many bits, is a measurement like any
other); ``block`` (which block a row came from: intervals then include
block-to-block variation); ``page_type`` (``lower``/``upper``: ``nandrig fit``
then fits each page type as well as all pages). ``nandrig export --by-block``
writes all of them. Other columns are ignored.
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from nandrig.errors import NandrigError

REQUIRED = ("pe", "retention_h", "rber")
PAGE_TYPES = ("lower", "upper")  # nandrig.chip.geometry.PageType, by name


@dataclass(frozen=True)
class Measurements:
    pe: np.ndarray
    retention_h: np.ndarray
    rber: np.ndarray
    bits: np.ndarray | None = None
    block: np.ndarray | None = None
    page_type: np.ndarray | None = None  # "lower" / "upper" per row

    def __len__(self) -> int:
        return int(self.pe.size)

    def select(self, keep: np.ndarray) -> "Measurements":
        pick = lambda a: None if a is None else a[keep]  # noqa: E731
        return Measurements(self.pe[keep], self.retention_h[keep], self.rber[keep], pick(self.bits),
                            pick(self.block), pick(self.page_type))

    def page_types(self) -> list[str]:
        return [] if self.page_type is None else sorted(set(self.page_type.tolist()))


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
    cols = {c: names.index(c) for c in (*REQUIRED, "bits", "block") if c in names}
    type_col = names.index("page_type") if "page_type" in names else None
    values: dict[str, list[float]] = {c: [] for c in cols}
    types: list[str] = []
    for lineno, row in enumerate(rows, start=2):
        if not row or all(not x.strip() for x in row):
            continue
        rec = {c: _number(path, lineno, row, c, i) for c, i in cols.items()}
        if type_col is not None:
            t = row[type_col].strip().lower() if type_col < len(row) else ""
            if t not in PAGE_TYPES:
                raise NandrigError(f"{path}:{lineno}: page_type must be one of {', '.join(PAGE_TYPES)}, got {t!r}")
            types.append(t)
        for c in ("pe", "retention_h"):
            if rec[c] < 0:
                raise NandrigError(f"{path}:{lineno}: negative {c} ({rec[c]:g})")
        if "bits" in rec and rec["bits"] <= 0:
            raise NandrigError(f"{path}:{lineno}: bits must be > 0")
        if not (0.0 <= rec["rber"] < 0.5 if "bits" in rec else 0.0 < rec["rber"] < 0.5):
            raise NandrigError(f"{path}:{lineno}: rber {rec['rber']:g} is outside "
                               + ("[0, 0.5)" if "bits" in rec else "(0, 0.5) (a zero needs a bits column)"))
        for c, v in rec.items():
            values[c].append(v)
    if not values["pe"]:
        raise NandrigError(f"{path} has a header but no measurements")
    arr = {c: np.asarray(v, dtype=float) for c, v in values.items()}
    return Measurements(arr["pe"], arr["retention_h"], arr["rber"], arr.get("bits"), arr.get("block"),
                        np.asarray(types) if type_col is not None else None)


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
        extra = [(name, col) for name, col in (("bits", m.bits), ("block", m.block), ("page_type", m.page_type))
                 if col is not None]
        w.writerow(["pe", "retention_h", "rber"] + [name for name, _ in extra])
        for i in range(len(m)):
            row = [f"{m.pe[i]:g}", f"{m.retention_h[i]:g}", repr(float(m.rber[i]))]
            row += [str(col[i]) if name == "page_type" else f"{col[i]:.0f}" for name, col in extra]
            w.writerow(row)


def poisson_interval(errors: np.ndarray, bits: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """The exact (Garwood) interval of an error rate from its count: chi-square quantiles, 0 below a zero count."""
    from scipy.stats import chi2

    errors, bits = np.asarray(errors, float), np.asarray(bits, float)
    a = (1 - level) / 2
    lo = np.where(errors > 0, chi2.ppf(a, np.maximum(2 * errors, 1e-300)) / 2, 0.0)
    return lo / bits, chi2.ppf(1 - a, 2 * errors + 2) / 2 / bits

