"""ECC and density policies compared on one workload to the end of the flash's life, each on a fresh chip of the
same die (the virtual rig, statistical reads): lifetime, throughput, latency, energy per GB, write
amplification, moves, losses and the P/E map, side by side (`nandrig workload lifetime`)."""
from __future__ import annotations

from collections.abc import Iterator
import dataclasses
from dataclasses import asdict

import numpy as np

from nandrig.characterization.rber import load_models
from nandrig.host.ftl.flash import RigFlash
from nandrig.host.ftl.ftl import Ftl, FtlConfig
from nandrig.host.ftl.policy import FixedT, make_policy
from nandrig.host.link.rig import Rig
from nandrig.host.workload.lifetime import Stage, run_to_end
from nandrig.host.workload.replay import BusTiming, ReplayResult
from nandrig.host.workload.trace import IoOp, Synthetic, synthetic

GB = 1e9


def lifetime_per_policy(policies: list[str], workload: Synthetic, chip: str = "mlc-small", seed: int = 1,
                        models: str = "mlc-3x-demo", rated_pe: int = 10_000, skip: int = 500,
                        over_provisioning: float = 0.1, trace_seed: int = 1) -> dict:
    """Each policy on a fresh virtual ``chip`` (``seed``) to its end: the FTL over all its blocks, ``workload``
    over the whole logical space, windows of one logical capacity of writes with ``skip`` P/E cycles before each
    (host/workload/lifetime.py); t and density from the lower- and upper-page models ``models``."""
    runs = {}
    for name, rig, flash, policy in _fresh(policies, chip, seed, models, rated_pe):
        ftl = Ftl(flash, policy, FtlConfig(over_provisioning=over_provisioning))
        requests = synthetic(workload, ftl.logical_pages * flash.geometry.page_bytes, 1 << 62, trace_seed)
        life = run_to_end(ftl, requests, BusTiming.of(rig), ftl.logical_pages, skip)
        runs[name] = _summary(name, ftl, life, policy)
    return {"chip": chip, "seed": seed, "models": models, "rated_pe": rated_pe, "skip_cycles": skip,
            "over_provisioning": over_provisioning, "workload": asdict(workload), "policies": runs}


def _fresh(names: list[str], chip: str, seed: int, models: str, rated_pe: int) -> Iterator[tuple]:
    """Each named policy on a fresh virtual chip of the die, (name, rig, flash over all its blocks, policy), the
    rig open while the caller works: ``bch1`` is Kgil's baseline (t 1, MLC), the others ``make_policy``'s on the
    lower- and upper-page models ``models``."""
    lower, upper = load_models(models)
    for name in names:
        with Rig.open("sim", chip=chip, seed=seed, stat_reads=True) as rig:
            info = rig.info()
            flash = RigFlash(rig, range(info.blocks))
            yield name, rig, flash, (FixedT(1) if name == "bch1" else
                                     make_policy(name, lower, upper, flash.t_max, info.codeword_bytes, rated_pe))


def figures(ftl: Ftl, r: ReplayResult) -> dict:
    """What a replay measured, as every workload output gives it: throughput, latency, the FTL's work and wear,
    and the end-to-end check's counts."""
    c = ftl.counters
    return {
        "device_mb_s": r.device_mb_s(), "offered_mb_s": r.throughput_mb_s(), "iops": r.iops(),
        "read_latency_us": r.percentiles(IoOp.READ), "write_latency_us": r.percentiles(IoOp.WRITE),
        "write_amplification_all": c.write_amplification, "gc_moves": c.gc_moves, "wl_moves": c.wl_moves,
        "erases": c.erases, "retired_blocks": c.retired_blocks, "pslc_refused": c.pslc_refused,
        "decode_failures": c.uncorrectable_reads, "silent_caught": c.silent_caught, "lost_pages": c.lost_pages,
        "damaged_reads": r.damaged_reads, "replayed_reads": c.flash_reads,
        "lost_read_rate": r.damaged_reads / c.host_reads if c.host_reads else 0.0,  # reported, never returned
        "raw_ber": c.bit_errors / c.bits_read if c.bits_read else 0.0,
        # JEDEC JESD218's UBER: data errors (codewords not returned as written) per bit read
        "uber": c.uncorrectable_codewords / c.bits_read if c.bits_read else 0.0,
        "pe_at_end": {"mean": float(np.mean(ftl.pe)), "max": int(np.max(ftl.pe))},
        "pe_map": ftl.pe.tolist(), "block_modes": ftl.mode.tolist(), "block_states": ftl.state.tolist(),
    }


