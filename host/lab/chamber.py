"""A thermal chamber through pyvisa: set point, soak, and a bake counted from the temperature it really had.

``--oven scpi:RESOURCE`` (a VISA resource name: ``TCPIP::10.0.0.7::5025::SOCKET``, ``ASRL/dev/ttyUSB0::INSTR``,
``GPIB0::4::INSTR``) with ``--chamber FILE`` (JSON, every key optional) for the chamber's dialect and the
tolerances. Chambers speak different command sets, so the commands are data: the default is a generic
SCPI-style pair (``SOUR:TEMP 125.0`` / ``MEAS:TEMP?``), which a real chamber's manual must confirm.

A wait sets the point, then polls the measured temperature: the bake starts once it has stayed within
``tolerance_c`` of the set point for ``soak_s`` (a chamber that has not got there within ``reach_timeout_s``
is an error, and nothing is counted as baked); it then runs until the 25 degC-equivalent time integrated
from the measured temperatures (Arrhenius, Ea 1.1 eV) reaches the step's plan, so a chamber a degree cool
bakes a little longer instead of the checkpoint being labelled with time the data did not get. Progress is
saved as it goes: a resumed campaign continues the same bake, and counts the unlogged gap at the lower of the
temperatures either side of it (the gap is reported; under-counting retention errs on the safe side of a
model fitted to it).
"""
from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path

from nandrig.characterization.arrhenius import acceleration_factor
from nandrig.errors import NandrigError

SAVE_EVERY_S = 60.0  # how often a bake's progress reaches the store


@dataclass(frozen=True)
class ChamberConfig:
    resource: str
    visa_library: str = "@py"  # pyvisa's backend: "@py" (pyvisa-py), "" (the system's VISA), "FILE.yaml@sim"
    set_command: str = "SOUR:TEMP {c:.1f}"  # {c}: the set point, degC
    set_reply: str | None = None  # the chamber's acknowledgement of a set, when it sends one ("OK")
    measure_query: str = "MEAS:TEMP?"
    measure_field: int = 0  # which comma-separated field of the reply is the measured temperature
    read_termination: str = "\n"
    write_termination: str = "\n"
    timeout_ms: int = 5000
    tolerance_c: float = 1.0
    soak_s: float = 600.0
    reach_timeout_s: float = 7200.0
    poll_s: float = 10.0
    ambient_c: float | None = 25.0  # set after the bake; None leaves the chamber as it is

    def __post_init__(self) -> None:
        if not (self.tolerance_c > 0 and self.soak_s >= 0 and self.reach_timeout_s > 0 and self.poll_s > 0
                and self.timeout_ms > 0 and self.measure_field >= 0):
            raise NandrigError("chamber settings: tolerance_c, reach_timeout_s, poll_s and timeout_ms must be > 0, "
                               "soak_s and measure_field >= 0")
        try:
            if self.set_command.format(c=25.0) == self.set_command:
                raise ValueError("no {c} for the set point")
        except (ValueError, KeyError, IndexError) as e:
            raise NandrigError(f"chamber set_command {self.set_command!r}: {e}") from None

    @classmethod
    def load(cls, resource: str, settings: dict | None) -> "ChamberConfig":
        settings = dict(settings or {})
        known = {f.name for f in fields(cls)} - {"resource"}
        if unknown := sorted(set(settings) - known):
            raise NandrigError(f"chamber settings: unknown {', '.join(unknown)} (known: {', '.join(sorted(known))})")
        try:
            return cls(resource=resource, **settings)
        except TypeError:  # a value of the wrong kind ("10" for a number)
            raise NandrigError(f"chamber settings: wrong kind of value among {settings}") from None


