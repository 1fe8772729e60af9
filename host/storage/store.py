"""The durable measurement store: an SQLite file per bench, or a lab's PostgreSQL database (host/storage/databases.py).

Every change that a later step depends on is committed before that step: a
campaign's cursor, its journal of the rig request in flight, per-block P/E
counts and every measurement. Both engines make a commit survive a power cut,
not only a killed process.
"""
from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from nandrig.chip.geometry import Geometry, PageMap
from nandrig.host.storage.databases import Database, connection_errors, database_errors, first_line, held, open_database
from nandrig import jsonsafe
from nandrig.errors import NandrigError

SCHEMA_VERSION = 10  # 2: chips carry their page map; 3: and their ONFI unique ID; 4: rig boots and P/E uncertainty;
# 5: bit-error maps; 6: supply energy per request; 7: the rig calls of program-driven campaigns; 8: the rig's target;
# 9: program-driven campaigns' checkpoints and results; 10: a measured page's tR may be unseen (cache reads)

OP_ENERGY_TABLE = """CREATE TABLE op_energy (  -- the chip's supply energy over one request (rigs with a current sense)
    campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
    step INTEGER NOT NULL,               -- the step whose request it was (op_times, or a checkpoint's MEASURE)
    busy_pj INTEGER NOT NULL,            -- over R/B# low
    busy_ns INTEGER NOT NULL,
    transfer_pj INTEGER NOT NULL,        -- over the bus transfers
    transfer_ns INTEGER NOT NULL,
    idle_uw INTEGER NOT NULL,            -- the chip's idle power as the rig measures it
    PRIMARY KEY (campaign_id, step)
);
"""

BIT_ERRORS_TABLE = """CREATE TABLE bit_errors ( -- where a page read's raw bit errors are (bitmap campaigns)
    checkpoint_id INTEGER NOT NULL REFERENCES checkpoints(id),
    block INTEGER NOT NULL,
    page INTEGER NOT NULL,
    codes BLOB NOT NULL,                 -- characterization/bitmaps.py: sorted bit*2+direction, delta LEB128
    PRIMARY KEY (checkpoint_id, block, page)
);
"""

RIG_CALLS_TABLE = """CREATE TABLE rig_calls (  -- every request and reply of a campaign driven by a program, in order
    campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
    n INTEGER NOT NULL,                  -- the program's n-th request (its step)
    op INTEGER NOT NULL,
    payload BLOB NOT NULL,
    status INTEGER NOT NULL,             -- the reply's
    reply BLOB NOT NULL,
    boot INTEGER NOT NULL,               -- the rig's boot id when it answered
    PRIMARY KEY (campaign_id, n)
);
"""

PROGRAM_TABLES = """CREATE TABLE program_states (  -- a program-driven campaign's own state at its last checkpoint
    campaign_id INTEGER PRIMARY KEY REFERENCES campaigns(id),
    n INTEGER NOT NULL,                  -- its requests before the checkpoint (their rig_calls are dropped)
    boot INTEGER NOT NULL,               -- the rig's boot id then
    state BLOB NOT NULL                  -- the program's own encoding: it goes on from here
);
CREATE TABLE campaign_results (          -- what a program-driven campaign found, stored as it ends
    campaign_id INTEGER PRIMARY KEY REFERENCES campaigns(id),
    result TEXT NOT NULL                 -- JSON
);
"""

MEASUREMENTS_TABLE = """CREATE TABLE measurements (
    checkpoint_id INTEGER NOT NULL REFERENCES checkpoints(id),
    block INTEGER NOT NULL,
    page INTEGER NOT NULL,
    pe INTEGER NOT NULL,                 -- the block's P/E count when measured
    err_1to0 INTEGER NOT NULL,
    err_0to1 INTEGER NOT NULL,
    bits INTEGER NOT NULL,
    busy_ns INTEGER,                     -- the page's tR; NULL where a cache read hid it
    pe_uncertain INTEGER NOT NULL DEFAULT 0, -- the block's P/E is pe .. pe + pe_uncertain
    PRIMARY KEY (checkpoint_id, block, page)
)"""
MEASUREMENT_COLUMNS = "checkpoint_id, block, page, pe, err_1to0, err_0to1, bits, busy_ns, pe_uncertain"

