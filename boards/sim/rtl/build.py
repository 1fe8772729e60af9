"""Build the rig SoC and its firmware for Verilator (cached: rebuilt only when a source changes)."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from nandrig.errors import NandrigError
from nandrig.gateware.bch.config import BchConfig

REPO = Path(__file__).resolve().parents[3]
BUILD = REPO / "build" / "rtl-rig"
FIRMWARE = REPO / "firmware" / "rig"
BRIDGE = Path(__file__).resolve().parent / "nandbridge"
SYS_CLK_HZ = 100_000_000
BUILD_BCH = REPO / "build" / "rtl-rig-bch"
# the BCH variant's engine: the default code with t_max = 14, what a 64-byte spare holds beside the page
# profile (mlc-small). Verilator evaluates every register's next value each clock, the decoder's too,
# which slows the simulation about tenfold even at t_max = 14 (docs/rtl-rig.md), hence two builds
RTL_BCH = BchConfig(t_max=14)
SOURCES = [REPO / "gateware" / "onfi", REPO / "gateware" / "bch", REPO / "gateware" / "soc", FIRMWARE,
           REPO / "firmware" / "flares" / "flares.c", REPO / "firmware" / "flares" / "flares.h",
           REPO / "firmware" / "flares" / "pprof.c", BRIDGE, Path(__file__)]


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


def sim_config(uart_port: int = 0, chip_port: int = 0):
    from litex.build.sim.config import SimConfig

    cfg = SimConfig()
    cfg.add_clocker("sys_clk", freq_hz=SYS_CLK_HZ)
    cfg.add_module("serial2tcp", "serial", args={"port": uart_port})
    cfg.add_module("nandbridge", "nand", args={"port": chip_port})
    return cfg


def build(out: Path = BUILD, force: bool = False, echo=lambda s: None, bch: BchConfig | None = None) -> Path:
    """The simulator binary, built if the sources changed since the last build.

    ``bch`` makes the SoC's BCH engine configuration (None: no engine)."""
    stamp = out / "digest"
    want = f"{digest()}-{bch!r}"
    if not force and sim_binary(out).exists() and stamp.exists() and stamp.read_text() == want:
        return sim_binary(out)
    if shutil.which("verilator") is None:
        raise NandrigError("verilator is missing (apt install verilator libevent-dev libjson-c-dev zlib1g-dev)")
    from litex.build.sim import SimPlatform
    from litex.soc.integration.builder import Builder
    from migen.genlib.io import CRG as SimpleCRG

    from nandrig.gateware.soc.soc import RigSoC

    echo(f"building the RTL rig in {out} (SoC, firmware, Verilator) ...")
    # the LiteX software build runs meson and the RISC-V toolchain from PATH
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    platform = SimPlatform("SIM", _io())
    nand = platform.request("nand")
    soc = RigSoC(platform, SimpleCRG(platform.request("sys_clk")), SYS_CLK_HZ, nand, out / "amaranth",
                 uart_name="sim", firmware=out / "software" / "firmware" / "firmware.bin", vtime_pads=nand,
                 bch=bch)
    soc.integrated_rom_initialized = True  # no BIOS: the firmware is the ROM
    builder = Builder(soc, output_dir=str(out), compile_gateware=True)
    builder.add_software_package("firmware", str(FIRMWARE))
    mods = out / "extra_mods"  # LiteX writes a variables.mak beside the module sources: keep them out of the tree
    shutil.rmtree(mods, ignore_errors=True)
    shutil.copytree(BRIDGE, mods / "nandbridge")
    builder.build(sim_config=sim_config(), run=False, extra_mods=["nandbridge"], extra_mods_path=str(mods),
                  interactive=False)
    # LiteX compiles the simulator only when it also runs it: compile it here
    done = subprocess.run(["bash", "build_sim.sh"], cwd=out / "gateware", capture_output=True, text=True)
    if done.returncode or not sim_binary(out).exists():
        errors = [ln for ln in (done.stdout + done.stderr).splitlines() if "error" in ln.lower()]
        raise NandrigError(f"the Verilator build failed: {(errors or ['no simulator produced'])[0]}")
    stamp.write_text(want)
    return sim_binary(out)
