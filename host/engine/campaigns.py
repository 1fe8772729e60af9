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
import math
import sys
import time
from collections.abc import Callable, Mapping

import numpy as np

from nandrig import protocol as P
from nandrig.chip.geometry import Geometry
from nandrig.errors import NandrigError
from nandrig.host.engine import flares_validate, workload_run
from nandrig.host.engine.chip_access import format_blocks, note_session, open_for_campaign, versions
from nandrig.host.engine.recorder import CallRecorder
from nandrig.host.kinds import KINDS, KindParams, kind
from nandrig.host.kinds.steps import Checkpoint, Cycle, Erase, Step, Wait, contiguous, listing
from nandrig.host.lab.oven import Oven, make_oven
from nandrig.host.storage.databases import Database
from nandrig.host.link.rig import Rig, RigHeld, RigRestarted
from nandrig.host.storage.store import Campaign, Store
from nandrig.protocol import Err, HelloFlag, Opcode


def create(store: Store, rig: Rig, chip_id: int, kind_name: str, params: KindParams | dict, url: str,
           skip_bad: bool = False, echo: Callable[[str], None] = lambda s: None) -> int:
    """A new campaign of ``kind_name`` (its parameters as the kind's dataclass, or a mapping of its fields).
    ``skip_bad``: leave the factory bad blocks among them out (saying so) instead of refusing them."""
    k, p, g = check_plan(store, chip_id, kind_name, params)  # before the chip's blocks are scanned
    todo = store.unscanned(chip_id, list(p.blocks))
    for run_ in contiguous(todo):  # read the factory marks before anything touches these blocks
        store.record_scan(chip_id, run_, rig.scan_bad(run_[0], len(run_)))
    bad = store.factory_bad(chip_id, list(p.blocks))
    if bad and skip_bad:
        good = tuple(b for b in p.blocks if b not in bad)
        if not good:
            raise NandrigError(f"every block of --blocks is a factory bad block ({listing(bad)})")
        echo(f"skipping factory bad block{'s' if len(bad) > 1 else ''} {listing(bad)}: "
             f"{len(good)} of {len(p.blocks)} blocks left")
        p = dataclasses.replace(p, blocks=good, start_pe=tuple(dict(zip(p.blocks, p.start_pe))[b] for b in good))
    steps = k.plan(p, g)
    wear = p.worn
    if worn := sorted(b for b in p.blocks if wear[b]):
        pes = sorted({wear[b] for b in worn})
        echo(f"block{'s' if len(worn) > 1 else ''} {format_blocks(worn)} already carr{'y' if len(worn) > 1 else 'ies'} "
             f"{pes[0]}{f'-{pes[-1]}' if len(pes) > 1 else ''} P/E: the campaign cycles them on from there to its "
             "wear levels")
    cid = store.create_campaign(chip_id, kind_name, p.to_mapping(), list(p.blocks), url, rig.hello_info.identity,
                                versions(rig), len(steps), rig.target)
    store.save_context(cid, {"sessions": [rig.session]})  # before anything else: see dead_sessions()
    return cid


def check_plan(store: Store, chip_id: int, kind_name: str, params: KindParams | Mapping):
    """A campaign's parameters checked against the chip the store knows (its plan made): refused before any rig
    is opened or block touched. Returns the kind, the parameters and the chip's geometry."""
    k = kind(kind_name)
    p = params if isinstance(params, k.params) else k.params.from_mapping(params)
    row = store.chip(chip_id)
    g = store.geometry(chip_id)
    wear = store.pe_counts(chip_id, list(p.blocks))  # the blocks' recorded wear: levels are absolute
    p = dataclasses.replace(p, start_pe=tuple(wear[b] for b in p.blocks))
    k.plan(p, g)  # refuses what the chip cannot take, and blocks already past a wear level
    if k.check_chip is not None:
        k.check_chip(p, row)
    return k, p, g


# the kinds a program drives instead of a plan (host/engine/recorder.py): run(store, rig, id, echo)
PROGRAMS: Mapping[str, Callable[..., object]] = {flares_validate.KIND: flares_validate.run_campaign,
                                                 workload_run.KIND: workload_run.run_campaign}


