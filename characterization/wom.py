"""A two-write WOM code (Rivest & Shamir, 1982; the code Grupp et al., MICRO'09, Table 5, ran on flash): two
bits in three cells, written twice between erases, each write only programming cells (NAND bit 1 -> 0).

In programmed-cell terms (1 = programmed): the first write stores 00, 01, 10, 11 as 000, 001, 010, 100; the
second as 111, 110, 101, 011, each a superset of every first-write word it may overwrite. A second write of
the value already stored leaves the cells as they are. Pages store the complement (erased NAND bits are 1).
"""
from __future__ import annotations

import numpy as np

FIRST = np.array([[0, 0, 0], [0, 0, 1], [0, 1, 0], [1, 0, 0]], np.uint8)
SECOND = 1 - FIRST  # 111, 110, 101, 011: each value's first word complemented


def capacity(page_bytes: int) -> int:
    """Data bits a page of ``page_bytes`` holds through the code (two per three cells)."""
    return (page_bytes * 8 // 3) * 2


def _values(data_bits: np.ndarray) -> np.ndarray:
    return data_bits[0::2].astype(np.int64) * 2 + data_bits[1::2]


def encode(data_bits: np.ndarray, page_bytes: int, before: bytes | None = None) -> bytes:
    """The page's bytes for the first write (``before`` None) or the second over ``before``; cells past the
    last triplet stay erased."""
    v = _values(np.asarray(data_bits, np.uint8))
    cells = np.zeros(page_bytes * 8, np.uint8)
    if before is None:
        cells[:3 * len(v)] = FIRST[v].ravel()
    else:
        old = 1 - np.unpackbits(np.frombuffer(before, np.uint8))[:3 * len(v)].reshape(-1, 3)
        same = decode_values(old) == v
        cells[:3 * len(v)] = np.where(same[:, None], old, SECOND[v]).ravel()
    return np.packbits(1 - cells).tobytes()


def decode_values(cells: np.ndarray) -> np.ndarray:
    """Triplets of programmed-cell bits -> values 0..3 (a weight of 2 or more is a second-write word)."""
    c = np.where(cells.sum(axis=1, keepdims=True) >= 2, 1 - cells, cells)  # a second word: its first complemented
    return np.select([c[:, 2] == 1, c[:, 1] == 1, c[:, 0] == 1], [1, 2, 3], 0)


def decode(page: bytes, n_bits: int) -> np.ndarray:
    """The data bits a page read back holds."""
    cells = 1 - np.unpackbits(np.frombuffer(page, np.uint8))[:3 * (n_bits // 2)].reshape(-1, 3)
    v = decode_values(cells)
    return np.stack([v >> 1, v & 1], axis=1).ravel().astype(np.uint8)
