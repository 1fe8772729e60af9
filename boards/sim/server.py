"""The virtual rig: the golden model of the firmware's command handling (docs/protocol.md).

It answers protocol frames over a :class:`VirtualChip`, exactly as the rig
firmware answers them over a real chip: range and bad-block checks, the reply
cache that makes retries idempotent, long commands that keep answering
STATUS and ABORT, and patterns generated and checked on the rig.

Two measurement paths: ``exact=False`` (default) answers MEASURE and CYCLE
from the chip's statistical path and bulk cycling (fast; same distribution),
``exact=True`` reads every page byte by byte and cycles operation by
operation, as the RTL rig does, so the two can be compared value for value.

With ``state_path`` the rig persists the chip together with its reply cache
after every command that changes either, before the reply leaves, so a host
killed at any instant finds the rig where it left it. A ``volatile`` rig
(``nandrig sim serve``) is a board that can lose power: its chip is also saved
while a long command runs (every 0.1 s, and before each STATUS answer so no
progress is reported that a restart could take back) and a restart from the state is a
power-up: new boot id, reply cache, holder and FLARES RAM gone, the chip's wear
kept.
"""
from __future__ import annotations

import random
import secrets
import struct
import time
import zlib
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path


from nandrig.boards.sim import ecc_layout, rig_flares
from nandrig.virtual_chip.chip import VirtualChip
from nandrig.virtual_chip.power import EnergyMeter
from nandrig.virtual_chip.profile import load_profile
from nandrig.boards.sim.state_file import load_state, save_state
from nandrig.boards.sim.commands import ChipCommands
from nandrig.boards.sim.flares_ops import FlaresCommands
from nandrig.boards.sim.bus_schedule import JobOps, job_ends
from nandrig.boards.sim.job import Job, JobControl, RigIO
from nandrig.boards.sim.rig import Reject
from nandrig.boards.sim.target import VirtualTarget, on_target
from nandrig.boards.sim.wiring import Wiring
from nandrig.chip.onfi import Feature, ParamError
from nandrig.chip.param_page import RIG_LIMITS, ParamPageError, check_drivable, decode_dump, first_valid_copy
from nandrig.gateware.onfi.timing import DEFAULT_CLK_HZ, trim_centre
from nandrig.errors import NandrigError
from nandrig import protocol as P
from nandrig.protocol import Err, Frame, Limit, Opcode

# commands after which the persisted state may differ
# HELLO changes the rig's state only when it changes who holds it (handle() compares)
MUTATING = set(Opcode) - {Opcode.INFO, Opcode.READ_ID, Opcode.READ_PARAM_PAGE, Opcode.TIME, Opcode.STATUS, Opcode.ABORT,
                          Opcode.HELLO}
# requests that read or change no chip and no clock: they leave the CYCLEs not yet placed on the bus as they are
QUIET = frozenset({Opcode.STATUS, Opcode.ABORT, Opcode.INFO, Opcode.HELLO})
# parts of the state file written on their own: an operation changes one block, so a save encodes only it
STATE_APART = frozenset({("chip", "blocks", "*"), ("chip", "profile"), ("flares",),
                         ("targets", "*", "chip", "blocks", "*"), ("targets", "*", "chip", "profile"),
                         ("targets", "*", "flares")})


