"""Build the rig SoC and its firmware for Verilator (cached: rebuilt only when a source changes)."""
from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from nandrig.boards.build_log import output_to
from nandrig.boards.catalog import board_build
from nandrig.virtual_chip.power import Power
from nandrig.boards.sim.wiring import Wiring
from nandrig.chip.supply import FRONT_END
from nandrig.errors import NandrigError
from nandrig.protocol import Limit
from nandrig.firmware import check_stack
from nandrig.gateware.bch.config import BchConfig
from nandrig.gateware.clocks import DEFAULT_CLOCKS as CLOCKS, Clocks
from nandrig.gateware.supply.meter import ADC_PADS, RECENT_CYCLES

REPO = Path(__file__).resolve().parents[3]
BUILD = REPO / "build" / "rtl-rig"
FIRMWARE = REPO / "firmware" / "rig"
BRIDGE = Path(__file__).resolve().parent / "nandbridge"
UART = Path(__file__).resolve().parent / "uartbridge"  # LiteX's serial2tcp overwrites its 2 KiB buffer on longer frames
BUILD_BCH = REPO / "build" / "rtl-rig-bch"
# the BCH variant's engine: the default code with 8 Chien lanes and the half multiplier bank, cut to t_max = 14
# (mlc-small's 64-byte spare would hold 26 beside the page profile). Verilator evaluates every register's next
# value each clock, the decoder's too, which slows the simulation about sixfold (docs/rtl-rig.md), hence two
# builds, the small t_max and the narrow engine (16 lanes and the full bank ran at 0.57 of its speed)
RTL_BCH = BchConfig(t_max=14, chien_parallelism=8, bm_bank="half")


def rtl_bch(board: str | None) -> BchConfig:
    """The BCH variant's engine: ``RTL_BCH``, or a board's engine in its own shape (its search's clock, its
    multiplier bank) cut to the same t_max."""
    return RTL_BCH if board is None else dataclasses.replace(board_build(board).bch, t_max=RTL_BCH.t_max)


# the simulated board's sockets: every RTL rig has them all (one build), a chip in those a test or user fills
RTL_TARGETS = Limit.TARGETS_MAX
SOURCES = [REPO / "gateware" / "onfi", REPO / "gateware" / "bch", REPO / "gateware" / "soc", REPO / "gateware" / "supply",
           REPO / "nandrig" / "chip" / "supply.py", FIRMWARE,
           REPO / "firmware" / "flares", BRIDGE, UART, Path(__file__),
           REPO / "nandrig" / "protocol" / "spec.py"]  # limits the gateware sizes itself by (the page buffer)


SIM_OPT = "OPT_LEVEL=O2 OPT_FAST=-O2 OPT_SLOW=-O2 OPT_GLOBAL=-O2"  # make variables for build_sim.sh


def digest() -> str:
    h = hashlib.sha256()
    for root in SOURCES:
        files = sorted(root.rglob("*")) if root.is_dir() else [root]
        for f in files:
            if f.is_file() and "__pycache__" not in f.parts:
                h.update(str(f.relative_to(REPO)).encode())
                h.update(f.read_bytes())
    return h.hexdigest()[:16]


def sim_binary(out: Path = BUILD) -> Path:
    return out / "gateware" / "obj_dir" / "Vsim"


def _io(capture_steps: int = 1):
    from litex.build.generic_platform import Pins, Subsignal

    return [
        ("sys_clk", 0, Pins(1)), ("sys_rst", 0, Pins(1)), ("nand_clk", 0, Pins(1)),
        ("serial", 0, Subsignal("source_valid", Pins(1)), Subsignal("source_ready", Pins(1)),
         Subsignal("source_data", Pins(8)), Subsignal("sink_valid", Pins(1)), Subsignal("sink_ready", Pins(1)),
         Subsignal("sink_data", Pins(8))),
        ("nand", 0, *[Subsignal(n, Pins(1)) for n in ("cle", "ale", "we_n", "re_n", "wp_n", "dq_oe")],
         Subsignal("ce_n", Pins(RTL_TARGETS)), Subsignal("rb_n", Pins(RTL_TARGETS)),
         Subsignal("dq_o", Pins(8)), Subsignal("dq_i", Pins(8 * capture_steps)),
         Subsignal("adv_go", Pins(1)), Subsignal("adv_ns", Pins(64)), Subsignal("adv_temp", Pins(16)),
         *[Subsignal(n, Pins(1)) for n in ADC_PADS]),
        ("sim_idle", 0, Pins(1)),  # the firmware's idle mark (VirtualTime), for the UART bridge
    ]


