"""Amaranth cores into a LiteX build: exported once per build, then instantiated by name."""
from __future__ import annotations

from pathlib import Path

from amaranth.back import rtlil, verilog


def add_amaranth(platform, core, name: str, out_dir: Path) -> None:
    """``core`` as Verilog (Verilator) or RTLIL (yosys boards: Verilog turns dual-port memories into flip-flops,
    RTLIL keeps the memories that map onto block RAM), added to the platform's sources."""
    from litex.build.sim import SimPlatform

    sim = isinstance(platform, SimPlatform)
    path = out_dir / f"{name}.{'v' if sim else 'il'}"
    out_dir.mkdir(parents=True, exist_ok=True)
    text = verilog.convert(core, name=name, emit_src=False) if sim else rtlil.convert(core, name=name)
    if not path.exists() or path.read_text() != text:  # keep the file's time stamp for build caching
        path.write_text(text)
    if sim:
        platform.add_source(str(path))
    else:  # LiteX's yosys flow turns the language into read_rtlil
        platform.add_source(str(path), language="rtlil")
