"""Characterization campaigns: registered, created, run and resumed; plans of rig requests executed so they
survive a kill.

A campaign is a plan of steps rebuilt from its stored parameters, each step
one rig request (or one wait). The store holds a cursor. Before a request is
sent, its (session, seq, bytes) is journaled and committed; when the reply
arrives, its results, the P/E counts, the cursor and the cleared journal are
committed in one transaction. On resume a journaled request is sent again
under its old session and seq: the rig answers it from its reply cache if it
had already executed it, and executes it if it never arrived. No cycle is
lost or counted twice, and no measurement is taken twice.
"""
from __future__ import annotations

import dataclasses
import platform
import sqlite3
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from nandrig import __version__
from nandrig import protocol as P
from nandrig.chip.geometry import Geometry
from nandrig.errors import NandrigError
from nandrig.host.kinds import KINDS, KindParams, kind
from nandrig.host.kinds.steps import Step, contiguous
from nandrig.host.oven import Oven, make_oven
from nandrig.host.locks import CampaignLock, check_not_live, is_live
from nandrig.host.rig import MEASURE_DTYPE, Rig, RigHeld, decode_cycle_reply
from nandrig.host.store import Campaign, Store
from nandrig.chip.onfi import StatusBit
from nandrig.protocol import Err, HelloFlag, Opcode


def sim_state_path(db: Path, profile: str, seed: int, known: bool = False) -> Path:
    """Where a simulated chip's state lives: beside the database, whatever the current folder (the store
    records it but it is always found from the database's own place, so the two move together). ``known``:
    the store has this chip, so a missing state file is a lost history, not a fresh chip."""
    folder = db.with_name(db.name + ".rigs")
    path = folder / f"{profile}-seed{seed}.state"
    if known and not path.exists():
        raise NandrigError(f"the virtual chip sim:{profile}:{seed} has a history in {db} but its state file "
                           f"{path} is missing: restore it (it moves with the database)")
    folder.mkdir(parents=True, exist_ok=True)
    return path


def dead_sessions(store: Store, take_over: bool = False) -> Callable[[int], bool]:
    """Whether a session holding a rig may be taken over: one this database's campaigns used and whose process
    is gone (the campaign is not live on this host), or any with ``take_over``."""
    def dead(holder: int) -> bool:
        return take_over or any(holder in c.context.get("sessions", ()) and not is_live(store.path, c.id)
                                for c in store.campaigns())
    return dead


def open_for_chip(store: Store, url: str, profile: str, seed: int, chip_label: str | None = None,
                  wiring: str | None = None, take_over: bool = False, **link) -> tuple[Rig, int]:
    """Open the rig and find or register its chip. Simulated chips keep their state next to the database
    (``wiring``: a simulated adapter's). A rig held by another session is refused unless ``take_over`` or the
    session was one of this database's campaigns whose process is gone. ``link``: the Rig's link settings."""
    if url == "sim":
        label = f"sim:{profile}:{seed}"
        chip_id = store.chip_id(label)
        state = str(sim_state_path(store.path, profile, seed, known=chip_id is not None))
        rig = Rig.open("sim", chip=profile, seed=seed, state=state, wiring=wiring,
                       take_over=dead_sessions(store, take_over), **link)
        sim = (profile, seed, str(Path(state).resolve()))
    else:
        rig = Rig.open(url, take_over=dead_sessions(store, take_over), **link)
        sim = None
    try:
        info = rig.info()
        info.require_chip()
        uid = info.unique_id
        if url != "sim":
            known = store.chip_by_unique_id(uid) if uid and not chip_label else None
            if known is not None:
                label = known["label"]
            elif chip_label or uid:
                label = chip_label or f"uid:{uid.hex()}"
            else:
                raise NandrigError(f"the chip on {url} gives no unique ID (ONFI READ UNIQUE ID), so nothing tells it "
                                   f"from another {info.model}: name it with --chip-label, and use that name for it "
                                   f"every time")
            chip_id = store.chip_id(label)
        if uid and (owner := store.chip_by_unique_id(uid)) is not None and owner["id"] != chip_id:
            raise NandrigError(f"the chip on {url} is {owner['label']} in {store.path} (unique ID {uid.hex()}), "
                               f"not {label}")
        if chip_id is None:
            chip_id = store.add_chip(label, info, rig.read_param_page(), sim)
        else:
            row = store.chip(chip_id)
            if (row["page_bytes"], row["pages_per_block"], row["blocks"]) != (info.page_bytes, info.pages_per_block, info.blocks):
                raise NandrigError(f"the chip on {url} does not match {label} in {store.path}")
            check_identity(store, row, info, url)
    except BaseException:
        rig.close()
        raise
    return rig, chip_id


