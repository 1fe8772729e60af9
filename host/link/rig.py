"""The host's rig client: a typed API over the protocol of docs/protocol.md.

``Rig.open(url)`` talks to any rig: ``sim`` (an in-process virtual rig),
``socket://host:port`` (e.g. ``nandrig sim serve`` or the RTL rig),
``/dev/ttyUSB0`` (a board) or any other pyserial URL. Every request is
answered exactly once or raises a clear error: lost or corrupt replies are
retried with the same sequence number, which the rig answers from its reply
cache, so a retried ERASE or CYCLE is never applied twice.
"""
from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
import dataclasses
from dataclasses import dataclass

import numpy as np

from nandrig.characterization.flares import FlaresConfig, Zone
from nandrig.errors import NandrigError
from nandrig.chip.onfi import PARAM_ERROR_TEXT, ParamError
from nandrig import protocol as P
from nandrig.protocol import (CycleFlag, Deframer, EraseFlag, Err, FlaresProgramFlag, Frame, HelloFlag, Opcode,
                              ProfileSource, ProgramFlag, ReadFlag, ReplyAssembly)
from nandrig.characterization.flares_wire import TablesBlob, check_fits
from nandrig.characterization.flares_wire import decode as decode_tables
from nandrig.host.link.place import SCHEME as PLACE_SCHEME
from nandrig.host.link.place import PlaceLease
from nandrig.host.link.transport import InProcessTransport, SerialTransport, Transport



class RigError(NandrigError):
    def __init__(self, op: Opcode, code: int, message: str = "") -> None:
        self.op, self.code = op, code
        name = Err(code).name if code in Err._value2member_map_ else f"error {code}"
        super().__init__(message or f"rig refused {op.name}: {name}")


class RigHeld(RigError):
    """HELLO refused: another host session holds the rig."""

    def __init__(self, where: str, holder: int) -> None:
        self.holder = holder
        super().__init__(Opcode.HELLO, Err.HELD, f"the rig at {where} is held by another host session "
                                                 f"({holder:08x}); --take-over takes it")


class RigRestarted(RigError):
    """The rig started anew while a request was out: its reply cache and the command's progress are gone."""

    def __init__(self, op: Opcode, where: str) -> None:
        super().__init__(op, Err.INTERNAL, f"the rig at {where} restarted while {op.name} was running (power loss "
                                           f"or reset): what it did is known only up to its last progress report")


@dataclass(frozen=True)
class Hello:
    version: tuple[int, int]
    kind: P.RigKind
    capabilities: P.Cap
    identity: str
    boot: int  # drawn anew at each rig start


@dataclass(frozen=True)
class RigInfo:
    read_id: bytes
    manufacturer: str
    model: str
    page_bytes: int
    spare_bytes: int
    pages_per_block: int
    blocks: int
    bits_per_cell: int
    timing_modes: tuple[int, ...]
    timing_mode: int
    ecc_bits: int
    codeword_bytes: int
    t_max: int
    capabilities: P.Cap
    capture: P.Capture = P.Capture.CALIBRATED
    rd_trim: int = 0
    trim_pass: int = 0  # bit i: trim Limit.CAPTURE_TRIM_MIN + i read the chip
    unique_id: bytes | None = None  # ONFI READ UNIQUE ID, checked: which physical chip this is
    ecc_step_bytes: int = 512
    luns: int = 1
    param_status: ParamError = ParamError.OK  # why the rig drives no chip, when it does not
    capture_step_ps: int = 10_000  # what a trim step moves the capture point
    target: int = 0  # the target (CE#) this describes
    targets: tuple[int, ...] = (0,)  # the targets the rig found a chip on

    @property
    def raw_page_bytes(self) -> int:
        return self.page_bytes + self.spare_bytes

    @property
    def passing_trims(self) -> list[int]:
        return [P.Limit.CAPTURE_TRIM_MIN + i for i in range(16) if self.trim_pass >> i & 1]

    @property
    def capture_margins_ps(self) -> tuple[int, int] | None:
        """What the sweep showed of the chosen trim's setup and hold: the steps to the first failing trim below
        it and above it (at least that much margin, less than a step more), in ps; None where the chosen trim
        did not pass. A run that reaches the sweep's end counts only to its end."""
        passing = set(self.passing_trims)
        if self.rd_trim not in passing:
            return None
        lo = hi = self.rd_trim
        while lo - 1 in passing:
            lo -= 1
        while hi + 1 in passing:
            hi += 1
        return (self.rd_trim - lo) * self.capture_step_ps, (hi - self.rd_trim) * self.capture_step_ps

    def require_chip(self) -> None:
        """Refuse a rig that could not read its chip, with the one line a user needs."""
        if self.capture != P.Capture.CALIBRATED:
            lo, hi = P.Limit.CAPTURE_TRIM_MIN, P.Limit.CAPTURE_TRIM_MAX
            raise NandrigError(f"the rig cannot read its chip: no read-capture trim ({lo}..{hi}) read the ID and "
                               "parameter page in timing mode 0; check the adapter (nandrig rig selftest)")
        if self.param_status != ParamError.OK:
            raise NandrigError(f"the rig drives no chip: parameter page: {PARAM_ERROR_TEXT[self.param_status]} "
                               "(nandrig rig info --dump-param-page FILE, then rig decode-param-page FILE)")


