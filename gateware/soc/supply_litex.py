"""The supply meter (gateware/supply) as a LiteX module: the ADC's pins, the chip's phase from the NAND pins,
the per-phase totals as CSRs the firmware takes (ENERGY)."""
from __future__ import annotations

from pathlib import Path

from migen import Cat, ClockDomainsRenamer, ClockSignal, If, Instance, Module, ResetSignal, Signal
from migen.genlib.cdc import MultiReg
from litex.soc.interconnect.csr import CSR, AutoCSR, CSRStatus

from nandrig.gateware.clocks import Clocks
from nandrig.gateware.soc.export import add_amaranth
from nandrig.gateware.supply.meter import COUNT_BITS, PHASES, SUM_BITS, SupplyMeter

NAME = "nandrig_supply"


class _Stretch(Module):
    """A data cycle held for four PHY cycles, so the system clock sees it whichever clock the PHY runs on."""

    def __init__(self, pulse: Signal) -> None:
        self.level = Signal()
        left = Signal(max=5)
        self.sync += If(pulse, left.eq(4)).Elif(left != 0, left.eq(left - 1))
        self.comb += self.level.eq(pulse | (left != 0))


class SupplyCore(Module, AutoCSR):
    """``pads``: the NAND pads with the front end's ADC pins; ``pins``: what the PHY drives on the NAND pins."""

    def __init__(self, platform, pads, pins: dict, clocks: Clocks, out_dir: Path) -> None:
        add_amaranth(platform, SupplyMeter(clocks.sys_hz), NAME, out_dir)
        self._take = CSR(1, name="take")
        totals = {}
        for p in PHASES:
            s = CSRStatus(SUM_BITS, name=f"{p}_sum", description=f"ADC codes of the {p} samples up to the last take")
            n = CSRStatus(COUNT_BITS, name=f"{p}_count", description=f"The {p} samples up to the last take")
            setattr(self, f"_{p}_sum", s)
            setattr(self, f"_{p}_count", n)
            totals[f"o_{p}_total"] = Cat(s.status, n.status)
        # a data byte on the bus: RE# low, or WE# low outside command and address cycles, at the PHY's clock
        strobe = Signal()
        self.comb += strobe.eq(~pins["ce_n"][0] & (~pins["re_n"] | (~pins["we_n"] & ~pins["cle"] & ~pins["ale"])))
        stretch = _Stretch(strobe)
        self.submodules += ClockDomainsRenamer("nand")(stretch) if clocks.nand_hz else stretch
        busy, data_cycle = Signal(), Signal()
        self.specials += [MultiReg(~pads.rb_n, busy), MultiReg(stretch.level, data_cycle)]
        self.specials += Instance(
            NAME, i_clk=ClockSignal(), i_rst=ResetSignal(),
            o_adc_cs_n=pads.adc_cs_n, o_adc_sclk=pads.adc_sclk, i_adc_sdata=pads.adc_sdata,
            i_busy=busy, i_data_cycle=data_cycle, i_take=self._take.re, **totals)
