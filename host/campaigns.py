"""Characterization campaigns: deterministic plans of rig requests, executed so they survive a kill.

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

import json
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from nandrig.chip.geometry import Geometry
from nandrig.characterization.arrhenius import acceleration_factor
from nandrig.errors import NandrigError
from nandrig import protocol as P
from nandrig.host.oven import Oven
from nandrig.host.rig import MEASURE_DTYPE, Rig, decode_cycle_reply
from nandrig.protocol import Err, Limit, Opcode
from nandrig.host.store import Campaign, Store

KINDS = ("endurance", "retention", "read-disturb", "program-disturb", "latency", "vth")


@dataclass(frozen=True)
class Step:
    kind: str  # cycle, measure, erase, program, read_disturb, set_offset, oven
    op: Opcode | None
    payload: bytes
    meta: dict = field(default_factory=dict)


# -- plans --------------------------------------------------------------------------
def _cycle_steps(blocks: list[int], cycles: int, seed: int) -> list[Step]:
    steps = []
    for i in range(0, len(blocks), Limit.CYCLE_MAX_BLOCKS):
        chunk = blocks[i:i + Limit.CYCLE_MAX_BLOCKS]
        left = cycles
        while left > 0:
            n = min(left, Limit.CYCLE_MAX_ROUNDS)
            steps.append(Step("cycle", Opcode.CYCLE, P.CYCLE_REQ.pack(chunk[0], len(chunk), n, seed, 0),
                              {"blocks": chunk, "cycles": n}))
            left -= n
    return steps


def _measure_steps(blocks: list[int], seed: int, g: Geometry, meta: dict, first_page: int = 0,
                   n_pages: int | None = None) -> list[Step]:
    n_pages = g.pages_per_block - first_page if n_pages is None else n_pages
    per = max(1, P.MAX_PAYLOAD // (n_pages * P.MEASURE_PAGE.size))
    steps = []
    for i in range(0, len(blocks), per):
        chunk = blocks[i:i + per]
        steps.append(Step("measure", Opcode.MEASURE,
                          P.MEASURE_REQ.pack(chunk[0], len(chunk), first_page, n_pages, seed),
                          {**meta, "blocks": chunk, "first_page": first_page, "n_pages": n_pages}))
    return steps


def contiguous(blocks: list[int]) -> list[list[int]]:
    """Split a block list into runs of consecutive blocks."""
    runs: list[list[int]] = []
    for b in blocks:
        if runs and b == runs[-1][-1] + 1:
            runs[-1].append(b)
        else:
            runs.append([b])
    return runs


def _cycle_to(blocks: list[int], have: int, want: int, seed: int) -> list[Step]:
    return [s for run in contiguous(blocks) for s in _cycle_steps(run, want - have, seed)] if want > have else []


def _measure(blocks: list[int], seed: int, g: Geometry, meta: dict, **kw) -> list[Step]:
    return [s for run in contiguous(blocks) for s in _measure_steps(run, seed, g, meta, **kw)]


def endurance_checkpoints(cycles: int, step: int) -> list[int]:
    """1, 10, 100, 1000, ... below ``step``, then every ``step``, and the end."""
    cps = [10**k for k in range(7) if 10**k < min(step, cycles)]
    cps += list(range(step, cycles, step)) + [cycles]
    return sorted(set(c for c in cps if c >= 1))


def plan(kind: str, p: dict, g: Geometry) -> list[Step]:
    blocks, seed = p["blocks"], p["seed"]
    steps: list[Step] = []
    if kind == "endurance":
        have = 0
        for cp in p["checkpoints"]:
            steps += _cycle_to(blocks, have, cp, seed)
            have = cp
            steps += _measure(blocks, seed, g, {"label": f"pe={cp}", "pe": cp})
    elif kind == "retention":
        groups = _groups(blocks, len(p["wear"]))
        for grp, pe in zip(groups, p["wear"]):
            steps += _cycle_to(grp, 0, pe, seed)
        times = [0.0] + p["times_h"]
        for i, hours in enumerate(times):
            if i:
                steps.append(_wait(p, hours - times[i - 1]))
            for grp, pe in zip(groups, p["wear"]):
                steps += _measure(grp, seed, g, {"label": f"t={hours:g}h", "pe": pe, "retention": True})
    elif kind == "read-disturb":
        steps += _cycle_to(blocks, 0, p["pe"], seed)
        steps += _measure(blocks, seed, g, {"label": "reads=0", "pe": p["pe"], "reads": 0})
        done = 0
        for target in p["read_points"]:
            for b in blocks:
                steps.append(Step("read_disturb", Opcode.READ_DISTURB,
                                  P.READ_DISTURB_REQ.pack(b, p["page"], target - done), {"block": b}))
            done = target
            steps += _measure(blocks, seed, g, {"label": f"reads={target}", "pe": p["pe"], "reads": target})
    elif kind == "program-disturb":
        target = p["page"]
        steps += _cycle_to(blocks, 0, p["pe"], seed)
        for b in blocks:
            steps.append(Step("erase", Opcode.ERASE, P.ERASE_REQ.pack(b, 0), {"block": b}))
            for page in range(target + 1):
                steps.append(_program(b, page, seed))
        steps += _measure(blocks, seed, g, {"label": "repeats=0", "pe": p["pe"] + 1, "reads": 0}, n_pages=target)
        done = 0
        for r in p["repeat_points"]:
            for b in blocks:
                steps += [_program(b, target, seed) for _ in range(r - done)]
            done = r
            steps += _measure(blocks, seed, g, {"label": f"repeats={r}", "pe": p["pe"] + 1, "repeats": r},
                              n_pages=target)
    elif kind == "latency":
        have = 0
        for cp in p["checkpoints"]:
            steps += _cycle_to(blocks, have, cp - 1, seed)
            for b in blocks:
                steps.append(Step("erase", Opcode.ERASE, P.ERASE_REQ.pack(b, 0), {"block": b, "pe": cp}))
                steps += [_program(b, page, seed, pe=cp) for page in range(g.pages_per_block)]
            have = cp
            steps += _measure(blocks, seed, g, {"label": f"pe={cp}", "pe": cp})
    elif kind == "vth":
        steps += _cycle_to(blocks, 0, p["pe"], seed)
        if p["retention_h"] > 0:
            steps.append(_wait(p, p["retention_h"]))
        for off in p["offsets"]:
            steps.append(Step("set_offset", Opcode.SET_READ_OFFSET, P.SET_READ_OFFSET_REQ.pack(off), {"offset": off}))
            steps += _measure(blocks, seed, g, {"label": f"offset={off}", "pe": p["pe"], "offset": off,
                                                "retention": True})
        steps.append(Step("set_offset", Opcode.SET_READ_OFFSET, P.SET_READ_OFFSET_REQ.pack(0), {"offset": 0}))
    else:
        raise NandrigError(f"unknown campaign kind {kind!r} ({', '.join(KINDS)})")
    return steps


def _wait(p: dict, equiv_h: float) -> Step:
    """Retention of ``equiv_h`` 25 degC-equivalent hours: a journaled ADVANCE on a virtual oven,
    a real wait or an operator's bake otherwise (resumable through their committed start)."""
    temp = p.get("temp_c", 25.0)
    actual = equiv_h / acceleration_factor(temp)
    meta = {"equiv_h": equiv_h, "actual_h": actual, "temp_c": temp}
    if p.get("oven", "virtual") == "virtual":
        ns = int(round(actual * 3.6e12))
        return Step("advance", Opcode.ADVANCE, P.ADVANCE_REQ.pack(ns, int(round(temp * 100))), meta)
    return Step("oven", None, b"", meta)


