"""The rig's seeded data pattern: PRBS-31, bit-exact with the gateware generator and firmware/rig/pattern.c.

Sequence: s[n] = s[n-31] XOR s[n-28] (polynomial x^31 + x^28 + 1), its first
31 bits being the seed's bits 30..0 (a zero seed is replaced by 0x7FFFFFFF).
Bytes are filled MSB first from s[0], s[1], ... The seed of a page derives
from the campaign seed, block and page with :func:`page_seed`.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

_MASK = (1 << 64) - 1


def key(*parts: int) -> int:
    """A 128-bit key from integers (negative ones allowed): per part, ``a = splitmix64(a ^ p)`` then
    ``b = splitmix64(b ^ a ^ p * golden)``, SplitMix64's finalizer written out in line (the virtual chip keys a
    few per operation; tests/boards/test_chip_physics.py holds it to the two-call form)."""
    a, b, m = 0x6A09E667F3BCC908, 0xBB67AE8584CAA73B, _MASK
    for p in parts:
        p &= m
        x = ((a ^ p) + 0x9E3779B97F4A7C15) & m
        x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & m
        x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & m
        a = x ^ (x >> 31)
        x = ((b ^ a ^ (p * 0x9E3779B97F4A7C15 & m)) + 0x9E3779B97F4A7C15) & m
        x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & m
        x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & m
        b = x ^ (x >> 31)
    return (a << 64) | b


_SEED_MASK = 0x7FFFFFFF


@lru_cache(maxsize=16384)  # a read's rig and host both derive it
def page_seed(campaign_seed: int, block: int, page: int) -> int:
    s = key(campaign_seed, block, page) & _SEED_MASK
    return s or _SEED_MASK


def bits(data: bytes) -> np.ndarray:
    """Bits of ``data``, MSB first."""
    return np.unpackbits(np.frombuffer(data, np.uint8))


def page_bits(campaign_seed: int, block: int, page: int, nbytes: int) -> np.ndarray:
    """The bits a page programmed with the campaign's pattern should read back."""
    return bits(prbs31_bytes(page_seed(campaign_seed, block, page), nbytes))


def flips(want: np.ndarray, got: np.ndarray) -> tuple[int, int]:
    """Bit errors as the rig counts them: (stored 1 read 0, stored 0 read 1)."""
    return int(np.sum((want == 1) & (got == 0))), int(np.sum((want == 0) & (got == 1)))


@lru_cache(maxsize=4096)  # a replay reads back the pages it wrote: host and virtual rig both make them
def prbs31_bytes(seed: int, nbytes: int) -> bytes:
    seed &= _SEED_MASK
    seed = seed or _SEED_MASK
    # the recurrence is linear in its first 31 bits: a page is the XOR of the pages of the seed's set bits (and a
    # shorter run is the start of a longer one, so one basis serves every length up to its own)
    rows = [30 - i for i in range(31) if seed >> i & 1]
    size = max(4096, 1 << (nbytes - 1).bit_length())
    return np.bitwise_xor.reduce(_prbs31_basis(size)[rows, :nbytes], axis=0).tobytes()


@lru_cache(maxsize=4)
def _prbs31_basis(nbytes: int) -> np.ndarray:
    """The pattern of each single seed bit, 30 down to 0: (31, nbytes)."""
    return np.stack([np.frombuffer(_prbs31_run(1 << (30 - k), nbytes), np.uint8) for k in range(31)])


def _prbs31_run(seed: int, nbytes: int) -> bytes:
    """The recurrence run out from a (non-zero) seed."""
    nbits = nbytes * 8
    s = np.zeros(max(nbits, 31), dtype=np.uint8)
    s[:31] = [(seed >> (30 - i)) & 1 for i in range(31)]
    # the polynomial squared k times: s[n] = s[n - 31 * 2^k] ^ s[n - 28 * 2^k], 28 * 2^k new bits a step; k grows
    # with the sequence
    n, lag, lead = 31, 31, 28
    while n < nbits:
        if n >= 2 * lag:
            lag, lead = 2 * lag, 2 * lead
        step = min(lead, nbits - n)
        s[n:n + step] = s[n - lag:n - lag + step] ^ s[n - lead:n - lead + step]
        n += step
    return np.packbits(s[:nbits]).tobytes()