def build_dir(board: str | None, bch: bool) -> Path:
    return REPO / "build" / ("rtl-rig" + (f"-{board}" if board else "") + ("-bch" if bch else ""))


def bridge_args(chip_port: int, wiring: Wiring, clocks: Clocks = CLOCKS, power: Power = Power(),
                delays: dict[int, float] | None = None) -> dict:
    """The nandbridge module's arguments: the chip server's port, what shapes DQ's data-valid windows (each
    socket's round-trip delay: ``delays``, target -> ns, the sockets with a chip; target 0 alone with
    ``wiring``'s), the wiring's faults, and what the front end's ADC reads: the chip's transfer and idle currents
    (its busy current comes with each operation), the current per code, and how long after a data byte the bus
    counts as transferring (the meter's window)."""
    from nandrig.chip.timing import EDO_BELOW_NS, MODES
    from nandrig.gateware.onfi.timing import input_latency_steps

    ps = lambda ns: round(ns * 1000)  # noqa: E731
    delays = delays or {0: wiring.delay_ns}
    return {"port": chip_port, "timing_ps": [[ps(t.tREA), ps(t.tRHOH), ps(t.tRLOH)] for t in MODES.values()],
            "delay_ps": [ps(delays.get(k, 0.0)) for k in range(RTL_TARGETS)], "targets": sorted(delays),
            "edo_below_ps": ps(EDO_BELOW_NS), **wiring.bridge_args(),
            "latency_steps": input_latency_steps(clocks.capture_steps) if wiring.latency_steps is None
            else wiring.latency_steps,
            "adc": {"na_per_code": FRONT_END.na_per_code, "io_ua": round(power.icc_io_ma * 1000),
                    "idle_ua": round(power.icc_idle_ma * 1000), "recent_ns": round(RECENT_CYCLES * 1e9 / clocks.sys_hz)}}


def clock_drift(hz: float) -> float:
    """How much faster than ``hz`` the simulator runs a clock, as a fraction: LiteX's clocker truncates a period to
    whole picoseconds (``int(1e12 / hz)``: 11,034 ps for the 90.625 MHz NAND clock's 11,034.48, 43 ppm fast), so the
    firmware, counting cycles at the nominal rate, gives times that much longer than the chip's own (a board's
    crystal errs so too, by its tolerance)."""
    return 1 - int(1e12 / hz) * hz / 1e12


def sim_config(uart_port: int = 0, chip_port: int = 0, clocks: Clocks = CLOCKS, wiring: Wiring = Wiring(),
               power: Power = Power(), delays: dict[int, float] | None = None, link_baud: int = 0):
    """``link_baud``: the serial link paced at that rate, ten bits a byte (0: a byte each way per clock edge)."""
    from litex.build.sim.config import SimConfig

    cfg = SimConfig()
    cfg.add_clocker("sys_clk", freq_hz=clocks.sys_hz)
    if clocks.nand_hz:
        cfg.add_clocker("nand_clk", freq_hz=clocks.nand_hz)
    pace = {"edges_per_byte": round(10 * clocks.sys_hz / link_baud)} if link_baud else {}
    cfg.add_module("uartbridge", ["serial", "sim_idle"], args={"port": uart_port, **pace})
    # the bridge sees the pins at the PHY's clock edges
    cfg.add_module("nandbridge", "nand", clocks="nand_clk" if clocks.nand_hz else "sys_clk",
                   args=bridge_args(chip_port, wiring, clocks, power, delays))
    return cfg


def _crg(platform, clocks: Clocks):
    """The system clock with its power-on reset; a NAND clock beside it, reset with the system."""
    from migen import ClockDomain
    from migen.genlib.io import CRG as SimpleCRG

    crg = SimpleCRG(platform.request("sys_clk"))
    if clocks.nand_hz:
        crg.clock_domains.cd_nand = ClockDomain()
        crg.comb += [crg.cd_nand.clk.eq(platform.request("nand_clk")), crg.cd_nand.rst.eq(crg.cd_sys.rst)]
    return crg


