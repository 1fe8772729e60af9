"""Reaching a campaign's chip: the rig opened for a chip the store knows (or registers), checked to be that
physical chip and that life of it; and the block lists commands take (``--blocks``)."""
from __future__ import annotations

import platform
from collections.abc import Callable
from pathlib import Path

import numpy as np

from nandrig import __version__
from nandrig.errors import NandrigError
from nandrig.protocol import Limit
from nandrig.host.link.rig import Rig
from nandrig.host.storage.store import Campaign, Store


def sim_state_path(store: Store, profile: str, seed: int, known: bool = False) -> Path:
    """Where a simulated chip's state lives: beside an SQLite database, whatever the current folder (the store
    records it but it is always found from the database's own place, so the two move together); for a
    PostgreSQL store, in this host's state folder (``$XDG_STATE_HOME/nandrig``). ``known``: the store has this
    chip, so a missing state file is a lost history, not a fresh chip."""
    path = store.db.rigs / f"{profile}-seed{seed}.state"
    if known and not path.exists():
        raise NandrigError(f"the virtual chip sim:{profile}:{seed} has a history in {store.name} but its state file "
                           f"{path} is missing: restore it (it belongs with the database)")
    store.db.rigs.mkdir(parents=True, exist_ok=True)
    return path


def dead_sessions(store: Store, take_over: bool = False) -> Callable[[int], bool]:
    """Whether a session holding a rig may be taken over: one this database's campaigns used and whose process
    is gone (the campaign is not live), or with ``take_over`` any other. A session whose campaign still runs is
    never taken: two processes on one chip would each keep their own copy of its wear."""
    def dead(holder: int) -> bool:
        mine = [c for c in store.campaigns() if holder in c.context.get("sessions", ())]
        for c in mine:
            if who := store.holder(c.id):
                raise NandrigError(f"the rig is held by campaign {c.id}, still running ({who}): stop it (Ctrl-C) "
                                   "and resume it later; --take-over is only for a holder that is gone")
        return take_over or bool(mine)
    return dead


def note_session(context: dict, session: int) -> dict:
    """A campaign's context with ``session`` as the last it used: a rig still held by one of its sessions after
    its process died is taken back (:func:`dead_sessions`)."""
    sessions = [x for x in context.get("sessions", []) if x != session]
    return {**context, "sessions": [*sessions, session][-8:]}


def known_chip(store: Store, url: str, profile: str, seed: int, chip_label: str | None) -> int | None:
    """The chip a command names, when the store knows it without asking a rig (a simulated chip, a label)."""
    return store.chip_id(f"sim:{profile}:{seed}" if url == "sim" else chip_label or "")


def open_for_chip(store: Store, url: str, profile: str, seed: int, chip_label: str | None = None,
                  wiring: str | None = None, take_over: bool = False, **link) -> tuple[Rig, int]:
    """Open the rig and find or register its chip. Simulated chips keep their state next to the database
    (``wiring``: a simulated adapter's). A rig held by another session is refused unless ``take_over`` or the
    session was one of this database's campaigns whose process is gone. ``link``: the Rig's link settings."""
    if url == "sim":
        if link.get("target"):
            raise NandrigError("--rig sim drives one chip, on target 0: several chips on one rig are served by "
                               "nandrig sim serve --targets")
        label = f"sim:{profile}:{seed}"
        chip_id = store.chip_id(label)
        state = str(sim_state_path(store, profile, seed, known=chip_id is not None))
        fresh = not Path(state).exists()
        rig = Rig.open("sim", chip=profile, seed=seed, state=state, wiring=wiring,
                       take_over=dead_sessions(store, take_over), **link)
        sim = (profile, seed, str(Path(state).resolve()))
    else:
        rig = Rig.open(url, take_over=dead_sessions(store, take_over), **link)
        sim, fresh = None, False
    try:
        chip_id = chip_on(store, rig, url, chip_label, label if url == "sim" else None, sim)
    except BaseException:
        rig.close()
        if fresh and store.chip_id(label) is None:  # a simulated chip refused before it was registered
            Path(state).unlink(missing_ok=True)
        raise
    return rig, chip_id


def chip_on(store: Store, rig: Rig, url: str, chip_label: str | None = None, sim_label: str | None = None,
            sim: tuple[str, int, str] | None = None) -> int:
    """The store's chip on the rig's target, registered when new: a real chip by its unique ID (or
    ``chip_label``), a simulated one by ``sim_label``; checked to be that physical chip and that life of it."""
    info = rig.info()
    info.require_chip()
    uid = info.unique_id
    if sim_label is not None:
        label = sim_label
    else:
        known = store.chip_by_unique_id(uid) if uid and not chip_label else None
        if known is not None:
            label = known["label"]
        elif chip_label or uid:
            label = chip_label or f"uid:{uid.hex()}"
        else:
            raise NandrigError(f"the chip on {url}{_on_target(info.target)} gives no unique ID (ONFI READ UNIQUE "
                               f"ID), so nothing tells it from another {info.model}: name it with --chip-label, and "
                               "use that name for it every time")
    chip_id = store.chip_id(label)
    if uid and (owner := store.chip_by_unique_id(uid)) is not None and owner["id"] != chip_id:
        raise NandrigError(f"the chip on {url}{_on_target(info.target)} is {owner['label']} in {store.name} (unique "
                           f"ID {uid.hex()}), not {label}")
    if chip_id is None:
        return store.add_chip(label, info, rig.read_param_page(), sim)
    row = store.chip(chip_id)
    if (row["page_bytes"], row["pages_per_block"], row["blocks"]) != (info.page_bytes, info.pages_per_block, info.blocks):
        raise NandrigError(f"the chip on {url}{_on_target(info.target)} does not match {label} in {store.name}")
    check_identity(store, row, info, url)
    check_life(store, chip_id, rig.hello_info.identity, url, rig.target)
    return chip_id


