"""Bit-error maps: where in a page the raw bit errors are, kept compactly, and summed into the maps a reliability
engineer reads (per page, per wordline, per bitline and per DQ line).

A page's errors are stored as one code per flipped bit, ``bit * 2 + direction`` (bit: index in the raw page,
MSB first within a byte as the pattern fills it; direction 1: stored 1 read 0, 0: stored 0 read 1), sorted,
delta-coded and written as LEB128 varints: at the RBERs of MLC flash (1e-7 .. 1e-3) a page's map takes one
to three bytes per error instead of the page's own size.
"""
from __future__ import annotations

import numpy as np

def error_codes(want: np.ndarray, got: np.ndarray) -> np.ndarray:
    """The sorted codes of the bits that differ between two equal-length bit arrays (MSB-first page bits)."""
    idx = np.flatnonzero(want != got).astype(np.int64)
    return idx * 2 + (want[idx] == 1)


def encode(codes: np.ndarray) -> bytes:
    out = bytearray()
    last = 0
    for c in np.asarray(codes, np.int64).tolist():
        d, last = c - last, c
        if d < 0:
            raise ValueError("codes must be sorted")
        while d >= 0x80:
            out.append(d & 0x7F | 0x80)
            d >>= 7
        out.append(d)
    return bytes(out)


def decode(blob: bytes) -> np.ndarray:
    codes, value, shift, last = [], 0, 0, 0
    for byte in blob:
        value |= (byte & 0x7F) << shift
        if byte & 0x80:
            shift += 7
            continue
        last += value
        codes.append(last)
        value = shift = 0
    if shift:
        raise ValueError("bit-error map ends inside a number")
    return np.array(codes, np.int64)


def counts(codes: np.ndarray) -> tuple[int, int]:
    """(stored 1 read 0, stored 0 read 1), as the rig counts them."""
    up = int(np.sum(codes & 1))
    return up, len(codes) - up


def bitline_profile(codes_per_page: list[np.ndarray], page_bits: int, bins: int) -> np.ndarray:
    """Errors per column band: the page's bit positions cut into ``bins`` equal bands (bitlines run across
    every page of a block, so a weak bitline or sense amplifier shows as one band above the rest)."""
    edges = np.linspace(0, page_bits, bins + 1)
    allbits = np.concatenate(codes_per_page) >> 1 if codes_per_page else np.zeros(0, np.int64)
    return np.histogram(allbits, edges)[0]


def dq_profile(codes_per_page: list[np.ndarray]) -> np.ndarray:
    """Errors per DQ line (bit k of every byte is carried by DQk; MSB-first bit i of a byte is DQ 7 - i): a
    line far above the others is the wiring, not the cells."""
    allbits = np.concatenate(codes_per_page) >> 1 if codes_per_page else np.zeros(0, np.int64)
    return np.bincount(7 - (allbits % 8), minlength=8)
