"""The supply meter: samples the chip's current through the front end's SPI ADC and adds the samples up per phase.

``AdcReader`` (the PHY): an AD7476A conversion every ``sample_ns``: CS# falls (the ADC samples there), SCLK runs
16 cycles idling high; the ADC changes SDATA after each falling edge and the reader takes it just before the next
one, so the n-th bit taken is the one the n-th falling edge put out; after the leading zeros come the 12 bits,
MSB first (the AD7476A data sheet's serial interface); the 16th bit is SDATA already three-stated.

``SupplyMeter`` (the core): each sample counts for the phase the chip was in when it was taken, R/B# low (busy)
first, else a data byte on the bus within the last RECENT_CYCLES (transfer), else idle; per phase the sum of the
codes and the number of samples. ``take`` copies the sums to the outputs (``busy_total``, ...) and starts them afresh in the same
cycle, so no sample is lost or counted twice between two takes. Energy is sum * the front end's pJ per code and
sample (nandrig.chip.supply), which the firmware applies.
"""
from __future__ import annotations

from fractions import Fraction

from amaranth import Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from nandrig.chip.supply import FRONT_END, FrontEnd

SUM_BITS = 48  # 4095 a sample: 2^48 codes are over 130 years of samples at 500 kS/s
COUNT_BITS = 40
ADC_PADS = ("adc_cs_n", "adc_sclk", "adc_sdata")  # the front end's ADC on the adapter
PHASES = ("busy", "transfer", "idle")
# a sample is a transfer's when a data byte crossed the bus within this many cycles of it (the slowest mode's
# read cycle, 100 ns, is 10 cycles at 100 MHz); the RTL rig's ADC model takes the same window in time
RECENT_CYCLES = 16
TOTALS = data.StructLayout({"sum": SUM_BITS, "count": COUNT_BITS})


class AdcReader(wiring.Component):
    def __init__(self, clk_hz: float, fe: FrontEnd = FRONT_END) -> None:
        # cycles per sample as a fraction: where it is not whole (2000 ns at the ULX3S's 45.3125 MHz is 90 5/8
        # cycles) a sample period is a cycle longer often enough that sample_ns holds on average, which the
        # firmware's energy and time per sample assume; each sample then lands within a cycle of its time
        per = Fraction(fe.sample_ns) * Fraction(clk_hz) / 10**9
        self.period, self.extra = divmod(per.numerator, per.denominator)
        self.extra_of = per.denominator  # ``extra`` of every ``extra_of`` samples are a cycle longer
        self.half = max(1, round(fe.sclk_ns * clk_hz / 2e9))
        self.fe = fe
        assert 16 * 2 * self.half + 2 < self.period, "16 SCLK cycles must fit in one sample period"
        super().__init__({"cs_n": Out(1, init=1), "sclk": Out(1, init=1), "sdata": In(1),
                          "sampled": Out(1),  # pulses at CS# falling: the instant the ADC samples
                          "valid": Out(1), "code": Out(fe.adc_bits)})

    def elaborate(self, platform):
        mod = Module()
        tick = Signal(range(self.period + 1))
        half = Signal(range(self.half))
        edges = Signal(range(33))  # SCLK half periods so far in this conversion
        shift = Signal(16)
        mod.d.sync += [self.sampled.eq(0), self.valid.eq(0)]
        mod.d.sync += tick.eq(tick + 1)
        last = self.period - 1
        if self.extra:  # Bresenham: the owed fraction of a cycle, in 1/extra_of
            owed, longer = Signal(range(self.extra_of)), Signal()
            last = Mux(longer, self.period, self.period - 1)
        with mod.If(tick == last):
            mod.d.sync += [tick.eq(0), self.cs_n.eq(0), self.sampled.eq(1), edges.eq(0), half.eq(0)]
            if self.extra:
                over = owed + self.extra >= self.extra_of
                mod.d.sync += [owed.eq(Mux(over, owed + self.extra - self.extra_of, owed + self.extra)),
                               longer.eq(over)]
        with mod.Elif(~self.cs_n):
            mod.d.sync += half.eq(half + 1)
            with mod.If(half == self.half - 1):
                mod.d.sync += [half.eq(0), edges.eq(edges + 1)]
                with mod.If(edges == 32):  # the 16th rising edge has passed: the conversion is done
                    mod.d.sync += [self.cs_n.eq(1), self.valid.eq(1), edges.eq(0),
                                   self.code.eq(shift[1:1 + self.fe.adc_bits])]
                with mod.Elif(edges[0] == 0):  # SCLK falls: the ADC puts out its next bit
                    mod.d.sync += self.sclk.eq(0)
                with mod.Else():  # SCLK rises: take the bit the last fall put out
                    mod.d.sync += [self.sclk.eq(1), shift.eq((shift << 1) | self.sdata)]
        return mod


class SupplyMeter(wiring.Component):
    """``busy``: R/B# low; ``data_cycle``: a data byte crossed the bus this cycle (both synchronous)."""

    def __init__(self, clk_hz: float, fe: FrontEnd = FRONT_END) -> None:
        self.clk_hz, self.fe = clk_hz, fe
        super().__init__({"adc_cs_n": Out(1, init=1), "adc_sclk": Out(1, init=1), "adc_sdata": In(1),
                          "busy": In(1), "data_cycle": In(1), "take": In(1),
                          **{f"{p}_total": Out(TOTALS) for p in PHASES}})

    def elaborate(self, platform):
        mod = Module()
        mod.submodules.adc = adc = AdcReader(self.clk_hz, self.fe)
        mod.d.comb += [self.adc_cs_n.eq(adc.cs_n), self.adc_sclk.eq(adc.sclk), adc.sdata.eq(self.adc_sdata)]

        recent = Signal(range(RECENT_CYCLES + 1))  # cycles left in which the bus still counts as transferring
        with mod.If(self.data_cycle):
            mod.d.sync += recent.eq(RECENT_CYCLES)
        with mod.Elif(recent != 0):
            mod.d.sync += recent.eq(recent - 1)
        phase = Signal(range(len(PHASES)))  # of the sample being converted, fixed when it was taken
        with mod.If(adc.sampled):
            mod.d.sync += phase.eq(Mux(self.busy, 0, Mux((recent != 0) | self.data_cycle, 1, 2)))

        for i, name in enumerate(PHASES):
            acc = Signal(TOTALS, name=f"{name}_acc")
            add = adc.valid & (phase == i)
            with mod.If(self.take):
                mod.d.sync += [getattr(self, f"{name}_total").eq(acc), acc.sum.eq(Mux(add, adc.code, 0)),
                               acc.count.eq(add)]
            with mod.Elif(add):
                mod.d.sync += [acc.sum.eq(acc.sum + adc.code), acc.count.eq(acc.count + 1)]
        return mod
