"""``firmware/rig/onfi_facts.h`` from :mod:`nandrig.chip.onfi`: the firmware's ONFI constants.

Run ``python -m nandrig.chip.cheader > firmware/rig/onfi_facts.h`` after changing them; a test keeps the
checked-in file current.
"""
from __future__ import annotations

from nandrig.chip import onfi, vendor

HEADER_PATH = "firmware/rig/onfi_facts.h"


def render() -> str:
    out = ["/* ONFI facts every chip shares. GENERATED from nandrig/chip/onfi.py by",
           " * `python -m nandrig.chip.cheader`: edit the Python, not this file. */",
           "#ifndef NANDRIG_ONFI_FACTS_H", "#define NANDRIG_ONFI_FACTS_H", "#include <stdint.h>", "",
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
    out += [f"\tONFI_PP_{o.name} = {int(o)}," for o in onfi.ParamOffset] + ["};", ""]
    out += ["/* the extended parameter page */",
            f"#define ONFI_EXT_PAGE_SIGNATURE \"{onfi.EXT_PAGE_SIGNATURE.decode()}\"",
            f"#define ONFI_EXT_PAGE_HEADER_BYTES {onfi.EXT_PAGE_HEADER_BYTES}u",
            f"#define ONFI_EXT_PAGE_SECTIONS {onfi.EXT_PAGE_SECTIONS}", f"#define ONFI_EXT_SECTION_ECC {onfi.EXT_SECTION_ECC}",
            f"#define ONFI_EXT_UNIT_BYTES {onfi.EXT_UNIT_BYTES}u", f"#define ONFI_ECC_STEP_DEFAULT {onfi.ECC_STEP_DEFAULT}u",
            f"#define ONFI_ECC_IN_EXT_PAGE 0x{onfi.ECC_IN_EXT_PAGE:02X}", ""]
    out += ["/* parameter-page features bits */", "enum {"]
    out += [f"\tONFI_FEATURE_{f.name} = 0x{int(f):04X}," for f in onfi.ParamFeature] + ["};", ""]
    out += ["/* why a parameter page describes no chip the rig drives (INFO param_status) */", "enum {"]
    out += [f"\tPARAM_{'OK' if e == 0 else 'ERR_' + e.name} = {int(e)}," for e in onfi.ParamError] + ["};", ""]
    out += ["/* the ONFI version a revision bit names, 0 for a bit no version has */",
            "static inline uint32_t onfi_revision_version(int bit)", "{", "\tswitch (bit) {"]
    out += [f"\tcase {bit}: return {v};" for bit, v in onfi.REVISION_BITS.items()]
    out += ["\tdefault: return 0;", "\t}", "}", ""]
    out += ["/* factory bad-block marks by maker (nandrig/chip/vendor.py): which pages carry them */",
            f"#define BAD_BLOCK_MARK 0x{vendor.BAD_BLOCK_MARK:02X}",
            "static inline int bbm_last_page_mlc(uint8_t maker)", "{",
            "\treturn " + " || ".join(f"maker == 0x{int(m):02X}" for m in sorted(vendor.LAST_PAGE_MLC)) + ";", "}",
            "static inline int bbm_first_two_slc(uint8_t maker)", "{",
            "\treturn " + " || ".join(f"maker == 0x{int(m):02X}" for m in sorted(vendor.FIRST_TWO_SLC)) + ";", "}",
            "", "#endif"]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    print(render(), end="")
