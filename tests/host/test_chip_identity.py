"""A physical chip is known by its ONFI unique ID: two chips of one part on one rig keep two histories, a chip
swapped in the socket between run and resume is refused, and a part without an ID needs a name."""
import sqlite3
from contextlib import contextmanager

from nandrig.virtual_chip.chip import VirtualChip
from nandrig.virtual_chip.profile import load_profile
from nandrig.boards.sim.server import VirtualRig
from nandrig.boards.sim.tcp_link import serve_in_thread
from nandrig.host.engine.campaigns import create
from nandrig.host.engine.chip_access import open_for_chip
from nandrig.host.storage.store import Store


@contextmanager
def socket_with(chip: VirtualChip):
    """One rig, one port: what sits in its socket is the test's to choose."""
    port, stop, _ = serve_in_thread(VirtualRig(chip))
    try:
        yield f"socket://127.0.0.1:{port}"
    finally:
        stop.set()


def pe(db, label: str) -> dict[int, int]:
    con = sqlite3.connect(db)
    rows = dict(con.execute("SELECT block, pe FROM blocks JOIN chips ON chips.id = chip_id WHERE label=? AND pe > 0",
                            (label,)))
    con.close()
    return rows


def test_two_chips_of_one_part_on_one_rig_keep_two_histories(run_cli, tmp_path):
    db = tmp_path / "lab.db"
    chips = [VirtualChip("mlc-small", 31), VirtualChip("mlc-small", 32)]  # one part: same READ ID and model
    for chip in chips:
        with socket_with(chip) as url:
            r = run_cli("run", "endurance", "--rig", url, "--db", db, "--blocks", "1", "--cycles", "30")
            assert r.code == 0, r.err
    labels = [f"uid:{c.unique_id.hex()}" for c in chips]
    assert [pe(db, label) for label in labels] == [{1: 30}, {1: 30}]  # not one chip with block 1 at 60


def test_a_chip_swapped_between_run_and_resume_is_refused_and_nothing_is_touched(run_cli, tmp_path):
    db = tmp_path / "lab.db"
    mine, other = VirtualChip("mlc-small", 41), VirtualChip("mlc-small", 42)
    with socket_with(mine) as url:
        store = Store(db)
        try:
            rig, chip_id = open_for_chip(store, url, "", 0)
            with rig:  # created, then the host stopped: interrupted
                cid = create(store, rig, chip_id, "endurance", {"blocks": [2], "seed": 1, "cycles": 20,
                                                                "checkpoints": [20]}, url)
        finally:
            store.close()
    with socket_with(other) as url:
        run_cli("resume", "--db", db, "--rig", url).assert_one_line_error(
            f"unique ID {other.unique_id.hex()}", f"not uid:{mine.unique_id.hex()}", f"put uid:{mine.unique_id.hex()} back")
        assert other.pe_count(2) == 0
        run_cli("run", "endurance", "--rig", url, "--db", db, "--chip-label", f"uid:{mine.unique_id.hex()}",
                "--blocks", "3", "--cycles", "5").assert_one_line_error(", not uid:", "own --chip-label")
    with socket_with(mine) as url:
        r = run_cli("resume", "--db", db, "--rig", url)
        assert r.code == 0 and f"campaign {cid} done" in r.out, r.err
    assert mine.pe_count(2) == 20 and pe(db, f"uid:{mine.unique_id.hex()}") == {2: 20}


def test_a_part_without_a_unique_id_needs_a_name(run_cli, tmp_path):
    profile = load_profile("mlc-small")
    profile.onfi["unique_id"] = False
    chip = VirtualChip(profile, 5)
    with socket_with(chip) as url:
        info = run_cli("rig", "info", "--rig", url, "--json")
        assert info.code == 0 and '"unique_id": null' in info.out
        args = ["run", "endurance", "--rig", url, "--db", tmp_path / "lab.db", "--blocks", "1", "--cycles", "5"]
        run_cli(*args).assert_one_line_error("no unique ID", "--chip-label")
        r = run_cli(*args, "--chip-label", "tray-3-left")
        assert r.code == 0, r.err
    assert pe(tmp_path / "lab.db", "tray-3-left") == {1: 5}
