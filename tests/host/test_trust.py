"""What a user acts on is right and their wear is never lost (issue 43): summaries per wear level that equal
`export`, a fit of a first data set that says what it cannot tell, absolute wear levels, no chip kept twice, a
resume that goes past what it cannot do, read-only archives, FLARES verdicts, and a report and live page that
agree with `ls`."""
from __future__ import annotations

import csv
import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from nandrig.virtual_chip.chip import VirtualChip
from nandrig.boards.sim.server import VirtualRig
from nandrig.boards.sim.tcp_link import serve_in_thread
from nandrig.host.engine.campaigns import create
from nandrig.host.engine.chip_access import open_for_chip
from nandrig.host.storage.store import Store
from nandrig.protocol import Opcode
from tests.host.processes import free_ports, wait_for

CHIP = ("--rig", "sim", "--chip", "mlc-small", "--seed", "5")
SHOTS = Path(__file__).resolve().parents[2] / "build" / "live-page-screenshots"


def _nandrig(*args, env=None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "nandrig", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, start_new_session=True,
                            env=env)


def _counts(db: Path) -> tuple[int, ...]:
    """What `ls` and `export` read: campaigns, checkpoints, measurements, and the blocks' recorded wear."""
    con = sqlite3.connect(db)
    try:
        return tuple(con.execute(q).fetchone()[0] for q in (
            "SELECT COUNT(*) FROM campaigns", "SELECT COUNT(*) FROM checkpoints", "SELECT COUNT(*) FROM measurements",
            "SELECT COALESCE(SUM(pe), 0) FROM blocks"))
    finally:
        con.close()


def _campaigns_so_far(db: Path) -> int:
    """0 until the store's schema is there: the file exists a moment before its tables (CI once caught that)."""
    try:
        return _counts(db)[0] if db.exists() else 0
    except sqlite3.OperationalError:
        return 0


def _export(run_cli, db, cid, *flags) -> list[dict]:
    r = run_cli("export", "--db", db, "--campaign", cid, "--csv", *flags)
    assert r.code == 0, r.err
    return list(csv.DictReader(io.StringIO(r.out)))


def test_the_summary_has_a_line_per_checkpoint_and_wear_level_equal_to_export(run_cli, tmp_path):
    db = tmp_path / "r.db"
    r = run_cli("run", "retention", *CHIP, "--db", db, "--blocks", "0-5", "--wear", "1000,3000,10000",
                "--times", "1d,1y")
    assert r.code == 0, r.err
    head = next(i for i, ln in enumerate(r.out.splitlines()) if ln.strip().startswith("checkpoint"))
    shown = [ln.split() for ln in r.out.splitlines()[head + 1:] if ln.strip().startswith("t=")]
    sums: dict[tuple, list] = {}
    for row in _export(run_cli, db, 1, "--by-block"):
        e = sums.setdefault((row["label"], int(row["pe"]), row["page_type"]), [0, 0])
        e[0] += int(row["errors"])
        e[1] += int(row["bits"])
    assert len(shown) == 9  # three times at three wear levels: no line pools two wear levels
    for label, pe, hours, lower, upper in shown:
        assert float(hours) == float(label[2:-1])
        for kind, text in (("lower", lower), ("upper", upper)):
            k, n = sums[(label, int(pe), kind)]
            assert text == f"{k / n:.2e}", (label, pe, kind)


