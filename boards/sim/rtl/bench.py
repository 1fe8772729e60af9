"""``nandrig bench rig``: how close the RTL rig's firmware loops come to the chip's own limits.

One block cycle with measurement is a CYCLE of one round (erase + program every page with the
pattern) and a MEASURE of every page (read + compare on the rig). Its rig time is the rig clock
(simulated time) from just before the CYCLE to just after the MEASURE, host turnarounds included.
Its plain floor is what the chip and the bus need at the selected timing mode one operation after
another: the array's time of every erase, program and read (as the chip itself reports them) plus every
command, address and data cycle at the mode's tWC / tRC. Its cache floor is the plain floor less what
ONFI's cache operations can overlap at best: each page's transfer with its neighbour's array time (a page
in while the page before programs, a page out while the next one is read). The mode's fixed waits (tWB,
tADL, tRR, tWHR), the cache operations' register moves and status reads are in neither floor: they count
as rig overhead, which makes both ratios conservative.
"""
from __future__ import annotations

import dataclasses
import shutil
import statistics
import subprocess
import time
from pathlib import Path

from nandrig.virtual_chip.chip import VirtualChip
from nandrig.boards.sim.rtl.run import RtlRig
from nandrig.errors import NandrigError
from nandrig.chip.timing import limit_ns

TARGET = 1.05


def firmware_size(elf: Path) -> dict:
    """Bytes of code (text, read-only data included) and of data (initialized + zeroed) in the firmware image."""
    size = shutil.which("riscv64-unknown-elf-size")
    if not size or not elf.exists():
        raise NandrigError(f"cannot size {elf}: riscv64-unknown-elf-size or the firmware is missing")
    text, data, bss = (int(x) for x in subprocess.run([size, str(elf)], capture_output=True, text=True,
                                                       check=True).stdout.splitlines()[1].split()[:3])
    return {"code_bytes": text, "data_bytes": data + bss, "initialized_data_bytes": data, "zeroed_data_bytes": bss}


def cache_overlap_ns(array_ops: list[tuple[str, int]], t_in_ns: float, t_out_ns: float) -> float:
    """What a perfect cache pipeline hides: each program's page transfer (``t_in_ns``) behind the previous
    page's programming, each read's array time behind the previous page's transfer out (``t_out_ns``)."""
    hidden, prev = 0.0, None
    for name, ns in array_ops:
        if name == "program" and prev and prev[0] == "program":
            hidden += min(prev[1], t_in_ns)
        elif name == "read" and prev and prev[0] == "read":
            hidden += min(ns, t_out_ns)
        prev = (name, ns)
    return hidden


def bench_rig(profile: str = "mlc-3x", seed: int = 1, repeats: int = 3, echo=lambda s: None,
              board: str | None = None) -> dict:
    from nandrig.host.link.rig import Rig

    with RtlRig(VirtualChip(profile, seed), echo=echo, board=board) as rtl, Rig.open(rtl.url, timeout=120) as rig:
        info = rig.info()
        twc, trc = limit_ns(info.timing_mode)
        raw = info.raw_page_bytes
        bad = set(rig.scan_bad(0, 16))  # the factory marks are read now, outside the measured window
        block = next(b for b in range(16) if b not in bad)
        turnaround = []
        for _ in range(5):  # one host turnaround: a reply out, the next request in
            a = rig.time_ns()
            turnaround.append(rig.time_ns() - a)
        runs = []
        for k in range(repeats):
            before = dataclasses.replace(rtl.bridge.tally)
            first_op, first_bus_op = len(rtl.bridge.model.array_ops), len(rtl.bridge.model.log.ops)
            t0 = rig.time_ns()
            cyc = rig.cycle(block, 1, 1, seed + k)
            meas = rig.measure(block, 1, seed + k)
            t1 = rig.time_ns()
            after = rtl.bridge.tally
            if cyc.failed[block] or cyc.done[block] != 1:
                raise NandrigError(f"block {block} failed its cycle")
            ops = rtl.bridge.model.array_ops[first_op:]
            array_ns = sum(ns for _, ns in ops)
            cmd_addr = after.commands - before.commands + after.addresses - before.addresses
            data_in = after.data_in - before.data_in
            data_out = info.pages_per_block * raw
            floor = array_ns + (cmd_addr + data_in) * twc + data_out * trc
            # a page in: 80h, five address cycles, the data, 15h; a page out: its data
            cache_floor = floor - cache_overlap_ns(ops, (7 + raw) * twc, raw * trc)
            runs.append({"rig_ns": t1 - t0, "floor_ns": round(floor), "cache_floor_ns": round(cache_floor),
                         "array_ns": array_ns, "rb_low_ns": after.busy_ns - before.busy_ns,
                         "bus_ns_at_mode_limit": round(floor - array_ns), "data_in_bytes": data_in,
                         "data_out_bytes": data_out, "command_address_cycles": cmd_addr,
                         "ratio": round((t1 - t0) / floor, 4), "cache_ratio": round((t1 - t0) / cache_floor, 4),
                         "cache_programs": sum(name == "cache-program"
                                               for name, _, _ in rtl.bridge.model.log.ops[first_bus_op:]),
                         "page_errors": int(meas.errors[0].sum())})
            echo(f"block cycle {k + 1}/{repeats}: {runs[-1]['ratio']}")
        elf = rtl.out / "software" / "firmware" / "firmware.elf"
    host = 3 * statistics.median(turnaround)  # TIME reply -> CYCLE, CYCLE reply -> MEASURE, MEASURE reply -> TIME
    ratio = statistics.median(r["ratio"] for r in runs)
    floor = statistics.median(r["floor_ns"] for r in runs)
    cache_floor = statistics.median(r["cache_floor_ns"] for r in runs)
    rig_ns = statistics.median(r["rig_ns"] for r in runs)
    return {
        "board": board, **rtl.clocks.describe(), "chip": profile, "seed": seed, "block": block, "pages_per_block": info.pages_per_block, "page_bytes": raw,
        "timing_mode": info.timing_mode, "tWC_ns": twc, "tRC_ns": trc,
        "block_cycle": "CYCLE 1 round (erase + program every page) + MEASURE (read + compare every page)",
        "rig_time": "rig clock (simulated) from before CYCLE to after MEASURE, three host turnarounds included",
        "floor": "array time of every operation + command, address and data cycles at the mode's tWC/tRC",
        "cache_floor": "the floor less each page transfer a cache pipeline overlaps with a neighbour's array time",
        "repeats": repeats, "runs": runs,
        "median_rig_ns": rig_ns, "median_floor_ns": floor, "overhead_ratio": ratio,
        "median_cache_floor_ns": cache_floor, "cache_ratio": statistics.median(r["cache_ratio"] for r in runs),
        "host_turnarounds_ns": host, "overhead_ratio_without_host": round((rig_ns - host) / floor, 4),
        "target": TARGET, "meets_target": ratio <= TARGET,
        "firmware": firmware_size(elf),
    }



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


