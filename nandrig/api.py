"""nandrig from Python: open a rig, run campaigns into a lab's database, and get the results as pandas DataFrames.

The names in ``__all__`` are the public API (docs/api.md); their signatures are kept stable. DataFrames need the
analysis extra (``pip install 'nandrig[analysis]'``: pandas and pyarrow); everything else works without it.

    from nandrig.api import Lab

    with Lab("lab.db") as lab:
        c = lab.run("endurance", blocks="1-2", cycles=100, checkpoints=[1, 10, 100])
        df = lab.table(c.id, "checkpoints")
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nandrig.characterization.fitting import FitResult, fit_page_types
from nandrig.errors import NandrigError
from nandrig.host.engine import campaigns as engine
from nandrig.host.engine.chip_access import format_blocks, open_for_chip, parse_blocks
from nandrig.host.kinds import KINDS, kind
from nandrig.host.kinds.base import KindParams
from nandrig.host.link.rig import Rig
from nandrig.host.storage.store import Campaign, Store
from nandrig.host.views.export import export_rows, measurements
from nandrig.host.views import tables
from nandrig.host.views.tables import TABLES, Table

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Lab", "Campaign", "Rig", "FitResult", "KindParams", "TABLES", "Table", "open_rig", "campaign_kinds",
           "NandrigError"]

Progress = Callable[[int, int], None]  # (done, total) in the campaign's own unit (P/E cycles, hours, steps)


def open_rig(url: str = "sim", *, chip: str = "mlc-3x", seed: int = 0, timeout: float = 2.0, target: int = 0) -> Rig:
    """A rig by URL, as a context manager: ``sim`` (a virtual chip ``chip`` with ``seed`` in this process),
    ``socket://host:port``, a serial port, or ``labgrid://PLACE``; ``target``: the chip on the rig's CE# k.
    Campaigns open their own rig (:meth:`Lab.run`): this is for direct commands (``info()``, ``erase()``,
    ``program()``, ``read()``)."""
    if url == "sim":
        return Rig.open("sim", chip=chip, seed=seed, timeout=timeout, target=target)
    return Rig.open(url, timeout=timeout, target=target)


def campaign_kinds() -> dict[str, type[KindParams]]:
    """Every campaign kind and the dataclass of its parameters (fields, types and defaults)."""
    return {name: k.params for name, k in KINDS.items()}


class Lab:
    """A measurement database (an SQLite file, or ``postgresql://...``): its chips, campaigns and results. A
    context manager; ``read_only`` opens a database another process is writing without taking it."""

    def __init__(self, location: str | Path, *, read_only: bool = False) -> None:
        self.store = Store(location, read_only=read_only)
        self.location = str(location)

    def __enter__(self) -> "Lab":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.store.close()

    # -- campaigns ---------------------------------------------------------------------
    def run(self, kind_name: str, *, blocks: str | Sequence[int], rig: str = "sim", chip: str = "mlc-3x",
            seed: int = 0, chip_label: str | None = None, pattern_seed: int = 1, target: int = 0,
            progress: Progress | None = None, **params: Any) -> Campaign:
        """Create a campaign of ``kind_name`` on ``blocks`` (``"1-4,9"`` or a list) of the chip on ``rig`` (its
        ``target``) and run it to its end; ``params`` are the kind's own fields (:func:`campaign_kinds`). Factory
        bad blocks among ``blocks`` are left out. Interrupted (Ctrl-C, a lost rig), it stays resumable:
        :meth:`resume`."""
        r, chip_id = open_for_chip(self.store, rig, chip, seed, chip_label, target=target)
        with r:
            total = r.info().blocks
            chosen = parse_blocks(blocks if isinstance(blocks, str) else ",".join(str(int(b)) for b in blocks), total)
            fields = {"blocks": chosen, "seed": pattern_seed, **params}
            fields.setdefault("oven", "virtual" if rig == "sim" else "wall")
            cid = engine.create(self.store, r, chip_id, kind(kind_name).name, fields, rig, skip_bad=True)
            return engine.run(self.store, r, cid, progress=progress or False)

    def resume(self, campaign_id: int | None = None, *, rig: str | None = None) -> list[Campaign]:
        """Continue an interrupted campaign (or every one) from where it stopped."""
        not_resumed: list[tuple[int, str]] = []
        done = engine.resume(self.store, campaign_id, rig, echo=lambda s: None, not_resumed=not_resumed)
        if campaign_id is not None and not_resumed:
            raise NandrigError(not_resumed[0][1])
        return done

    def cancel(self, campaign_id: int) -> Campaign:
        """End an interrupted campaign: its blocks freed, the wear it gave kept (``nandrig cancel``)."""
        return engine.cancel(self.store, campaign_id)

    def validate_flares(self, *, rig: str = "sim", chip: str = "mlc-3x", seed: int = 0, chip_label: str | None = None,
                        blocks: str | None = None, on_rig: bool = False, guarded: bool = False,
                        bound: float | None = 0.99, scale: float = 1.0, wsize: int = 10, mix: float = 0.5,
                        density_control: bool = True) -> dict:
        """``nandrig run flares-validate`` as a resumable campaign of this lab: FLARES (``guarded``: guarded FLARES)
        against the chip's measured errors, on the host over the measured traces or, ``on_rig``, in the rig with
        tables sent to it; each page type's model calibrated on the chip (tables from its ``bound`` upper
        prediction bound; None: the fitted curve). Returns the result with its ``verdict``."""
        from nandrig.characterization.flares import FlaresConfig
        from nandrig.host.engine import flares_validate

        live = FlaresConfig(wsize=wsize, mix_pm=round(mix * 1000), guarded=guarded) if on_rig else None
        result, _ = flares_validate.start_campaign(self.location, rig, chip, seed, chip_label, False, blocks, None,
                                                   None, scale, lambda s: None, live, density_control, bound,
                                                   guarded)
        return {**result, "verdict": flares_validate.verdict(result)}

    def campaign(self, campaign_id: int) -> Campaign:
        return self.store.campaign(campaign_id)

    def campaigns(self) -> "pd.DataFrame":
        """One row per campaign: id, kind, state, chip, blocks, progress and when it was made and last moved."""
        pd = tables.pandas()
        rows = [{"campaign": c.id, "kind": c.kind, "state": c.state, "chip_id": c.chip_id,
                 "chip": (self.store.chip(c.chip_id) or {}).get("label"), "blocks": format_blocks(list(c.blocks)),
                 "step": c.step, "steps": c.steps} for c in self.store.campaigns()]
        return pd.DataFrame(rows, columns=["campaign", "kind", "state", "chip_id", "chip", "blocks", "step", "steps"])

    def results(self, campaign_id: int) -> dict:
        """A finished campaign's own results (what ``nandrig run KIND --json`` prints), or a validation's record."""
        c = self.store.campaign(campaign_id)
        if (validation := self.store.flares_run_of(c.id)) is not None:
            return validation
        k = KINDS.get(c.kind)
        if c.state != "done" or k is None or k.results is None:
            raise NandrigError(f"campaign {c.id} ({c.kind}, {c.state}) has no results of its own; its tables do")
        return k.results(self.store, c, k.params.from_mapping(c.params), self.store.page_map(c.chip_id))

    # -- data --------------------------------------------------------------------------
    def table(self, campaign_id: int, name: str = "checkpoints") -> "pd.DataFrame":
        """One of a campaign's tables (:data:`TABLES`: checkpoints, by_block, pages, operations, bit_errors, vth_states) as a
        DataFrame with the table's column types (units in the column names)."""
        return tables.frame(self.store, self.store.campaign(campaign_id), name)

    def report(self, out: str | Path, campaigns: Sequence[int] | None = None) -> Path:
        """The HTML report (``nandrig report``) of these campaigns, or every one, into folder ``out``: its page."""
        from nandrig.host.views.report import write_report

        return write_report(self.location, out, list(campaigns) if campaigns else None)

    def export(self, campaign_id: int, table: str, path: str | Path) -> int:
        """One of a campaign's tables to a file (``nandrig export``): Parquet for ``.parquet``, else CSV. Returns
        the rows written."""
        c = self.store.campaign(campaign_id)
        if str(path).endswith(".parquet"):
            return tables.write_parquet(self.store, c, table, path)
        text = tables.csv_text(self.store, c, table)
        Path(path).write_text(text)
        return text.count("\n") - 1

    def flares_runs(self) -> "pd.DataFrame":
        """Every FLARES validation in the database: one row per run of a scenario and page (its figures), with the
        validation's policy and verdict."""
        pd = tables.pandas()
        rows = []
        for run_id, chip, _block, _page, result, campaign_id in self.store.flares_runs():
            v = result.get("verdict", {})
            for r in result.get("runs", []):
                rows.append({"validation": run_id, "campaign": campaign_id, "chip": chip, "policy": result.get("policy", "FLARES"),
                             "met": v.get("met"), **{k: val for k, val in r.items() if not isinstance(val, (list, dict))}})
        return pd.DataFrame(rows)

    def fit(self, campaign_ids: Sequence[int]) -> dict[str, FitResult]:
        """Eq. 5 fitted to the campaigns' checkpoints per page type (blocks as clusters for the intervals), as
        ``nandrig fit`` does: ``{"all": ..., "lower": ..., "upper": ...}`` (all pages, then each type alone)."""
        rows = [r for cid in campaign_ids for r in export_rows(self.store, self.store.campaign(cid), by_block=True)]
        if not rows:
            raise NandrigError(f"campaigns {list(campaign_ids)} have no checkpoints to fit")
        return fit_page_types(measurements(rows))
