"""The ONFI controller (Amaranth) as a LiteX module: CSRs from the register tables, page buffer on Wishbone.

The controller is exported once per build (gateware/soc/export.py) and instantiated; every
control/status field of ``registers.py`` becomes a CSR of its own with the
table's description, so the generated csr.h and the documentation come from
the same data as the gateware.
"""
from __future__ import annotations

from pathlib import Path

from migen import Cat, ClockSignal, Instance, Module, ResetSignal, Signal, TSTriple
from litex.soc.interconnect import wishbone
from litex.soc.interconnect.csr import CSR, AutoCSR, CSRStatus, CSRStorage

from nandrig.protocol import Limit
from nandrig.gateware.onfi.core import OnfiController
from nandrig.gateware.bch.config import BchConfig
from nandrig.gateware.clocks import Clocks
from nandrig.gateware.soc.export import add_amaranth
from nandrig.gateware.onfi.link import NAND_DOMAIN
from nandrig.gateware.onfi.registers import BCH_CONTROL, BCH_STATUS, CONTROL, STATUS

NAME = "nandrig_onfi"
BUFFER_WORD_BITS = (Limit.PAGE_BUFFER_BYTES // 4 - 1).bit_length()  # the page buffer's word address
PINS = ("ce_n", "cle", "ale", "we_n", "re_n", "wp_n")


class OnfiCore(Module, AutoCSR):
    """``pads``: ce_n, cle, ale, we_n, re_n, wp_n, rb_n and either dq (tristate, boards) or dq_o/dq_oe/dq_i (simulation);
    ``ce_n`` and ``rb_n`` one bit per target (socket), as many as the board has."""

    def __init__(self, platform, pads, clocks: Clocks, out_dir: Path, bch: BchConfig | None = None) -> None:
        """With ``clocks.nand_hz`` the PHY runs in the SoC's ``nand`` clock domain."""
        steps = clocks.capture_steps
        self.targets = targets = len(pads.ce_n)
        assert len(pads.rb_n) == targets
        add_amaranth(platform, OnfiController(clk_hz=clocks.sys_hz, bch=bch, nand_clk_hz=clocks.nand_hz,
                                              capture_steps=steps, targets=targets), NAME, out_dir)
        if clocks.nand_hz:
            extra_ports = {"i_nand_clk": ClockSignal(NAND_DOMAIN), "i_nand_rst": ResetSignal(NAND_DOMAIN)}
        else:
            extra_ports = {}
        self.bus = wishbone.Interface(data_width=32, address_width=32, addressing="word")

        ctrl, stat_fields = self._registers(CONTROL, STATUS)
        self._start = CSR(1, name="start")
        if bch is not None:
            bch_ctrl, bch_stat = self._registers(BCH_CONTROL, BCH_STATUS)
            self._bch_start = CSR(1, name="bch_start")
            extra_ports |= {"i_bch_ctrl": Cat(*bch_ctrl), "i_bch_start": self._bch_start.re, "o_bch_stat": Cat(*bch_stat)}
        self._cw_index = CSRStorage(5, name="cw_index", description="Codeword whose counts cw_counts shows")
        self._cw_counts = CSRStatus(32, name="cw_counts", description="Errors of codeword cw_index: 1->0 low half, 0->1 high half")
        self._lane_1to0 = CSRStatus(256, name="lane_1to0", description="Per-DQ-line 1->0 errors, 32 bits per line, line 0 lowest")
        self._lane_0to1 = CSRStatus(256, name="lane_0to1", description="Per-DQ-line 0->1 errors, 32 bits per line, line 0 lowest")

        # page buffer: the request is registered before it reaches the block RAMs, whose write enables the bus
        # decoding reached across the die otherwise (the ULX3S's system-clock critical path at one seed); the
        # word is acknowledged the cycle after the registered address (registered read): three cycles an access
        bus, ack, staged = self.bus, Signal(), Signal()
        adr, we, sel, dat_w = Signal(BUFFER_WORD_BITS), Signal(), Signal(4), Signal(32)
        first = bus.cyc & bus.stb & ~staged & ~ack
        self.sync += [staged.eq(first), ack.eq(staged), adr.eq(bus.adr[:BUFFER_WORD_BITS]), we.eq(first & bus.we),
                      sel.eq(bus.sel), dat_w.eq(bus.dat_w)]
        self.comb += bus.ack.eq(ack)

        self.pins = pins = {n: Signal(targets if n == "ce_n" else 1, name=f"nand_{n}") for n in PINS}  # as the PHY drives them
        dq_o, dq_oe, dq_i = Signal(8), Signal(), Signal(8 * steps)
        for n in PINS:
            self.comb += getattr(pads, n).eq(pins[n])
        if hasattr(pads, "dq") and steps > 1:
            self._input_gearing(pads.dq, dq_o, dq_oe, dq_i)
        elif hasattr(pads, "dq"):
            t = TSTriple(8)
            self.specials += t.get_tristate(pads.dq)
            self.comb += [t.o.eq(dq_o), t.oe.eq(dq_oe), dq_i.eq(t.i)]
        else:
            assert len(pads.dq_i) == len(dq_i), "the simulated board gives DQ as many samples per cycle as the PHY takes"
            self.comb += [pads.dq_o.eq(dq_o), pads.dq_oe.eq(dq_oe), dq_i.eq(pads.dq_i)]

        self.specials += Instance(
            NAME,
            i_clk=ClockSignal(), i_rst=ResetSignal(),
            i_ctrl=Cat(*ctrl), i_start=self._start.re, o_stat=Cat(*stat_fields),
            i_cw_index=self._cw_index.storage, o_cw_counts=self._cw_counts.status,
            o_lane_1to0=self._lane_1to0.status, o_lane_0to1=self._lane_0to1.status,
            i_cpu_addr=adr, i_cpu_we=we, i_cpu_sel=sel, i_cpu_wdata=dat_w, o_cpu_rdata=bus.dat_r,
            i_pins__rb_n=pads.rb_n, i_pins__dq_i=dq_i, o_pins__dq_o=dq_o, o_pins__dq_oe=dq_oe,
            **{f"o_pins__{n}": pins[n] for n in PINS}, **extra_ports,
        )

    def _input_gearing(self, dq, dq_o, dq_oe, dq_i) -> None:
        """ECP5: each DQ line's pad buffer straight into an IDDRX2F, four samples per PHY (SCLK) cycle from both
        edges of the ``nand2x`` edge clock; Q0 is the earliest (Lattice TN1265), lane 0 of ``dq_i``. ALIGNWD (word
        alignment, the IOLOGIC's SLIP) stays unconnected: the divider and the gearing start together from reset, and
        tied even to 0 it did not route (nextpnr: "No wire found for port SLIP" at a B pad)."""
        assert len(dq_i) == 4 * 8, "IDDRX2F: four samples per PHY cycle"
        for i in range(8):
            pin = Signal(name=f"nand_dq{i}_in")
            self.specials += Instance("BB", i_I=dq_o[i], i_T=~dq_oe, o_O=pin, io_B=dq[i])
            self.specials += Instance(
                "IDDRX2F", i_D=pin, i_SCLK=ClockSignal(NAND_DOMAIN), i_ECLK=ClockSignal("nand2x"),
                i_RST=ResetSignal(NAND_DOMAIN), **{f"o_Q{k}": dq_i[8 * k + i] for k in range(4)})

    def _registers(self, control, status) -> tuple[list, list]:
        """A CSR per field of the tables, with the table's description; their storage/status signals."""
        ctrl, stat = [], []
        for name, width, desc in control:
            reg = CSRStorage(width, name=name, description=desc, reset=1 if name == "wp_n" else 0)
            setattr(self, f"_{name}", reg)
            ctrl.append(reg.storage)
        for name, width, desc in status:
            reg = CSRStatus(width, name=name, description=desc)
            setattr(self, f"_{name}", reg)
            stat.append(reg.status)
        return ctrl, stat