def read_settings(path: str | Path) -> dict:
    """A ``--chamber`` file: a JSON object; kept in the campaign so a resume does not depend on the file."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise NandrigError(f"--chamber {path}: {e}") from None
    if not isinstance(data, dict):
        raise NandrigError(f"--chamber {path}: a JSON object of settings expected")
    ChamberConfig.load("check", data)
    return data


class ScpiChamber:
    """An oven (see :mod:`nandrig.host.lab.oven`) that is a chamber on a VISA resource."""

    def __init__(self, cfg: ChamberConfig, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.time, echo: Callable[[str], None] = lambda s: None) -> None:
        self.cfg, self.sleep, self.clock, self.echo = cfg, sleep, clock, echo
        self._inst = None

    # -- the instrument --------------------------------------------------------------
    def _open(self):
        if self._inst is None:
            import pyvisa
            try:
                rm = pyvisa.ResourceManager(self.cfg.visa_library)
                self._inst = rm.open_resource(self.cfg.resource, read_termination=self.cfg.read_termination,
                                              write_termination=self.cfg.write_termination,
                                              timeout=self.cfg.timeout_ms)
            except (pyvisa.Error, ValueError, OSError) as e:
                raise NandrigError(f"chamber {self.cfg.resource} does not answer: {str(e).splitlines()[0]}") from None
        return self._inst

    def _io(self, what: str, fn):
        import pyvisa
        try:
            return fn(self._open())
        except (pyvisa.Error, ValueError, OSError) as e:
            raise NandrigError(f"chamber {self.cfg.resource} does not answer ({what}): "
                               f"{str(e).splitlines()[0]}") from None

    def measure(self) -> float:
        reply = self._io("measure", lambda i: i.query(self.cfg.measure_query))
        try:
            value = float(reply.split(",")[self.cfg.measure_field])
        except (ValueError, IndexError):
            raise NandrigError(f"chamber {self.cfg.resource} gave no temperature to {self.cfg.measure_query!r} "
                               f"(reply {reply!r})") from None
        if not math.isfinite(value):
            raise NandrigError(f"chamber {self.cfg.resource} gave no temperature (reply {reply!r})")
        return value

    def set_point(self, temp_c: float) -> None:
        command = self.cfg.set_command.format(c=temp_c)
        if self.cfg.set_reply is None:
            self._io("set point", lambda i: i.write(command))
            return
        reply = self._io("set point", lambda i: i.query(command)).strip()
        if reply != self.cfg.set_reply:
            raise NandrigError(f"chamber {self.cfg.resource} refused {command!r} (reply {reply!r})")

    # -- a retention wait ------------------------------------------------------------
    def wait(self, meta: dict, state: dict, save: Callable[[], None] = lambda: None) -> dict:
        cfg, target = self.cfg, float(meta["temp_c"])
        self.set_point(target)
        if "bake_started" not in state:
            self._soak(target)
            now = self.clock()
            temp = self.measure()
            state.update(bake_started=now, last_t=now, last_c=temp, equiv_h=0.0, sum_c_s=0.0, min_c=temp,
                         max_c=temp, unlogged_h=0.0, samples=1)
            save()
        else:  # a resumed bake: the gap since the last saved poll counts at the cooler end
            temp = self.measure()
            gap = max(self.clock() - state["last_t"], 0.0)
            self._accrue(state, min(temp, state["last_c"]), gap)
            state["unlogged_h"] += gap / 3600.0
            state["min_c"], state["max_c"] = min(state["min_c"], temp), max(state["max_c"], temp)
            state.update(last_t=self.clock(), last_c=temp)
            save()
        saved = self.clock()
        while state["equiv_h"] < meta["equiv_h"]:
            self.sleep(cfg.poll_s)
            temp, now = self.measure(), self.clock()
            self._accrue(state, (temp + state["last_c"]) / 2, now - state["last_t"])  # trapezoid
            state.update(last_t=now, last_c=temp)
            state["min_c"], state["max_c"] = min(state["min_c"], temp), max(state["max_c"], temp)
            state["samples"] += 1
            if now - saved >= SAVE_EVERY_S:
                save()
                saved = now
        if cfg.ambient_c is not None:
            self.set_point(cfg.ambient_c)
        baked_h = (state["last_t"] - state["bake_started"]) / 3600.0
        return {"equiv_h": state["equiv_h"], "actual_h": baked_h,
                "temp_c": state["sum_c_s"] / max(baked_h * 3600.0, 1e-9), "temp_min_c": state["min_c"],
                "temp_max_c": state["max_c"], "unlogged_h": state["unlogged_h"], "samples": state["samples"],
                "chamber": cfg.resource}

    @staticmethod
    def _accrue(state: dict, temp_c: float, seconds: float) -> None:
        state["equiv_h"] += acceleration_factor(temp_c) * seconds / 3600.0
        state["sum_c_s"] += temp_c * seconds

    def _soak(self, target: float) -> None:
        """Wait until the chamber has held the set point within tolerance for the soak time."""
        cfg = self.cfg
        start = self.clock()
        within_since = None
        self.echo(f"chamber {cfg.resource}: set point {target:g} degC, soaking {cfg.soak_s:g} s within "
                  f"{cfg.tolerance_c:g} degC")
        while True:
            temp, now = self.measure(), self.clock()
            if abs(temp - target) <= cfg.tolerance_c:
                within_since = now if within_since is None else within_since
                if now - within_since >= cfg.soak_s:
                    return
            else:
                within_since = None
            if now - start >= cfg.reach_timeout_s:
                if cfg.ambient_c is not None:
                    self.set_point(cfg.ambient_c)
                raise NandrigError(f"chamber {cfg.resource} did not hold {target:g} degC within "
                                   f"{cfg.tolerance_c:g} degC for {cfg.soak_s:g} s in {cfg.reach_timeout_s:g} s "
                                   f"(last {temp:g} degC): nothing recorded as baked")
            self.sleep(cfg.poll_s)