def _program(block: int, page: int, seed: int, pe: int | None = None) -> Step:
    return Step("program", Opcode.PROGRAM, P.PROGRAM_HEAD.pack(block, page, 0, 0) + P.PATTERN_SEED.pack(seed),
                {"block": block, "page": page, "pe": pe})


def _groups(blocks: list[int], n: int) -> list[list[int]]:
    if len(blocks) < n:
        raise NandrigError(f"{n} wear levels need at least {n} blocks, got {len(blocks)}")
    size = len(blocks) // n
    return [blocks[i * size:(i + 1) * size] for i in range(n)]


# -- execution ----------------------------------------------------------------------
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
        if pending is not None:  # a request was in flight when the host stopped: collect its reply
            new_session = self.rig.session
            self.rig.hello(session=pending.session)
            reply = self.rig.call(Opcode(pending.op), pending.payload, seq=pending.seq, ok=tuple(Err))
            self._apply(pending.step, self.steps[pending.step], reply)
            self.rig.hello(session=new_session)
            self.store.event(self.c.id, "resumed", f"step {pending.step} recovered from the rig's reply cache")
            cursor = pending.step + 1
        for i in range(cursor, len(self.steps)):
            self._execute(i, self.steps[i])
            if self.progress:
                self.progress(i + 1, len(self.steps))
        self.store.set_state(self.c.id, "done", f"{len(self.steps)} steps")
        return self.store.campaign(self.c.id)

    def _execute(self, i: int, step: Step) -> None:
        if step.op is None:
            self._oven(i, step)
            return
        seq = self.rig.next_seq()
        self.store.journal(self.c.id, i, self.rig.session, seq, int(step.op), step.payload)
        reply = self.rig.call(step.op, step.payload, seq=seq, ok=tuple(Err))
        self._apply(i, step, reply)

    def _oven(self, i: int, step: Step) -> None:
        """A retention wait through the oven; its start is committed first so a resume waits only the rest."""
        key = f"oven_{i}"
        if key not in self.context:
            self.context[key] = {"started": time.time()}
            with self.store.tx() as db:
                db.execute("UPDATE campaigns SET context=? WHERE id=?", (json.dumps(self.context), self.c.id))
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
            raise NandrigError(f"rig refused step {i} ({step.kind}): {Err(reply.status).name}")
        with self.store.tx() as db:
            getattr(self, f"_record_{step.kind}")(db, i, step, reply)
            self.store.finish_step(db, self.c.id, i, self.context)

    def _record_cycle(self, db: sqlite3.Connection, i: int, step: Step, reply) -> None:
        blocks = step.meta["blocks"]
        done_by_block, failed_by_block = decode_cycle_reply(reply.payload, blocks[0], len(blocks))
        for b in blocks:
            done, failed = done_by_block[b], failed_by_block[b]
            db.execute("UPDATE blocks SET pe = pe + ?, failed = failed OR ? WHERE chip_id=? AND block=?",
                       (done, failed, self.c.chip_id, b))
            if failed:
                Store._event(db, self.c.id, "block_failed", f"block {b} failed after {done} of {step.meta['cycles']} cycles")

    def _record_erase(self, db: sqlite3.Connection, i: int, step: Step, reply) -> None:
        status, busy = P.CHIP_RESULT.unpack(reply.payload)
        b = step.meta["block"]
        db.execute("UPDATE blocks SET pe = pe + 1, failed = failed OR ? WHERE chip_id=? AND block=?",
                   (status & 1, self.c.chip_id, b))
        pe = db.execute("SELECT pe FROM blocks WHERE chip_id=? AND block=?", (self.c.chip_id, b)).fetchone()[0]
        db.execute("INSERT INTO op_times VALUES (?,?,?,?,?,?,?)", (self.c.id, i, "erase", b, -1, pe, busy))

    def _record_program(self, db: sqlite3.Connection, i: int, step: Step, reply) -> None:
        status, busy = P.CHIP_RESULT.unpack(reply.payload)
        b = step.meta["block"]
        pe = db.execute("SELECT pe FROM blocks WHERE chip_id=? AND block=?", (self.c.chip_id, b)).fetchone()[0]
        db.execute("INSERT INTO op_times VALUES (?,?,?,?,?,?,?)", (self.c.id, i, "program", b, step.meta["page"], pe, busy))
        if status & 1:
            Store._event(db, self.c.id, "program_fail", f"block {b} page {step.meta['page']}")

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
        cur = db.execute(
            "INSERT INTO checkpoints (campaign_id, step, label, pe, retention_h, actual_h, temp_c, reads, offset)"
            " VALUES (?,?,?,?,?,?,?,?,?)",
            (self.c.id, i, m["label"], m["pe"], equiv, actual, temp, m.get("reads", m.get("repeats", 0)),
             m.get("offset", 0)))
        cp = cur.lastrowid
        recs = np.frombuffer(reply.payload, dtype=MEASURE_DTYPE)
        recs = recs.reshape(len(m["blocks"]), m["n_pages"])
        pes = dict(db.execute("SELECT block, pe FROM blocks WHERE chip_id=?", (self.c.chip_id,)).fetchall())
        db.executemany("INSERT INTO measurements VALUES (?,?,?,?,?,?,?,?)", (
            (cp, b, m["first_page"] + j, pes[b], int(recs[k, j]["err_1to0"]), int(recs[k, j]["err_0to1"]),
             self.g.raw_page_bytes * 8, int(recs[k, j]["busy_ns"]))
            for k, b in enumerate(m["blocks"]) for j in range(m["n_pages"])))


def parse_blocks(text: str, blocks: int) -> list[int]:
    """``A-B`` (inclusive) or ``A``, within the chip."""
    try:
        if "-" in text:
            a, b = (int(x) for x in text.split("-", 1))
        else:
            a = b = int(text)
    except ValueError:
        raise NandrigError(f"--blocks must look like A-B, got {text!r}") from None
    if a > b:
        raise NandrigError(f"--blocks {text}: the first block is after the last")
    if a < 0 or b >= blocks:
        raise NandrigError(f"--blocks {text} is outside the chip's blocks 0..{blocks - 1}")
    return list(range(a, b + 1))


__all__ = ["KINDS", "Runner", "plan", "parse_blocks", "endurance_checkpoints", "Geometry"]
