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
from nandrig.protocol import SERIAL_BAUD

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
              board: str | None = None, link_baud: int = SERIAL_BAUD) -> dict:
    """``link_baud``: the serial link's pace in the rig time (0: unpaced, faster than any UART)."""
    from nandrig.host.link.rig import Rig

    # no STATUS polls in the window: the host polls every poll_s of wall time, and the simulation runs a block's
    # cycle (0.12 s on a board, less than one 0.5 s poll period) tens of times slower than the board, so its polls
    # would come that many times as often, each a STATUS exchange on the paced link (wall_s in each run)
    with RtlRig(VirtualChip(profile, seed), echo=echo, board=board, link_baud=link_baud) as rtl, \
            Rig.open(rtl.url, timeout=120, poll_s=3600.0) as rig:
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
            wall = time.monotonic()
            t0 = rig.time_ns()
            cyc = rig.cycle(block, 1, 1, seed + k)
            meas = rig.measure(block, 1, seed + k)
            t1 = rig.time_ns()
            wall = time.monotonic() - wall
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
            runs.append({"rig_ns": t1 - t0, "wall_s": round(wall, 2), "floor_ns": round(floor),
                         "cache_floor_ns": round(cache_floor), "array_ns": array_ns,
                         "rb_low_ns": after.busy_ns - before.busy_ns,
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
        "board": board, **rtl.clocks.describe(), "link_baud": link_baud, "chip": profile, "seed": seed, "block": block, "pages_per_block": info.pages_per_block, "page_bytes": raw,
        "timing_mode": info.timing_mode, "tWC_ns": twc, "tRC_ns": trc,
        "block_cycle": "CYCLE 1 round (erase + program every page) + MEASURE (read + compare every page)",
        "rig_time": "rig clock (simulated) from before CYCLE to after MEASURE, three host turnarounds and the "
                    "serial link at link_baud (0: unpaced) included",
        "floor": "array time of every operation + command, address and data cycles at the mode's tWC/tRC",
        "cache_floor": "the floor less each page transfer a cache pipeline overlaps with a neighbour's array time",
        "repeats": repeats, "runs": runs,
        "median_rig_ns": rig_ns, "median_floor_ns": floor, "overhead_ratio": ratio,
        "median_cache_floor_ns": cache_floor, "cache_ratio": statistics.median(r["cache_ratio"] for r in runs),
        "host_turnarounds_ns": host, "overhead_ratio_without_host": round((rig_ns - host) / floor, 4),
        "target": TARGET, "meets_target": ratio <= TARGET,
        "firmware": firmware_size(elf),
    }



def bench_targets(profile: str = "mlc-small", seed: int = 1, counts: tuple[int, ...] = (1, 2, 4, 8), rounds: int = 2,
                  echo=lambda s: None, board: str | None = None, alike: bool = False) -> dict:
    """Block cycles on 1, 2, 4, 8 targets of one RTL rig at once (boards/sim/benches/targets.py), each target's bus
    cycles as the bridge counted them and its array time as its chip model ran it."""
    from nandrig.boards.sim.benches.targets import Spent, bench_targets_on, socket_seeds
    from nandrig.host.link.rig import Rig

    chips = {k: VirtualChip(profile, s) for k, s in socket_seeds(seed, max(counts), alike).items()}
    with RtlRig(chips[0], echo=echo, board=board, others={k: c for k, c in chips.items() if k}) as rtl, \
            Rig.open(rtl.url, timeout=120) as rig:
        def spent(k: int):
            bridge = rtl.bridges[k]
            tally, first = dataclasses.replace(bridge.tally), len(bridge.model.array_ops)

            def since() -> Spent:
                after, ops = bridge.tally, bridge.model.array_ops[first:]
                cycles = (after.commands - tally.commands + after.addresses - tally.addresses
                          + after.data_in - tally.data_in)
                return Spent(cycles, sum(ns for _, ns in ops), sum(name == "erase" for name, _ in ops))
            return since

        out = bench_targets_on(rig, counts, rounds, seed, spent, echo)
        return {"rig": "rtl", "board": board, **rtl.clocks.describe(), "chip": profile, "seed": seed,
                "dies_alike": alike, **out}
