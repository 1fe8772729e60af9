"""A workload replayed on the FTL over the RTL rig (the firmware on the simulated SoC driving a virtual chip through
the ONFI controller) and over the virtual rig (its twin, byte path): request for request the same result."""
import pytest

from nandrig.boards.sim.rtl.run import RtlRig
from nandrig.host.ftl.flash import RigFlash
from nandrig.host.ftl.ftl import Ftl, FtlConfig
from nandrig.host.ftl.policy import FixedT
from nandrig.host.link.rig import Rig
from nandrig.host.workload.replay import BusTiming, ReplayResult, replay
from nandrig.host.workload.trace import IoOp, Request, Synthetic, synthetic
from nandrig.boards.sim.server import VirtualRig
from nandrig.host.link.transport import InProcessTransport
from tests.boards.short_busy import short_busy_chip

PROFILE, SEED = "mlc-small", 12


def _replay(rig) -> tuple[list, ReplayResult, list]:
    """The FTL on blocks 8-13 filled, then 40 requests: each request's outcome as the replay saw it."""
    ftl = Ftl(RigFlash(rig, range(8, 14)), FixedT(0), FtlConfig(over_provisioning=0.5, static_wl_spread=None))
    page = 2048
    fill = [Request(0, IoOp.WRITE, lpn * page, page) for lpn in range(ftl.logical_pages)]
    work = list(synthetic(Synthetic("zipf", reads=0.5, size=page, gap_us=5000), ftl.logical_pages * page, 40, 3))
    per_request, service = [], []
    out = ReplayResult()
    for req in fill + work:
        c = ftl.counters
        before = (out.damaged_reads, c.flash_programs, c.flash_reads, c.erases, c.bit_errors, out.service_ns)
        replay(ftl, [req], BusTiming.of(rig), result=out)
        ops = (c.flash_programs - before[1], c.flash_reads - before[2], c.erases - before[3])
        per_request.append((req.op.name, out.damaged_reads - before[0], *ops, c.bit_errors - before[4]))
        service.append((out.service_ns - before[5], sum(ops)))
    return per_request, out, service


@pytest.mark.slow
def test_a_replay_on_the_rtl_rig_matches_the_virtual_rig_request_for_request():
    with RtlRig(short_busy_chip(PROFILE, SEED)) as rtl, Rig.open(rtl.url) as r:
        got, got_out, got_t = _replay(r)
    with Rig(InProcessTransport(VirtualRig(short_busy_chip(PROFILE, SEED), exact=True))) as v:
        want, want_out, want_t = _replay(v)
    assert got == want and got_out.damaged_reads == 0
    assert any(step[4] for step in got)  # collection erased blocks on the way
    # the controller times the array from R/B# (to its cycle), the twin from the chip: each request's service
    # time within 100 ns per operation
    assert all(abs(a - b) <= 100 * n for (a, n), (b, _) in zip(got_t, want_t))
