"""The simulated adapter between controller and chip: its round-trip delay and faults on the DQ lines.

Both simulated rigs take the same :class:`Wiring`: the virtual rig computes which read-capture trims pass
from the chip's data-valid window (:func:`nandrig.gateware.onfi.timing.passing_trims`) and passes the
identity, parameter-page and PROGRAM/READ page bytes through the faults (not the statistical path of CYCLE
and MEASURE); the RTL rig's nandbridge shapes DQ's windows by the delay and applies the faults to every byte
on DQ, commands and addresses included, as a real board does.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from nandrig.errors import NandrigError
from nandrig.gateware.onfi.timing import passing_trims, trim_centre
from nandrig.protocol import Limit

DQ_LINES = 8


@dataclass(frozen=True)
class Wiring:
    delay_ns: float = 0.0  # RE# out and DQ back, round trip
    stuck0: int = 0  # DQ lines that always read 0 (bit i: DQi)
    stuck1: int = 0  # ... always 1 (shorted to VCC, or open with a pull-up)
    shorts: tuple[tuple[int, int], ...] = ()  # pairs of DQ lines shorted together (wired-AND)
    latency_steps: int | None = None  # the input gearing's latency in capture steps (None: its nominal)

    def apply(self, value: int) -> int:
        """A byte as it arrives across the faulty lines (either direction)."""
        for a, b in self.shorts:
            both = value >> a & value >> b & 1
            value = value & ~(1 << a | 1 << b) | both << a | both << b
        return (value & ~self.stuck0 | self.stuck1) & 0xFF

    def apply_bytes(self, data: bytes) -> bytes:
        if not (self.stuck0 or self.stuck1 or self.shorts):
            return data
        return data.translate(bytes(self.apply(v) for v in range(256)))

    def trim_pass(self, mode: int, clk_hz: float, steps: int = 1) -> int:
        """The capture trims that read the chip correctly in ``mode`` (bit i: trim CAPTURE_TRIM_MIN + i), in
        ``steps`` per PHY cycle."""
        return passing_trims(mode, clk_hz, self.delay_ns, Limit.CAPTURE_TRIM_MIN, Limit.CAPTURE_TRIM_MAX, steps,
                             self.latency_steps)

    def calibrated_trim(self, mode: int, clk_hz: float, steps: int = 1) -> int | None:
        """The trim the start-up sweep settles on in ``mode`` (None: no passing trim)."""
        return trim_centre(self.trim_pass(mode, clk_hz, steps), Limit.CAPTURE_TRIM_MIN)

    @property
    def dq_faulty(self) -> bool:
        return bool(self.stuck0 or self.stuck1 or self.shorts)

    def bridge_args(self) -> dict:
        return {"stuck0": self.stuck0, "stuck1": self.stuck1, "shorts": [list(p) for p in self.shorts]}

    @classmethod
    def parse(cls, spec: str | None) -> "Wiring":
        """``delay=12,dq3=0,dq5=1,dq1~dq2``: a 12 ns round trip, DQ3 stuck at 0, DQ5 at 1, DQ1 shorted to DQ2."""
        if not spec:
            return cls()
        delay, stuck0, stuck1, shorts = 0.0, 0, 0, []
        for part in (p.strip() for p in spec.split(",")):
            if m := re.fullmatch(r"delay=(\d+(?:\.\d+)?)(?:ns)?", part):
                delay = float(m.group(1))
            elif m := re.fullmatch(r"dq(\d)=([01])", part):
                line = _line(m.group(1))
                stuck0, stuck1 = (stuck0 | 1 << line, stuck1) if m.group(2) == "0" else (stuck0, stuck1 | 1 << line)
            elif m := re.fullmatch(r"dq(\d)~dq(\d)", part):
                a, b = _line(m.group(1)), _line(m.group(2))
                if a == b:
                    raise NandrigError(f"wiring {part!r}: a line cannot be shorted to itself")
                shorts.append((a, b))
            else:
                raise NandrigError(f"wiring {part!r} not understood: use delay=NS, dqN=0, dqN=1 or dqA~dqB")
        if stuck0 & stuck1:
            raise NandrigError("wiring: a DQ line cannot be stuck at 0 and at 1")
        return cls(delay, stuck0, stuck1, tuple(shorts))


def _line(text: str) -> int:
    n = int(text)
    if n >= DQ_LINES:
        raise NandrigError(f"wiring: DQ{n} does not exist (DQ0-DQ{DQ_LINES - 1})")
    return n
