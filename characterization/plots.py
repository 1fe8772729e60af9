"""Figures in the style of FLARES Fig. 3: RBER vs P/E and required t vs P/E, per retention time."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from nandrig.characterization.measurements import Measurements, poisson_interval  # noqa: E402
from nandrig.characterization.rber import RberParams  # noqa: E402
from nandrig.characterization.tables import CorrTable  # noqa: E402

# retention times worth a curve, with how an engineer names them
RETENTIONS_H: tuple[tuple[float, str], ...] = (
    (0.0, "0 h"), (24.0, "1 day"), (168.0, "1 week"), (720.0, "1 month"),
    (2160.0, "3 months"), (8760.0, "1 year"),
)


def _label(h: float) -> str:
    for v, name in RETENTIONS_H:
        if abs(v - h) < 1e-9:
            return name
    return f"{h:g} h"


def _pooled(pe: np.ndarray, rber: np.ndarray, bits: np.ndarray | None):
    """One point per P/E level: all its errors over all its bits (rows per block or page type pooled), with the
    95 % Poisson interval of that count (None without bit counts)."""
    if bits is None:
        return pe, rber, None
    levels, idx = np.unique(pe, return_inverse=True)
    errors, total = np.bincount(idx, np.round(rber * bits)), np.bincount(idx, bits)
    keep = errors > 0  # a level without an error has no place on a log axis
    y = errors[keep] / total[keep]
    lo, hi = poisson_interval(errors[keep], total[keep])
    return levels[keep], y, np.vstack([y - lo, hi - y])


def plot_rber_vs_pe(params: RberParams, path: str | Path, data: Measurements | None = None,
                    pe_max: float | None = None, title: str = "", band=None) -> Path:
    """RBER against P/E cycles, one curve per retention time; measured points on top.

    ``band(pe, t_h) -> (lo, hi)``: a confidence band drawn around each curve (FitResult.rber_band).
    """
    pe_max = pe_max or (float(np.max(data.pe)) if data is not None and len(data) else 10_000.0)
    pe = np.linspace(0, pe_max, 400)
    rets = sorted({h for h, _ in RETENTIONS_H} | (set(np.unique(data.retention_h)) if data is not None else set()))
    fig, ax = plt.subplots(figsize=(7.5, 5))
    colors = plt.cm.viridis(np.linspace(0, 0.9, len(rets)))
    for h, c in zip(rets, colors):
        ax.plot(pe, params.rber(pe, h), color=c, label=f"model, {_label(h)}")
        if band is not None:
            lo, hi = band(pe, np.full_like(pe, h))
            ax.fill_between(pe, lo, np.minimum(hi, 0.5), color=c, alpha=0.15, linewidth=0)
        if data is not None:
            sel = np.isclose(data.retention_h, h)
            if np.any(sel):
                x, y, err = _pooled(data.pe[sel], data.rber[sel], None if data.bits is None else data.bits[sel])
                ax.errorbar(x, y, yerr=err, fmt="o", ms=3.5, color=c, alpha=0.8, capsize=2, lw=1)
    ax.set_yscale("log")
    ax.set_xlabel("P/E cycles")
    ax.set_ylabel("raw bit error rate (errors / bit)")
    ax.set_title(title or f"RBER vs P/E ({params.name or 'fitted model'}; dots: measured)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    return _save(fig, path)


def plot_required_t(params: RberParams, table: CorrTable, path: str | Path, pe_max: float = 10_000.0) -> Path:
    """Required BCH correction capability against P/E cycles, one line per retention time."""
    pe = np.linspace(0, pe_max, 400)
    fig, ax = plt.subplots(figsize=(7.5, 5))
    colors = plt.cm.plasma(np.linspace(0, 0.85, len(RETENTIONS_H)))
    for (h, name), c in zip(RETENTIONS_H, colors):
        t = table.t_for(params.rber(pe, h)).astype(float)
        t[t < 0] = np.nan  # beyond t_max
        ax.step(pe, t, where="post", color=c, label=f"retention {name}")
    ax.set_xlabel("P/E cycles")
    ax.set_ylabel("required correction capability t (bits per codeword)")
    ax.set_title(f"Required t for UBER {table.uber:g}, {table.k_bits // 8}-byte codeword, "
                 f"GF(2^{table.gf_m}) ({params.name or 'model'})", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)


def _save(fig, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
