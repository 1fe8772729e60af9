"""Build the rig SoC and its firmware for Verilator (cached: rebuilt only when a source changes)."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from nandrig.boards.sim.wiring import Wiring
from nandrig.errors import NandrigError
from nandrig.gateware.bch.config import BchConfig

REPO = Path(__file__).resolve().parents[3]
BUILD = REPO / "build" / "rtl-rig"
FIRMWARE = REPO / "firmware" / "rig"
BRIDGE = Path(__file__).resolve().parent / "nandbridge"
UART = Path(__file__).resolve().parent / "uartbridge"  # LiteX's serial2tcp overwrites its 2 KiB buffer on longer frames
SYS_CLK_HZ = 100_000_000  # the default build; a board's build runs at that board's system clock
BUILD_BCH = REPO / "build" / "rtl-rig-bch"
# the BCH variant's engine: the default code cut to t_max = 14 (mlc-small's 64-byte spare would hold 26 beside
# the page profile). Verilator evaluates every register's next value each clock, the decoder's too, which slows
# the simulation about tenfold even at t_max = 14 (docs/rtl-rig.md), hence two builds and the small t_max
RTL_BCH = BchConfig(t_max=14)
SOURCES = [REPO / "gateware" / "onfi", REPO / "gateware" / "bch", REPO / "gateware" / "soc", FIRMWARE,
           REPO / "firmware" / "flares", BRIDGE, UART, Path(__file__),
           REPO / "nandrig" / "protocol" / "spec.py"]  # limits the gateware sizes itself by (the page buffer)


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


def _io():
    from litex.build.generic_platform import Pins, Subsignal

    return [
        ("sys_clk", 0, Pins(1)), ("sys_rst", 0, Pins(1)),
        ("serial", 0, Subsignal("source_valid", Pins(1)), Subsignal("source_ready", Pins(1)),
         Subsignal("source_data", Pins(8)), Subsignal("sink_valid", Pins(1)), Subsignal("sink_ready", Pins(1)),
         Subsignal("sink_data", Pins(8))),
        ("nand", 0, *[Subsignal(n, Pins(1)) for n in ("ce_n", "cle", "ale", "we_n", "re_n", "wp_n", "rb_n", "dq_oe")],
         Subsignal("dq_o", Pins(8)), Subsignal("dq_i", Pins(8)),
         Subsignal("adv_go", Pins(1)), Subsignal("adv_ns", Pins(64)), Subsignal("adv_temp", Pins(16))),
    ]


def board_clock_hz(board: str | None) -> int:
    """The system clock the RTL rig runs at: a board's own (its bitstream's), or the default 100 MHz."""
    if board is None:
        return SYS_CLK_HZ
    if board == "ulx3s":
        from nandrig.boards.ulx3s.build import SYS_CLK_HZ as ulx3s_hz

        return ulx3s_hz
    raise NandrigError(f"unknown board {board!r} (known: ulx3s)")


def build_dir(board: str | None, bch: bool) -> Path:
    return REPO / "build" / ("rtl-rig" + (f"-{board}" if board else "") + ("-bch" if bch else ""))


def bridge_args(chip_port: int, wiring: Wiring) -> dict:
    """The nandbridge module's arguments: the chip server's port, what shapes DQ's data-valid windows, and the
    wiring's faults."""
    from nandrig.gateware.onfi.timing import EDO_BELOW_NS, MODES

    ps = lambda ns: round(ns * 1000)  # noqa: E731
    return {"port": chip_port, "timing_ps": [[ps(t.tREA), ps(t.tRHOH), ps(t.tRLOH)] for t in MODES.values()],
            "delay_ps": ps(wiring.delay_ns), "edo_below_ps": ps(EDO_BELOW_NS), **wiring.bridge_args()}


def sim_config(uart_port: int = 0, chip_port: int = 0, sys_clk_hz: int = SYS_CLK_HZ, wiring: Wiring = Wiring()):
    from litex.build.sim.config import SimConfig

    cfg = SimConfig()
    cfg.add_clocker("sys_clk", freq_hz=sys_clk_hz)
    cfg.add_module("uartbridge", "serial", args={"port": uart_port})
    cfg.add_module("nandbridge", "nand", args=bridge_args(chip_port, wiring))
    return cfg


def build(out: Path = BUILD, force: bool = False, echo=lambda s: None, bch: BchConfig | None = None,
          sys_clk_hz: int = SYS_CLK_HZ) -> Path:
    """The simulator binary, built if the sources changed since the last build.

    ``bch`` makes the SoC's BCH engine configuration (None: no engine); ``sys_clk_hz`` its clock."""
    stamp = out / "digest"
    want = f"{digest()}-{bch!r}-{sys_clk_hz}"
    if not force and sim_binary(out).exists() and stamp.exists() and stamp.read_text() == want:
        return sim_binary(out)
    if shutil.which("verilator") is None:
        raise NandrigError("verilator is missing (apt install verilator libevent-dev libjson-c-dev zlib1g-dev)")
    from litex.build.sim import SimPlatform
    from litex.soc.integration.builder import Builder
    from migen.genlib.io import CRG as SimpleCRG

    from nandrig.gateware.soc.soc import RigSoC

    echo(f"building the RTL rig in {out} (SoC, firmware, Verilator) ...")
    # LiteX's software rules do not track the generated csr.h: objects from an earlier register map would
    # link into the new firmware unchanged, so the firmware is always compiled afresh
    shutil.rmtree(out / "software" / "firmware", ignore_errors=True)
    # the LiteX software build runs meson and the RISC-V toolchain from PATH
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    platform = SimPlatform("SIM", _io())
    nand = platform.request("nand")
    soc = RigSoC(platform, SimpleCRG(platform.request("sys_clk")), sys_clk_hz, nand, out / "amaranth",
                 uart_name="sim", firmware=out / "software" / "firmware" / "firmware.bin", vtime_pads=nand,
                 bch=bch)
    soc.integrated_rom_initialized = True  # no BIOS: the firmware is the ROM
    builder = Builder(soc, output_dir=str(out), compile_gateware=True)
    builder.add_software_package("firmware", str(FIRMWARE))
    mods = out / "extra_mods"  # LiteX writes a variables.mak beside the module sources: keep them out of the tree
    shutil.rmtree(mods, ignore_errors=True)
    for mod in (BRIDGE, UART):
        shutil.copytree(mod, mods / mod.name)
    builder.build(sim_config=sim_config(sys_clk_hz=sys_clk_hz), run=False, extra_mods=[BRIDGE.name, UART.name],
                  extra_mods_path=str(mods),
                  interactive=False)
    # LiteX compiles the simulator only when it also runs it: compile it here
    done = subprocess.run(["bash", "build_sim.sh"], cwd=out / "gateware", capture_output=True, text=True)
    if done.returncode or not sim_binary(out).exists():
        errors = [ln for ln in (done.stdout + done.stderr).splitlines() if "error" in ln.lower()]
        raise NandrigError(f"the Verilator build failed: {(errors or ['no simulator produced'])[0]}")
    stamp.write_text(want)
    return sim_binary(out)
