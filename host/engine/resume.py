"""Resuming interrupted campaigns: each alone, or a rig's several targets together again."""
from __future__ import annotations

from collections.abc import Callable

from nandrig.errors import NandrigError
from nandrig.host.engine.campaigns import PROGRAMS, position, run
from nandrig.host.engine.chip_access import open_for_campaign
from nandrig.host.engine.together import run_together
from nandrig.host.storage.store import Campaign, Store


def resume(store: Store, campaign_id: int | None = None, url: str | None = None,
           echo: Callable[[str], None] = print, take_over: bool = False,
           not_resumed: list[tuple[int, str]] | None = None, target: int | None = None, **link) -> list[Campaign]:
    """Continue the interrupted campaign ``campaign_id``, or every one: a campaign that cannot go on (its rig is
    gone, held, or another chip) is listed in ``not_resumed`` with why, and the others still run. ``target``:
    the named campaign's chip moved to that socket of its rig."""
    if target is not None and campaign_id is None:
        raise NandrigError("a target names where one campaign's chip went: give --campaign with --target")
    todo = [c for c in store.campaigns() if c.state == "running" and (campaign_id is None or c.id == campaign_id)]
    if campaign_id is not None and not todo:
        c = store.campaign(campaign_id)
        raise NandrigError(f"campaign {campaign_id} is {c.state}; nothing to resume")
    if campaign_id is None:  # campaigns live in another process are theirs; a named one meets its lock in run()
        for c in [c for c in todo if store.is_live(c.id)]:
            echo(f"campaign {c.id} is running in another process; left to it")
            todo.remove(c)
    if not todo:
        echo("nothing to resume")
    if campaign_id is not None:
        store.check_not_live(campaign_id)  # before any rig is opened: a rig opened is a rig taken
    done = []
    for rig_url, group in rig_groups(store, todo, url).items():  # several targets of one rig: at once
        try:
            stopped = dict(run_together(store.location, rig_url, [c.id for c in group], take_over=take_over,
                                        echo=echo, **link))
        except NandrigError as e:
            if not_resumed is None or len(group) == len(todo):
                raise  # these campaigns alone: its own line says it all
            stopped = {c.id: str(e) for c in group}
        for c in group:
            todo.remove(c)
            if c.id not in stopped:
                done.append(store.campaign(c.id))
            elif not_resumed is not None:
                not_resumed.append((c.id, stopped[c.id]))
                echo(f"campaign {c.id} ({c.kind}) not resumed: {stopped[c.id]}")
        if stopped and not_resumed is None:
            raise NandrigError("; ".join(f"campaign {i} not resumed: {why}" for i, why in stopped.items()))
    for c in todo:
        try:
            store.check_not_live(c.id)
            with open_for_campaign(store, c, url, take_over, target, **link) as rig:
                echo(f"resuming campaign {c.id} ({c.kind}) at {position(c)}")
                done.append(run(store, rig, c.id, echo=echo))
        except NandrigError as e:
            if campaign_id is not None or not_resumed is None or len(todo) == 1:
                raise  # one campaign: its own line says it all
            not_resumed.append((c.id, str(e)))
            echo(f"campaign {c.id} ({c.kind}, {position(c)}) not resumed: {e}")
    return done


def rig_groups(store: Store, campaigns: list[Campaign], url: str | None) -> dict[str, list[Campaign]]:
    """Campaigns on two or more targets of one real or RTL rig (``url``: where every rig moved), by the rig's URL:
    they run at once (:mod:`nandrig.host.engine.together`). Programs run on their own."""
    groups: dict[str, list[Campaign]] = {}
    for c in campaigns:
        if store.chip(c.chip_id)["sim_profile"] is None and c.kind not in PROGRAMS:
            groups.setdefault(url or c.rig_url, []).append(c)
    return {u: g for u, g in groups.items() if len({c.target for c in g}) == len(g) > 1}
