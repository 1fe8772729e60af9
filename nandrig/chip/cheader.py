"""``firmware/rig/onfi_facts.h`` from :mod:`nandrig.chip.onfi`: the firmware's ONFI constants.

Run ``python -m nandrig.chip.cheader > firmware/rig/onfi_facts.h`` after changing them; a test keeps the
checked-in file current.
"""
from __future__ import annotations

from nandrig.chip import onfi

HEADER_PATH = "firmware/rig/onfi_facts.h"


def render() -> str:
    out = ["/* ONFI facts every chip shares. GENERATED from nandrig/chip/onfi.py by",
           " * `python -m nandrig.chip.cheader`: edit the Python, not this file. */",
           "#ifndef NANDRIG_ONFI_FACTS_H", "#define NANDRIG_ONFI_FACTS_H", "",
           f"#define ONFI_PARAM_PAGE_BYTES {onfi.PARAM_PAGE_BYTES}",
           f"#define ONFI_PARAM_PAGE_COPIES {onfi.PARAM_PAGE_COPIES}",
           f"#define ONFI_CRC16_INIT 0x{onfi.CRC16_INIT:04X}", f"#define ONFI_CRC16_POLY 0x{onfi.CRC16_POLY:04X}",
           f"#define ONFI_READ_ID_ONFI_ADDRESS 0x{onfi.READ_ID_ONFI_ADDRESS:02X}",
           f"#define ONFI_UNIQUE_ID_BYTES {onfi.UNIQUE_ID_BYTES}", f"#define ONFI_UNIQUE_ID_COPIES {onfi.UNIQUE_ID_COPIES}",
           "", "/* optional-commands bits (parameter page) */", "enum {",
           *[f"\tONFI_OPT_{c.name} = 0x{int(c):04X}," for c in onfi.OptionalCommand], "};", "",
           "/* READ STATUS bits */", "enum {"]
    out += [f"\tONFI_STATUS_{b.name} = 0x{int(b):02X}," for b in onfi.StatusBit] + ["};", ""]
    out += ["/* SET/GET FEATURES addresses */", "enum {"]
    out += [f"\tFEATURE_{f.name} = 0x{int(f):02X}," for f in onfi.Feature] + ["};", ""]
    out += ["/* parameter-page byte offsets */", "enum {"]
    out += [f"\tONFI_PP_{o.name} = {int(o)}," for o in onfi.ParamOffset] + ["};", "", "#endif"]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    print(render(), end="")
