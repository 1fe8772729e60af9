"""One SoC description for every platform: VexRiscv, UART, timer, the ONFI controller, the supply meter when the
adapter has its front end, firmware in ROM.

The platform supplies the clock/reset generator, the UART name and the NAND
pads; everything else is the same on the simulated and the real board, so
the firmware and CSR map are identical.
"""
from __future__ import annotations

from pathlib import Path

from migen import Module, Signal
from litex.soc.integration.common import get_mem_data
from litex.soc.integration.soc import SoCRegion
from litex.soc.integration.soc_core import SoCCore
from litex.soc.interconnect.csr import CSR, AutoCSR, CSRStorage

from nandrig.gateware.bch.config import BchConfig
from nandrig.gateware.soc.bus import BankedSRAM
from nandrig.gateware.clocks import Clocks
from nandrig.protocol import SERIAL_BAUD, Limit
from nandrig.gateware.onfi.registers import CCS_BITS, OnfiOp, OnfiSource
from nandrig.gateware.onfi.timing import trim_range
from nandrig.gateware.soc.onfi_litex import OnfiCore
from nandrig.gateware.soc.supply_litex import SupplyCore
from nandrig.gateware.supply.meter import ADC_PADS

NANDBUF_BASE = 0x9000_0000
NANDBUF_SIZE = Limit.PAGE_BUFFER_BYTES


class VirtualTime(Module, AutoCSR):
    """Simulation only: asks the bridge to move the virtual chip's clock (retention steps), and tells the
    simulation when the firmware waits for the host with nothing else to do (the UART bridge then waits for the
    link instead of simulating an idle loop)."""

    def __init__(self, pads, idle) -> None:
        self._ns = CSRStorage(64, name="ns", description="Nanoseconds to advance the chip's clock by")
        self._temp = CSRStorage(16, name="temp", description="Temperature meanwhile, centi-degrees C (signed)")
        self._go = CSR(1, name="go")
        self._idle = CSRStorage(1, name="idle", description="1: the firmware has nothing to do until the host "
                                                           "sends (no frame, no CYCLE job running)")
        self.comb += [pads.adv_ns.eq(self._ns.storage), pads.adv_temp.eq(self._temp.storage), pads.adv_go.eq(self._go.re),
                      idle.eq(self._idle.storage)]


class RigSoC(SoCCore):
    def __init__(self, platform, crg, clocks: Clocks, nand_pads, out_dir: Path, *, uart_name: str,
                 firmware: Path | None = None, sram_size: int = 0x3_0000, vtime_pads=None, vtime_idle=None,
                 bch: BchConfig | None = BchConfig()) -> None:
        """``crg`` provides ``sys`` and, with ``clocks.nand_hz``, the PHY's ``nand`` domain; ``nand_pads``' ``ce_n``
        is as wide as the board has targets (each chip's record and factory marks take a further 4 KiB of SRAM:
        a bank more beside several)."""
        if len(nand_pads.ce_n) > 1:
            sram_size += 0x1_0000
        SoCCore.__init__(self, platform, clk_freq=clocks.sys_hz, ident="nandrig rig", cpu_type="vexriscv",
                         cpu_variant="standard", integrated_rom_size=0x1_0000, integrated_sram_size=sram_size,
                         uart_name=uart_name, uart_baudrate=SERIAL_BAUD, timer_uptime=True)
        self.crg = crg
        self.firmware = firmware
        self.onfi = OnfiCore(platform, nand_pads, clocks, out_dir, bch=bch)
        self.add_constant("ONFI_CLOCK_FREQUENCY", clocks.phy_hz)  # busy times and timeouts count its cycles
        self.add_constant("ONFI_TARGETS", self.onfi.targets)  # sockets on the bus: the firmware looks for a chip in each
        self.add_constant("ONFI_CCS_MAX", (1 << CCS_BITS) - 1)
        if bch is not None:  # the firmware's BCH driver sizes codewords and parity from these
            for name, value in (("M", bch.m), ("K_BYTES", bch.k_bytes), ("T_MAX", bch.t_max)):
                self.add_constant(f"BCH_{name}", value)
        # the firmware takes the controller's codes from soc.h, not a copy
        for prefix, enum in (("ONFI_OP", OnfiOp), ("ONFI_SOURCE", OnfiSource)):
            for v in enum:
                self.add_constant(f"{prefix}_{v.name}", int(v))
        # the read-capture trims (in capture steps) that move the capture point in each mode: the start-up sweep
        self.add_constant("ONFI_CAPTURE_STEP_PS", clocks.capture_step_ps)
        for mode in range(6):
            trims = trim_range(mode, clocks.phy_hz, Limit.CAPTURE_TRIM_MIN, Limit.CAPTURE_TRIM_MAX,
                               steps=clocks.capture_steps)
            self.add_constant(f"ONFI_TRIM_FIRST_M{mode}", trims.start)
            self.add_constant(f"ONFI_TRIM_LAST_M{mode}", trims.stop - 1)
        self.bus.add_slave("nandbuf", self.onfi.bus, SoCRegion(origin=NANDBUF_BASE, size=NANDBUF_SIZE, cached=False))
        if all(hasattr(nand_pads, p) for p in ADC_PADS):  # an adapter with the supply-current front end
            self.supply = SupplyCore(platform, nand_pads, self.onfi.pins, clocks, out_dir)
        if vtime_pads is not None:
            self.vtime = VirtualTime(vtime_pads, vtime_idle)
        self.add_constant("NANDRIG_SIM" if vtime_pads is not None else "NANDRIG_HW")

    def add_csr_bridge(self, name: str = "csr", origin=None, register: bool = False) -> None:
        # registered (LiteX registers it only beside SDRAM): unregistered, the CPU's data address ran through the
        # bus decoder into every CSR bank's read mux in one cycle, the ULX3S build's critical path (docs/ulx3s.md)
        super().add_csr_bridge(name, origin, register=True)

    def add_ram(self, name, origin, size, contents=[], mode="rwx") -> None:
        if name != "sram":
            return super().add_ram(name, origin, size, contents, mode)
        assert not contents  # the SRAM starts zeroed: the firmware's data is all in .bss
        self.sram = BankedSRAM(size, name)
        self.bus.add_slave(name=name, slave=self.sram.bus, region=SoCRegion(origin=origin, size=size, mode=mode))

    def init_mems(self, **kwargs) -> None:
        # the Builder calls this after compiling the software packages, our firmware among them
        if self.firmware is not None and self.firmware.exists():
            self.init_rom(name="rom", contents=get_mem_data(str(self.firmware), endianness=self.cpu.endianness))
