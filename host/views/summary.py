"""The few lines a campaign leaves on the terminal when it ends: where its blocks stand, the error rate at each
checkpoint by page type, operation times, and what went wrong on the way."""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from nandrig.chip.geometry import PageType
from nandrig.host.storage.store import Campaign, Store


def summary(store: Store, c: Campaign) -> list[str]:
    blocks = list(c.blocks)
    state = list(store.block_states(c.chip_id, blocks).values())
    pes = [s.pe for s in state]
    line = f"  {len(blocks)} blocks at P/E {min(pes)}" + (f"-{max(pes)}" if max(pes) != min(pes) else "")
    uncertain = max(s.pe_uncertain for s in state)
    if uncertain:
        line += f" (up to {uncertain} more: a rig restart cut a command short)"
    failed = [s.block for s in state if s.failed]
    if failed:
        line += f"; {len(failed)} failed: {', '.join(map(str, failed[:8]))}{' ...' if len(failed) > 8 else ''}"
    out = [line]
    out += _checkpoints(store, c)
    out += _op_times(store, c)
    return out


def _checkpoints(store: Store, c: Campaign) -> list[str]:
    """A line per checkpoint as ``export`` has them: the same label at another wear level is another line."""
    rows = store.rows(c.id)
    if not rows:
        return []
    pm = store.page_map(c.chip_id)
    sums: dict[tuple, dict] = {}
    for r in rows:
        s = sums.setdefault((r.label, r.pe), {PageType.LOWER: [0, 0], PageType.UPPER: [0, 0], "h": r.retention_h,
                                              "reads": r.reads, "offset": r.offset})
        e = s[pm.page_type(r.page)]
        e[0] += r.err_1to0 + r.err_0to1
        e[1] += r.bits
    rate = lambda e: f"{e[0] / e[1]:.2e}" if e[1] else "-"  # noqa: E731
    extra = [k for k in ("reads", "offset") if any(s[k] for s in sums.values())]  # the kinds that vary them
    out = [f"  {'checkpoint':<14} {'P/E':>7} {'retention h':>12}" + "".join(f" {k:>10}" for k in extra)
           + f" {'RBER lower':>11} {'RBER upper':>11}"]
    for (label, pe), s in list(sums.items())[-12:]:  # a long campaign: its last dozen
        out.append(f"  {label:<14} {pe:>7} {s['h']:>12.4g}" + "".join(f" {s[k]:>10}" for k in extra)
                   + f" {rate(s[PageType.LOWER]):>11} {rate(s[PageType.UPPER]):>11}")
    if len(sums) > 12:
        out.insert(1, f"  ({len(sums) - 12} earlier checkpoints: `nandrig export` or `nandrig report`)")
    return out


def _op_times(store: Store, c: Campaign) -> list[str]:
    times: dict[str, list[int]] = defaultdict(list)
    for t in store.op_times(c.id):
        times[t.op].append(t.busy_ns)
    return [f"  {op}: median {np.median(ns) / 1e3:.0f} us over {len(ns)} ({np.percentile(ns, 5) / 1e3:.0f}-"
            f"{np.percentile(ns, 95) / 1e3:.0f} us, 5-95 %)" for op, ns in sorted(times.items())]
