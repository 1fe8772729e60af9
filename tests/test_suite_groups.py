"""The suite's CI time rests on pytest-xdist keeping a group of tests on one worker (a module's fixtures, an RTL
build's measurements made once): a pytest/xdist pair that distributes grouped tests as if ungrouped fails here,
not as a CI run twice as long."""
import os
import subprocess
import sys
from collections import defaultdict

GROUPED = '''
import os, pytest

@pytest.mark.parametrize("build", [pytest.param(b, marks=pytest.mark.xdist_group(b)) for b in ("one", "two")])
@pytest.mark.parametrize("k", range(20))
def test_member(build, k):
    with open(os.environ["GROUPS_LOG"], "a") as f:
        f.write(f"{build} {os.environ['PYTEST_XDIST_WORKER']}\\n")
'''


def test_xdist_keeps_each_group_on_one_worker(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    log = tmp_path / "ran.log"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
                           "--dist", "loadgroup", "test_grouped.py"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "GROUPS_LOG": str(log)})
    assert done.returncode == 0, done.stdout + done.stderr
    workers = defaultdict(set)
    for line in log.read_text().splitlines():
        build, worker = line.split()
        workers[build].add(worker)
    assert {b: len(w) for b, w in workers.items()} == {"one": 1, "two": 1}, (dict(workers), done.stdout)
