"""One home for every contract: the generated C headers and protocol tables are current, the firmware uses
only their names, and the layers import in one direction."""
import ast
import re
import struct
from pathlib import Path

import pytest

from nandrig import protocol as P
from nandrig.chip import cheader as chip_cheader
from nandrig.chip.geometry import PageMap, PageType, page_map, page_of
from nandrig.protocol import cheader, markdown

ROOT = Path(__file__).resolve().parents[1]

# code that launches simulators may import nandrig.boards.sim and the virtual chip; nothing else in these areas may
SIMULATOR_LAUNCHERS = {
    "host/link/rig.py",  # Rig.open("sim"): the in-process virtual rig
    "host/bench.py",  # nandrig bench link: serves a virtual rig to measure the link
    "gateware/onfi/bfm.py",  # the pin-level bus model drives the virtual chip
    "gateware/onfi/sim.py",  # the controller in simulation, against that bus model
    "gateware/onfi/bench.py",  # nandrig bench onfi: the same simulation, timed
}


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
    return names


def _python_files(*areas: str) -> list[Path]:
    return [p for a in areas for p in sorted((ROOT / a).rglob("*.py"))]


def test_only_simulator_launchers_import_the_simulator():
    offenders = []
    for path in _python_files("host", "characterization", "gateware"):
        rel = path.relative_to(ROOT).as_posix()
        if rel in SIMULATOR_LAUNCHERS:
            continue
        offenders += [f"{rel}: {n}" for n in _imports(path) if n.startswith(("nandrig.boards.sim", "nandrig.virtual_chip"))]
    assert offenders == []


def test_shared_contracts_import_no_area():
    """nandrig.protocol and nandrig.chip sit below every area: they import none of them."""
    areas = ("nandrig.host", "nandrig.boards", "nandrig.gateware", "nandrig.characterization", "nandrig.firmware")
    offenders = [f"{p.relative_to(ROOT)}: {n}" for p in _python_files("nandrig/protocol", "nandrig/chip")
                 for n in _imports(p) if n.startswith(areas)]
    assert offenders == []


@pytest.mark.parametrize("render, path", [(cheader.render, cheader.HEADER_PATH),
                                          (chip_cheader.render, chip_cheader.HEADER_PATH)])
def test_generated_firmware_headers_are_current(render, path):
    assert (ROOT / path).read_text() == render(), f"regenerate {path} (its module's docstring says how)"


def test_protocol_doc_tables_are_the_spec():
    doc = markdown.DOC.read_text()
    assert markdown.render(doc) == doc, "run python -m nandrig.protocol.markdown"


FIRMWARE_COMMANDS = ["server.c", "job.c", "rig.c", "page_io.c", "commands.c", "flares_ops.c", "ecc_layout.c"]


@pytest.mark.parametrize("name", FIRMWARE_COMMANDS)
def test_firmware_reads_and_writes_records_only_through_the_spec(name):
    """No bare flag test, byte offset into a request or reply, or limit literal in the server's sources: each
    goes through a name from protocol.h or onfi_facts.h."""
    code = re.sub(r"/\*.*?\*/", "", (ROOT / "firmware/rig" / name).read_text(), flags=re.S)
    bare = [
        *re.findall(r"flags\s*&\s*~?\s*\d", code),  # flag bits by number
        *re.findall(r"\b(?:get|put)_le\((?:q->payload|out|p|buf)\s*\+\s*\d", code),  # offsets by number
        *re.findall(r"\bq->payload\[\d", code), *re.findall(r"\bout\[\d", code),
        *re.findall(r"[<>]=?\s*\d{3,}", code),  # limits by number
        *re.findall(r"\bstatus\s*&\s*\d", code),  # chip status bits by number
    ]
    assert bare == []


