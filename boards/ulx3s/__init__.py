"""The ULX3S (ECP5 LFE5U-85F) rig: TSOP-48 NAND adapter on the GPIO headers, bitstream build and loading."""