SCHEMA = f"""
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE chips (
    id INTEGER PRIMARY KEY,
    label TEXT NOT NULL UNIQUE,          -- the user's name for it: by default its unique ID, else read ID and model
    read_id TEXT NOT NULL,
    manufacturer TEXT NOT NULL,
    model TEXT NOT NULL,
    page_bytes INTEGER NOT NULL,
    spare_bytes INTEGER NOT NULL,
    pages_per_block INTEGER NOT NULL,
    blocks INTEGER NOT NULL,
    param_page BLOB NOT NULL,
    page_map TEXT NOT NULL,              -- JSON: per page [wordline, 0 lower / 1 upper] (nandrig.chip.geometry)
    sim_profile TEXT,                    -- simulated chips: profile, seed and the rig state file
    sim_seed INTEGER,
    sim_state TEXT,
    created REAL NOT NULL,
    unique_id TEXT                       -- ONFI READ UNIQUE ID (hex): who the physical chip is; NULL: none
);
CREATE TABLE campaigns (
    id INTEGER PRIMARY KEY,
    chip_id INTEGER NOT NULL REFERENCES chips(id),
    kind TEXT NOT NULL,
    params TEXT NOT NULL,                -- JSON
    state TEXT NOT NULL,                 -- running, done, failed
    step INTEGER NOT NULL DEFAULT 0,     -- index of the next plan step
    steps INTEGER NOT NULL DEFAULT 0,
    rig_url TEXT NOT NULL,
    target INTEGER NOT NULL DEFAULT 0,   -- the rig's target (CE#) the chip is on
    rig_identity TEXT NOT NULL,
    versions TEXT NOT NULL,              -- JSON
    context TEXT NOT NULL DEFAULT '{{}}',  -- JSON: campaign-time facts (oven start, equivalent hours)
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE TABLE blocks (
    chip_id INTEGER NOT NULL REFERENCES chips(id),
    block INTEGER NOT NULL,
    factory_bad INTEGER,                 -- the factory mark; NULL until the block is scanned
    pe INTEGER NOT NULL DEFAULT 0,
    reserved_by INTEGER REFERENCES campaigns(id),
    failed INTEGER NOT NULL DEFAULT 0,
    pe_uncertain INTEGER NOT NULL DEFAULT 0, -- cycles the block may have had beyond pe (a rig restarted mid-command)
    PRIMARY KEY (chip_id, block)
);
CREATE TABLE journal (                   -- the rig request in flight, at most one per campaign
    campaign_id INTEGER PRIMARY KEY REFERENCES campaigns(id),
    step INTEGER NOT NULL,
    session INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    op INTEGER NOT NULL,
    payload BLOB NOT NULL,
    created REAL NOT NULL,
    boot INTEGER                         -- the rig's boot id when it was sent (NULL: not known)
);
CREATE TABLE checkpoints (
    id INTEGER PRIMARY KEY,
    campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
    step INTEGER NOT NULL,
    label TEXT NOT NULL,
    pe INTEGER NOT NULL,
    retention_h REAL NOT NULL,           -- 25 degC-equivalent hours since programming
    actual_h REAL NOT NULL,              -- hours that really passed (wall or virtual)
    temp_c REAL NOT NULL,                -- temperature of that time (bake or room)
    reads INTEGER NOT NULL DEFAULT 0,    -- read-disturb reads so far
    offset INTEGER NOT NULL DEFAULT 0,   -- read-retry offset
    extra TEXT NOT NULL DEFAULT '{{}}',
    UNIQUE (campaign_id, step)
);
{MEASUREMENTS_TABLE};
CREATE TABLE op_times (                  -- per-operation busy times (latency campaigns)
    campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
    step INTEGER NOT NULL,
    op TEXT NOT NULL,
    block INTEGER NOT NULL,
    page INTEGER NOT NULL,
    pe INTEGER NOT NULL,
    busy_ns INTEGER NOT NULL,
    PRIMARY KEY (campaign_id, step)
);
CREATE TABLE events (
    id INTEGER PRIMARY KEY,
    campaign_id INTEGER REFERENCES campaigns(id),
    ts REAL NOT NULL,
    kind TEXT NOT NULL,
    detail TEXT NOT NULL
);
CREATE INDEX checkpoints_by_campaign ON checkpoints(campaign_id);
""" + BIT_ERRORS_TABLE + OP_ENERGY_TABLE + RIG_CALLS_TABLE + PROGRAM_TABLES

# added within schema 1: created on open when missing
FLARES_TABLE = """CREATE TABLE IF NOT EXISTS flares_runs (
    id INTEGER PRIMARY KEY,
    chip_label TEXT NOT NULL,
    block INTEGER NOT NULL,
    page INTEGER NOT NULL,
    result TEXT NOT NULL,                -- JSON: runs, traces, the paper's statements
    created REAL NOT NULL,
    campaign_id INTEGER REFERENCES campaigns(id)  -- the flares-validate campaign that made it (NULL: none)
)"""


@dataclass(frozen=True)
class Campaign:
    id: int
    chip_id: int
    kind: str
    params: dict
    state: str
    step: int
    steps: int
    rig_url: str
    rig_identity: str
    versions: dict
    context: dict
    created: float
    updated: float
    target: int = 0  # the rig's target (CE#) the chip is on

    @property
    def rig_address(self) -> str:
        """Where the campaign runs, as a user names it: the rig, and its target when not 0."""
        return self.rig_url if not self.target else f"{self.rig_url} target {self.target}"

    # what every kind's parameters hold (host/kinds/base.py KindParams), typed where they leave the store
    @property
    def blocks(self) -> tuple[int, ...]:
        return tuple(int(b) for b in self.params["blocks"])

    @property
    def seed(self) -> int:
        return int(self.params["seed"])

    @property
    def oven(self) -> str:
        return str(self.params.get("oven", "virtual"))

    @property
    def chamber(self) -> dict | None:
        return self.params.get("chamber")


@dataclass(frozen=True)
class Pending:
    step: int
    session: int
    seq: int
    op: int
    payload: bytes
    boot: int | None  # the rig's boot id when the request was sent


class RigCall(NamedTuple):
    """One request of a program-driven campaign and the rig's reply to it."""

    op: int
    payload: bytes
    status: int
    reply: bytes
    boot: int


class ProgramState(NamedTuple):
    """A program-driven campaign's checkpoint: its state after its first ``n`` requests, the rig's boot then."""

    n: int
    boot: int
    state: bytes


class MeasurementRow(NamedTuple):
    """One page read at a checkpoint."""

    label: str
    pe: int
    retention_h: float
    actual_h: float
    temp_c: float
    reads: int
    offset: int
    block: int
    page: int
    err_1to0: int
    err_0to1: int
    bits: int
    busy_ns: int | None  # the page's tR; None where a cache read hid it
    pe_uncertain: int = 0  # the block's P/E was pe .. pe + pe_uncertain (a rig restarted mid-command)


