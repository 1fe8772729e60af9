import json
import shutil
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_demo_runs_end_to_end(tmp_path):
    out = tmp_path / "demo"
    r = subprocess.run([sys.executable, "-m", "nandrig", "demo", "--out", str(out)], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    assert "report:" in r.stdout and "wall time:" in r.stdout
    fit = json.loads((out / "fit.json").read_text())
    # per block and page type, errors as counts; the law chosen by AIC, every parameter either with a
    # finite interval or named as not identifiable (never a number with an infinite interval)
    assert fit["n_points"] >= 300 and fit["likelihood"] == "poisson" and fit["chi2_dof"] > 0
    assert fit["law"] in ("power", "log") and set(fit["laws"]) == {"power", "log"}
    assert fit["aic"] == min(v["aic"] for v in fit["laws"].values())
    for k, ci in fit["ci95"].items():
        assert (ci is None) == (k in fit["unidentifiable"]), k
        assert ci is None or all(x is not None for x in ci), k
    assert set(fit["page_types"]) == {"lower", "upper"}
    assert "not identifiable" in r.stdout or "95% CI [" in r.stdout
    need = r.stdout.split("10k P/E + 1 year:")[1].splitlines()[0]
    assert "lower pages" in need and "upper pages" in need
    page = (out / "index.html").read_text()
    assert page.count("<img") >= 7
    header = (out / "flares_tables.h").read_text()
    assert "flares_corr_rber_max" in header
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "a C compiler is needed (tools/setup.sh installs gcc)"
    (tmp_path / "t.c").write_text(f'#include "{out / "flares_tables.h"}"\n'
                                  "int main(void) { return (int)(flares_max_ret_time_min[0][0][0] & 0u); }\n")
    subprocess.run([cc, "-std=c99", "-Wall", "-Werror", "-o", str(tmp_path / "t"), str(tmp_path / "t.c")], check=True)
    # the loop closed: tables from this fit sent to the rig, FLARES run there (density control on)
    loop = next(line for line in r.stdout.splitlines() if line.startswith("FLARES in the rig"))
    assert "sent at run time" in loop and ("FLARES met its target UBER 1e-11" in loop or "FLARES missed" in loop)
    assert "99% upper prediction bound" in loop and "for a measured need of" in loop  # the tables' basis, their cost
    tables = json.loads((out / "tables.json").read_text())
    assert all(tables["page_types"][t]["bound"]["factor"] > 1 for t in ("lower", "upper"))
    assert "lower pages" in loop and "upper pages" in loop and "beyond the ECC's reach" not in loop
    assert "<b>Verdict: " in page  # and the report's FLARES section says it too
