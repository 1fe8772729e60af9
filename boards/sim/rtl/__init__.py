"""The RTL rig: the rig SoC in Verilator with the virtual chip on its NAND pins."""
