"""A workload replayed on the FTL over the RTL rig (the firmware on the simulated SoC driving a virtual chip through
the ONFI controller) and over the virtual rig (its twin, byte path): request for request the same result."""
import pytest

from nandrig.boards.sim.rtl.run import HOST_TIMEOUT_S, RtlRig
from nandrig.host.ftl.flash import RigFlash
from nandrig.host.ftl.ftl import Ftl, FtlConfig
from nandrig.host.ftl.policy import FixedT
from nandrig.host.link.rig import Rig
from nandrig.host.workload.replay import BusTiming, ReplayResult, replay
from nandrig.host.workload.trace import IoOp, Request, Synthetic, synthetic
from nandrig.boards.sim.server import VirtualRig
from nandrig.host.link.transport import InProcessTransport
from nandrig.virtual_chip.chip import VirtualChip
from tests.boards.short_busy import short_busy_chip

PROFILE, SEED = "mlc-small", 12
BLOCKS = range(8, 14)
# under ECC: worn blocks and 6 h between requests (the data ages), so pages read with errors to correct
ECC_T, ECC_WEAR, ECC_GAP_US = 8, 9000, 6 * 3.6e9


def _chip(wear: int) -> VirtualChip:
    c = short_busy_chip(PROFILE, SEED)
    for b in BLOCKS if wear else ():
        c.cycle(b, wear, seed=9, program=False)  # bulk wear; ends erased, factory mark intact
    return c


def _replay(rig, t: int, gap_us: float) -> tuple[list, ReplayResult, list]:
    """The FTL on blocks 8-13 filled, then 40 requests: each request's outcome as the replay saw it."""
    ftl = Ftl(RigFlash(rig, BLOCKS), FixedT(t), FtlConfig(over_provisioning=0.5, static_wl_spread=None))
    page = 2048
    fill = [Request(0, IoOp.WRITE, lpn * page, page) for lpn in range(ftl.logical_pages)]
    work = list(synthetic(Synthetic("zipf", reads=0.5, size=page, gap_us=gap_us), ftl.logical_pages * page, 40, 3))
    per_request, service = [], []
    out = ReplayResult()
    for req in fill + work:
        c = ftl.counters
        before = (out.damaged_reads, c.flash_programs, c.flash_reads, c.erases, c.bit_errors, out.service_ns,
                  c.uncorrectable_codewords, c.silent_caught)
        replay(ftl, [req], BusTiming.of(rig), result=out)
        ops = (c.flash_programs - before[1], c.flash_reads - before[2], c.erases - before[3])
        per_request.append((req.op.name, out.damaged_reads - before[0], *ops, c.bit_errors - before[4],
                            c.uncorrectable_codewords - before[6], c.silent_caught - before[7]))
        service.append((out.service_ns - before[5], sum(ops)))
    return per_request, out, service


@pytest.mark.slow
@pytest.mark.parametrize("ecc", [False, True], ids=["raw", "bch-engine"])
def test_a_replay_on_the_rtl_rig_matches_the_virtual_rig_request_for_request(ecc):
    """Raw pages (t 0), and under ECC: t 8 on worn blocks, the SoC's BCH engine decoding on the RTL rig and
    bchlib on the virtual one."""
    t, wear, gap_us = (ECC_T, ECC_WEAR, ECC_GAP_US) if ecc else (0, 0, 5000)
    with RtlRig(_chip(wear), bch=ecc) as rtl, Rig.open(rtl.url, timeout=HOST_TIMEOUT_S) as r:
        got, got_out, got_t = _replay(r, t, gap_us)
    with Rig(InProcessTransport(VirtualRig(_chip(wear), exact=True))) as v:
        want, want_out, want_t = _replay(v, t, gap_us)
    assert got == want and got_out.damaged_reads == 0
    assert any(step[4] for step in got)  # collection erased blocks on the way
    if ecc:  # pages read with raw errors, every one corrected: decoded the same on both
        assert sum(step[5] for step in got if step[0] == "READ") > 0 and not any(step[6] or step[7] for step in got)
    # the controller times the array from R/B# (to its cycle), the twin from the chip: each request's service
    # time within 100 ns per operation
    assert all(abs(a - b) <= 100 * n for (a, n), (b, _) in zip(got_t, want_t))
