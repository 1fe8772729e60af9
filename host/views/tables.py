"""A campaign's data as tables with typed, unit-named columns: one definition that the CSV export, the Parquet
export and the Python API's DataFrames all read, so a column means the same wherever it lands.

Units are in the names (``_h`` hours, ``_ns`` nanoseconds, ``_pj`` picojoules, ``_uw`` microwatts, ``_c`` degC);
``pe`` counts P/E cycles, ``rber`` is a fraction of bits. A column that may be empty (an operation that was not
metered, a page whose tR a cache read hid) is nullable.
"""
from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nandrig.errors import NandrigError

from nandrig.characterization import bitmaps
from nandrig.chip.read_retry import require_table
from nandrig.host.kinds.vth_states import densities
from nandrig.host.storage.store import Campaign, Store
from nandrig.host.views.export import BY_BLOCK_COLUMNS, EXPORT_COLUMNS, export_rows

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Column:
    name: str
    dtype: str  # a pandas dtype: int64, float64, string, or Int64 (nullable)
    doc: str


@dataclass(frozen=True)
class Table:
    name: str
    doc: str
    columns: tuple[Column, ...]
    rows: Callable[[Store, Campaign], Iterable[tuple]]

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]


_DOCS = {
    "campaign": ("int64", "campaign id"), "kind": ("string", "campaign kind"),
    "checkpoint": ("int64", "checkpoint number in the campaign"), "label": ("string", "checkpoint label"),
    "pe": ("int64", "the block's P/E cycles at the read"), "retention_h": ("float64", "planned retention, hours"),
    "actual_h": ("float64", "retention that passed, 25 degC-equivalent hours"),
    "temp_c": ("float64", "bake or ambient temperature, degC"), "reads": ("int64", "reads of the block since its program"),
    "offset": ("int64", "read-retry offset, steps"), "blocks": ("int64", "blocks pooled in the row"),
    "pages": ("int64", "pages pooled in the row"), "bits": ("int64", "bits compared"),
    "err_1to0": ("int64", "bits stored 1 read 0"), "err_0to1": ("int64", "bits stored 0 read 1"),
    "errors": ("int64", "bit errors"), "rber": ("float64", "raw bit error rate, errors / bits"),
    "pe_uncertain": ("int64", "P/E cycles the block may have beyond pe (a cycle whose outcome was lost)"),
    "block": ("int64", "block"), "page_type": ("string", "lower or upper (the chip's page map)"),
    "page": ("int64", "page in the block (-1: an erase)"),
    "busy_ns": ("Int64", "the chip's busy time (R/B#), ns; empty where a cache read hid a page's tR"),
    "bit": ("int64", "bit index in the page"), "direction": ("int64", "1: stored 1 read 0; 0: stored 0 read 1"),
    "op": ("string", "erase, program or read"),
    "busy_pj": ("Int64", "energy while busy, pJ (metered operations)"),
    "transfer_pj": ("Int64", "energy of the bus transfer, pJ (metered operations)"),
    "transfer_ns": ("Int64", "bus transfer time, ns (metered operations)"),
    "idle_uw": ("Int64", "idle power, uW (metered operations)"),
    "state": ("string", "the cell state: L0 (erased) to L3"),
    "offset_steps": ("float64", "read-retry offset between two sweep points, in the chip's steps"),
    "vth_mv": ("float64", "that offset in millivolts from the nominal reference (the chip's retry step)"),
    "cells_per_step": ("float64", "fraction of the state's cells whose Vth lies in one step there"),
}


def _columns(names: list[str]) -> tuple[Column, ...]:
    return tuple(Column(n, *_DOCS[n]) for n in names)


def _checkpoints(by_block: bool) -> Callable[[Store, Campaign], Iterable[tuple]]:
    names = BY_BLOCK_COLUMNS if by_block else EXPORT_COLUMNS
    return lambda store, c: (tuple(r[k] for k in names) for r in export_rows(store, c, by_block))


def _bit_errors(store: Store, c: Campaign) -> Iterable[tuple]:
    for label, pe, block, page, blob in store.bit_errors(c.id):
        for code in bitmaps.decode(blob).tolist():
            yield label, pe, block, page, code >> 1, code & 1