def check_identity(store: Store, row, info, url: str) -> None:
    """The chip on the rig is the physical chip of this record (by unique ID), or the record learns its ID."""
    uid = info.unique_id.hex() if info.unique_id else None
    if row["unique_id"] is None:
        if uid:  # recorded before unique IDs were read: from now on it is this chip
            store.set_unique_id(row["id"], info.unique_id)
        return
    if uid != row["unique_id"]:
        now = f"unique ID {uid}" if uid else "no unique ID"
        raise NandrigError(f"the chip on {url} ({now}) is not {row['label']} (unique ID {row['unique_id']}) "
                           f"in {store.path}: put that chip back, or give this one its own --chip-label")


def versions(rig: Rig) -> dict:
    return {"nandrig": __version__, "python": platform.python_version(), "numpy": np.__version__,
            "platform": platform.platform(), "rig": rig.hello_info.identity,
            "protocol": ".".join(map(str, rig.hello_info.version))}


def create(store: Store, rig: Rig, chip_id: int, kind_name: str, params: KindParams | dict, url: str,
           skip_bad: bool = False, echo: Callable[[str], None] = lambda s: None) -> int:
    """A new campaign of ``kind_name`` (its parameters as the kind's dataclass, or a mapping of its fields).
    ``skip_bad``: leave the factory bad blocks among them out (saying so) instead of refusing them."""
    k = kind(kind_name)
    p = params if isinstance(params, k.params) else k.params.from_mapping(params)
    row = store.chip(chip_id)
    g = Geometry(row["page_bytes"], row["spare_bytes"], row["pages_per_block"], row["blocks"])
    k.plan(p, g)  # the parameters are checked against the chip before its blocks are scanned
    todo = store.unscanned(chip_id, list(p.blocks))
    for run_ in contiguous(todo):  # read the factory marks before anything touches these blocks
        store.record_scan(chip_id, run_, rig.scan_bad(run_[0], len(run_)))
    bad = store.factory_bad(chip_id, list(p.blocks))
    if bad and skip_bad:
        good = tuple(b for b in p.blocks if b not in bad)
        if not good:
            raise NandrigError(f"every block of --blocks is a factory bad block ({_listing(bad)})")
        echo(f"skipping factory bad block{'s' if len(bad) > 1 else ''} {_listing(bad)}: "
             f"{len(good)} of {len(p.blocks)} blocks left")
        p = dataclasses.replace(p, blocks=good)
    steps = k.plan(p, g)
    cid = store.create_campaign(chip_id, kind_name, p.to_mapping(), list(p.blocks), url, rig.hello_info.identity,
                                versions(rig), len(steps))
    store.save_context(cid, {"sessions": [rig.session]})  # before anything else: see dead_sessions()
    return cid


def format_blocks(blocks: list[int]) -> str:
    """Sorted blocks as --blocks writes them: ``16-27,29-31``."""
    runs: list[list[int]] = []
    for b in blocks:
        if runs and b == runs[-1][1] + 1:
            runs[-1][1] = b
        else:
            runs.append([b, b])
    return ",".join(f"{a}-{z}" if z > a else f"{a}" for a, z in runs)


def _listing(blocks: list[int], most: int = 8) -> str:
    return ", ".join(map(str, blocks[:most])) + (f" and {len(blocks) - most} more" if len(blocks) > most else "")


