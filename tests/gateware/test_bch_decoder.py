"""The BCH decoder gateware, in simulation, against bchlib (Linux lib/bch.c)."""
import random

import bchlib
import pytest

from nandrig.errors import NandrigError
from nandrig.gateware.bch import BchConfig, simulate_decode, simulate_decode_many


def codeword(rng, cfg, t, k, nerr):
    data = bytes(rng.randrange(256) for _ in range(k))
    ecc = bytearray(bchlib.BCH(t, prim_poly=cfg.prim_poly).encode(data))
    d = bytearray(data)
    for b in rng.sample(range(k * 8 + cfg.m * t), nerr):  # errors in data and parity alike
        if b < k * 8:
            d[b // 8] ^= 0x80 >> (b % 8)
        else:
            q = b - k * 8
            ecc[q // 8] ^= 0x80 >> (q % 8)
    return data, bytes(d), bytes(ecc)


@pytest.mark.slow
@pytest.mark.parametrize("m,bank,lanes,k,ratio", [
    (13, "half", 8, 32, 1), (14, "half", 8, 32, 1), (16, "half", 8, 32, 1), (14, "full", 8, 32, 1),
    (15, "half", 16, 32, 1), (15, "half", 16, 31, 1), (14, "half", 24, 29, 1),
    (15, "full", 8, 31, 2), (13, "half", 8, 29, 2)])
def test_corrects_0_to_t_errors_with_t_changing_between_codewords(m, bank, lanes, k, ratio):
    """Every Chien width, on codewords whose byte count does and does not fill its last group of bytes; the
    search on the engine's clock and on its own at twice that."""
    cfg = BchConfig(m=m, k_bytes=k, t_max=6, bm_bank=bank, chien_parallelism=lanes, search_clock_ratio=ratio)
    rng = random.Random(m + lanes + k)
    jobs, truth = [], []
    for t in (1, 2, 3, 6, 4, 6):
        for nerr in sorted({0, 1, t, rng.randrange(t + 1)}):
            data, d, e = codeword(rng, cfg, t, k, nerr)
            ref_d, ref_e = bytearray(d), bytearray(e)
            ref = bchlib.BCH(t, prim_poly=cfg.prim_poly)
            assert ref.decode(ref_d, ref_e) == nerr
            jobs.append((d, e, t))
            truth.append((data, nerr))
    results, _ = simulate_decode_many(jobs, cfg)
    for (got, n), (data, nerr) in zip(results, truth):
        assert n == nerr and got == data


@pytest.mark.slow
@pytest.mark.parametrize("bank,ratio", [("half", 1), ("full", 1), ("full", 2)])
def test_beyond_t_is_reported_as_failure_or_miscorrected(bank, ratio):
    cfg = BchConfig(k_bytes=32, t_max=6, bm_bank=bank, chien_parallelism=16 // ratio, search_clock_ratio=ratio)
    rng = random.Random(5)
    jobs, truth = [], []
    for _ in range(60):
        t = rng.choice([2, 4, 6])
        data, d, e = codeword(rng, cfg, t, 32, t + rng.randrange(1, 6))
        jobs.append((d, e, t))
        truth.append(data)
    results, _ = simulate_decode_many(jobs, cfg)
    failures = sum(n < 0 for _, n in results)
    assert all(n < 0 or got != data for (got, n), data in zip(results, truth))  # never claims the original back
    for (d, e, t), (got, n) in zip(jobs, results):  # and decides as lib/bch.c does, miscorrections included
        ref_d, ref_e = bytearray(d), bytearray(e)
        ref = bchlib.BCH(t, prim_poly=cfg.prim_poly)
        ref_n = ref.decode(ref_d, ref_e)
        if ref_n >= 0:
            ref.correct(ref_d, ref_e)
        assert n == ref_n and (n < 0 or got == bytes(ref_d))
    assert failures >= 50, failures


@pytest.mark.parametrize("lanes,ratio", [(8, 1), (16, 1), (8, 2)])
def test_a_slow_error_consumer_loses_no_correction(lanes, ratio):
    """Also across the search's clock crossing, whose queue of results fills while the consumer waits."""
    cfg = BchConfig(k_bytes=32, t_max=6, chien_parallelism=lanes, search_clock_ratio=ratio)
    rng = random.Random(9)
    jobs, truth = [], []
    for t, nerr in ((6, 6), (3, 2), (6, 5)):
        data, d, e = codeword(rng, cfg, t, 32, nerr)
        jobs.append((d, e, t))
        truth.append((data, nerr))
    # and errors in neighbouring bytes: with 16 lanes two of them share a search step and go out one by one
    data = bytes(rng.randrange(256) for _ in range(32))
    e = bytes(bchlib.BCH(6, prim_poly=cfg.prim_poly).encode(data))
    d = bytearray(data)
    for i in (9, 10, 11):
        d[i] ^= 0x11
    jobs.append((bytes(d), e, 6))
    truth.append((data, 6))
    results, _ = simulate_decode_many(jobs, cfg, ready_every=3)
    assert results == truth


@pytest.mark.parametrize("ratio", [1, 2])
def test_erased_codewords_decode_as_clean(ratio):
    cfg = BchConfig(k_bytes=16, t_max=4, chien_parallelism=16 // ratio, search_clock_ratio=ratio)
    ecc = cfg.ecc_bytes(4)
    assert simulate_decode(b"\xff" * 16, b"\xff" * ecc, 4, cfg) == (b"\xff" * 16, 0)
    flipped = bytearray(b"\xff" * 16)
    flipped[3] = 0xF7
    flipped[9] = 0x7F
    assert simulate_decode(bytes(flipped), b"\xff" * ecc, 4, cfg) == (b"\xff" * 16, 2)


def test_decode_rejects_wrong_parity_length():
    cfg = BchConfig(k_bytes=16, t_max=4)
    with pytest.raises(NandrigError, match="parity bytes"):
        simulate_decode(b"x" * 16, b"y" * 3, 4, cfg)


@pytest.mark.slow
def test_bench_bch_reports_latency_against_the_input_bound(run_cli):
    import json

    res = run_cli("bench", "bch", "--t", "4", "--no-synth")
    assert res.code == 0, res.err
    row = json.loads(res.out)["per_t"][0]
    assert row["t"] == 4 and row["decode_cycles"] > row["input_bound"]  # it cannot beat the input
    assert row["ratio_to_input_bound"] <= 1.3 and row["ratio_to_paper"] < 1


@pytest.mark.slow
def test_a_search_on_twice_the_clock_decodes_t_64_within_the_bound():
    """8 Chien lanes at twice the engine's clock and the full bank: the rig's rate for t_max 64, counted in engine
    cycles (the ULX3S's next engine, its search on the NAND clock)."""
    from nandrig.gateware.bch.bench import measure_t

    row = measure_t(64, BchConfig(t_max=64, chien_parallelism=8, bm_bank="full", search_clock_ratio=2))
    assert row["input_bound"] < row["decode_cycles"] <= 1.3 * row["input_bound"]


def test_bench_bch_bad_t(run_cli):
    from nandrig.boards.ulx3s.build import BOARD_BCH

    run_cli("bench", "bch", "--t", "0,65", "--no-synth").assert_one_line_error("--t")
    # the board's engine has its own range
    run_cli("bench", "bch", "--board", "ulx3s", "--t", str(BOARD_BCH.t_max + 1), "--no-synth").assert_one_line_error(
        f"1..{BOARD_BCH.t_max}")
