"""The FLARES tables in the fixed point the firmware uses, shared by the Python reference and the C header.

RBER values are unsigned Q48 (value / 2**48). The model's two time-dependent
terms are tabulated so the firmware needs no floating point:

* ``wr[c]``  = RBER_wr(c * pe_step), Q48;
* ``rd_pe[c]`` = Bo * (c * pe_step)**(n*m), Q48 (the retention term's P/E factor);
* ``rd_t[k]`` = h(s_k / 3600)**m, Q16 (its time factor: h(t) = t for eq. 5's
  power law, ln(1 + t/tau) for the log law), on a time grid ``s_k`` in seconds
  (16 s * 2**(k/4), rounded), so RBER_rd(pe, s) = rd_pe(pe) * rd_t(s) >> 16;
* P/E and time lookups interpolate linearly between grid points, with
  integer arithmetic whose every rounding is a floor, identical in C and
  Python (tests compare them bit for bit).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from nandrig.characterization.rber import RberParams
from nandrig.characterization.tables import RBER_FRAC_BITS, CorrTable, RetentionGrid, minutes_fixed, rber_fixed

Q = 1 << RBER_FRAC_BITS
T_FRAC_BITS = 16
T_GRID = 104  # 16 s .. 16 * 2**(103/4) s, about 30 years

# guarded FLARES' memory (characterization/flares.py TypeCounts): a page type's counts halve once its model
# expected this many errors of them; the firmware's FLARES_GUARD_MEMORY, written into the tables' header
GUARD_MEMORY = 1024
# and until its model expected this many errors of a page type's reads, the model is untested: FLARES' margin of 2
GUARD_MIN_EXPECTED = 16


def time_grid() -> tuple[int, ...]:
    return tuple(int(round(16 * 2 ** (k / 4))) for k in range(T_GRID))


@dataclass(frozen=True)
class FixedTables:
    t_min: int
    t_max: int
    codeword_bits: int
    pe_step: int
    rber_max: tuple[int, ...]  # Q48, index t - t_min
    mrt_min: tuple[tuple[int, ...], ...]  # minutes [t - t_min][pe column]
    wr: tuple[int, ...]  # Q48 per pe column
    rd_pe: tuple[int, ...]  # Q48 per pe column
    t_grid: tuple[int, ...]  # seconds
    rd_t: tuple[int, ...]  # Q16

    @classmethod
    def build(cls, params: RberParams, table: CorrTable, grid: RetentionGrid) -> "FixedTables":
        step = grid.pe[1] - grid.pe[0]
        wr = tuple(max(0, rber_fixed(float(params.rber_wr(pe)))) for pe in grid.pe)
        rd_pe = tuple(rber_fixed(float(params.pe_term(pe))) for pe in grid.pe)
        tg = time_grid()
        rd_t = tuple(int(math.floor(float(params.time_term(s / 3600.0)) * (1 << T_FRAC_BITS))) for s in tg)
        return cls(table.t_min, table.t_max, table.k_bits, step, tuple(rber_fixed(r) for r in table.rber_max),
                   tuple(tuple(minutes_fixed(h) for h in row) for row in grid.hours), wr, rd_pe, tg, rd_t)

    # -- lookups, mirrored exactly in firmware/flares/flares.c ---------------------
    def _col(self, pe: int) -> tuple[int, int]:
        last = len(self.wr) - 1
        c = pe // self.pe_step
        if c >= last:
            return last, 0
        return c, pe - c * self.pe_step

    def _interp(self, tab: tuple[int, ...], pe: int) -> int:
        c, frac = self._col(pe)
        if frac == 0:
            return tab[c]
        return (tab[c] * (self.pe_step - frac) + tab[c + 1] * frac) // self.pe_step

    def rber_wr(self, pe: int) -> int:
        return self._interp(self.wr, pe)

    def rd_time(self, seconds: int) -> int:
        g, v = self.t_grid, self.rd_t
        if seconds <= 0:
            return 0
        if seconds < g[0]:
            return v[0] * seconds // g[0]
        if seconds >= g[-1]:
            return v[-1]
        lo, hi = 0, len(g) - 1  # g[lo] <= seconds < g[hi]
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if g[mid] <= seconds:
                lo = mid
            else:
                hi = mid
        return v[lo] + (v[hi] - v[lo]) * (seconds - g[lo]) // (g[hi] - g[lo])

    def rber_rd(self, pe: int, seconds: int) -> int:
        return (self._interp(self.rd_pe, pe) * self.rd_time(seconds)) >> T_FRAC_BITS

    def max_ret_seconds(self, t: int, pe: int) -> int | None:
        """None: always met. 0: never met (any retention raises the alarm)."""
        cols = len(self.wr)
        col = min(-(-pe // self.pe_step), cols - 1)  # the next grid point up: limits fall with wear
        m = self.mrt_min[t - self.t_min][col]
        return None if m == 0xFFFFFFFF else m * 60

    def t_for(self, proj: int) -> int:
        """Smallest t whose range holds proj (t_max when even it does not)."""
        for i, top in enumerate(self.rber_max):
            if proj <= top:
                return self.t_min + i
        return self.t_max


def header_extra(models: list[FixedTables]) -> list[str]:
    """Lines the C header adds for FLARES' model evaluation, one table set per model."""
    ft = models[0]
    lines = [
        f"#define FLARES_CODEWORD_BITS {ft.codeword_bits}u",
        f"#define FLARES_T_FRAC_BITS {T_FRAC_BITS}u",
        f"#define FLARES_T_GRID {len(ft.t_grid)}u",
        "",
        "/* retention time grid, seconds: round(16 * 2^(k/4)) */",
        "static const uint32_t flares_t_grid[FLARES_T_GRID] = {",
    ]
    lines += _rows([f"{v}u" for v in ft.t_grid], 8)
    lines += ["};", ""]
    for name, ctype, what, cells, per in (
            ("flares_rber_wr_tab", "uint64_t", "RBER_wr(col * FLARES_PE_STEP), Q48", lambda m: [
                f"0x{v:012x}ull" for v in m.wr], 4),
            ("flares_rd_pe", "uint64_t", "Bo * (col * FLARES_PE_STEP)^(n*m): the retention term's P/E factor, Q48",
             lambda m: [f"0x{v:012x}ull" for v in m.rd_pe], 4),
            ("flares_rd_t", "uint32_t", "h(t_grid[k] / 3600)^m, the retention term's time factor (h: the model's "
             "law), Q16", lambda m: [f"{v}u" for v in m.rd_t], 8)):
        size = "FLARES_T_GRID" if name == "flares_rd_t" else "FLARES_PE_COLS"
        lines += [f"/* {what} */", f"static const {ctype} {name}[FLARES_MODELS][{size}] = {{"]
        for m in models:
            lines += ["  {"] + _rows(cells(m), per) + ["  },"]
        lines += ["};", ""]
    return lines