def _vth_states(store: Store, c: Campaign) -> Iterable[tuple]:
    """Each state's Vth density from a vth-states sweep: the fraction of its cells per read-retry step."""
    if c.kind != "vth-states":
        return
    rows, pm = store.rows(c.id), store.page_map(c.chip_id)
    chip = store.chip(c.chip_id)
    step_mv = require_table(chip["manufacturer"], chip["model"]).step_mv
    for pe, hours in sorted({(x.pe, x.retention_h) for x in rows}):
        for state, (at, density) in densities(rows, pm, pe, hours).items():
            for x, d in zip(at.tolist(), density.tolist()):
                yield pe, hours, state, x, x * step_mv, d


PAGE_COLUMNS = ["label", "pe", "retention_h", "actual_h", "temp_c", "reads", "offset", "block", "page", "err_1to0",
                "err_0to1", "bits", "busy_ns", "pe_uncertain"]
OPERATION_COLUMNS = ["op", "block", "page", "pe", "busy_ns", "busy_pj", "transfer_pj", "transfer_ns", "idle_uw"]

TABLES: dict[str, Table] = {t.name: t for t in (
    Table("checkpoints", "one row per checkpoint and P/E level (what `nandrig fit --csv` reads)",
          _columns(EXPORT_COLUMNS), _checkpoints(False)),
    Table("by_block", "one row per checkpoint, P/E level, block and page type", _columns(BY_BLOCK_COLUMNS),
          _checkpoints(True)),
    Table("pages", "one row per page read at a checkpoint", _columns(PAGE_COLUMNS),
          lambda store, c: (tuple(r) for r in store.rows(c.id))),
    Table("operations", "one row per timed operation (erase, program, read), with its energy where it was metered",
          _columns(OPERATION_COLUMNS), lambda store, c: store.operations(c.id)),
    Table("bit_errors", "one row per flipped bit (bitmap campaigns)",
          _columns(["label", "pe", "block", "page", "bit", "direction"]), _bit_errors),
    Table("vth_states", "one row per state, condition and read-retry step: the state's Vth density (vth-states "
          "campaigns)", _columns(["pe", "retention_h", "state", "offset_steps", "vth_mv", "cells_per_step"]),
          _vth_states),
)}


def table(name: str) -> Table:
    t = TABLES.get(name)
    if t is None:
        raise NandrigError(f"no table {name!r} (tables: {', '.join(TABLES)})")
    return t


def csv_text(store: Store, c: Campaign, name: str, rows: Iterable[tuple] | None = None) -> str:
    """The table as CSV (of ``rows`` when the caller has them already): a header of its column names, floats
    written exactly, an empty field for no value."""
    t = table(name)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(t.names)
    w.writerows([_fmt(v) for v in row] for row in (t.rows(store, c) if rows is None else rows))
    return buf.getvalue()


def _fmt(v) -> str:
    return "" if v is None else repr(v) if isinstance(v, float) else str(v)


def pandas():
    """pandas, or a clear word on how to get it (it is an optional extra)."""
    try:
        import pandas
    except ImportError:
        raise NandrigError("DataFrames and Parquet need pandas and pyarrow: pip install 'nandrig[analysis]'") from None
    return pandas


def frame(store: Store, c: Campaign, name: str) -> "pd.DataFrame":
    """The table as a pandas DataFrame with its columns' types (needs the analysis extra)."""
    t = table(name)
    df = pandas().DataFrame.from_records(list(t.rows(store, c)), columns=t.names)
    return df.astype({col.name: col.dtype for col in t.columns})


def write_parquet(store: Store, c: Campaign, name: str, path: str | Path) -> int:
    """The table as a Parquet file, each column's description in its field metadata; returns its rows."""
    df = frame(store, c, name)
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise NandrigError("Parquet needs pyarrow: pip install 'nandrig[analysis]'") from None
    arrow = pa.Table.from_pandas(df, preserve_index=False)
    docs = {col.name: col.doc for col in table(name).columns}
    schema = pa.schema([f.with_metadata({"description": docs[f.name]}) for f in arrow.schema],
                       metadata={**(arrow.schema.metadata or {}), b"nandrig.table": name.encode(),
                                 b"nandrig.campaign": str(c.id).encode()})
    pq.write_table(arrow.cast(schema), path)
    return len(df)
