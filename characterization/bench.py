"""``nandrig bench fit``: how long the robust fit takes on rig-like data."""
from __future__ import annotations

import platform
import statistics
import time

import numpy as np

from nandrig.characterization.fitting import fit, synthetic
from nandrig.characterization.rber import load_params
from nandrig.characterization.tables import PAPER_CODEWORD_BYTES, CorrTable

RETENTIONS = np.array([0.0, 24.0, 168.0, 720.0, 2160.0, 4380.0, 8760.0])
BITS_PER_POINT = 6.7e7  # one checkpoint of 16 blocks x 128 pages x 4096 bytes


def rig_like(n_points: int, seed: int):
    """n measurements at random wear (0-10k P/E) and campaign retention times."""
    rng = np.random.default_rng(seed)
    params = load_params("flares-taco2014")
    pe = np.round(rng.uniform(0, 10_000, n_points))
    h = rng.choice(RETENTIONS, n_points)
    return params, synthetic(params, pe, h, BITS_PER_POINT, seed=seed)


def bench_fit(repeats: int = 5) -> dict:
    table = CorrTable.build(1e-11, PAPER_CODEWORD_BYTES * 8)
    grid_pe, grid_h = np.meshgrid(np.arange(0, 10_001, 250), RETENTIONS)
    out: dict = {"host": platform.node(), "python": platform.python_version(), "repeats": repeats, "cases": []}
    for n in (1_000, 100_000):
        times, worst_dt = [], 0
        for r in range(repeats):
            params, data = rig_like(n, seed=r)
            t0 = time.perf_counter()
            res = fit(*data)
            times.append(time.perf_counter() - t0)
            truth = table.t_for(params.rber(grid_pe, grid_h))
            got = table.t_for(res.rber_params().rber(grid_pe, grid_h))
            worst_dt = max(worst_dt, int(np.max(np.abs(got - truth))))
        out["cases"].append({
            "n_points": n, "median_s": statistics.median(times), "min_s": min(times), "max_s": max(times),
            "r2_log_last": res.r2_log, "max_required_t_error": worst_dt,
        })
    out["target_100k_s"] = 2.0
    out["meets_target"] = out["cases"][-1]["median_s"] < 2.0
    return out
