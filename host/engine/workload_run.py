"""``nandrig run workload``: a workload replayed on the FTL over a campaign's reserved blocks, as a campaign of the
chip's database.

The run: the FTL (host/ftl) over the reserved good blocks, t and density from the named policy, the drive filled
once (every logical page written in order), then the workload's requests replayed (host/workload/replay.py).
The figures are the replay's, the fill apart; energy is the chip's over the replay (the rig's ENERGY meter).

Every rig request is journaled and its reply and wear recorded as it arrives (host/engine/recorder.py), and the
program's own state (the FTL's maps and counters, the results so far, its place in the trace) is checkpointed
every few seconds of wall time. ``nandrig resume`` after a kill starts from the last checkpoint, answers the
requests since it from the record, collects the one in flight from the rig, and goes on: the statistics it ends
with are those of a run never stopped, and no P/E cycle is lost or counted twice. A trace file is read again on
resume, so it is checked to be the file the campaign started with (its SHA-256).
"""
from __future__ import annotations

import dataclasses
import hashlib
import io
import itertools
import json
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from nandrig.characterization.rber import RberParams
from nandrig.errors import NandrigError
from nandrig.host.engine.chip_access import format_blocks, known_chip, open_for_chip, parse_blocks, versions
from nandrig.host.engine.recorder import CallRecorder
from nandrig.host.ftl.flash import RigFlash
from nandrig.host.ftl.ftl import Ftl, FtlConfig, Victim
from nandrig.host.ftl.policy import make_policy
from nandrig.host.kinds.steps import contiguous
from nandrig.host.link.rig import Rig
from nandrig.host.storage.store import Store
from nandrig.host.workload.evaluate import GB, figures
from nandrig.host.workload.replay import BusTiming, ReplayResult, replay
from nandrig.host.workload.trace import IoOp, Request, Synthetic, read_trace, synthetic

KIND = "workload"
CHECKPOINT_S = 5.0  # default wall time between checkpoints: what a resumed run does again at most (from the record)
MIN_BLOCKS = 6
CHUNK = 64  # requests replayed between looks at the clock
_LATENCIES = ("read_latency_ns", "write_latency_ns")


@dataclass(frozen=True)
class WorkloadParams:
    """A workload campaign's parameters as the store keeps them (all a resumed run needs, the trace file apart)."""

    blocks: tuple[int, ...]  # the reserved good blocks, the FTL's in this order
    initial_wear: tuple[int, ...]  # their recorded P/E at the start
    trace: dict  # {"synthetic": Synthetic's fields, "seed", "requests"} or {"file", "format", "sha256", "requests"}
    policy: str
    models: str  # the name the lower- and upper-page models were given by
    lower: dict
    upper: dict
    rated_pe: int
    over_provisioning: float
    victim: str
    fill: bool
    checkpoint_s: float = CHECKPOINT_S  # campaigns stored before it was a parameter: the old constant

    @classmethod
    def from_mapping(cls, d: dict) -> "WorkloadParams":
        return cls(**{**d, "blocks": tuple(d["blocks"]), "initial_wear": tuple(d["initial_wear"])})

    def to_mapping(self) -> dict:
        return dataclasses.asdict(self)


def trace_of(path: str, fmt: str, requests: int | None) -> dict:
    """A trace file as a campaign keeps it: where, its format, its SHA-256 (checked on resume), the request limit."""
    try:
        digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as e:
        raise NandrigError(f"trace {path}: {e.strerror}") from None
    return {"file": str(Path(path).resolve()), "format": fmt, "sha256": digest, "requests": requests}


def _requests(trace: dict, span: int) -> Iterator[Request]:
    """The trace's requests; a trace file is checked at once to be the one the campaign started with."""
    if "synthetic" in trace:
        return synthetic(Synthetic(**trace["synthetic"]), span, trace["requests"], trace["seed"])
    path = trace["file"]
    try:
        same = hashlib.sha256(Path(path).read_bytes()).hexdigest() == trace["sha256"]
    except OSError as e:
        raise NandrigError(f"trace {path}: {e.strerror}; the campaign reads it again to go on") from None
    if not same:
        raise NandrigError(f"trace {path} changed since the campaign started (its SHA-256 differs): put the "
                           "original back to go on")
    return _lines(path, trace["format"], trace["requests"])


