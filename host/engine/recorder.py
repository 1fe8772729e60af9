"""Campaigns driven by a program instead of a plan (flares-validate): what the program asks of the rig decides
what it asks next, so no list of steps exists before it runs.

Every request the program sends is journaled (committed) before it goes out; its reply, the wear it gave and
the cursor are committed in one transaction when it arrives. A resumed campaign runs its program again from
the start: each request is answered from the record (and checked to be the one recorded) until the record
ends; the request in flight when the campaign stopped is collected from the rig's reply cache under its old
session and sequence number (or executed, if it never arrived), then the program goes on on the rig. The
program must decide from its parameters and the replies alone (its randomness seeded): then a resumed run asks
and receives exactly what an uninterrupted one would, and no cycle is lost or counted twice.

A long program (a workload replay: millions of requests) checkpoints: it hands :meth:`CallRecorder.checkpoint`
its own state between two requests, and a resumed run starts from the last one, with the calls since then
(the calls before it are dropped with the checkpoint, so the record stays the size of one checkpoint's span).

What this cannot carry over is a rig restart: the state a program builds up in the rig (FLARES' tables and page
histories, a real rig's clock) starts over, so a restart ends the campaign as failed, its wear recorded (the
request in flight at the restart as uncertain wear).
"""
from __future__ import annotations

from collections.abc import Callable

from nandrig import protocol as P
from nandrig.errors import NandrigError
from nandrig.host.engine.chip_access import note_session
from nandrig.host.link.rig import ChipResult, Rig, RigError, RigHeld, decode_cycle_reply
from nandrig.host.storage.databases import Database
from nandrig.host.storage.store import Campaign, Pending, ProgramState, RigCall, Store
from nandrig.protocol import Err, Frame, HelloFlag, Opcode


HOST_NOTE = -1  # rig_calls.op of a recorded host note (no opcode is negative)


def _name(op: int) -> str:
    return "a host note" if op == HOST_NOTE else Opcode(op).name


