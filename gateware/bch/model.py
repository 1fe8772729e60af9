"""A software model of the decoder's algorithm, step for step as the gateware does it.

* Syndromes S_j = r'(a^j) for odd j, by byte-wise Horner over data and parity
  bytes as they arrive (even syndromes are squares in a binary code). The
  parity's unused low bits are masked to zero, so r'(x) = r(x) * x^pad with
  pad = 8 * ceil(m t / 8) - m t: every error sits ``pad`` degrees higher,
  and the Chien search simply offsets its positions by ``pad``.
* Key equation: inversion-less Berlekamp-Massey simplified for binary codes
  (t iterations; the even-step discrepancies are zero).
* Chien search over the shortened code's degrees, ``parallelism`` per cycle.
"""
from __future__ import annotations

from nandrig.gateware.bch.config import GF, BchConfig


def pad_bits(cfg: BchConfig, t: int) -> int:
    return 8 * cfg.ecc_bytes(t) - cfg.m * t


def syndromes(cfg: BchConfig, t: int, data: bytes, parity: bytes) -> list[int]:
    gf = cfg.gf
    raw = bytearray(data + parity)
    pad = pad_bits(cfg, t)
    if pad:
        raw[-1] &= (0xFF << pad) & 0xFF  # padding bits are not part of the codeword
    s = [0] * (2 * t + 1)
    for j in range(1, 2 * t, 2):
        acc, step = 0, gf.pow(8 * j)
        for byte in raw:
            acc = gf.mul(acc, step)
            for i in range(8):
                if byte >> i & 1:
                    acc ^= gf.pow(j * i)
        s[j] = acc
    for j in range(2, 2 * t + 1, 2):
        s[j] = gf.mul(s[j // 2], s[j // 2])
    return s


def berlekamp_massey(gf: GF, s: list[int], t: int) -> list[int]:
    """Error locator coefficients (scaled), lam[i] of x^i."""
    lam = [1] + [0] * (t + 1)
    b = [1] + [0] * (t + 1)
    gamma, k = 1, 0
    for r in range(t):
        j = 2 * r + 1
        delta = 0
        for i in range(min(j, t + 2)):
            if j - i >= 1:
                delta ^= gf.mul(lam[i], s[j - i])
        new = [gf.mul(gamma, lam[i]) ^ (gf.mul(delta, b[i - 1]) if i else 0) for i in range(t + 2)]
        if delta and k >= 0:
            b = [0] + lam[:-1]  # x * lambda
            gamma, k = delta, -k
        else:
            b = [0, 0] + b[:-2]  # x^2 * B
            k += 2
        lam = new
    return lam  # t + 2 coefficients: a degree of t + 1 means failure


def chien(cfg: BchConfig, t: int, lam: list[int], n_bits: int) -> list[int]:
    """Error positions as bit indices into data+parity (0 = first bit), or [] and ok=False via the caller."""
    gf = cfg.gf
    pad = pad_bits(cfg, t)
    out = []
    for pos in range(n_bits):
        deg = n_bits - 1 - pos + pad  # degree of this bit in r'(x)
        v = 0
        for i, c in enumerate(lam):
            if c:
                v ^= gf.mul(c, gf.pow(-deg * i))
        if v == 0:
            out.append(pos)
    return out


def decode(cfg: BchConfig, t: int, data: bytes, parity: bytes) -> tuple[bytes, int]:
    """Corrected data and the number of corrected errors, or -1 when uncorrectable."""
    s = syndromes(cfg, t, data, parity)
    if not any(s[1:]):
        return bytes(data), 0
    lam = berlekamp_massey(cfg.gf, s, t)
    degree = max(i for i, c in enumerate(lam) if c)
    n_bits = len(data) * 8 + cfg.m * t
    pos = chien(cfg, t, lam, n_bits)
    if degree > t or len(pos) != degree:
        return bytes(data), -1
    out = bytearray(data)
    for p in pos:
        if p < len(data) * 8:
            out[p // 8] ^= 0x80 >> (p % 8)
    return bytes(out), len(pos)
