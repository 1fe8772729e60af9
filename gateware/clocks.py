"""A build's clocks, as one record every consumer of a board's clock setup takes (SoC, RTL rig, benches)."""
from __future__ import annotations

from dataclasses import dataclass

from nandrig.gateware.onfi.timing import DEFAULT_CLK_HZ


@dataclass(frozen=True)
class Clocks:
    sys_hz: int  # the SoC: CPU, bus, sequencer, page buffer, BCH engine
    nand_hz: int | None = None  # the ONFI PHY's own clock; None: the PHY runs on the system clock
    capture_steps: int = 1  # DQ samples per PHY cycle: 4 with the ECP5's IDDRX2F (edge clock at twice the PHY's)

    @property
    def phy_hz(self) -> int:
        """What the PHY counts bus timings, busy times and timeouts in."""
        return self.nand_hz or self.sys_hz

    @property
    def capture_step_ps(self) -> int:
        """What one step of the read-capture trim moves the sample point (INFO's capture_step_ps)."""
        return round(1e12 / self.phy_hz / self.capture_steps)

    def describe(self) -> dict:
        return {"sys_clk_mhz": self.sys_hz / 1e6, "nand_clk_mhz": self.phy_hz / 1e6, "nand_clock_own": self.nand_hz is not None,
                "capture_step_ns": self.capture_step_ps / 1e3}


DEFAULT_CLOCKS = Clocks(int(DEFAULT_CLK_HZ))  # the RTL rig's and the benches' default build: the PHY on the system clock