def _param_status(code: int) -> ParamError:
    try:
        return ParamError(code)
    except ValueError:
        raise NandrigError(f"the rig reports parameter-page status {code}, which this host does not know") from None


@dataclass(frozen=True)
class ChipResult:
    chip_status: int
    busy_ns: int

    @property
    def fail(self) -> bool:
        return bool(self.chip_status & 0x01)


@dataclass(frozen=True)
class Codeword:
    err_1to0: int
    err_0to1: int
    corrected: int  # -1: decode failure

    @property
    def errors(self) -> int:
        return self.err_1to0 + self.err_0to1


@dataclass(frozen=True)
class ReadResult:
    chip_status: int
    busy_ns: int
    codewords: tuple[Codeword, ...]
    data: bytes | None

    @property
    def errors(self) -> int:
        return sum(c.errors for c in self.codewords)


@dataclass(frozen=True)
class FlaresStep:
    """What the rig's FLARES did for one operation on a page."""

    t: int  # the t the page was encoded (program) or decoded (read) with; 0: no profile, not decoded
    zone: Zone  # NONE unless this operation closed the page's window
    p: int  # the t the evaluation computed for the projected RBER
    flags: P.Decide

    @classmethod
    def unpack(cls, payload: bytes, offset: int = 0) -> "FlaresStep":
        t, zone, p, flags = P.FLARES_DECISION.unpack(payload, offset)
        return cls(t, Zone(zone), p, P.Decide(flags))


@dataclass(frozen=True)
class FlaresRigTables:
    """The FLARES tables a rig decides with."""

    source: P.TablesSource  # BUILTIN: compiled in (none sent since the rig started)
    crc: int  # CRC-32 of the tables sent (0 for BUILTIN)
    models: int = 0  # 1: one model for every page; 2: lower and upper pages apart (0: not reported)


@dataclass(frozen=True)
class FlaresRigConfig:
    t_min: int
    t_cap: int  # the largest t the rig can give a page (its spare area, its engine)
    profile_slots: int
    tables: FlaresRigTables


@dataclass(frozen=True)
class FlaresProgramResult:
    chip_status: int
    busy_ns: int
    step: FlaresStep


@dataclass(frozen=True)
class FlaresReadResult:
    step: FlaresStep
    source: ProfileSource  # where the page's profile came from
    deterr: int  # the error count FLARES took: corrected bits per data codeword, rounded up
    failed: int  # data codewords the decoder could not correct
    read: ReadResult


@dataclass(frozen=True)
class CycleResult:
    done: dict[int, int]  # block -> cycles completed
    failed: dict[int, bool]
    aborted: bool


@dataclass(frozen=True)
class MeasureResult:
    blocks: tuple[int, ...]
    pages: tuple[int, ...]
    err_1to0: np.ndarray  # [block index, page index]
    err_0to1: np.ndarray
    busy_ns: np.ndarray  # tR per page; NaN where a cache read hid it

    @property
    def errors(self) -> np.ndarray:
        return self.err_1to0 + self.err_0to1


@dataclass(frozen=True)
class Status:
    busy: bool
    op: int
    seq: int
    done: int
    total: int
    boot: int


