"""The rig SoC: LiteX + VexRiscv around the Amaranth cores."""
