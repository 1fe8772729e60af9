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
    assert fit["r2_log"] > 0.98 and fit["n_points"] >= 30
    page = (out / "index.html").read_text()
    assert page.count("<img") >= 7
    header = (out / "flares_tables.h").read_text()
    assert "flares_corr_rber_max" in header
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "a C compiler is needed (tools/setup.sh installs gcc)"
    (tmp_path / "t.c").write_text(f'#include "{out / "flares_tables.h"}"\n'
                                  "int main(void) { return (int)(flares_max_ret_time_min[0][0] & 0u); }\n")
    subprocess.run([cc, "-std=c99", "-Wall", "-Werror", "-o", str(tmp_path / "t"), str(tmp_path / "t.c")], check=True)