def open_for_campaign(store: Store, c: Campaign, url: str | None = None, take_over: bool = False, **link) -> Rig:
    row = store.chip(c.chip_id)
    if row["sim_profile"] is not None:
        state = sim_state_path(store.path, row["sim_profile"], row["sim_seed"], known=True)
        rig = Rig.open("sim", chip=row["sim_profile"], seed=row["sim_seed"], state=str(state),
                       take_over=dead_sessions(store, take_over), **link)
    else:
        rig = Rig.open(url or c.rig_url, take_over=dead_sessions(store, take_over), **link)
    try:
        info = rig.info()
        info.require_chip()
        check_identity(store, row, info, url or c.rig_url)
    except BaseException:
        rig.close()
        raise
    return rig


def run(store: Store, rig: Rig, campaign_id: int, progress: bool = True) -> Campaign:
    with CampaignLock(store.path, campaign_id):
        return _run(store, rig, campaign_id, progress)


def _run(store: Store, rig: Rig, campaign_id: int, progress: bool) -> Campaign:
    c = store.campaign(campaign_id)
    bar = _progress_bar(c) if progress and sys.stderr.isatty() else None
    try:
        runner = Runner(store, rig, campaign_id, make_oven(c.params.get("oven", "virtual")),
                        progress=(lambda done, total: bar.update(done - bar.n)) if bar else None)
        if bar:
            bar.update(runner.c.step)
        return runner.run()
    finally:
        if bar:
            bar.close()


def _progress_bar(c: Campaign):
    from tqdm import tqdm

    return tqdm(total=c.steps, desc=f"campaign {c.id} ({c.kind})", unit="step", file=sys.stderr)


def resume(store: Store, campaign_id: int | None = None, url: str | None = None,
           echo: Callable[[str], None] = print, take_over: bool = False, **link) -> list[Campaign]:
    todo = [c for c in store.campaigns() if c.state == "running" and (campaign_id is None or c.id == campaign_id)]
    if campaign_id is not None and not todo:
        c = store.campaign(campaign_id)
        raise NandrigError(f"campaign {campaign_id} is {c.state}; nothing to resume")
    if campaign_id is None:  # campaigns live in another process are theirs; a named one meets its lock in run()
        for c in [c for c in todo if is_live(store.path, c.id)]:
            echo(f"campaign {c.id} is running in another process; left to it")
            todo.remove(c)
    if not todo:
        echo("nothing to resume")
    for c in todo:  # before any rig is opened: a rig opened is a rig taken
        check_not_live(store.path, c.id)
    done = []
    for c in todo:
        with open_for_campaign(store, c, url, take_over, **link) as rig:
            echo(f"resuming campaign {c.id} ({c.kind}) at step {c.step} of {c.steps}")
            done.append(run(store, rig, c.id))
    return done


def plan(kind_name: str, params: Mapping, g: Geometry) -> list[Step]:
    """A campaign's steps, from its kind and its stored parameters."""
    k = kind(kind_name)
    return k.plan(k.params.from_mapping(params), g)


# -- execution ----------------------------------------------------------------------
# replies that refuse the request itself: a retry or a resume meets the same answer
REFUSALS = frozenset({Err.BAD_FRAME, Err.UNKNOWN_COMMAND, Err.VERSION_MISMATCH, Err.OUT_OF_RANGE, Err.BAD_BLOCK,
                      Err.UNSUPPORTED, Err.BAD_PARAMETER})


def cancel(store: Store, campaign_id: int) -> Campaign:
    """End a campaign that is not running anywhere: its blocks are freed, their wear stays recorded."""
    c = store.campaign(campaign_id)
    if c.state != "running":
        raise NandrigError(f"campaign {campaign_id} is {c.state}; nothing to cancel")
    if is_live(store.path, campaign_id):
        raise NandrigError(f"campaign {campaign_id} is running in another process; stop it (Ctrl-C) first")
    store.set_state(campaign_id, "cancelled", f"cancelled at step {c.step} of {c.steps}")
    return store.campaign(campaign_id)


