"""The two database engines under the store: SQLite (one file per bench, the embedded default) and PostgreSQL
(one server for a lab's hosts, ``postgresql://…``).

The store speaks one SQL dialect, SQLite's with ``?`` parameters, kept to what both engines share (RETURNING,
ON CONFLICT, CASE); an engine supplies what differs: opening, the schema's types, transactions that serialize
writers, the per-campaign lock that says a campaign is live, and where virtual chips' state files go.
"""
from __future__ import annotations

import fcntl
import os
import re
import socket
import sqlite3
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from nandrig.errors import NandrigError

URL_SCHEMES = ("postgresql://", "postgres://")
# a lab's transactions and campaign locks in PostgreSQL's advisory-lock space ('nand')
LOCK_KEY = 0x6E616E64


def connection_errors() -> tuple[type[Exception], ...]:
    """What a lost connection or a failing disk raises: a campaign stops there and resumes later. (psycopg is
    imported only for a PostgreSQL store: a tenth of a second at every start otherwise.)"""
    pg = sys.modules.get("psycopg")
    return (sqlite3.OperationalError, pg.OperationalError) if pg else (sqlite3.OperationalError,)


def database_errors() -> tuple[type[Exception], ...]:
    """Any error an engine raises."""
    pg = sys.modules.get("psycopg")
    return (sqlite3.DatabaseError, pg.Error) if pg else (sqlite3.DatabaseError,)


class Database(Protocol):
    name: str  # how messages name it (a URL without its password)
    rigs: Path  # where this store's virtual chips keep their state files

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any: ...
    def ddl(self, sql: str) -> None: ...
    def executemany(self, sql: str, rows) -> None: ...
    def row(self, sql: str, params: Sequence[Any] = ()) -> dict | None: ...
    def tables(self) -> set[str]: ...
    def create(self, script: str) -> None: ...
    def begin(self) -> None: ...
    def commit(self) -> None: ...
    def rollback(self) -> None: ...
    def problems(self) -> list[str]: ...
    def lock(self, campaign_id: int): ...
    def holder(self, campaign_id: int) -> str | None: ...
    def close(self) -> None: ...


def is_url(location: str | Path) -> bool:
    return isinstance(location, str) and location.startswith(URL_SCHEMES)


def open_database(location: str | Path, read_only: bool = False) -> Database:
    """``location``: a PostgreSQL URL, else an SQLite file."""
    if is_url(location):
        return PostgresDatabase(str(location), read_only)
    return SqliteDatabase(Path(location), read_only)


def _read_only_fs(folder: Path) -> bool:
    """Whether ``folder`` is on a file system mounted read-only (root's write access says nothing of that)."""
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def held(campaign_id: int, holder: str) -> NandrigError:
    return NandrigError(f"campaign {campaign_id} is running in another process ({holder}); "
                        "wait for it to end or stop that process")


