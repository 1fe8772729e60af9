"""A quasi-cyclic LDPC code of rate 8/9 on 4 KB frames (FlexLevel's setting), decoded by the `ldpc` package.

Construction (QC-IRA, the shape of the 802.11n and DVB-S2 codes): the parity-check matrix is a 4 x 36 array of
Z x Z circulants, Z = 1024, so a frame is 36,864 bits carrying 32,768 data bits (4,096 bytes), 4,096 parity.

- Data part, block columns 0-31: every block row holds a circulant permutation matrix P^s in every data column
  (column weight 4, row weight 32 + 2), the shifts s drawn from a seeded generator and redrawn until no two
  block rows and two block columns close a 4-cycle (s11 - s12 + s22 - s21 != 0 mod Z): girth at least 6.
- Parity part, block columns 32-35: a block staircase (identity on the diagonal and below it), full rank, so
  the code has exactly 32,768 data bits, and encoding is a sparse product and a running XOR of its blocks:
  p_0 = s_0 and p_j = s_j + p_(j-1), where s = H_data u.

Decoding: the rig knows what it wrote, so a frame's decode is posed on its error pattern: the syndrome of the
bits read wrong, each bit's chance of being wrong from its read's log-likelihood ratio (1 / (1 + e^|LLR|)). For
a linear code this is the same problem as decoding the word read (the coset is the same), and it lets frames be
cut from any page's raw bits, a codeword programmed or not. The decoder is `ldpc`'s belief propagation
(normalised min-sum, scaling 0.75, flooding schedule), as controllers run it.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import scipy.sparse as sp

from nandrig.errors import NandrigError

MAX_ITERATIONS = 50  # a controller's budget per frame
MIN_SUM_SCALING = 0.75
LLR_CLIP = 30.0  # |LLR| beyond this is certainty to double precision


@dataclass(frozen=True)
class QcLdpcCode:
    """The code's shape: ``rows`` x ``cols`` blocks of ``z`` x ``z`` circulants, the last ``rows`` block columns
    the parity staircase; ``seed`` draws the data part's shifts."""

    z: int = 1024
    rows: int = 4
    cols: int = 36
    seed: int = 2026

    @property
    def n(self) -> int:
        return self.cols * self.z

    @property
    def k(self) -> int:
        return (self.cols - self.rows) * self.z

    @property
    def rate(self) -> float:
        return self.k / self.n

    def shifts(self) -> np.ndarray:
        """The data part's circulant shifts, (rows, cols - rows), free of 4-cycles."""
        return _shifts(self.z, self.rows, self.cols - self.rows, self.seed)

    def pcm(self) -> sp.csr_matrix:
        return _pcm(self)

    def encode(self, data: np.ndarray) -> np.ndarray:
        """The codeword (data bits, then parity) of ``k`` data bits (0/1)."""
        u = np.asarray(data, np.uint8)
        if u.shape != (self.k,):
            raise NandrigError(f"an LDPC frame carries {self.k} data bits, not {u.size}")
        s = (self.pcm()[:, :self.k] @ u) & 1
        parity = np.bitwise_xor.accumulate(s.reshape(self.rows, self.z).astype(np.uint8), axis=0).ravel()
        return np.concatenate([u, parity])

    def syndrome(self, word: np.ndarray) -> np.ndarray:
        return ((self.pcm() @ np.asarray(word, np.uint8)) & 1).astype(np.uint8)


@dataclass(frozen=True)
class FrameDecode:
    """One frame's decode: whether it found the error pattern there was, in how many iterations, and whether it
    converged to a wrong one (a miscorrection: detected here only because the rig knows the data)."""

    decoded: bool
    iterations: int
    converged: bool
    wrong_bits: int  # bits still wrong after the decode (0 when decoded)


class LdpcDecoder:
    """Belief propagation on one code, reused frame after frame (the library keeps its graph)."""

    def __init__(self, code: QcLdpcCode = QcLdpcCode(), max_iter: int = MAX_ITERATIONS) -> None:
        from ldpc import BpDecoder

        self.code = code
        self._bp = BpDecoder(code.pcm(), error_channel=np.full(code.n, 1e-3), max_iter=max_iter,
                             bp_method="minimum_sum", ms_scaling_factor=MIN_SUM_SCALING, schedule="parallel",
                             input_vector_type="syndrome")

    def decode(self, errors: np.ndarray, llr_abs: np.ndarray) -> FrameDecode:
        """Decode a frame whose read got ``errors`` (0/1 per bit) with reliabilities ``llr_abs`` (|LLR| per bit)."""
        e = np.asarray(errors, np.uint8)
        if e.shape != (self.code.n,) or np.shape(llr_abs) != (self.code.n,):
            raise NandrigError(f"an LDPC frame is {self.code.n} bits")
        self._bp.update_channel_probs(error_probability(llr_abs))
        guess = self._bp.decode(self.code.syndrome(e))
        wrong = int(np.count_nonzero(guess != e))
        return FrameDecode(bool(self._bp.converge) and wrong == 0, int(self._bp.iter), bool(self._bp.converge), wrong)


def error_probability(llr_abs: np.ndarray) -> np.ndarray:
    """A bit's chance of being read wrong from its reliability |LLR|, kept off 0 and 1/2 (the decoder's logs)."""
    a = np.clip(np.asarray(llr_abs, float), 1e-6, LLR_CLIP)
    return 1.0 / (1.0 + np.exp(a))


@lru_cache(maxsize=4)
def _shifts(z: int, rows: int, cols: int, seed: int) -> np.ndarray:
    rs = np.random.default_rng(seed)
    s = np.zeros((rows, cols), np.int64)
    for j in range(cols):  # column by column: a new column must close no 4-cycle with those placed, nor itself
        for _ in range(10_000):
            c = rs.integers(0, z, rows)
            if _free_of_4_cycles(s[:, :j], c, z):
                s[:, j] = c
                break
        else:
            raise NandrigError(f"no 4-cycle-free shifts for a {rows} x {cols} base matrix at Z {z}")
    return s


def _free_of_4_cycles(placed: np.ndarray, new: np.ndarray, z: int) -> bool:
    """Whether column ``new`` closes no 4-cycle with the ``placed`` columns, the parity staircase, or within
    itself (every pair of rows, against every other column that has both)."""
    rows = len(new)
    for a in range(rows):
        for b in range(a + 1, rows):
            d = (new[a] - new[b]) % z
            if placed.size and np.any((placed[a] - placed[b]) % z == d):
                return False
            if b == a + 1 and d == 0:  # the staircase's column a holds I in rows a and a+1
                return False
    return True


@lru_cache(maxsize=4)
def _pcm(code: QcLdpcCode) -> sp.csr_matrix:
    z, r, data_cols = code.z, code.rows, code.cols - code.rows
    s = code.shifts()
    rows, cols = [], []
    i = np.arange(z)
    for a in range(r):
        for j in range(data_cols):  # P^s: row i has its 1 at column (i + s) mod z
            rows.append(a * z + i)
            cols.append(j * z + (i + s[a, j]) % z)
        for j in (a - 1, a) if a else (a,):  # the staircase: I at (a, a) and (a, a - 1)
            rows.append(a * z + i)
            cols.append((data_cols + j) * z + i)
    rr, cc = np.concatenate(rows), np.concatenate(cols)
    return sp.csr_matrix((np.ones(len(rr), np.uint8), (rr, cc)), shape=(r * z, code.n))