def _rows(cells: list[str], per: int) -> list[str]:
    return ["    " + ", ".join(cells[i:i + per]) + "," for i in range(0, len(cells), per)]


def c_header(params: RberParams, table: CorrTable, grid: RetentionGrid, guard: str = "NANDRIG_FLARES_TABLES_H",
             upper: RberParams | None = None) -> str:
    """Fixed-point tables for the firmware. Deterministic: same inputs, same bytes.

    With ``upper``, two models: ``params`` for lower pages (model 0), ``upper`` for upper pages (model 1).
    """
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
        f"#define FLARES_GUARD_MEMORY {GUARD_MEMORY}u /* guarded FLARES: a page type's counts halve past this */",
        f"#define FLARES_GUARD_MIN_EXPECTED {GUARD_MIN_EXPECTED}u /* and test the model from this many on */",
        f"#define FLARES_T_COUNT {nt}u",
        f"#define FLARES_RBER_FRAC_BITS {RBER_FRAC_BITS}u",
        f"#define FLARES_PE_STEP {step}u",
        f"#define FLARES_PE_COLS {npe}u",
        "#define FLARES_MRT_NEVER 0u",
        "#define FLARES_MRT_ALWAYS 0xFFFFFFFFu",
        "",
        "static const uint64_t flares_corr_rber_max[FLARES_T_COUNT] = {",
    ]
    vals = [f"0x{rber_fixed(r):012x}ull" for r in table.rber_max]
    for i in range(0, nt, 4):
        lines.append("    " + ", ".join(vals[i:i + 4]) + ",")
    lines += ["};", "",
              "static const uint32_t flares_max_ret_time_min[FLARES_MODELS][FLARES_T_COUNT][FLARES_PE_COLS] = {"]
    for i, (_, g) in enumerate(models):
        lines.append(f"  /* model {i} */ {{")
        for t, row in zip(g.t, g.hours):
            cells = [f"{minutes_fixed(h)}u" for h in row]
            lines.append(f"    /* t={t} */ {{")
            for j in range(0, npe, 8):
                lines.append("        " + ", ".join(cells[j:j + 8]) + ",")
            lines.append("    },")
        lines.append("  },")
    lines += ["};", ""]
    lines += header_extra([FixedTables.build(p, table, g) for p, g in models])
    lines += [f"#endif /* {guard} */", ""]
    return "\n".join(lines)
