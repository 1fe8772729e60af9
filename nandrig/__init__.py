"""nandrig: an open FPGA hardware-in-the-loop rig for characterizing MLC NAND flash."""

__version__ = "0.1.0"