class BlockState(NamedTuple):
    """A block's record: its wear, how much more a restart may have added, whether it failed, who reserved it."""

    block: int
    pe: int
    pe_uncertain: int
    failed: bool
    reserved_by: int | None


class OpTime(NamedTuple):
    op: str  # erase, program or read
    block: int
    page: int  # -1 for an erase
    pe: int
    busy_ns: int


def _page_maps(db: Database) -> None:
    """Schema 1 had no page maps: every chip it knew used the shuffled MLC order."""
    db.execute("ALTER TABLE chips ADD COLUMN page_map TEXT NOT NULL DEFAULT ''")
    for cid, ppb in db.execute("SELECT id, pages_per_block FROM chips").fetchall():
        db.execute("UPDATE chips SET page_map=? WHERE id=?", (PageMap.shuffled_mlc(ppb).to_json(), cid))


def _unique_ids(db: Database) -> None:
    """Schema 2 knew chips by label only: their unique IDs are unknown (NULL) until a rig reads them."""
    db.execute("ALTER TABLE chips ADD COLUMN unique_id TEXT")


def _boots(db: Database) -> None:
    """Schema 3 did not note rig boots: every count it holds came from a reply, so nothing is uncertain."""
    db.execute("ALTER TABLE journal ADD COLUMN boot INTEGER")
    db.execute("ALTER TABLE blocks ADD COLUMN pe_uncertain INTEGER NOT NULL DEFAULT 0")
    db.execute("ALTER TABLE measurements ADD COLUMN pe_uncertain INTEGER NOT NULL DEFAULT 0")


def _bit_errors(db: Database) -> None:
    """Schema 4 had no bit-error maps: none were taken."""
    db.ddl(BIT_ERRORS_TABLE)


def _op_energy(db: Database) -> None:
    """Schema 5 kept no energy: no rig measured any."""
    db.ddl(OP_ENERGY_TABLE)


def _rig_calls(db: Database) -> None:
    """Schema 6 ran FLARES validations outside campaigns: none has calls, no stored run a campaign."""
    db.ddl(RIG_CALLS_TABLE)
    if "flares_runs" in db.tables():
        db.execute("ALTER TABLE flares_runs ADD COLUMN campaign_id INTEGER REFERENCES campaigns(id)")


def _targets(db: Database) -> None:
    """Schema 7's rigs drove one chip: every campaign's is target 0."""
    db.execute("ALTER TABLE campaigns ADD COLUMN target INTEGER NOT NULL DEFAULT 0")


def _program_states(db: Database) -> None:
    """Schema 8's program-driven campaigns kept every call from their start: they resume from it as before."""
    for table in PROGRAM_TABLES.split(";")[:-1]:
        db.ddl(table)


def _unseen_reads(db: Database) -> None:
    """Schema 9 timed every measured page (busy_ns NOT NULL): the table is rebuilt with busy_ns nullable, its rows
    as they were. (Built beside the old one and renamed: PostgreSQL's primary-key index keeps the first name.)"""
    db.ddl(MEASUREMENTS_TABLE.replace("CREATE TABLE measurements", "CREATE TABLE measurements_10"))
    db.execute(f"INSERT INTO measurements_10 ({MEASUREMENT_COLUMNS}) SELECT {MEASUREMENT_COLUMNS} FROM measurements")
    db.execute("DROP TABLE measurements")
    db.execute("ALTER TABLE measurements_10 RENAME TO measurements")


MIGRATIONS = {1: _page_maps, 2: _unique_ids, 3: _boots, 4: _bit_errors, 5: _op_energy, 6: _rig_calls,
              7: _targets, 8: _program_states, 9: _unseen_reads}  # from schema N to N + 1
_FAILED = "failed = CASE WHEN ? THEN 1 ELSE failed END"  # a block once failed stays failed


