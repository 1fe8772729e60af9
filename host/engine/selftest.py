"""``nandrig rig selftest``: check a freshly wired adapter line by line with ONFI-defined operations.

Two looks at the DQ lines, from operations every ONFI chip has:

- **The ONFI signature** (always): READ ID at 20h returns "ONFI" on every ONFI chip, four known bytes
  that set DQ0-DQ3 at both levels, DQ4, DQ5 and DQ7 at 0 and DQ6 at 1. A line reading the other level
  wherever the signature sets it is stuck; two lines reading alike wherever the signature sets them apart,
  each right elsewhere, are shorted. Levels the signature never sets are reported as not exercised. A
  stuck or shorted line usually corrupts the commands too (90h, ECh, ...), and then the chip returns
  nothing: all four bytes alike, which the report says instead of blaming lines. This is the only look
  possible when the rig cannot identify the chip.
- **A round trip** (when the chip answers): walking patterns programmed into page 0 of a block the user
  names and read back raw. Every line is written at both levels and every pair at different levels, so a
  stuck line, a short and a flaky line (wrong more often than a fresh page's raw bit errors explain,
  ``FLAKY_FRACTION``) show whichever way the byte crossed it.

Control lines (CE#, WE#, RE#, CLE, ALE, R/B#) show only as a chip that does not answer: which one cannot
be told from DQ, and the report says so.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from nandrig.chip.param_page import copy_ok, param_copies
from nandrig.errors import NandrigError
from nandrig.host.link.rig import Rig
from nandrig.protocol import Capture

DQ_LINES = 8
ONFI_SIGNATURE = b"ONFI"  # READ ID at 20h
ROUND_TRIP_BYTES = 1024  # enough for every pattern many times (the rest of the page is programmed 0xFF)
STUCK_FRACTION = 0.9  # a line reading the other level this often is stuck (or shorted)
FLAKY_FRACTION = 1e-3  # fresh MLC pages have raw bit error rates around 1e-6: this is the wiring


def walking_patterns(n: int) -> bytes:
    """Walking ones, walking zeros, all-0, all-1, 0x55, 0xAA, repeated over n bytes: every line at both
    levels, and every pair of lines at different levels."""
    unit = bytes([1 << i for i in range(DQ_LINES)] + [0xFF ^ 1 << i for i in range(DQ_LINES)] + [0x00, 0xFF, 0x55, 0xAA])
    return (unit * (n // len(unit) + 1))[:n]


@dataclass(frozen=True)
class LineVerdict:
    line: int
    verdict: str  # ok, stuck at 0, stuck at 1, shorted to DQk, flaky
    wrong_bits: int  # -1 where nothing known was written
    bits: int


def _bits(data: bytes) -> np.ndarray:
    return np.unpackbits(np.frombuffer(data, np.uint8)[:, None], axis=1, bitorder="little").astype(bool)


def diagnose(want: bytes, got: bytes) -> list[LineVerdict]:
    """Per DQ line, what ``want`` arriving as ``got`` says about it (a line kept at one level by ``want`` is
    only checked at that level)."""
    w, g = _bits(want), _bits(got)
    out = []
    for i in range(DQ_LINES):
        ones, zeros = w[:, i], ~w[:, i]
        wrong = int((w[:, i] != g[:, i]).sum())
        lost1 = (~g[ones, i]).mean() if ones.any() else 0.0  # written 1, read 0
        lost0 = g[zeros, i].mean() if zeros.any() else 0.0
        verdict = "ok"
        partner = [j for j in range(DQ_LINES) if j != i and _shorted(w, g, i, j)]
        if ones.any() and lost1 >= STUCK_FRACTION and lost0 < 1 - STUCK_FRACTION:
            verdict = "stuck at 0"
        elif zeros.any() and lost0 >= STUCK_FRACTION and lost1 < 1 - STUCK_FRACTION:
            verdict = "stuck at 1"
        elif partner:
            verdict = "shorted to " + ", ".join(f"DQ{j}" for j in partner)
        elif wrong > FLAKY_FRACTION * len(want):
            verdict = "flaky"
        elif not (ones.any() and zeros.any()):
            verdict = f"ok at {int(ones.any())}; {int(not ones.any())} not exercised"
        out.append(LineVerdict(i, verdict, wrong, len(want)))
    return out


def _shorted(w: np.ndarray, g: np.ndarray, i: int, j: int) -> bool:
    """Lines i and j read alike where the pattern set them apart, each of them wrong there some of the time
    (a line merely stuck at the other's level is wrong alone), and each follows the pattern where it did
    not set them apart (which tells a short from two stuck lines)."""
    apart, together = w[:, i] != w[:, j], w[:, i] == w[:, j]
    if not apart.any() or not together.any():
        return False
    alike = (g[apart, i] == g[apart, j]).mean()
    both_wrong = (g[apart, i] != w[apart, i]).any() and (g[apart, j] != w[apart, j]).any()
    follows = min((g[together, i] == w[together, i]).mean(), (g[together, j] == w[together, j]).mean())
    return alike >= STUCK_FRACTION and both_wrong and follows >= STUCK_FRACTION


def _columns(data: bytes) -> list[tuple[int, ...]]:
    return [tuple(b >> i & 1 for b in data) for i in range(DQ_LINES)]


def _one_level_lines() -> str:
    """The lines the ONFI signature holds at one level, and that level ("DQ4 at 0, ...")."""
    return ", ".join(f"DQ{i} at {c[0]}" for i, c in enumerate(_columns(ONFI_SIGNATURE)) if len(set(c)) == 1)


def _never_apart() -> str:
    """Groups of lines the ONFI signature never sets to different levels ("DQ1 and DQ2; ...")."""
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, c in enumerate(_columns(ONFI_SIGNATURE)):
        groups.setdefault(c, []).append(i)
    return "; ".join(" and ".join(f"DQ{i}" for i in g) for g in groups.values() if len(g) > 1)


def _odd_lines(idle: bytes) -> str:
    """When an undriven bus reads one value, the lines at the level fewer lines are at are suspect."""
    if not idle or idle[0] in (0x00, 0xFF):
        return ""
    ones = [i for i in range(DQ_LINES) if idle[0] >> i & 1]
    odd = ones if len(ones) * 2 < DQ_LINES else [i for i in range(DQ_LINES) if i not in ones]
    return f"; the bus reads {', '.join(f'DQ{i}' for i in odd)} apart from the other lines: suspect"


def _param_copies_good(param: bytes) -> int:
    """Parameter-page copies whose CRC holds."""
    return sum(map(copy_ok, param_copies(param)))


def selftest(rig: Rig, block: int, force: bool = False) -> dict:
    """Run the checks; ``block`` is erased and programmed once (one P/E cycle)."""
    info = rig.info()
    out: dict = {"capture": info.capture.name.lower(), "timing_mode": info.timing_mode, "rd_trim": info.rd_trim,
                 "passing_trims": info.passing_trims}
    onfi = rig.read_id(0x20)
    out["read_id_20h"] = onfi.hex()
    out["param_copies_good"] = _param_copies_good(rig.read_param_page())
    out["answers"] = info.capture == Capture.CALIBRATED and onfi == ONFI_SIGNATURE
    if not out["answers"]:
        out["method"] = "ONFI signature"
        if len(set(onfi)) <= 1:
            out["summary"] = (f"the rig cannot read the chip: READ ID 20h returns {onfi.hex() or 'nothing'}, the chip "
                              "drives nothing; check CE#, WE#, RE#, CLE, ALE, R/B#, power and the chip's seating "
                              "(a stuck or shorted DQ line also keeps commands from reaching it)" + _odd_lines(onfi))
            return out
        lines = diagnose(ONFI_SIGNATURE, onfi.ljust(len(ONFI_SIGNATURE), b"\0"))
        out["lines"] = [asdict(v) for v in lines]
        faulty = [f"DQ{v.line} {v.verdict}" for v in lines if not v.verdict.startswith("ok")]
        if faulty:
            cause = "; ".join(faulty)
        elif out["param_copies_good"] == 0:
            cause = ("'ONFI' arrives whole but no parameter-page copy has a good CRC: likely a line the signature "
                     f"leaves at one level is stuck ({_one_level_lines()}), or two it never sets apart are shorted "
                     f"({_never_apart()})")
        else:
            cause = ("the signature and the parameter page arrive whole, yet no read-capture trim reads them in "
                     "mode 0: check RE# and the adapter's delay")
        out["summary"] = "the rig cannot read the chip: " + cause
        return out
    out["method"] = "walking-pattern round trip"
    if not 0 <= block < info.blocks:
        raise NandrigError(f"block {block} does not exist on this chip (0..{info.blocks - 1})")
    want = walking_patterns(min(ROUND_TRIP_BYTES, info.raw_page_bytes))
    erase = rig.erase(block, force=force)
    prog = rig.program(block, 0, data=want, force=force)
    got = rig.read(block, 0, raw=True).data[:len(want)]
    lines = diagnose(want, got)
    out["block"] = block
    out["erase_status"], out["program_status"] = erase.chip_status, prog.chip_status
    out["lines"] = [asdict(v) for v in lines]
    bad = [f"DQ{v.line} {v.verdict}" for v in lines if v.verdict != "ok"]
    out["summary"] = "every DQ line reads what was written" if not bad else "; ".join(bad)
    return out
