"""The steps campaign plans are made of: one rig request (or one oven wait) each, an object that builds its
request and records what its reply means (through the campaign's :class:`StepRun`, in the engine's transaction)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Protocol

import numpy as np

from nandrig import protocol as P
from nandrig.characterization import bitmaps
from nandrig.characterization.arrhenius import acceleration_factor
from nandrig.chip.geometry import Geometry
from nandrig.chip.onfi import StatusBit
from nandrig.chip.pattern import bits, flips, page_bits
from nandrig.errors import NandrigError
from nandrig.host.link.rig import MEASURE_DTYPE, decode_cycle_reply, read_result
from nandrig.protocol import CycleFlag, Limit, Opcode, ProgramFlag, ReadFlag

if TYPE_CHECKING:
    from nandrig.host.storage.databases import Database
    from nandrig.host.storage.store import Campaign, Store
    from nandrig.protocol import Frame


class StepRun(Protocol):
    """What a step records into: the campaign running it (the engine's Runner)."""

    store: "Store"
    c: "Campaign"
    g: Geometry
    context: dict

    def add_time(self, done: dict, fresh: bool) -> None: ...

    def shared_checkpoint(self, db: "Database", at: "Checkpoint") -> int: ...


@dataclass(frozen=True)
class Checkpoint:
    """What the reads of a checkpoint are labelled with."""

    label: str
    pe: int
    retention: bool = False  # read after a wait: the retention so far goes with them
    reads: int = 0  # read-disturb reads or program-disturb repeats before them
    offset: int = 0  # the read reference offset they were read at
    first_step: int | None = None  # page reads sharing one checkpoint: the index of the group's first step
    # shared checkpoints: the retention of every wait so far (pages programmed once, read after several waits),
    # not only the last wait's (pages programmed again before each wait)
    cumulative: bool = False


@dataclass(frozen=True)
class Step:
    """One step of a plan. ``kind`` names it in messages and progress; ``op`` is its request's opcode (None: an
    oven wait, no request)."""

    kind: ClassVar[str]
    op: ClassVar[Opcode | None]
    # a chip setting the step makes (volatile in the chip: a rig restart loses it), by what it sets; the engine
    # makes the latest of each again when the rig restarted, or a campaign resumes, before the next step
    setting: ClassVar[str | None] = None
    energy: bool = field(default=False, kw_only=True)  # the rig's meter is zeroed before it and read after it

    @property
    def payload(self) -> bytes:
        raise NotImplementedError

    @property
    def fetches_page(self) -> bool:
        """The page's bytes wait in the rig's buffer (READ_BUFFER) before the reply is recorded."""
        return False

    def record(self, run: StepRun, db: "Database", i: int, reply: "Frame") -> None:
        """What the reply means, written into the store in the engine's transaction (default: nothing)."""


@dataclass(frozen=True)
class Cycle(Step):
    kind, op = "cycle", Opcode.CYCLE
    blocks: tuple[int, ...]
    cycles: int
    seed: int
    page_set: bytes | None = None  # P.page_set_bytes: each round programs only these pages

    @property
    def payload(self) -> bytes:
        flags, tail = (CycleFlag.PAGE_SET, self.page_set) if self.page_set else (0, b"")
        return P.CYCLE_REQ.pack(self.blocks[0], len(self.blocks), self.cycles, self.seed, flags) + tail

    def record(self, run: StepRun, db: "Database", i: int, reply: "Frame") -> None:
        done, failed = decode_cycle_reply(reply.payload, self.blocks[0], len(self.blocks))
        for b in self.blocks:
            run.store.add_cycles(db, run.c.id, run.c.chip_id, b, done[b], failed[b], self.cycles)


def _retention(run: StepRun, at: Checkpoint) -> tuple[float, float, float, list | None]:
    """(equivalent h, actual h, degC, bakes) the checkpoint's reads carry: the retention so far, or none."""
    if not at.retention:
        return 0.0, 0.0, 25.0, None
    ctx = run.context
    return ctx.get("equiv_h", 0.0), ctx.get("actual_h", 0.0), ctx.get("temp_c", 25.0), ctx.get("bakes")


@dataclass(frozen=True)
class Measure(Step):
    kind, op = "measure", Opcode.MEASURE
    blocks: tuple[int, ...]
    seed: int
    first_page: int
    n_pages: int
    at: Checkpoint
    timed: bool = False  # each page read on its own, so each reports its tR (no cache read)

    @property
    def payload(self) -> bytes:
        return P.MEASURE_REQ.pack(self.blocks[0], len(self.blocks), self.first_page, self.n_pages, self.seed,
                                  int(P.MeasureFlag.TIMED) if self.timed else 0)

    def record(self, run: StepRun, db: "Database", i: int, reply: "Frame") -> None:
        equiv, actual, temp, bakes = _retention(run, self.at)
        cp = run.store.add_checkpoint(db, run.c.id, i, self.at.label, self.at.pe, equiv, actual, temp, self.at.reads,
                                      self.at.offset, {"bakes": bakes} if bakes else None)
        recs = np.frombuffer(reply.payload, dtype=MEASURE_DTYPE).reshape(len(self.blocks), self.n_pages)
        run.store.add_measurements(db, cp, run.c.chip_id, (
            (b, self.first_page + j, int(recs[k, j]["err_1to0"]), int(recs[k, j]["err_0to1"]),
             run.g.raw_page_bytes * 8, _seen(int(recs[k, j]["busy_ns"])))
            for k, b in enumerate(self.blocks) for j in range(self.n_pages)))


def _seen(busy_ns: int) -> int | None:
    """A page's tR as the store keeps it: NULL where a cache read hid it."""
    return None if busy_ns == Limit.BUSY_NOT_SEEN else busy_ns


@dataclass(frozen=True)
class Erase(Step):
    kind, op = "erase", Opcode.ERASE
    block: int
    pe: int | None = None  # the wear level it belongs to

    @property
    def payload(self) -> bytes:
        return P.ERASE_REQ.pack(self.block, 0)

    def record(self, run: StepRun, db: "Database", i: int, reply: "Frame") -> None:
        r = P.CHIP_RESULT.unpack(reply.payload)
        run.store.add_erase(db, run.c.id, run.c.chip_id, i, self.block, bool(r.chip_status & StatusBit.FAIL), r.busy_ns)


@dataclass(frozen=True)
class Program(Step):
    """PROGRAM of the page's pattern (``seed``), or of explicit bytes (``data``: data + spare; shorter data leaves
    the rest erased)."""

    kind, op = "program", Opcode.PROGRAM
    block: int
    page: int
    seed: int = 0
    pe: int | None = None
    data: bytes | None = None

    @property
    def payload(self) -> bytes:
        if self.data is not None:
            return P.PROGRAM_HEAD.pack(self.block, self.page, 0, ProgramFlag.EXPLICIT) + self.data
        return P.PROGRAM_HEAD.pack(self.block, self.page, 0, 0) + P.PATTERN_SEED.pack(self.seed)

    def record(self, run: StepRun, db: "Database", i: int, reply: "Frame") -> None:
        r = P.CHIP_RESULT.unpack(reply.payload)
        run.store.add_program(db, run.c.id, run.c.chip_id, i, self.block, self.page,
                              bool(r.chip_status & StatusBit.FAIL), r.busy_ns)


@dataclass(frozen=True)
class Read(Step):
    """READ of one page against its pattern, timed (op_times)."""

    kind, op = "read", Opcode.READ
    block: int
    page: int
    seed: int

    @property
    def payload(self) -> bytes:
        return P.READ_REQ.pack(self.block, self.page, 0, ReadFlag.COMPARE, self.seed)

    def record(self, run: StepRun, db: "Database", i: int, reply: "Frame") -> None:
        run.store.add_op_time(db, run.c.id, run.c.chip_id, i, "read", self.block, self.page,
                              P.READ_HEAD.unpack(reply.payload[:P.READ_HEAD.size]).busy_ns)


@dataclass(frozen=True)
class RawRead(Step):
    """READ of a page with its error counts and its bytes (in the reply when they fit a frame, ``inline``, else
    from the rig's page buffer): where each error is, as the host finds it against the pattern, or against
    ``expected`` (data + spare) for a page programmed with explicit bytes."""

    kind, op = "bitmap", Opcode.READ
    block: int
    page: int
    seed: int
    inline: bool
    at: Checkpoint
    expected: bytes | None = None

    @property
    def payload(self) -> bytes:
        compare = ReadFlag.COMPARE if self.expected is None else 0  # the rig compares with patterns only
        return P.READ_REQ.pack(self.block, self.page, 0, compare | (ReadFlag.RAW if self.inline else 0), self.seed)

    @property
    def fetches_page(self) -> bool:
        return not self.inline

    def record(self, run: StepRun, db: "Database", i: int, reply: "Frame") -> None:
        """Its counts as the rig made them, and its error places as the host finds them (checked against each
        other where the rig compared)."""
        r = read_result(reply.payload, raw=True)
        n = run.g.raw_page_bytes
        want = page_bits(run.c.seed, self.block, self.page, n) if self.expected is None else bits(self.expected)
        codes = bitmaps.error_codes(want, bits(r.data[:n]))
        e10, e01 = (sum(x) for x in zip(*((c.err_1to0, c.err_0to1) for c in r.codewords)))
        if self.expected is None and bitmaps.counts(codes) != (e10, e01) and max(e10, e01) < 0xFFFF:
            # (a codeword's count saturates there)
            raise NandrigError(f"block {self.block} page {self.page}: the rig counted {e10}+{e01} errors, its bytes "
                               f"hold {bitmaps.counts(codes)}; the link or the rig's compare is broken")
        cp = run.shared_checkpoint(db, self.at)
        up, down = bitmaps.counts(codes)
        run.store.add_measurements(db, cp, run.c.chip_id, [(self.block, self.page, up, down, n * 8, r.busy_ns)])
        run.store.add_bit_errors(db, cp, self.block, self.page, bitmaps.encode(codes))


@dataclass(frozen=True)
class Verify(Step):
    """READ of a page raw, compared on the host with what it should hold (its first bytes: the rest is not
    checked)."""

    kind, op = "verify", Opcode.READ
    block: int
    page: int
    expected: bytes
    inline: bool
    at: Checkpoint

    @property
    def payload(self) -> bytes:
        return P.READ_REQ.pack(self.block, self.page, 0, ReadFlag.RAW if self.inline else 0, 0)

    @property
    def fetches_page(self) -> bool:
        return not self.inline

    def record(self, run: StepRun, db: "Database", i: int, reply: "Frame") -> None:
        r = read_result(reply.payload, raw=True)
        n = len(self.expected)
        up, down = flips(bits(self.expected), bits(r.data[:n]))
        run.store.add_measurements(db, run.shared_checkpoint(db, self.at), run.c.chip_id,
                                   [(self.block, self.page, up, down, n * 8, r.busy_ns)])


@dataclass(frozen=True)
class ReadDisturb(Step):
    """Reads of a page repeated on the rig (recorded with the next checkpoint)."""

    kind, op = "read_disturb", Opcode.READ_DISTURB
    block: int
    page: int
    reads: int

    @property
    def payload(self) -> bytes:
        return P.READ_DISTURB_REQ.pack(self.block, self.page, self.reads)


@dataclass(frozen=True)
class SetOffset(Step):
    kind, op, setting = "set_offset", Opcode.SET_READ_OFFSET, "read references"
    offset: int

    @property
    def payload(self) -> bytes:
        return P.SET_READ_OFFSET_REQ.pack(self.offset)


@dataclass(frozen=True)
class SetRefs(Step):
    """Each read reference at its own offset (VR1, VR2, VR3)."""

    kind, op, setting = "set_refs", Opcode.SET_READ_REFS, "read references"
    offsets: tuple[int, int, int]

    @property
    def payload(self) -> bytes:
        return P.SET_READ_REFS_REQ.pack(*self.offsets)


@dataclass(frozen=True)
class SetVerify(Step):
    """L1..L3's program-verify levels at their offsets (PV1, PV2, PV3) for the upper pages programmed next."""

    kind, op, setting = "set_verify", Opcode.SET_VERIFY_LEVELS, "verify levels"
    offsets: tuple[int, int, int]

    @property
    def payload(self) -> bytes:
        return P.SET_VERIFY_LEVELS_REQ.pack(*self.offsets)


@dataclass(frozen=True)
class Wait(Step):
    """Retention of ``equiv_h`` 25 degC-equivalent hours (``actual_h`` at ``temp_c``) through an oven: no request,
    the engine waits (resumable through the wait's committed start). ``fresh``: the pages read after it were
    programmed since the last wait, so their retention counts from this one's start."""

    kind, op = "oven", None
    equiv_h: float
    actual_h: float
    temp_c: float
    fresh: bool = False

    def oven_request(self) -> dict:
        return {"equiv_h": self.equiv_h, "actual_h": self.actual_h, "temp_c": self.temp_c}


@dataclass(frozen=True)
class Advance(Wait):
    """The same wait on a virtual oven: the rig's clock advanced by a journaled ADVANCE."""

    kind, op = "advance", Opcode.ADVANCE

    @property
    def payload(self) -> bytes:
        return P.ADVANCE_REQ.pack(int(round(self.actual_h * 3.6e12)), int(round(self.temp_c * 100)))

    def record(self, run: StepRun, db: "Database", i: int, reply: "Frame") -> None:
        run.add_time(self.oven_request(), self.fresh)


def contiguous(blocks: list[int]) -> list[list[int]]:
    """Split a block list into runs of consecutive blocks."""
    runs: list[list[int]] = []
    for b in blocks:
        if runs and b == runs[-1][-1] + 1:
            runs[-1].append(b)
        else:
            runs.append([b])
    return runs


def _cycle_steps(blocks: list[int], cycles: int, seed: int, page_set: bytes | None) -> list[Step]:
    steps: list[Step] = []
    for i in range(0, len(blocks), Limit.CYCLE_MAX_BLOCKS):
        chunk = tuple(blocks[i:i + Limit.CYCLE_MAX_BLOCKS])
        left = cycles
        while left > 0:
            n = min(left, Limit.CYCLE_MAX_ROUNDS)
            steps.append(Cycle(chunk, n, seed, page_set))
            left -= n
    return steps


def check_page(page: int, g: Geometry, option: str = "--page") -> None:
    """A page a campaign names must exist in every block of the chip (checked before anything is worn)."""
    if not 0 <= page < g.pages_per_block:
        raise NandrigError(f"{option} {page} is outside the chip's pages 0..{g.pages_per_block - 1}")


def _measure_steps(blocks: list[int], seed: int, g: Geometry, at: Checkpoint, first_page: int = 0,
                   n_pages: int | None = None, timed: bool = False) -> list[Step]:
    n_pages = g.pages_per_block - first_page if n_pages is None else n_pages
    per = max(1, P.MAX_PAYLOAD // (n_pages * P.MEASURE_PAGE.size))
    return [Measure(tuple(blocks[i:i + per]), seed, first_page, n_pages, at, timed)
            for i in range(0, len(blocks), per)]


def cycle_groups_but_last_round(groups: list[list[int]], pes: list[int] | tuple[int, ...], seed: int,
                                worn: dict[int, int] | None = None) -> list[Step]:
    """Each group of blocks cycled to one round short of its wear level, all before any group's last round: cycling
    a group to 10k P/E takes an hour of chip time, which would otherwise be retention that the groups cycled before
    it had already seen when their "fresh" reads come."""
    return [s for grp, pe in zip(groups, pes) for s in cycle_to(grp, 0, pe - 1, seed, worn=worn, leaves_pattern=False)]


def cycle_to(blocks: list[int], have: int, want: int, seed: int, page_set: bytes | None = None,
             worn: dict[int, int] | None = None, leaves_pattern: bool = True) -> list[Step]:
    """CYCLE requests that take the blocks from ``have`` to ``want`` P/E; ``page_set`` (P.page_set_bytes): each
    round programs only those pages (pseudo-SLC: the lower ones). ``worn``: the wear blocks carried when the
    campaign was made (:attr:`KindParams.worn`): a block starts from it when it is above ``have``, and one already
    past ``want`` is refused (a wear level is the P/E a block reaches, never a count added to what it had), as is
    one at ``want`` when the plan reads the pattern the last round programs (``leaves_pattern``)."""
    worn = worn or {}
    # a block at ``want`` already would skip its cycling, whose last round programs the pattern the plan reads
    past = [b for b in blocks if worn.get(b, 0) > want or (leaves_pattern and want > have and worn.get(b, 0) >= want)]
    if past:
        most = max(worn[b] for b in past)
        raise NandrigError(f"block{'s' if len(past) > 1 else ''} {listing(past)} already carr"
                           f"{'y' if len(past) > 1 else 'ies'} up to {most} P/E: this campaign cycles "
                           f"{'them' if len(past) > 1 else 'it'} to {want} P/E and cannot start past that (wear levels "
                           f"are absolute); choose fresh blocks or wear levels above {most}")
    out: list[Step] = []
    for run in contiguous(blocks):
        start = [max(have, worn.get(b, 0)) for b in run]
        i = 0
        while i < len(run):  # blocks that start alike cycle together
            j = i
            while j < len(run) and start[j] == start[i]:
                j += 1
            if want > start[i]:
                out += _cycle_steps(run[i:j], want - start[i], seed, page_set)
            i = j
    return out


def checkpoints_ahead(checkpoints: tuple[int, ...], worn: dict[int, int]) -> list[int]:
    """The checkpoints above the blocks' recorded wear (a campaign on worn blocks starts from their wear; the
    levels they passed are behind them); none left is refused."""
    most = max(worn.values(), default=0)
    ahead = [cp for cp in checkpoints if cp > most]
    if not ahead:
        raise NandrigError(f"the blocks already carry up to {most} P/E, at or past every checkpoint "
                           f"(the last {checkpoints[-1]}): choose fresh blocks or checkpoints above {most}")
    return ahead


def listing(blocks: list[int], most: int = 8) -> str:
    """Blocks as a message names them: the first ``most``, then how many more."""
    return ", ".join(map(str, blocks[:most])) + (f" and {len(blocks) - most} more" if len(blocks) > most else "")


def measure(blocks: list[int], seed: int, g: Geometry, at: Checkpoint, **kw) -> list[Step]:
    """MEASURE requests reading every page (or ``first_page``/``n_pages``) of the blocks at checkpoint ``at``; by cache
    read where the chip has one, unless ``timed=True`` asks for every page's tR."""
    return [s for run in contiguous(blocks) for s in _measure_steps(run, seed, g, at, **kw)]


def wait(oven: str, temp_c: float, equiv_h: float, fresh: bool = False) -> Wait:
    """Retention of ``equiv_h`` 25 degC-equivalent hours at ``temp_c``: a journaled ADVANCE on a virtual oven, a
    real wait or an operator's bake otherwise."""
    actual = equiv_h / acceleration_factor(temp_c)
    return (Advance if oven == "virtual" else Wait)(equiv_h, actual, temp_c, fresh)


def _inline(g: Geometry) -> bool:
    """Whether a raw page fits a READ reply's frame."""
    return P.read_reply_bytes(g.page_bytes, g.spare_bytes, Limit.RIG_CODEWORD_BYTES) <= P.MAX_PAYLOAD


def verify(block: int, page: int, expected: bytes, g: Geometry, at: Checkpoint) -> Verify:
    return Verify(block, page, expected, _inline(g), at)


def raw_read(block: int, page: int, seed: int, g: Geometry, at: Checkpoint, expected: bytes | None = None) -> RawRead:
    return RawRead(block, page, seed, _inline(g), at, expected)


def read_disturb(block: int, page: int, reads: int) -> list[Step]:
    """READ_DISTURB requests for ``reads`` reads of a page: as many as its reads field needs (2^32 - 1 each)."""
    most = next(f for f in P.READ_DISTURB_REQ.fields if f.name == "reads").bounds[1]
    return [ReadDisturb(block, page, min(most, reads - done)) for done in range(0, reads, most)]


def groups(blocks: list[int], n: int, what: str = "wear levels") -> list[list[int]]:
    """``blocks`` in ``n`` equal groups (the rest unused)."""
    if len(blocks) < n:
        raise NandrigError(f"{n} {what} need at least {n} blocks, got {len(blocks)}")
    size = len(blocks) // n
    return [blocks[i * size:(i + 1) * size] for i in range(n)]
