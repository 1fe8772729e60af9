"""Time and temperature for retention: where the non-virtual waits happen.

A virtual oven is a rig request (ADVANCE, journaled like any other). The
wall-clock oven really waits; the manual oven asks the operator to bake the
chip and records the temperature and duration they report. Both take the
step's committed start time, so a resumed campaign waits only what is left.
A chamber on a VISA resource (``scpi:RESOURCE``, :mod:`nandrig.host.lab.chamber`)
sets its point, soaks and bakes until the 25 degC-equivalent time of the
temperatures it measured reaches the plan. Every retention checkpoint records
actual hours, temperature and their 25 degC-equivalent (Arrhenius, 1.1 eV).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

import click

from nandrig.characterization.arrhenius import STORAGE_RANGE_C, acceleration_factor
from nandrig.errors import NandrigError

OVENS = ("virtual", "wall", "manual")
SCPI = "scpi:"  # --oven scpi:RESOURCE


class Oven(Protocol):
    def wait(self, meta: dict, state: dict, save: Callable[[], None]) -> dict:
        """Carry out a wait of ``meta['actual_h']`` at ``meta['temp_c']``; return what really happened.
        ``state`` persists across a resume once ``save()`` has stored it."""


class WallClockOven:
    """Really waits (the chip sits at ambient temperature ``meta['temp_c']``)."""

    def __init__(self, sleep=time.sleep, clock=time.time) -> None:
        self.sleep, self.clock = sleep, clock

    def wait(self, meta: dict, state: dict, save: Callable[[], None] = lambda: None) -> dict:
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

    def wait(self, meta: dict, state: dict, save: Callable[[], None] = lambda: None) -> dict:
        click.echo(f"Bake the chip at {meta['temp_c']:g} degC for {meta['actual_h']:.3f} h "
                   f"(= {meta['equiv_h']:g} h at 25 degC), then report what you did.", err=True)
        try:
            temp = click.prompt("bake temperature (degC)", type=click.FloatRange(*STORAGE_RANGE_C),
                                default=meta["temp_c"], err=True)
            hours = click.prompt("bake duration (h)", type=click.FloatRange(min=0.0), default=meta["actual_h"], err=True)
        except click.Abort:
            raise NandrigError("bake not confirmed: the campaign stays at this step; run `nandrig resume` after baking") from None
        return {"equiv_h": hours * acceleration_factor(temp), "actual_h": hours, "temp_c": temp}


def check_oven(kind: str | None) -> str | None:
    """An ``--oven`` value: one of OVENS or ``scpi:RESOURCE``."""
    if kind is None or kind in OVENS or (kind.startswith(SCPI) and len(kind) > len(SCPI)):
        return kind
    raise click.BadParameter(f"--oven must be one of {', '.join(OVENS)} or scpi:RESOURCE (a VISA resource name), "
                             f"got {kind!r}")


def make_oven(kind: str, chamber: dict | None = None) -> Oven | None:
    """None for the virtual oven: its waits are journaled ADVANCE requests, not oven steps."""
    if kind.startswith(SCPI):
        from nandrig.host.lab.chamber import ChamberConfig, ScpiChamber
        return ScpiChamber(ChamberConfig.load(kind[len(SCPI):], chamber), echo=lambda m: click.echo(m, err=True))
    return {"virtual": None, "wall": WallClockOven(), "manual": ManualOven()}[kind]