def _summary(name: str, ftl: Ftl, life, policy) -> dict:
    c = ftl.counters
    windows = life.stages
    # per window (each stands for the same span of wear): the life's median, where totals would be the last
    # windows' (a flash about to run out of blocks collects all the time)
    per_gb = [s.energy_pj * 1e-12 / (s.host_bytes / GB) for s in windows[1:] if s.energy_pj is not None and s.host_bytes]
    wa = [s.write_amplification for s in windows[1:] if s.host_writes]
    return {
        "policy": name, "fixed_t": getattr(policy, "t", None), "end": life.end,
        "lifetime_host_writes_pages": life.host_writes,
        "lifetime_host_writes_gb": life.host_writes * ftl.flash.geometry.page_bytes / GB,
        "replayed_writes_pages": life.replayed_writes, "windows": len(windows),
        **figures(ftl, life.replay),
        "energy_per_gb_j": float(np.median(per_gb)) if per_gb else None,
        "energy_per_gb_j_first_last": [per_gb[0], per_gb[-1]] if per_gb else None,
        "write_amplification": float(np.median(wa)) if wa else c.write_amplification,
        "write_amplification_first_last": [wa[0], wa[-1]] if wa else None,
        "stages": [asdict(s) for s in windows],
    }


# what the founding papers report for the same comparison (../shared/seeds): EF3S gives its gains as figures only
PAPERS = ("EF3S (IOLTS 2013): adaptable ECC ahead of fixed in throughput and energy per operation over the whole "
          "life (Figs. 3-4, no figure in its text); Kgil et al. (ISCA 2008): ECC strength and density programmed per "
          "page give x20 the lifetime of a BCH t=1 controller at under 5 % performance cost, in a disk cache "
          "whose capacity may shrink")


def summary_lines(res: dict) -> list[str]:
    """The policies side by side, then what they gain over the first and what the papers report."""
    runs = list(res["policies"].values())
    w = res["workload"]
    out = [f"{res['chip']} seed {res['seed']}, {w['access']} workload ({w['reads']:.0%} reads, {w['size']} B "
           f"requests), t from {res['models']}, windows every {res['skip_cycles']} P/E, "
           f"{res['over_provisioning']:.0%} over-provisioning",
           f"{'policy':<16}{'end':<18}{'host GB':>9}{'P/E end':>9}{'dev MB/s':>9}{'read p99 us':>12}"
           f"{'J/GB':>7}{'WA':>6}{'retired':>8}{'lost rd':>8}",
           "(J/GB and WA: the median over the windows, each an equal span of wear; dev MB/s: bytes over the "
           "device's service time; latency: every replayed request's, its wait included)"]
    for r in runs:
        out.append(f"{r['policy']:<16}{r['end']:<18}{r['lifetime_host_writes_gb']:>9.2f}{r['pe_at_end']['mean']:>9.0f}"
                   f"{r['device_mb_s']:>9.2f}{r['read_latency_us'].get('p99_us', 0):>12.0f}"
                   f"{(r['energy_per_gb_j'] or 0):>7.1f}{r['write_amplification']:>6.2f}{r['retired_blocks']:>8}"
                   f"{r['damaged_reads']:>8}")
    base = runs[0]
    for r in runs[1:]:
        out.append(f"{r['policy']} against {base['policy']}: lifetime x{r['lifetime_host_writes_gb'] / base['lifetime_host_writes_gb']:.2f}, "
                   f"device throughput x{r['device_mb_s'] / base['device_mb_s']:.3f}, energy per GB "
                   f"x{(r['energy_per_gb_j'] or 0) / (base['energy_per_gb_j'] or 1):.3f}")
    shortest = min(r["pe_at_end"]["mean"] for r in runs)
    if res["skip_cycles"] > 0.05 * shortest:
        out.append(f"skips too coarse: {res['skip_cycles']} P/E is {res['skip_cycles'] / shortest:.0%} of the shortest "
                   f"life here, and an end inside a skip is counted at its end: rerun with --skip "
                   f"{max(1, int(0.025 * shortest))} or less for figures to compare")
    checked = sum(r["replayed_reads"] for r in runs)
    caught = sum(r["silent_caught"] for r in runs)
    out.append(f"end to end: {checked} page reads checked against what was written, 0 returned wrong "
               f"({caught} miscorrections caught and reported lost)")
    out.append("papers: " + PAPERS)
    return out


