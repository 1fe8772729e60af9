"""The report as a researcher sees it: opened in a real headless Chromium (Debian's, through its WebDriver),
every figure loads, nothing is logged as an error, and full-page screenshots are kept in
build/report-screenshots/ for people to look at."""
import shutil
from pathlib import Path

import numpy as np

SHOTS = Path(__file__).resolve().parents[2] / "build" / "report-screenshots"
CHIP = ("--rig", "sim", "--chip", "mlc-small", "--seed", "6")


def test_the_report_in_a_real_browser(run_cli, tmp_path, browser):
    db, out = tmp_path / "bench.db", tmp_path / "report"
    for args in (("endurance", "--blocks", "1-4", "--cycles", "3000", "--step", "1000"),
                 ("retention", "--blocks", "5-10", "--wear", "100,1000,3000", "--times", "1d,1w,1mo,1y"),
                 ("latency", "--blocks", "11-12", "--checkpoints", "1,1000,3000"),
                 ("vth", "--blocks", "13", "--pe", "1000", "--retention", "1mo", "--retry-step-mv", "10"),
                 ("vth", "--blocks", "14", "--pe", "3000", "--retention", "1y", "--retry-step-mv", "10")):
        r = run_cli("run", args[0], *CHIP, "--db", db, *args[1:])
        assert r.code == 0, r.err
    assert run_cli("report", "--db", db, "--out", out).code == 0

    browser.set_window_size(1280, 900)
    browser.get((out / "index.html").as_uri())
    images = browser.execute_script(
        "return Array.from(document.images).map(i => [i.getAttribute('src'), i.complete, i.naturalWidth])")
    names = {src.rsplit("_", 1)[0] for src, _, _ in images}
    assert {"rber_vs_pe", "retention", "pages", "latency", "latency_hist", "vth", "spread", "latency_cdf"} <= names, names
    assert all(done and width > 300 for _, done, width in images), images  # every figure loaded and drawn
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors
    # each campaign's data beside its figures, as CSV files the page links to
    links = browser.execute_script("return Array.from(document.querySelectorAll('a[download]')).map(a => a.href)")
    assert len(links) >= 5 and all(Path(l.removeprefix("file://")).read_text().count("\n") > 1 for l in links), links

    SHOTS.mkdir(parents=True, exist_ok=True)
    height, view = browser.execute_script(
        "return [document.documentElement.scrollHeight, window.innerHeight]")
    shots = []
    for i, y in enumerate(range(0, height, view)):
        browser.execute_script(f"window.scrollTo(0, {y})")
        shots.append(SHOTS / f"report-{i + 1:02d}.png")
        assert browser.save_screenshot(str(shots[-1]))
    import matplotlib.image

    for shot in shots:  # a page, not a blank or an error screen: text and figures give the pixels spread
        px = matplotlib.image.imread(shot)
        assert px.shape[1] >= 1200 and np.std(px[..., :3]) > 0.05, shot
    for fig in ("retention_2", "latency_hist_3", "vth_4", "spread_1", "latency_cdf_3"):
        shutil.copy(out / f"{fig}.png", SHOTS / f"{fig.rsplit('_', 1)[0]}.png")


def test_the_report_of_chosen_campaigns(run_cli, tmp_path):
    db = tmp_path / "bench.db"
    for args in (("endurance", "--blocks", "1-2", "--cycles", "1000", "--step", "1000"),
                 ("latency", "--blocks", "3", "--checkpoints", "1,1000")):
        assert run_cli("run", args[0], *CHIP, "--db", db, *args[1:]).code == 0
    assert run_cli("report", "--db", db, "--out", tmp_path / "r", "--campaign", "2").code == 0
    page = (tmp_path / "r" / "index.html").read_text()
    assert "Campaign 2: latency" in page and "Campaign 1:" not in page
    assert {p.name for p in (tmp_path / "r").glob("*.csv")} >= {"campaign_2_operations.csv"}
    run_cli("report", "--db", db, "--out", tmp_path / "r2", "--campaign", "7").assert_one_line_error("7")
