import json
import re
import subprocess
import sys

import pytest

from nandrig.virtual_chip.chip import VirtualChip
from nandrig.boards.sim.server import VirtualRig
from nandrig.boards.sim.tcp_link import serve_in_thread


def test_rig_info_in_process(run_cli):
    res = run_cli("rig", "info", "--rig", "sim", "--chip", "mlc-3x", "--seed", "4", "--json")
    assert res.code == 0, res.err
    j = json.loads(res.out)
    assert j["onfi_signature"] == "ONFI" and j["model"] == "NRV-MLC3X-16G"
    assert (j["page_bytes"], j["spare_bytes"], j["pages_per_block"], j["blocks"]) == (4096, 224, 128, 4096)


def test_rig_info_over_tcp(run_cli):
    port, stop, th = serve_in_thread(VirtualRig(VirtualChip("mlc-small", seed=2)))
    try:
        res = run_cli("rig", "info", "--rig", f"socket://127.0.0.1:{port}")
        assert res.code == 0, res.err
        assert "NRV-MLCSMALL" in res.out and "2048+64-byte pages" in res.out
    finally:
        stop.set()
        th.join(5)


@pytest.mark.parametrize("args,words", [
    (["rig", "info", "--rig", "socket://127.0.0.1:1"], ["cannot open rig"]),
    (["rig", "info", "--rig", "sim", "--chip", "mlc-9x"], ["unknown chip profile"]),
    (["rig", "info"], ["--rig"]),
])
def test_rig_info_bad_input(run_cli, args, words):
    run_cli(*args).assert_one_line_error(*words)