class CallRecorder:
    """Set as a :class:`Rig`'s ``recorder`` for one run of a program-driven campaign."""

    def __init__(self, store: Store, rig: Rig, campaign: Campaign) -> None:
        self.store, self.rig, self.c = store, rig, campaign
        self.saved = store.program_state(campaign.id)  # the program goes on from here (None: from its start)
        self.base = self.saved.n if self.saved else 0  # the request the record starts at
        self.calls = store.rig_calls(campaign.id)
        self.n = self.base  # the program's next request

    def __enter__(self) -> "CallRecorder":
        self.store.save_context(self.c.id, note_session(self.c.context, self.rig.session))
        self.settle()
        self.rig.recorder = self
        return self

    def __exit__(self, *exc) -> None:
        self.rig.recorder = None

    @property
    def replaying(self) -> bool:
        return self.n < self.base + len(self.calls)

    def checkpoint(self, state: bytes) -> None:
        """The program's own state, as it stands after its requests so far: a resumed run starts here (its
        :attr:`saved`). Taken only past the record (a resumed run reaches its next one on the rig)."""
        if self.replaying:
            return
        self.saved = ProgramState(self.n, self.rig.boot, state)
        self.store.save_program_state(self.c.id, self.saved)
        self.base, self.calls = self.n, []

    def __call__(self, op: Opcode, payload: bytes, ok: tuple[Err, ...]) -> Frame:
        n, self.n = self.n, self.n + 1
        if n < self.base + len(self.calls):
            call = self.calls[n - self.base]
            if (call.op, call.payload) != (int(op), bytes(payload)):
                raise NandrigError(f"campaign {self.c.id} ({self.c.kind}) asks for {op.name} as its request {n}, where "
                                   f"its record has {_name(call.op)} with other fields: it was started by "
                                   f"another nandrig version, which must resume it")
        else:
            call = self._ask(n, op, bytes(payload))
        if call.status not in ok:
            raise RigError(op, call.status)
        return Frame(P.REPLY_TYPE, call.op, 0, call.status, call.reply)

    def note(self, key: bytes, compute: Callable[[], bytes]) -> bytes:
        """A value the program takes from the host's side rather than the rig (a virtual chip's oracle), recorded
        in its place among the requests, so that a resumed run reads what the first one saw."""
        n, self.n = self.n, self.n + 1
        if n < self.base + len(self.calls):
            call = self.calls[n - self.base]
            if (call.op, call.payload) != (HOST_NOTE, key):
                raise NandrigError(f"campaign {self.c.id} ({self.c.kind}) takes a host note as its request {n}, where "
                                   f"its record has {_name(call.op)}: it was started by another nandrig version, "
                                   f"which must resume it")
            return call.reply
        return self._record(n, RigCall(HOST_NOTE, key, int(Err.OK), compute(), self.rig.boot)).reply

    def _ask(self, n: int, op: Opcode, payload: bytes) -> RigCall:
        # the rig cannot tell two hosts' requests apart: a HELLO first finds out whether another host took it
        boot = self.rig.boot
        try:
            if self.rig.hello().boot != boot:
                self._fail(f"its rig restarted before request {n}")
        except RigHeld as e:
            raise NandrigError(f"campaign {self.c.id} stopped before its request {n}, its rig taken over: {e}; "
                               "`nandrig resume --take-over` continues it") from None
        seq = self.rig.next_seq()
        self.store.journal(self.c.id, n, self.rig.session, seq, int(op), payload, self.rig.boot)
        frame = self.rig.exchange(op, payload, ok=tuple(Err), seq=seq)
        return self._record(n, RigCall(int(op), payload, frame.status, frame.payload, self.rig.boot))

    def settle(self) -> None:
        """The request in flight when the campaign stopped, collected from the rig and recorded, so the wear it
        gave is counted (resume and cancel both begin here); a rig that restarted since ends the campaign."""
        pending = self.store.pending(self.c.id)
        if pending is None:
            last = self.calls[-1].boot if self.calls else self.saved.boot if self.saved else self.rig.boot
            if last != self.rig.boot:
                self._fail("its rig restarted since its last request")
            return
        if pending.step != self.base + len(self.calls):
            raise NandrigError(f"campaign {self.c.id}'s journal (request {pending.step}) does not follow its record "
                               f"({self.base + len(self.calls)} requests): the database was changed by hand")
        if pending.boot not in (None, self.rig.boot):
            self._restarted(pending)
        new_session = self.rig.session
        self.rig.hello(session=pending.session, flags=HelloFlag.TAKE_OVER)
        frame = self.rig.exchange(Opcode(pending.op), pending.payload, ok=tuple(Err), seq=pending.seq)
        self.rig.hello(session=new_session, flags=HelloFlag.TAKE_OVER)
        self.calls.append(self._record(pending.step, RigCall(pending.op, bytes(pending.payload), frame.status,
                                                             frame.payload, self.rig.boot)))
        self.store.event(self.c.id, "resumed", f"request {pending.step} recovered from the rig's reply cache")

    def _record(self, n: int, call: RigCall) -> RigCall:
        with self.store.tx() as db:
            self._wear(db, call)
            self.store.add_rig_call(db, self.c.id, n, call)
            self.store.finish_step(db, self.c.id, n)
        return call

    def _wear(self, db: Database, call: RigCall) -> None:
        """The P/E cycles a reply says the chip took: an erase (even one the chip failed) or a CYCLE's rounds."""
        if call.op == Opcode.ERASE and call.status in (Err.OK, Err.CHIP_FAIL):
            block, _ = P.ERASE_REQ.unpack(call.payload)
            failed = ChipResult(*P.CHIP_RESULT.unpack(call.reply)).fail
            self.store.add_cycles(db, self.c.id, self.c.chip_id, block, 1, failed, 1)
        elif call.op == Opcode.CYCLE and call.status in (Err.OK, Err.ABORTED):
            first, n_blocks, cycles, _, _ = P.CYCLE_REQ.unpack(call.payload[:P.CYCLE_REQ.size])
            done, failed = decode_cycle_reply(call.reply, first, n_blocks)
            for b, k in done.items():
                self.store.add_cycles(db, self.c.id, self.c.chip_id, b, k, failed[b], cycles)

    def _restarted(self, pending: Pending) -> None:
        """The rig restarted with ``pending`` out: what it did is not known, so an ERASE or CYCLE counts as
        uncertain wear (none of it certain), and the campaign ends."""
        op = Opcode(pending.op)
        with self.store.tx() as db:
            if op == Opcode.ERASE:
                self.store.add_uncertain(db, self.c.chip_id, P.ERASE_REQ.unpack(pending.payload)[0], 1)
            elif op == Opcode.CYCLE:
                first, n_blocks, cycles, _, _ = P.CYCLE_REQ.unpack(pending.payload[:P.CYCLE_REQ.size])
                for b in range(first, first + n_blocks):
                    self.store.add_uncertain(db, self.c.chip_id, b, cycles)
            self.store.clear_journal(db, self.c.id)
        self._fail(f"its rig restarted with request {pending.step} ({op.name}) in flight"
                   + (" (its wear is recorded as uncertain)" if op in (Opcode.ERASE, Opcode.CYCLE) else ""))

    def _fail(self, why: str) -> None:
        why = (f"{why}: what the program built up in the rig (FLARES' tables and page histories, its clock) is "
               "gone, so the run cannot go on; its wear is kept")
        self.store.set_state(self.c.id, "failed", why)
        raise NandrigError(f"campaign {self.c.id} ({self.c.kind}) failed: {why}")
