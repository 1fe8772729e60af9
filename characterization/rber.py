"""The RBER model of FLARES eq. 5 and its named parameter sets.

RBER(pe, t_h) = A*exp(B*pe) + C + Bo*(pe**n * t_h)**m
              = RBER_wr(pe)       + RBER_rd(pe, t_h)

Retention time is in hours at the 25 degC-equivalent reference (convert bakes
with :mod:`nandrig.characterization.arrhenius` first).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike

from nandrig.errors import NandrigError

PARAM_NAMES = ("A", "B", "C", "Bo", "m", "n")


@dataclass(frozen=True)
class RberParams:
    """Coefficients of eq. 5. ``Bo``, ``m`` and ``n`` only matter for retention > 0."""

    A: float
    B: float
    C: float
    Bo: float
    m: float
    n: float
    name: str = ""

    def __post_init__(self) -> None:
        for f in PARAM_NAMES:
            v = getattr(self, f)
            if not isinstance(v, (int, float)) or not math.isfinite(v):
                raise NandrigError(f"RBER parameter {f} must be a finite number, got {v!r}")
        if self.Bo < 0 or self.m <= 0 or self.n <= 0:
            raise NandrigError("RBER parameters need Bo >= 0, m > 0 and n > 0")
        if self.A + self.C < 0:
            raise NandrigError(f"RBER parameters give a negative RBER at 0 P/E (A + C = {self.A + self.C:g})")

    def as_dict(self) -> dict[str, float]:
        return {k: float(getattr(self, k)) for k in PARAM_NAMES}

    def to_json(self, path: str | Path) -> None:
        data = {"name": self.name, **self.as_dict()}
        Path(path).write_text(json.dumps(data, indent=2) + "\n")

    @classmethod
    def from_mapping(cls, data: dict, name: str = "") -> "RberParams":
        missing = [k for k in PARAM_NAMES if k not in data]
        if missing:
            raise NandrigError(f"RBER parameters lack {', '.join(missing)}")
        kwargs = {k: data[k] for k in PARAM_NAMES}
        return cls(**kwargs, name=str(data.get("name", name)))

    # -- the model -----------------------------------------------------------
    def rber_wr(self, pe: ArrayLike) -> np.ndarray:
        """Error rate right after programming (eq. 2/4)."""
        pe = _check_nonneg(pe, "P/E count")
        return self.A * np.exp(self.B * pe) + self.C

    def rber_rd(self, pe: ArrayLike, t_h: ArrayLike) -> np.ndarray:
        """Extra error rate accumulated over retention time ``t_h`` hours (eq. 3)."""
        pe = _check_nonneg(pe, "P/E count")
        t_h = _check_nonneg(t_h, "retention time")
        return self.Bo * (pe**self.n * t_h) ** self.m

    def rber(self, pe: ArrayLike, t_h: ArrayLike = 0.0) -> np.ndarray:
        return self.rber_wr(pe) + self.rber_rd(pe, t_h)


def _check_nonneg(x: ArrayLike, what: str) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if np.any(~np.isfinite(a)) or np.any(a < 0):
        raise NandrigError(f"{what} must be finite and >= 0")
    return a


def builtin_param_sets() -> list[str]:
    pkg = resources.files("nandrig.characterization") / "params"
    return sorted(p.name[:-5] for p in pkg.iterdir() if p.name.endswith(".json"))


def load_params(name_or_path: str | Path) -> RberParams:
    """A named built-in set (e.g. ``flares-taco2014``) or a JSON file path."""
    text: str
    label = str(name_or_path)
    path = Path(label)
    if label in builtin_param_sets():
        text = (resources.files("nandrig.characterization") / "params" / f"{label}.json").read_text()
    elif path.suffix == ".json" or path.exists():
        try:
            text = path.read_text()
        except OSError as e:
            raise NandrigError(f"cannot read parameter file {label}: {e.strerror}") from None
    else:
        known = ", ".join(builtin_param_sets())
        raise NandrigError(f"unknown parameter set {label!r} (known: {known}; or give a .json file)")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise NandrigError(f"parameter file {label} is not valid JSON: {e.msg} at line {e.lineno}") from None
    if not isinstance(data, dict):
        raise NandrigError(f"parameter file {label} must hold a JSON object")
    # a `nandrig fit --json` output is accepted as a parameter file
    if isinstance(data.get("params"), dict):
        data = data["params"]
    if any(data.get(k) is None for k in PARAM_NAMES if k in data):
        undet = [k for k in PARAM_NAMES if k in data and data[k] is None]
        raise NandrigError(f"parameter set {label} leaves {', '.join(undet)} undetermined")
    return RberParams.from_mapping(data, name=path.stem if path.suffix else label)


__all__ = ["RberParams", "PARAM_NAMES", "load_params", "builtin_param_sets"]