def bench_targets(profile: str = "mlc-small", seed: int = 1, counts: tuple[int, ...] = (1, 2, 4, 8), rounds: int = 2,
                  echo=lambda s: None, board: str | None = None) -> dict:
    """Block cycles on 1, 2, 4, 8 targets of one RTL rig at once (a chip per socket, seeds seed, seed+1, ...): the
    rig time of ``rounds`` CYCLE rounds of one block on each of N targets, against the computed floor for N,
    and the throughput (block rounds per rig second) relative to one target."""
    from nandrig.host.link.rig import Rig

    n_max = max(counts)
    chips = {k: VirtualChip(profile, seed + k) for k in range(n_max)}
    with RtlRig(chips[0], echo=echo, board=board, others={k: c for k, c in chips.items() if k}) as rtl, \
            Rig.open(rtl.url, timeout=120) as rig:
        info = rig.info()
        twc, _ = limit_ns(info.timing_mode)
        raw = info.raw_page_bytes
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
            before = {k: (dataclasses.replace(rtl.bridges[k].tally), len(rtl.bridges[k].model.array_ops))
                      for k in range(n)}
            t0 = rig.time_ns()
            replies = cycle_at_once(rig, {k: (blocks[k], rounds, seed + 10 * n + k) for k in range(n)})
            t1 = rig.time_ns()
            if any(status for status, _ in replies.values()):
                raise NandrigError(f"a CYCLE on {n} targets failed: {replies}")
            per_target = []
            for k in range(n):
                tally, first = before[k]
                after, ops = rtl.bridges[k].tally, rtl.bridges[k].model.array_ops[first:]
                cycles = after.commands - tally.commands + after.addresses - tally.addresses + after.data_in - tally.data_in
                erases = sum(name == "erase" for name, _ in ops)
                # what no pipeline hides from the target's own array: each erase's five cycles and its first page in
                alone = sum(ns for _, ns in ops) + erases * (5 + 7 + raw) * twc
                per_target.append({"bus_ns": round(cycles * twc), "array_ns": sum(ns for _, ns in ops),
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
        r["meets_throughput"] = r["throughput"] >= 0.95 * r["throughput_floor"]
    return {
        "board": board, **rtl.clocks.describe(), "chip": profile, "seed": seed, "pages_per_block": info.pages_per_block,
        "page_bytes": raw, "timing_mode": info.timing_mode, "tWC_ns": twc, "rounds": rounds,
        "work": f"{rounds} CYCLE rounds (erase + program every page) of one block on each of N targets at once",
        "rig_time": "rig clock (simulated) from before the first CYCLE to after the last reply, two host "
                    "turnarounds included",
        "floor": "max(the bus: every target's command, address and data cycles at the mode's tWC; the slowest "
                 "target alone: its array time plus what no pipeline hides, each erase's cycles and first page in)",
        "throughput": "block rounds per rig second relative to target 0 alone; its floor N x floor(1) / floor(N), "
                      "min(N, bus limit) for dies alike (throughput_alike)",
        "bus_limit_targets": round(bus_limit, 2), "host_turnarounds_ns": 2 * statistics.median(turnaround),
        "runs": rows, "target": TARGET,
        "meets_target": all(r["meets_ratio"] and r["meets_throughput"] for r in rows),
    }
