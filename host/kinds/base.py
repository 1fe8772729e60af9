"""A campaign kind as one unit: its parameters (a frozen dataclass), its plan, its CLI options and its report
section. Each kind lives in a module of this package and is found through :data:`nandrig.host.kinds.KINDS`."""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import click

from nandrig.characterization.arrhenius import check_temperature
from nandrig.chip.geometry import Geometry, PageMap
from nandrig.errors import NandrigError
from nandrig.host.lab.chamber import read_settings
from nandrig.host.kinds.steps import Step
from nandrig.host.lab.oven import SCPI, check_oven

if TYPE_CHECKING:
    from nandrig.host.storage.store import Campaign, Store

P = TypeVar("P", bound="KindParams")


class ReportPage(Protocol):
    """What a kind's report section writes into (the report's page, nandrig.host.views.report_page.Report)."""

    store: "Store"
    sections: list[str]

    def fig(self, fig, name: str, caption: str) -> None: ...

    def subplots(self, *args, **kw): ...

    def export_rows(self, c: "Campaign") -> list[dict]: ...

    def p(self, text: str) -> None: ...


@dataclass(frozen=True)
class KindParams:
    """What every campaign has: the blocks it reserves, the seed of its data patterns, and how retention time
    passes for the kinds that wait (virtual: the rig's clock, wall: really wait, manual: the operator bakes)."""

    blocks: tuple[int, ...]
    seed: int
    oven: str = field(default="virtual", kw_only=True)  # virtual, wall, manual or scpi:RESOURCE
    temp_c: float = field(default=25.0, kw_only=True)  # oven temperature (bake) or ambient, degC
    chamber: dict | None = field(default=None, kw_only=True)  # scpi: the chamber's settings (--chamber)
    # each block's recorded P/E when the campaign was made (in the order of ``blocks``; empty: all fresh): plans
    # take blocks from there to their wear levels, which are absolute
    start_pe: tuple[int, ...] = field(default=(), kw_only=True)

    @property
    def worn(self) -> dict[int, int]:
        return dict(zip(self.blocks, self.start_pe))

    @classmethod
    def from_mapping(cls: type[P], d: Mapping[str, Any]) -> P:
        """From the store's JSON or a caller's dict; lists become tuples."""
        names = {f.name for f in dataclasses.fields(cls)}
        required = {f.name for f in dataclasses.fields(cls)
                    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
        if set(d) - names or required - set(d):
            raise NandrigError(f"campaign parameters {sorted(d)} do not fit {cls.__name__} "
                               f"(unknown: {sorted(set(d) - names)}, missing: {sorted(required - set(d))})")
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})

    def to_mapping(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}


@dataclass(frozen=True)
class CampaignKind:
    name: str
    help: str
    params: type[KindParams]
    plan: Callable[[Any, Geometry], list[Step]]
    options: tuple[Callable, ...]  # click option decorators, in the order `nandrig run NAME --help` lists them
    from_cli: Callable[..., dict]  # those options' values -> the kind's own parameter fields
    report: Callable[[ReportPage, "Campaign", Any, PageMap], None]
    feeds_fit: bool = False  # its checkpoints are (P/E, retention, RBER) points for the RBER model
    # the kind's own results (`nandrig run NAME --json`) and the lines they add to the end-of-run summary
    results: Callable[["Store", "Campaign", Any, PageMap], dict] | None = None
    summary: Callable[[dict], list[str]] | None = None
    # refuses parameters the chip (the store's row: manufacturer, model, ...) cannot take, before anything is read
    check_chip: Callable[[Any, dict], None] | None = None


# retention time source and temperature, for the kinds that wait
OVEN_OPTIONS = (
    click.option("--oven", default=None, callback=lambda ctx, param, v: check_oven(v),
                 help="Retention time source: virtual, wall, manual, or scpi:RESOURCE (a thermal chamber on a VISA "
                      "resource). Default: virtual on --rig sim, wall otherwise."),
    click.option("--temp", "temp_c", type=float, default=25.0, show_default=True,
                 help="Oven temperature (bake) or ambient, degC."),
    click.option("--chamber", "chamber_file", type=click.Path(dir_okay=False), default=None,
                 help="With --oven scpi:...: the chamber's commands and tolerances (JSON; docs/characterization.md)."),
)


def oven_fields(oven: str | None, temp_c: float, chamber_file: str | None) -> dict:
    """The parameters OVEN_OPTIONS give a kind; a chamber's settings are kept in the campaign."""
    if chamber_file is not None and not (oven or "").startswith(SCPI):
        raise click.BadParameter("--chamber goes with --oven scpi:RESOURCE")
    check_temperature(temp_c, powered=oven == "wall")
    chamber = read_settings(chamber_file) if chamber_file is not None else None
    return {"oven": oven, "temp_c": temp_c, "chamber": chamber}


_UNITS = {"h": 1.0, "d": 24.0, "w": 168.0, "mo": 720.0, "y": 8760.0}


def parse_int_list(text: str, what: str) -> list[int]:
    try:
        nums = [float(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise click.BadParameter(f"{what} must be a comma-separated list of integers, got {text!r}") from None
    if any(not math.isfinite(v) or v != int(v) for v in nums):  # 1e3 is an integer; 1.7 is not
        raise click.BadParameter(f"{what} takes whole numbers, got {text!r}")
    vals = [int(v) for v in nums]
    if not vals or any(v < 0 for v in vals):
        raise click.BadParameter(f"{what} needs one or more integers >= 0, got {text!r}")
    return vals


def parse_hours(text: str) -> list[float]:
    """Comma list of durations: plain hours or with a unit (h, d, w, mo, y): ``24,1w,1mo,1y``."""
    out = []
    for item in text.replace(" ", "").split(","):
        unit = next((u for u in sorted(_UNITS, key=len, reverse=True) if item.endswith(u)), "h")
        num = item[: len(item) - len(unit)] if item.endswith(unit) else item
        try:
            v = float(num) * _UNITS[unit]
        except ValueError:
            raise click.BadParameter(f"{item!r} is not a duration (e.g. 24, 36h, 1d, 1w, 1mo, 1y)") from None
        if not v > 0:
            raise click.BadParameter(f"durations must be > 0, got {item!r}")
        out.append(v)
    if out != sorted(out):
        raise click.BadParameter("retention times must increase")
    return out
