from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ci_runs_the_readme_test_command():
    ci = [line for line in (ROOT / ".ci/run").read_text().splitlines() if line and not line.startswith(("#", "set ", "cd "))]
    readme = (ROOT / "README.md").read_text()
    assert len(ci) == 1 and ci[0] in readme


def test_readme_names_the_demo_command():
    assert "./tools/setup.sh && .venv/bin/nandrig demo" in (ROOT / "README.md").read_text()
