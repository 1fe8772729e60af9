"""The RBER model of FLARES eq. 5 and its named parameter sets.

RBER(pe, t_h) = A*exp(B*pe) + C + Bo*(pe**n * h(t_h))**m
              = RBER_wr(pe)       + RBER_rd(pe, t_h)

The retention law picks h: ``power`` is eq. 5 as published (h = t_h);
``log`` takes h = ln(1 + t_h/tau_h), the log-time charge loss that many MLC
parts (and the virtual chip) show: slower than any power of t at long times.
Both factor into a P/E term times a time term, which is what the FLARES
tables store, so the firmware serves either law unchanged.

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
RETENTION_LAWS = ("power", "log")


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
    law: str = "power"  # retention law, RETENTION_LAWS
    tau_h: float = 0.0  # the log law's time constant, hours (unused by the power law)
    # wear below which the model is not extrapolated: RBER grows with wear, so below its least-worn measurement a
    # bound serves that wear's RBER (0: eq. 5 at every wear)
    pe_floor: float = 0.0
    # the longest retention (hours) the model was calibrated at: tables promise no retention beyond it (inf: any)
    hours_max: float = math.inf

    def __post_init__(self) -> None:
        if self.law not in RETENTION_LAWS:
            raise NandrigError(f"unknown retention law {self.law!r} ({', '.join(RETENTION_LAWS)})")
        if self.law == "log" and not (isinstance(self.tau_h, (int, float)) and math.isfinite(self.tau_h)
                                      and self.tau_h > 0):
            raise NandrigError(f"the log retention law needs tau_h > 0 hours, got {self.tau_h!r}")
        for f in PARAM_NAMES:
            v = getattr(self, f)
            if not isinstance(v, (int, float)) or not math.isfinite(v):
                raise NandrigError(f"RBER parameter {f} must be a finite number, got {v!r}")
        if self.Bo < 0 or self.m <= 0 or self.n <= 0:
            raise NandrigError("RBER parameters need Bo >= 0, m > 0 and n > 0")
        if not (isinstance(self.pe_floor, (int, float)) and math.isfinite(self.pe_floor) and self.pe_floor >= 0):
            raise NandrigError(f"RBER parameter pe_floor must be a wear >= 0, got {self.pe_floor!r}")
        if not (isinstance(self.hours_max, (int, float)) and self.hours_max > 0):
            raise NandrigError(f"RBER parameter hours_max must be a retention > 0 hours, got {self.hours_max!r}")
        if self.A + self.C < 0:
            raise NandrigError(f"RBER parameters give a negative RBER at 0 P/E (A + C = {self.A + self.C:g})")

    def as_dict(self) -> dict[str, float | str]:
        d: dict[str, float | str] = {k: float(getattr(self, k)) for k in PARAM_NAMES}
        if self.law != "power":
            d.update(law=self.law, tau_h=float(self.tau_h))
        if self.pe_floor:
            d.update(pe_floor=float(self.pe_floor))
        if math.isfinite(self.hours_max):
            d.update(hours_max=float(self.hours_max))
        return d

    def to_json(self, path: str | Path) -> None:
        data = {"name": self.name, **self.as_dict()}
        Path(path).write_text(json.dumps(data, indent=2) + "\n")

    @classmethod
    def from_mapping(cls, data: dict, name: str = "") -> "RberParams":
        missing = [k for k in PARAM_NAMES if k not in data]
        if missing:
            raise NandrigError(f"RBER parameters lack {', '.join(missing)}")
        kwargs = {k: data[k] for k in PARAM_NAMES}
        return cls(**kwargs, name=str(data.get("name", name)), law=str(data.get("law", "power")),
                   tau_h=data.get("tau_h", 0.0) if data.get("tau_h") is not None else 0.0,
                   pe_floor=data.get("pe_floor") or 0.0, hours_max=data.get("hours_max") or math.inf)

    # -- the model -----------------------------------------------------------
    def rber_wr(self, pe: ArrayLike) -> np.ndarray:
        """Error rate right after programming (eq. 2/4)."""
        pe = self._wear(pe)
        return self.A * np.exp(self.B * pe) + self.C

    def time_term(self, t_h: ArrayLike) -> np.ndarray:
        """h(t_h)**m: the retention term's dependence on time."""
        t_h = _check_nonneg(t_h, "retention time")
        h = t_h if self.law == "power" else np.log1p(t_h / self.tau_h)
        return h**self.m

    def pe_term(self, pe: ArrayLike) -> np.ndarray:
        """Bo * pe**(n*m): the retention term's dependence on wear."""
        return self.Bo * self._wear(pe) ** (self.n * self.m)

    def _wear(self, pe: ArrayLike) -> np.ndarray:
        return np.maximum(_check_nonneg(pe, "P/E count"), self.pe_floor)

    def rber_rd(self, pe: ArrayLike, t_h: ArrayLike) -> np.ndarray:
        """Extra error rate accumulated over retention time ``t_h`` hours (eq. 3, or its log-time form)."""
        return self.pe_term(pe) * self.time_term(t_h)

    def hours_for(self, time_term: float) -> float:
        """The retention time whose time term is ``time_term`` (inverse of :meth:`time_term`)."""
        h = time_term ** (1.0 / self.m)
        if self.law == "power":
            return h
        return math.inf if h > 700 else self.tau_h * math.expm1(h)

    def rber(self, pe: ArrayLike, t_h: ArrayLike = 0.0) -> np.ndarray:
        return self.rber_wr(pe) + self.rber_rd(pe, t_h)


