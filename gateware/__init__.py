"""Amaranth gateware cores of the rig."""
