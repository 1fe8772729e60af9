"""ONFI asynchronous SDR NAND controller: PHY, microcoded sequencer, page buffer, PRBS and error counter."""
from nandrig.gateware.onfi.core import OnfiController
from nandrig.gateware.onfi.registers import Op, Source

__all__ = ["OnfiController", "Op", "Source"]