def test_a_first_data_set_fits_what_it_identifies_and_says_what_it_cannot(run_cli, tmp_path):
    """Endurance plus retention at one wear level: no crash, the wear law and m fitted, n and Bo in words;
    retention alone at one wear level: m fitted, the wear law in words; JSON without NaN; the report writes."""
    db = tmp_path / "first.db"
    assert run_cli("run", "endurance", *CHIP, "--db", db, "--blocks", "0-3", "--cycles", "10000").code == 0
    assert run_cli("run", "retention", *CHIP, "--db", db, "--blocks", "4-7", "--wear", "10000",
                   "--times", "1d,1mo,1y").code == 0
    for cids, words in (((1, 2), "retention was measured at one wear level (10000 P/E)"),
                        ((2,), "the wear law needs 3 or more wear levels")):
        parts = [run_cli("export", "--db", db, "--campaign", c, "--csv", "--by-block").out for c in cids]
        text = parts[0] + "".join(x.split("\n", 1)[1] for x in parts[1:])  # one header
        path = tmp_path / f"fit{len(cids)}.csv"
        path.write_text(text)
        r = run_cli("fit", "--csv", path)
        assert r.code == 0 and words in r.out and "Traceback" not in r.err, r.out + r.err
        assert "m     = " in r.out  # the time exponent is what one wear level does identify
        j = run_cli("fit", "--csv", path, "--json")
        doc = json.loads(j.out, parse_constant=lambda c: pytest.fail(f"{c} in fit --json"))
        assert doc["n"] is None and "one wear level" in doc["undetermined"]["n"]
    rep = run_cli("report", "--db", db, "--out", tmp_path / "report")
    assert rep.code == 0, rep.err
    page = (tmp_path / "report" / "index.html").read_text()
    assert "one wear level" in page


def test_wear_levels_are_absolute_on_blocks_that_carry_wear(run_cli, tmp_path):
    db = tmp_path / "w.db"
    assert run_cli("run", "endurance", *CHIP, "--db", db, "--blocks", "0-3", "--cycles", "500").code == 0
    r = run_cli("run", "retention", *CHIP, "--db", db, "--blocks", "0-1", "--wear", "1000,3000", "--times", "1d")
    assert r.code == 0 and "already carry 500 P/E" in r.err, r.err
    assert {int(x["pe"]) for x in _export(run_cli, db, 2)} == {1000, 3000}
    store = Store(db)
    try:
        assert store.pe_counts(1, [0, 1]) == {0: 1000, 1: 3000}
        state = store.db.rigs / "mlc-small-seed5.state"
    finally:
        store.close()
    chip = VirtualRig.open("mlc-small", 5, state).chip
    assert (chip.pe_count(0), chip.pe_count(1)) == (1000, 3000)  # the chip agrees: nothing added twice
    before = _counts(db)
    run_cli("run", "retention", *CHIP, "--db", db, "--blocks", "2-3", "--wear", "100,3000").assert_one_line_error(
        "block 2 already carries up to 500 P/E", "absolute")
    assert _counts(db) == before


def test_a_restarted_volatile_rig_is_refused_and_sim_serve_keeps_its_chip(run_cli, tmp_path):
    db = tmp_path / "v.db"
    rig = VirtualRig(VirtualChip("mlc-small", 6))
    port, stop, _ = serve_in_thread(rig)
    url = f"socket://127.0.0.1:{port}"
    try:
        assert run_cli("run", "endurance", "--rig", url, "--db", db, "--blocks", "0-1", "--cycles", "100").code == 0
    finally:
        stop.set()
    before = _counts(db)
    port, stop, _ = serve_in_thread(VirtualRig(VirtualChip("mlc-small", 6)))  # the same seed, a fresh chip
    try:
        for args in (("run", "endurance", "--rig", f"socket://127.0.0.1:{port}", "--db", db, "--blocks", "2",
                      "--cycles", "10"),
                     ("rig", "erase", "--rig", f"socket://127.0.0.1:{port}", "--db", db, "--block", "5")):
            run_cli(*args).assert_one_line_error("restarted without its", "state")
    finally:
        stop.set()
    assert _counts(db) == before

    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "xdg")}
    port, = free_ports(1)
    for cycles in ("30", "60"):  # the default `sim serve` keeps its chip across a restart
        server = _nandrig("sim", "serve", "--port", port, "--chip", "mlc-small", "--seed", 8, env=env)
        try:
            assert "state " in server.stderr.readline()
            r = run_cli("run", "endurance", "--rig", f"socket://127.0.0.1:{port}", "--db", tmp_path / "kept.db",
                        "--blocks", "0", "--cycles", cycles)
            assert r.code == 0, r.err
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(20)
    assert (tmp_path / "xdg" / "nandrig" / "serve" / "mlc-small-seed8.state").exists()


