"""The page's ECC layout and BCH coding as the rig applies them (docs/protocol.md, "ECC layout").

The virtual rig's golden model of the firmware's BCH driver: codewords of the
engine's ``k_bytes`` data bytes (its default ``BchConfig``), each with its
parity in the spare area after the bad-block mark (2 bytes) and the FLARES
page profile (12 bytes); coding by bchlib, which wraps Linux lib/bch.c, so it
is bit-exact with the rig's BCH engine; erased codewords handled as that
engine does.
"""
from __future__ import annotations

from functools import lru_cache

import bchlib

from nandrig.gateware.bch.config import BchConfig
from nandrig.gateware.bch.model import pad_bits
from nandrig.protocol import Limit

CONFIG = BchConfig()  # the engine the rig's SoC is built with (its k_bytes is the protocol's codeword)
CODEWORD_BYTES = Limit.RIG_CODEWORD_BYTES
PROFILE_OFFSET = Limit.ECC_PROFILE_OFFSET  # spare bytes 0-1: the bad-block mark
PARITY_OFFSET = Limit.ECC_PARITY_OFFSET  # after the FLARES page profile


def t_max(page_bytes: int, spare_bytes: int, engine_t_max: int = CONFIG.t_max) -> int:
    """The largest t whose parity for every data codeword fits the spare area (0 if none does), at most what
    the engine corrects (a SoC may be built with a smaller t_max than the default, as the RTL rig's is)."""
    n_cw, rest = divmod(page_bytes, CODEWORD_BYTES)
    if n_cw == 0 or rest:
        return 0
    t = 0
    while t < engine_t_max and PARITY_OFFSET + n_cw * CONFIG.ecc_bytes(t + 1) <= spare_bytes:
        t += 1
    return t


def parity_slice(page_bytes: int, cw: int, t: int) -> slice:
    lo = page_bytes + PARITY_OFFSET + cw * CONFIG.ecc_bytes(t)
    return slice(lo, lo + CONFIG.ecc_bytes(t))


def ecc_area(page_bytes: int, t: int) -> slice:
    """The spare bytes the layout takes at t: the page profile and the parity."""
    return slice(page_bytes + PROFILE_OFFSET, parity_slice(page_bytes, page_bytes // CODEWORD_BYTES, t).start)


@lru_cache(maxsize=None)
def _bch(t: int) -> bchlib.BCH:
    return bchlib.BCH(t, prim_poly=CONFIG.prim_poly)


def profile_slice(page_bytes: int) -> slice:
    return slice(page_bytes + PROFILE_OFFSET, page_bytes + PARITY_OFFSET)


def encode_page(raw: bytes, page_bytes: int, t: int, profile: bytes | None = None) -> bytes:
    """The page as programmed at t: the FLARES profile record in its slot (erased, 0xFF, without one),
    each codeword's parity in place."""
    out = bytearray(raw)
    out[profile_slice(page_bytes)] = profile or b"\xff" * (PARITY_OFFSET - PROFILE_OFFSET)
    for cw in range(page_bytes // CODEWORD_BYTES):
        data = bytes(out[cw * CODEWORD_BYTES:(cw + 1) * CODEWORD_BYTES])
        out[parity_slice(page_bytes, cw, t)] = _bch(t).encode(data)
    return bytes(out)


def decode_codeword(data: bytes, parity: bytes, t: int) -> tuple[bytes, int]:
    """(data after decoding, corrected bits or -1). A codeword with at most t zero bits in its data
    and parity (the parity's unused low bits count as ones) is erased: all 0xFF, its zero bits
    reported, as the engine does."""
    ones = bytes(data) + bytes(parity[:-1]) + bytes([parity[-1] | ((1 << pad_bits(CONFIG, t)) - 1)])
    zeros = 8 * len(ones) - int.from_bytes(ones, "little").bit_count()
    if zeros <= t:
        return b"\xff" * len(data), zeros
    d, e = bytearray(data), bytearray(parity)
    n = _bch(t).decode(d, e)
    if n < 0:
        return bytes(data), -1
    _bch(t).correct(d, e)
    return bytes(d), n
