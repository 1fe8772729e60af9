"""Error counter: read data against the regenerated pattern, per codeword, per direction, per DQ line."""
from __future__ import annotations

from amaranth import Module, Signal
from amaranth.lib import data, memory, wiring
from amaranth.lib.wiring import In, Out

from nandrig.gateware.logic import popcount

CW_LAYOUT = data.StructLayout({"err_1to0": 16, "err_0to1": 16})


class ErrorCounter(wiring.Component):
    """Counts 1->0 (stored 1 read 0) and 0->1 flips; codewords are ``cw_bytes`` long (the last may be short).

    Per-codeword counts go to a small memory the CPU reads by index; totals,
    the worst codeword and per-DQ-line counts are registers. A bad DQ line
    shows as one lane carrying the errors, cell wear as all eight alike.
    """

    def __init__(self, max_codewords: int = 32) -> None:
        self.max_codewords = max_codewords
        super().__init__({
            "clear": In(1), "valid": In(1), "last": In(1), "expected": In(8), "got": In(8), "cw_bytes": In(16),
            "pending": Out(1),  # bytes still in the pipeline: the counts are not final yet
            "err_1to0": Out(32), "err_0to1": Out(32), "max_cw": Out(16), "codewords": Out(16),
            "lane_1to0": Out(data.ArrayLayout(32, 8)), "lane_0to1": Out(data.ArrayLayout(32, 8)),
            "cw_index": In(range(max_codewords)), "cw_counts": Out(CW_LAYOUT),
        })

    def elaborate(self, platform):
        # three registered stages (difference bits; their popcounts; the sums) keep the adders off the
        # path from the read data, so the counter runs at the bus clock
        mod = Module()
        mod.submodules.mem = mem = memory.Memory(shape=CW_LAYOUT, depth=self.max_codewords, init=[])
        wr = mem.write_port()
        rd = mem.read_port(transparent_for=(wr,))  # synthesizable as RAM (see buffer.py)
        mod.d.comb += [rd.addr.eq(self.cw_index), self.cw_counts.eq(rd.data)]

        v1, last1, d10, d01 = Signal(), Signal(), Signal(8), Signal(8)
        mod.d.sync += [v1.eq(self.valid & ~self.clear), last1.eq(self.last),
                       d10.eq(self.expected & ~self.got), d01.eq(~self.expected & self.got)]
        v2, last2, p10, p01, l10, l01 = Signal(), Signal(), Signal(4), Signal(4), Signal(8), Signal(8)
        mod.d.sync += [v2.eq(v1 & ~self.clear), last2.eq(last1), p10.eq(popcount(d10)), p01.eq(popcount(d01)),
                       l10.eq(d10), l01.eq(d01)]
        done, done_total = Signal(), Signal(16)  # a codeword finished last cycle, with this many errors
        mod.d.comb += self.pending.eq(v1 | v2 | done)

        c10, c01, nbyte = Signal(16), Signal(16), Signal(16)
        n10, n01 = c10 + p10, c01 + p01
        cw_end = last2 | (nbyte + 1 == self.cw_bytes)
        mod.d.comb += [wr.addr.eq(self.codewords), wr.data.err_1to0.eq(n10), wr.data.err_0to1.eq(n01)]
        mod.d.sync += done.eq(0)
        with mod.If(done & (done_total > self.max_cw)):
            mod.d.sync += self.max_cw.eq(done_total)

        with mod.If(self.clear):
            mod.d.sync += [c10.eq(0), c01.eq(0), nbyte.eq(0), self.err_1to0.eq(0), self.err_0to1.eq(0),
                           self.max_cw.eq(0), self.codewords.eq(0)]
            mod.d.sync += [x.eq(0) for x in list(self.lane_1to0) + list(self.lane_0to1)]
        with mod.Elif(v2):
            mod.d.sync += [self.err_1to0.eq(self.err_1to0 + p10), self.err_0to1.eq(self.err_0to1 + p01)]
            for k in range(8):
                mod.d.sync += [self.lane_1to0[k].eq(self.lane_1to0[k] + l10[k]),
                               self.lane_0to1[k].eq(self.lane_0to1[k] + l01[k])]
            with mod.If(cw_end):
                mod.d.comb += wr.en.eq(self.codewords < self.max_codewords)
                mod.d.sync += [c10.eq(0), c01.eq(0), nbyte.eq(0), self.codewords.eq(self.codewords + 1),
                               done.eq(1), done_total.eq(n10 + n01)]
            with mod.Else():
                mod.d.sync += [c10.eq(n10), c01.eq(n01), nbyte.eq(nbyte + 1)]
        return mod