def test_take_over_is_refused_while_the_holder_runs_and_the_chip_agrees_with_the_database(run_cli, tmp_path):
    """Two processes on one in-process virtual chip: the second is refused (even with --take-over) while the
    first runs; after the first is killed, --take-over and resume leave the chip's state and the database equal."""
    db = tmp_path / "t.db"
    # some 16,000 steps: minutes of work, so it still runs when the second process starts on a fast machine (2M
    # cycles in steps of 100,000 took 1.7 s there, and a CI run saw the second campaign start unrefused)
    first = _nandrig("run", "endurance", *CHIP, "--db", db, "--blocks", "0-1", "--cycles", "200000", "--step", "25")
    try:
        wait_for(lambda: _campaigns_so_far(db) == 1 or first.poll() is not None, 60, "the first campaign")
        assert first.poll() is None, first.stderr.read()
        before = _counts(db)
        for extra in ((), ("--take-over",)):
            r = run_cli("run", "endurance", *CHIP, "--db", db, "--blocks", "2-3", "--cycles", "50", *extra)
            assert first.poll() is None, "the first campaign ended before the second tried: make it longer"
            r.assert_one_line_error("in use by pid")  # and the first one goes on, untouched
        assert _counts(db)[0] == before[0]  # no second campaign
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(20)
    r = run_cli("run", "endurance", *CHIP, "--db", db, "--blocks", "2-3", "--cycles", "50", "--take-over")
    assert r.code == 0, r.err
    r = run_cli("cancel", "--db", db, "--campaign", 1)  # settles the CYCLE the kill cut short, on the rig
    assert r.code == 0, r.err
    store = Store(db)
    try:
        recorded = store.pe_counts(1, [0, 1, 2, 3])
        state = store.db.rigs / "mlc-small-seed5.state"
    finally:
        store.close()
    chip = VirtualRig.open("mlc-small", 5, state).chip
    uncertain = sqlite3.connect(db).execute("SELECT MAX(pe_uncertain) FROM blocks").fetchone()[0]
    for b, pe in recorded.items():
        assert pe <= chip.pe_count(b) <= pe + uncertain, (b, pe, chip.pe_count(b))
    assert recorded[2] == recorded[3] == 50


class _Killed(BaseException):
    """The host gone at a chosen instant (as SIGKILL: nothing after it runs in the campaign's code)."""