def write_csv(res: dict, path: str) -> None:
    """One row per policy and window: what the flash had become and what the window measured."""
    import csv

    fields = ["policy", "window", *(f.name for f in dataclasses.fields(Stage))]
    with open(path, "w", newline="") as f:
        out = csv.DictWriter(f, fields)
        out.writeheader()
        for name, r in res["policies"].items():
            for k, s in enumerate(r["stages"]):
                out.writerow({"policy": name, "window": k, **s})


CACHE_CONTROLLERS = ("bch1", "fixed", "flares", "flares+density")


def cache_lifetime_per_controller(controllers: list[str], workload: Synthetic, chip: str = "mlc-small", seed: int = 1,
                                  models: str = "mlc-3x-demo", rated_pe: int = 10_000, window: int = 5000,
                                  skip: int = 200_000, dram_pages: int = 16, trace_seed: int = 1) -> dict:
    """Kgil's flash disk cache (host/workload/disk_cache.py) on a fresh virtual ``chip`` per controller, a
    working set twice the flash: ``bch1`` (Kgil's baseline: t 1, MLC), ``fixed`` (the worst-case t for life),
    ``flares`` (t by wear) and ``flares+density`` (and pseudo-SLC past the engine's reach: the cache shrinks)."""
    from nandrig.host.workload.disk_cache import CacheConfig, DiskCache, run_cache_to_end

    runs = {}
    for name, rig, flash, policy in _fresh(controllers, chip, seed, models, rated_pe):
        cache = DiskCache(flash, policy, BusTiming.of(rig), CacheConfig(dram_pages=dram_pages))
        g = flash.geometry
        life = run_cache_to_end(cache, synthetic(workload, 2 * g.blocks * g.pages_per_block * g.page_bytes, 1 << 62,
                                                 trace_seed), window, skip, window)
        early, late = life.windows[0], life.windows[-1]
        runs[name] = {"controller": name, "fixed_t": getattr(policy, "t", None), **life.summary(),
                      "hit_rate_first_window": early.hit_rate, "hit_rate_last_window": late.hit_rate,
                      "service_us_per_request_first": early.service_ns / max(early.requests, 1) / 1e3,
                      "service_us_per_request_last": late.service_ns / max(late.requests, 1) / 1e3}
    return {"chip": chip, "seed": seed, "models": models, "window": window, "skip_requests": skip,
            "dram_pages": dram_pages, "workload": asdict(workload), "controllers": runs}


def cache_summary_lines(res: dict) -> list[str]:
    runs = list(res["controllers"].values())
    w = res["workload"]
    out = [f"Kgil's disk cache on {res['chip']} seed {res['seed']}: zipf {w['zipf_s']} over twice the flash, "
           f"{w['reads']:.0%} reads, {res['dram_pages']} DRAM pages in front, 90/10 read/write regions",
           f"{'controller':<16}{'t':>4}{'requests to end':>17}{'end':>10}{'1st loss seen':>15}{'hit rate':>10}"
           f"{'first/last':>14}{'us/req first/last':>20}{'pSLC opens':>11}"]
    for r in runs:
        seen = r["first_loss_request"]
        out.append(f"{r['controller']:<16}{r['fixed_t'] if r['fixed_t'] is not None else 'wear':>4}{r['requests']:>17,}"
                   f"{r['end']:>10}{(f'{seen:,}' if seen else 'none'):>15}{r['hit_rate']:>10.3f}"
                   f"{r['hit_rate_first_window']:>7.3f}/{r['hit_rate_last_window']:<6.3f}"
                   f"{r['service_us_per_request_first']:>10.0f}/{r['service_us_per_request_last']:<9.0f}"
                   f"{r['counters']['pslc_opens']:>11}")
    base = res["controllers"].get("bch1")
    for r in runs:
        if base and r is not base:
            out.append(f"{r['controller']} against bch1: lifetime x{r['requests'] / base['requests']:.1f} to no "
                       f"room, hit rate over the life {r['hit_rate']:.3f} against {base['hit_rate']:.3f}")
    out.append("(a loss is seen only in a replayed window: with skips, the first one seen is an upper bound; "
               "--skip 0 replays every request)")
    out.append("Kgil et al. (ISCA 2008): x20 the lifetime of a BCH t=1 controller to total failure, under 5 % "
               "performance cost")
    return out
