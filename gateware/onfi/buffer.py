"""Page buffer: block RAM with a 32-bit CPU port and a byte-wide engine port (NAND side or BCH streams)."""
from __future__ import annotations

from amaranth import Array, Module, Signal
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out

from nandrig.protocol import Limit


class PageBuffer(wiring.Component):
    """``size`` bytes. Two ports, each one address for read and write, so it maps onto true dual-port
    block RAM (DP16KD); CPU reads answer one cycle after the address, engine reads two."""

    def __init__(self, size: int = Limit.PAGE_BUFFER_BYTES) -> None:
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
        lane = Signal(2)
        mod.d.sync += lane.eq(self.eng_addr[:2])
        eng_rdata = []
        # one 8-bit memory per byte lane: each maps onto a true dual-port DP16KD (2048 x 8), which a
        # 32-bit memory with byte enables on both ports does not
        for k in range(4):
            mem = memory.Memory(shape=8, depth=self.size // 4, init=[])
            mod.submodules[f"lane{k}"] = mem
            cpu_w, eng_w = mem.write_port(), mem.write_port()
            # transparent reads: the block RAM cannot promise old data when the other port writes the same
            # address, and synthesis can emulate transparency but not that
            cpu_r = mem.read_port(transparent_for=(cpu_w, eng_w))
            eng_r = mem.read_port(transparent_for=(cpu_w, eng_w))
            mod.d.comb += [
                cpu_w.addr.eq(self.cpu_addr), cpu_w.data.eq(self.cpu_wdata[8 * k: 8 * k + 8]),
                cpu_w.en.eq(self.cpu_we & self.cpu_sel[k]),
                cpu_r.addr.eq(self.cpu_addr), self.cpu_rdata[8 * k: 8 * k + 8].eq(cpu_r.data),
                eng_w.addr.eq(self.eng_addr[2:]), eng_w.data.eq(self.eng_wdata),
                eng_w.en.eq(self.eng_we & (self.eng_addr[:2] == k)),
                eng_r.addr.eq(self.eng_addr[2:]),
            ]
            eng_rdata.append(eng_r.data)
        # registered after the lane select: block RAM clock-to-out is most of a 10 ns cycle
        mod.d.sync += self.eng_rdata.eq(Array(eng_rdata)[lane])
        return mod