class Store:
    def __init__(self, location: str | Path, read_only: bool = False) -> None:
        """``location``: an SQLite file or a ``postgresql://`` URL. ``read_only``: for looking (ls, export,
        report): nothing is created, upgraded or written, so a database on a read-only medium or one another
        process is writing can be read."""
        self.db: Database = open_database(location, read_only)
        self.name = self.db.name
        self.location = location  # another connection to the same database (a thread's) opens this
        try:
            if read_only:
                self._check_schema(read_only=True)
            else:
                self._init_schema()
        except BaseException as e:
            self.db.close()
            if isinstance(e, connection_errors()):
                raise NandrigError(f"cannot open database {self.name}: {first_line(e)}") from None
            if isinstance(e, database_errors()):
                raise NandrigError(f"{self.name} is not a nandrig database: {first_line(e)}") from None
            raise

    def _init_schema(self) -> None:
        tables = self.db.tables()
        if "meta" not in tables:
            if tables:
                raise NandrigError(f"{self.name} holds other tables but is not a nandrig database")
            self.db.create(f"{SCHEMA}\n{FLARES_TABLE};\n"
                           f"INSERT INTO meta VALUES ('schema_version', '{SCHEMA_VERSION}');")
            return
        version = self._check_schema()
        for step in range(version, SCHEMA_VERSION):  # one atomic step per schema version
            with self.tx() as db:
                MIGRATIONS[step](db)
                db.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(step + 1),))
        if "flares_runs" not in tables:
            self.db.ddl(FLARES_TABLE)

    def _check_schema(self, read_only: bool = False) -> int:
        """The database's schema version, refused when this nandrig cannot use it (as it is, when read-only)."""
        if "meta" not in self.db.tables():
            raise NandrigError(f"{self.name} is not a nandrig database")
        row = self.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        version = int(row[0]) if row else 0
        if version > SCHEMA_VERSION:
            raise NandrigError(f"{self.name} was written by a newer nandrig (schema {version}; "
                               f"this one reads up to {SCHEMA_VERSION}); upgrade nandrig")
        if version < SCHEMA_VERSION and read_only:
            raise NandrigError(f"{self.name} has schema {version} and is opened read-only: open it once for writing "
                               f"(any campaign command) to upgrade it")
        if version < min(MIGRATIONS):
            raise NandrigError(f"{self.name} has schema {version}, older than this nandrig's {SCHEMA_VERSION}")
        return version

    @contextmanager
    def tx(self) -> Iterator[Database]:
        """One atomic, durable transaction; writers wait for each other."""
        self.db.begin()
        try:
            yield self.db
        except BaseException:
            self.db.rollback()
            raise
        self.db.commit()

    def close(self) -> None:
        self.db.close()

    # -- who runs a campaign now -----------------------------------------------------
    def lock(self, campaign_id: int):
        """Held while this process runs the campaign; it goes with the process (any exit, SIGKILL and power loss
        included), so a "running" campaign whose lock is free was interrupted and can be resumed."""
        return self.db.lock(campaign_id)

    def holder(self, campaign_id: int) -> str | None:
        """Who runs the campaign now ("pid N", and "on HOST" in a PostgreSQL store); None: nobody."""
        return self.db.holder(campaign_id)

    def is_live(self, campaign_id: int) -> bool:
        return self.holder(campaign_id) is not None

    def check_not_live(self, campaign_id: int) -> None:
        """Refuse early (before a rig is opened) a campaign another process runs; the lock itself still decides."""
        if holder := self.holder(campaign_id):
            raise held(campaign_id, holder)

    # -- chips and blocks --------------------------------------------------------
    def chip_id(self, label: str) -> int | None:
        row = self.db.execute("SELECT id FROM chips WHERE label=?", (label,)).fetchone()
        return row[0] if row else None

    def chip_by_unique_id(self, unique_id: bytes) -> dict | None:
        rows = self.db.execute("SELECT id FROM chips WHERE unique_id=?", (unique_id.hex(),)).fetchall()
        return self.chip(rows[0][0]) if rows else None

    def set_unique_id(self, chip_id: int, unique_id: bytes) -> None:
        """A chip recorded before unique IDs were read learns its own (once)."""
        with self.tx() as db:
            db.execute("UPDATE chips SET unique_id=? WHERE id=? AND unique_id IS NULL", (unique_id.hex(), chip_id))

    def add_chip(self, label: str, info, param_page: bytes, sim: tuple[str, int, str] | None,
                 page_map: PageMap | None = None) -> int:
        """A new chip record; its page map is the shuffled MLC order unless the part has another."""
        pm = page_map or PageMap.shuffled_mlc(info.pages_per_block)
        if len(pm.pages) != info.pages_per_block:
            raise NandrigError(f"page map has {len(pm.pages)} pages, the chip {info.pages_per_block} per block")
        with self.tx() as db:
            cid = db.execute(
                "INSERT INTO chips (label, read_id, manufacturer, model, page_bytes, spare_bytes, pages_per_block,"
                " blocks, param_page, page_map, sim_profile, sim_seed, sim_state, created, unique_id)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) RETURNING id",
                (label, info.read_id.hex(), info.manufacturer, info.model, info.page_bytes, info.spare_bytes,
                 info.pages_per_block, info.blocks, param_page, pm.to_json(), *(sim or (None, None, None)),
                 time.time(), info.unique_id.hex() if info.unique_id else None)).fetchone()[0]
            db.executemany("INSERT INTO blocks (chip_id, block) VALUES (?,?)", ((cid, b) for b in range(info.blocks)))
        return cid

    def unscanned(self, chip_id: int, blocks: list[int]) -> list[int]:
        known = dict(self.db.execute("SELECT block, factory_bad IS NOT NULL FROM blocks WHERE chip_id=?", (chip_id,)))
        return [b for b in blocks if not known.get(b, 1)]

    def record_scan(self, chip_id: int, blocks: list[int], bad: list[int]) -> None:
        with self.tx() as db:
            db.executemany("UPDATE blocks SET factory_bad=? WHERE chip_id=? AND block=?",
                           ((int(b in set(bad)), chip_id, b) for b in blocks))

    def chip_labels(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT label FROM chips ORDER BY id").fetchall()]

    def chip(self, chip_id: int) -> dict | None:
        return self.db.row("SELECT * FROM chips WHERE id=?", (chip_id,))

    def geometry(self, chip_id: int) -> Geometry:
        row = self.chip(chip_id)
        return Geometry(row["page_bytes"], row["spare_bytes"], row["pages_per_block"], row["blocks"])

    def page_map(self, chip_id: int) -> PageMap:
        row = self.db.execute("SELECT page_map FROM chips WHERE id=?", (chip_id,)).fetchone()
        if row is None:
            raise NandrigError(f"no chip {chip_id} in {self.name}")
        return PageMap.from_json(row[0])

    def pe_counts(self, chip_id: int, blocks: list[int] | None = None) -> dict[int, int]:
        rows = self.db.execute("SELECT block, pe FROM blocks WHERE chip_id=?", (chip_id,)).fetchall()
        out = dict(rows)
        return {b: out.get(b, 0) for b in blocks} if blocks is not None else out  # (reserve() refuses unknown ones)

    def block_states(self, chip_id: int, blocks: list[int] | None = None) -> dict[int, BlockState]:
        """The chip's blocks' records (only ``blocks``, in their order, when given; a block never recorded is left
        out)."""
        rows = {r[0]: BlockState(r[0], r[1], r[2] or 0, bool(r[3]), r[4]) for r in self.db.execute(
            "SELECT block, pe, pe_uncertain, failed, reserved_by FROM blocks WHERE chip_id=?", (chip_id,))}
        return rows if blocks is None else {b: rows[b] for b in blocks if b in rows}

    def reserve(self, db: Database, chip_id: int, blocks: list[int], campaign_id: int) -> None:
        """Reserve blocks for a campaign inside the caller's transaction; refuse bad or taken ones."""
        rows = {b: (bad, owner) for b, bad, owner in db.execute(
            "SELECT block, factory_bad, reserved_by FROM blocks WHERE chip_id=?", (chip_id,))}
        missing = [b for b in blocks if b not in rows]
        if missing:
            raise NandrigError(f"block {missing[0]} does not exist on this chip (0..{len(rows) - 1})")
        if any(rows[b][0] is None for b in blocks):
            raise NandrigError("blocks must be scanned for factory marks before they are reserved")
        bad = [b for b in blocks if rows[b][0]]
        if bad:
            raise NandrigError(f"block {bad[0]} is a factory bad block; choose a range without "
                               f"{', '.join(map(str, bad[:5]))}")
        taken = [(b, rows[b][1]) for b in blocks if rows[b][1] is not None]
        if taken:
            raise NandrigError(f"block {taken[0][0]} is reserved by campaign {taken[0][1]}")
        db.executemany("UPDATE blocks SET reserved_by=? WHERE chip_id=? AND block=?",
                       ((campaign_id, chip_id, b) for b in blocks))

    def factory_bad(self, chip_id: int, blocks: list[int]) -> list[int]:
        """The scanned blocks among ``blocks`` that carry a factory bad-block mark."""
        marked = {b for (b,) in self.db.execute("SELECT block FROM blocks WHERE chip_id=? AND factory_bad=1",
                                                (chip_id,))}
        return [b for b in blocks if b in marked]

    def check_free(self, chip_id: int, blocks: list[int]) -> None:
        """Refuse blocks a campaign holds (what reserve() would refuse), before anything opens a rig."""
        q = ",".join("?" * len(blocks))
        taken = self.db.execute(f"SELECT block, reserved_by FROM blocks WHERE chip_id=? AND reserved_by IS NOT NULL "
                                f"AND block IN ({q}) ORDER BY block", (chip_id, *blocks)).fetchall() if blocks else []
        if taken:
            raise NandrigError(f"block {taken[0][0]} is reserved by campaign {taken[0][1]}")

    def check_integrity(self) -> None:
        """Refuse to write into a damaged database (SQLite's quick_check): nothing is added to it."""
        if problems := self.db.problems():
            raise NandrigError(f"database {self.name} is damaged ({problems[0]}); nothing was written to it: "
                               "restore a copy, or `nandrig export` what is still readable")

    def check_unreserved(self, chip_id: int, block: int) -> None:
        """Refuse a block a running campaign holds, before a command outside campaigns wears it."""
        row = self.db.execute("SELECT reserved_by FROM blocks WHERE chip_id=? AND block=?", (chip_id, block)).fetchone()
        if row is None:
            raise NandrigError(f"block {block} does not exist on this chip")
        if row[0] is not None:
            raise NandrigError(f"block {block} is reserved by campaign {row[0]}; choose another")

    def add_loose_erase(self, chip_id: int, block: int, failed: bool, detail: str) -> None:
        """An erase outside any campaign (rig selftest): the block's P/E count and an event."""
        with self.tx() as db:
            db.execute(f"UPDATE blocks SET pe = pe + 1, {_FAILED} WHERE chip_id=? AND block=?",
                       (bool(failed), chip_id, block))
            self._event(db, None, "erase", detail)

    # -- campaigns ---------------------------------------------------------------
    def create_campaign(self, chip_id: int, kind: str, params: dict, blocks: list[int], rig_url: str,
                        rig_identity: str, versions: dict, steps: int, target: int = 0) -> int:
        now = time.time()
        with self.tx() as db:
            cid = db.execute(
                "INSERT INTO campaigns (chip_id, kind, params, state, steps, rig_url, target, rig_identity, versions,"
                " created, updated) VALUES (?,?,?,?,?,?,?,?,?,?,?) RETURNING id",
                (chip_id, kind, json.dumps(params, sort_keys=True), "running", steps, rig_url, target, rig_identity,
                 json.dumps(versions, sort_keys=True), now, now)).fetchone()[0]
            self.reserve(db, chip_id, blocks, cid)
            self._event(db, cid, "created", f"{kind} on blocks {blocks[0]}-{blocks[-1]} ({steps} steps)")
        return cid

    def campaign(self, campaign_id: int) -> Campaign:
        row = self.db.execute("SELECT id, chip_id, kind, params, state, step, steps, rig_url, rig_identity, versions,"
                              " context, created, updated, target FROM campaigns WHERE id=?", (campaign_id,)).fetchone()
        if row is None:
            raise NandrigError(f"no campaign {campaign_id} in {self.name}")
        return Campaign(row[0], row[1], row[2], json.loads(row[3]), row[4], row[5], row[6], row[7], row[8],
                        json.loads(row[9]), json.loads(row[10]), row[11], row[12], row[13])

    def move_campaign(self, campaign_id: int, target: int) -> None:
        """The campaign's chip is on another target of its rig now (checked by its unique ID)."""
        with self.tx() as db:
            was = db.execute("SELECT target FROM campaigns WHERE id=?", (campaign_id,)).fetchone()[0]
            db.execute("UPDATE campaigns SET target=? WHERE id=?", (target, campaign_id))
            self._event(db, campaign_id, "moved", f"its chip from target {was} to target {target}")

    def campaigns(self) -> list[Campaign]:
        return [self.campaign(r[0]) for r in self.db.execute("SELECT id FROM campaigns ORDER BY id")]

    def pending(self, campaign_id: int) -> Pending | None:
        row = self.db.execute("SELECT step, session, seq, op, payload, boot FROM journal WHERE campaign_id=?",
                              (campaign_id,)).fetchone()
        return Pending(*row) if row else None

    def journal(self, campaign_id: int, step: int, session: int, seq: int, op: int, payload: bytes, boot: int,
                db: Database | None = None) -> None:
        """The request about to be sent (inside ``db``'s transaction, else in its own)."""
        if db is None:
            with self.tx() as db:
                self.journal(campaign_id, step, session, seq, op, payload, boot, db)
            return
        db.execute("INSERT INTO journal (campaign_id, step, session, seq, op, payload, created, boot) "
                   "VALUES (?,?,?,?,?,?,?,?) ON CONFLICT (campaign_id) DO UPDATE SET step=excluded.step, "
                   "session=excluded.session, seq=excluded.seq, op=excluded.op, payload=excluded.payload, "
                   "created=excluded.created, boot=excluded.boot",
                   (campaign_id, step, session, seq, op, payload, time.time(), boot))

    def clear_journal(self, db: Database, campaign_id: int) -> None:
        """The request in flight is accounted for without a reply (a rig that restarted)."""
        db.execute("DELETE FROM journal WHERE campaign_id=?", (campaign_id,))

    def finish_step(self, db: Database, campaign_id: int, step: int, context: dict | None = None) -> None:
        """Inside the step's transaction: advance the cursor and clear the journal."""
        db.execute("DELETE FROM journal WHERE campaign_id=?", (campaign_id,))
        if context is not None:
            db.execute("UPDATE campaigns SET step=?, context=?, updated=? WHERE id=?",
                       (step + 1, json.dumps(context, sort_keys=True), time.time(), campaign_id))
        else:
            db.execute("UPDATE campaigns SET step=?, updated=? WHERE id=?", (step + 1, time.time(), campaign_id))

    def save_context(self, campaign_id: int, context: dict) -> None:
        with self.tx() as db:
            db.execute("UPDATE campaigns SET context=? WHERE id=?", (json.dumps(context, sort_keys=True), campaign_id))

    def set_state(self, campaign_id: int, state: str, detail: str = "", db: Database | None = None) -> None:
        """The campaign's state (in ``db``'s transaction, else its own); a finished one frees its blocks."""
        if db is None:
            with self.tx() as db:
                self.set_state(campaign_id, state, detail, db)
            return
        db.execute("UPDATE campaigns SET state=?, updated=? WHERE id=?", (state, time.time(), campaign_id))
        if state != "running":
            db.execute("UPDATE blocks SET reserved_by=NULL WHERE reserved_by=?", (campaign_id,))
        self._event(db, campaign_id, state, detail)

    def event(self, campaign_id: int | None, kind: str, detail: str, db: Database | None = None) -> None:
        """An event, in ``db``'s transaction or its own."""
        if db is not None:
            self._event(db, campaign_id, kind, detail)
            return
        with self.tx() as db:
            self._event(db, campaign_id, kind, detail)

    @staticmethod
    def _event(db: Database, campaign_id: int | None, kind: str, detail: str) -> None:
        db.execute("INSERT INTO events (campaign_id, ts, kind, detail) VALUES (?,?,?,?)",
                   (campaign_id, time.time(), kind, detail))

    def events(self, campaign_id: int) -> list[tuple[float, str, str]]:
        return self.db.execute("SELECT ts, kind, detail FROM events WHERE campaign_id=? ORDER BY id",
                               (campaign_id,)).fetchall()

    # -- a step's results, inside its transaction ----------------------------------------
    def add_cycles(self, db: Database, campaign_id: int, chip_id: int, block: int, done: int, failed: bool,
                   requested: int) -> None:
        db.execute(f"UPDATE blocks SET pe = pe + ?, {_FAILED} WHERE chip_id=? AND block=?",
                   (done, bool(failed), chip_id, block))
        if failed:
            self._event(db, campaign_id, "block_failed", f"block {block} failed after {done} of {requested} cycles")

    def add_uncertain(self, db: Database, chip_id: int, block: int, cycles: int) -> None:
        """Cycles the block may have had beyond its counted ones (work a restarted rig never confirmed)."""
        db.execute("UPDATE blocks SET pe_uncertain = pe_uncertain + ? WHERE chip_id=? AND block=?",
                   (cycles, chip_id, block))

    def _pe(self, db: Database, chip_id: int, block: int) -> int:
        return db.execute("SELECT pe FROM blocks WHERE chip_id=? AND block=?", (chip_id, block)).fetchone()[0]

    def add_erase(self, db: Database, campaign_id: int, chip_id: int, step: int, block: int, failed: bool,
                  busy_ns: int) -> None:
        """An ERASE wears the block by one P/E cycle, whether or not the chip reported FAIL."""
        db.execute(f"UPDATE blocks SET pe = pe + 1, {_FAILED} WHERE chip_id=? AND block=?",
                   (bool(failed), chip_id, block))
        self.add_op_time(db, campaign_id, chip_id, step, "erase", block, -1, busy_ns)

    def add_program(self, db: Database, campaign_id: int, chip_id: int, step: int, block: int, page: int,
                    failed: bool, busy_ns: int) -> None:
        self.add_op_time(db, campaign_id, chip_id, step, "program", block, page, busy_ns)
        if failed:
            self._event(db, campaign_id, "program_fail", f"block {block} page {page}")

    def add_checkpoint(self, db: Database, campaign_id: int, step: int, label: str, pe: int,
                       retention_h: float, actual_h: float, temp_c: float, reads: int, offset: int,
                       extra: dict | None = None) -> int:
        return db.execute(
            'INSERT INTO checkpoints (campaign_id, step, label, pe, retention_h, actual_h, temp_c, reads, "offset",'
            " extra) VALUES (?,?,?,?,?,?,?,?,?,?) RETURNING id",
            (campaign_id, step, label, pe, retention_h, actual_h, temp_c, reads, offset,
             json.dumps(extra or {}))).fetchone()[0]

    def add_measurements(self, db: Database, checkpoint_id: int, chip_id: int, pages) -> None:
        """``pages``: (block, page, err_1to0, err_0to1, bits, busy_ns); each at its block's P/E now."""
        pages = list(pages)
        blocks = sorted({p[0] for p in pages})  # theirs alone, not the chip's thousands (a raw read has one)
        pes = {b: (pe, unc) for b, pe, unc in db.execute(
            f"SELECT block, pe, pe_uncertain FROM blocks WHERE chip_id=? AND block IN ({','.join('?' * len(blocks))})",
            (chip_id, *blocks))}
        db.executemany("INSERT INTO measurements (checkpoint_id, block, page, pe, err_1to0, err_0to1, bits, busy_ns, "
                       "pe_uncertain) VALUES (?,?,?,?,?,?,?,?,?)",
                       ((checkpoint_id, b, page, pes[b][0], e10, e01, bits, busy, pes[b][1])
                        for b, page, e10, e01, bits, busy in pages))

    # -- measurements -------------------------------------------------------------
    def rows(self, campaign_id: int) -> list[MeasurementRow]:
        """One row per page read, in checkpoint, block and page order."""
        return [MeasurementRow(*r) for r in self.db.execute(
            'SELECT c.label, m.pe, c.retention_h, c.actual_h, c.temp_c, c.reads, c."offset", m.block, m.page,'
            " m.err_1to0, m.err_0to1, m.bits, m.busy_ns, m.pe_uncertain FROM checkpoints c JOIN measurements m"
            " ON m.checkpoint_id = c.id WHERE c.campaign_id=? ORDER BY c.step, m.block, m.page",
            (campaign_id,))]

    def checkpoint_errors(self, campaign_id: int, last: int) -> list[tuple[int, str, float, int, float, int, int]]:
        """The campaign's ``last`` checkpoints, per page number: (step, label, retention_h, page, mean P/E,
        errors, bits), oldest first."""
        return self.db.execute(
            "SELECT c.step, c.label, c.retention_h, m.page, CAST(AVG(m.pe) AS DOUBLE PRECISION),"
            " CAST(SUM(m.err_1to0 + m.err_0to1) AS BIGINT), CAST(SUM(m.bits) AS BIGINT)"
            " FROM checkpoints c JOIN measurements m ON m.checkpoint_id = c.id WHERE c.id IN"
            " (SELECT id FROM checkpoints WHERE campaign_id=? ORDER BY step DESC LIMIT ?)"
            " GROUP BY c.id, m.page ORDER BY c.step, m.page", (campaign_id, last)).fetchall()

    def checkpoint_at(self, db: Database, campaign_id: int, step: int) -> int | None:
        row = db.execute("SELECT id FROM checkpoints WHERE campaign_id=? AND step=?", (campaign_id, step)).fetchone()
        return row[0] if row else None

    def add_bit_errors(self, db: Database, checkpoint_id: int, block: int, page: int, codes: bytes) -> None:
        db.execute("INSERT INTO bit_errors (checkpoint_id, block, page, codes) VALUES (?,?,?,?)",
                   (checkpoint_id, block, page, codes))

    def bit_errors(self, campaign_id: int) -> list[tuple[str, int, int, int, bytes]]:
        """(label, P/E, block, page, codes) per page mapped, in checkpoint, block and page order."""
        return [(label, pe, block, page, bytes(codes)) for label, pe, block, page, codes in self.db.execute(
            "SELECT c.label, m.pe, b.block, b.page, b.codes FROM checkpoints c JOIN bit_errors b ON b.checkpoint_id"
            " = c.id JOIN measurements m ON m.checkpoint_id = b.checkpoint_id AND m.block = b.block AND m.page ="
            " b.page WHERE c.campaign_id=? ORDER BY c.step, b.block, b.page", (campaign_id,))]

    def bit_error_reads(self, campaign_id: int) -> list[tuple[str, int, int, int, int, int, bytes]]:
        """(label, P/E, read offset, block, page, busy ns, codes) per page mapped, in checkpoint, block and page
        order: a soft read's levels are its checkpoints' offsets."""
        return [(label, pe, off, block, page, busy, bytes(codes)) for label, pe, off, block, page, busy, codes in
                self.db.execute(
                    'SELECT c.label, m.pe, c."offset", b.block, b.page, m.busy_ns, b.codes FROM checkpoints c JOIN'
                    " bit_errors b ON b.checkpoint_id = c.id JOIN measurements m ON m.checkpoint_id ="
                    " b.checkpoint_id AND m.block = b.block AND m.page = b.page WHERE c.campaign_id=?"
                    " ORDER BY c.step, b.block, b.page", (campaign_id,))]

    def add_flares_run(self, chip_label: str, block: int, page: int, result: dict, campaign_id: int | None = None,
                       db: Database | None = None) -> int:
        """A FLARES validation's result (in ``db``'s transaction, else its own)."""
        if db is None:
            with self.tx() as db:
                return self.add_flares_run(chip_label, block, page, result, campaign_id, db)
        return db.execute("INSERT INTO flares_runs (chip_label, block, page, result, created, campaign_id) VALUES "
                          "(?,?,?,?,?,?) RETURNING id", (chip_label, block, page, json.dumps(result), time.time(),
                                                         campaign_id)).fetchone()[0]

    def flares_runs(self) -> list[tuple[int, str, int, int, dict, int | None]]:
        """Every validation: id, chip label, block, page, result, and the campaign that made it (None: none)."""
        return [(i, c, b, p, json.loads(r), cid) for i, c, b, p, r, cid in self.db.execute(
            "SELECT id, chip_label, block, page, result, campaign_id FROM flares_runs ORDER BY id")]

    def flares_run_of(self, campaign_id: int) -> dict | None:
        """The result a flares-validate campaign stored when it finished."""
        row = self.db.execute("SELECT result FROM flares_runs WHERE campaign_id=?", (campaign_id,)).fetchone()
        return json.loads(row[0]) if row else None

    # -- program-driven campaigns: their requests and replies ---------------------------
    def rig_calls(self, campaign_id: int) -> list[RigCall]:
        """The calls since the campaign's last checkpoint (:meth:`program_state`), or its start."""
        return [RigCall(op, bytes(payload), status, bytes(reply), boot) for op, payload, status, reply, boot in
                self.db.execute("SELECT op, payload, status, reply, boot FROM rig_calls WHERE campaign_id=? "
                                "ORDER BY n", (campaign_id,))]

    def program_state(self, campaign_id: int) -> ProgramState | None:
        row = self.db.execute("SELECT n, boot, state FROM program_states WHERE campaign_id=?",
                              (campaign_id,)).fetchone()
        return ProgramState(row[0], row[1], bytes(row[2])) if row else None

    def save_program_state(self, campaign_id: int, at: ProgramState) -> None:
        """A checkpoint: the program's state after its first ``at.n`` requests, which it replaces (a resumed run
        starts from it, so their calls are dropped in the same transaction)."""
        with self.tx() as db:
            db.execute("INSERT INTO program_states (campaign_id, n, boot, state) VALUES (?,?,?,?) ON CONFLICT "
                       "(campaign_id) DO UPDATE SET n=excluded.n, boot=excluded.boot, state=excluded.state",
                       (campaign_id, at.n, at.boot, at.state))
            db.execute("DELETE FROM rig_calls WHERE campaign_id=? AND n<?", (campaign_id, at.n))

    def set_result(self, db: Database, campaign_id: int, result: dict) -> None:
        """Inside the transaction that ends the campaign."""
        db.execute("INSERT INTO campaign_results (campaign_id, result) VALUES (?,?)",
                   (campaign_id, jsonsafe.dumps(result, sort_keys=True)))

    def result_of(self, campaign_id: int) -> dict | None:
        row = self.db.execute("SELECT result FROM campaign_results WHERE campaign_id=?", (campaign_id,)).fetchone()
        return json.loads(row[0]) if row else None

    def add_rig_call(self, db: Database, campaign_id: int, n: int, call: RigCall) -> None:
        """Inside the call's transaction (with its wear and :meth:`finish_step`)."""
        db.execute("INSERT INTO rig_calls (campaign_id, n, op, payload, status, reply, boot) VALUES (?,?,?,?,?,?,?)",
                   (campaign_id, n, *call))

    def add_op_time(self, db: Database, campaign_id: int, chip_id: int, step: int, op: str, block: int, page: int,
                    busy_ns: int) -> None:
        db.execute("INSERT INTO op_times VALUES (?,?,?,?,?,?,?)",
                   (campaign_id, step, op, block, page, self._pe(db, chip_id, block), busy_ns))

    def add_energy(self, db: Database, campaign_id: int, step: int, e) -> None:
        """``e``: an ENERGY reply (protocol ENERGY_REPLY)."""
        db.execute("INSERT INTO op_energy VALUES (?,?,?,?,?,?,?)",
                   (campaign_id, step, e.busy_pj, e.busy_ns, e.transfer_pj, e.transfer_ns, e.idle_uw))

    def op_times(self, campaign_id: int) -> list[OpTime]:
        return [OpTime(*r) for r in self.db.execute(
            "SELECT op, block, page, pe, busy_ns FROM op_times WHERE campaign_id=? ORDER BY step", (campaign_id,))]

    def operations(self, campaign_id: int) -> list[tuple]:
        """Every timed operation in order: (op, block, page, pe, busy_ns, busy_pj, transfer_pj, transfer_ns,
        idle_uw), the energy fields None where the operation was not metered."""
        return [tuple(r) for r in self.db.execute(
            "SELECT t.op, t.block, t.page, t.pe, t.busy_ns, e.busy_pj, e.transfer_pj, e.transfer_ns, e.idle_uw"
            " FROM op_times t LEFT JOIN op_energy e ON e.campaign_id = t.campaign_id AND e.step = t.step"
            " WHERE t.campaign_id=? ORDER BY t.step", (campaign_id,))]

    def op_energy(self, campaign_id: int) -> list[tuple[OpTime, tuple[int, int, int, int, int]]]:
        """The metered operations: each with (busy_pj, busy_ns, transfer_pj, transfer_ns, idle_uw)."""
        return [(OpTime(*r[:5]), tuple(r[5:])) for r in self.db.execute(
            "SELECT t.op, t.block, t.page, t.pe, t.busy_ns, e.busy_pj, e.busy_ns, e.transfer_pj, e.transfer_ns,"
            " e.idle_uw FROM op_times t JOIN op_energy e ON e.campaign_id = t.campaign_id AND e.step = t.step"
            " WHERE t.campaign_id=? ORDER BY t.step", (campaign_id,))]
