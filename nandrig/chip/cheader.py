"""``firmware/rig/onfi_facts.h`` from :mod:`nandrig.chip.onfi`: the firmware's ONFI constants.

Run ``python -m nandrig.chip.cheader > firmware/rig/onfi_facts.h`` after changing them; a test keeps the
checked-in file current.
"""
from __future__ import annotations

from nandrig.chip import onfi, read_retry, supply, vendor

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
            ""]
    fe = supply.FRONT_END
    out += _retry_tables() + [
        "/* the supply-current front end (nandrig/chip/supply.py): energy (pJ) = code sum * ENERGY_PJ_NUM / ENERGY_PJ_DEN */",
        f"#define FRONT_END_SAMPLE_NS {fe.sample_ns}u", f"#define FRONT_END_SCLK_NS {fe.sclk_ns}u",
        f"#define FRONT_END_ADC_BITS {fe.adc_bits}u", f"#define FRONT_END_VCC_MV {fe.vcc_mv}u",
        f"#define ENERGY_PJ_NUM {fe.adc_ref_mv * fe.vcc_mv * fe.sample_ns}ull",
        f"#define ENERGY_PJ_DEN {(1 << fe.adc_bits) * fe.gain * fe.shunt_mohm}ull", "", "#endif"]
    return "\n".join(out) + "\n"


def _retry_tables() -> list[str]:
    def write(w: read_retry.FeatureWrite, names: tuple[str, ...]) -> str:
        src = [names.index(p) + 1 if isinstance(p, str) else 0 for p in w.params]
        val = [0 if isinstance(p, str) else p for p in w.params]
        return f"{{0x{w.address:02X}, {{{', '.join(map(str, src))}}}, {{{', '.join(f'0x{v:02X}' for v in val)}}}}}"

    def feature(f: read_retry.FeatureOffsets | None) -> str:
        if f is None:
            return "{0, 0, 0, {{0}}}"
        return f"{{{f.min_offset}, {f.max_offset}, {len(f.writes)}, {{{', '.join(write(w, f.names) for w in f.writes)}}}}}"

    rows = [f"\t\t{{\"{t.manufacturer}\", \"{t.model_prefix}\", {feature(t)}, {feature(t.verify)}}},"
            for t in read_retry.TABLES]
    return ["/* read-retry tables (nandrig/chip/read_retry.py): the SET FEATURES writes that move VR1..VR3 (refs) and,",
            " * where the design has the vendor feature, PV1..PV3 (verify; n_writes 0: none), chosen by the parameter",
            " * page's manufacturer and model prefix. A parameter byte's source: 0 the constant in value[], 1..3 the",
            " * first..third offset */",
            f"#define RETRY_REFERENCES {len(read_retry.REFERENCES)}",
            f"#define OFFSET_MAX_WRITES {max(read_retry.MAX_WRITES, read_retry.MAX_VERIFY_WRITES)}",
            f"#define RETRY_TABLES {len(read_retry.TABLES)}",
            "struct offset_write { uint8_t address, source[4], value[4]; };",
            "struct offset_feature {", "\tint8_t min_offset, max_offset;", "\tuint8_t n_writes;",
            "\tstruct offset_write writes[OFFSET_MAX_WRITES];", "};",
            "struct retry_table {", "\tconst char *manufacturer, *model_prefix;", "\tstruct offset_feature refs, verify;",
            "};",
            "static inline const struct retry_table *retry_table(int i)", "{",
            "\tstatic const struct retry_table tables[RETRY_TABLES] = {", *rows, "\t};",
            "\treturn i >= 0 && i < RETRY_TABLES ? &tables[i] : 0;", "}", ""]


if __name__ == "__main__":
    print(render(), end="")