def _lines(path: str, fmt: str, limit: int | None) -> Iterator[Request]:
    with open(path, encoding="utf-8", errors="replace") as f:
        yield from itertools.islice(read_trace(f, fmt, path), limit)


def describe(trace: dict) -> str:
    if "synthetic" in trace:
        s = trace["synthetic"]
        return (f"{trace['requests']:,} synthetic {s['access']} requests ({s['reads']:.0%} reads, {s['size']} B, "
                f"{s['gap_us']:g} us apart on average, seed {trace['seed']})")
    limit = f"its first {trace['requests']:,} requests" if trace["requests"] else "every request"
    return f"{trace['format']} trace {trace['file']}, {limit}"


@dataclass
class _Run:
    """Where the program stands: what a checkpoint keeps."""

    done: int = 0  # requests taken from the stream (the fill's, then the trace's)
    fill: ReplayResult = dataclasses.field(default_factory=ReplayResult)
    trace: ReplayResult = dataclasses.field(default_factory=ReplayResult)
    at_trace: dict | None = None  # the FTL's counters when the trace began
    energy_pj: int | None = None  # the chip's over the trace, once it ended
    flash_energy_pj: int = 0  # RigFlash's reading kept across bulk wear

    def encode(self, ftl: Ftl) -> bytes:
        arrays, rest = ftl.snapshot()
        doc = {"ftl": rest, "done": self.done, "at_trace": self.at_trace, "energy_pj": self.energy_pj,
               "flash_energy_pj": self.flash_energy_pj,
               "results": {k: {f.name: getattr(r, f.name) for f in dataclasses.fields(r) if f.name not in _LATENCIES}
                           for k, r in (("fill", self.fill), ("trace", self.trace))}}
        lat = {f"{k}.{f}": np.asarray(getattr(r, f), np.float64) for k, r in (("fill", self.fill), ("trace", self.trace))
               for f in _LATENCIES}
        out = io.BytesIO()
        np.savez_compressed(out, doc=np.frombuffer(json.dumps(doc).encode(), np.uint8),
                            **{f"ftl.{k}": v for k, v in arrays.items()}, **lat)
        return out.getvalue()

    @classmethod
    def decode(cls, data: bytes, ftl: Ftl) -> "_Run":
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            doc = json.loads(z["doc"].tobytes())
            ftl.restore({k[4:]: z[k] for k in z.files if k.startswith("ftl.")}, doc["ftl"])
            results = {k: ReplayResult(**v, **{f: z[f"{k}.{f}"].tolist() for f in _LATENCIES})
                       for k, v in doc["results"].items()}
        return cls(doc["done"], results["fill"], results["trace"], doc["at_trace"], doc["energy_pj"],
                   doc["flash_energy_pj"])


