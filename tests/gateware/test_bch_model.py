"""The decoder algorithm the gateware implements, in software, against bchlib."""
import random

import bchlib
import pytest

from nandrig.gateware.bch import BchConfig
from nandrig.gateware.bch.model import decode


def corrupt(rng, data, ecc, n_bits, nerr):
    d, e = bytearray(data), bytearray(ecc)
    for b in rng.sample(range(n_bits), nerr):
        if b < len(d) * 8:
            d[b // 8] ^= 0x80 >> (b % 8)
        else:
            q = b - len(d) * 8
            e[q // 8] ^= 0x80 >> (q % 8)
    return bytes(d), bytes(e)


@pytest.mark.parametrize("m", [13, 14, 16])
def test_model_corrects_what_bchlib_corrects(m):
    cfg = BchConfig(m=m, k_bytes=48, t_max=8)
    rng = random.Random(m)
    for _ in range(150):
        t = rng.choice([1, 2, 3, 8])
        ref = bchlib.BCH(t, prim_poly=cfg.prim_poly)
        data = bytes(rng.randrange(256) for _ in range(48))
        ecc = bytes(ref.encode(data))
        nerr = rng.randrange(0, t + 1)
        d, e = corrupt(rng, data, ecc, 48 * 8 + m * t, nerr)
        got, n = decode(cfg, t, d, e)
        ref_data, ref_ecc = bytearray(d), bytearray(e)
        ref_n = ref.decode(ref_data, ref_ecc)
        ref.correct(ref_data, ref_ecc)
        assert n == ref_n == nerr and got == bytes(ref_data) == data


def test_model_reports_failure_beyond_t_or_miscorrects_like_any_bch():
    cfg = BchConfig(k_bytes=48, t_max=8)
    rng = random.Random(9)
    outcomes = {"failure": 0, "miscorrection": 0}
    for _ in range(200):
        t = rng.choice([2, 4, 8])
        data = bytes(rng.randrange(256) for _ in range(48))
        ecc = bytes(bchlib.BCH(t, prim_poly=cfg.prim_poly).encode(data))
        d, e = corrupt(rng, data, ecc, 48 * 8 + cfg.m * t, t + rng.randrange(1, 6))
        got, n = decode(cfg, t, d, e)
        outcomes["failure" if n < 0 else "miscorrection"] += 1
        assert n < 0 or got != data  # never claims to have restored the original
    assert outcomes["failure"] > 150, outcomes