def _check_nonneg(x: ArrayLike, what: str) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if a.ndim == 0:  # a scalar is the common call (FLARES, the chip): numpy's reductions would cost most of it
        if not 0 <= float(a) < math.inf:
            raise NandrigError(f"{what} must be finite and >= 0")
        return a
    if np.any(~np.isfinite(a)) or np.any(a < 0):
        raise NandrigError(f"{what} must be finite and >= 0")
    return a


def builtin_param_sets() -> list[str]:
    pkg = resources.files("nandrig.characterization") / "params"
    return sorted(p.name[:-5] for p in pkg.iterdir() if p.name.endswith(".json"))


def load_params(name_or_path: str | Path, page_type: str | None = None) -> RberParams:
    """A named built-in set (e.g. ``flares-taco2014``) or a JSON file path.

    ``page_type`` (``lower``/``upper``) picks that page type's model from a ``nandrig fit --save`` file.
    """
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
    if page_type is not None:
        types = data.get("page_types") or {}
        if page_type not in types:
            have = ", ".join(sorted(types)) or "none"
            raise NandrigError(f"parameter set {label} has no {page_type}-page model (page types: {have}; "
                               "fit data exported with --by-block)")
        data = types[page_type]
    if any(data.get(k) is None for k in PARAM_NAMES if k in data):
        undet = [k for k in PARAM_NAMES if k in data and data[k] is None]
        raise NandrigError(f"parameter set {label} leaves {', '.join(undet)} undetermined")
    name = path.stem if path.suffix else label
    return RberParams.from_mapping(data, name=f"{name}:{page_type}" if page_type else name)


def page_types_in(name_or_path: str | Path) -> list[str]:
    """The page types a parameter set has models for (none for a plain one)."""
    label, path = str(name_or_path), Path(str(name_or_path))
    try:
        if label in builtin_param_sets():
            data = json.loads((resources.files("nandrig.characterization") / "params" / f"{label}.json").read_text())
        elif path.is_file():
            data = json.loads(path.read_text())
        else:
            return []
    except (OSError, json.JSONDecodeError):
        return []  # load_params says what is wrong with it
    types = data.get("page_types") if isinstance(data, dict) else None
    return sorted(types) if isinstance(types, dict) else []


def load_models(name_or_path: str | Path) -> list[RberParams]:
    """The lower- and upper-page models of a set that has both, else its one model."""
    if {"lower", "upper"} <= set(page_types_in(name_or_path)):
        return [load_params(name_or_path, "lower"), load_params(name_or_path, "upper")]
    return [load_params(name_or_path)]


__all__ = ["RberParams", "PARAM_NAMES", "RETENTION_LAWS", "load_params", "load_models", "builtin_param_sets"]
