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
    if pe == 0 or params.Bo == 0:
        return ALWAYS
    h = params.hours_for(margin / float(params.pe_term(pe)))
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
    return [t for t, r in zip(table.t_values(), table.rber_max) if _rber_fixed(r) == 0]


def _rber_fixed(r: float) -> int:
    # round down: a projected RBER just above a true limit then picks the next t (safe side)
    return int(math.floor(r * (1 << RBER_FRAC_BITS)))


def _minutes_fixed(h: float) -> int:
    if h == ALWAYS:
        return 0xFFFFFFFF
    if h < 0:
        return 0
    return int(math.floor(h * 60.0)) if h * 60.0 < 0xFFFFFFFE else 0xFFFFFFFE


def c_header(params: RberParams, table: CorrTable, grid: RetentionGrid, guard: str = "NANDRIG_FLARES_TABLES_H",
             upper: RberParams | None = None) -> str:
    """Fixed-point tables for the firmware. Deterministic: same inputs, same bytes.

    With ``upper``, two models: ``params`` for lower pages (model 0), ``upper`` for upper pages (model 1).
    """
    from nandrig.characterization.flares_tables import FixedTables, header_extra  # it imports this module

    nt, npe = len(grid.t), len(grid.pe)
    step = grid.pe[1] - grid.pe[0] if npe > 1 else 0
    models = [(params, grid)]
    if upper is not None:
        models.append((upper, RetentionGrid.build(upper, table, grid.pe[-1], step)))
    lines = [
        "/* FLARES tables generated by `nandrig tables`; do not edit."]
    for i, (p, _) in enumerate(models):
        role = "" if len(models) == 1 else ("lower pages, " if i == 0 else "upper pages, ")
        lines.append(f" * model {i}: {role}{p.name or 'custom'}: "
                     + ", ".join(f"{k}={v!r}" for k, v in p.as_dict().items()))
    lines += [
        f" * target UBER {table.uber!r}, codeword {table.k_bits // 8} data bytes, BCH over GF(2^{table.gf_m}).",
        " *",
        " * FLARES_MODELS: 1 (one model serves every page) or 2 (model 0 lower pages, model 1 upper pages);",
        " *   the per-model tables below have it as their first index.",
        " * flares_corr_rber_max[t - FLARES_T_MIN]: the largest RBER that t corrects to the",
        f" *   target, as an unsigned fixed-point fraction (RBER * 2^{RBER_FRAC_BITS}, rounded down).",
        " *   t serves RBERs in (entry[t-1], entry[t]]; FLARES_T_MIN serves (0, entry[0]].",
        " * flares_max_ret_time_min[model][t - FLARES_T_MIN][col]: largest retention in minutes (rounded",
        " *   down) that still meets the target with t at P/E count col * FLARES_PE_STEP.",
        " *   Look up col = ceil(pe / FLARES_PE_STEP), clamped to FLARES_PE_COLS - 1: retention",
        " *   limits fall with wear, so the next grid point up is the safe one.",
        " *   FLARES_MRT_ALWAYS: no retention limit; FLARES_MRT_NEVER: not met even at 0 h.",
        " */",
        f"#ifndef {guard}",
        f"#define {guard}",
        "",
        "#include <stdint.h>",
        "",
        f"#define FLARES_MODELS {len(models)}u",
        f"#define FLARES_CODEWORD_BYTES {table.k_bits // 8}u",
        f"#define FLARES_GF_M {table.gf_m}u",
        f"#define FLARES_T_MIN {table.t_min}u",
        f"#define FLARES_T_MAX {table.t_max}u",
        f"#define FLARES_T_COUNT {nt}u",
        f"#define FLARES_RBER_FRAC_BITS {RBER_FRAC_BITS}u",
        f"#define FLARES_PE_STEP {step}u",
        f"#define FLARES_PE_COLS {npe}u",
        "#define FLARES_MRT_NEVER 0u",
        "#define FLARES_MRT_ALWAYS 0xFFFFFFFFu",
        "",
        "static const uint64_t flares_corr_rber_max[FLARES_T_COUNT] = {",
    ]
    vals = [f"0x{_rber_fixed(r):012x}ull" for r in table.rber_max]
    for i in range(0, nt, 4):
        lines.append("    " + ", ".join(vals[i:i + 4]) + ",")
    lines += ["};", "",
              "static const uint32_t flares_max_ret_time_min[FLARES_MODELS][FLARES_T_COUNT][FLARES_PE_COLS] = {"]
    for i, (_, g) in enumerate(models):
        lines.append(f"  /* model {i} */ {{")
        for t, row in zip(g.t, g.hours):
            cells = [f"{_minutes_fixed(h)}u" for h in row]
            lines.append(f"    /* t={t} */ {{")
            for j in range(0, npe, 8):
                lines.append("        " + ", ".join(cells[j:j + 8]) + ",")
            lines.append("    },")
        lines.append("  },")
    lines += ["};", ""]
    lines += header_extra([FixedTables.build(p, table, g) for p, g in models])
    lines += [f"#endif /* {guard} */", ""]
    return "\n".join(lines)
