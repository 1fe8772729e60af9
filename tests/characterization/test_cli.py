import dataclasses
import json
import subprocess
import sys

import numpy as np
import pytest

from nandrig.characterization import load_params
from nandrig.characterization.fitting import synthetic
from nandrig.characterization.measurements import Measurements, write_csv

PAPER = load_params("flares-taco2014")


@pytest.fixture
def data_csv(tmp_path):
    pe, h = np.meshgrid([0, 100, 1000, 3000, 5000, 7000, 10000], [0, 24, 720, 8760])
    d = Measurements(*synthetic(PAPER, pe.ravel().astype(float), h.ravel().astype(float), 6.7e7, seed=3))
    path = tmp_path / "m.csv"
    write_csv(path, d)
    return path


def test_fit_json_has_the_documented_keys(run_cli, data_csv):
    res = run_cli("fit", "--csv", data_csv, "--json")
    assert res.code == 0, res.err
    j = json.loads(res.out)
    for k in ("A", "B", "C", "Bo", "m", "n", "r2_log", "max_rel_err", "n_points", "ci95"):
        assert k in j
    assert j["n_points"] == 28 and j["r2_log"] > 0.99
    assert j["m"] == pytest.approx(PAPER.m, rel=0.05)


def test_fit_ignores_extra_columns_and_saves_usable_params(run_cli, tmp_path, data_csv):
    lines = data_csv.read_text().splitlines()
    (tmp_path / "x.csv").write_text("\n".join(["block," + lines[0]] + [f"7,{x}" for x in lines[1:]]) + "\n")
    saved = tmp_path / "fitted.json"
    assert run_cli("fit", "--csv", tmp_path / "x.csv", "--save", saved).code == 0
    res = run_cli("model", "required-t", "--params", saved, "--pe", 10000, "--retention-h", 8760)
    assert res.code == 0 and abs(int(res.out) - 50) <= 1


def test_required_t_prints_the_integer(run_cli):
    res = run_cli("model", "required-t", "--params", "flares-taco2014", "--pe", 10000, "--retention-h", 8760,
                  "--uber", 1e-11, "--codeword-bytes", 4096)
    assert res.code == 0 and res.out.strip() == "50"
    res = run_cli("model", "required-t", "--params", "flares-taco2014", "--pe", 0)
    assert res.out.strip() == "3"


def test_tables_json_shape(run_cli):
    res = run_cli("tables", "--params", "flares-taco2014", "--uber", 1e-11, "--codeword-bytes", 4096,
                  "--t-max", 60, "--json")
    assert res.code == 0, res.err
    j = json.loads(res.out)
    assert set(j) >= {"params", "uber", "codeword_bytes", "gf_m", "corr_table", "max_ret_time_h"}
    assert j["gf_m"] == 16 and len(j["corr_table"]) == 60
    assert set(j["corr_table"][0]) >= {"t", "rber_min", "rber_max"}
    mrt = j["max_ret_time_h"]
    assert len(mrt["hours"]) == len(mrt["t"]) == 60 and len(mrt["hours"][0]) == len(mrt["pe"])


def test_c_header_is_byte_identical_across_runs(run_cli, tmp_path):
    a, b = tmp_path / "a.h", tmp_path / "b.h"
    for p in (a, b):
        assert run_cli("tables", "--params", "flares-taco2014", "--c-header", p).code == 0
    assert a.read_bytes() == b.read_bytes() and b"flares_corr_rber_max" in a.read_bytes()


def test_arrhenius_and_plot_commands(run_cli, tmp_path, data_csv):
    res = run_cli("model", "arrhenius", "--bake-hours", 10, "--temp-c", 125)
    assert res.code == 0 and json.loads(res.out)["acceleration_factor"] > 1e4
    res = run_cli("model", "plot", "--csv", data_csv, "--out", tmp_path / "plots")
    assert res.code == 0
    for name in ("rber_vs_pe.png", "required_t.png"):
        assert (tmp_path / "plots" / name).read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("content,words", [
    ("", ["empty"]),
    ("pe,retention_h\n1,2\n", ["lacks", "rber"]),
    ("pe,retention_h,rber\n", ["no measurements"]),
    ("pe,retention_h,rber\n1,0,abc\n", ["not a number", ":2"]),
    ("pe,retention_h,rber\n-5,0,1e-6\n", ["negative pe"]),
    ("pe,retention_h,rber\n5,-1,1e-6\n", ["negative retention_h"]),
    ("pe,retention_h,rber\n5,0,0.7\n", ["outside (0, 0.5)"]),
    ("pe,retention_h,rber\n5,0,0\n", ["outside (0, 0.5)"]),
    ("pe,retention_h,rber\n5\n", ["missing value"]),
])
def test_fit_bad_csv_gets_one_line_error(run_cli, tmp_path, content, words):
    p = tmp_path / "bad.csv"
    p.write_text(content)
    run_cli("fit", "--csv", p).assert_one_line_error(*words)


