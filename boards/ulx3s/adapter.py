"""The TSOP-48 NAND adapter on the ULX3S GPIO headers, as data.

Chip pins follow the standard x8 TSOP-48 NAND pinout (ONFI, e.g. Micron MT29F, Samsung K9);
the ULX3S side names the silkscreen labels and the ECP5 balls: GP0-1/GN0-1 as in LiteX's
``radiona_ulx3s`` platform, GP14-GP22/GN14-GN18 as in the ULX3S v2.0 constraint file. The data lines
sit on J2 (GP14-GP17, GN14-GN17: bank 3, the FPGA's right side), CLE/ALE/WE#/RE# on J1, CE#, R/B#
and WP# on J2.
"""
from __future__ import annotations

from dataclasses import dataclass

from nandrig.errors import NandrigError


@dataclass(frozen=True)
class AdapterPin:
    signal: str  # the controller's pad name
    chip_pin: int  # TSOP-48 pin
    chip_name: str
    header: str  # ULX3S silkscreen label
    ball: str  # ECP5 CABGA381 ball
    pull_up: bool = False  # a 10 kOhm resistor to 3.3 V on the adapter
    why: str = ""


ADAPTER: tuple[AdapterPin, ...] = (
    # DQ on one bank of the right side (bank 3), where the ECP5 has the IDDRX2F input gearing (top and bottom
    # banks have none: nextpnr refuses it there)
    *(AdapterPin(f"dq{i}", pin, f"I/O{i}", hdr, ball) for i, (pin, hdr, ball) in enumerate((
        (29, "GP14", "U18"), (30, "GN14", "U17"), (31, "GP15", "N17"), (32, "GN15", "P16"),
        (41, "GP16", "N16"), (42, "GN16", "M17"), (43, "GP17", "L16"), (44, "GN17", "L17")))),
    AdapterPin("cle", 16, "CLE", "GP0", "B11"),
    AdapterPin("ale", 17, "ALE", "GN0", "C11"),
    AdapterPin("we_n", 18, "WE#", "GP1", "A10"),
    AdapterPin("re_n", 8, "RE#", "GN1", "A11"),
    AdapterPin("ce_n", 9, "CE#", "GP20", "D18", True, "chip deselected while the FPGA is unconfigured"),
    AdapterPin("rb_n", 7, "R/B#", "GP21", "C18", True, "open drain: the chip only pulls it low"),
    AdapterPin("wp_n", 19, "WP#", "GP22", "B15", True, "defined level while the FPGA is unconfigured"),
)
# power: 3.3 V chips only (the ULX3S headers are 3.3 V LVCMOS); 1.8 V parts need level shifters
POWER = {"VCC": (12, 37), "VSS": (13, 36)}


@dataclass(frozen=True)
class TargetPins:
    """A further socket on the same bus (protocol target k >= 1): its own CE# and R/B#, everything else shared."""

    target: int
    ce: AdapterPin
    rb: AdapterPin


# sockets 1-7: the fourteen J2 pins nothing else uses, beside target 0's CE# and R/B# (GP20, GP21); each line pulled
# up on its own socket as target 0's are (an unconfigured FPGA leaves every chip deselected)
TARGET_PINS: tuple[TargetPins, ...] = tuple(
    TargetPins(k, AdapterPin(f"ce_n{k}", 9, "CE#", ce_hdr, ce_ball, True, "chip deselected while the FPGA is unconfigured"),
               AdapterPin(f"rb_n{k}", 7, "R/B#", rb_hdr, rb_ball, True, "open drain: the chip only pulls it low"))
    for k, (ce_hdr, ce_ball, rb_hdr, rb_ball) in enumerate((
        ("GP23", "B17", "GN23", "C17"), ("GP24", "C16", "GN24", "D16"), ("GP25", "D14", "GN25", "E14"),
        ("GP26", "B13", "GN26", "C13"), ("GP27", "D13", "GN27", "E13"), ("GN19", "G18", "GN20", "E17"),
        ("GN21", "D17", "GN22", "C15")), start=1))


