"""A chip's campaigns run again on its digital twin (``nandrig report --twin``): the same kinds, blocks and
parameters, in the order the chip ran them, on the twin profile (seed 0: a twin's dies are all alike) in a
database of the twin's own, so each campaign's rows and timed operations can be set against the chip's
(host/views/report_twin.py). Replaying in order gives the twin's blocks the chip's history: a campaign whose
blocks did not start at the wear they had on the chip is not replayed, and says why."""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from nandrig.errors import NandrigError
from nandrig.host.engine.campaigns import PROGRAMS, create, run
from nandrig.host.engine.chip_access import open_for_chip
from nandrig.host.kinds import kind
from nandrig.host.storage.store import Campaign, Store

TWIN_SEED = 0


@dataclass(frozen=True)
class TwinProfile:
    """What a twin profile says of itself (its ``twin`` section, written by ``nandrig sim profile --from-db``)."""

    path: str
    name: str
    chip: str  # the label of the chip it twins
    database: str  # where that chip's campaigns were
    fitted: tuple[int, ...]  # the campaigns it was fitted to


def read_twin(path: str) -> TwinProfile:
    """A twin profile file's own account; anything else is refused in one line."""
    try:
        d = json.loads(Path(path).read_text())
    except OSError as e:
        raise NandrigError(f"--twin {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise NandrigError(f"--twin {path} is not JSON: {e.msg}") from None
    twin = d.get("twin") if isinstance(d, dict) else None
    if not isinstance(twin, dict) or "chip" not in twin:
        raise NandrigError(f"--twin {path} is not a chip's twin (it names no chip it was fitted to): `nandrig sim "
                           "profile --from-db` makes one")
    return TwinProfile(str(Path(path).resolve()), str(d.get("name", Path(path).stem)), str(twin["chip"]),
                       str(twin.get("database", "")), tuple(int(c) for c in twin.get("campaigns", ())))


@dataclass
class TwinRun:
    """The chip's campaigns as the twin ran them."""

    twin: TwinProfile
    store: Store  # the twin's database
    pairs: dict[int, int] = field(default_factory=dict)  # the chip's campaign id -> the twin's
    skipped: dict[int, str] = field(default_factory=dict)  # the chip's campaign id -> why it was not replayed


def replay(twin: TwinProfile, campaigns: list[Campaign], db: Path,
           echo: Callable[[str], None] = lambda s: None) -> TwinRun:
    """Run ``campaigns`` (the twin's chip's) again on the twin, into a new database ``db``."""
    out = TwinRun(twin, Store(db))
    rig, chip_id = open_for_chip(out.store, "sim", twin.path, TWIN_SEED)
    with rig:
        for c in sorted(campaigns, key=lambda c: c.id):
            why = _not_replayable(out.store, chip_id, c)
            if why:
                out.skipped[c.id] = why
                continue
            echo(f"twin {twin.name}: campaign {c.id} ({c.kind}) again")
            params = {k: v for k, v in c.params.items() if k not in ("start_pe", "chamber")}
            params["oven"] = "virtual"  # the twin's clock is the simulated rig's
            try:
                cid = create(out.store, rig, chip_id, c.kind, params, "sim")
                done = run(out.store, rig, cid, progress=False)
            except NandrigError as e:
                out.skipped[c.id] = f"the twin refused it: {e}"
                continue
            if done.state != "done":
                out.skipped[c.id] = f"the twin's run ended {done.state}"
                continue
            out.pairs[c.id] = cid
    return out


def _not_replayable(twin_store: Store, chip_id: int, c: Campaign) -> str | None:
    if c.kind in PROGRAMS:
        return f"a {c.kind} campaign is driven by a program, not a plan: not replayed"
    if c.state != "done":
        return f"it is {c.state} on the chip: only a finished campaign is replayed whole"
    p = kind(c.kind).params.from_mapping(c.params)
    wear = twin_store.pe_counts(chip_id, list(p.blocks))
    for b, pe in zip(p.blocks, p.start_pe):
        if wear[b] != pe:
            return (f"block {b} began it at {pe:,} P/E on the chip but is at {wear[b]:,} on the twin (a campaign "
                    "before it on that block was not replayed)")
    return None