def run(store: Store, rig: Rig, campaign_id: int, progress: bool | Callable[[int, int], None] = True,
        echo: Callable[[str], None] = lambda s: None, position: int = 0) -> Campaign:
    """Run a campaign from where it stands. ``progress``: a bar on a terminal (on line ``position`` of those of
    campaigns run at once), or ``progress(done, total)`` in the campaign's own unit."""
    with store.lock(campaign_id):
        settle_strays(store, rig, campaign_id)
        if (program := PROGRAMS.get(store.campaign(campaign_id).kind)) is not None:
            program(store, rig, campaign_id, echo)
            return store.campaign(campaign_id)
        return _run(store, rig, campaign_id, progress, position)


def position(c: Campaign) -> str:
    """Where a campaign stands, in its own terms."""
    return f"request {c.step}" if c.kind in PROGRAMS else f"step {c.step} of {c.steps}"


def _run(store: Store, rig: Rig, campaign_id: int, progress: bool | Callable[[int, int], None],
         position: int = 0) -> Campaign:
    c = store.campaign(campaign_id)
    runner = Runner(store, rig, campaign_id, make_oven(c.oven, c.chamber))
    bar = None
    if callable(progress):
        runner.progress = lambda pos: progress(pos, runner.marks[-1])
    elif progress and sys.stderr.isatty():
        from tqdm import tqdm

        # in the campaign's own unit; a resume starts the bar where the campaign stands, so its rate and ETA are
        # this run's
        bar = tqdm(total=runner.marks[-1], initial=runner.position(runner.c.step), unit=f" {runner.unit}",
                   desc=f"campaign {c.id} ({c.kind})", file=sys.stderr, position=position)
        runner.progress = lambda pos: bar.update(pos - bar.n)
        # a step that adds no P/E (a MEASURE on a slow rig) still shows that the campaign moves
        runner.on_step = lambda i, step: bar.set_postfix_str(f"step {i + 1}/{len(runner.steps)} {step.kind}")
    try:
        return runner.run()
    finally:
        if bar:
            bar.close()


def plan(kind_name: str, params: Mapping, g: Geometry) -> list[Step]:
    """A campaign's steps, from its kind and its stored parameters."""
    k = kind(kind_name)
    return k.plan(k.params.from_mapping(params), g)


# -- execution ----------------------------------------------------------------------
# replies that refuse the request itself: a retry or a resume meets the same answer
REFUSALS = frozenset({Err.BAD_FRAME, Err.UNKNOWN_COMMAND, Err.VERSION_MISMATCH, Err.OUT_OF_RANGE, Err.BAD_BLOCK,
                      Err.UNSUPPORTED, Err.BAD_PARAMETER})


def cancel(store: Store, campaign_id: int, url: str | None = None, take_over: bool = False) -> Campaign:
    """End a campaign that is not running anywhere: its blocks are freed, their wear stays recorded. A request
    it had in flight when it stopped is settled first (collected from the rig, or done), so the wear it gave is
    counted: that needs its rig."""
    c = store.campaign(campaign_id)
    if c.state != "running":
        raise NandrigError(f"campaign {campaign_id} is {c.state}; nothing to cancel")
    if store.is_live(campaign_id):
        raise NandrigError(f"campaign {campaign_id} is running in another process; stop it (Ctrl-C) first")
    if (pending := store.pending(campaign_id)) is not None:
        try:
            rig = open_for_campaign(store, c, url, take_over)
        except NandrigError as e:
            raise NandrigError(f"campaign {campaign_id} stopped with {'request' if c.kind in PROGRAMS else 'step'} {pending.step} in flight, which may have "
                               f"worn its blocks; cancelling needs its rig to count that: {e}") from None
        with rig, store.lock(campaign_id):
            _settle(store, rig, c, resend=False)
    store.set_state(campaign_id, "cancelled", f"cancelled at {position(store.campaign(campaign_id))}")
    return store.campaign(campaign_id)


