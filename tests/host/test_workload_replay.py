"""Replaying a workload on the FTL (host/workload/replay.py): a request's latency is its wait plus what its
operations cost on the chip, bus and decoder; idle time reaches the chip; on the virtual rig every read of a
replay checks out."""
import sys
from pathlib import Path

import numpy as np

from nandrig.boards.sim.server import VirtualRig
from nandrig.host.ftl.flash import RigFlash
from nandrig.host.ftl.ftl import Ftl, FtlConfig
from nandrig.host.ftl.policy import FixedT
from nandrig.host.link.rig import Rig
from nandrig.host.link.transport import InProcessTransport
from nandrig.host.workload.replay import BusTiming, EngineLatency, replay
from nandrig.host.workload.trace import PROFILES, IoOp, Request, synthetic
from nandrig.virtual_chip.chip import VirtualChip

sys.path.insert(0, str(Path(__file__).parent))
from test_ftl import MemoryFlash  # noqa: E402

BUS = BusTiming(t_wc_ns=20.0, t_rc_ns=20.0, raw_page_bytes=2112)


def test_latency_is_the_wait_plus_the_operations_cost():
    ftl = Ftl(MemoryFlash(), FixedT(8), FtlConfig())
    one_write = 800_000 + 2112 * 20.0  # MemoryFlash's tPROG, the page in
    one_read = 50_000 + 2112 * 20.0 + EngineLatency().ns(1, 8, 2048)
    spaced = [Request(k * 10_000_000, IoOp.WRITE, k * 2048, 2048) for k in range(5)]
    r = replay(ftl, spaced, BUS)
    assert np.allclose(r.write_latency_ns, one_write)
    # five reads arriving at once: each waits for those before it
    at_once = [Request(100_000_000, IoOp.READ, k * 2048, 2048) for k in range(5)]
    r = replay(ftl, at_once, BUS)
    assert np.allclose(r.read_latency_ns, [one_read * (k + 1) for k in range(5)])
    assert r.damaged_reads == 0 and r.percentiles(IoOp.READ)["p50_us"] == np.percentile(r.read_latency_ns, 50) / 1000


def test_idle_time_reaches_the_chip_and_unwritten_reads_are_counted_apart():
    flash = MemoryFlash()
    ftl = Ftl(flash, FixedT(8), FtlConfig())
    reqs = [Request(0, IoOp.WRITE, 0, 2048), Request(int(5e9), IoOp.READ, 0, 2048),
            Request(int(5e9) + 1, IoOp.READ, 4096, 2048)]
    r = replay(ftl, reqs, BUS)
    assert 4.9e9 < flash.idled < 5e9 and r.unwritten_reads == 1 and r.damaged_reads == 0


def test_a_zipf_workload_on_the_virtual_rig_reads_back_what_it_wrote():
    rig = Rig(InProcessTransport(VirtualRig(VirtualChip("mlc-small", 5))))
    ftl = Ftl(RigFlash(rig, range(16)), FixedT(8), FtlConfig(over_provisioning=0.25))
    span = ftl.logical_pages * 2048
    profile = PROFILES["zipf"].__class__("zipf", reads=0.7, size=2048)
    r = replay(ftl, synthetic(profile, span, 400, seed=2), BUS)
    assert r.requests == 400 and r.damaged_reads == 0 and ftl.counters.silent_caught == 0
    assert r.throughput_mb_s() > 0 and r.iops() > 0 and ftl.counters.host_reads > 0
