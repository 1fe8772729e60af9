"""Where the rig runs: the simulated board and real boards."""