def test_a_cycle_reply_left_on_the_rig_is_counted_once_after_another_campaign_cycles_there(run_cli, tmp_path,
                                                                                          monkeypatch):
    """The host dies after the rig ended a CYCLE and kept its reply, before the store took it. The rig keeps one
    CYCLE reply per target: a campaign taking the chip over collects the dead one's first, so the cancel that
    follows finds nothing to send again, and the chip and the database agree to the cycle."""
    from nandrig.host.engine.campaigns import Runner, run

    db = tmp_path / "k.db"
    store = Store(db)
    try:
        rig, chip_id = open_for_chip(store, "sim", "mlc-small", 5)
        with rig:
            cid = create(store, rig, chip_id, "endurance", {"blocks": [0, 1], "seed": 1, "cycles": 300,
                                                            "checkpoints": [300]}, "sim")
            apply = Runner._apply

            def killed_at_the_cycle(self, i, step, reply, *rest):
                if step.op == Opcode.CYCLE:
                    raise _Killed
                return apply(self, i, step, reply, *rest)

            monkeypatch.setattr(Runner, "_apply", killed_at_the_cycle)
            with pytest.raises(_Killed):
                run(store, rig, cid, progress=False)
            monkeypatch.undo()
            assert store.pending(cid).op == Opcode.CYCLE and store.pe_counts(chip_id, [0])[0] == 0
    finally:
        store.close()
    r = run_cli("run", "endurance", *CHIP, "--db", db, "--blocks", "2-3", "--cycles", "50", "--take-over")
    assert r.code == 0, r.err
    assert run_cli("cancel", "--db", db, "--campaign", 1).code == 0
    store = Store(db)
    try:
        recorded = store.pe_counts(1, [0, 1, 2, 3])
        state = store.db.rigs / "mlc-small-seed5.state"
        assert any(kind == "settled" for _, kind, _ in store.events(1))
    finally:
        store.close()
    chip = VirtualRig.open("mlc-small", 5, state).chip
    assert recorded == {b: chip.pe_count(b) for b in range(4)} == {0: 300, 1: 300, 2: 50, 3: 50}
    assert sqlite3.connect(db).execute("SELECT MAX(pe_uncertain) FROM blocks").fetchone()[0] == 0


def test_resume_goes_past_a_campaign_it_cannot_resume(run_cli, tmp_path):
    db = tmp_path / "two.db"
    port, stop, _ = serve_in_thread(VirtualRig(VirtualChip("mlc-small", 9)))
    store = Store(db)
    try:
        rig, chip_id = open_for_chip(store, f"socket://127.0.0.1:{port}", "mlc-small", 9)
        with rig:  # campaign 1: on a served rig that then goes away
            create(store, rig, chip_id, "endurance", {"blocks": [0], "seed": 1, "cycles": 10, "checkpoints": [10]},
                   f"socket://127.0.0.1:{port}")
        stop.set()
        rig, chip_id = open_for_chip(store, "sim", "mlc-small", 10)
        with rig:  # campaign 2: an in-process chip, there whenever asked
            create(store, rig, chip_id, "endurance", {"blocks": [0], "seed": 1, "cycles": 10, "checkpoints": [10]},
                   "sim")
    finally:
        store.close()
    r = run_cli("resume", "--db", db)
    assert r.code == 1 and "campaign 2 done" in r.out, r.out + r.err
    lines = [ln for ln in r.err.splitlines() if "not resumed" in ln]
    assert len(lines) == 2 and lines[0].startswith("campaign 1 (endurance") and "127.0.0.1" in lines[0]
    assert lines[1] == "nandrig: error: 1 campaign not resumed (1: why above); 1 resumed"
    states = {x["id"]: x["state"] for x in json.loads(run_cli("ls", "--db", db, "--json").out)}
    assert states == {1: "interrupted", 2: "done"}


def test_a_finished_database_on_a_read_only_mount_is_listed_exported_and_reported(run_cli, tmp_path):
    src, mnt = tmp_path / "archive", tmp_path / "mnt"
    src.mkdir()
    mnt.mkdir()
    db = src / "lab.db"
    assert run_cli("run", "endurance", *CHIP, "--db", db, "--blocks", "0-1", "--cycles", "100").code == 0
    assert not Path(f"{db}-wal").exists()  # closed cleanly: everything is in the file
    ro = mnt / "lab.db"
    cmds = [f"{sys.executable} -m nandrig ls --db {ro}",
            f"{sys.executable} -m nandrig export --db {ro} --campaign 1 --csv",
            f"{sys.executable} -m nandrig report --db {ro} --out {tmp_path / 'report'}",
            f"touch {mnt}/written"]  # the mount really is read-only
    script = f"mount --bind {src} {mnt} && mount -o remount,bind,ro {mnt} && " + " ; ".join(
        f"{c} > {tmp_path}/out{i} 2> {tmp_path}/err{i}; echo $? >> {tmp_path}/codes" for i, c in enumerate(cmds))
    unshare = ["unshare", "-m"] if os.geteuid() == 0 else ["unshare", "-rm"]
    subprocess.run([*unshare, "sh", "-c", script], check=True, timeout=120)
    codes = (tmp_path / "codes").read_text().split()
    assert codes[:3] == ["0", "0", "0"], [(tmp_path / f"err{i}").read_text() for i in range(3)]
    assert codes[3] != "0" and "Read-only file system" in (tmp_path / "err3").read_text()
    assert "endurance  done" in (tmp_path / "out0").read_text()
    assert (tmp_path / "out1").read_text() == run_cli("export", "--db", db, "--campaign", 1, "--csv").out
    assert (tmp_path / "report" / "index.html").exists()