def display_state(store: Store, c: Campaign) -> str:
    """running (a process holds it), interrupted (resumable), failed, cancelled or done."""
    if c.state == "running":
        return "running" if is_live(store.path, c.id) else "interrupted"
    return c.state
class Runner:
    def __init__(self, store: Store, rig: Rig, campaign_id: int, oven: Oven | None,
                 progress: Callable[[int, int], None] | None = None) -> None:
        self.store, self.rig, self.oven, self.progress = store, rig, oven, progress
        self.c = store.campaign(campaign_id)
        chip = store.chip(self.c.chip_id)
        self.g = Geometry(chip["page_bytes"], chip["spare_bytes"], chip["pages_per_block"], chip["blocks"])
        self.steps = plan(self.c.kind, self.c.params, self.g)
        if len(self.steps) != self.c.steps:
            raise NandrigError(f"campaign {self.c.id}'s plan has {len(self.steps)} steps, the store says "
                               f"{self.c.steps}: it was made by another nandrig version")
        self.context = dict(self.c.context)

    def run(self) -> Campaign:
        if self.c.state != "running":
            return self.c
        pending = self.store.pending(self.c.id)
        cursor = self.c.step
        # the sessions this campaign used: a rig still held by one after its process died is taken back
        sessions = [x for x in self.context.get("sessions", []) if x != self.rig.session]
        self.context["sessions"] = [*sessions, self.rig.session][-8:]
        self.store.save_context(self.c.id, self.context)
        if pending is not None:  # a request was in flight when the host stopped: collect its reply
            new_session = self.rig.session
            self.rig.hello(session=pending.session, flags=HelloFlag.TAKE_OVER)
            reply = self.rig.call(Opcode(pending.op), pending.payload, seq=pending.seq, ok=tuple(Err))
            self._apply(pending.step, self.steps[pending.step], reply)
            self.rig.hello(session=new_session, flags=HelloFlag.TAKE_OVER)
            self.store.event(self.c.id, "resumed", f"step {pending.step} recovered from the rig's reply cache")
            cursor = pending.step + 1
        for i in range(cursor, len(self.steps)):
            try:
                self._execute(i, self.steps[i])
            except RigHeld as e:
                raise NandrigError(f"campaign {self.c.id} stopped before step {i} of {len(self.steps)}, its rig taken "
                                   f"over: {e}; `nandrig resume --take-over` continues it") from None
            if self.progress:
                self.progress(i + 1, len(self.steps))
        self.store.set_state(self.c.id, "done", f"{len(self.steps)} steps")
        return self.store.campaign(self.c.id)

    def _execute(self, i: int, step: Step) -> None:
        if step.op is None:
            self._oven(i, step)
            return
        # the rig cannot tell two hosts' requests apart: a HELLO before each step finds out whether another host
        # took it over (RigHeld ends the run, the campaign stays resumable)
        self.rig.hello()
        seq = self.rig.next_seq()
        self.store.journal(self.c.id, i, self.rig.session, seq, int(step.op), step.payload)
        reply = self.rig.call(step.op, step.payload, seq=seq, ok=tuple(Err))
        self._apply(i, step, reply)

    def _oven(self, i: int, step: Step) -> None:
        """A retention wait through the oven; its start is committed first so a resume waits only the rest."""
        key = f"oven_{i}"
        if key not in self.context:
            self.context[key] = {"started": time.time()}
            self.store.save_context(self.c.id, self.context)
        done = self.oven.wait(step.meta, self.context[key])
        self.context[key].update(done)
        self._add_time(done)
        with self.store.tx() as db:
            self.store.finish_step(db, self.c.id, i, self.context)

    def _add_time(self, done: dict) -> None:
        self.context["equiv_h"] = self.context.get("equiv_h", 0.0) + done["equiv_h"]
        self.context["actual_h"] = self.context.get("actual_h", 0.0) + done["actual_h"]
        self.context["temp_c"] = done["temp_c"]

    def _apply(self, i: int, step: Step, reply) -> None:
        """Record a reply's results and finish the step, in one transaction."""
        if reply.status not in (Err.OK, Err.CHIP_FAIL):
            why = f"rig refused step {i} ({step.kind}): {Err(reply.status).name}"
            if reply.status in REFUSALS:  # the same request would be refused again: resuming cannot help
                self.store.set_state(self.c.id, "failed", why)
                raise NandrigError(f"{why}; campaign {self.c.id} failed (its wear is kept)")
            raise NandrigError(why)
        with self.store.tx() as db:
            getattr(self, f"_record_{step.kind}")(db, i, step, reply)
            self.store.finish_step(db, self.c.id, i, self.context)

    def _record_cycle(self, db: sqlite3.Connection, i: int, step: Step, reply) -> None:
        blocks = step.meta["blocks"]
        done, failed = decode_cycle_reply(reply.payload, blocks[0], len(blocks))
        for b in blocks:
            self.store.add_cycles(db, self.c.id, self.c.chip_id, b, done[b], failed[b], step.meta["cycles"])

    def _record_erase(self, db: sqlite3.Connection, i: int, step: Step, reply) -> None:
        r = P.CHIP_RESULT.unpack(reply.payload)
        self.store.add_erase(db, self.c.id, self.c.chip_id, i, step.meta["block"], bool(r.chip_status & StatusBit.FAIL),
                             r.busy_ns)

    def _record_program(self, db: sqlite3.Connection, i: int, step: Step, reply) -> None:
        r = P.CHIP_RESULT.unpack(reply.payload)
        self.store.add_program(db, self.c.id, self.c.chip_id, i, step.meta["block"], step.meta["page"],
                               bool(r.chip_status & StatusBit.FAIL), r.busy_ns)

    def _record_advance(self, db: sqlite3.Connection, i: int, step: Step, reply) -> None:
        self._add_time(step.meta)

    def _record_read_disturb(self, db: sqlite3.Connection, i: int, step: Step, reply) -> None:
        pass  # the reads are recorded with the next checkpoint

    def _record_set_offset(self, db: sqlite3.Connection, i: int, step: Step, reply) -> None:
        pass

    def _record_measure(self, db: sqlite3.Connection, i: int, step: Step, reply) -> None:
        m = step.meta
        equiv = self.context.get("equiv_h", 0.0) if m.get("retention") else 0.0
        actual = self.context.get("actual_h", 0.0) if m.get("retention") else 0.0
        temp = self.context.get("temp_c", 25.0) if m.get("retention") else 25.0
        cp = self.store.add_checkpoint(db, self.c.id, i, m["label"], m["pe"], equiv, actual, temp,
                                       m.get("reads", m.get("repeats", 0)), m.get("offset", 0))
        recs = np.frombuffer(reply.payload, dtype=MEASURE_DTYPE).reshape(len(m["blocks"]), m["n_pages"])
        self.store.add_measurements(db, cp, self.c.chip_id, (
            (b, m["first_page"] + j, int(recs[k, j]["err_1to0"]), int(recs[k, j]["err_0to1"]),
             self.g.raw_page_bytes * 8, int(recs[k, j]["busy_ns"]))
            for k, b in enumerate(m["blocks"]) for j in range(m["n_pages"])))


def parse_blocks(text: str, blocks: int) -> list[int]:
    """``A-B`` (inclusive), ``A``, or a comma-separated list of those (``0-27,29-40``), within the chip; sorted."""
    out: set[int] = set()
    for item in (x.strip() for x in text.split(",")):
        try:
            a, b = (int(x) for x in item.split("-", 1)) if "-" in item else (int(item), int(item))
        except ValueError:
            raise NandrigError(f"--blocks takes ranges A-B and blocks A, comma-separated; got {text!r}") from None
        if a > b:
            raise NandrigError(f"--blocks {item}: the first block is after the last")
        if a < 0 or b >= blocks:
            raise NandrigError(f"--blocks {item} is outside the chip's blocks 0..{blocks - 1}")
        out.update(range(a, b + 1))
    return sorted(out)


__all__ = ["KINDS", "Runner", "plan", "parse_blocks", "Geometry"]
