"""Eighty-odd mistakes a user makes, each against a database that holds a finished campaign and an interrupted one:
every one ends with one line on stderr and a non-zero exit, no traceback, and the database and the chip's state
are left byte for byte as they were. The table (command, exit code, the line) is written to
build/bad-inputs.md."""
import hashlib
import json
from pathlib import Path

import pytest

from nandrig.host.engine.campaigns import create

from nandrig.host.engine.chip_access import open_for_chip
from nandrig.host.storage.store import Store

ROOT = Path(__file__).resolve().parents[1]
SIM = ("--rig", "sim", "--chip", "mlc-small", "--seed", "2")
END = ("run", "endurance", *SIM, "--db", "{db}")

CASES = [
    ((*END, "--blocks", "99-100"), "outside the chip"),
    ((*END, "--blocks", "5-3"), "first block is after the last"),
    ((*END, "--blocks", "x"), "--blocks takes ranges"),
    ((*END, "--blocks", "1"), "reserved by campaign 2"),
    ((*END, "--blocks", "5", "--cycles", "0"), "--cycles"),
    ((*END, "--blocks", "5", "--checkpoints", "1.7"), "--checkpoints"),
    ((*END, "--blocks", "5", "--checkpoints", "0,5"), "checkpoints must lie"),
    ((*END, "--blocks", "5", "--cycles", "10", "--checkpoints", "20"), "checkpoints must lie"),
    ((*END, "--blocks", "5", "--step", "-1"), "--step"),
    (("run", "endurance", "--rig", "socket://127.0.0.1", "--db", "{db}", "--blocks", "5"), "port"),
    (("run", "endurance", "--rig", "socket://127.0.0.1:1", "--db", "{db}", "--blocks", "5"), "127.0.0.1:1"),
    (("run", "endurance", "--rig", "/dev/nandrig-no-such-tty", "--db", "{db}", "--blocks", "5"), "no-such-tty"),
    (("run", "endurance", "--rig", "sim", "--chip", "no-such-chip", "--db", "{db}", "--blocks", "5"), "no-such-chip"),
    (("run", "endurance", *SIM, "--db", "{tmp}", "--blocks", "5"), "directory"),
    (("run", "retention", *SIM, "--db", "{db}", "--blocks", "5-7", "--wear", "abc"), "--wear"),
    (("run", "retention", *SIM, "--db", "{db}", "--blocks", "5-7", "--times", "3parsecs"), "3parsecs"),
    (("run", "retention", *SIM, "--db", "{db}", "--blocks", "5-7", "--oven", "kiln"), "--oven"),
    (("run", "retention", *SIM, "--db", "{db}", "--blocks", "5-6", "--wear", "1,2,3"), "need at least 3 blocks"),
    (("run", "density", *SIM, "--db", "{db}", "--blocks", "5"), "(MLC and pSLC) need at least 2 blocks"),
    (("run", "density", *SIM, "--db", "{db}", "--blocks", "5-6", "--checkpoints", "0,3"), "start at 1"),
    (("run", "vth-states", *SIM, "--db", "{db}", "--blocks", "5-6", "--offsets=-120:120:4"),
     "outside this chip's retry range -100..100"),
    (("run", "vth-states", *SIM, "--db", "{db}", "--blocks", "5-6", "--references", "VR4"), "--references"),
    (("run", "vth-states", *SIM, "--db", "{db}", "--blocks", "5-6", "--pe", "0,1000"), "--pe"),
    (("run", "read-disturb", *SIM, "--db", "{db}", "--blocks", "5", "--page", "200"), "page"),
    (("run", "read-disturb", *SIM, "--db", "{db}", "--blocks", "5", "--points", "0"), "--points"),
    (("run", "retention", *SIM, "--db", "{db}", "--blocks", "5-7", "--oven", "scpi:"), "--oven"),
    (("run", "retention", *SIM, "--db", "{db}", "--blocks", "5-7", "--oven", "scpi:TCPIP::x::INSTR", "--chamber",
      "{tmp}/garbage.csv"), "--chamber"),
    (("run", "retention", *SIM, "--db", "{db}", "--blocks", "5-7", "--oven", "scpi:TCPIP::x::INSTR", "--chamber",
      "{tmp}/chamber.json"), "unknown soak"),
    (("run", "retention", *SIM, "--db", "{db}", "--blocks", "5-7", "--chamber", "{tmp}/chamber.json"),
     "--chamber goes with --oven scpi"),
    (("run", "vth", *SIM, "--db", "{db}", "--blocks", "5", "--offsets", "a:b"), "--offsets"),
    (("run", "vth", *SIM, "--db", "{db}", "--blocks", "5", "--retention", "soon"), "soon"),
    (("run", "flares-validate", *SIM, "--scale", "5"), "--scale"),
    (("run", "flares-validate", *SIM, "--blocks", "99999"), "99999"),
    (("run", "flares-validate", *SIM, "--bound", "1"), "--bound"),
    (("run", "flares-validate", *SIM, "--bound", "0.99", "--params", "flares-taco2014"), "leave out --params"),
    (("run", "flares-validate", *SIM, "--policy", "careful"), "--policy"),
    (("bench", "policy", "--dies", "0"), "--dies"),
    (("resume", "--db", "{tmp}/none.db"), "none.db"),
    (("resume", "--db", "{db}", "--campaign", "99"), "99"),
    (("cancel", "--db", "{db}", "--campaign", "1"), "nothing to cancel"),
    (("cancel", "--db", "{db}", "--campaign", "99"), "99"),
    (("export", "--db", "{db}", "--campaign", "99", "--csv"), "99"),
    (("export", "--db", "{db}", "--campaign", "1", "--parquet"), "--out"),
    (("export", "--db", "{db}", "--campaign", "1", "--ops", "--per-page"), "choose one"),
    (("export", "--db", "{db}", "--campaign", "1", "--parquet", "--out", "/nonexistent/dir/x.parquet"),
     "/nonexistent/dir"),
    (("export", "--db", "{db}", "--campaign", "1", "--csv", "--out", "/nonexistent/dir/x.csv"), "/nonexistent/dir"),
    (("report", "--db", "{db}", "--out", "/dev/null/report"), "/dev/null"),
    (("ls", "--db", "{tmp}/none.db"), "none.db"),
    (("ls", "--db", "{tmp}"), "directory"),
    (("serve", "--db", "{tmp}/garbage.csv"), "garbage.csv"),
    (("serve", "--db", "{db}", "--port", "70000"), "--port"),
    (("fit", "--csv", "/nonexistent.csv"), "cannot read"),
    (("fit", "--csv", "{tmp}/empty.csv"), "empty"),
    (("fit", "--csv", "{tmp}/garbage.csv"), "lacks"),
    (("fit", "--csv", "{tmp}/garbage.csv", "--law", "cubic"), "--law"),
    (("tables", "--params", "no-such-set"), "unknown parameter set"),
    (("tables", "--params", "flares-taco2014", "--uber", "0"), "uber"),
    (("model", "required-t", "--pe", "-3"), "--pe"),
    (("model", "uber", "--rber", "0.9", "--t", "3"), "rber"),
    (("model", "arrhenius", "--bake-hours", "1", "--temp-c", "-400"), "absolute zero"),
    (("frobnicate",), "no such command"),
    (("rig", "info", "--rig", "sim", "--chip", "no-such-chip"), "no-such-chip"),
    (("rig", "info", "--rig", "sim", "--wiring", "delay=abc"), "delay"),
    (("rig", "info", *SIM, "--target", "3"), "no chip on target 3 (targets with a chip: 0)"),
    (("rig", "info", *SIM, "--target", "8"), "--target"),
    ((*END, "--blocks", "5", "--target", "1"), "--rig sim drives one chip, on target 0"),
    (("sim", "serve", "--targets", "9"), "--targets 9: a rig has 1 to 8 targets"),
    (("sim", "serve", "--targets", ".,mlc-3x"), "target 1 is 'mlc-3x'"),
    (("bench", "workload", "--blocks", "99999"), "--blocks 99999: a mlc-3x chip has 4096"),
    (("bench", "workload", "--workload", "tpc"), "'tpc' is not one of"),
    (("workload", "lifetime", "--policies", "fixed,worst"), "--policies: worst; choose from"),
    (("workload", "lifetime", "--chip", "no-such-chip"), "no-such-chip"),
    (("workload", "cache", "--controllers", "bch2"), "--controllers: bch2; choose from"),
    (("run", "workload", *SIM, "--db", "{db}", "--blocks", "1-2"), "reserved by campaign 2"),
    (("run", "workload", *SIM, "--db", "{db}", "--blocks", "10-13"), "hold 4 good blocks: the FTL needs at least 6"),
    (("run", "workload", *SIM, "--db", "{db}", "--blocks", "10-20", "--trace", "{tmp}/none.csv", "--format", "msr"),
     "none.csv"),
    (("run", "workload", *SIM, "--db", "{db}", "--blocks", "10-20", "--trace", "{tmp}/garbage.csv"),
     "--trace and --format go together"),
    (("run", "workload", *SIM, "--db", "{db}", "--blocks", "10-20", "--trace", "{tmp}/garbage.csv", "--format",
      "fio", "--reads", "0.5"), "--reads and --gap-us shape a synthetic trace"),
    (("run", "workload", *SIM, "--db", "{db}", "--blocks", "10-20", "--policy", "best"), "--policy"),
    (("bench", "rig", "--virtual"), "--virtual and --alike: options of a bench of several targets (--targets)"),
    (("bench", "rig", "--targets", "1,2", "--virtual", "--board", "ulx3s"), "--virtual runs at the virtual rig's own"),
    (("rig", "erase", *SIM, "--db", "{db}", "--block", "1"), "reserved by campaign 2"),
    (("rig", "read", *SIM, "--db", "{db}", "--block", "99", "--page", "0"), "--block 99"),
    (("rig", "program", *SIM, "--db", "{db}", "--block", "6", "--page", "999"), "--page 999"),
    (("rig", "selftest", *SIM, "--block", "-1"), "--block"),
    (("rig", "decode-param-page", "{tmp}/garbage.csv"), "no parameter-page copy passes its CRC"),
    (("rig", "decode-param-page", "{tmp}/none.bin"), "none.bin"),
    (("run", "endurance", "--rig", "sim", "--chip", "{tmp}/mlc-32k.json", "--db", "{db}", "--blocks", "1-2"),
     "exceed the rig's page buffer"),
    (("sim", "serve", "--port", "99999"), "--port"),
    (("sim", "serve", "--volatile", "--state", "{tmp}/x.state"), "--volatile"),
    # wear levels are absolute: blocks 3-4 carry 20 P/E from campaign 1
    (("run", "retention", *SIM, "--db", "{db}", "--blocks", "3-4", "--wear", "5,30"), "block 3 already carries"),
    (("run", "endurance", *SIM, "--db", "{db}", "--blocks", "3-4", "--cycles", "20"), "at or past every checkpoint"),
    # physical and protocol ranges, before any wear
    (("run", "retention", *SIM, "--db", "{db}", "--blocks", "5-7", "--temp", "500"), "storage range"),
    (("run", "retention", *SIM, "--db", "{db}", "--blocks", "5-7", "--temp", "300"), "-65..150 degC"),
    (("run", "retention", *SIM, "--db", "{db}", "--blocks", "5-7", "--oven", "wall", "--temp", "100"),
     "operating range"),
    (("run", "vth", *SIM, "--db", "{db}", "--blocks", "3", "--offsets=-120:0:10"), "retry range -100..100"),
    (("bench", "fit", "--repeats", "0"), "--repeats"),
    (("board", "build", "no-such-board"), "BOARD"),
    (("demo", "--nonsense"), "--nonsense"),
]


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    """A database with campaign 1 done (blocks 3-4) and campaign 2 interrupted before its first step (1-2)."""
    from nandrig.cli import main

    tmp = tmp_path_factory.mktemp("bench")
    db = tmp / "bench.db"
    assert main(["run", "endurance", *SIM, "--db", str(db), "--blocks", "3-4", "--cycles", "20"]) == 0
    store = Store(db)
    try:
        rig, chip_id = open_for_chip(store, "sim", "mlc-small", 2)
        with rig:
            create(store, rig, chip_id, "endurance", {"blocks": [1, 2], "seed": 1, "cycles": 10, "checkpoints": [10]},
                   "sim")
    finally:
        store.close()
    (tmp / "empty.csv").write_text("")
    (tmp / "garbage.csv").write_text("pe,retention_h\n1,2\n")
    (tmp / "chamber.json").write_text('{"soak": 60}')
    big = json.loads((ROOT / "nandrig/virtual_chip/profiles/mlc-16k.json").read_text())  # pages beyond the page buffer
    big.update(name="mlc-32k", geometry={"page_bytes": 32768, "spare_bytes": 2560, "pages_per_block": 64, "blocks": 16})
    (tmp / "mlc-32k.json").write_text(json.dumps(big))
    return tmp, db


def fingerprint(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.suffix != ".lock" and not p.name.startswith("bench.db-")}


def test_fifty_mistakes_one_line_each_and_nothing_stored_harmed(run_cli, bench):
    tmp, db = bench
    assert len(CASES) >= 40
    before = fingerprint(tmp)
    table = ["| command | exit | what the user reads |", "| --- | --- | --- |"]
    for args, word in CASES:
        argv = [a.format(db=db, tmp=tmp) for a in args]
        r = run_cli(*argv)
        r.assert_one_line_error(word)
        shown = " ".join(a.replace(str(tmp), "…") for a in argv)
        table.append(f"| `nandrig {shown}` | {r.code} | {r.err.strip().replace('|', '/').replace(str(tmp), '…')} |")
        assert fingerprint(tmp) == before, " ".join(argv)  # nothing stored harmed, case by case
    out = ROOT / "build" / "bad-inputs.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text("\n".join(table) + "\n")
