"""What an LDPC controller's reads cost at a page's raw bit error rate: the sensing levels its decoder needs
there (hard read first, another level only while frames fail), as measured by `nandrig run flexlevel`.

The FTL does not run the LDPC decoder on every read (a replay makes millions): it reads the page on the rig,
counts its raw bit errors there, and looks the sensing levels up in a table of measured points per page type
(their Vth channels differ: a lower page at some raw BER can need more levels than an upper page at a higher
one), each a condition where a flexlevel campaign decoded every frame it read (raw BER at the hard read, the
levels that decoded them all). Between points the levels of the nearest point above are taken; a raw BER beyond
the last point is beyond what was shown to decode, and the read is reported uncorrectable.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from nandrig.chip.geometry import PageType
from nandrig.errors import NandrigError


@dataclass(frozen=True)
class SensingReach:
    """Per page type ("lower", "upper"), measured (raw BER, sensing levels that decoded every frame) points in
    order of raw BER, and where they come from."""

    points: dict[str, tuple[tuple[float, int], ...]]
    source: str

    def __post_init__(self) -> None:
        if set(self.points) != {t.name.lower() for t in PageType} or not all(self.points.values()):
            raise NandrigError(f"{self.source}: a sensing table needs conditions where every frame decoded on lower "
                               "and on upper pages")
        if any(list(p) != sorted(p) for p in self.points.values()):
            raise NandrigError(f"{self.source}: sensing points must be in order of raw BER")

    def levels(self, raw_ber: float, page_type: PageType | None) -> int | None:
        """Sensing levels a read of ``page_type`` at ``raw_ber`` needs (those of the nearest measured condition at
        or above it), or None beyond the table's reach. ``None`` for a page type: data spread over both (a
        reduced wordline's), the more of the two."""
        if page_type is None:
            both = [self.levels(raw_ber, t) for t in PageType]
            return None if None in both else max(both)
        return next((m for ber, m in self.points[page_type.name.lower()] if ber >= raw_ber), None)

    @property
    def max_levels(self) -> int:
        return max(m for p in self.points.values() for _, m in p)

    @classmethod
    def from_flexlevel(cls, results: dict, source: str) -> "SensingReach":
        """From a flexlevel campaign's results (``--json``): each condition whose frames all decoded at some level."""
        points: dict[str, list[tuple[float, int]]] = {t.name.lower(): [] for t in PageType}
        for c in results.get("conditions", []):
            if c.get("levels_decoding_all") is not None:
                points[c["page_type"]].append((float(c["rber"]), int(c["levels_decoding_all"])))
        return cls({k: tuple(sorted(v)) for k, v in points.items()}, source)

    @classmethod
    def load(cls, path: Path) -> "SensingReach":
        """A table as ``to_json`` writes it, or a flexlevel campaign's results (`nandrig run flexlevel --json`)."""
        try:
            data = json.loads(Path(path).read_text())
            if "conditions" in data:
                return cls.from_flexlevel(data, f"flexlevel results {path}")
            return cls({k: tuple((float(b), int(m)) for b, m in v) for k, v in data["points"].items()},
                       data["source"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            raise NandrigError(f"sensing table {path}: {e}") from None

    def to_json(self) -> str:
        """The table as ``load`` reads it, a page type's points to a line."""
        rows = ",\n".join(f'  "{k}": {json.dumps([[float(f"{b:.4g}"), m] for b, m in v])}' for k, v in self.points.items())
        return f'{{\n "source": {json.dumps(self.source)},\n "points": {{\n{rows}\n }}\n}}\n'




# The table measured on the virtual mlc-3x (params/sensing_mlc3x.json: how it was made is its source field)
DEFAULT = Path(__file__).with_name("params") / "sensing_mlc3x.json"
