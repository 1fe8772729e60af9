"""FLARES tables: corr_table (the RBER interval each t serves), max_ret_time, and their C header.

max_ret_time(t, pe) is the largest retention (hours) for which the model RBER
of a page at ``pe`` stays within what ``t`` corrects. Two values are special:

* ``math.inf`` (ALWAYS): the target holds at any retention (pe = 0 or Bo = 0).
* ``-1.0`` (NEVER): the target fails even right after programming, so any
  retention, 0 included, exceeds it and FLARES raises its alarm at once.

In JSON these become ``null`` (always) and ``-1`` (never); in the C header
``FLARES_MRT_ALWAYS`` (0xFFFFFFFF) and ``FLARES_MRT_NEVER`` (0).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from nandrig.characterization.rber import RberParams
from nandrig.characterization.uber import check_uber, codeword_bits, gf_degree, rber_max
from nandrig.errors import NandrigError

NEVER = -1.0
ALWAYS = math.inf
RBER_FRAC_BITS = 48  # C header RBER fixed point: value / 2**48
PAPER_CODEWORD_BYTES = 4096  # the FLARES paper's codeword (a rig decodes its own, INFO's codeword_bytes)


@dataclass(frozen=True)
class CorrTable:
    uber: float
    k_bits: int
    t_min: int
    t_max: int
    rber_max: tuple[float, ...]  # index t - t_min

    @classmethod
    def build(cls, target_uber: float, k_bits: int, t_min: int = 1, t_max: int = 100) -> "CorrTable":
        check_uber(target_uber)
        if not 1 <= t_min <= t_max <= 512:
            raise NandrigError(f"t range must satisfy 1 <= t_min <= t_max <= 512 (got {t_min}..{t_max})")
        if k_bits <= 0 or k_bits % 8:
            raise NandrigError(f"codeword must be a positive whole number of bytes (got {k_bits} bits)")
        maxima = []
        for t in range(t_min, t_max + 1):
            r = rber_max(t, target_uber, k_bits)
            # n grows by m bits per t, so in rare corners rber_max could dip; keep it monotone
            maxima.append(max(r, maxima[-1]) if maxima else r)
        if maxima[-1] <= 0:  # every bound underflowed: a table of zeros would send every page to t_max unnoticed
            raise NandrigError(f"no t up to {t_max} meets UBER {target_uber:g} on a {k_bits // 8}-byte codeword at any "
                               "RBER a double can hold; raise --t-max or the target UBER")
        return cls(target_uber, k_bits, t_min, t_max, tuple(maxima))

    @property
    def gf_m(self) -> int:
        return gf_degree(self.k_bits, self.t_max)

    def t_values(self) -> range:
        return range(self.t_min, self.t_max + 1)

    def rber_range(self, t: int) -> tuple[float, float]:
        i = t - self.t_min
        lo = 0.0 if i == 0 else self.rber_max[i - 1]
        return lo, self.rber_max[i]

    def t_for(self, rber: np.ndarray | float) -> np.ndarray:
        """Required t for each RBER; -1 where even t_max is not enough."""
        r = np.asarray(rber, dtype=float)
        idx = np.searchsorted(np.asarray(self.rber_max), r, side="left")
        return np.where(idx >= len(self.rber_max), -1, idx + self.t_min)

    def entries(self) -> list[dict]:
        out = []
        for t in self.t_values():
            lo, hi = self.rber_range(t)
            out.append({"t": t, "rber_min": lo, "rber_max": hi, "n_bits": codeword_bits(self.k_bits, t)})
        return out


def max_ret_time(params: RberParams, table: CorrTable, t: int, pe: float) -> float:
    """Largest retention in hours meeting the target with ``t`` at ``pe`` (see module doc)."""
    if not table.t_min <= t <= table.t_max:
        raise NandrigError(f"t={t} is outside the table's range {table.t_min}..{table.t_max}")
    if pe < 0:
        raise NandrigError(f"P/E count must be >= 0, got {pe}")
    margin = table.rber_max[t - table.t_min] - float(params.rber_wr(pe))
    if margin < 0:
        return NEVER
    term = float(params.pe_term(pe))
    h = params.hours_for(margin / term) if term > 0 else ALWAYS
    h = min(h, params.hours_max)  # no promise beyond the retention the model was calibrated at
    return h if math.isfinite(h) else ALWAYS


@dataclass(frozen=True)
class RetentionGrid:
    pe: tuple[int, ...]
    t: tuple[int, ...]
    hours: tuple[tuple[float, ...], ...]  # hours[t_index][pe_index]

    @classmethod
    def build(cls, params: RberParams, table: CorrTable, pe_max: int, pe_step: int) -> "RetentionGrid":
        if pe_step <= 0 or pe_max < 0:
            raise NandrigError("P/E grid needs pe_max >= 0 and pe_step > 0")
        pes = tuple(range(0, pe_max + pe_step, pe_step)) if pe_max % pe_step else tuple(range(0, pe_max + 1, pe_step))
        hours = tuple(tuple(max_ret_time(params, table, t, pe) for pe in pes) for t in table.t_values())
        return cls(pes, tuple(table.t_values()), hours)


def tables_json(params: RberParams, table: CorrTable, grid: RetentionGrid) -> dict:
    def enc(h: float) -> float | None:
        return None if h == ALWAYS else h

    return {
        "params": params.as_dict(),
        "params_name": params.name,
        "uber": table.uber,
        "codeword_bytes": table.k_bits // 8,
        "gf_m": table.gf_m,
        "corr_table": table.entries(),
        "max_ret_time_h": {
            "pe": list(grid.pe),
            "t": list(grid.t),
            "hours": [[enc(h) for h in row] for row in grid.hours],
            "layout": "hours[t_index][pe_index]; null = always met, -1 = never met",
        },
    }


def zero_in_fixed_point(table: CorrTable) -> list[int]:
    """The t whose RBER bound rounds to 0 in the C header's fixed point: FLARES on the rig never picks them."""
    return [t for t, r in zip(table.t_values(), table.rber_max) if rber_fixed(r) == 0]


def rber_fixed(r: float) -> int:
    # round down: a projected RBER just above a true limit then picks the next t (safe side)
    return int(math.floor(r * (1 << RBER_FRAC_BITS)))


def minutes_fixed(h: float) -> int:
    if h == ALWAYS:
        return 0xFFFFFFFF
    if h < 0:
        return 0
    return int(math.floor(h * 60.0)) if h * 60.0 < 0xFFFFFFFE else 0xFFFFFFFE
