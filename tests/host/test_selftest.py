"""``nandrig rig selftest``: DQ faults injected into the simulated adapter are found and named."""
import itertools
import json
import sqlite3

import numpy as np
import pytest

from nandrig.boards.sim.wiring import Wiring
from nandrig.host.engine.selftest import ONFI_SIGNATURE, diagnose, walking_patterns


def verdicts(lines) -> dict[int, str]:
    return {v.line: v.verdict for v in lines if not v.verdict.startswith("ok")}


@pytest.mark.parametrize("line", range(8))
@pytest.mark.parametrize("level", [0, 1])
def test_a_round_trip_of_walking_patterns_names_a_stuck_line(line, level):
    want = walking_patterns(1024)
    wiring = Wiring(stuck0=(1 << line) * (level == 0), stuck1=(1 << line) * (level == 1))
    assert verdicts(diagnose(want, wiring.apply_bytes(want))) == {line: f"stuck at {level}"}


@pytest.mark.parametrize("a, b", list(itertools.combinations(range(8), 2)))
def test_a_round_trip_of_walking_patterns_names_both_lines_of_a_short(a, b):
    want = walking_patterns(1024)
    assert verdicts(diagnose(want, Wiring(shorts=((a, b),)).apply_bytes(want))) == {a: f"shorted to DQ{b}",
                                                                                  b: f"shorted to DQ{a}"}


def test_raw_bit_errors_of_a_fresh_page_are_no_fault_but_an_intermittent_line_is():
    want = walking_patterns(4096)
    rng = np.random.default_rng(3)
    got = np.frombuffer(want, np.uint8).copy()
    got[rng.integers(0, len(got), 3)] ^= 1 << rng.integers(0, 8, 3).astype(np.uint8)  # ~1e-4 of the bits
    assert verdicts(diagnose(want, got.tobytes())) == {}
    flaky = np.frombuffer(want, np.uint8).copy()
    flaky[rng.random(len(flaky)) < 0.02] ^= 0x10  # DQ4 wrong in 2 % of the bytes
    assert verdicts(diagnose(want, flaky.tobytes())) == {4: "flaky"}


def test_a_healthy_adapter_passes_and_the_wear_is_recorded(run_cli, tmp_path):
    db = tmp_path / "m.db"
    r = run_cli("rig", "selftest", "--rig", "sim", "--chip", "mlc-small", "--block", 5, "--db", db, "--json")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert out["method"] == "walking-pattern round trip" and out["param_copies_good"] == 3
    assert [v["verdict"] for v in out["lines"]] == ["ok"] * 8
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT pe FROM blocks WHERE block=5").fetchone() == (1,)
        assert c.execute("SELECT kind, detail FROM events").fetchall() == [("erase", "rig selftest on block 5")]


def test_a_block_a_campaign_holds_is_refused_before_it_is_touched(run_cli, tmp_path):
    db = tmp_path / "m.db"
    r = run_cli("run", "endurance", "--rig", "sim", "--chip", "mlc-small", "--db", db, "--blocks", "5-6",
                "--cycles", "10")
    assert r.code == 0, r.err
    with sqlite3.connect(db) as c:  # the campaign ended; hold its blocks as a running one would
        c.execute("UPDATE blocks SET reserved_by=1 WHERE block IN (5, 6)")
        pe = c.execute("SELECT pe FROM blocks WHERE block=5").fetchone()
    r = run_cli("rig", "selftest", "--rig", "sim", "--chip", "mlc-small", "--block", 5, "--db", db)
    assert r.code == 1 and "reserved by campaign 1" in r.err
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT pe FROM blocks WHERE block=5").fetchone() == pe


@pytest.mark.parametrize("spec, summary", [
    ("dq2=0", "DQ2 stuck at 0"),
    ("dq1=1", "DQ1 stuck at 1"),
    ("dq0=1,dq3=0", "DQ0 stuck at 1; DQ3 stuck at 0"),
    ("dq0~dq1", "DQ0 shorted to DQ1; DQ1 shorted to DQ0"),
    ("dq2~dq3", "DQ2 shorted to DQ3; DQ3 shorted to DQ2"),
    ("dq7=0", "DQ4 at 0, DQ5 at 0, DQ6 at 1, DQ7 at 0"),  # levels "ONFI" never sets: the parameter page's CRC tells
    ("dq1~dq2", "DQ1 and DQ2"),  # lines "ONFI" never sets apart
    ("delay=200", "check RE# and the adapter's delay"),
])
def test_a_chip_the_rig_cannot_identify_is_diagnosed_from_its_onfi_signature(run_cli, spec, summary):
    r = run_cli("rig", "selftest", "--rig", "sim", "--chip", "mlc-small", "--block", 5, "--wiring", spec, "--json")
    out = json.loads(r.out)
    assert r.code == 1 and not out["answers"] and out["method"] == "ONFI signature"
    assert out["summary"].startswith("the rig cannot read the chip: ") and summary in out["summary"]
    assert "erase_status" not in out  # nothing was erased or programmed


def test_the_signature_exercises_dq0_to_dq3_at_both_levels_and_says_what_it_cannot():
    lines = {v.line: v.verdict for v in diagnose(ONFI_SIGNATURE, ONFI_SIGNATURE)}
    assert all(lines[i] == "ok" for i in range(4))
    assert lines[6] == "ok at 1; 0 not exercised" and lines[7] == "ok at 0; 1 not exercised"
