"""``nandrig bench rig --targets``: block cycles on 1, 2, 4, 8 targets of one rig at once against the shared bus's
floor, on the RTL rig (the firmware's CYCLE jobs in simulated gateware) or the virtual rig (its model of them,
boards/sim/bus_schedule.py). Each socket holds a chip of its own seed (seed, seed + 1, ...): dies differ in tPROG
and tBERS, and the slowest sets the pace. With ``alike`` every socket holds a chip of ``seed``: dies alike, whose
throughput can reach min(N, the bus limit)."""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from nandrig.chip.timing import limit_ns
from nandrig.errors import NandrigError

TARGET = 1.05  # the rig's time against the floor, at most
THROUGHPUT = 0.95  # of the throughput the dies allow, at least


@dataclass(frozen=True)
class Spent:
    """What a target's CYCLE put on the bus and its array: command, address and data-in cycles (status reads
    included), array time, and erases (each has cycles and a first page in that no pipeline hides)."""

    bus_cycles: int
    array_ns: int
    erases: int


def cycle_at_once(rig, work: dict[int, tuple[int, int, int]], timeout_s: float = 600.0) -> dict[int, tuple[int, bytes]]:
    """CYCLEs on several targets of one rig at once, on the rig's session: target -> (block, rounds, seed) sent
    back to back (protocol 1.15 runs each as its target's job), each reply as (status, payload) by target."""
    from nandrig import protocol as P
    from nandrig.protocol import Deframer, Opcode

    sent = {}
    for target, (block, rounds, seed) in work.items():
        seq = rig.next_seq()
        sent[seq] = target
        rig.t.write(b"\x00" + P.request(Opcode.CYCLE, seq, P.CYCLE_REQ.pack(block, 1, rounds, seed, 0), target).encode())
    out, deframer, deadline = {}, Deframer(), time.monotonic() + timeout_s
    while len(out) < len(work):
        if time.monotonic() > deadline:
            raise NandrigError(f"the rig did not end the CYCLEs of targets {sorted(set(work) - set(out))}")
        for f in deframer.feed(rig.t.read(1.0)):
            if f.seq in sent and f.op == Opcode.CYCLE:
                out[sent.pop(f.seq)] = (f.status, f.payload)
    return out