def test_layouts_agree_with_the_documented_struct_formats():
    """The layouts give the byte layouts docs/protocol.md had before the spec existed."""
    documented = {
        P.HELLO_REQ: "<HHIB", P.SCAN_BAD_REQ: "<IH", P.ERASE_REQ: "<IB", P.READ_REQ: "<IHBBI",
        P.SET_READ_OFFSET_REQ: "<b", P.CYCLE_REQ: "<IHIIB", P.MEASURE_REQ: "<IHHHIB", P.READ_DISTURB_REQ: "<IHI",
        P.ADVANCE_REQ: "<Qh", P.FLARES_CONFIG_REQ: "<HHHBBBIB", P.FLARES_PROGRAM_REQ: "<IHBII",
        P.FLARES_READ_REQ: "<IHBI", P.PROGRAM_HEAD: "<IHBB", P.CHIP_RESULT: "<BI", P.CODEWORD_COUNTS: "<HHh",
        P.CYCLE_BLOCK: "<IB", P.MEASURE_PAGE: "<HHI", P.STATUS_REPLY: "<BBHIII",
        P.INFO_REPLY: "<5s12s20sIHIIBHBBHBIBbHB16sHBBHBB", P.HELLO_REPLY: "<HHBIIIB", P.FLARES_CONFIG_REPLY: "<BBHBI",
        P.FLARES_DECISION: "<BBBB", P.FLARES_READ_TAIL: "<BHB", P.FLARES_TABLES_REQ: "<IIIB",
        P.FLARES_TABLES_REPLY: "<BBI", P.FLARES_TABLES_HEAD: "<BBBBBBBHH",
    }
    for layout, fmt in documented.items():
        assert layout.format == fmt, layout.name
        assert layout.size == struct.calcsize(fmt)
        values = tuple(range(1, len(layout.fields) + 1))
        values = tuple(b"x" * f.size if f.is_bytes else v for f, v in zip(layout.fields, values))
        assert layout.pack(*values) == struct.pack(fmt, *values)
        assert tuple(layout.unpack(layout.pack(*values))) == values


def test_every_opcode_has_one_command_and_flag_masks_cover_their_enums():
    assert set(P.COMMANDS) == set(P.Opcode)
    assert P.all_flags(P.ReadFlag) == 0x06 and P.all_flags(P.ProgramFlag) == 0x03
    assert P.UNCACHED == {P.Opcode.HELLO, P.Opcode.INFO, P.Opcode.TIME, P.Opcode.READ_ID, P.Opcode.READ_PARAM_PAGE,
                          P.Opcode.STATUS, P.Opcode.ABORT}
    assert P.LONG == {P.Opcode.CYCLE, P.Opcode.MEASURE, P.Opcode.READ_DISTURB, P.Opcode.SCAN_BAD}


def test_the_rig_codeword_is_the_bch_engine_default():
    from nandrig.gateware.bch.config import BchConfig

    assert BchConfig().k_bytes == P.Limit.RIG_CODEWORD_BYTES


@pytest.mark.parametrize("ppb", [4, 32, 128, 256])
def test_page_map_as_data_matches_the_shuffle_and_round_trips(ppb):
    pm = PageMap.shuffled_mlc(ppb)
    assert [(pm.wordline(p), pm.is_upper(p)) for p in range(ppb)] == [page_map(p, ppb) for p in range(ppb)]
    for p in range(ppb):
        wl, up = page_map(p, ppb)
        assert pm.page_of(wl, PageType(up)) == page_of(wl, up, ppb) == p
    assert PageMap.from_json(pm.to_json()) == pm


def test_a_schema_1_database_gains_page_maps_and_keeps_its_data(tmp_path, run_cli):
    """The page map is part of a chip's record; a database from before it is upgraded in place, losing nothing."""
    import sqlite3

    from nandrig.host.storage.store import SCHEMA_VERSION, Store

    db = tmp_path / "old.db"
    assert run_cli("run", "endurance", "--rig", "sim", "--chip", "mlc-small", "--db", db, "--blocks", "1-2",
                   "--cycles", "10", "--step", "10").code == 0
    before = run_cli("export", "--db", db, "--campaign", "1", "--csv", "--per-page").out
    con = sqlite3.connect(db)
    con.executescript("ALTER TABLE chips DROP COLUMN page_map; ALTER TABLE chips DROP COLUMN unique_id;"
                      "ALTER TABLE journal DROP COLUMN boot; ALTER TABLE blocks DROP COLUMN pe_uncertain;"
                      "ALTER TABLE measurements DROP COLUMN pe_uncertain;"
                      "DROP TABLE bit_errors; DROP TABLE op_energy; DROP TABLE rig_calls;"
                      "DROP TABLE program_states; DROP TABLE campaign_results;"
                      "ALTER TABLE flares_runs DROP COLUMN campaign_id; ALTER TABLE campaigns DROP COLUMN target;"
                      "UPDATE meta SET value='1' WHERE key='schema_version';")  # as schema 1
    con.close()
    store = Store(db)
    try:
        ppb = store.chip(1)["pages_per_block"]
        assert store.page_map(1) == PageMap.shuffled_mlc(ppb)
        assert store.chip(1)["unique_id"] is None  # not known until a rig reads it
        version = store.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0]
        assert int(version) == SCHEMA_VERSION and store.bit_errors(1) == [] and store.op_energy(1) == []
        assert store.rig_calls(1) == [] and store.flares_run_of(1) is None
        assert store.program_state(1) is None and store.result_of(1) is None
        assert store.campaign(1).target == 0  # rigs of schema 7 drove one chip
    finally:
        store.close()
    assert run_cli("export", "--db", db, "--campaign", "1", "--csv", "--per-page").out == before


