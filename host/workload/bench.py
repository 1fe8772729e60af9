"""`nandrig bench workload`: how fast the FTL replays a synthetic trace on the virtual rig (in process, reads on
its statistical path), requests per wall second, with what the replay found, so a speed figure never hides a
broken run."""
from __future__ import annotations

import time
from dataclasses import asdict

from nandrig.errors import NandrigError
from nandrig.host.ftl.flash import RigFlash
from nandrig.host.ftl.ftl import Ftl, FtlConfig
from nandrig.host.ftl.policy import FixedT
from nandrig.host.link.rig import Rig
from nandrig.host.workload.replay import BusTiming, replay
from nandrig.host.workload.trace import PROFILES, IoOp, Request, synthetic


def bench_workload(requests: int, workload: str = "uniform", chip: str = "mlc-small", seed: int = 1,
                   blocks: int | None = None, t: int = 8, over_provisioning: float = 0.1, repeats: int = 1) -> dict:
    """``repeats`` runs, each on a fresh chip: the FTL on ``blocks`` blocks (all the chip's by default), its
    logical space written once, then ``requests`` requests of ``workload`` over it, timed; the median."""
    walls, last = [], None
    for _ in range(repeats):
        with Rig.open("sim", chip=chip, seed=seed, stat_reads=True) as rig:
            have = rig.info().blocks
            if blocks is not None and blocks > have:
                raise NandrigError(f"--blocks {blocks}: a {chip} chip has {have}")
            flash = RigFlash(rig, range(blocks or have))
            ftl = Ftl(flash, FixedT(t), FtlConfig(over_provisioning=over_provisioning))
            page = flash.geometry.page_bytes
            bus = BusTiming.of(rig)
            replay(ftl, (Request(0, IoOp.WRITE, lpn * page, page) for lpn in range(ftl.logical_pages)), bus)
            filled = asdict(ftl.counters)
            start = time.perf_counter()  # from a full drive: collection at its steady state
            result = replay(ftl, synthetic(PROFILES[workload], ftl.logical_pages * page, requests, seed), bus)
            walls.append(time.perf_counter() - start)
            last = (ftl, result, {k: v - filled[k] for k, v in asdict(ftl.counters).items()})
    ftl, result, counted = last
    walls.sort()
    wall = walls[len(walls) // 2]
    wa = counted["flash_programs"] / counted["host_writes"] if counted["host_writes"] else 0.0
    return {
        "rig": "virtual (in process, statistical reads)", "chip": chip, "seed": seed, "blocks": flash.geometry.blocks,
        "workload": workload, "requests": requests, "ecc_t": t, "over_provisioning": over_provisioning,
        "repeats": repeats, "wall_s": round(wall, 2), "wall_s_all": [round(w, 2) for w in walls],
        "requests_per_s": round(requests / wall), "wall_per_1M_requests_min": round(wall / requests * 1e6 / 60, 2),
        # the trace offers more than one chip serves, so its queue only grows: no latency here, what the device
        # sustained instead (`nandrig workload lifetime` paces its trace)
        "replay": {"device_mb_s": round(result.device_mb_s(), 3), "unwritten_reads": result.unwritten_reads,
                   "damaged_reads": result.damaged_reads},
        "ftl": {**counted, "write_amplification": round(wa, 3)},  # the timed requests' (the fill's apart)
    }