class Rig:
    def __init__(self, transport: Transport, *, timeout: float = 2.0, retries: int = 8, poll_s: float = 0.5,
                 session: int | None = None, take_over: bool | Callable[[int], bool] = False,
                 observe: bool = False, patience_s: float = 120.0, target: int = 0) -> None:
        """One host session on the rig, for the chip on ``target`` (CE# k of the rig's shared bus). The rig is
        held by one session at a time: ``take_over`` (or a predicate on the holding session, true for sessions
        known to be dead) takes it from another; ``observe`` only looks (read-only requests), taking nothing.
        Closing releases it. ``retries`` bounds the requests sent
        into silence; a rig that answers with damaged frames (a noisy link) is asked again at once, for up to
        ``patience_s`` seconds of nothing but damage."""
        self.t = transport
        self._lease: PlaceLease | None = None  # a labgrid place this rig was reached through
        self.timeout, self.retries, self.poll_s, self.patience_s = timeout, retries, poll_s, patience_s
        self._deframer = Deframer()
        self._seq = random.randrange(1 << 16)
        self.session = random.randrange(1, 1 << 32) if session is None else session  # 0: no session
        self.progress: Callable[[Status], None] | None = None
        self._info: RigInfo | None = None
        self.last_seq = 0
        self.boot = 0  # the rig's boot id as the last HELLO saw it
        self.observe = observe
        if not 0 <= target < P.Limit.TARGETS_MAX:
            raise NandrigError(f"target {target} is not one a rig has: 0..{P.Limit.TARGETS_MAX - 1}")
        self._target = target
        self._turn = threading.Lock()  # nothing takes it twice: as the shared link's FifoLock
        # a campaign driven by a program journals and records every request but HELLO through this
        # (nandrig.host.engine.recorder): ``recorder(op, payload, ok)`` returns the reply
        self.recorder: Callable[[Opcode, bytes, tuple[Err, ...]], Frame] | None = None
        try:
            self.hello_info = self.hello(flags=HelloFlag.OBSERVE if observe else HelloFlag(0))
        except RigHeld as e:
            if not (take_over(e.holder) if callable(take_over) else take_over):
                raise
            self.hello_info = self.hello(flags=HelloFlag.TAKE_OVER)
        if target and self.hello_info.version < (1, 13):
            v = ".".join(map(str, self.hello_info.version))
            if not observe:
                self._release()
            raise NandrigError(f"{transport.description} speaks protocol {v}, which drives one chip: target {target} "
                               "needs 1.13 (update its firmware)")

    @classmethod
    def open(cls, url: str, *, chip: str = "mlc-3x", seed: int = 0, state: str | None = None,
             exact: bool = False, wiring: str | None = None, stat_reads: bool = False, **kw) -> "Rig":
        """``sim`` for an in-process virtual rig (``chip``, ``seed``, optional ``state`` file and ``wiring``, a
        :meth:`~nandrig.boards.sim.wiring.Wiring.parse` spec, ``stat_reads`` its statistical READ path);
        ``labgrid://[HOST:PORT/]PLACE`` for a place
        acquired through labgrid (:mod:`nandrig.host.link.place`; released when the rig closes); else a pyserial URL."""
        if url.startswith(PLACE_SCHEME):
            lease = PlaceLease(url)
            try:
                rig = cls.open(lease.rig_url, chip=chip, seed=seed, state=state, exact=exact, wiring=wiring, **kw)
            except BaseException:
                lease.release()
                raise
            rig._lease = lease
            return rig
        if url == "sim":
            from nandrig.boards.sim.server import VirtualRig
            from nandrig.boards.sim.wiring import Wiring

            from nandrig.boards.sim.state_file import hold_state

            hold = hold_state(state)  # a chip with state is driven by one process at a time
            hold.__enter__()
            try:
                vr = VirtualRig.open(chip, seed, state, exact=exact, wiring=Wiring.parse(wiring), stat_reads=stat_reads)
            except BaseException:
                hold.__exit__(None, None, None)
                raise
            transport: Transport = InProcessTransport(vr, hold)
        else:
            transport = SerialTransport(url)
        try:
            return cls(transport, **kw)
        except Exception:
            transport.close()
            raise

    def close(self) -> None:
        """Release the rig (best effort: a rig that is gone or busy keeps it until taken over) and close; on a
        shared link, the last of its Rigs releases it."""
        if not self.observe and getattr(self.t, "last", True):
            try:
                self._release()
            except (NandrigError, OSError):  # a simulated rig that cannot save its state (full disk) included
                pass
        self.t.close()
        if self._lease is not None:
            self._lease.release()
            self._lease = None

    def _release(self, wait_s: float = 0.5) -> None:
        """HELLO RELEASE, its reply awaited briefly (a rig serving TCP may not survive writing to a socket its
        client already closed) but never through a long command still running."""
        seq = self.next_seq()
        self.t.write(P.request(Opcode.HELLO, seq, P.HELLO_REQ.pack(*P.VERSION, self.session,
                                                                   HelloFlag.RELEASE)).encode())
        deadline = time.monotonic() + wait_s
        while (left := deadline - time.monotonic()) > 0:
            if any(f.seq == seq and f.op == Opcode.HELLO for f in self._deframer.feed(self.t.read(min(left, 0.05)))):
                return

    def __enter__(self) -> "Rig":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- transactions -----------------------------------------------------------
    def next_seq(self) -> int:
        if (shared := getattr(self.t, "next_seq", None)) is not None:
            return shared()  # a link's Rigs draw from one counter: the rig tells requests apart by seq
        self._seq = (self._seq + 1) & 0xFFFF
        return self._seq

    def turn(self):
        """Held from journaling a request until its reply is recorded, while other Rigs share this one's link
        (:mod:`nandrig.host.link.shared`)."""
        link = getattr(self.t, "link", None)
        return link.turn if link is not None else self._turn

    @property
    def cycle_jobs(self) -> bool:
        """Whether a CYCLE, once sent, leaves the link to other targets' requests (the rig runs it as a job)."""
        return P.Cap.CYCLE_JOBS in self.hello_info.capabilities

    def call(self, op: Opcode, payload: bytes = b"", *, ok: tuple[Err, ...] = (Err.OK,), seq: int | None = None,
             sent: Callable[[], None] | None = None) -> Frame:
        """Send one request and return its reply, retrying until it is answered exactly once (through the
        :attr:`recorder`, when one is set). ``sent`` hears when the request first left."""
        if self.recorder is not None and op != Opcode.HELLO and seq is None:
            return self.recorder(op, payload, ok)
        return self.exchange(op, payload, ok=ok, seq=seq, sent=sent)

    def exchange(self, op: Opcode, payload: bytes = b"", *, ok: tuple[Err, ...] = (Err.OK,),
                 seq: int | None = None, sent: Callable[[], None] | None = None) -> Frame:
        """One request on the link and its reply, retried until it is answered exactly once."""
        seq = self.next_seq() if seq is None else seq
        self.last_seq = seq
        target = self._target if op in P.TARGETED else 0
        raw = b"\x00" + P.request(op, seq, payload, target).encode()  # the leading delimiter flushes line noise
        self.t.write(raw)
        if sent is not None:
            sent()
        attempts, status_seq = 0, None
        assembly = ReplyAssembly(op, seq)  # a reply in parts (a streaming rig's MEASURE)
        careful = op in P.LONG and op not in P.REREAD  # never run twice on a restarted rig
        now = time.monotonic()
        deadline, next_poll = now + self.timeout, now + self.poll_s
        # a noisy link: frames that arrived broken, or bytes that never made a frame, since when
        damaged, damaged_since, heard = self._deframer.dropped, None, False
        while True:
            remaining = max(0.0, min(deadline, next_poll if op in P.LONG else deadline) - time.monotonic())
            data = self.t.read(min(remaining, 0.05))
            heard = heard or bool(data)
            frames = self._deframer.feed(data)
            now = time.monotonic()
            broken = self._deframer.dropped > damaged and not any(f.seq == seq and f.op == op for f in frames)
            if broken or (now >= deadline and heard):
                # likely our reply, broken on the way (or its delimiter lost): the rig answers a resend from its
                # reply cache; a partial frame left in the deframer would swallow that answer
                damaged_since, heard = damaged_since or now, False
                if now - damaged_since > self.patience_s:
                    raise RigError(op, Err.TIMEOUT, f"every reply to {op.name} from the rig at {self.t.description} "
                                                    f"arrived damaged for {self.patience_s:g} s: the link is too "
                                                    f"noisy (check the cable, or raise --link-patience)")
                self._deframer.flush()
                damaged = self._deframer.dropped
                if careful:  # re-sent only once STATUS says the same boot is idle: ask now
                    next_poll = now
                else:
                    self.t.write(raw)
                deadline = now + self.timeout
            for f in frames:
                if f.type in (P.PART_TYPE, P.END_TYPE) and f.seq == seq and f.op == op:
                    deadline = time.monotonic() + self.timeout  # it is on its way
                    f = assembly.take(f)
                    if assembly.gap:  # parts lost on the way: asked again (a rig done answers from its cache)
                        assembly.gap = False
                        self.t.write(raw)
                    if f is None:
                        continue
                if f.type != P.REPLY_TYPE:
                    continue
                if f.seq == seq and f.op == op:
                    if f.status == Err.BUSY:  # another command still runs (a previous session's)
                        time.sleep(self.poll_s)
                        self.t.write(raw)
                        deadline = time.monotonic() + self.timeout
                        continue
                    if f.status not in ok:
                        raise RigError(op, f.status)
                    return f
                if status_seq is not None and f.seq == status_seq and f.op == Opcode.STATUS and f.status == Err.OK:
                    st = _status(f.payload)
                    if self.boot and st.boot != self.boot:  # re-sent now, the request would run a second time
                        raise RigRestarted(op, self.t.description)
                    attempts = 0  # the rig is there: silence so far was the link's
                    if st.busy and st.seq == seq:
                        deadline = time.monotonic() + self.timeout  # alive and working on it
                        damaged_since = None
                        if self.progress:
                            self.progress(st)
                    elif not st.busy:
                        self.t.write(raw)  # it finished but its reply got lost: ask again
            now = time.monotonic()
            if op in P.LONG and now >= next_poll:
                status_seq = self.next_seq()
                self.t.write(P.request(Opcode.STATUS, status_seq, target=self._target).encode())  # its job's
                next_poll = now + self.poll_s
            if now >= deadline:  # silence
                attempts += 1
                if attempts > self.retries:
                    raise RigError(op, Err.TIMEOUT, f"rig at {self.t.description} did not answer {op.name} "
                                                    f"after {attempts} attempts")
                if attempts == self.retries // 2:
                    self.t.reopen()  # reconnect once half the retries are spent
                    self._deframer = Deframer()
                if careful:
                    next_poll = now
                else:
                    self.t.write(raw)
                deadline = now + self.timeout

    # -- commands ---------------------------------------------------------------
    def hello(self, session: int | None = None, flags: HelloFlag = HelloFlag(0)) -> Hello:
        if session is not None:
            self.session = session
        f = self.call(Opcode.HELLO, P.HELLO_REQ.pack(*P.VERSION, self.session, flags), ok=(Err.OK, Err.HELD))
        major, minor, kind, caps, holder, boot, n = P.HELLO_REPLY.unpack(f.payload)
        if f.status == Err.HELD:
            raise RigHeld(self.t.description, holder)
        ident = f.payload[P.HELLO_REPLY.size:P.HELLO_REPLY.size + n].decode("ascii", "replace")
        self.boot = boot
        return Hello((major, minor), P.RigKind(kind), P.Cap(caps), ident, boot)

    @property
    def target(self) -> int:
        """The target (CE#) the session's chip requests address."""
        return self._target

    @target.setter
    def target(self, target: int) -> None:
        if target != self._target:
            self._info = None  # INFO describes a target's chip
        self._target = target

    def info(self) -> RigInfo:
        if self._info is None:
            try:
                f = self.call(Opcode.INFO)
            except RigError as e:
                if e.code != Err.OUT_OF_RANGE or not self.target:
                    raise
                have = self.info_at(0).targets
                raise NandrigError(f"{self.t.description} has no chip on target {self.target} (targets with a chip: "
                                   f"{', '.join(map(str, have))})") from None
            self._info = self._parse_info(f.payload)
        return self._info

    def info_at(self, target: int) -> RigInfo:
        """INFO of a target of this rig, not cached (the session's own target stays)."""
        mine, self._target = self._target, target
        try:
            return self._parse_info(self.exchange(Opcode.INFO).payload)
        finally:
            self._target = mine

    @staticmethod
    def _parse_info(payload: bytes) -> "RigInfo":
        v = P.INFO_REPLY.unpack_exact(payload)
        return RigInfo(
            read_id=v[0], manufacturer=v[1].decode("ascii", "replace").strip(" \x00"),
            model=v[2].decode("ascii", "replace").strip(" \x00"), page_bytes=v[3], spare_bytes=v[4],
            pages_per_block=v[5], blocks=v[6], bits_per_cell=v[7],
            timing_modes=tuple(m for m in range(16) if v[8] >> m & 1), timing_mode=v[9], ecc_bits=v[10],
            codeword_bytes=v[11], t_max=v[12], capabilities=P.Cap(v[13]), capture=P.Capture(v[14]),
            rd_trim=v[15], trim_pass=v[16], unique_id=v[18] if v[17] else None, ecc_step_bytes=v[19],
            luns=v[20], param_status=_param_status(v[21]), capture_step_ps=v[22], target=v[23],
            targets=tuple(k for k in range(P.Limit.TARGETS_MAX) if v[24] >> k & 1),
        )

    def reset(self) -> int:
        return P.BYTE_REPLY.unpack(self.call(Opcode.RESET).payload).value

    def read_id(self, address: int = 0x00) -> bytes:
        p = self.call(Opcode.READ_ID, P.READ_ID_REQ.pack(address)).payload
        n = P.READ_ID_HEAD.unpack(p).n
        return p[P.READ_ID_HEAD.size:P.READ_ID_HEAD.size + n]

    def read_param_page(self) -> bytes:
        return self.call(Opcode.READ_PARAM_PAGE).payload

    def scan_bad(self, first: int = 0, count: int | None = None) -> list[int]:
        count = self.info().blocks - first if count is None else count
        bad: list[int] = []
        for start in range(first, first + count, P.Limit.SCAN_BAD_MAX_BLOCKS):
            n = min(P.Limit.SCAN_BAD_MAX_BLOCKS, first + count - start)
            bits = self.call(Opcode.SCAN_BAD, P.SCAN_BAD_REQ.pack(start, n)).payload
            bad += [start + i for i in range(n) if bits[i // 8] >> (i % 8) & 1]
        return bad

    def erase(self, block: int, *, force: bool = False) -> ChipResult:
        f = self.call(Opcode.ERASE, P.ERASE_REQ.pack(block, EraseFlag.FORCE if force else 0), ok=(Err.OK, Err.CHIP_FAIL))
        return ChipResult(*P.CHIP_RESULT.unpack(f.payload))

    def program(self, block: int, page: int, *, seed: int | None = None, data: bytes | None = None, t: int = 0,
                force: bool = False) -> ChipResult:
        if (seed is None) == (data is None):
            raise NandrigError("program needs either a pattern seed or data")
        flags = (ProgramFlag.FORCE if force else 0) | (ProgramFlag.EXPLICIT if data is not None else 0)
        body = P.PROGRAM_HEAD.pack(block, page, t, flags) + (bytes(data) if data is not None else P.PATTERN_SEED.pack(seed))
        if len(body) > P.MAX_PAYLOAD:
            raise NandrigError(f"{len(data)} bytes of page data do not fit one request (at most "
                               f"{P.MAX_PAYLOAD - P.PROGRAM_HEAD.size}): program a pattern seed instead")
        f = self.call(Opcode.PROGRAM, body, ok=(Err.OK, Err.CHIP_FAIL))
        return ChipResult(*P.CHIP_RESULT.unpack(f.payload))

    def read(self, block: int, page: int, *, seed: int | None = None, t: int = 0, raw: bool = False) -> ReadResult:
        """With ``raw``, the page's bytes too: in READ's reply when they fit a frame, else from the rig's page
        buffer (READ_BUFFER) right after."""
        info = self.info()
        inline = raw and P.read_reply_bytes(info.page_bytes, info.spare_bytes, info.codeword_bytes) <= P.MAX_PAYLOAD
        flags = (ReadFlag.COMPARE if seed is not None else 0) | (ReadFlag.RAW if inline else 0)
        f = self.call(Opcode.READ, P.READ_REQ.pack(block, page, t, flags, seed or 0))
        result = read_result(f.payload, inline)
        if raw and not inline:
            result = dataclasses.replace(result, data=self.read_buffer(info.raw_page_bytes))
        return result

    def read_buffer(self, n: int) -> bytes:
        """The first ``n`` bytes of the rig's page buffer (the page a READ just read), in frame-sized pieces."""
        return b"".join(self.call(Opcode.READ_BUFFER, P.READ_BUFFER_REQ.pack(k, min(P.MAX_PAYLOAD, n - k))).payload
                        for k in range(0, n, P.MAX_PAYLOAD))

    # -- FLARES on the rig: the rig picks each page's t (docs/protocol.md) ---------------------
    def flares_config(self, cfg: FlaresConfig) -> FlaresRigConfig:
        """Set FLARES' constants (the rig forgets every page's counters)."""
        flags = (P.FlaresConfigFlag.EVALUATE_ON_ALARM if cfg.evaluate_on_alarm else 0) | \
            (P.FlaresConfigFlag.GUARDED if cfg.guarded else 0)
        f = self.call(Opcode.FLARES_CONFIG, P.FLARES_CONFIG_REQ.pack(
            cfg.wsize, cfg.mix_pm, cfg.saferange_pm, cfg.maxfail, cfg.maxcritical, cfg.maxover, cfg.req_ret_s, flags)
            + (P.FLARES_GUARD_REQ.pack(cfg.guard_z10, cfg.alarm_use_pm) if cfg.guarded else b""))
        t_min, t_cap, slots, source, crc = P.FLARES_CONFIG_REPLY.unpack_exact(f.payload)
        return FlaresRigConfig(t_min, t_cap, slots, FlaresRigTables(P.TablesSource(source), crc))

    def flares_tables(self, blob: TablesBlob | None, chunk: int = 8192) -> FlaresRigTables:
        """Send FLARES tables (None: back to the compiled-in ones). The rig stages the chunks and takes the set
        only whole, its CRC and dimensions checked; a refusal (BAD_PARAMETER) leaves its old tables in use.
        The rig forgets every page's counters when its tables change."""
        if blob is None:
            f = self.call(Opcode.FLARES_TABLES, P.FLARES_TABLES_REQ.pack(0, 0, 0, P.FlaresTablesFlag.BUILTIN))
        else:
            check_fits(decode_tables(blob.data))  # what does not fit, named before the rig refuses it
            data, crc = blob.data, blob.crc
            for k in range(0, len(data), chunk):
                last = k + chunk >= len(data)
                f = self.call(Opcode.FLARES_TABLES, P.FLARES_TABLES_REQ.pack(
                    k, len(data), crc, P.FlaresTablesFlag.COMMIT if last else 0) + data[k:k + chunk])
        source, models, crc = P.FLARES_TABLES_REPLY.unpack_exact(f.payload)
        got = FlaresRigTables(P.TablesSource(source), crc, models)
        if blob is not None and got.crc != blob.crc:
            raise RigError(Opcode.FLARES_TABLES, Err.INTERNAL, f"the rig reports FLARES tables {got.crc:08x} after taking {blob.crc:08x}")
        return got

    def require(self, version: tuple[int, int], what: str) -> None:
        """Refuse, in one line, what a rig of an older protocol cannot do."""
        if self.hello_info.version < version:
            have, need = (".".join(map(str, v)) for v in (self.hello_info.version, version))
            raise NandrigError(f"{self.t.description} speaks protocol {have}: {what} needs {need} (update its firmware)")

    def flares_clock(self, credit_s: int) -> int:
        """Set the 25 degC-equivalent seconds the target's data aged beyond the rig's clock (its bakes' Arrhenius
        equivalent less their duration: a total); FLARES' clock, with it, which the next program stamps."""
        self.require((1, 14), "ageing FLARES' pages by a bake (FLARES_CLOCK)")
        f = self.call(Opcode.FLARES_CLOCK, P.FLARES_CLOCK_REQ.pack(credit_s))
        return P.FLARES_CLOCK_REPLY.unpack_exact(f.payload).now_s

    def flares_program(self, block: int, page: int, *, seed: int, pe: int, force: bool = False,
                       upper: bool = False) -> FlaresProgramResult:
        """Program the pattern at the t FLARES holds for the page; ``pe`` is the block's P/E count with
        this program's erase (the host counts wear, the rig keeps the page's profile); ``upper``: the page is
        its wordline's upper page (the chip's page map), which a rig with two models decides on its own."""
        flags = (FlaresProgramFlag.FORCE if force else 0) | (FlaresProgramFlag.UPPER_PAGE if upper else 0)
        f = self.call(Opcode.FLARES_PROGRAM, P.FLARES_PROGRAM_REQ.pack(block, page, flags, seed, pe),
                      ok=(Err.OK, Err.CHIP_FAIL))
        status, busy = P.CHIP_RESULT.unpack(f.payload)
        return FlaresProgramResult(status, busy, FlaresStep.unpack(f.payload, P.CHIP_RESULT.size))

    def flares_read(self, block: int, page: int, *, seed: int | None = None, raw: bool = False,
                    upper: bool = False) -> FlaresReadResult:
        """Read and decode the page at its profile's t; FLARES counts the corrected bits."""
        flags = ((P.FlaresReadFlag.COMPARE if seed is not None else 0) | (P.FlaresReadFlag.RAW if raw else 0)
                 | (P.FlaresReadFlag.UPPER_PAGE if upper else 0))
        f = self.call(Opcode.FLARES_READ, P.FLARES_READ_REQ.pack(block, page, flags, seed or 0))
        source, deterr, failed = P.FLARES_READ_TAIL.unpack(f.payload, P.FLARES_DECISION.size)
        head = P.FLARES_DECISION.size + P.FLARES_READ_TAIL.size
        return FlaresReadResult(FlaresStep.unpack(f.payload), ProfileSource(source), deterr, failed,
                                read_result(f.payload[head:], raw))

    def set_read_offset(self, offset: int) -> int:
        return P.BYTE_REPLY.unpack(self.call(Opcode.SET_READ_OFFSET, P.SET_READ_OFFSET_REQ.pack(offset)).payload).value

    def energy(self) -> tuple:
        """The chip's supply energy and time over busy and transfer windows since the last call (the meter is
        zeroed): UNSUPPORTED on a rig without a current-sense front end."""
        return P.ENERGY_REPLY.unpack(self.call(Opcode.ENERGY).payload)

    def set_read_refs(self, vr1: int, vr2: int, vr3: int) -> int:
        """Each read reference at its own read-retry offset: the chip's status."""
        return P.BYTE_REPLY.unpack(self.call(Opcode.SET_READ_REFS, P.SET_READ_REFS_REQ.pack(vr1, vr2, vr3)).payload).value

    def set_verify_levels(self, pv1: int, pv2: int, pv3: int) -> int:
        """L1..L3's program-verify levels at these offsets (the design's vendor feature; NUNMA): the chip's status."""
        return P.BYTE_REPLY.unpack(self.call(Opcode.SET_VERIFY_LEVELS,
                                             P.SET_VERIFY_LEVELS_REQ.pack(pv1, pv2, pv3)).payload).value

    def cycle(self, first: int, n_blocks: int, cycles: int, seed: int, *, force: bool = False,
              pages: list[int] | None = None) -> CycleResult:
        """``pages``: each round programs only these (pseudo-SLC: the lower pages); default every page."""
        flags = (CycleFlag.FORCE if force else 0) | (CycleFlag.PAGE_SET if pages is not None else 0)
        tail = P.page_set_bytes(pages, self.info().pages_per_block) if pages is not None else b""
        f = self.call(Opcode.CYCLE, P.CYCLE_REQ.pack(first, n_blocks, cycles, seed, flags) + tail,
                      ok=(Err.OK, Err.ABORTED))
        done, failed = decode_cycle_reply(f.payload, first, n_blocks)
        return CycleResult(done, failed, f.status == Err.ABORTED)

    def measure(self, first: int, n_blocks: int, seed: int, first_page: int = 0, n_pages: int | None = None,
                timed: bool = False) -> MeasureResult:
        """Every page's error counts against the pattern. ``timed``: each page read on its own, so each reports its
        tR; otherwise a chip with cache read streams the pages, and only each block's first page's tR is seen."""
        info = self.info()
        flags = int(P.MeasureFlag.TIMED) if timed else 0
        n_pages = info.pages_per_block - first_page if n_pages is None else n_pages
        per_call = max(1, P.MAX_PAYLOAD // (n_pages * P.MEASURE_PAGE.size))
        rows = []
        for start in range(first, first + n_blocks, per_call):
            nb = min(per_call, first + n_blocks - start)
            f = self.call(Opcode.MEASURE, P.MEASURE_REQ.pack(start, nb, first_page, n_pages, seed, flags))
            rows.append(np.frombuffer(f.payload, dtype=MEASURE_DTYPE))
        a = np.concatenate(rows).reshape(n_blocks, n_pages)
        return MeasureResult(tuple(range(first, first + n_blocks)), tuple(range(first_page, first_page + n_pages)),
                             a["err_1to0"].astype(np.int64), a["err_0to1"].astype(np.int64), busy_ns_seen(a["busy_ns"]))

    def read_disturb(self, block: int, page: int, reads: int) -> tuple[int, int]:
        f = self.call(Opcode.READ_DISTURB, P.READ_DISTURB_REQ.pack(block, page, reads), ok=(Err.OK, Err.ABORTED))
        return tuple(P.READ_DISTURB_REPLY.unpack_exact(f.payload))

    def time_ns(self) -> int:
        return P.CLOCK_REPLY.unpack_exact(self.call(Opcode.TIME).payload).rig_clock_ns

    def advance(self, *, hours: float = 0.0, temp_c: float = 25.0) -> int:
        """Let virtual time pass (simulated rigs only), optionally as a bake at ``temp_c``."""
        if hours < 0:
            raise NandrigError("cannot advance time backwards")
        ns = int(round(hours * 3.6e12))
        f = self.call(Opcode.ADVANCE, P.ADVANCE_REQ.pack(ns, int(round(temp_c * 100))))
        return P.CLOCK_REPLY.unpack_exact(f.payload).rig_clock_ns

    def status(self) -> Status:
        return _status(self.call(Opcode.STATUS).payload)

    def abort(self) -> bool:
        return bool(P.BYTE_REPLY.unpack(self.call(Opcode.ABORT).payload).value)


def read_result(payload: bytes, raw: bool) -> ReadResult:
    status, busy, n = P.READ_HEAD.unpack(payload)
    off = P.READ_HEAD.size
    cws = tuple(Codeword(*P.CODEWORD_COUNTS.unpack(payload, off + i * P.CODEWORD_COUNTS.size)) for i in range(n))
    return ReadResult(status, busy, cws, payload[off + n * P.CODEWORD_COUNTS.size:] if raw else None)


# MEASURE's reply as a numpy record array, from the same layout
MEASURE_DTYPE = np.dtype(P.MEASURE_PAGE.dtype())


def busy_ns_seen(busy: np.ndarray) -> np.ndarray:
    """MEASURE's busy times in ns, NaN where a cache read hid the page's array time."""
    return np.where(busy == P.Limit.BUSY_NOT_SEEN, np.nan, busy.astype(np.float64))


def decode_cycle_reply(payload: bytes, first: int, n_blocks: int) -> tuple[dict[int, int], dict[int, bool]]:
    """CYCLE's reply: per block, the rounds it did and whether it failed."""
    done, failed = {}, {}
    for i in range(n_blocks):
        d, bad = P.CYCLE_BLOCK.unpack(payload, P.CYCLE_HEAD.size + i * P.CYCLE_BLOCK.size)
        done[first + i], failed[first + i] = d, bool(bad)
    return done, failed


def _status(payload: bytes) -> Status:
    busy, op, seq, done, total, boot = P.STATUS_REPLY.unpack_exact(payload)
    return Status(bool(busy), op, seq, done, total, boot)