def test_a_schema_9_database_keeps_its_timed_reads_and_takes_unseen_ones(tmp_path, run_cli):
    """Schema 10 lets a measured page's tR be unseen (NULL: a cache read hid it); schema 9's rows, every one timed,
    come through the rebuild unchanged."""
    import sqlite3

    from nandrig.host.storage.store import MEASUREMENTS_TABLE, SCHEMA_VERSION, Store

    db = tmp_path / "old.db"
    assert run_cli("run", "endurance", "--rig", "sim", "--chip", "mlc-small", "--db", db, "--blocks", "1-2",
                   "--cycles", "10", "--step", "10").code == 0
    con = sqlite3.connect(db)
    old = MEASUREMENTS_TABLE.replace("busy_ns INTEGER,", "busy_ns INTEGER NOT NULL,").replace(
        "TABLE measurements", "TABLE measurements_9")
    con.executescript(f"{old}; INSERT INTO measurements_9 SELECT checkpoint_id, block, page, pe, err_1to0, err_0to1,"
                      " bits, COALESCE(busy_ns, 1000 + page), pe_uncertain FROM measurements; DROP TABLE measurements;"
                      " ALTER TABLE measurements_9 RENAME TO measurements;"
                      " UPDATE meta SET value='9' WHERE key='schema_version';")
    rows = con.execute("SELECT * FROM measurements ORDER BY checkpoint_id, block, page").fetchall()
    con.close()
    assert rows and all(r[7] is not None for r in rows)
    Store(db).close()
    con = sqlite3.connect(db)
    try:
        assert con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
        assert con.execute("SELECT * FROM measurements ORDER BY checkpoint_id, block, page").fetchall() == rows
        con.execute("UPDATE measurements SET busy_ns = NULL WHERE page = 1")  # NOT NULL is gone
    finally:
        con.close()


def test_the_virtual_chips_parameter_page_states_tccs():
    """ONFI bytes 139-140: a controller takes tCCS from here; 0 would let it read a changed column too early."""
    from nandrig.virtual_chip.chip import VirtualChip
    from nandrig.chip.onfi import ParamOffset
    from nandrig.chip.param_page import decode_dump
    from nandrig.chip.timing import MODES

    raw = VirtualChip("mlc-small", seed=1).read_parameter_page()
    assert int.from_bytes(raw[ParamOffset.T_CCS:ParamOffset.T_CCS + 2], "little") == 400
    assert 0 < decode_dump(raw).page.t_ccs_ns <= min(m.tCCS for m in MODES.values())  # the controller waits longer


STORAGE = {"host/storage/store.py", "host/storage/databases.py"}  # the storage layer: every SQL statement lives here
_SQL = re.compile(r"^\s*(SELECT\s|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s+(TABLE|INDEX)|ALTER\s+TABLE|"
                  r"DROP\s+TABLE|BEGIN\b|COMMIT\b|PRAGMA\s)")


def test_sql_lives_in_the_storage_layer():
    """No SQL text and no call on a store's connection outside host/storage/store.py and host/storage/databases.py."""
    offenders = []
    for path in _python_files("host", "characterization", "boards", "gateware", "nandrig"):
        rel = path.relative_to(ROOT).as_posix()
        if rel in STORAGE:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            text = node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None
            if text and _SQL.match(text):
                offenders.append(f"{rel}:{node.lineno}: {text.strip()[:40]}")
            if (isinstance(node, ast.Attribute) and node.attr in ("execute", "executescript", "row")
                    and isinstance(node.value, ast.Attribute) and node.value.attr == "db"):
                offenders.append(f"{rel}:{node.lineno}: .db.{node.attr}")
    assert offenders == []


def test_the_sql_check_sees_sql():
    tree = ast.parse('store.db.execute("SELECT block FROM blocks")')
    assert any(isinstance(n, ast.Constant) and _SQL.match(n.value) for n in ast.walk(tree))
