"""Four endurance campaigns on four targets of one RTL rig at once: the firmware cycles one target's blocks
while the others' are read, and each chip measures as it does with its campaign run on its own."""
import json
import signal
import subprocess
import sys
import time

import pytest

from nandrig.boards.sim.rtl.run import RtlRig
from nandrig.host.storage.store import Store
from nandrig.virtual_chip.chip import VirtualChip
from tests.boards.short_busy import short_busy_chip

PROFILE, SEEDS, BLOCK, PRE_WEAR = "mlc-small", (81, 82, 83, 84), 2, 10_000
ENDURANCE = ("endurance", "--blocks", str(BLOCK), "--cycles", "2", "--checkpoints", "1,2")


def chips() -> tuple[VirtualChip, dict[int, VirtualChip]]:
    """The four chips, their block worn beforehand (bulk cycling, ending erased) so its reads have errors."""
    out = []
    for seed in SEEDS:
        c = short_busy_chip(PROFILE, seed)
        c.cycle(BLOCK, PRE_WEAR, seed=9, program=False)
        out.append(c)
    return out[0], {k: c for k, c in enumerate(out) if k}


@pytest.mark.slow
def test_four_campaigns_at_once_killed_and_resumed_measure_as_one_target_at_a_time(run_cli, per_page, tmp_path):
    """One target at a time first (`run --target K`, four times), then `run --target 0-3` on a fresh rig with the
    same chips, SIGKILLed while the four run, and `resume`d: every campaign done, each chip's wear exact, and
    each campaign's per-page export (checkpoint, P/E, block, page, bit errors by direction, read busy time)
    equal to its campaign run on its own."""
    apart, together = tmp_path / "apart.db", tmp_path / "together.db"
    c0, others = chips()
    with RtlRig(c0, others=others) as sim:
        for k in range(4):
            r = run_cli("run", *ENDURANCE, "--rig", sim.url, "--db", apart, "--target", k)
            assert r.code == 0, r.err
    c0, others = chips()
    with RtlRig(c0, others=others) as sim:
        p = subprocess.Popen([sys.executable, "-m", "nandrig", "run", *ENDURANCE, "--rig", sim.url, "--db",
                              str(together), "--target", "0-3"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 600
            # killed once two targets have begun cycling: their CYCLEs run on the rig as the host dies
            while sum(c.pe_count(BLOCK) > PRE_WEAR for c in sim.sockets.values()) < 2 and p.poll() is None \
                    and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            p.send_signal(signal.SIGKILL)
            _, err = p.communicate()
        store = Store(together)
        try:
            states = [c.state for c in store.campaigns()]
            pending = [store.pending(c.id) for c in store.campaigns()]
        finally:
            store.close()
        assert states == ["running"] * 4, err
        assert any(pending), "killed with nothing in flight"
        r = run_cli("resume", "--db", together, "--rig", sim.url)
        assert r.code == 0, r.err
        assert "at once" in r.err
        wear = {k: c.pe_count(BLOCK) for k, c in sim.sockets.items()}
    assert wear == {k: PRE_WEAR + 2 for k in range(4)}
    errors = 0
    for k in range(4):
        want, got = per_page(apart, k + 1), per_page(together, k + 1)
        assert got == want, k
        errors += sum(int(row[8]) + int(row[9]) for row in got[1:])
    assert errors > 0  # something to compare
    ls = json.loads(run_cli("ls", "--db", together, "--json").out)
    assert [(c["state"], c["rig"].endswith(f"target {k}") if k else True) for k, c in enumerate(ls)] == \
        [("done", True)] * 4
