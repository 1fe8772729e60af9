import json

import pytest

from nandrig.host.flares_validate import Validator, calibrate
from nandrig.host.rig import Rig

KEYS = {"scenario", "wsize", "mix", "ops", "under_target_ops", "decode_failures", "mean_overprovision",
        "rewrite_alarms", "read_gain_vs_fixed50"}


@pytest.mark.slow
def test_flares_validate_json_and_report(run_cli, tmp_path):
    db = tmp_path / "f.db"
    res = run_cli("run", "flares-validate", "--rig", "sim", "--scale", "0.05", "--json", "--db", db)
    assert res.code == 0, res.err
    j = json.loads(res.out)
    assert len(j["runs"]) == 18 and {r["scenario"] for r in j["runs"]} == {"operating-points", "long-retention",
                                                                          "continuous-wear"}
    for r in j["runs"]:
        assert KEYS <= set(r) and set(r["read_gain_vs_fixed50"]) == {"videoserver", "webserver", "varmail"}
    assert "upper pages" in j["model"]["model"] and "paper" in j["decode_latency_source"]
    page = run_cli("report", "--db", db, "--out", tmp_path / "rep")
    assert page.code == 0
    text = (tmp_path / "rep" / "index.html").read_text()
    assert "FLARES validation" in text and "beside ours" in text and "flares_1_continuous-wear.png" in text


@pytest.mark.slow
def test_continuous_wear_mix_half_wsize_100_never_underestimates():
    with Rig.open("sim", chip="mlc-3x", seed=0) as rig:
        params, _ = calibrate(rig, list(range(1, 9)), upper=True)
        v = Validator(rig, params, block=0, page=2)
        trace = v.measure("continuous-wear")
        target = v.targets(trace)
        half = v.replay(trace, target, wsize=100, mix_pm=500)
        model_only = v.replay(trace, target, wsize=100, mix_pm=0)
    assert half["ops"] == 10_000
    assert half["under_target_ops"] == 0 and half["decode_failures"] == 0  # the paper: never underestimated
    assert model_only["under_target_ops"] > 0  # MIX 0 cannot see what the model misses


def test_flares_validate_bad_page(run_cli):
    run_cli("run", "flares-validate", "--rig", "sim", "--chip", "mlc-small", "--page", "99").assert_one_line_error("page 99")


def test_flares_in_the_rig_run_and_report(run_cli, tmp_path):
    """--on-rig: the rig picks t and decodes; its failures are the decoder's, its t never above its cap."""
    db = tmp_path / "f.db"
    res = run_cli("run", "flares-validate", "--rig", "sim", "--chip", "mlc-small", "--on-rig", "--wsize", "5",
                  "--mix", "1", "--scale", "0.02", "--json", "--db", db)
    assert res.code == 0, res.err
    j = json.loads(res.out)
    assert j["flares_in_rig"] and j["codeword_bytes"] == 1024 and "rig's compiled-in" in j["model"]["model"]
    assert [(r["scenario"], r["wsize"], r["mix"]) for r in j["runs"]] == [
        ("operating-points", 5, 1.0), ("long-retention", 5, 1.0), ("continuous-wear", 5, 1.0)]
    for r in j["runs"]:
        assert KEYS <= set(r) and 1 <= r["mean_t"] <= 14  # mlc-small's spare holds parity for t <= 14
    page = run_cli("report", "--db", db, "--out", tmp_path / "rep")
    assert page.code == 0 and "flares_1_operating-points.png" in (tmp_path / "rep" / "index.html").read_text()


@pytest.mark.parametrize("args, message", [
    (["--wsize", "5"], "use them with --on-rig"),
    (["--on-rig", "--params", "flares-taco2014"], "compiled-in tables"),
])
def test_flares_in_the_rig_options_are_checked(run_cli, args, message):
    res = run_cli("run", "flares-validate", "--rig", "sim", *args)
    assert res.code != 0 and message in res.err and "Traceback" not in res.err