class VirtualRig(ChipCommands, FlaresCommands, JobControl):
    chip = on_target("chip")
    wiring = on_target("wiring")
    t_max = on_target("t_max")
    flares = on_target("flares")
    bad = on_target("bad")
    capture = on_target("capture")
    rd_trim = on_target("rd_trim")
    trim_pass = on_target("trim_pass")
    ident = on_target("ident")
    param_status = on_target("param_status")

    def __init__(self, chip: VirtualChip, *, exact: bool = False, state_path: str | Path | None = None,
                 clk_hz: float = DEFAULT_CLK_HZ, wiring: Wiring = Wiring(), volatile: bool = False, capture_steps: int = 1,
                 bch_t_max: int = ecc_layout.CONFIG.t_max, others: Mapping[int, VirtualChip] | None = None,
                 socket_wiring: Mapping[int, Wiring] | None = None, bus_time: bool = True,
                 stat_reads: bool = False) -> None:
        """``chip`` on target 0 and ``others`` on theirs (CE# k, sharing the bus and the rig's clock and oven);
        ``clk_hz``: the controller clock the read-capture calibration is for, in ``capture_steps`` per cycle;
        ``wiring``: the adapter, and ``socket_wiring`` a target's own where it differs (its traces' delay);
        ``bch_t_max``: the t_max of the BCH engine the rig's SoC is built with; ``bus_time``: CYCLEs' transfers
        take time on the clock (False: none, as on the firmware's parity stub, whose bus is instant);
        ``stat_reads``: a page PROGRAMmed from a pattern (under ECC or raw) is read back on the statistical path, its errors
        drawn by count and decoded by count (``ChipCommands._stat_read_reply``), about ten times faster than
        drawing every cell: for the workload replays, whose pages the host only checks against their pattern."""
        chips = {0: chip, **(others or {})}
        if not all(0 <= k < Limit.TARGETS_MAX for k in chips):
            raise NandrigError(f"a rig's targets are 0..{Limit.TARGETS_MAX - 1}")
        socket_wiring = socket_wiring or {}
        self.targets = {k: VirtualTarget.on(c, socket_wiring.get(k, wiring), bch_t_max) for k, c in sorted(chips.items())}
        self.at = self.targets[0]  # the target the request being served addresses
        self.boot = secrets.randbits(32) or 1
        self.volatile = volatile
        self._saved_at = 0.0
        self._saved_parts: dict = {}  # the state file's parts as last written (save_state reuses unchanged ones)
        self.codeword_bytes = ecc_layout.CODEWORD_BYTES
        self.exact = exact
        self.bus_time = bus_time
        self.stat_reads = stat_reads
        self._stat_gen = random.Random()  # reseeded for each statistical read (a new one costs as much again)
        self.state_path = Path(state_path) if state_path else None
        # per session its latest reply, as (seq, crc, frame), least recently stored first (firmware/rig/server.c)
        self.cache: OrderedDict[int, tuple[int, int, Frame]] = OrderedDict()
        self.session = 0
        self.holder = 0  # the host session holding the rig (HELLO), 0 when free
        self.streaming = False  # whether that session's host takes replies in parts (P.STREAMED_SINCE)
        self.page_buffer = b""  # the page as the last READ left it (READ_BUFFER)
        self.job = Job(0, 0)
        self.deferred: list[Frame] = []  # CYCLEs that came while a command ran, to start after it (take_deferred)
        self.abort_at_start: set[tuple[int, int]] = set()  # (target, seq) of kept CYCLEs aborted before they started
        self.kind = P.RigKind.VIRTUAL
        self.clk_hz, self.capture_steps = clk_hz, capture_steps
        self.capture_step_ps = round(1e12 / clk_hz / capture_steps)
        for k in self.targets:
            self.select(k)
            self._boot()
        self.select(0)
        self.launch_ns = self.clock_ns  # when the next CYCLE starts: beside the CYCLEs not yet placed on the bus

    def select(self, target: int, until: int | None = None) -> None:
        """Serve ``target`` from now on; its chip catches up with the rig's clock (it aged while others worked), or
        with ``until``."""
        self.at = self.targets[target]
        lag = (self.clock_ns if until is None else until) - self.at.chip.clock_ns
        if lag > 0:
            self.at.chip.advance_ns(lag)

    # -- start-up ---------------------------------------------------------------
    def _boot(self) -> None:
        """What the firmware does at power-up, per target: calibrate read capture in mode 0, then run the chip in
        the fastest mode it lists in which a capture trim passes (docs/rtl-rig.md, read capture)."""
        if not self._calibrate(0):
            return
        self.capture = P.Capture.CALIBRATED
        try:  # as the firmware's onfi_identify: a chip it cannot drive is refused, not run on zeros
            ident = decode_dump(self.wiring.apply_bytes(self.chip.read_parameter_page()))
            check_drivable(ident.page, RIG_LIMITS)
            self.ident, self.param_status = ident, ParamError.OK
        except ParamPageError as e:
            self.param_status = e.code
            return
        best = next(m for m in (5, 4, 3, 2, 1, 0)
                    if m == 0 or (m in self.chip.profile.onfi["timing_modes"] and self.wiring.trim_pass(m, self.clk_hz, self.capture_steps)))
        if self.chip.get_features(Feature.TIMING_MODE)[0] & 0x0F != best:
            self.chip.set_features(Feature.TIMING_MODE, bytes([best, 0, 0, 0]))
        self._calibrate(best)

    def _calibrate(self, mode: int) -> bool:
        """The capture sweep in ``mode``: the centre of the passing window, or False (trim kept) for none.
        As the firmware, a trim passes when READ ID 20h reads "ONFI" and a parameter-page copy its CRC, which
        faulty DQ lines prevent at every trim."""
        passing = self.wiring.trim_pass(mode, self.clk_hz, self.capture_steps) if self._identity_reads() else 0
        centre = trim_centre(passing, Limit.CAPTURE_TRIM_MIN)
        if centre is None:
            return False
        self.rd_trim, self.trim_pass = centre, passing
        return True

    def _identity_reads(self) -> bool:
        if not self.wiring.dq_faulty:
            return True
        if first_valid_copy(self.wiring.apply_bytes(self.chip.read_parameter_page())) is None:
            return False
        return self.wiring.apply_bytes(self.chip.read_id(0x20)) == b"ONFI"

    # -- persistence ------------------------------------------------------------
    @classmethod
    def open(cls, profile: str, seed: int, state_path: str | Path | None = None,
             others: Mapping[int, tuple[str, int]] | None = None, **kw) -> "VirtualRig":
        """A rig over a fresh chip (profile, seed) on target 0 and ``others`` (target: (profile, seed)), or over
        the chips saved at ``state_path`` when it exists (a ``volatile`` rig: powered up over them)."""
        asked = {k: tuple(v) for k, v in {0: (profile, seed), **(others or {})}.items()}
        if not (state_path and Path(state_path).exists()):
            return cls(VirtualChip(profile, seed), state_path=state_path,
                       others={k: VirtualChip(*v) for k, v in asked.items() if k}, **kw)
        # a profile given as a file (a twin's) is known in the state by the name inside it
        want = {k: (load_profile(p).name if p.endswith(".json") else p, s) for k, (p, s) in asked.items()}
        st = load_state(state_path)
        try:
            saved = {0: st, **{int(k): t for k, t in st.get("targets", {}).items()}}
            chips = {k: VirtualChip.from_state(t["chip"]) for k, t in saved.items()}
            if kw.get("volatile"):
                for c in chips.values():
                    c.power_up()
            if (chips[0].profile.name, chips[0].seed) != want[0]:
                raise NandrigError(f"rig state {state_path} holds chip {chips[0].profile.name} seed {chips[0].seed}, "
                                   f"not {profile} seed {seed}")
            have = {k: (c.profile.name, c.seed) for k, c in chips.items()}
            if have != want:
                raise NandrigError(f"rig state {state_path} holds {_targets_text(have)}, not {_targets_text(want)}")
            rig = cls(chips[0], state_path=state_path, others={k: c for k, c in chips.items() if k}, **kw)
            for k, t in rig.targets.items():
                t.bad = dict(saved[k]["bad"])  # the factory marks the rig scanned protect blocks across power-ups
                if not rig.volatile and "flares" in saved[k]:  # states saved before FLARES ran on the rig have none
                    t.flares = rig_flares.RigFlares.from_state(saved[k]["flares"])
                if not rig.volatile:
                    t.cycle_reply = saved[k].get("cycle_reply")
                    t.chip.energy = EnergyMeter(*saved[k].get("energy", (0, 0, 0, 0)))
                    t.unscheduled = [JobOps.from_state(j) for j in saved[k].get("unscheduled", [])]
            if not rig.volatile:  # a rig that stayed up between two host processes
                rig.boot = int(st.get("boot", rig.boot))
                rig.cache = OrderedDict(st["cache"])
                rig.session = int(st["session"])
                rig.holder = int(st.get("holder", 0))
                rig.launch_ns = int(st.get("launch_ns", rig.launch_ns))
        except (KeyError, TypeError, ValueError) as e:
            raise NandrigError(f"rig state {state_path} is malformed: {e}") from None
        return rig

    def place_jobs(self) -> None:
        """The CYCLEs run since the last other command, placed on the bus together from ``launch_ns``: each
        target's chip moves on to its job's end. A chip that worked alone only waits its bus time more."""
        jobs = {k: list(t.unscheduled) for k, t in self.targets.items() if t.unscheduled}
        for k, end in job_ends(self.launch_ns, jobs).items():
            chip = self.targets[k].chip
            chip.advance_ns(max(0, end - chip.clock_ns))
            self.targets[k].unscheduled.clear()

    @property
    def clock_ns(self) -> int:
        """The rig's clock: the chip that worked last is the furthest on; the others catch up when served."""
        return max(t.chip.clock_ns for t in self.targets.values())

    def wait(self, hours: float, temp_c: float) -> None:
        """Time passes for every chip on the rig (one oven holds the board)."""
        now = self.clock_ns
        for t in self.targets.values():
            t.chip.advance_ns(now - t.chip.clock_ns)
            t.chip.wait(hours, temp_c=temp_c)

    def save(self) -> None:
        if not self.state_path:
            return
        self._saved_at = time.monotonic()
        state = {"boot": self.boot, "cache": list(self.cache.items()), "session": self.session, "holder": self.holder,
                 "launch_ns": self.launch_ns}
        same: set[tuple] = set()
        for k, t in self.targets.items():
            # the meter is the rig's, not the chip's: a rig that stays up keeps what ENERGY has not yet taken
            part = {"chip": t.chip.state(), "bad": t.bad, "flares": t.flares.state(), "cycle_reply": t.cycle_reply,
                    "energy": list(t.chip.energy.reading()),
                    # CYCLEs run but not yet placed on the bus: their time reaches the chip's clock at the next command
                    "unscheduled": [ops.state() for ops in t.unscheduled]}
            if k:
                state.setdefault("targets", {})[k] = part
            else:
                state.update(part)
            at = ("chip",) if k == 0 else ("targets", k, "chip")
            blocks = t.chip.blocks
            touched = blocks.take_touched()
            if blocks is t.saved_blocks:  # else a chip put in since: all of it written
                same |= {at + ("profile",), *(at + ("blocks", b) for b in blocks if b not in touched)}
            t.saved_blocks = blocks
        save_state(self.state_path, state, STATE_APART, self._saved_parts, frozenset(same))

    # -- dispatch ---------------------------------------------------------------
    def handle(self, req: Frame, io: RigIO | None = None) -> Frame | None:
        """The reply to one request (None for frames a rig ignores)."""
        if req.type != P.REQUEST_TYPE:
            return None
        key, before = (req.seq, _crc(req)), (self.session, self.holder)
        done = self.targets[req.target].cycle_reply if req.op == Opcode.CYCLE and req.target in self.targets else None
        if done is not None and done[:3] == (self.session, *key):  # a retry of a target's last CYCLE
            return done[3]
        hit = self.cache.get(self.session)
        if hit is not None and hit[:2] == key:
            return hit[2]
        try:
            op = Opcode(req.op)
        except ValueError:
            return P.reply(req, Err.UNKNOWN_COMMAND)
        io = io or RigIO()
        try:
            if op in P.TARGETED and req.target not in self.targets:
                raise Reject(Err.OUT_OF_RANGE)  # no chip on that CE#
            target = req.target if op in P.TARGETED else 0
            if op == Opcode.CYCLE:  # its target's job: it starts beside the CYCLEs of other targets not yet placed
                self.select(target, until=self.launch_ns)
            elif op in QUIET:
                self.at = self.targets[target]
            else:  # a bus operation, a clock reading or a wait: after every CYCLE
                self.place_jobs()
                self.select(target)
            payload = getattr(self, f"_cmd_{op.name.lower()}")(req, io)
            rep = P.reply(req, Err.OK, payload)
        except Reject as r:
            rep = P.reply(req, r.code, r.payload)
        except NandrigError:
            rep = P.reply(req, Err.BAD_PARAMETER)
        except struct.error:
            rep = P.reply(req, Err.BAD_FRAME)
        if op not in (Opcode.CYCLE, *QUIET):
            self.launch_ns = self.clock_ns
        # a CYCLE's reply stays with its target, apart from the session's slot, which another target's request may
        # take before the host has it; a refused CYCLE did nothing, and its retry is answered afresh
        if op == Opcode.CYCLE:
            if rep.status in (Err.OK, Err.ABORTED):
                self.at.cycle_reply = (self.session, *key, rep)
        elif op not in P.UNCACHED:
            self.cache.pop(self.session, None)
            self.cache[self.session] = (*key, rep)
            while len(self.cache) > Limit.REPLY_CACHE_SESSIONS:
                self.cache.popitem(last=False)
        if op in MUTATING or (self.session, self.holder) != before:  # a HELLO changed who holds the rig
            self.save()
        return rep

    def wire(self, rep: Frame) -> list[Frame]:
        """The frames that carry a reply: a MEASURE's in parts to a host that takes them, the last page's counts in
        the end frame, as the firmware's last page is counted after its parts went (firmware/rig/reply_stream.c)."""
        if not (self.streaming and rep.op in P.STREAMED and rep.type == P.REPLY_TYPE and rep.payload):
            return [rep]
        return P.in_parts(rep, len(rep.payload) - P.MEASURE_PAGE.size)

    # -- helpers ----------------------------------------------------------------
    def _poll(self, io: RigIO) -> None:
        """Between two block operations: answer STATUS and ABORT for the request's target, keep a CYCLE on another
        target to start when this command ends (``deferred``), refuse the rest with BUSY."""
        frames = io.poll()
        if self.volatile and (time.monotonic() - self._saved_at > 0.1 or any(f.op == Opcode.STATUS for f in frames)):
            self.save()  # the chip's wear so far, which a board losing power keeps: more than it last reported
        for f in frames:
            if f.type != P.REQUEST_TYPE:
                continue
            waiting = self._deferred_cycle(f.target)
            if f.op == Opcode.STATUS:
                io.send(P.reply(f, Err.OK, self._status_for(f.target)))
            elif f.op == Opcode.ABORT:
                if f.target == self.job.target:
                    self.job.abort = True
                elif waiting is not None:
                    self.abort_at_start.add((f.target, waiting.seq))
                io.send(P.reply(f, Err.OK, P.BYTE_REPLY.pack(int(f.target == self.job.target or waiting is not None))))
            elif (f.seq, f.op) in {(self.job.seq, self.job.op), *((d.seq, d.op) for d in self.deferred)}:
                continue  # a retry of the running command or of one kept: its reply comes when it ends
            elif self._runs_beside(f):
                self.deferred.append(f)
            else:
                io.send(P.reply(f, Err.BUSY))

    def _deferred_cycle(self, target: int) -> Frame | None:
        return next((d for d in self.deferred if d.op == Opcode.CYCLE and d.target == target), None)

    def _runs_beside(self, f: Frame) -> bool:
        """A CYCLE on another target starts beside the running command, as the firmware starts its target's job
        (server.c); the rest the firmware would serve at once beside a CYCLE waits here for BUSY's retry."""
        return f.op == Opcode.CYCLE and f.target != self.job.target and self._deferred_cycle(f.target) is None

    def _status_for(self, target: int) -> bytes:
        """STATUS of a target while a command runs: a CYCLE kept for later is its target's, running at 0 done."""
        waiting = self._deferred_cycle(target)
        if waiting is not None:
            return P.STATUS_REPLY.pack(P.JobState.BUSY, waiting.op, waiting.seq, 0, 0, self.boot)
        if target != self.job.target:
            j = self.job
            return P.STATUS_REPLY.pack(P.JobState.IDLE, j.op, j.seq, j.done, j.total, self.boot)
        return self._status_payload()

    def take_deferred(self) -> list[Frame]:
        """The requests kept while a command ran (``_poll``), for the link to serve next in the order they came."""
        out, self.deferred = self.deferred, []
        return out



def _crc(frame: Frame) -> int:
    """The reply cache's key besides seq (firmware/rig/server.c): the opcode, a target other than 0 (its two
    bytes; keys as before 1.13 for target 0), the payload."""
    target = frame.target if frame.op in P.TARGETED else 0
    return zlib.crc32(bytes([frame.op]) + (target.to_bytes(2, "little") if target else b"") + frame.payload)


def _targets_text(chips: Mapping[int, tuple[str, int]]) -> str:
    return ", ".join(f"{profile} seed {seed} on target {k}" for k, (profile, seed) in sorted(chips.items()))
