"""The lab's instruments beside the rig: how retention time passes (oven.py: virtual, wall clock, the operator's
bake, a thermal chamber) and a chamber's settings (chamber.py)."""
