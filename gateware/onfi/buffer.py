"""Page buffer: block RAM with a 32-bit CPU port and a byte-wide engine port (NAND side or BCH streams)."""
from __future__ import annotations

from amaranth import Module, Signal
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out


class PageBuffer(wiring.Component):
    """``size`` bytes. Two ports, each one address for read and write, so it maps onto true dual-port
    block RAM (DP16KD); reads answer one cycle after the address."""

    def __init__(self, size: int = 8192) -> None:
        if size % 4 or size & (size - 1):
            raise ValueError("page buffer size must be a power of two")
        self.size = size
        aw = (size - 1).bit_length()
        super().__init__({
            "cpu_addr": In(aw - 2), "cpu_we": In(1), "cpu_sel": In(4), "cpu_wdata": In(32), "cpu_rdata": Out(32),
            "eng_addr": In(aw), "eng_we": In(1), "eng_wdata": In(8), "eng_rdata": Out(8),
        })

    def elaborate(self, platform):
        mod = Module()
        mod.submodules.mem = mem = memory.Memory(shape=32, depth=self.size // 4, init=[])
        cpu_w, cpu_r = mem.write_port(granularity=8), mem.read_port()
        eng_w, eng_r = mem.write_port(granularity=8), mem.read_port()
        lane = Signal(2)
        mod.d.sync += lane.eq(self.eng_addr[:2])
        mod.d.comb += [
            cpu_w.addr.eq(self.cpu_addr), cpu_w.data.eq(self.cpu_wdata),
            cpu_w.en.eq(self.cpu_sel & self.cpu_we.replicate(4)),
            cpu_r.addr.eq(self.cpu_addr), self.cpu_rdata.eq(cpu_r.data),
            eng_r.addr.eq(self.eng_addr[2:]), self.eng_rdata.eq(eng_r.data.word_select(lane, 8)),
            eng_w.addr.eq(self.eng_addr[2:]), eng_w.data.eq(self.eng_wdata.replicate(4)),
            eng_w.en.eq(self.eng_we.replicate(4) & (1 << self.eng_addr[:2])),
        ]
        return mod
