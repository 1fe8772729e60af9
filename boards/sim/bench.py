"""``nandrig bench chip``: calibration against eq. 5, chip-to-chip spread, path throughputs, a whole-life run."""
from __future__ import annotations

import statistics
import time

import numpy as np

from nandrig.virtual_chip.chip import VirtualChip, page_map
from nandrig.chip.pattern import page_seed
from nandrig.characterization.rber import load_params

GRID_PE = (1000, 2000, 5000, 10000)
GRID_H = ((0.0, "0"), (24.0, "1 day"), (720.0, "1 month"), (8760.0, "1 year"))
CHIP_SEEDS = range(1, 9)  # the chips of a spread measurement
POOLED_SEEDS = range(1, 17)  # eq. 5 models a part: the calibration grid pools a block of each of these chips
LIFE_CHECKPOINTS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 9500, 10000)


def usable_blocks(chip: VirtualChip, count: int, start: int = 0) -> list[int]:
    return [b for b in range(start, chip.geometry.blocks) if b not in chip.factory_bad][:count]


def program_block(chip: VirtualChip, block: int, campaign_seed: int) -> None:
    chip.erase(block)
    for p in range(chip.geometry.pages_per_block):
        chip.program(block, p, seed=page_seed(campaign_seed, block, p))


def wear_and_program(chip: VirtualChip, blocks: list[int], pe: int, campaign_seed: int = 1) -> None:
    """Cycle each block to its ``pe``-th program, then program it with random data."""
    for b in blocks:
        chip.cycle(b, pe - 1 - chip.pe_count(b), seed=campaign_seed, program=False)
        program_block(chip, b, campaign_seed)


def measured_rber(chip: VirtualChip, blocks: list[int], pe: int, hours: float, campaign_seed: int = 1) -> tuple[float, int, int]:
    """As a rig measures: cycle to pe, program random data, wait, read every page, count bit errors."""
    wear_and_program(chip, blocks, pe, campaign_seed)
    chip.wait(hours)
    errors = sum(int(chip.measure(b).errors.sum()) for b in blocks)
    bits = len(blocks) * chip.geometry.pages_per_block * chip.cells
    return errors / bits, errors, bits


def calibration_grid(profile: str = "mlc-3x", seeds: range = POOLED_SEEDS, blocks_per_chip: int = 1) -> list[dict]:
    """Eq. 5 is a model of a part, not of one die: each grid point pools a few blocks of every chip in ``seeds``."""
    params = load_params("flares-taco2014")
    chips = [VirtualChip(profile, s) for s in seeds]
    start = [0] * len(chips)
    out = []
    for pe in GRID_PE:
        for hours, label in GRID_H:
            errors = bits = 0
            for i, chip in enumerate(chips):
                blocks = usable_blocks(chip, blocks_per_chip, start[i])
                start[i] = blocks[-1] + 1
                _, e, n = measured_rber(chip, blocks, pe, hours)
                errors, bits = errors + e, bits + n
            model = float(params.rber(pe, hours))
            out.append({"pe": pe, "retention": label, "retention_h": hours, "measured_rber": errors / bits,
                        "errors": errors, "bits": bits, "eq5_rber": model, "ratio": errors / bits / model})
    return out


def page_type_rber(chip: VirtualChip, blocks: list[int]) -> tuple[float, float]:
    """(lower, upper) RBER of blocks programmed in full, read at once."""
    ppb = chip.geometry.pages_per_block
    upper = np.array([page_map(p, ppb)[1] for p in range(ppb)])
    per_page = sum(chip.measure(b).errors.astype(float) for b in blocks)
    bits = len(blocks) * chip.cells * ppb / 2
    return float(per_page[~upper].sum() / bits), float(per_page[upper].sum() / bits)


def chip_spread(profile: str = "mlc-3x", seeds: range = CHIP_SEEDS, blocks: int = 16,
                wear: tuple[int, ...] = (1000, 10000)) -> dict:
    """Chip to chip: each seed's RBER per page type after ``wear`` P/E (fresh data), and how far apart they lie."""
    rows = []
    for s in seeds:
        chip = VirtualChip(profile, s)
        row: dict = {"seed": s}
        start = 0
        for pe in wear:
            chosen = usable_blocks(chip, blocks, start)
            start = chosen[-1] + 1
            wear_and_program(chip, chosen, pe)
            lower, upper = page_type_rber(chip, chosen)
            row[str(pe)] = {"rber": (lower + upper) / 2, "lower": lower, "upper": upper}
        rows.append(row)
    summary = {}
    for pe in wear:
        r = np.array([row[str(pe)]["rber"] for row in rows])
        summary[str(pe)] = {"min": float(r.min()), "max": float(r.max()), "max_over_min": float(r.max() / r.min()),
                            "cv": float(r.std(ddof=1) / r.mean()),
                            "seeds_lower_page_worse": [row["seed"] for row in rows
                                                       if row[str(pe)]["lower"] > row[str(pe)]["upper"]]}
    return {"blocks_per_chip": blocks, "chips": rows, "summary": summary}


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
        "calibration": {"chips": len(POOLED_SEEDS), "grid": grid, "ratio_min": min(ratios), "ratio_max": max(ratios),
                        "within_factor_2": all(0.5 <= r <= 2.0 for r in ratios)},
        "chip_spread": chip_spread(profile),
        **path_rates(profile),
        "whole_life": {**life, "wall_s_runs": [r["wall_s"] for r in life_runs], "target_s": 60.0,
                       "meets_target": life["wall_s"] < 60.0},
    }
