"""One chip on the virtual rig's shared bus (the firmware's target: its CE# and R/B#): the chip, its socket's
wiring, and what the rig learned of it at start-up and keeps for it (factory marks, FLARES page profiles)."""
from __future__ import annotations

from dataclasses import dataclass, field

from nandrig import protocol as P
from nandrig.boards.sim import ecc_layout
from nandrig.boards.sim.bus_schedule import JobOps
from nandrig.boards.sim.rig_flares import RigFlares
from nandrig.boards.sim.wiring import Wiring
from nandrig.chip.onfi import ParamError
from nandrig.chip.param_page import DecodedParamPage
from nandrig.errors import NandrigError
from nandrig.virtual_chip.chip import BlockTable, VirtualChip


@dataclass
class VirtualTarget:
    chip: VirtualChip
    wiring: Wiring
    t_max: int  # the BCH engine's t on this chip's pages (its spare holds the parity)
    flares: RigFlares
    bad: dict[int, bool] = field(default_factory=dict)  # factory marks as scanned before the first erase
    capture: P.Capture = P.Capture.NO_WINDOW
    rd_trim: int = 0
    trim_pass: int = 0
    ident: DecodedParamPage | None = None  # the chip as its parameter page describes it
    param_status: ParamError = ParamError.NO_VALID_COPY
    saved_blocks: BlockTable | None = None  # the block table last saved: its untouched blocks are as written
    # the last CYCLE's (session, seq, crc, reply), kept for its retries apart from the reply cache (cycle_job.c)
    cycle_reply: tuple | None = None
    unscheduled: list[JobOps] = field(default_factory=list)  # CYCLEs run but not yet placed on the bus (server.py)

    @classmethod
    def on(cls, chip: VirtualChip, wiring: Wiring, bch_t_max: int) -> "VirtualTarget":
        t_max = ecc_layout.t_max(chip.geometry.page_bytes, chip.geometry.spare_bytes, bch_t_max)
        return cls(chip, wiring, t_max, RigFlares(t_max))


def on_target(name: str) -> property:
    """A rig attribute that is the selected target's (the commands act on ``self.chip``, ``self.bad``, ...)."""
    return property(lambda rig: getattr(rig.at, name), lambda rig, value: setattr(rig.at, name, value))


def parse_targets(spec: str | None, profile: str, seed: int) -> dict[int, tuple[str, int]]:
    """``sim serve --targets``'s chips beside target 0's (``profile``, ``seed``): a count N (targets 1..N-1 hold
    the same profile, seeds seed+1, ...) or a comma-separated list from target 0, each PROFILE:SEED or "-" for an
    empty socket (target 0's entry is the --chip/--seed one: "." there)."""
    if not spec:
        return {}
    if spec.isdigit():
        n = int(spec)
        if not 1 <= n <= P.Limit.TARGETS_MAX:
            raise NandrigError(f"--targets {spec}: a rig has 1 to {P.Limit.TARGETS_MAX} targets")
        return {k: (profile, seed + k) for k in range(1, n)}
    entries = [e.strip() for e in spec.split(",")]
    if len(entries) > P.Limit.TARGETS_MAX or entries[0] != ".":
        raise NandrigError(f"--targets {spec}: up to {P.Limit.TARGETS_MAX} entries, the first \".\" (target 0 is "
                           "--chip/--seed's), then PROFILE:SEED or - (an empty socket) per target")
    out = {}
    for k, e in enumerate(entries[1:], start=1):
        if e == "-":
            continue
        name, _, s = e.rpartition(":")
        if not name or not s.lstrip("-").isdigit():
            raise NandrigError(f"--targets {spec}: target {k} is {e!r}, not PROFILE:SEED or -")
        out[k] = (name, int(s))
    return out
