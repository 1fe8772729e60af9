"""Opening rigs for campaigns, registering chips, creating, resuming and exporting campaigns."""
from __future__ import annotations

import csv
import io
import math
import platform
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from nandrig import __version__
from nandrig.errors import NandrigError
from nandrig.chip.geometry import Geometry
from nandrig.host.campaigns import Runner
from nandrig.host.kinds import KindParams, kind
from nandrig.host.kinds.steps import contiguous
from nandrig.host.oven import make_oven
from nandrig.host.rig import Rig
from nandrig.host.store import Campaign, Store


def sim_state_path(db: Path, profile: str, seed: int) -> Path:
    folder = db.with_name(db.name + ".rigs")
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{profile}-seed{seed}.state"


def open_for_chip(store: Store, url: str, profile: str, seed: int, chip_label: str | None = None) -> tuple[Rig, int]:
    """Open the rig and find or register its chip. Simulated chips keep their state next to the database."""
    if url == "sim":
        label = f"sim:{profile}:{seed}"
        chip_id = store.chip_id(label)
        state = store.chip(chip_id)["sim_state"] if chip_id else str(sim_state_path(store.path, profile, seed))
        rig = Rig.open("sim", chip=profile, seed=seed, state=state)
        sim = (profile, seed, state)
    else:
        rig = Rig.open(url)
        sim = None
    try:
        info = rig.info()
        if url != "sim":
            label = chip_label or f"{info.read_id.hex()}:{info.model}"
            chip_id = store.chip_id(label)
        if chip_id is None:
            chip_id = store.add_chip(label, info, rig.read_param_page(), sim)
        else:
            row = store.chip(chip_id)
            if (row["page_bytes"], row["pages_per_block"], row["blocks"]) != (info.page_bytes, info.pages_per_block, info.blocks):
                raise NandrigError(f"the chip on {url} does not match {label} in {store.path}")
    except BaseException:
        rig.close()
        raise
    return rig, chip_id


def versions(rig: Rig) -> dict:
    return {"nandrig": __version__, "python": platform.python_version(), "numpy": np.__version__,
            "platform": platform.platform(), "rig": rig.hello_info.identity,
            "protocol": ".".join(map(str, rig.hello_info.version))}


def create(store: Store, rig: Rig, chip_id: int, kind_name: str, params: KindParams | dict, url: str) -> int:
    """A new campaign of ``kind_name`` (its parameters as the kind's dataclass, or a mapping of its fields)."""
    k = kind(kind_name)
    p = params if isinstance(params, k.params) else k.params.from_mapping(params)
    row = store.chip(chip_id)
    g = Geometry(row["page_bytes"], row["spare_bytes"], row["pages_per_block"], row["blocks"])
    steps = k.plan(p, g)
    todo = store.unscanned(chip_id, list(p.blocks))
    for run_ in contiguous(todo):  # read the factory marks before anything touches these blocks
        store.record_scan(chip_id, run_, rig.scan_bad(run_[0], len(run_)))
    return store.create_campaign(chip_id, kind_name, p.to_mapping(), list(p.blocks), url, rig.hello_info.identity,
                                 versions(rig), len(steps))


def open_for_campaign(store: Store, c: Campaign, url: str | None = None) -> Rig:
    row = store.chip(c.chip_id)
    if row["sim_profile"] is not None:
        return Rig.open("sim", chip=row["sim_profile"], seed=row["sim_seed"], state=row["sim_state"])
    return Rig.open(url or c.rig_url)


def run(store: Store, rig: Rig, campaign_id: int, progress: bool = True) -> Campaign:
    c = store.campaign(campaign_id)
    bar = _progress_bar(c) if progress and sys.stderr.isatty() else None
    try:
        runner = Runner(store, rig, campaign_id, make_oven(c.params.get("oven", "virtual")),
                        progress=(lambda done, total: bar.update(done - bar.n)) if bar else None)
        if bar:
            bar.update(runner.c.step)
        return runner.run()
    finally:
        if bar:
            bar.close()


def _progress_bar(c: Campaign):
    from tqdm import tqdm

    return tqdm(total=c.steps, desc=f"campaign {c.id} ({c.kind})", unit="step", file=sys.stderr)


def resume(store: Store, campaign_id: int | None = None, url: str | None = None,
           echo: Callable[[str], None] = print) -> list[Campaign]:
    todo = [c for c in store.campaigns() if c.state == "running" and (campaign_id is None or c.id == campaign_id)]
    if campaign_id is not None and not todo:
        c = store.campaign(campaign_id)
        raise NandrigError(f"campaign {campaign_id} is {c.state}; nothing to resume")
    if not todo:
        echo("nothing to resume")
    done = []
    for c in todo:
        echo(f"resuming campaign {c.id} ({c.kind}) at step {c.step} of {c.steps}")
        with open_for_campaign(store, c, url) as rig:
            done.append(run(store, rig, c.id))
    return done


# -- export ---------------------------------------------------------------------------
EXPORT_COLUMNS = ["campaign", "kind", "checkpoint", "label", "pe", "retention_h", "actual_h", "temp_c", "reads",
                  "offset", "blocks", "pages", "bits", "err_1to0", "err_0to1", "errors", "rber"]


def export_rows(store: Store, c: Campaign) -> list[dict]:
    """One row per checkpoint and P/E level: what ``nandrig fit`` reads."""
    rows = store.rows(c.id)
    out: dict[tuple, dict] = {}
    for label, pe, ret, actual, temp, reads, offset, block, _page, e10, e01, bits, _busy in rows:
        key = (label, pe)
        r = out.setdefault(key, {"campaign": c.id, "kind": c.kind, "checkpoint": len(out), "label": label, "pe": pe,
                                 "retention_h": ret, "actual_h": actual, "temp_c": temp, "reads": reads,
                                 "offset": offset, "blocks": set(), "pages": 0, "bits": 0, "err_1to0": 0,
                                 "err_0to1": 0})
        r["blocks"].add(block)
        r["pages"] += 1
        r["bits"] += bits
        r["err_1to0"] += e10
        r["err_0to1"] += e01
    result = []
    for r in out.values():
        r["blocks"] = len(r["blocks"])
        r["errors"] = r["err_1to0"] + r["err_0to1"]
        r["rber"] = r["errors"] / r["bits"] if r["bits"] else math.nan
        result.append(r)
    return result


def export_csv(store: Store, c: Campaign, per_page: bool = False) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    if per_page:
        w.writerow(["label", "pe", "retention_h", "actual_h", "temp_c", "reads", "offset", "block", "page",
                    "err_1to0", "err_0to1", "bits", "busy_ns"])
        w.writerows(store.rows(c.id))
        return buf.getvalue()
    w.writerow(EXPORT_COLUMNS)
    for r in export_rows(store, c):
        w.writerow([_fmt(r[k]) for k in EXPORT_COLUMNS])
    return buf.getvalue()


def _fmt(v) -> str:
    return repr(v) if isinstance(v, float) else str(v)
