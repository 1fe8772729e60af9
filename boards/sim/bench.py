"""``nandrig bench chip``: calibration against eq. 5, path throughputs, a whole-life run."""
from __future__ import annotations

import statistics
import time

from nandrig.boards.sim.chip import VirtualChip
from nandrig.chip.pattern import page_seed
from nandrig.characterization.rber import load_params

GRID_PE = (1000, 2000, 5000, 10000)
GRID_H = ((0.0, "0"), (24.0, "1 day"), (720.0, "1 month"), (8760.0, "1 year"))
LIFE_CHECKPOINTS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 9500, 10000)


def usable_blocks(chip: VirtualChip, count: int, start: int = 0) -> list[int]:
    return [b for b in range(start, chip.geometry.blocks) if b not in chip.factory_bad][:count]


def program_block(chip: VirtualChip, block: int, campaign_seed: int) -> None:
    chip.erase(block)
    for p in range(chip.geometry.pages_per_block):
        chip.program(block, p, seed=page_seed(campaign_seed, block, p))


def measured_rber(chip: VirtualChip, blocks: list[int], pe: int, hours: float, campaign_seed: int = 1) -> tuple[float, int, int]:
    """As a rig measures: cycle to pe, program random data, wait, read every page, count bit errors."""
    for b in blocks:
        chip.cycle(b, pe - 1 - chip.pe_count(b), seed=campaign_seed, program=False)
        program_block(chip, b, campaign_seed)
    chip.wait(hours)
    errors = sum(int(chip.measure(b).errors.sum()) for b in blocks)
    bits = len(blocks) * chip.geometry.pages_per_block * chip.cells
    return errors / bits, errors, bits


def calibration_grid(profile: str = "mlc-3x", seed: int = 1, blocks_per_point: int = 16) -> list[dict]:
    params = load_params("flares-taco2014")
    chip = VirtualChip(profile, seed)
    out = []
    start = 0
    for pe in GRID_PE:
        for hours, label in GRID_H:
            blocks = usable_blocks(chip, blocks_per_point, start)
            start = blocks[-1] + 1
            rber, errors, bits = measured_rber(chip, blocks, pe, hours)
            model = float(params.rber(pe, hours))
            out.append({"pe": pe, "retention": label, "retention_h": hours, "measured_rber": rber,
                        "errors": errors, "bits": bits, "eq5_rber": model, "ratio": rber / model})
    return out


def path_rates(profile: str = "mlc-3x", seed: int = 2, repeats: int = 3) -> dict:
    chip = VirtualChip(profile, seed)
    b = usable_blocks(chip, 1)[0]
    chip.cycle(b, 2999, seed=1, program=False)
    program_block(chip, b, 3)
    n = chip.geometry.pages_per_block
    byte_rates, stat_rates = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for p in range(n):
            chip.read(b, p)
        byte_rates.append(n / (time.perf_counter() - t0))
        t0 = time.perf_counter()
        for _ in range(10):
            chip.measure(b)
        stat_rates.append(10 * n / (time.perf_counter() - t0))
    return {"byte_path_page_reads_per_s": statistics.median(byte_rates),
            "stat_path_page_measurements_per_s": statistics.median(stat_rates)}


def whole_life(profile: str = "mlc-3x", seed: int = 3, blocks: int = 16) -> dict:
    """Endurance to 10,000 P/E on 16 blocks, measuring every page at 20 checkpoints."""
    t0 = time.perf_counter()
    chip = VirtualChip(profile, seed)
    chosen = usable_blocks(chip, blocks)
    rber_at = {}
    for cp in LIFE_CHECKPOINTS:
        errors = 0
        for b in chosen:
            chip.cycle(b, cp - 1 - chip.pe_count(b), seed=5)
            program_block(chip, b, campaign_seed=cp)
            errors += int(chip.measure(b).errors.sum())
        rber_at[cp] = errors / (len(chosen) * chip.geometry.pages_per_block * chip.cells)
    wall = time.perf_counter() - t0
    return {"blocks": len(chosen), "pages_per_block": chip.geometry.pages_per_block, "pe_final": LIFE_CHECKPOINTS[-1],
            "checkpoints": len(LIFE_CHECKPOINTS), "wall_s": wall, "virtual_days": chip.clock_ns / 8.64e13,
            "rber_first": rber_at[LIFE_CHECKPOINTS[0]], "rber_last": rber_at[LIFE_CHECKPOINTS[-1]]}


def bench_chip(profile: str = "mlc-3x") -> dict:
    grid = calibration_grid(profile)
    ratios = [g["ratio"] for g in grid]
    life_runs = [whole_life(profile, seed=s) for s in (3, 4, 5)]
    life = sorted(life_runs, key=lambda r: r["wall_s"])[1]  # the median run
    return {
        "profile": profile,
        "calibration": {"grid": grid, "ratio_min": min(ratios), "ratio_max": max(ratios),
                        "within_factor_2": all(0.5 <= r <= 2.0 for r in ratios)},
        **path_rates(profile),
        "whole_life": {**life, "wall_s_runs": [r["wall_s"] for r in life_runs], "target_s": 60.0,
                       "meets_target": life["wall_s"] < 60.0},
    }
