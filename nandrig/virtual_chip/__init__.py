"""The virtual chip: a physics-level model of a raw MLC NAND chip (wear, retention, disturb, read retry,
timing, energy) that the bus model, the virtual rig and the RTL rig's bridge all drive. It imports only the
chip's facts (``nandrig.chip``) and the characterization core (the RBER model, Arrhenius)."""