def settle_strays(store: Store, rig: Rig, campaign_id: int) -> None:
    """Collect the requests this store's interrupted campaigns left in flight on this rig's chip, before campaign
    ``campaign_id`` sends its own: a target keeps only its latest CYCLE's reply, so another campaign's CYCLE there
    would leave their retry to run again (the chip worn twice, recorded once). Their wear is counted now, as a
    resume or a cancel would count it; they stay resumable."""
    chip_id = store.campaign(campaign_id).chip_id
    for c in store.campaigns():
        if c.id == campaign_id or c.state != "running" or c.chip_id != chip_id or c.target != rig.target:
            continue
        pending = store.pending(c.id)
        if pending is None or pending.boot != rig.boot or store.is_live(c.id):
            continue  # nothing out, out on a rig since restarted (resume accounts for it), or its process runs
        with store.lock(c.id):
            _settle(store, rig, c)
        store.event(c.id, "settled", f"its request in flight collected from the rig before campaign {campaign_id} "
                                     "ran there")


def _settle(store: Store, rig: Rig, c: Campaign, resend: bool = True) -> None:
    """Campaign ``c``'s request in flight, collected from the rig and recorded (the caller holds its lock);
    ``resend``: what a restarted rig lost of it is sent anew (not for a cancel)."""
    if c.kind in PROGRAMS:
        CallRecorder(store, rig, c).settle()
    else:
        Runner(store, rig, c.id, None).settle(resend)


def summaries(store: Store) -> list[dict]:
    """A line per campaign, as `nandrig ls` and the live page show it; state: running (a process holds it),
    interrupted (resumable), failed, cancelled or done."""
    import datetime

    out = []
    for c in store.campaigns():
        holder = store.holder(c.id) if c.state == "running" else None
        out.append({"id": c.id, "kind": c.kind, "state": ("running" if holder else "interrupted")
                    if c.state == "running" else c.state, "step": c.step, "steps": c.steps,
                    "blocks": format_blocks(list(c.blocks)), "chip": store.chip(c.chip_id)["label"],
                    "rig": c.rig_address, "created": datetime.datetime.fromtimestamp(c.created).strftime("%Y-%m-%d %H:%M"),
                    "running_in": holder or ""})  # which process (and host, in a shared store) runs it
    return out


