"""`nandrig bench policy`: both policies over every scenario, WSIZE, MIX and page type of each die."""
import json

import pytest


@pytest.mark.slow
def test_bench_policy_covers_every_configuration_and_its_sums_add_up(run_cli):
    r = run_cli("bench", "policy", "--chip", "mlc-3x", "--dies", "2", "--scale", "0.01", "--jobs", "2", "--json")
    assert r.code == 0, r.err
    res = json.loads(r.out)
    table = res["configurations"]
    assert len(table) == 2 * 3 * 2 * 2 * 3  # policies x scenarios x page types x WSIZE x MIX
    assert {c["policy"] for c in table} == {"FLARES", "guarded FLARES"}
    floor = res["policies"].pop("the bound's projection alone (guarded FLARES' floor)")  # one per scenario and page
    assert floor["ops"] * 2 * 3 == res["policies"]["guarded FLARES"]["ops"]  # the guard's six WSIZE x MIX replays
    guarded = res["policies"]["guarded FLARES"]  # never below the floor: no more misses, no less t
    assert guarded["under_target_ops"] <= 6 * floor["under_target_ops"] and floor["mean_t"] <= guarded["mean_t"]
    for policy, s in res["policies"].items():
        mine = [c for c in table if c["policy"] == policy]
        assert s["ops"] == sum(c["ops"] for c in mine) > 0
        assert s["under_target_ops"] == sum(c["under_target_ops"] for c in mine)
        assert s["dies_met"] + len(s["dies_missed"]) == res["dies"] == 2 and not res["uncalibrated"]
        assert s["mean_t"] > 0 and s["mean_needed_t"] > 0
        assert s["mean_oracle_t"] > 0 and s["over_oracle"] > -1 and 0 <= s["under_oracle_ops"] <= s["ops"]
    text = run_cli("bench", "policy", "--chip", "mlc-3x", "--dies", "1", "--scale", "0.01", "--jobs", "1")
    assert text.code == 0 and "guarded FLARES:" in text.out and "operations under target" in text.out and "over the oracle's t" in text.out
