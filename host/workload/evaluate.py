"""ECC and density policies compared on one workload to the end of the flash's life, each on a fresh chip of the
same die (the virtual rig, statistical reads): lifetime, throughput, latency, energy per GB, write
amplification, moves, losses and the P/E map, side by side (`nandrig workload lifetime`)."""
from __future__ import annotations

from dataclasses import asdict

import numpy as np

from nandrig.characterization.rber import load_models
from nandrig.host.ftl.flash import RigFlash
from nandrig.host.ftl.ftl import Ftl, FtlConfig
from nandrig.host.ftl.policy import make_policy
from nandrig.host.link.rig import Rig
from nandrig.host.workload.lifetime import run_to_end
from nandrig.host.workload.replay import BusTiming
from nandrig.host.workload.trace import IoOp, Synthetic, synthetic

GB = 1e9


def lifetime_per_policy(policies: list[str], workload: Synthetic, chip: str = "mlc-small", seed: int = 1,
                        models: str = "mlc-3x-demo", rated_pe: int = 10_000, skip: int = 500,
                        over_provisioning: float = 0.1, trace_seed: int = 1) -> dict:
    """Each policy on a fresh virtual ``chip`` (``seed``) to its end: the FTL over all its blocks, ``workload``
    over the whole logical space, windows of one logical capacity of writes with ``skip`` P/E cycles before each
    (host/workload/lifetime.py); t and density from the lower- and upper-page models ``models``."""
    lower, upper = load_models(models)
    runs = {}
    for name in policies:
        with Rig.open("sim", chip=chip, seed=seed, stat_reads=True) as rig:
            info = rig.info()
            flash = RigFlash(rig, range(info.blocks))
            policy = make_policy(name, lower, upper, flash.t_max, info.codeword_bytes, rated_pe)
            ftl = Ftl(flash, policy, FtlConfig(over_provisioning=over_provisioning))
            requests = synthetic(workload, ftl.logical_pages * flash.geometry.page_bytes, 1 << 62, trace_seed)
            life = run_to_end(ftl, requests, BusTiming.of(rig), ftl.logical_pages, skip)
            runs[name] = _summary(name, ftl, life, policy)
    return {"chip": chip, "seed": seed, "models": models, "rated_pe": rated_pe, "skip_cycles": skip,
            "over_provisioning": over_provisioning, "workload": asdict(workload), "policies": runs}


def _summary(name: str, ftl: Ftl, life, policy) -> dict:
    c, r = ftl.counters, life.replay
    windows = life.stages
    joules = [s.energy_pj for s in windows if s.energy_pj is not None]
    moved = sum(s.host_bytes for s in windows if s.energy_pj is not None)
    return {
        "policy": name, "fixed_t": getattr(policy, "t", None), "end": life.end,
        "lifetime_host_writes_pages": life.host_writes,
        "lifetime_host_writes_gb": life.host_writes * ftl.flash.geometry.page_bytes / GB,
        "replayed_writes_pages": life.replayed_writes, "windows": len(windows),
        "pe_at_end": {"mean": float(np.mean(ftl.pe)), "max": int(np.max(ftl.pe))},
        "pe_map": ftl.pe.tolist(), "block_modes": ftl.mode.tolist(), "block_states": ftl.state.tolist(),
        "device_mb_s": r.device_mb_s(), "offered_mb_s": r.throughput_mb_s(), "iops": r.iops(),
        "read_latency_us": r.percentiles(IoOp.READ), "write_latency_us": r.percentiles(IoOp.WRITE),
        "energy_per_gb_j": sum(joules) * 1e-12 / (moved / GB) if moved else None,
        "write_amplification": c.write_amplification, "gc_moves": c.gc_moves, "wl_moves": c.wl_moves,
        "retired_blocks": c.retired_blocks, "pslc_refused": c.pslc_refused,
        "decode_failures": c.uncorrectable_reads, "silent_caught": c.silent_caught, "lost_pages": c.lost_pages,
        "damaged_reads": r.damaged_reads,
        "lost_read_rate": r.damaged_reads / c.host_reads if c.host_reads else 0.0,  # reported, never returned
        "raw_ber": c.bit_errors / c.bits_read if c.bits_read else 0.0,
        "stages": [asdict(s) for s in windows],
    }
