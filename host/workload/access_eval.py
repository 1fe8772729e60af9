"""FlexLevel's AccessEval on the workload FTL: an LDPC drive with and without it, on the same aged, retained data
and the same read-heavy workload (`nandrig workload accesseval`).

Each policy gets a fresh virtual chip of the same die: ``blocks`` blocks cycled to ``pe`` P/E, the FTL's whole
logical space written once, ``retention`` of idle time, then the workload. Everything an LDPC read decides comes
from the page's errors as the chip makes them and the measured sensing table (host/ftl/sensing.py); the reduced
blocks are programmed and read on the chip through its standard commands (host/ftl/reduced.py).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict

import numpy as np

from nandrig.chip.read_retry import require_table
from nandrig.errors import NandrigError
from nandrig.host.ftl.flash import RigFlash
from nandrig.host.ftl.ftl import BlockState, FlashFull, Ftl, FtlConfig
from nandrig.host.ftl.policy import AccessEval, BlockMode, LdpcSensing
from nandrig.host.ftl.sensing import SensingReach
from nandrig.host.link.rig import Rig
from nandrig.host.workload.evaluate import figures
from nandrig.host.workload.replay import BusTiming, ReplayResult, replay
from nandrig.host.workload.trace import Synthetic, synthetic

HOUR_NS = 3.6e12


def compare(reach: SensingReach, access_eval: AccessEval, workload: Synthetic, requests: int, *,
            chip: str = "mlc-3x", seed: int = 1, blocks: Sequence[int] = tuple(range(32)), pe: int = 10_000,
            retention_h: float = 24 * 365.0, over_provisioning: float = 0.1, trace_seed: int = 1) -> dict:
    runs = {}
    for policy in (LdpcSensing(reach), LdpcSensing(reach, access_eval)):
        with Rig.open("sim", chip=chip, seed=seed, stat_reads=True) as rig:
            info = rig.info()
            if len(blocks) < 8:
                raise NandrigError(f"the FTL needs at least 8 blocks, not {len(blocks)}")
            require_table(info.manufacturer, info.model).check((0, *access_eval.refs))
            flash = RigFlash(rig, blocks)
            ftl = Ftl(flash, policy, FtlConfig(over_provisioning=over_provisioning, static_wl_spread=None))
            ftl.age_evenly(pe)  # every block cycled to the wear the comparison is at, before its first use
            for lpn in range(ftl.logical_pages):
                ftl.write(lpn, lpn + 1)
            flash.idle(retention_h * HOUR_NS)
            r, end = ReplayResult(), "trace replayed"
            try:
                replay(ftl, synthetic(workload, ftl.logical_pages * flash.geometry.page_bytes, requests, trace_seed),
                       BusTiming.of(rig), result=r)
            except FlashFull:
                end = f"flash full after {r.requests} requests: {ftl.counters.retired_blocks} block(s) retired"
            runs[policy.name] = {"end": end, **_summary(ftl, r, figures(ftl, r))}
    return {"chip": chip, "seed": seed, "blocks": [min(blocks), max(blocks), len(blocks)], "pe": pe,
            "retention_h": retention_h, "requests": requests, "workload": asdict(workload),
            "access_eval": asdict(access_eval), "sensing_table": reach.source, "policies": runs}


def _summary(ftl: Ftl, r, fig: dict) -> dict:
    c = ftl.counters
    reduced = (ftl.mode == BlockMode.REDUCED) & (ftl.state == BlockState.FULL)
    lat = np.array(r.read_latency_ns)
    return {**{k: fig[k] for k in ("device_mb_s", "read_latency_us", "write_latency_us", "write_amplification_all",
                                   "gc_moves", "erases", "decode_failures", "silent_caught", "lost_pages",
                                   "damaged_reads", "raw_ber", "retired_blocks")},
            "read_latency_mean_us": float(lat.mean()) / 1000 if len(lat) else None,
            "background_ms": r.background_ns / 1e6,  # the moves' device time, in the host's idle gaps
            "host_reads": c.host_reads, "host_writes": c.host_writes,
            "sensing_levels_per_read": c.sensed_levels / c.sensed_reads if c.sensed_reads else None,
            "soft_reads": c.soft_reads, "beyond_reach": c.beyond_reach,
            "reduced_blocks_programmed": c.reduced_blocks, "reduced_moves": c.reduced_moves,
            "reduced_reads": c.reduced_reads, "reduced_refused": c.reduced_refused,
            "reduced_blocks_at_end": int(reduced.sum()),
            # the capacity AccessEval gave up: a quarter of every reduced block in use, in MLC pages
            "capacity_given_up_pages": int(reduced.sum()) * (ftl.ppb - ftl.layout.slots),
            "capacity_given_up_share": float(reduced.sum() * (ftl.ppb - ftl.layout.slots)
                                             / (ftl.ppb * np.sum(ftl.state != BlockState.BAD)))}


def summary_lines(res: dict) -> list[str]:
    w, ae = res["workload"], res["access_eval"]
    out = [f"{res['chip']} seed {res['seed']}, {res['blocks'][2]} blocks in {res['blocks'][0]}-{res['blocks'][1]} at {res['pe']} P/E, "
           f"{res['retention_h']:g} h of retention, then {res['requests']} requests ({w['access']}, "
           f"{w['reads']:.0%} reads, {w['size']} B); AccessEval: {ae['hot_reads']} reads and {ae['min_levels']} "
           f"sensing levels make data hot, reduced reads at VR2, VR3 {ae['refs'][0]:+d}, {ae['refs'][1]:+d}",
           f"sensing levels by raw BER from: {res['sensing_table']}",
           f"{'policy':<17}{'read mean us':>13}{'p50 us':>8}{'p99 us':>8}{'levels/read':>12}{'soft reads':>11}"
           f"{'reduced blk':>12}{'cap. given':>11}{'WA':>6}{'lost rd':>8}{'silent':>7}"]
    for name, r in res["policies"].items():
        p = r["read_latency_us"] or {}
        out.append(f"{name:<17}{r['read_latency_mean_us'] or 0:>13.0f}{p.get('p50_us', 0):>8.0f}{p.get('p99_us', 0):>8.0f}"
                   f"{r['sensing_levels_per_read'] or 0:>12.2f}{r['soft_reads']:>11}{r['reduced_blocks_at_end']:>12}"
                   f"{r['capacity_given_up_share']:>11.1%}{r['write_amplification_all']:>6.2f}{r['damaged_reads']:>8}"
                   f"{r['silent_caught']:>7}  {r['end']}")
    base, ae_run = res["policies"]["ldpc"], res["policies"]["ldpc+accesseval"]
    if base["read_latency_mean_us"] and ae_run["read_latency_mean_us"]:
        gain = 1 - ae_run["read_latency_mean_us"] / base["read_latency_mean_us"]
        verdict = (f"AccessEval {'cut' if gain > 0 else 'raised'} the mean read latency by {abs(gain):.1%} "
                   f"(FlexLevel: up to 33 % read speedup), giving up {ae_run['capacity_given_up_share']:.1%} of the "
                   f"raw capacity to {ae_run['reduced_blocks_at_end']} reduced block(s); its moves took "
                   f"{ae_run['background_ms']:.0f} ms of the device's time while the host was idle, which requests "
                   f"arriving then waited for")
        if not ae_run["reduced_moves"]:
            verdict = ("AccessEval moved nothing: no page read often enough needed soft sensing "
                       f"({base['soft_reads']} soft reads without it)")
        out.append(f"verdict: {verdict}; 0 silent corruptions is the end-to-end check's count above")
    return out