def start_campaign(db, url: str, profile: str, seed: int, chip_label: str | None, take_over: bool, blocks: str,
                   trace: dict, policy: str, models: str, lower: RberParams, upper: RberParams, rated_pe: int,
                   over_provisioning: float, victim: str, fill: bool, echo,
                   checkpoint_s: float | None = None) -> tuple[dict, int]:
    """The workload as a campaign: its blocks reserved (one a campaign holds is refused), their factory marks
    scanned and the bad ones left out, every rig request journaled; the result stored for ``nandrig report``."""
    store = Store(db)
    try:
        store.check_integrity()
        known = known_chip(store, url, profile, seed, chip_label)
        if known is not None:  # refused from the database alone, before a rig is taken
            wanted = parse_blocks(blocks, store.chip(known)["blocks"])
            _check_free(store, known, wanted)
            _enough(wanted, wanted)
        rig, chip_id = open_for_chip(store, url, profile, seed, chip_label, take_over=take_over)
        with rig:
            wanted = parse_blocks(blocks, rig.info().blocks)
            states = _check_free(store, chip_id, wanted)
            _enough(wanted, wanted)
            for run_ in contiguous(store.unscanned(chip_id, wanted)):  # factory marks before anything is worn
                store.record_scan(chip_id, run_, rig.scan_bad(run_[0], len(run_)))
            bad = set(store.factory_bad(chip_id, wanted))
            good = tuple(b for b in wanted if b not in bad)
            _enough(wanted, good)
            p = WorkloadParams(good, tuple(states[b].pe if b in states else 0 for b in good), trace, policy, models,
                               lower.as_dict(), upper.as_dict(), rated_pe, over_provisioning, victim, fill,
                               checkpoint_s or CHECKPOINT_S)
            cid = store.create_campaign(chip_id, KIND, p.to_mapping(), sorted(good), url, rig.hello_info.identity,
                                        versions(rig), 0, rig.target)
            echo(f"campaign {cid}: {KIND} on blocks {format_blocks(sorted(good))} in {store.name}: {describe(trace)}, "
                 f"policy {policy}")
            with store.lock(cid):
                return run_campaign(store, rig, cid, echo), cid
    finally:
        store.close()


def _enough(wanted: list[int], good) -> None:
    if len(good) < MIN_BLOCKS:
        raise NandrigError(f"blocks {format_blocks(wanted)} hold {len(good)} good blocks: the FTL needs at least "
                           f"{MIN_BLOCKS} (two open, collection's headroom, and room for data)")


def _check_free(store: Store, chip_id: int, blocks: list[int]) -> dict:
    states = store.block_states(chip_id)
    for b in blocks:
        if b in states and states[b].reserved_by:
            raise NandrigError(f"block {b} is reserved by campaign {states[b].reserved_by}")
    return states


def _ftl(rig: Rig, p: WorkloadParams) -> Ftl:
    """The campaign's FTL, fresh: its blocks' factory marks are the campaign's (no scan goes to the rig)."""
    flash = RigFlash(rig, p.blocks)
    lower, upper = RberParams.from_mapping(p.lower), RberParams.from_mapping(p.upper)
    policy = make_policy(p.policy, lower, upper, flash.t_max, rig.info().codeword_bytes, p.rated_pe)
    return Ftl(flash, policy, FtlConfig(over_provisioning=p.over_provisioning, victim=Victim(p.victim)),
               initial_wear=np.array(p.initial_wear, np.int64), factory_bad=frozenset())


def run_campaign(store: Store, rig: Rig, campaign_id: int, echo: Callable[[str], None] = lambda s: None) -> dict:
    """Run (or go on with) a workload campaign, under its lock; its stored result once done."""
    c = store.campaign(campaign_id)
    if c.state != "running":
        return store.result_of(c.id)
    p = WorkloadParams.from_mapping(c.params)
    ftl = _ftl(rig, p)
    flash: RigFlash = ftl.flash
    page = flash.geometry.page_bytes
    bus = BusTiming.of(rig)
    tty = sys.stderr.isatty()
    with CallRecorder(store, rig, c) as rec:
        run = _Run.decode(rec.saved.state, ftl) if rec.saved else _Run()
        flash.kept_pj = run.flash_energy_pj
        n_fill = ftl.logical_pages if p.fill else 0
        fill = (Request(0, IoOp.WRITE, lpn * page, page) for lpn in range(n_fill))
        stream = itertools.islice(itertools.chain(fill, _requests(p.trace, ftl.logical_pages * page)), run.done, None)
        last = time.monotonic()
        while True:
            if run.done >= n_fill and run.at_trace is None:  # the trace begins: the meter from here
                flash.energy_pj()
                run.at_trace = dataclasses.asdict(ftl.counters)
            room = n_fill - run.done if run.done < n_fill else CHUNK
            chunk = list(itertools.islice(stream, min(CHUNK, room)))
            if not chunk:
                break
            replay(ftl, chunk, bus, result=run.fill if run.done < n_fill else run.trace)
            run.done += len(chunk)
            if time.monotonic() - last >= p.checkpoint_s and not rec.replaying:
                run.flash_energy_pj = flash.kept_pj
                rec.checkpoint(run.encode(ftl))
                last = time.monotonic()
                if tty:
                    echo(f"campaign {c.id}: {run.done:,} requests ({n_fill:,} of them the fill)")
        run.energy_pj = flash.energy_pj()
        result = _result(store.chip(c.chip_id)["label"], p, ftl, run)
        with store.tx() as db:  # the result and the end together: a resume never stores a second result
            store.set_result(db, c.id, result)
            store.set_state(c.id, "done", f"{run.done} requests, {rec.n} rig requests", db)
    return result