def check_identity(store: Store, row, info, url: str) -> None:
    """The chip on the rig is the physical chip of this record (by unique ID), or the record learns its ID."""
    uid = info.unique_id.hex() if info.unique_id else None
    if row["unique_id"] is None:
        if uid:  # recorded before unique IDs were read: from now on it is this chip
            store.set_unique_id(row["id"], info.unique_id)
        return
    if uid != row["unique_id"]:
        known = store.chip_by_unique_id(info.unique_id) if uid else None
        now = f"{known['label']} (unique ID {uid})" if known else f"unique ID {uid}" if uid else "no unique ID"
        raise NandrigError(f"the chip on {url}{_on_target(info.target)} is {now}, not {row['label']} (unique ID "
                           f"{row['unique_id']}) in {store.name}: chips moved between sockets? put {row['label']} "
                           "back or name its socket (resume --target), or give this one its own --chip-label")


def _on_target(target: int) -> str:
    return f" target {target}" if target else ""


def check_life(store: Store, chip_id: int, identity: str, url: str, target: int = 0) -> None:
    """A virtual chip names its life: one whose rig restarted without its state is a fresh chip of the same seed,
    and the wear the store records for it is not on it. Refused before anything is worn."""
    now = _life(identity, target)
    was = next((life for c in reversed(store.campaigns()) if c.chip_id == chip_id
                and (life := _life(c.rig_identity, c.target))), None)
    if was and now and was != now:
        raise NandrigError(f"the virtual chip on {url} is not the one {store.chip(chip_id)['label']}'s history in "
                           f"{store.name} was measured on (life {was}, now {now}): its rig restarted without its "
                           "state, so the recorded wear is not on it; serve it again with its --state file")


def _life(identity: str, target: int = 0) -> str | None:
    """The life of the virtual chip on ``target`` that a virtual rig's HELLO names (target 0's as life=L, the
    others' as t<k>=chip:seed:L)."""
    if target:
        return next((w.split(":")[-1] for w in identity.split() if w.startswith(f"t{target}=")), None)
    return next((w[5:] for w in identity.split() if w.startswith("life=")), None)


def open_for_campaign(store: Store, c: Campaign, url: str | None = None, take_over: bool = False,
                      target: int | None = None, **link) -> Rig:
    """The rig of campaign ``c`` with its chip, checked to be the campaign's (unique ID, life); ``url``: the rig
    moved; ``target``: the chip moved to that socket (the campaign keeps it from then on)."""
    row = store.chip(c.chip_id)
    target = c.target if target is None else target
    if row["sim_profile"] is not None:
        if target:
            raise NandrigError(f"campaign {c.id} is on an in-process virtual chip: it has no other target")
        state = sim_state_path(store, row["sim_profile"], row["sim_seed"], known=True)
        rig = Rig.open("sim", chip=row["sim_profile"], seed=row["sim_seed"], state=str(state),
                       take_over=dead_sessions(store, take_over), **link)
    else:
        rig = Rig.open(url or c.rig_url, take_over=dead_sessions(store, take_over), target=target, **link)
    try:
        check_campaign_chip(store, c, rig, url)
    except BaseException:
        rig.close()
        raise
    return rig


def check_campaign_chip(store: Store, c: Campaign, rig: Rig, url: str | None = None) -> None:
    """The chip on the rig's target is campaign ``c``'s (unique ID, life); a campaign whose chip moved to that
    target keeps it from then on."""
    row = store.chip(c.chip_id)
    info = rig.info()
    info.require_chip()
    check_identity(store, row, info, url or c.rig_url)
    check_life(store, c.chip_id, rig.hello_info.identity, url or c.rig_url, rig.target)
    if rig.target != c.target:
        store.move_campaign(c.id, rig.target)


def format_blocks(blocks: list[int]) -> str:
    """Sorted blocks as --blocks writes them: ``16-27,29-31``."""
    runs: list[list[int]] = []
    for b in blocks:
        if runs and b == runs[-1][1] + 1:
            runs[-1][1] = b
        else:
            runs.append([b, b])
    return ",".join(f"{a}-{z}" if z > a else f"{a}" for a, z in runs)


def parse_blocks(text: str, blocks: int) -> list[int]:
    """``A-B`` (inclusive), ``A``, or a comma-separated list of those (``0-27,29-40``), within the chip; sorted."""
    return parse_ranges(text, blocks, "--blocks", "block", "the chip's blocks")


def parse_targets(text: str) -> list[int]:
    """``--target``: one target, or several as ranges and lists (``0-3``, ``0,2``); sorted."""
    return parse_ranges(text, Limit.TARGETS_MAX, "--target", "target", "a rig's targets")


def parse_ranges(text: str, n: int, option: str, thing: str, within: str) -> list[int]:
    out: set[int] = set()
    for item in (x.strip() for x in text.split(",")):
        try:
            a, b = (int(x) for x in item.split("-", 1)) if "-" in item else (int(item), int(item))
        except ValueError:
            raise NandrigError(f"{option} takes ranges A-B and {thing}s A, comma-separated; got {text!r}") from None
        if a > b:
            raise NandrigError(f"{option} {item}: the first {thing} is after the last")
        if a < 0 or b >= n:
            raise NandrigError(f"{option} {item} is outside {within} 0..{n - 1}")
        out.update(range(a, b + 1))
    return sorted(out)


def versions(rig: Rig) -> dict:
    return {"nandrig": __version__, "python": platform.python_version(), "numpy": np.__version__,
            "platform": platform.platform(), "rig": rig.hello_info.identity,
            "protocol": ".".join(map(str, rig.hello_info.version))}
