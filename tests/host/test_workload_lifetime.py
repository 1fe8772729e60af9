"""A workload to the end of the flash's life (host/workload/lifetime.py): skipping ahead between windows counts
the life a full replay finds, and the count adds up."""
import sys
from pathlib import Path

import numpy as np
import pytest

from nandrig.host.ftl.ftl import Ftl, FtlConfig
from nandrig.host.ftl.policy import FixedT
from nandrig.host.workload.lifetime import run_to_end
from nandrig.host.workload.replay import BusTiming
from nandrig.host.workload.trace import Synthetic, synthetic

sys.path.insert(0, str(Path(__file__).parent))
from test_ftl import MemoryFlash  # noqa: E402

BUS = BusTiming(t_wc_ns=20.0, t_rc_ns=20.0, raw_page_bytes=2112)


def _life(skip: int, access: str):
    endurance = np.random.default_rng(3).normal(400, 25, 32).astype(int)  # wear-out, block to block
    ftl = Ftl(MemoryFlash(blocks=32, ppb=16, endurance=endurance), FixedT(8), FtlConfig(static_wl_spread=50))
    requests = synthetic(Synthetic(access, reads=0.3, size=2048), ftl.logical_pages * 2048, 1 << 40, seed=1)
    return ftl, run_to_end(ftl, requests, BUS, window_writes=ftl.logical_pages, skip=skip)


@pytest.mark.parametrize("access", ["uniform", "zipf"])
def test_skipping_ahead_counts_the_life_a_full_replay_finds(access):
    """Every write replayed against windows with 10 or 25 P/E skipped between them (about 2.5 and 6 % of this
    flash's life): within 6 % (measured -2.4 and +2.0 % on uniform writes, -1.0 and +3.0 % on zipf)."""
    _, full = _life(0, access)
    assert full.end == "spares exhausted" and full.host_writes == full.replayed_writes + _fill(full)
    for skip in (10, 25):
        _, fast = _life(skip, access)
        assert fast.end == "spares exhausted" and fast.replayed_writes < full.replayed_writes / 3
        assert abs(fast.host_writes / full.host_writes - 1) < 0.06, (skip, fast.host_writes, full.host_writes)


def _fill(life) -> int:
    return life.host_writes - life.replayed_writes - sum(s.stood_for for s in life.stages)


def test_the_count_is_the_fill_the_replayed_writes_and_what_each_skip_stands_for():
    ftl, life = _life(25, "uniform")
    assert _fill(life) == ftl.logical_pages
    first, later = life.stages[0], life.stages[1:]
    assert first.skipped_cycles == 0 and first.stood_for == 0
    for before, s in zip(life.stages, later):
        per_erase = before.host_writes / before.erases
        assert s.skipped_cycles == 25 and s.stood_for == round(25 * 32 * per_erase) or s.retired_blocks
    # the time a skip stands for reaches the chip's clock: the writes it stands for at the windows' pace
    stood = sum(s.stood_for_s for s in later)
    assert stood > 0 and ftl.flash.idled >= stood * 1e9 * 0.999
    assert ftl.counters.bulk_cycles > 0 and life.stages[-1].max_pe >= 400 - 3 * 25


def test_workload_lifetime_prints_the_policies_side_by_side_and_writes_its_windows(run_cli, tmp_path):
    """On the virtual chip (mlc-small): a fixed-t drive and one with density control, big skips; both reach their
    end, every read checked and none returned wrong."""
    csv_path = tmp_path / "windows.csv"
    out = run_cli("workload", "lifetime", "--policies", "fixed,flares+density", "--skip", "6000", "--gap-us", "2000",
                  "--csv", csv_path, "--report", tmp_path / "page")
    assert out.code == 0, out.err
    lines = out.out.splitlines()
    rows = {ln.split()[0]: ln.split() for ln in lines if ln.split()[:1] in (["fixed"], ["flares+density"])
            and "against" not in ln}
    assert set(rows) == {"fixed", "flares+density"} and all(r[1] in ("spares", "uncorrectable") for r in rows.values())
    assert any("flares+density against fixed: lifetime x" in ln for ln in lines)
    assert any(ln.startswith("end to end:") and ", 0 returned wrong" in ln for ln in lines)
    windows = csv_path.read_text().splitlines()
    assert windows[0].startswith("policy,window,skipped_cycles") and len(windows) > 4
    assert "service_ns" in windows[0] and "mean_t" in windows[0]
    page = (tmp_path / "page" / "index.html").read_text()
    assert "EF3S Fig. 3" in page and "EF3S Fig. 5" in page and "flares+density against fixed" in page
    assert {p.name for p in (tmp_path / "page").glob("*.png")} == {"lifetime_against_wear.png", "pe_map.png"}
