from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ci_runs_the_readme_test_command():
    ci = [line for line in (ROOT / ".ci/run").read_text().splitlines() if line and not line.startswith(("#", "set ", "cd "))]
    readme = (ROOT / "README.md").read_text()
    assert len(ci) == 1 and ci[0] in readme


def test_readme_names_the_demo_command():
    assert "./tools/setup.sh && .venv/bin/nandrig demo" in (ROOT / "README.md").read_text()


def test_the_readme_campaign_examples_run_as_written_on_the_default_chip(run_cli, tmp_path):
    """The "Using it" lines for endurance and retention, with URL = sim and the database in a temporary folder
    (optional [...] parts left out): the default chip's factory bad block 28 inside --blocks 16-31 is skipped."""
    import re
    import shlex

    lines = [ln.strip() for ln in (ROOT / "README.md").read_text().splitlines()
             if re.match(r"\s+nandrig run (endurance|retention) ", ln)]
    assert len(lines) == 2
    for ln in lines:
        words = shlex.split(re.sub(r"\[[^\]]*\]", "", ln.split("#")[0]))
        words = ["sim" if w == "URL" else str(tmp_path / w) if w.endswith(".db") else w for w in words[1:]]
        r = run_cli(*words)
        assert r.code == 0 and "done" in r.out, (ln, r.err)
    r = run_cli("ls", "--db", tmp_path / "bench.db")
    assert r.code == 0 and r.out.count("done") == 2
