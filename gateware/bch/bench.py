"""``nandrig bench bch``: encode/decode cycles per t of the rig's engine (or a board's), and ECP5 area/Fmax."""
from __future__ import annotations

import dataclasses
import random

import bchlib

from nandrig.gateware.bch.config import BchConfig
from nandrig.gateware.bch.sim import simulate_decode_many, simulate_encode_many

PAGE_BYTES = 4096
PAPER = ((1, 8390), (50, 19400))  # FLARES paper: 83.9 us and 194 us at 100 MHz for a 4 KB codeword


def paper_cycles(t: int) -> float:
    (t0, c0), (t1, c1) = PAPER
    return c0 + (c1 - c0) * (t - t0) / (t1 - t0)


def page_jobs(cfg: BchConfig, t: int, seed: int):
    """A page as cfg-sized codewords, each with t errors (the worst case it still corrects)."""
    rng = random.Random(seed)
    jobs = []
    for _ in range(PAGE_BYTES // cfg.k_bytes):
        data = bytes(rng.randrange(256) for _ in range(cfg.k_bytes))
        ecc = bytes(bchlib.BCH(t, prim_poly=cfg.prim_poly).encode(data))
        d = bytearray(data)
        for b in rng.sample(range(cfg.k_bytes * 8), t):
            d[b // 8] ^= 0x80 >> (b % 8)
        jobs.append((data, bytes(d), ecc))
    return jobs


def measure_t(t: int, cfg: BchConfig = BchConfig(), seed: int = 1) -> dict:
    """Cycles at t with t errors per codeword: the slowest case (decode time grows with the error count;
    at t = 40 it was measured for every count from 0 to 40)."""
    jobs = page_jobs(cfg, t, seed)
    parities, enc_cycles = simulate_encode_many([(data, t) for data, _, _ in jobs], cfg)
    assert all(p == e for p, (_, _, e) in zip(parities, jobs))
    results, done = simulate_decode_many([(d, e, t) for _, d, e in jobs], cfg)
    assert all(n == t and got == data for (got, n), (data, _, _) in zip(results, jobs))
    decode = done[-1]  # first byte of the page in to the last status out
    bound = PAGE_BYTES + len(jobs) * cfg.ecc_bytes(t)
    return {"t": t, "encode_cycles": enc_cycles, "decode_cycles": decode, "input_bound": bound,
            "ratio_to_input_bound": decode / bound, "paper_cycles": paper_cycles(t),
            "ratio_to_paper": decode / paper_cycles(t)}



def bench_bch(t_values, synth: bool = True, echo=lambda s: None, cfg: BchConfig = BchConfig()) -> dict:
    rows = []
    for t in t_values:
        rows.append(measure_t(t, cfg))
        echo(f"t = {t}: decode {rows[-1]['decode_cycles']} cycles")
    out = {"config": {"m": cfg.m, "k_bytes": cfg.k_bytes, "t_max": cfg.t_max, "prim_poly": hex(cfg.prim_poly),
                      "chien_parallelism": cfg.chien_parallelism, "search_clock_ratio": cfg.search_clock_ratio,
                      "bm_bank": cfg.bm_bank, "page_bytes": PAGE_BYTES,
                      "cycles": "engine (system) clock cycles; the Chien search runs search_clock_ratio of its own in each"},
           "paper": "FLARES: 83.9 us (t=1) and 194 us (t=50) for a 4 KB codeword at 8-bit parallelism, 100 MHz",
           "per_t": rows,
           "max_ratio_to_input_bound": max(r["ratio_to_input_bound"] for r in rows),
           "ratio_to_paper_at_t_max": next((r["ratio_to_paper"] for r in rows if r["t"] == cfg.t_max), None),
           "solver": {"chosen": f"inversion-less BM, {cfg.bm_bank} multiplier bank"}}
    # the solver options side by side: decode cycles at t_max (and yosys LUT4 with synth)
    options = {}
    for bank in ("half", "full"):
        c = dataclasses.replace(cfg, bm_bank=bank)
        options[bank] = {"multipliers": c.bm_multipliers,
                         "decode_cycles_at_t_max": measure_t(c.t_max, c)["decode_cycles"]}
    if synth:
        from nandrig.gateware.bch.decoder import BchDecoder
        from nandrig.gateware.bch.encoder import BchEncoder
        from nandrig.gateware.synth import cell_counts, netlist, synthesize

        out["ecp5"] = {"device": "LFE5U-85F CABGA381", "encoder": synthesize(BchEncoder(cfg), "bch_encoder"),
                       "decoder": synthesize(BchDecoder(cfg), "bch_decoder", freq_mhz=60, hierarchical=True)}
        for bank, row in options.items():
            if bank != cfg.bm_bank:
                other = BchDecoder(dataclasses.replace(cfg, bm_bank=bank))
                net = netlist(other, f"bch_decoder_{bank}", hierarchical=True)
                row["yosys"] = cell_counts(net)
            else:
                row["yosys"] = out["ecp5"]["decoder"]["yosys"]
        echo("synthesized")
    out["solver"]["options"] = options
    return out