@pytest.mark.parametrize("args,words", [
    (["fit", "--csv", "/nonexistent/x.csv"], ["cannot read"]),
    (["tables", "--params", "no-such-set"], ["unknown parameter set"]),
    (["tables", "--params", "flares-taco2014", "--uber", "0"], ["uber"]),
    (["tables", "--params", "flares-taco2014", "--codeword-bytes", "-1"], ["codeword"]),
    (["model", "required-t", "--pe", "-3"], ["--pe"]),
    (["model", "required-t", "--pe", "10", "--retention-h", "-1"], ["--retention-h"]),
    (["model", "required-t", "--pe", "10000", "--retention-h", "8760", "--t-max", "10"], ["impossible target"]),
    (["model", "required-t", "--pe", "10000", "--uber", "1e-400"], ["uber"]),
    (["model", "uber", "--rber", "0.9", "--t", "3"], ["rber"]),
    (["model", "arrhenius", "--bake-hours", "1", "--temp-c", "-400"], ["absolute zero"]),
    (["frobnicate"], ["no such command"]),
    (["tables", "--params", "flares-taco2014", "--uber", "1e-300", "--t-max", "20", "--c-header", "/tmp/x.h"],
     ["all zeros"]),
    (["tables", "--params", "flares-taco2014", "--c-header", "/nonexistent/dir/h.h"],
     ["cannot use /nonexistent/dir/h.h", "no such file"]),
])
def test_bad_options_get_one_line_error(run_cli, args, words):
    run_cli(*args).assert_one_line_error(*words)


def test_bad_param_file(run_cli, tmp_path):
    p = tmp_path / "p.json"
    p.write_text("{not json")
    run_cli("tables", "--params", p).assert_one_line_error("not valid JSON")
    p.write_text('{"A": 1e-5}')
    run_cli("tables", "--params", p).assert_one_line_error("lack")


def test_installed_command_exits_nonzero_without_traceback(tmp_path):
    p = tmp_path / "e.csv"
    p.write_text("")
    r = subprocess.run([sys.executable, "-m", "nandrig", "fit", "--csv", str(p)], capture_output=True, text=True)
    assert r.returncode != 0 and "Traceback" not in r.stderr and r.stderr.count("\n") == 1


def test_header_warns_of_t_whose_bound_rounds_to_zero(run_cli, tmp_path):
    r = run_cli("tables", "--params", "flares-taco2014", "--uber", "1e-300", "--c-header", tmp_path / "h.h")
    assert r.code == 0 and "warning: t 1..25 have RBER bounds below 2^-48" in r.err


def test_residuals_csv_holds_plain_numbers(run_cli, tmp_path, data_csv):
    assert run_cli("fit", "--csv", data_csv, "--residuals", tmp_path / "r.csv").code == 0
    lines = (tmp_path / "r.csv").read_text().splitlines()
    assert lines[0] == "pe,retention_h,rber,rel_err" and len(lines) > 3
    for ln in lines[1:]:
        [float(v) for v in ln.split(",")]  # "np.float64(...)" would not parse


def test_fit_per_page_type_and_block_feeds_a_two_model_header(run_cli, tmp_path):
    """Rows per block and page type (as export --by-block writes them): a model per page type, intervals over
    blocks, and a C header with both models; a built-in set has no page types to choose from."""
    lower, upper = PAPER, dataclasses.replace(PAPER, Bo=PAPER.Bo * 3, name="upper")
    pe, h = np.meshgrid([1, 1000, 3000, 5000, 7000, 10000], [0, 24, 720, 8760])
    pe, h = pe.ravel().astype(float), h.ravel().astype(float)
    parts = []
    for block in range(8):
        for name, p in (("lower", lower), ("upper", upper)):
            d = synthetic(p, pe, h, 64 * 4096 * 8, seed=100 * block + len(name), keep_zeros=True)
            parts.append(Measurements(*d, np.full(pe.size, block), np.full(pe.size, name)))
    data = Measurements(*(np.concatenate([getattr(m, f) for m in parts]) for f in
                          ("pe", "retention_h", "rber", "bits", "block", "page_type")))
    assert np.any(data.rber == 0)  # rows without an error stay in (Poisson likelihood)
    write_csv(tmp_path / "m.csv", data)
    saved = tmp_path / "fit.json"
    res = run_cli("fit", "--csv", tmp_path / "m.csv", "--save", saved)
    assert res.code == 0, res.err
    assert "lower pages:" in res.out and "upper pages:" in res.out and "cluster-robust over 8 blocks" in res.out
    j = json.loads(saved.read_text())
    assert j["n_points"] == data.pe.size and set(j["page_types"]) == {"lower", "upper"}
    ratio = j["page_types"]["upper"]["Bo"] / j["page_types"]["lower"]["Bo"]
    assert 2 < ratio < 4.5, ratio
    header = tmp_path / "t.h"
    assert run_cli("tables", "--params", saved, "--c-header", header).code == 0
    assert "#define FLARES_MODELS 2u" in header.read_text()
    assert run_cli("tables", "--params", saved, "--page-type", "upper", "--c-header", header).code == 0
    assert "#define FLARES_MODELS 1u" in header.read_text() and "fit:upper" in header.read_text()
    t = json.loads(run_cli("tables", "--params", saved, "--json").out)
    assert set(t["page_types"]) == {"lower", "upper"}
    bad = run_cli("tables", "--params", "flares-taco2014", "--page-type", "upper")
    assert bad.code != 0 and "no upper-page model" in bad.err and "Traceback" not in bad.err