def test_sim_serve_reports_a_busy_port():
    first = subprocess.Popen([sys.executable, "-m", "nandrig", "sim", "serve", "--port", "0"], stderr=subprocess.PIPE, text=True)
    try:
        port = re.search(r":(\d+)$", first.stderr.readline().strip()).group(1)
        r = subprocess.run([sys.executable, "-m", "nandrig", "sim", "serve", "--port", port, "--volatile"],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode != 0 and "cannot listen" in r.stderr and "Traceback" not in r.stderr
    finally:
        first.terminate()
        first.wait(10)


@pytest.mark.slow
def test_bench_link_json(run_cli):
    res = run_cli("bench", "link", "--json")
    j = json.loads(res.out)
    assert j["wire_bytes_per_page"] <= 32 and j["commands_per_s_tcp"] > 100


@pytest.mark.slow
def test_bench_chip_json(run_cli):
    res = run_cli("bench", "chip", "--json")
    j = json.loads(res.out)
    assert j["calibration"]["within_factor_2"] and j["whole_life"]["wall_s"] > 0
    assert j["byte_path_page_reads_per_s"] > 10 and j["stat_path_page_measurements_per_s"] > 1000


@pytest.mark.parametrize("url", ["socket://127.0.0.1", "socket://127.0.0.1:x", "socket://:4700",
                                 "socket://127.0.0.1:70000"])
def test_a_socket_url_without_a_usable_port_gets_one_line(run_cli, url):
    r = run_cli("rig", "info", "--rig", url)
    assert r.code == 1 and "needs a host and a port" in r.err and r.err.count("\n") == 1


def test_checkpoints_must_be_whole_numbers(run_cli, tmp_path):
    r = run_cli("run", "endurance", "--rig", "sim", "--chip", "mlc-small", "--db", tmp_path / "m.db",
                "--blocks", "1-2", "--cycles", "10", "--checkpoints", "1.7")
    assert r.code == 2 and "whole numbers" in r.err


def test_outputs_into_a_missing_folder_get_one_line(run_cli, tmp_path):
    db = tmp_path / "m.db"
    assert run_cli("run", "endurance", "--rig", "sim", "--chip", "mlc-small", "--db", db, "--blocks", "1-2",
                   "--cycles", "10").code == 0
    for args in (("export", "--db", db, "--campaign", 1, "--csv", "--out", tmp_path / "no" / "x.csv"),
                 ("report", "--db", db, "--out", "/proc/no/report")):
        r = run_cli(*args)
        assert r.code == 1 and r.err.startswith("nandrig: error: cannot use ") and r.err.count("\n") == 1, args


def test_bad_blocks_lists_the_factory_marks_the_chip_carries(run_cli):
    from nandrig.virtual_chip.chip import VirtualChip

    r = run_cli("rig", "bad-blocks", "--rig", "sim", "--chip", "mlc-small", "--seed", "4", "--json")
    assert r.code == 0, r.err
    got = json.loads(r.out)
    assert got["bad"] == sorted(VirtualChip("mlc-small", 4).factory_bad) and got["blocks"] == 16


def test_one_page_or_block_by_hand_keeps_the_campaigns_rules(run_cli, tmp_path):
    """rig erase / program / read: the erase is recorded against the chip, a block a campaign holds is refused,
    a chip with a history is not worn without its database, and the page reads back what was programmed."""
    import sqlite3

    from nandrig.host.engine.campaigns import create

    from nandrig.host.engine.chip_access import open_for_chip
    from nandrig.host.storage.store import Store

    db, chip = tmp_path / "m.db", ("--rig", "sim", "--chip", "mlc-small", "--seed", "5")
    by_hand = (*chip, "--db", db)
    assert run_cli("rig", "erase", *by_hand, "--block", "3").code == 0
    r = run_cli("rig", "program", *by_hand, "--block", "3", "--page", "0", "--pattern-seed", "9")
    assert r.code == 0 and "pass" in r.out, r.err
    r = run_cli("rig", "read", *by_hand, "--block", "3", "--page", "0", "--pattern-seed", "9", "--json",
                "--out", tmp_path / "page.bin")
    assert r.code == 0, r.err
    got = json.loads(r.out)
    assert got["errors"] is not None and got["errors"] < 10 and len(got["codewords"]) == 2  # just programmed
    assert (tmp_path / "page.bin").stat().st_size == 2048 + 64
    r = run_cli("rig", "read", *by_hand, "--block", "3", "--page", "0", "--pattern-seed", "10")  # other data
    assert r.code == 0 and int(re.search(r"; (\d+) bit errors", r.out).group(1)) > 5000, r.out
    con = sqlite3.connect(db)
    assert con.execute("SELECT pe FROM blocks WHERE block = 3").fetchone() == (1,)
    assert con.execute("SELECT detail FROM events WHERE kind = 'erase'").fetchall() == [("rig erase of block 3",)]
    con.close()

    store = Store(db)
    try:
        rig, chip_id = open_for_chip(store, "sim", "mlc-small", 5)
        with rig:
            cid = create(store, rig, chip_id, "endurance", {"blocks": [6], "seed": 1, "cycles": 10,
                                                             "checkpoints": [10]}, "sim")
    finally:
        store.close()
    for cmd in (("erase",), ("program", "--page", "0"), ("read", "--page", "0")):
        run_cli("rig", *cmd, *by_hand, "--block", "6").assert_one_line_error("block 6", f"campaign {cid}")
    run_cli("rig", "erase", *chip, "--state", tmp_path / "m.db.rigs" / "mlc-small-seed5.state",
            "--block", "2").assert_one_line_error("--db")
    run_cli("rig", "program", *by_hand, "--block", "2", "--page", "32").assert_one_line_error("--page 32", "0..31")
    run_cli("rig", "read", *by_hand, "--block", "16", "--page", "0").assert_one_line_error("--block 16", "0..15")
    (tmp_path / "d.bin").write_bytes(b"\x00" * 16)
    run_cli("rig", "program", *by_hand, "--block", "2", "--page", "0", "--pattern-seed", "1", "--data",
            tmp_path / "d.bin").assert_one_line_error("--data")


def test_a_chip_the_rig_cannot_drive_is_refused_naming_the_field(tmp_path, run_cli):
    """32 KiB pages do not fit the page buffer: the rig reports it in INFO (geometry zero) instead of running on
    a wrapped buffer, and every command says so in one line; the dump still decodes without a rig."""
    from pathlib import Path

    prof = json.loads((Path(__file__).resolve().parents[2] / "nandrig/virtual_chip/profiles/mlc-16k.json").read_text())
    prof.update(name="mlc-32k", geometry={"page_bytes": 32768, "spare_bytes": 2560, "pages_per_block": 64, "blocks": 16})
    path = tmp_path / "mlc-32k.json"
    path.write_text(json.dumps(prof))
    dump = tmp_path / "pp.bin"
    r = run_cli("rig", "info", "--rig", "sim", "--chip", path, "--dump-param-page", dump)
    assert r.code == 1 and r.err.count("\n") == 1 and "exceed the rig's page buffer" in r.err, r.err
    assert json.loads(run_cli("rig", "decode-param-page", dump, "--json").out)["page_bytes"] == 32768
    assert "exceed the rig's page buffer" in run_cli("rig", "decode-param-page", dump, "--check-rig").err
    r = run_cli("run", "endurance", "--rig", "sim", "--chip", path, "--db", tmp_path / "b.db", "--blocks", "1-2",
                "--cycles", "10")
    assert r.code == 1 and "exceed the rig's page buffer" in r.err and r.err.count("\n") == 1, r.err


def test_a_wordline_read_as_reduced_state_is_checked_for_it(run_cli, tmp_path):
    """rig program --reduced writes a wordline's three levels a cell; rig read --reduced reads it back through
    ReduceCode, and refuses in one line a wordline in normal state or erased (nothing worn: reads only)."""
    import sqlite3

    db = tmp_path / "r.db"
    chip = ("--rig", "sim", "--chip", "mlc-small", "--seed", "5", "--db", db)
    for block in (3, 4):
        assert run_cli("rig", "erase", *chip, "--block", block).code == 0
    for page in (0, 1, 2):  # wordline 0's pages 0 and 2 (the common MLC map), and page 1 between them
        for block, mode in ((3, ("--reduced",)), (4, ())):
            assert run_cli("rig", "program", *chip, "--block", block, "--page", page, "--pattern-seed", 9, *mode).code == 0
    r = run_cli("rig", "read", *chip, "--block", 3, "--page", 2, "--pattern-seed", 9, "--reduced", "60,-60", "--json")
    assert r.code == 0, r.err
    got = json.loads(r.out)
    assert (got["wordline"], got["pages"], got["data_bits"]) == (0, [0, 2], (2048 + 64) * 8 // 2 * 3)
    assert got["errors"] < 5 and got["l3_l3_pairs"] < 5  # just programmed
    r = run_cli("rig", "read", *chip, "--block", 3, "--page", 2, "--pattern-seed", 10, "--reduced", "60,-60")
    assert int(re.search(r"; (\d+) data-bit errors", r.out).group(1)) > 10_000, r.out  # other data: half its bits
    run_cli("rig", "read", *chip, "--block", 4, "--page", 0, "--reduced", "60,-60").assert_one_line_error(
        "block 4 wordline 0", "not in reduced state", "(L3, L3)")
    run_cli("rig", "read", *chip, "--block", 3, "--page", 9, "--reduced", "60,-60").assert_one_line_error(
        "block 3 wordline", "erased")
    run_cli("rig", "read", *chip, "--block", 3, "--page", 1, "--reduced", "999,-60").assert_one_line_error(
        "VR2 +999", "retry range")
    run_cli("rig", "read", *chip, "--block", 3, "--page", 1, "--reduced", "60").assert_one_line_error("VR2,VR3")
    # NUNMA by hand: wordline 0 of block 5 programmed with L1 and L3 raised 20 verify steps, read at their middle
    assert run_cli("rig", "erase", *chip, "--block", 5).code == 0
    run_cli("rig", "program", *chip, "--block", 5, "--page", 0, "--pattern-seed", 9, "--reduced", "--verify",
            "99,0,20").assert_one_line_error("PV1 +99", "outside this chip's verify range -30..30")
    run_cli("rig", "program", *chip, "--block", 5, "--page", 0, "--verify", "20,20").assert_one_line_error(
        "--verify takes PV1,PV2,PV3")
    for page in (0, 1, 2):
        r = run_cli("rig", "program", *chip, "--block", 5, "--page", page, "--pattern-seed", 9, "--reduced",
                    "--verify", "20,0,20")
        assert r.code == 0 and "verify levels PV1..PV3 at +20, +0, +20" in r.out, r.err
    moved = json.loads(run_cli("rig", "read", *chip, "--block", 5, "--page", 0, "--pattern-seed", 9, "--reduced",
                               "80,-40", "--json").out)
    assert moved["errors"] < 5 and moved["l3_l3_pairs"] < 5
    con = sqlite3.connect(db)
    assert con.execute("SELECT block, pe FROM blocks WHERE block IN (3, 4, 5) ORDER BY block").fetchall() == [
        (3, 1), (4, 1), (5, 1)]
    con.close()