def _result(chip: str, p: WorkloadParams, ftl: Ftl, run: _Run) -> dict:
    r, c, at = run.trace, ftl.counters, run.at_trace or {}
    host_writes = c.host_writes - at.get("host_writes", 0)
    programs = c.flash_programs - at.get("flash_programs", 0)
    bytes_moved = r.bytes_read + r.bytes_written
    return {
        "chip": chip, "blocks": list(p.blocks), "logical_pages": ftl.logical_pages,
        "page_bytes": ftl.flash.geometry.page_bytes, "policy": p.policy, "models": p.models, "rated_pe": p.rated_pe,
        "over_provisioning": p.over_provisioning, "victim": p.victim, "workload": describe(p.trace),
        "fill_requests": run.fill.requests, "requests": r.requests, "bytes_read": r.bytes_read,
        "bytes_written": r.bytes_written, "unwritten_reads": r.unwritten_reads, **figures(ftl, r),
        "write_amplification": programs / host_writes if host_writes else None,
        "energy_pj": run.energy_pj,
        "energy_per_gb_j": run.energy_pj * 1e-12 / (bytes_moved / GB) if run.energy_pj and bytes_moved else None,
        "counters": dataclasses.asdict(c), "counters_at_trace": at,
    }


def text_lines(res: dict) -> list[str]:
    lat = lambda d: "/".join(f"{d[k]:.0f}" for k in ("p50_us", "p99_us", "p99.9_us")) if d else "none"  # noqa: E731
    wa = "-" if res["write_amplification"] is None else f"{res['write_amplification']:.2f}"
    energy = "no meter" if res["energy_per_gb_j"] is None else f"{res['energy_per_gb_j']:.1f} J/GB"
    return [
        f"{res['chip']}, blocks {format_blocks(res['blocks'])} ({res['logical_pages']:,} logical pages of "
        f"{res['page_bytes']} B), policy {res['policy']} (models {res['models']}): {res['workload']}",
        f"after a fill of {res['fill_requests']:,} page writes, {res['requests']:,} requests: device "
        f"{res['device_mb_s']:.2f} MB/s ({res['offered_mb_s']:.2f} offered), {res['iops']:.0f} IOPS; latency p50/p99/"
        f"p99.9 us: read {lat(res['read_latency_us'])}, write {lat(res['write_latency_us'])}",
        f"write amplification {wa} (the trace's), {res['gc_moves']:,} GC and {res['wl_moves']:,} wear-leveling "
        f"moves, {res['retired_blocks']} blocks retired, P/E now mean {res['pe_at_end']['mean']:.0f} max "
        f"{res['pe_at_end']['max']}, energy {energy} over the trace",
        f"raw BER {res['raw_ber']:.2e}, UBER {res['uber']:.2e} (codewords not returned as written per bit read); "
        f"end to end: {res['replayed_reads']:,} page reads checked, {res['damaged_reads']} host reads reported "
        f"lost, {res['silent_caught']} miscorrections caught, 0 returned wrong",
    ]
