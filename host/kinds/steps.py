"""The steps campaign plans are made of: one rig request (or one oven wait) each, with what its reply means."""
from __future__ import annotations

from dataclasses import dataclass, field

from nandrig import protocol as P
from nandrig.characterization.arrhenius import acceleration_factor
from nandrig.chip.geometry import Geometry
from nandrig.errors import NandrigError
from nandrig.protocol import CycleFlag, Limit, Opcode, ProgramFlag, ReadFlag


@dataclass(frozen=True)
class Step:
    kind: str  # cycle, measure, erase, program, read, read_disturb, set_offset, set_refs, advance, bitmap, verify,
    # oven
    op: Opcode | None
    payload: bytes
    meta: dict = field(default_factory=dict)


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
    steps = []
    flags, tail = (CycleFlag.PAGE_SET, page_set) if page_set else (0, b"")
    for i in range(0, len(blocks), Limit.CYCLE_MAX_BLOCKS):
        chunk = blocks[i:i + Limit.CYCLE_MAX_BLOCKS]
        left = cycles
        while left > 0:
            n = min(left, Limit.CYCLE_MAX_ROUNDS)
            steps.append(Step("cycle", Opcode.CYCLE, P.CYCLE_REQ.pack(chunk[0], len(chunk), n, seed, flags) + tail,
                              {"blocks": chunk, "cycles": n}))
            left -= n
    return steps


def check_page(page: int, g: Geometry, option: str = "--page") -> None:
    """A page a campaign names must exist in every block of the chip (checked before anything is worn)."""
    if not 0 <= page < g.pages_per_block:
        raise NandrigError(f"{option} {page} is outside the chip's pages 0..{g.pages_per_block - 1}")


def _measure_steps(blocks: list[int], seed: int, g: Geometry, meta: dict, first_page: int = 0,
                   n_pages: int | None = None) -> list[Step]:
    n_pages = g.pages_per_block - first_page if n_pages is None else n_pages
    per = max(1, P.MAX_PAYLOAD // (n_pages * P.MEASURE_PAGE.size))
    steps = []
    for i in range(0, len(blocks), per):
        chunk = blocks[i:i + per]
        steps.append(Step("measure", Opcode.MEASURE, P.MEASURE_REQ.pack(chunk[0], len(chunk), first_page, n_pages, seed),
                          {**meta, "blocks": chunk, "first_page": first_page, "n_pages": n_pages}))
    return steps


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


def measure(blocks: list[int], seed: int, g: Geometry, meta: dict, **kw) -> list[Step]:
    """MEASURE requests reading every page (or ``first_page``/``n_pages``) of the blocks; ``meta`` labels the
    checkpoint."""
    return [s for run in contiguous(blocks) for s in _measure_steps(run, seed, g, meta, **kw)]


def wait(oven: str, temp_c: float, equiv_h: float, fresh: bool = False) -> Step:
    """Retention of ``equiv_h`` 25 degC-equivalent hours: a journaled ADVANCE on a virtual oven,
    a real wait or an operator's bake otherwise (resumable through their committed start). ``fresh``: the pages
    read after it were programmed since the last wait, so their retention counts from this one's start."""
    actual = equiv_h / acceleration_factor(temp_c)
    meta = {"equiv_h": equiv_h, "actual_h": actual, "temp_c": temp_c, **({"fresh": True} if fresh else {})}
    if oven == "virtual":
        ns = int(round(actual * 3.6e12))
        return Step("advance", Opcode.ADVANCE, P.ADVANCE_REQ.pack(ns, int(round(temp_c * 100))), meta)
    return Step("oven", None, b"", meta)


def erase(block: int, **meta) -> Step:
    return Step("erase", Opcode.ERASE, P.ERASE_REQ.pack(block, 0), {"block": block, **meta})


def program(block: int, page: int, seed: int, pe: int | None = None, **meta) -> Step:
    return Step("program", Opcode.PROGRAM, P.PROGRAM_HEAD.pack(block, page, 0, 0) + P.PATTERN_SEED.pack(seed),
                {"block": block, "page": page, "pe": pe, **meta})


def program_data(block: int, page: int, data: bytes) -> Step:
    """PROGRAM with explicit bytes (data + spare; shorter data leaves the rest erased)."""
    return Step("program", Opcode.PROGRAM, P.PROGRAM_HEAD.pack(block, page, 0, ProgramFlag.EXPLICIT) + data,
                {"block": block, "page": page})


def verify(block: int, page: int, expected: bytes, g: Geometry, meta: dict) -> Step:
    """READ of a page raw, its bytes compared on the host with ``expected`` (the first bytes of the page); inline
    or through READ_BUFFER as ``raw_read``."""
    inline = P.read_reply_bytes(g.page_bytes, g.spare_bytes, Limit.RIG_CODEWORD_BYTES) <= P.MAX_PAYLOAD
    return Step("verify", Opcode.READ, P.READ_REQ.pack(block, page, 0, ReadFlag.RAW if inline else 0, 0),
                {**meta, "block": block, "page": page, "inline": inline, "expected": expected})


def read(block: int, page: int, seed: int, **meta) -> Step:
    """READ of one page against its pattern, timed (op_times); ``energy=True``: and metered."""
    return Step("read", Opcode.READ, P.READ_REQ.pack(block, page, 0, ReadFlag.COMPARE, seed),
                {"block": block, "page": page, **meta})


def raw_read(block: int, page: int, seed: int, g: Geometry, meta: dict) -> Step:
    """READ of a page with its error counts and its bytes: in the reply when they fit a frame (``inline``),
    else fetched from the rig's page buffer (READ_BUFFER) before the reply is recorded."""
    inline = P.read_reply_bytes(g.page_bytes, g.spare_bytes, Limit.RIG_CODEWORD_BYTES) <= P.MAX_PAYLOAD
    flags = ReadFlag.COMPARE | (ReadFlag.RAW if inline else 0)
    return Step("bitmap", Opcode.READ, P.READ_REQ.pack(block, page, 0, flags, seed),
                {**meta, "block": block, "page": page, "inline": inline})


def read_disturb(block: int, page: int, reads: int) -> list[Step]:
    """READ_DISTURB requests for ``reads`` reads of a page: as many as its reads field needs (2^32 - 1 each)."""
    most = next(f for f in P.READ_DISTURB_REQ.fields if f.name == "reads").bounds[1]
    return [Step("read_disturb", Opcode.READ_DISTURB, P.READ_DISTURB_REQ.pack(block, page, min(most, reads - done)),
                 {"block": block}) for done in range(0, reads, most)]


def set_offset(offset: int) -> Step:
    return Step("set_offset", Opcode.SET_READ_OFFSET, P.SET_READ_OFFSET_REQ.pack(offset), {"offset": offset})


def set_refs(offsets: tuple[int, int, int]) -> Step:
    """Each read reference at its own offset (VR1, VR2, VR3)."""
    return Step("set_refs", Opcode.SET_READ_REFS, P.SET_READ_REFS_REQ.pack(*offsets), {"offsets": list(offsets)})


def groups(blocks: list[int], n: int, what: str = "wear levels") -> list[list[int]]:
    """``blocks`` in ``n`` equal groups (the rest unused)."""
    if len(blocks) < n:
        raise NandrigError(f"{n} {what} need at least {n} blocks, got {len(blocks)}")
    size = len(blocks) // n
    return [blocks[i * size:(i + 1) * size] for i in range(n)]
