"""Replaying a workload on the FTL (host/workload/replay.py): a request's latency is its wait plus what its
operations cost on the chip, bus and decoder; idle time reaches the chip; on the virtual rig every read of a
replay checks out."""
import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

from nandrig import protocol as P
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
    # the first opens the host's block: its erase (MemoryFlash's tBERS) is that write's
    assert np.allclose(r.write_latency_ns, [one_write + 3_000_000] + [one_write] * 4)
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


class DecoderMiss(VirtualRig):
    """A virtual rig whose decoder, on the next READ, returns a codeword decoded to other data while reporting
    it corrected: what a BCH decoder does with more than t errors now and then."""

    miss_next = False

    def handle(self, frame):
        rep = super().handle(frame)
        if self.miss_next and frame.op == P.Opcode.READ and rep.status == P.Err.OK:
            self.miss_next = False
            n = P.READ_HEAD.unpack_from(rep.payload)[2]
            at = P.READ_HEAD.size + n * P.CODEWORD_COUNTS.size + 100  # a byte of the first codeword's data
            body = bytearray(rep.payload)
            body[at] ^= 0x04
            rep = dataclasses.replace(rep, payload=bytes(body))
        return rep


def test_a_decoder_miss_is_reported_lost_not_returned_as_data():
    vr = DecoderMiss(VirtualChip("mlc-small", 5))
    ftl = Ftl(RigFlash(Rig(InProcessTransport(vr)), range(16)), FixedT(8), FtlConfig())
    r = replay(ftl, [Request(0, IoOp.WRITE, k * 2048, 2048) for k in range(8)], BUS)
    assert replay(ftl, [Request(0, IoOp.READ, 3 * 2048, 2048)], BUS).damaged_reads == 0
    vr.miss_next = True
    r = replay(ftl, [Request(0, IoOp.READ, 3 * 2048, 2048), Request(0, IoOp.READ, 4 * 2048, 2048)], BUS)
    assert r.damaged_reads == 1 and ftl.counters.silent_caught == 1 and ftl.counters.uncorrectable_reads == 1


@pytest.mark.parametrize("t", [2, 0])
def test_statistical_reads_give_the_byte_paths_errors_and_decodes(t):
    """The same worn, aged pages read on both paths: raw errors, failed codewords and miscorrections at t 2
    (lib/bch.c's on the byte path, the count model's on the statistical one) agree within their counting noise;
    at t 0 (an LDPC policy's raw pages), the raw errors and the codewords holding any."""
    found = {}
    for stat in (False, True):
        rig = Rig(InProcessTransport(VirtualRig(VirtualChip("mlc-small", 5), stat_reads=stat)))
        flash = RigFlash(rig, range(16))
        rig.cycle(3, 1, 9000, seed=1)
        flash.erase(3)
        for p in range(32):
            flash.program(3, p, 77, t)
        rig.advance(hours=24 * 365)
        reads = [flash.read(3, p, 77, t) for _ in range(6) for p in range(32)]
        found[stat] = (np.array([r.raw_errors for r in reads]), sum(r.uncorrectable for r in reads),
                       sum(r.miscorrected for r in reads))
    (byte_err, byte_fail, byte_mis), (stat_err, stat_fail, stat_mis) = found[False], found[True]
    assert byte_err.mean() > 2  # errors enough for the comparison to say something
    se = np.sqrt(byte_err.var() / len(byte_err) + stat_err.var() / len(stat_err))
    assert abs(byte_err.mean() - stat_err.mean()) < 4 * se
    assert abs(byte_fail - stat_fail) < 4 * np.sqrt(byte_fail + stat_fail) + 1
    if t:
        assert byte_mis > 0 and abs(byte_mis - stat_mis) < 4 * np.sqrt(byte_mis + stat_mis) + 1
    else:
        assert byte_mis == stat_mis == 0 and byte_fail > 0
