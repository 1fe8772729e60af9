"""Time and temperature for retention: where the non-virtual waits happen.

A virtual oven is a rig request (ADVANCE, journaled like any other). The
wall-clock oven really waits; the manual oven asks the operator to bake the
chip and records the temperature and duration they report. Both take the
step's committed start time, so a resumed campaign waits only what is left.
Every retention checkpoint records actual hours, temperature and their
25 degC-equivalent (Arrhenius, 1.1 eV).
"""
from __future__ import annotations

import time
from typing import Protocol

import click

from nandrig.characterization.arrhenius import acceleration_factor
from nandrig.errors import NandrigError

OVENS = ("virtual", "wall", "manual")


class Oven(Protocol):
    def wait(self, meta: dict, state: dict) -> dict:
        """Carry out a wait of ``meta['actual_h']`` at ``meta['temp_c']``; return what really happened."""


class WallClockOven:
    """Really waits (the chip sits at ambient temperature ``meta['temp_c']``)."""

    def __init__(self, sleep=time.sleep, clock=time.time) -> None:
        self.sleep, self.clock = sleep, clock

    def wait(self, meta: dict, state: dict) -> dict:
        end = state["started"] + meta["actual_h"] * 3600.0
        if end > self.clock():  # a wait of hours or weeks: say when the next read comes (a resume says it again)
            click.echo(f"retention wait of {meta['actual_h']:g} h at {meta['temp_c']:g} degC "
                       f"(= {meta['equiv_h']:g} h at 25 degC): next read at "
                       f"{time.strftime('%Y-%m-%d %H:%M', time.localtime(end))}", err=True)
        while (left := end - self.clock()) > 0:
            self.sleep(min(left, 60.0))
        return {"equiv_h": meta["equiv_h"], "actual_h": meta["actual_h"], "temp_c": meta["temp_c"]}


class ManualOven:
    """Asks the operator to bake the chip; converts what they report with Arrhenius."""

    def wait(self, meta: dict, state: dict) -> dict:
        click.echo(f"Bake the chip at {meta['temp_c']:g} degC for {meta['actual_h']:.3f} h "
                   f"(= {meta['equiv_h']:g} h at 25 degC), then report what you did.", err=True)
        try:
            temp = click.prompt("bake temperature (degC)", type=float, default=meta["temp_c"], err=True)
            hours = click.prompt("bake duration (h)", type=click.FloatRange(min=0.0), default=meta["actual_h"], err=True)
        except click.Abort:
            raise NandrigError("bake not confirmed: the campaign stays at this step; run `nandrig resume` after baking") from None
        return {"equiv_h": hours * acceleration_factor(temp), "actual_h": hours, "temp_c": temp}


def make_oven(kind: str) -> Oven | None:
    """None for the virtual oven: its waits are journaled ADVANCE requests, not oven steps."""
    return {"virtual": None, "wall": WallClockOven(), "manual": ManualOven()}[kind]
