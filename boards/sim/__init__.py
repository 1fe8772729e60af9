"""The simulated board: the virtual MLC chip and the virtual rig."""
