import json
import shutil
import subprocess
import sys

import pytest


@pytest.mark.slow
def test_demo_runs_end_to_end(tmp_path, browser):
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
    assert "99.9% upper prediction bound" in loop and "for a measured need of" in loop  # the tables' basis, their cost
    assert "over the oracle's t for a year" in loop  # and against what the virtual chip's true RBER needed
    tables = json.loads((out / "tables.json").read_text())
    assert all(tables["page_types"][t]["bound"]["factor"] > 1 for t in ("lower", "upper"))
    assert "lower pages" in loop and "upper pages" in loop and "beyond the ECC's reach" not in loop
    assert "<b>Verdict: " in page  # and the report's FLARES section says it too
    demo_report_in_a_browser(out, browser)


def demo_report_in_a_browser(out, browser) -> None:
    """The demo's report as a reader sees it in Chromium: every figure drawn, every data link a file, nothing
    logged as an error; its figures and tables listed and screenshots kept in build/demo-report/."""
    from pathlib import Path

    shots = Path(__file__).resolve().parents[1] / "build" / "demo-report"
    browser.set_window_size(1280, 900)
    browser.get((out / "index.html").as_uri())
    images = browser.execute_script("return Array.from(document.images).map(i => "
                                    "[i.getAttribute('src'), i.complete, i.naturalWidth])")
    assert len(images) >= 10 and all(done and width > 300 for _, done, width in images), images
    names = {src.rsplit("_", 1)[0] for src, _, _ in images}
    assert {"rber_vs_pe", "rber_vs_pe_lower", "rber_vs_pe_upper", "spread", "latency_cdf", "energy", "vth"} <= names, names
    tables = browser.execute_script("return Array.from(document.querySelectorAll('table')).map(t => "
                                    "Array.from(t.rows[0].cells).map(c => c.textContent).join(' | '))")
    links = browser.execute_script("return Array.from(document.querySelectorAll('a[download]')).map(a => a.href)")
    assert tables and links and all(Path(u.removeprefix("file://")).exists() for u in links)
    assert not [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    shots.mkdir(parents=True, exist_ok=True)
    (shots / "contents.txt").write_text("figures:\n" + "".join(f"  {src}\n" for src, _, _ in images)
                                        + "tables (header row):\n" + "".join(f"  {t}\n" for t in tables)
                                        + "data:\n" + "".join(f"  {u.rsplit('/', 1)[1]}\n" for u in links))
    height, view = browser.execute_script("return [document.documentElement.scrollHeight, window.innerHeight]")
    for i, y in enumerate(range(0, height, view)):
        browser.execute_script(f"window.scrollTo(0, {y})")
        assert browser.save_screenshot(str(shots / f"page-{i + 1:02d}.png"))