@dataclass(frozen=True)
class FrontEndPin:
    signal: str  # the supply meter's pad name (gateware/supply)
    part_pin: str  # the AD7476A's pin (SOT-23-6)
    header: str
    ball: str


# the supply-current front end (nandrig/chip/supply.py): the 3.3 V header feeds the chip's VCC through the 1 Ohm
# shunt; the INA240A2 (powered from 3.3 V, REF1/REF2 to ground: unidirectional) drives the AD7476A's VIN; the
# AD7476A's VDD (its reference) is the header's 3.3 V with 1 uF + 100 nF beside it; three pins on J2
FRONT_END_PINS: tuple[FrontEndPin, ...] = (
    FrontEndPin("adc_cs_n", "CS#", "GP18", "H18"),
    FrontEndPin("adc_sclk", "SCLK", "GP19", "F17"),
    FrontEndPin("adc_sdata", "SDATA", "GN18", "H17"),
)


def nand_io(sockets: int = 1) -> list:
    """The adapter with ``sockets`` (1-8) on its bus as a LiteX IO resource named ``nand`` (``dq`` 8 bits, ``ce_n``
    and ``rb_n`` a bit per socket, socket k's bit k, the rest 1 bit each, the front end's ADC pins among them)."""
    from litex.build.generic_platform import IOStandard, Misc, Pins, Subsignal

    if not 1 <= sockets <= 1 + len(TARGET_PINS):
        raise NandrigError(f"the ULX3S adapter has 1 to {1 + len(TARGET_PINS)} sockets, not {sockets}")
    dq = [p.ball for p in ADAPTER if p.signal.startswith("dq")]
    further = {"ce_n": [t.ce.ball for t in TARGET_PINS[:sockets - 1]],
               "rb_n": [t.rb.ball for t in TARGET_PINS[:sockets - 1]]}
    rest = [Subsignal(p.signal, Pins(" ".join([p.ball, *further.get(p.signal, [])])),
                      *([Misc("PULLMODE=UP")] if p.pull_up else []))
            for p in ADAPTER if not p.signal.startswith("dq")]
    rest += [Subsignal(p.signal, Pins(p.ball)) for p in FRONT_END_PINS]
    return [("nand", 0, Subsignal("dq", Pins(" ".join(dq))), *rest, IOStandard("LVCMOS33"), Misc("SLEWRATE=FAST"))]


def markdown_table() -> str:
    rows = ["| TSOP-48 pin | chip signal | ULX3S | ECP5 ball | pull-up |", "| --- | --- | --- | --- | --- |"]
    for p in sorted(ADAPTER, key=lambda p: p.chip_pin):
        rows.append(f"| {p.chip_pin} | {p.chip_name} | {p.header} | {p.ball} | "
                    f"{'10 kΩ to 3.3 V: ' + p.why if p.pull_up else ''} |")
    for name, pins in POWER.items():
        rows.append(f"| {', '.join(map(str, pins))} | {name} | {'3.3 V' if name == 'VCC' else 'GND'} | | |")
    return "\n".join(rows)


def sockets_table(sockets: int) -> str:
    """The further sockets of a rig with ``sockets`` (2-8) on one bus: each wired as socket 0 (every shared line
    to the same header pin), but its CE# and R/B# to these."""
    rows = ["| target | CE# (pin 9) | ECP5 ball | R/B# (pin 7) | ECP5 ball |", "| --- | --- | --- | --- | --- |"]
    rows += [f"| {t.target} | {t.ce.header} | {t.ce.ball} | {t.rb.header} | {t.rb.ball} |"
             for t in TARGET_PINS[:sockets - 1]]
    return "\n".join(rows)


def front_end_table() -> str:
    rows = ["| AD7476A pin | signal | ULX3S | ECP5 ball |", "| --- | --- | --- | --- |"]
    rows += [f"| {p.part_pin} | {p.signal} | {p.header} | {p.ball} |" for p in FRONT_END_PINS]
    return "\n".join(rows)
