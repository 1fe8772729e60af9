"""The RTL rig (SoC + firmware in Verilator, the virtual chip on its pins) against the virtual rig."""
import json
import time

import pytest

from nandrig.boards.sim.chip import VirtualChip
from nandrig.boards.sim.rtl.run import RtlRig
from nandrig.host.rig import Rig

pytestmark = pytest.mark.slow
PROFILE, SEED = "mlc-small", 11


@pytest.fixture(scope="module")
def rtl():
    with RtlRig(VirtualChip(PROFILE, SEED)) as rig:
        yield rig


def test_rig_info_reads_the_chip_identity_from_its_parameter_page(rtl, run_cli):
    got = run_cli("rig", "info", "--rig", rtl.url, "--json")
    assert got.code == 0, got.err
    want = run_cli("rig", "info", "--rig", "sim", "--chip", PROFILE, "--seed", SEED, "--json")
    g, w = json.loads(got.out), json.loads(want.out)
    assert g.pop("rig_kind") == "rtl" and w.pop("rig_kind") == "virtual"
    assert g.pop("rig").startswith("nandrig-rtl")
    w.pop("rig")
    assert g == w


def test_erase_program_read_count_the_same_errors_as_the_virtual_rig(rtl):
    pages = range(4)
    results = {}
    with Rig.open(rtl.url) as r, Rig.open("sim", chip=PROFILE, seed=SEED, exact=True) as v:
        for name, rig in (("rtl", r), ("virtual", v)):
            t0 = time.monotonic()
            erase = rig.erase(3)
            progs = [rig.program(3, p, seed=77) for p in pages]
            reads = [rig.read(3, p, seed=77) for p in pages]
            results[name] = (erase.chip_status, [p.chip_status for p in progs],
                             [rd.codewords for rd in reads])
            results[name + "_busy"] = erase.busy_ns
            results[name + "_wall"] = time.monotonic() - t0
    assert results["rtl"] == results["virtual"]
    # the controller measures busy time from R/B#, within a cycle or two of the chip's own figure
    assert abs(results["rtl_busy"] - results["virtual_busy"]) <= 100


def test_bench_rig_measures_a_block_cycle_against_its_floor():
    from nandrig.boards.sim.rtl.bench import bench_rig

    j = bench_rig(PROFILE, SEED, repeats=1)
    run = j["runs"][0]
    assert run["data_in_bytes"] == run["data_out_bytes"] == 32 * 2112  # every page programmed and read in full
    assert run["chip_busy_ns"] > 0 and 1.0 < j["overhead_ratio"] < 2.0  # the floor is a floor
    assert j["overhead_ratio_without_host"] < j["overhead_ratio"]
    assert 0 < j["firmware"]["code_bytes"] < 64 * 1024
