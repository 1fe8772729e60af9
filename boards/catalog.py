"""The boards a build can target, by name: what each one's bitstream runs (its clocks, its BCH engine).
Gateware never names a board; whatever builds or simulates a board's SoC looks it up here and passes the
figures in."""
from __future__ import annotations

from dataclasses import dataclass

from nandrig.errors import NandrigError
from nandrig.gateware.bch.config import BchConfig
from nandrig.gateware.clocks import DEFAULT_CLOCKS, Clocks


@dataclass(frozen=True)
class BoardBuild:
    clocks: Clocks
    bch: BchConfig


def _ulx3s() -> BoardBuild:
    from nandrig.boards.ulx3s import build

    return BoardBuild(build.CLOCKS, build.BOARD_BCH)


_BUILDS = {"ulx3s": _ulx3s}
BOARDS = tuple(_BUILDS)  # boards whose bitstream's clocks the RTL rig and the benches can run


def board_build(board: str) -> BoardBuild:
    try:
        return _BUILDS[board]()
    except KeyError:
        raise NandrigError(f"unknown board {board!r} (known: {', '.join(BOARDS)})") from None


def board_clocks(board: str | None) -> Clocks:
    """A board's clocks, as its bitstream runs them (None: the default build's)."""
    return DEFAULT_CLOCKS if board is None else board_build(board).clocks
