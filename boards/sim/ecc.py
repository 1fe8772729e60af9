"""The page's ECC layout and BCH coding as the rig applies them (docs/protocol.md, "ECC layout").

The virtual rig's golden model of the firmware's BCH driver: codewords of
``CODEWORD_BYTES`` data bytes, each with its parity in the spare area after the
bad-block mark (2 bytes) and the FLARES page profile (12 bytes); coding by
bchlib, which wraps Linux lib/bch.c, so it is bit-exact with the rig's BCH
engine; erased codewords handled as that engine does.
"""
from __future__ import annotations

from functools import lru_cache

import bchlib

CODEWORD_BYTES = 1024
M = 14
PRIM_POLY = 0x402B
T_MAX = 40  # the BCH engine's build-time maximum
PROFILE_OFFSET = 2  # spare bytes 0-1: the bad-block mark
PARITY_OFFSET = 14  # spare bytes 2-13: the FLARES page profile


def ecc_bytes(t: int) -> int:
    return (M * t + 7) // 8


def t_max(page_bytes: int, spare_bytes: int) -> int:
    """The largest t whose parity for every data codeword fits the spare area (0 if none does)."""
    n_cw, rest = divmod(page_bytes, CODEWORD_BYTES)
    if n_cw == 0 or rest:
        return 0
    t = 0
    while t < T_MAX and PARITY_OFFSET + n_cw * ecc_bytes(t + 1) <= spare_bytes:
        t += 1
    return t


def parity_slice(page_bytes: int, cw: int, t: int) -> slice:
    lo = page_bytes + PARITY_OFFSET + cw * ecc_bytes(t)
    return slice(lo, lo + ecc_bytes(t))


def ecc_area(page_bytes: int, t: int) -> slice:
    """The spare bytes the layout takes at t: the page profile and the parity."""
    return slice(page_bytes + PROFILE_OFFSET, parity_slice(page_bytes, page_bytes // CODEWORD_BYTES, t).start)


@lru_cache(maxsize=None)
def _bch(t: int) -> bchlib.BCH:
    return bchlib.BCH(t, prim_poly=PRIM_POLY)


def encode_page(raw: bytes, page_bytes: int, t: int) -> bytes:
    """The page as programmed at t: the profile slot erased (0xFF), each codeword's parity in place."""
    out = bytearray(raw)
    prof = slice(page_bytes + PROFILE_OFFSET, page_bytes + PARITY_OFFSET)
    out[prof] = b"\xff" * (prof.stop - prof.start)
    for cw in range(page_bytes // CODEWORD_BYTES):
        data = bytes(out[cw * CODEWORD_BYTES:(cw + 1) * CODEWORD_BYTES])
        out[parity_slice(page_bytes, cw, t)] = _bch(t).encode(data)
    return bytes(out)


def decode_codeword(data: bytes, parity: bytes, t: int) -> tuple[bytes, int]:
    """(data after decoding, corrected bits or -1). A codeword with at most t zero bits in its data
    and parity (the parity's unused low bits count as ones) is erased: all 0xFF, its zero bits
    reported, as the engine does."""
    pad = 8 * len(parity) - M * t
    zeros = sum(8 - bin(b).count("1") for b in data) + sum(8 - bin(b).count("1") for b in parity[:-1])
    zeros += 8 - bin(parity[-1] | ((1 << pad) - 1)).count("1")
    if zeros <= t:
        return b"\xff" * len(data), zeros
    d, e = bytearray(data), bytearray(parity)
    n = _bch(t).decode(d, e)
    if n < 0:
        return bytes(data), -1
    _bch(t).correct(d, e)
    return bytes(d), n
