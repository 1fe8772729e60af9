"""A disk that fills while a campaign runs: one clear line, nothing lost, resume finishes it once there is room.

The database (and the simulated chip's state beside it) live on a 16 MiB tmpfs; while the campaign runs, a
filler file takes every free byte. Mounting needs root, as CI runs.
"""
import os
import subprocess
import time

import pytest

from tests.host.test_resume import ARGS, campaign_step, nandrig, outcome


@pytest.fixture
def small_disk(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    if os.geteuid() != 0:
        pytest.fail("this test mounts a tmpfs and needs root (CI runs as root)")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=True)


def fill(path) -> None:
    """Write zeros until the file system refuses another byte."""
    with open(path, "wb", buffering=0) as fh:
        block = b"\0" * 65536
        while True:
            try:
                fh.write(block)
            except OSError:
                if len(block) == 1:
                    return
                block = block[: len(block) // 2]


@pytest.mark.slow
def test_disk_full_mid_campaign_loses_nothing_and_resume_completes(tmp_path, small_disk):
    ref_db = tmp_path / "ref" / "run.db"
    ref_db.parent.mkdir()
    subprocess.run(nandrig("run", *ARGS, "--db", str(ref_db)), check=True, capture_output=True)
    reference = outcome(ref_db)

    db = small_disk / "run.db"
    proc = subprocess.Popen(nandrig("run", *ARGS, "--db", str(db)), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    while (step := campaign_step(db)) is None or step < 3:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.005)
    filler = small_disk / "filler"
    fill(filler)
    out, err = proc.communicate(timeout=120)
    errors = [x for x in err.splitlines() if x.startswith("nandrig:")]
    assert proc.returncode not in (0, None) and "Traceback" not in err, err
    # one line: the cause, the file, where the campaign stands and how to go on
    assert len(errors) == 1 and ("full" in errors[0] or "space" in errors[0]) and str(small_disk) in errors[0], err
    assert "nandrig resume" in errors[0] and "campaign 1 at step" in errors[0]
    stopped_at = campaign_step(db)
    assert stopped_at is not None and 3 <= stopped_at

    filler.unlink()  # the cause fixed: resume finishes what the full disk stopped
    r = subprocess.run(nandrig("resume", "--db", str(db), "--campaign", "1"), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert outcome(db) == reference