class SqliteDatabase:
    """SQLite in WAL mode with ``synchronous=FULL`` (a commit survives a power cut), writers serialized by
    BEGIN IMMEDIATE; a campaign is live while a process holds the flock on its lock file beside the database
    (the kernel releases it on any exit, SIGKILL included)."""

    def __init__(self, path: Path, read_only: bool) -> None:
        self.path, self.name = path, str(path)
        self.rigs = path.with_name(path.name + ".rigs")
        self.locks = Path(f"{path}.locks")
        self._inode: int | None = None  # the file written to (read-only stores write nothing)
        self._lost = ""
        if path.is_dir():
            raise NandrigError(f"{path} is a directory, not a database file")
        try:
            if read_only:
                if not path.exists():
                    raise NandrigError(f"no database at {path}")
                self.con = self._open_read_only(path)
                return
            self.con = sqlite3.connect(path, isolation_level=None, timeout=30)
            self.con.execute("PRAGMA journal_mode=WAL")
            self.con.execute("PRAGMA synchronous=FULL")
            self.con.execute("PRAGMA foreign_keys=ON")
            self._inode = path.stat().st_ino
        except sqlite3.OperationalError as e:
            raise NandrigError(f"cannot open database {path}: {e}") from None
        except sqlite3.DatabaseError as e:
            raise NandrigError(f"{path} is not a nandrig database: {e}") from None

    @staticmethod
    def _open_read_only(path: Path) -> sqlite3.Connection:
        """For looking: ``mode=ro`` where SQLite can share the WAL's index beside the file; on a read-only file
        system or folder (an archive, a shared mount), where it cannot, ``immutable`` (nothing beside the file is
        written or locked), unless a WAL holds commits not yet in the file, which that would not see."""
        uri = path.resolve().as_uri()
        if os.access(path.parent, os.W_OK) and not _read_only_fs(path.parent):
            return sqlite3.connect(f"{uri}?mode=ro", uri=True, isolation_level=None, timeout=30)
        wal = path.with_name(path.name + "-wal")
        if wal.exists() and wal.stat().st_size > 0:
            raise NandrigError(f"{path} is on a read-only file system and its write-ahead log {wal.name} holds "
                               "commits not yet in it: copy the database with its -wal file somewhere writable")
        return sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        return self.con.execute(sql, params)

    def ddl(self, sql: str) -> None:
        """A table made in SQLite's spelling of the schema (the store's one spelling)."""
        self.con.execute(sql)

    def executemany(self, sql: str, rows) -> None:
        self.con.executemany(sql, rows)

    def row(self, sql: str, params: Sequence[Any] = ()) -> dict | None:
        cur = self.con.execute(sql, params)
        values = cur.fetchone()
        return dict(zip((d[0] for d in cur.description), values)) if values else None

    def tables(self) -> set[str]:
        return {r[0] for r in self.con.execute("SELECT name FROM sqlite_master WHERE type='table'")}

    def create(self, script: str) -> None:
        # one atomic script; SQLite's own parser splits it (comments may hold semicolons)
        self.con.executescript(f"BEGIN IMMEDIATE;\n{script}\nCOMMIT;")

    def begin(self) -> None:
        self._check_still_there()
        self.con.execute("BEGIN IMMEDIATE")

    def commit(self) -> None:
        self.con.execute("COMMIT")

    def rollback(self) -> None:
        self.con.execute("ROLLBACK")

    def problems(self) -> list[str]:
        try:
            found = [r[0] for r in self.con.execute("PRAGMA quick_check(3)")]
        except sqlite3.DatabaseError as e:
            found = [str(e)]
        return [] if found == ["ok"] else found

    def _check_still_there(self) -> None:
        """A database deleted or replaced while open would swallow every later commit into a file no one can
        open again: what it holds is copied out (SQLite's VACUUM INTO, from the open file) and the work stops."""
        if self._lost:
            raise NandrigError(self._lost)
        if self._inode is None:
            return
        try:
            inode = self.path.stat().st_ino
        except FileNotFoundError:
            inode = None
        if inode == self._inode:
            return
        saved = self.path.with_name(self.path.name + ".recovered")
        saved.unlink(missing_ok=True)
        self.con.execute("VACUUM INTO ?", (str(saved),))
        self._lost = (f"database {self.path} was {'deleted' if inode is None else 'replaced'} while in use; everything "
                      f"committed to it is in {saved}: move that to {self.path.name} and resume")
        raise NandrigError(self._lost)

    def _lock_file(self, campaign_id: int) -> Path:
        return self.locks / f"campaign-{campaign_id}.lock"

    @contextmanager
    def lock(self, campaign_id: int) -> Iterator[None]:
        path = self._lock_file(campaign_id)
        path.parent.mkdir(exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise held(campaign_id, f"pid {holder}") from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            os.close(fd)  # closing releases the lock

    def holder(self, campaign_id: int) -> str | None:
        path = self._lock_file(campaign_id)
        if not path.exists():
            return None
        fd = os.open(path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return None
        except BlockingIOError:
            return f"pid {os.read(fd, 32).decode(errors='replace').strip() or '?'}"
        finally:
            os.close(fd)

    def close(self) -> None:
        self.con.close()
        if self._lost and not self.path.exists():  # the deleted file's WAL would be applied to whatever comes back
            for suffix in ("-wal", "-shm"):
                self.path.with_name(self.path.name + suffix).unlink(missing_ok=True)


# SQLite's types as PostgreSQL spells them: 64-bit integers and doubles, so values round-trip unchanged
_PG_TYPES = [(re.compile(r"\bid INTEGER PRIMARY KEY\b"), "id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"),
             (re.compile(r"\bINTEGER\b"), "BIGINT"), (re.compile(r"\bREAL\b"), "DOUBLE PRECISION"),
             (re.compile(r"\bBLOB\b"), "BYTEA"), (re.compile(r"^(\s*)offset\b", re.M), r'\1"offset"')]


def postgres_schema(script: str) -> str:
    for pattern, replacement in _PG_TYPES:
        script = pattern.sub(replacement, script)
    return script


def first_line(e: Exception) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


class PostgresDatabase:
    """A PostgreSQL server: commits are durable (the server's own WAL and fsync), writers take one
    transaction-level advisory lock so a transaction sees what it reads as SQLite's BEGIN IMMEDIATE would, and a
    campaign is live while a session holds its advisory lock (the server drops it with the connection, when the
    process dies on any host)."""

    def __init__(self, url: str, read_only: bool) -> None:
        import psycopg

        parts = urlsplit(url)
        netloc = parts.netloc.rsplit("@", 1)[-1]
        user = parts.username
        self.name = urlunsplit(parts._replace(netloc=f"{user}@{netloc}" if user else netloc))
        try:
            self.con = psycopg.connect(url, autocommit=True, connect_timeout=10,
                                       application_name=f"nandrig pid {os.getpid()} on {socket.gethostname()}")
        except psycopg.Error as e:
            raise NandrigError(f"cannot reach database {self.name}: {first_line(e)}") from None
        if read_only:
            self.con.execute("SET default_transaction_read_only = on")
        info = self.con.info
        place = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{info.host}-{info.port}-{info.dbname}")
        state = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
        self.rigs = state / "nandrig" / f"{place}.rigs"

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.con.execute(sql.replace("?", "%s"), params or None)

    def ddl(self, sql: str) -> None:
        self.con.execute(postgres_schema(sql))

    def executemany(self, sql: str, rows) -> None:
        rows = list(rows)
        if rows:
            self.con.cursor().executemany(sql.replace("?", "%s"), rows)

    def row(self, sql: str, params: Sequence[Any] = ()) -> dict | None:
        from psycopg.rows import dict_row

        return self.con.cursor(row_factory=dict_row).execute(sql.replace("?", "%s"), params or None).fetchone()

    def tables(self) -> set[str]:
        return {r[0] for r in self.con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()")}

    def create(self, script: str) -> None:
        self.begin()
        try:
            if "meta" not in self.tables():  # another host may have made it while this one waited
                self.con.execute(postgres_schema(script))
        except BaseException:
            self.rollback()
            raise
        self.commit()

    def begin(self) -> None:
        self.con.execute("BEGIN")
        self.con.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))

    def commit(self) -> None:
        self.con.execute("COMMIT")

    def _usable(self) -> bool:
        """Whether cleanup may speak on the connection. A Ctrl-C that lands while psycopg sends a query or collects
        its reply can leave a reply uncollected (its cancel-and-drain covers most, not all, moments): every later
        query would fail 'another command is already in progress' and replace the interrupt. Such a connection
        is closed instead; the server rolls its transaction back and frees its locks, as when a process dies."""
        from psycopg.pq import TransactionStatus

        if not self.con.closed and self.con.pgconn.transaction_status == TransactionStatus.ACTIVE:
            self.con.close()
        return not self.con.closed

    def rollback(self) -> None:
        if self._usable():
            self.con.execute("ROLLBACK")

    def problems(self) -> list[str]:
        return []  # the server checks its own pages; a failing one answers every query with an error

    @contextmanager
    def lock(self, campaign_id: int) -> Iterator[None]:
        if not self.con.execute("SELECT pg_try_advisory_lock(%s, %s)", (LOCK_KEY, campaign_id)).fetchone()[0]:
            raise held(campaign_id, self.holder(campaign_id) or "?")
        try:
            yield
        finally:
            if self._usable():
                self.con.execute("SELECT pg_advisory_unlock(%s, %s)", (LOCK_KEY, campaign_id))

    def holder(self, campaign_id: int) -> str | None:
        row = self.con.execute(
            "SELECT coalesce(nullif(a.application_name, ''), 'server pid ' || l.pid) FROM pg_locks l"
            " LEFT JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted"
            " AND l.classid = %s::bigint::oid AND l.objid = %s::bigint::oid AND l.objsubid = 2 LIMIT 1",
            (LOCK_KEY, campaign_id)).fetchone()
        return row[0].removeprefix("nandrig ") if row else None

    def close(self) -> None:
        self.con.close()
