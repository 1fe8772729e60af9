"""Soft reads: a page read at M reference offsets (sensing levels), each bit's M results combined into one
log-likelihood ratio, and LDPC frames decoded hard first, then with more levels only while they fail.

A controller adds sensing levels around the default references in the order 0, -d, +d, -2d, +2d, ... (the
first read is the plain hard read; retention moves cells down, so the first extra level goes below). Each level
moves every reference by the same offset: a lower page reads at VR2, an upper page at VR1 and VR3, so one
offset serves both.

The LLR of a bit is taken from what its reads returned (their pattern, one of at most 2^M) through a table
measured on pages of known data at the same condition: log P(pattern | stored 1) / P(pattern | stored 0), with
half a count added to every cell of the table so a pattern never seen is finite. The table is fitted on one
half of the pages (training) and the frames are cut from the other half, so no frame is decoded with a table
that saw its own errors.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import beta

from nandrig.characterization.ldpc_code import LdpcDecoder
from nandrig.errors import NandrigError

MAX_LEVELS = 7  # 2^7 read patterns; FlexLevel's soft sensing goes to 6 extra levels


def sensing_offsets(levels: int, step: int) -> tuple[int, ...]:
    """The read-reference offsets (in read-retry steps) of a soft read with ``levels`` sensing levels, in the
    order they are added."""
    if not 1 <= levels <= MAX_LEVELS:
        raise NandrigError(f"{levels} sensing levels: 1 to {MAX_LEVELS}")
    if step < 1:
        raise NandrigError(f"a sensing step of {step}: at least one read-retry step")
    return tuple((-1) ** k * ((k + 1) // 2) * step for k in range(levels))


def read_patterns(reads: Sequence[np.ndarray]) -> np.ndarray:
    """Per bit, what its reads returned as one code: bit i of the code is the value read at level i."""
    code = np.zeros(len(reads[0]), np.int64)
    for i, r in enumerate(reads):
        code |= np.asarray(r, np.int64) << i
    return code


@dataclass(frozen=True)
class LlrTable:
    """The LLR of every read pattern of ``levels`` sensing levels (positive: the bit is more likely a 1)."""

    levels: int
    llr: np.ndarray  # (2^levels,)

    @classmethod
    def fit(cls, stored: np.ndarray, patterns: np.ndarray, levels: int) -> "LlrTable":
        """From bits of known value and the patterns their reads gave."""
        stored = np.asarray(stored, bool)
        size = 1 << levels
        ones = np.bincount(patterns[stored], minlength=size) + 0.5
        zeros = np.bincount(patterns[~stored], minlength=size) + 0.5
        return cls(levels, np.log(ones / ones.sum()) - np.log(zeros / zeros.sum()))

    def decide(self, patterns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(the bit each pattern decides, its reliability |LLR|)."""
        llr = self.llr[patterns]
        return (llr > 0).astype(np.uint8), np.abs(llr)


@dataclass(frozen=True)
class LevelOutcome:
    """Frames decoded with ``levels`` sensing levels: how many, how many failed, their mean iterations, and the
    frame error rate with its 95 % upper bound (Clopper-Pearson: 0 failures in N frames bounds it at about 3/N)."""

    levels: int
    frames: int
    failures: int
    mean_iterations: float
    raw_errors: int  # bits the LLRs' hard decisions got wrong, over the frames
    fer: float
    fer_upper: float


def fer_upper(failures: int, frames: int, confidence: float = 0.95) -> float:
    """The one-sided upper confidence bound of a frame error rate."""
    if frames <= 0:
        return 1.0
    if failures >= frames:
        return 1.0
    return float(beta.ppf(confidence, failures + 1, frames - failures))


def frames_of(bits: np.ndarray, n: int) -> int:
    return len(bits) // n


def decode_levels(stored_train: np.ndarray, reads_train: Sequence[np.ndarray], stored_test: np.ndarray,
                  reads_test: Sequence[np.ndarray], decoder: LdpcDecoder, max_levels: int | None = None,
                  stop_when_clean: bool = False) -> list[LevelOutcome]:
    """Decode the test bits' frames with 1, 2, ... sensing levels (the first ``levels`` reads each time), the LLRs
    from a table fitted on the training bits. ``stop_when_clean``: no more levels once one decodes every frame
    (a controller senses more only for frames that fail)."""
    m = len(reads_test) if max_levels is None else min(max_levels, len(reads_test))
    if len(reads_train) < m:
        raise NandrigError(f"{m} sensing levels asked for, the training pages were read at {len(reads_train)}")
    n = decoder.code.n
    frames = frames_of(stored_test, n)
    if frames < 1:
        raise NandrigError(f"{len(stored_test)} test bits make no {n}-bit LDPC frame")
    out = []
    for levels in range(1, m + 1):
        table = LlrTable.fit(stored_train, read_patterns(reads_train[:levels]), levels)
        decided, rel = table.decide(read_patterns(reads_test[:levels]))
        errors = (decided != np.asarray(stored_test, np.uint8)).astype(np.uint8)
        fails = iters = 0
        for f in range(frames):
            s = slice(f * n, (f + 1) * n)
            d = decoder.decode(errors[s], rel[s])
            fails += not d.decoded
            iters += d.iterations
        out.append(LevelOutcome(levels, frames, fails, iters / frames, int(errors[:frames * n].sum()),
                                fails / frames, fer_upper(fails, frames)))
        if stop_when_clean and not fails:
            break
    return out


def levels_needed(outcomes: Sequence[LevelOutcome], target: float) -> int | None:
    """The fewest sensing levels whose frame error rate is shown to be at most ``target`` (its upper bound), or
    None when no level shows it (failures, or too few frames to say)."""
    return next((o.levels for o in outcomes if o.fer_upper <= target), None)


def frames_to_show(target: float, confidence: float = 0.95) -> int:
    """Frames that must all decode for a frame error rate of at most ``target`` to be shown (about 3 / target)."""
    return math.ceil(math.log(1.0 - confidence) / math.log(1.0 - target))