def bench_targets_on(rig, counts: tuple[int, ...], rounds: int, seed: int,
                     spent: Callable[[int], Callable[[], Spent]],
                     echo=lambda s: None) -> dict:
    """The runs on an open ``rig`` with max(counts) targets. ``spent(k)`` takes target k's tally now and returns
    what gives its spending since."""
    info = rig.info()
    twc, _ = limit_ns(info.timing_mode)
    raw = info.raw_page_bytes
    n_max = max(counts)
    blocks = {}
    for k in range(n_max):  # the factory marks are read now, outside the measured windows
        rig.target = k
        bad = set(rig.scan_bad(0, 16))
        blocks[k] = next(b for b in range(1, 16) if b not in bad)
    rig.target = 0
    turnaround = []
    for _ in range(5):
        a = rig.time_ns()
        turnaround.append(rig.time_ns() - a)
    rows = []
    for n in counts:
        since = {k: spent(k) for k in range(n)}
        t0 = rig.time_ns()
        replies = cycle_at_once(rig, {k: (blocks[k], rounds, seed + 10 * n + k) for k in range(n)})
        t1 = rig.time_ns()
        if any(status for status, _ in replies.values()):
            raise NandrigError(f"a CYCLE on {n} targets failed: {replies}")
        per_target = []
        for k in range(n):
            s = since[k]()
            # what no pipeline hides from the target's own array: each erase's five cycles and its first page in
            alone = s.array_ns + s.erases * (5 + 7 + raw) * twc
            per_target.append({"bus_ns": round(s.bus_cycles * twc), "array_ns": s.array_ns,
                               "alone_floor_ns": round(alone)})
        bus = sum(t["bus_ns"] for t in per_target)
        floor = max(bus, max(t["alone_floor_ns"] for t in per_target))
        rows.append({"targets": n, "rig_ns": t1 - t0, "floor_ns": floor, "bus_ns": bus,
                     "ratio": round((t1 - t0) / floor, 4), "per_target": per_target})
        echo(f"{n} target(s): rig {(t1 - t0) / 1e6:.2f} ms, floor {floor / 1e6:.2f} ms, ratio {rows[-1]['ratio']}")
    one = rows[0]
    bus_limit = one["per_target"][0]["alone_floor_ns"] / one["per_target"][0]["bus_ns"]
    for r in rows:
        r["throughput"] = round(r["targets"] * one["rig_ns"] / r["rig_ns"] / one["targets"], 3)
        # the most N targets can give over target 0 alone: min(N, bus limit) for N dies alike; dies differ (the
        # virtual chip's tPROG and tBERS vary die to die), and the slowest sets N's floor
        r["throughput_floor"] = round(r["targets"] * one["floor_ns"] / r["floor_ns"], 3)
        r["throughput_alike"] = round(min(r["targets"], bus_limit), 3)
        r["meets_ratio"] = r["ratio"] <= TARGET
        r["meets_throughput"] = r["throughput"] >= THROUGHPUT * r["throughput_floor"]
    return {
        "pages_per_block": info.pages_per_block, "page_bytes": raw, "timing_mode": info.timing_mode, "tWC_ns": twc,
        "rounds": rounds,
        "work": f"{rounds} CYCLE rounds (erase + program every page) of one block on each of N targets at once",
        "rig_time": "rig clock from before the first CYCLE to after the last reply, two host turnarounds included",
        "floor": "max(the bus: every target's command, address and data cycles at the mode's tWC; the slowest "
                 "target alone: its array time plus what no pipeline hides, each erase's cycles and first page in)",
        "throughput": "block rounds per rig second relative to target 0 alone; its floor N x floor(1) / floor(N), "
                      "min(N, bus limit) for dies alike (throughput_alike)",
        "bus_limit_targets": round(bus_limit, 2), "host_turnarounds_ns": 2 * statistics.median(turnaround),
        "runs": rows, "target": TARGET,
        "meets_target": all(r["meets_ratio"] and r["meets_throughput"] for r in rows),
    }


def socket_seeds(seed: int, n: int, alike: bool) -> dict[int, int]:
    return {k: seed if alike else seed + k for k in range(n)}


def bench_targets_virtual(profile: str = "mlc-small", seed: int = 1, counts: tuple[int, ...] = (1, 2, 4, 8),
                          rounds: int = 2, echo=lambda s: None, alike: bool = False) -> dict:
    """The virtual rig, op by op (``exact``), over its TCP link as ``sim serve`` runs it."""
    from nandrig.boards.sim.server import VirtualRig
    from nandrig.boards.sim.tcp_link import serve_in_thread
    from nandrig.host.link.rig import Rig
    from nandrig.virtual_chip.chip import VirtualChip

    chips = {k: VirtualChip(profile, s) for k, s in socket_seeds(seed, max(counts), alike).items()}
    vr = VirtualRig(chips[0], exact=True, others={k: c for k, c in chips.items() if k})
    ppb, raw = chips[0].geometry.pages_per_block, chips[0].geometry.raw_page_bytes

    def spent(k: int) -> Callable[[], Spent]:
        chip = chips[k]
        before = chip.busy_ns_by_phase.copy()

        def since() -> Spent:
            d = chip.busy_ns_by_phase - before
            # every erase 60h, three addresses, D0h; every page 80h, five addresses, the data, 15h or 10h; 70h each
            return Spent(rounds * (6 + ppb * (8 + raw)), d["erase"] + d["program"], rounds)
        return since

    port, stop, th = serve_in_thread(vr)
    try:
        with Rig.open(f"socket://127.0.0.1:{port}", timeout=120) as rig:
            out = bench_targets_on(rig, counts, rounds, seed, spent, echo)
    finally:
        stop.set()
        th.join(5)
    return {"rig": "virtual", "clock_mhz": vr.clk_hz / 1e6, "chip": profile, "seed": seed, "dies_alike": alike, **out}