def build(out: Path = BUILD, force: bool = False, echo=lambda s: None, bch: BchConfig | None = None,
          clocks: Clocks = CLOCKS) -> Path:
    """The simulator binary, built if the sources changed since the last build.

    ``bch`` makes the SoC's BCH engine configuration (None: no engine); ``clocks`` its clocks. Processes that
    want the same build (parallel test workers) wait for the first one's and then share it."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / f".{out.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _build(out, force, echo, bch, clocks)


def _build(out: Path, force: bool, echo, bch: BchConfig | None, clocks: Clocks) -> Path:
    stamp = out / "digest"
    want = f"{digest()}-{bch!r}-{clocks!r}"
    if not force and sim_binary(out).exists() and stamp.exists() and stamp.read_text() == want:
        return sim_binary(out)
    if shutil.which("verilator") is None:
        raise NandrigError("verilator is missing (apt install verilator libevent-dev libjson-c-dev zlib1g-dev)")
    from litex.build.sim import SimPlatform
    from litex.soc.integration.builder import Builder

    from nandrig.gateware.soc.soc import RigSoC

    echo(f"building the RTL rig in {out} (SoC, firmware, Verilator; minutes on 2 cores) ...")
    started = time.monotonic()
    # LiteX's software rules do not track the generated csr.h: objects from an earlier register map would
    # link into the new firmware unchanged, so the firmware is always compiled afresh
    shutil.rmtree(out / "software" / "firmware", ignore_errors=True)
    # the LiteX software build runs meson and the RISC-V toolchain from PATH
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    platform = SimPlatform("SIM", _io(clocks.capture_steps))
    nand = platform.request("nand")
    soc = RigSoC(platform, _crg(platform, clocks), clocks, nand, out / "amaranth",
                 uart_name="sim", firmware=out / "software" / "firmware" / "firmware.bin",
                 vtime_pads=nand, vtime_idle=platform.request("sim_idle"),
                 bch=bch)
    soc.integrated_rom_initialized = True  # no BIOS: the firmware is the ROM
    builder = Builder(soc, output_dir=str(out), compile_gateware=True)
    builder.add_software_package("firmware", str(FIRMWARE))
    mods = out / "extra_mods"  # LiteX writes a variables.mak beside the module sources: keep them out of the tree
    shutil.rmtree(mods, ignore_errors=True)
    for mod in (BRIDGE, UART):
        shutil.copytree(mod, mods / mod.name)
    out.mkdir(parents=True, exist_ok=True)
    try:
        with output_to(out / "generate.log"):  # the caller's stdout may be JSON
            builder.build(sim_config=sim_config(clocks=clocks), run=False, extra_mods=[BRIDGE.name, UART.name],
                          extra_mods_path=str(mods), interactive=False)
    except Exception as e:  # the firmware or the SoC did not build: say where to look
        raise NandrigError(f"generating the RTL rig failed: {e} (log: {out / 'generate.log'})") from None
    check_stack(out / "software" / "firmware" / "firmware.elf")
    # LiteX compiles the simulator only when it also runs it: compile it here, optimized. Its script asks for -O0
    # and Verilator's makefile for -Os; at -O2 a block cycle with measurement took 12 % less CPU (32.2 s to
    # 28.7 s, host included, docs/rtl-rig.md) for some 10 s more compiling
    script = out / "gateware" / "build_sim.sh"
    script.write_text(re.sub(r"OPT_LEVEL=O\d", SIM_OPT, script.read_text()))
    done = subprocess.run(["bash", script.name], cwd=out / "gateware", capture_output=True, text=True)
    if done.returncode or not sim_binary(out).exists():
        errors = [ln for ln in (done.stdout + done.stderr).splitlines() if "error" in ln.lower()]
        raise NandrigError(f"the Verilator build failed: {(errors or ['no simulator produced'])[0]}")
    stamp.write_text(want)
    echo(f"built the RTL rig in {time.monotonic() - started:.0f} s")
    return sim_binary(out)
