"""ONFI asynchronous SDR NAND controller: PHY, microcoded sequencer, page buffer, PRBS and error counter."""
from nandrig.gateware.onfi.core import OnfiController
from nandrig.gateware.onfi.registers import OnfiOp, OnfiSource

__all__ = ["OnfiController", "OnfiOp", "OnfiSource"]