class Runner:
    def __init__(self, store: Store, rig: Rig, campaign_id: int, oven: Oven | None,
                 progress: Callable[[int], None] | None = None) -> None:
        """``progress`` hears the campaign's position in its unit (:attr:`unit`, up to ``marks[-1]``)."""
        self.store, self.rig, self.oven, self.progress = store, rig, oven, progress
        self.on_step: Callable[[int, Step], None] | None = None  # hears each step as it starts
        self.c = store.campaign(campaign_id)
        self.g = store.geometry(self.c.chip_id)
        self.steps = plan(self.c.kind, self.c.params, self.g)
        if len(self.steps) != self.c.steps:
            raise NandrigError(f"campaign {self.c.id}'s plan has {len(self.steps)} steps, the store says "
                               f"{self.c.steps}: it was made by another nandrig version")
        self.context = dict(self.c.context)
        # progress in P/E cycles (of the average block: CYCLE steps take at most 256 blocks each) when the plan
        # cycles, else in steps; marks[i] is where step i ends
        self.n_blocks = max(1, len(self.c.blocks))
        cycles = [s.cycles * len(s.blocks) / self.n_blocks if isinstance(s, Cycle) else 0 for s in self.steps]
        self.unit = "P/E" if any(cycles) else "steps"
        self.marks = [round(m) for m in (np.cumsum(cycles) if any(cycles) else range(1, len(self.steps) + 1))] or [0]

    def position(self, step: int) -> int:
        """Where the campaign stands before ``step``, in :attr:`unit`."""
        return self.marks[step - 1] if step > 0 else 0

    def run(self) -> Campaign:
        if self.c.state != "running":
            return self.c
        cursor = self.settle()
        with Turn(self.rig.turn()):
            self._restore_settings(cursor)
        for i in range(cursor, len(self.steps)):
            if self.on_step:
                self.on_step(i, self.steps[i])
            try:
                self._execute(i, self.steps[i])
            except RigHeld as e:
                raise NandrigError(f"campaign {self.c.id} stopped before step {i} of {len(self.steps)}, its rig taken "
                                   f"over: {e}; `nandrig resume --take-over` continues it") from None
            if self.progress:
                self.progress(self.marks[i])
        self.store.set_state(self.c.id, "done", f"{len(self.steps)} steps")
        return self.store.campaign(self.c.id)

    def settle(self, resend: bool = True) -> int:
        """The request in flight when the campaign stopped, collected from the rig (its reply cache, or executed
        now) and recorded, so what it did to the chip is counted; returns the step to go on from. ``resend``:
        what a rig restarted since may not have done is sent anew (a resume), else left undone (a cancel)."""
        pending = self.store.pending(self.c.id)
        self.context = note_session(self.context, self.rig.session)
        self.store.save_context(self.c.id, self.context)
        if pending is None:
            return self.c.step
        with Turn(self.rig.turn()) as turn:
            if pending.boot not in (None, self.rig.boot):
                # the rig restarted since the request went out: its reply cache is gone, what it did is bounded
                self._after_restart(pending, turn, resend)
            else:  # a request was in flight when the host stopped: collect its reply
                new_session = self.rig.session
                # a CYCLE job of this session answers its retry without the cache
                leave = self.leaves_turn(pending.op, pending.session)
                if pending.session != new_session:  # its reply is kept for the session that sent it
                    self.rig.hello(session=pending.session, flags=HelloFlag.TAKE_OVER)
                reply = self.rig.call(Opcode(pending.op), pending.payload, seq=pending.seq, ok=tuple(Err),
                                      sent=turn.release if leave else None)
                self._apply(pending.step, self.steps[pending.step], reply)
                if pending.session != new_session:
                    self.rig.hello(session=new_session, flags=HelloFlag.TAKE_OVER)
                self.store.event(self.c.id, "resumed", f"step {pending.step} recovered from the rig's reply cache")
        return pending.step + 1

    def _execute(self, i: int, step: Step) -> None:
        if step.op is None:
            self._oven(i, step)
            return
        with Turn(self.rig.turn()) as turn:
            # the rig cannot tell two hosts' requests apart: a HELLO before each step finds out whether another
            # host took it over (RigHeld ends the run, the campaign stays resumable) or the rig restarted
            boot = self.rig.boot
            if self.rig.hello().boot != boot:
                self.store.event(self.c.id, "rig_restarted", f"between steps {i - 1} and {i}: nothing was in flight")
                self._restore_settings(i)
            # a step that asks for its energy zeroes the rig's meter first (a rig without one: none recorded)
            metered = step.energy and P.Cap.ENERGY in self.rig.hello_info.capabilities
            if metered:
                self.rig.energy()
            seq = self.rig.next_seq()
            self.store.journal(self.c.id, i, self.rig.session, seq, int(step.op), step.payload, self.rig.boot)
            self._send(i, step, step.payload, seq, metered,
                       turn.release if not metered and self.leaves_turn(step.op, self.rig.session) else None)

    def _restore_settings(self, i: int) -> None:
        """The chip settings the plan made before step ``i`` (its latest read references, verify levels), made
        again: a rig that restarted, or was used by something else since, holds its power-on ones. Each setting
        is a total, so making it twice changes nothing."""
        latest: dict[str, Step] = {}
        for step in self.steps[:i]:
            if step.setting:
                latest[step.setting] = step
        for step in latest.values():
            reply = self.rig.call(step.op, step.payload, ok=tuple(Err))
            if reply.status != Err.OK:
                raise NandrigError(f"campaign {self.c.id}: the rig refused to restore its {step.setting} before "
                                   f"step {i} ({Err(reply.status).name})")

    def leaves_turn(self, op: int, session: int) -> bool:
        """Whether a request, once sent, lets the link's other campaigns go on: a CYCLE the rig runs as a job,
        whose reply its target keeps (sent as the link's session: the job answers that session's retries)."""
        return op == Opcode.CYCLE and self.rig.cycle_jobs and session == self.rig.session

    def _send(self, i: int, step: Step, payload: bytes, seq: int, metered: bool = False,
              sent: Callable[[], None] | None = None) -> None:
        """The journaled request and its reply (and the chip's energy over it, ``metered``); a CYCLE's progress
        reports are kept for a restart to recover. ``sent``: called once the request left."""
        self.rig.progress = (lambda st: self._note_progress(i, seq, st)) if step.op == Opcode.CYCLE else None
        try:
            reply = self.rig.call(step.op, payload, seq=seq, ok=tuple(Err), sent=sent)
        except RigRestarted as e:
            raise NandrigError(f"{e}; campaign {self.c.id} stopped at step {i} of {len(self.steps)}: "
                               f"`nandrig resume --db {self.store.name}` accounts for it and continues") from None
        finally:
            self.rig.progress = None
        self._apply(i, step, reply, self.rig.energy() if metered and reply.status == Err.OK else None)

    def _note_progress(self, i: int, seq: int, st) -> None:
        """A running CYCLE's STATUS, committed (the first and latest): after a restart the rounds it reports are
        certain and the rate bounds what could have followed."""
        if st.op != Opcode.CYCLE or st.seq != seq:
            return
        if self.progress:
            self.progress(self.position(i) + st.done // self.n_blocks)
        now = time.time()
        note = self.context.get("in_flight")
        if not note or note["seq"] != seq or note["step"] != i or note["boot"] != st.boot:
            note = {"step": i, "seq": seq, "boot": st.boot, "first": [st.done, now]}
        elif note["last"][0] == st.done:
            return
        note["last"] = [st.done, now]
        self.context["in_flight"] = note
        self.store.save_context(self.c.id, self.context)

    def _after_restart(self, pending, turn: Turn, resend: bool) -> None:
        """The rig restarted with ``pending`` out. A CYCLE counts the rounds its last progress report confirms and
        records as uncertain what the rig may have done after it; the rest of the rounds are sent anew (``resend``).
        Any other request is sent anew (``resend``; an ERASE may have worn its block once more: uncertain by one)."""
        i, step = pending.step, self.steps[pending.step]
        payload = pending.payload
        if resend:
            self._restore_settings(i)
        seq = self.rig.next_seq()
        with self.store.tx() as db:
            if step.op == Opcode.CYCLE:
                first, n, cycles, seed, flags = P.CYCLE_REQ.unpack(payload)
                low, high = cycle_bounds(self.context.get("in_flight"), pending, n, cycles, time.time())
                for k, b in enumerate(range(first, first + n)):
                    self.store.add_cycles(db, self.c.id, self.c.chip_id, b, low[k], False, cycles)
                    self.store.add_uncertain(db, self.c.chip_id, b, high[k] - low[k])
                payload = P.CYCLE_REQ.pack(first, n, cycles - min(low), seed, flags)
                detail = (f"step {i}: CYCLE of {cycles} rounds on blocks {first}-{first + n - 1} cut short; "
                          f"{min(low)}-{max(low)} rounds confirmed, up to {max(high)} possible; the remaining "
                          f"{cycles - min(low)}")
            elif isinstance(step, Erase):
                self.store.add_uncertain(db, self.c.chip_id, step.block, 1)
                detail = f"step {i}: ERASE of block {step.block} (it may have run: P/E +0..1)"
            else:
                detail = f"step {i}: {Opcode(pending.op).name}"
            detail += " sent anew" if resend else " not sent (cancelled)"
            if resend:
                self.store.journal(self.c.id, i, self.rig.session, seq, pending.op, payload, self.rig.boot, db)
            else:
                self.store.clear_journal(db, self.c.id)
            self.store.event(self.c.id, "rig_restarted", f"{detail} (boot {pending.boot:08x}, now {self.rig.boot:08x})",
                             db)
        if not resend:
            return
        if step.op == Opcode.CYCLE and P.CYCLE_REQ.unpack(payload)[2] == 0:
            self.context.pop("in_flight", None)
            with self.store.tx() as db:  # every round was confirmed: nothing left to send
                self.store.finish_step(db, self.c.id, i, self.context)
            return
        self._send(i, step, payload, seq, sent=turn.release if self.leaves_turn(step.op, self.rig.session) else None)

    def _oven(self, i: int, step: Wait) -> None:
        """A retention wait through the oven; its start is committed first so a resume waits only the rest."""
        key = f"oven_{i}"
        if key not in self.context:
            self.context[key] = {"started": time.time()}
            self.store.save_context(self.c.id, self.context)
        done = self.oven.wait(step.oven_request(), self.context[key],
                              lambda: self.store.save_context(self.c.id, self.context))
        self.context[key].update(done)
        self.add_time(done, step.fresh)
        with self.store.tx() as db:
            self.store.finish_step(db, self.c.id, i, self.context)

    def add_time(self, done: dict, fresh: bool) -> None:
        """Retention so far; ``fresh``: the pages were programmed anew since the last wait, so it starts here."""
        if fresh:
            for k in ("equiv_h", "actual_h", "bakes"):
                self.context.pop(k, None)
        self.context["equiv_h"] = self.context.get("equiv_h", 0.0) + done["equiv_h"]
        self.context["actual_h"] = self.context.get("actual_h", 0.0) + done["actual_h"]
        self.context["temp_c"] = done["temp_c"]
        self.context["last_wait"] = {k: done[k] for k in ("equiv_h", "actual_h", "temp_c")}
        if "chamber" in done:  # what the chamber measured, kept with the checkpoints that follow
            self.context.setdefault("bakes", []).append(done)

    def _apply(self, i: int, step: Step, reply, energy=None) -> None:
        """Record a reply's results (and the energy the rig measured over it) and finish the step, in one
        transaction."""
        if reply.status not in (Err.OK, Err.CHIP_FAIL):
            why = f"rig refused step {i} ({step.kind}): {Err(reply.status).name}"
            if reply.status in REFUSALS:  # the same request would be refused again: resuming cannot help
                self.store.set_state(self.c.id, "failed", why)
                raise NandrigError(f"{why}; campaign {self.c.id} failed (its wear is kept)")
            raise NandrigError(why)
        self.context.pop("in_flight", None)
        if step.fetches_page:  # the page's bytes wait in the rig's buffer
            reply = dataclasses.replace(reply, payload=reply.payload + self.rig.read_buffer(self.g.raw_page_bytes))
        with self.store.tx() as db:
            step.record(self, db, i, reply)
            if energy is not None:
                self.store.add_energy(db, self.c.id, i, energy)
            self.store.finish_step(db, self.c.id, i, self.context)

    def shared_checkpoint(self, db: Database, at: Checkpoint) -> int:
        """The checkpoint a group of page reads shares, opened by its first (``at.first_step``: a step index)."""
        cp = self.store.checkpoint_at(db, self.c.id, at.first_step)
        if cp is None:  # retention since the level's programming: the wait just before its reads, or all of them
            wait = ({k: self.context[k] for k in ("equiv_h", "actual_h", "temp_c") if k in self.context}
                    if at.cumulative else self.context.get("last_wait", {})) if at.retention else {}
            cp = self.store.add_checkpoint(db, self.c.id, at.first_step, at.label, at.pe,
                                           wait.get("equiv_h", 0.0), wait.get("actual_h", 0.0),
                                           wait.get("temp_c", 25.0), at.reads, at.offset)
        return cp


class Turn:
    """A link's turn (:meth:`Rig.turn`) as a context, which can be let go early (once a CYCLE job is sent)."""

    def __init__(self, lock) -> None:
        self.lock, self.held = lock, False

    def __enter__(self) -> "Turn":
        self.lock.acquire()
        self.held = True
        return self

    def release(self) -> None:
        if self.held:
            self.held = False
            self.lock.release()

    def __exit__(self, *exc) -> None:
        self.release()


def cycle_bounds(note: dict | None, pending, n: int, cycles: int, now: float,
                 margin: float = 1.5) -> tuple[list[int], list[int]]:
    """Per block of a CYCLE cut short by a rig restart: the rounds certainly done and the most that could have
    been. STATUS counts block-rounds, each round visiting the blocks in order, so ``done`` of them put block k
    at least ``done // n`` (+1 when ``k < done % n``) rounds in. After the last report the rig worked at most
    ``margin`` times its reported rate until now, plus the round it had begun (its erase counts); without two
    reports it may have finished."""
    def per_block(d: int) -> list[int]:
        return [min(cycles, d // n + (k < d % n)) for k in range(n)]

    ok = note is not None and note.get("seq") == pending.seq and note.get("step") == pending.step \
        and note.get("boot") == pending.boot
    done = note["last"][0] if ok else 0
    (d0, t0), (d1, t1) = (note["first"], note["last"]) if ok else ((0, 0.0), (0, 0.0))
    if ok and d1 > d0 and t1 > t0:
        more = math.ceil((d1 - d0) / (t1 - t0) * margin * max(0.0, now - t1))
        high = per_block(min(n * cycles, done + more + 1))
    else:
        high = [cycles] * n
    return per_block(done), high


__all__ = ["KINDS", "Runner", "plan", "Geometry"]
