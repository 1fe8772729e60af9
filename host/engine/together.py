"""Campaigns on several targets of one rig, run at once by one host process over one link.

Each campaign keeps its own journal, cursor and lock, and runs in a thread of
its own with its own store connection; the rig sees one host session. The
link's turn (:mod:`nandrig.host.link.shared`) keeps the reply cache's rule: one
request other than a CYCLE out at a time, its reply recorded before the next.
A rig that runs CYCLEs as jobs (``Cap.CYCLE_JOBS``) cycles several targets'
blocks at once while the others read; on any other rig the campaigns take turns
request by request.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from nandrig.errors import NandrigError
from nandrig.host.engine.campaigns import PROGRAMS, Runner, plan, position, run
from nandrig.host.engine.chip_access import check_campaign_chip, dead_sessions
from nandrig.host.kinds.steps import Step, Wait
from nandrig.host.link.rig import Rig
from nandrig.host.link.shared import open_targets
from nandrig.host.storage.store import Campaign, Store


def check_together(store: Store, campaigns: Sequence[Campaign]) -> None:
    """Refuse, before any rig is opened, campaigns that cannot share one rig's run."""
    targets = [c.target for c in campaigns]
    if len(set(targets)) != len(targets):
        raise NandrigError("campaigns run at once must be on different targets: "
                           + ", ".join(f"campaign {c.id} on target {c.target}" for c in campaigns))
    for c in campaigns:
        if c.kind in PROGRAMS:
            raise NandrigError(f"campaign {c.id} ({c.kind}) is driven by a program on target 0: run it on its own")
        check_oven(f"campaign {c.id}", c.oven, plan(c.kind, c.params, store.geometry(c.chip_id)))
        store.check_not_live(c.id)


def check_oven(what: str, oven: str, steps: Sequence[Step]) -> None:
    """Refuse a campaign that bakes its chip in an oven to run beside others on one rig: the oven (or the virtual
    rig's clock) holds every chip of the rig."""
    if oven != "wall" and any(isinstance(s, Wait) for s in steps):
        raise NandrigError(f"{what} bakes in the {oven} oven, which holds every chip of its rig: campaigns run at "
                           "once on one rig wait on the wall clock only (--oven wall)")


def run_together(location: str | Path, url: str, campaign_ids: Sequence[int], *, take_over: bool = False,
                 rigs: dict[int, Rig] | None = None, echo: Callable[[str], None] = lambda s: None,
                 progress: bool = True, **link) -> list[tuple[int, str]]:
    """Run (or resume) the campaigns ``campaign_ids`` on their targets of the rig at ``url`` at once; ``rigs``:
    the link's Rigs, already open (closed here). Returns, per campaign that stopped short, why; the others run
    to their end."""
    store = Store(location)
    try:
        cs = [store.campaign(i) for i in campaign_ids]
        try:
            check_together(store, cs)
        except BaseException:
            for r in (rigs or {}).values():
                r.close()
            raise
        if rigs is None:
            # a resume speaks as the session that sent the requests it collects, when they share one: every
            # retry then meets its reply (a CYCLE's in its target's job) with no HELLO between campaigns
            sessions = {p.session for c in cs if (p := store.pending(c.id)) is not None}
            rigs = open_targets(url, [c.target for c in cs], take_over=dead_sessions(store, take_over),
                                **({"session": sessions.pop()} if len(sessions) == 1 else {}), **link)
        try:
            for c in cs:
                check_campaign_chip(store, c, rigs[c.target], url)
            echo(f"campaigns {', '.join(f'{c.id} (target {c.target}, {position(c)})' for c in cs)} on {url}: "
                 "at once")
            # what must be collected apart (a request of another session, or one the cache holds) before the
            # campaigns send anything new
            for c in cs:
                pending = store.pending(c.id)
                rig = rigs[c.target]
                if pending is not None:
                    with store.lock(c.id):
                        runner = Runner(store, rig, c.id, None)
                        if not runner.leaves_turn(pending.op, pending.session):
                            runner.settle()
            return _threads(location, cs, rigs, echo, progress)
        finally:
            for r in rigs.values():  # the last to close releases the rig
                r.close()
    finally:
        store.close()


def _threads(location, cs: Sequence[Campaign], rigs: dict[int, Rig], echo, progress: bool) -> list[tuple[int, str]]:
    stopped: list[tuple[int, str]] = []

    def work(k: int, c: Campaign) -> None:
        try:
            store = Store(location)
        except NandrigError as e:
            stopped.append((c.id, str(e)))
            return
        try:
            done = run(store, rigs[c.target], c.id, progress=progress, position=k)
            echo(f"campaign {c.id} (target {c.target}) {done.state}")
        except Exception as e:  # noqa: BLE001 - one campaign's end is not the others'
            why = str(e) if isinstance(e, NandrigError) else f"{type(e).__name__}: {e}"
            stopped.append((c.id, f"{why} (at {position(store.campaign(c.id))})"))
            echo(f"campaign {c.id} (target {c.target}) stopped: {why}")
        finally:
            store.close()

    threads = [threading.Thread(target=work, args=(k, c), daemon=True, name=f"campaign-{c.id}")
               for k, c in enumerate(cs)]
    for t in threads:
        t.start()
    for t in threads:
        while t.is_alive():  # in steps, so Ctrl-C reaches this thread
            t.join(0.2)
    return stopped
