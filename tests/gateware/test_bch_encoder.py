"""The BCH encoder gateware, in simulation, against bchlib (Linux lib/bch.c)."""
import random

import bchlib
import pytest

from nandrig.errors import NandrigError
from nandrig.gateware.bch import BchConfig, simulate_encode, simulate_encode_many


def test_parity_matches_bchlib_for_several_t_in_one_simulation():
    cfg = BchConfig()  # the rig's code: m = 15, 2048-byte codewords, t_max = 64
    rng = random.Random(1)
    jobs = [(bytes(rng.randrange(256) for _ in range(n)), t)
            for n, t in ((2048, 1), (2048, 2), (700, 4), (2048, 8), (33, 16), (2048, 40), (2048, 64), (2048, 3))]
    parities, cycles = simulate_encode_many(jobs, cfg)
    for (data, t), parity in zip(jobs, parities):
        assert parity == bytes(bchlib.BCH(t, prim_poly=cfg.prim_poly).encode(data)), t
        assert len(parity) == cfg.ecc_bytes(t)
    # one byte per cycle in, one parity byte per cycle out, plus the cycle t settles before each codeword and
    # the cycle the registered last byte takes its LFSR step
    assert cycles == sum(len(d) + cfg.ecc_bytes(t) + 2 for d, t in jobs)


@pytest.mark.parametrize("stall_every", [1, 3])
def test_parity_matches_bchlib_when_the_producer_and_consumer_stall(stall_every):
    """The step's feedback bits are registered a cycle ahead: a byte that arrives late, or parity taken slowly,
    must not change what they are."""
    cfg = BchConfig(k_bytes=256, t_max=16)
    rng = random.Random(stall_every)
    jobs = [(bytes(rng.randrange(256) for _ in range(n)), t) for n, t in ((256, 16), (1, 3), (97, 1), (256, 9))]
    for (data, t), parity in zip(jobs, simulate_encode_many(jobs, cfg, stall_every=stall_every)[0]):
        assert parity == bytes(bchlib.BCH(t, prim_poly=cfg.prim_poly).encode(data)), t


@pytest.mark.parametrize("m,k_bytes,t_max", [(13, 64, 8), (14, 64, 8), (15, 64, 8), (16, 64, 8)])
def test_every_field_size_matches_bchlib(m, k_bytes, t_max):
    cfg = BchConfig(m=m, k_bytes=k_bytes, t_max=t_max)
    rng = random.Random(m)
    jobs = [(bytes(rng.randrange(256) for _ in range(k_bytes)), t) for t in (1, 5, t_max)]
    for (data, t), parity in zip(jobs, simulate_encode_many(jobs, cfg)[0]):
        assert parity == bytes(bchlib.BCH(t, prim_poly=cfg.prim_poly).encode(data)), (m, t)


def test_all_zero_and_all_ones_data():
    cfg = BchConfig(k_bytes=128, t_max=8)
    for byte in (0x00, 0xFF):
        data = bytes([byte]) * 128
        assert simulate_encode(data, 8, cfg) == bytes(bchlib.BCH(8, prim_poly=cfg.prim_poly).encode(data))


@pytest.mark.parametrize("kw,msg", [
    (dict(m=12), "m must be"), (dict(t_max=0), "t_max"), (dict(m=13, k_bytes=1024, t_max=100), "do not fit"),
    (dict(search_clock_ratio=3), "1 or 2 times"), (dict(search_clock_ratio=2, chien_parallelism=16), "8 degrees per cycle"),
])
def test_bad_configurations(kw, msg):
    with pytest.raises(NandrigError, match=msg):
        BchConfig(**kw)


def test_bad_encode_requests():
    cfg = BchConfig(k_bytes=16, t_max=4)
    with pytest.raises(NandrigError, match="t must be"):
        simulate_encode(b"x" * 16, 5, cfg)
    with pytest.raises(NandrigError, match="data bytes"):
        simulate_encode(b"x" * 17, 2, cfg)
