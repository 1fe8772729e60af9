"""Chip profiles: a chip design as data (geometry, identity, timing, defects, physics)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from nandrig.chip.geometry import Geometry
from nandrig.chip.onfi import OptionalCommand, ParameterPage
from nandrig.boards.sim.physics import Physics
from nandrig.errors import NandrigError


@dataclass(frozen=True)
class Timing:
    t_r_us: float
    t_prog_lsb_us: float
    t_prog_msb_us: float
    t_prog_drop: float  # fractional drop of program time at the rated endurance
    t_bers_us: float
    t_bers_growth: float  # fractional rise of erase time at the rated endurance
    jitter: float  # per-operation relative spread
    chip_sigma: float  # chip-to-chip relative spread


@dataclass(frozen=True)
class Defects:
    factory_bad_rate: float
    wearout_median: float  # P/E count where a block's program/erase starts failing (median)
    wearout_sigma: float  # lognormal spread of that onset


@dataclass(frozen=True)
class Variation:
    chip_sigma: float  # relative spread of program noise from chip to chip
    block_sigma: float  # ... and from block to block
    rd_onset_min: float  # block reads at which read disturb becomes visible: log-uniform range
    rd_onset_max: float


@dataclass(frozen=True)
class ChipProfile:
    name: str
    description: str
    identity: dict
    geometry: Geometry
    onfi: dict
    timing: Timing
    defects: Defects
    variation: Variation
    physics: Physics

    @classmethod
    def from_mapping(cls, d: dict) -> "ChipProfile":
        try:
            ph = dict(d["physics"])
            for k in ("vref", "mu", "ret_k"):
                ph[k] = tuple(ph[k])
            prof = cls(
                name=d["name"], description=d.get("description", ""), identity=dict(d["identity"]),
                geometry=Geometry(**d["geometry"]), onfi=dict(d["onfi"]), timing=Timing(**d["timing"]),
                defects=Defects(**d["defects"]), variation=Variation(**d["variation"]), physics=Physics(**ph),
            )
        except (KeyError, TypeError) as e:
            raise NandrigError(f"chip profile is malformed: {e}") from None
        g = prof.geometry
        if g.pages_per_block % 2 or g.pages_per_block < 4 or g.blocks < 1 or g.page_bytes < 8:
            raise NandrigError("chip geometry needs an even page count >= 4 per block, >= 1 block, >= 8-byte pages")
        return prof

    def parameter_page(self) -> ParameterPage:
        g, o, t = self.geometry, self.onfi, self.timing
        return ParameterPage(
            manufacturer=self.identity["manufacturer"], model=self.identity["model"],
            jedec_id=self.identity["jedec_id"], page_bytes=g.page_bytes, spare_bytes=g.spare_bytes,
            pages_per_block=g.pages_per_block, blocks_per_lun=g.blocks, luns=1, bits_per_cell=2,
            max_bad_blocks_per_lun=o["max_bad_blocks"], endurance_cycles=o["endurance_cycles"],
            programs_per_page=o["programs_per_page"], ecc_bits=o["ecc_bits"],
            timing_modes=tuple(o["timing_modes"]),
            t_prog_max_us=int(round(t.t_prog_msb_us * 1.5)), t_bers_max_us=int(round(t.t_bers_us * 3)),
            t_r_max_us=int(round(t.t_r_us * 1.3)),
            optional_commands=OptionalCommand.GET_SET_FEATURES
            | (OptionalCommand.READ_UNIQUE_ID if o.get("unique_id", True) else 0),
        )


def profile_names() -> list[str]:
    pkg = resources.files("nandrig.boards.sim") / "profiles"
    return sorted(p.name[:-5] for p in pkg.iterdir() if p.name.endswith(".json"))


def load_profile(name_or_path: str) -> ChipProfile:
    if name_or_path in profile_names():
        text = (resources.files("nandrig.boards.sim") / "profiles" / f"{name_or_path}.json").read_text()
    elif Path(name_or_path).suffix == ".json":
        try:
            text = Path(name_or_path).read_text()
        except OSError as e:
            raise NandrigError(f"cannot read chip profile {name_or_path}: {e.strerror}") from None
    else:
        raise NandrigError(f"unknown chip profile {name_or_path!r} (known: {', '.join(profile_names())})")
    try:
        return ChipProfile.from_mapping(json.loads(text))
    except json.JSONDecodeError as e:
        raise NandrigError(f"chip profile {name_or_path} is not valid JSON: {e.msg}") from None