def test_flares_validate_gives_a_verdict_in_words_json_and_the_report(run_cli, tmp_path):
    db = tmp_path / "f.db"
    r = run_cli("run", "flares-validate", *CHIP, "--on-rig", "--scale", "0.02", "--db", db)
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert any(ln.startswith("  under: operations FLARES served with a t below the target t") for ln in lines)
    assert lines[-1].startswith("FLARES met its target UBER 1e-11") or lines[-1].startswith("FLARES missed")
    j = run_cli("run", "flares-validate", *CHIP, "--on-rig", "--scale", "0.02", "--json")
    v = json.loads(j.out)["verdict"]
    assert set(v["page_types"]) == {"lower", "upper"} and v["runs"] == "in the rig"
    runs = json.loads(j.out)["runs"]
    for kind, k in v["page_types"].items():
        mine = [x for x in runs if x["page_type"] == kind]
        assert k["under_target_ops"] == sum(x["under_target_ops"] for x in mine)
        assert k["met"] == (k["under_target_ops"] == 0 and k["decode_failures"] == 0)
        assert k["worst_expected_uber"] == max(x["below_target_uber_max"] or 0.0 for x in mine)
    assert v["met"] == all(k["met"] for k in v["page_types"].values())
    assert run_cli("report", "--db", db, "--out", tmp_path / "rep").code == 0
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "<b>Verdict: met.</b>" in page or "<b>Verdict: missed.</b>" in page


def test_report_and_live_page_agree_with_ls_and_label_each_checkpoint_once(run_cli, tmp_path, browser):
    db = tmp_path / "lab.db"
    assert run_cli("run", "retention", *CHIP, "--db", db, "--blocks", "0-2", "--wear", "1000,3000,10000",
                   "--times", "1d").code == 0
    store = Store(db)
    try:
        rig, chip_id = open_for_chip(store, "sim", "mlc-small", 5)
        with rig:  # interrupted before its first step: `ls` says interrupted, and so must everything else
            create(store, rig, chip_id, "endurance", {"blocks": [5], "seed": 1, "cycles": 10, "checkpoints": [10]},
                   "sim")
    finally:
        store.close()
    listed = {x["id"]: x["state"] for x in json.loads(run_cli("ls", "--db", db, "--json").out)}
    assert listed == {1: "done", 2: "interrupted"}
    assert run_cli("report", "--db", db, "--out", tmp_path / "rep").code == 0
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "<td>2</td><td>endurance</td><td>interrupted</td>" in page and ">running<" not in page

    port, = free_ports(1)
    server = _nandrig("serve", "--db", db, "--port", port, "--refresh", "30")
    try:
        base = f"http://127.0.0.1:{port}/"
        html = wait_for(lambda: _text(base), 20, "the live page")
        # the first view is the server's: campaigns, states and checkpoints are there before any script runs
        assert 'class="state interrupted">interrupted<' in html and "loading" not in html
        labels = [f"t={h}h, P/E {pe}" for h in (0, 24) for pe in (1000, 3000, 10000)]
        for label in labels:
            assert html.count(f"<td>{label}</td>") == 1, label
        assert "campaign 1: latest checkpoints" in html
        browser.get(base)  # a real browser, looked at at once: the refresh is 30 s away
        SHOTS.mkdir(parents=True, exist_ok=True)
        assert browser.save_screenshot(str(SHOTS / "first-view.png"))
        text = browser.find_element("id", "campaigns").text
        assert "interrupted" in text and all(label in text for label in labels)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(20)


