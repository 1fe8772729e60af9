"""The virtual chip's supply current per phase, and what a current-sense front end integrates of it.

Grupp et al. (MICRO'09) found program power constant across fast and slow pages (their energy differs by time
alone) and datasheets give 20-30 mA at most for any operation; a profile's currents are chosen so that the
energy per bit of each operation falls in Grupp's Table 3 MLC ranges (docs/virtual-chip.md, Energy).
"""
from __future__ import annotations

from dataclasses import dataclass

@dataclass(frozen=True)
class Power:
    """A profile's supply (the defaults: every virtual profile's; state files from before it had none)."""

    vcc_v: float = 3.3
    icc_read_ma: float = 22.0  # the array sensing a page (tR)
    icc_program_ma: float = 22.0  # tPROG, fast and slow pages alike
    icc_erase_ma: float = 22.0
    icc_io_ma: float = 8.0  # a byte moving on the bus (tWC / tRC)
    icc_idle_ma: float = 4.0  # selected and idle; also short busy times that are not array operations

    def busy_ma(self, phase: str) -> float:
        """R/B# low in ``phase``: read, program, erase, or anything else (status, features, reset) at idle current."""
        return {"read": self.icc_read_ma, "program": self.icc_program_ma, "erase": self.icc_erase_ma}.get(
            phase, self.icc_idle_ma)


@dataclass
class EnergyMeter:
    """Energy (pJ: mA x V x ns) and time (ns) integrated over busy and transfer windows since the last take."""

    busy_pj: int = 0
    busy_ns: int = 0
    transfer_pj: int = 0
    transfer_ns: int = 0

    def add_busy(self, ns: int, ma: float, vcc: float) -> None:
        self.busy_pj += round(ma * vcc * ns)
        self.busy_ns += int(ns)

    def add_transfer(self, ns: int, ma: float, vcc: float) -> None:
        self.transfer_pj += round(ma * vcc * ns)
        self.transfer_ns += int(ns)

    def reading(self) -> tuple[int, int, int, int]:
        """What :meth:`take` would return, the meter left as it is."""
        return self.busy_pj, self.busy_ns, self.transfer_pj, self.transfer_ns

    def take(self) -> tuple[int, int, int, int]:
        out = self.reading()
        self.busy_pj = self.busy_ns = self.transfer_pj = self.transfer_ns = 0
        return out