def _text(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.read().decode()
    except OSError:
        return None


def test_read_disturb_counts_beyond_a_request_field_are_split():
    from nandrig import protocol as P
    from nandrig.host.kinds import steps

    got = steps.read_disturb(3, 0, 10**12)
    assert sum(P.READ_DISTURB_REQ.unpack(s.payload).reads for s in got) == 10**12
    assert len(got) == -(-10**12 // (2**32 - 1))


@pytest.mark.parametrize("profile", sorted(p.stem for p in (Path(__file__).resolve().parents[2] / "nandrig" / "virtual_chip"
                                                                / "profiles").glob("*.json")))
def test_every_kind_with_its_defaults_is_accepted_or_refused_before_any_wear_on_every_profile(profile, tmp_path):
    """Each kind's CLI defaults against each shipped chip: a plan the chip can run, or a refusal before anything
    is worn (only the read-retry kinds, on chips whose read-retry table nandrig does not know)."""
    from nandrig.host.engine.campaigns import check_plan
    from nandrig.host.cli import run_grp
    from nandrig.host.kinds import KINDS

    db = tmp_path / "p.db"
    store = Store(db)
    try:
        rig, chip_id = open_for_chip(store, "sim", profile, 1)
        with rig:
            refused = {}
            for name, k in KINDS.items():
                ctx = run_grp.commands[name].make_context(name, ["--rig", "sim", "--db", str(db), "--blocks", "0-7"])
                opts = {n: v for n, v in ctx.params.items() if n in k.from_cli.__code__.co_varnames}
                params = {"blocks": list(range(8)), "seed": 1, **k.from_cli(**opts)}
                try:
                    k, p, g = check_plan(store, chip_id, name, params)
                except Exception as e:  # noqa: BLE001 (what a refusal is, is asserted below)
                    refused[name] = str(e)
                    continue
                # an accepted plan's requests that wear nothing (read references moved) are ones this chip's rig
                # takes: a plan never fails on them after its blocks were worn
                for step in k.plan(p, g):
                    if step.kind in ("set_offset", "set_refs"):
                        rig.call(step.op, step.payload)
    finally:
        store.close()
    assert set(refused) <= {"vth", "vth-states", "flexlevel"}, refused
    assert all("no read-retry table" in why for why in refused.values()), refused
    assert _counts(db)[3] == 0


def test_a_campaign_on_a_terminal_shows_its_steps_while_it_adds_no_wear(tmp_path):
    """On a TTY the bar counts P/E and names each step: a rig that spends minutes reading (the RTL rig's MEASUREs)
    still shows it moves. Off a TTY nothing is drawn."""
    import fcntl
    import struct
    import termios

    db = tmp_path / "tty.db"
    argv = [sys.executable, "-m", "nandrig", "run", "vth", *CHIP, "--db", str(db), "--pe", "100",
            "--offsets=-20:20:10"]
    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))  # a terminal 120 columns wide
    proc = subprocess.Popen([*argv, "--blocks", "0"], stdin=follower, stdout=follower, stderr=follower)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 4096)
        except OSError:  # the terminal closed with the process
            break
        if not data:
            break
        chunks.append(data)
    assert proc.wait(60) == 0
    os.close(leader)
    out = b"".join(chunks).decode(errors="replace")
    assert "campaign 1 (vth)" in out and "P/E" in out and "measure" in out and "step 13/13" in out, out
    plain = subprocess.run([*argv, "--blocks", "1"], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert plain.returncode == 0 and "step " not in plain.stderr, plain.stderr
