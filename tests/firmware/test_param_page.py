"""Parameter pages of real parts, built from their public datasheets, decoded three ways: by the host
(nandrig.chip.param_page), by the firmware's param_page.c compiled natively, and by an independent reading of
the Linux kernel's ``struct nand_onfi_params`` written here from its field list. All must give every field as
the kernel's rules do; ``nandrig rig decode-param-page`` prints them from the dump files this test keeps in
build/param-pages/."""
import ctypes
import json
import random
import struct
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from nandrig.chip.onfi import OptionalCommand, ParamError, ParamFeature, onfi_crc16
from nandrig.chip.param_page import (RIG_LIMITS, EccRequirement, ParameterPage, ParamPageError, check_drivable,
                                     decode_dump, dump, ext_page)

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "firmware" / "rig"
KEPT = ROOT / "build" / "param-pages"

ONFI_22 = 0x001E  # revision bits: 1.0, 2.0, 2.1, 2.2
BASE = dict(bits_per_cell=1, max_bad_blocks_per_lun=80, endurance_cycles=100_000, programs_per_page=4,
            timing_modes=(0, 1, 2, 3, 4, 5), t_prog_max_us=600, t_bers_max_us=3000, t_r_max_us=25,
            row_address_cycles=3, column_address_cycles=2, revision_bits=ONFI_22, t_ccs_ns=100, t_adl_ns=70,
            optional_commands=OptionalCommand.GET_SET_FEATURES | OptionalCommand.READ_UNIQUE_ID)


def part(**kw) -> ParameterPage:
    return ParameterPage(**{**BASE, **kw})


# Each: the page (geometry, LUNs, bus width, bits per cell and ECC requirement as the part's datasheet gives
# them; times, endurance and bad-block maxima are representative values, not quoted), its extended page, and
# what the kernel's rules give for it. Geometry and ECC cross-checked against vendors' tables of these parts' READ ID and geometry
# (e.g. an SoC vendor's NAND table: MT29F64G08CBABA 8192+744 B pages, 2 MiB blocks, 4096 blocks, 40-bit ECC).
PARTS = {
    # Micron L85A 64 Gb MLC (MT29F64G08CBABA, datasheet "64Gb, 128Gb, 256Gb, 512Gb Asynchronous/Synchronous NAND"):
    # byte 112 is 0xFF and the extended page gives 40 bits per 1 KiB
    "MT29F64G08CBABA": (
        part(manufacturer="MICRON", model="MT29F64G08CBABAWP", jedec_id=0x2C, page_bytes=8192, spare_bytes=744,
             pages_per_block=256, blocks_per_lun=4096, luns=1, bits_per_cell=2, max_bad_blocks_per_lun=100,
             endurance_cycles=3000, programs_per_page=1, ecc_bits=0xFF, revision_bits=0x003E,
             features=ParamFeature.EXT_PARAM_PAGE | ParamFeature.MULTI_LUN_OPS, t_prog_max_us=2600,
             t_bers_max_us=10000, t_r_max_us=115, t_ccs_ns=400, t_adl_ns=400, row_address_cycles=3,
             ext_page_units=3),
        ext_page(EccRequirement(40, 1024), 100, 3000),
        {"luns": 1, "bus_width": 8, "ecc_bits": 40, "ecc_step_bytes": 1024, "page_bytes": 8192, "spare_bytes": 744,
         "pages_per_block": 256, "blocks_per_lun": 4096, "bits_per_cell": 2, "revision": "2.3", "t_ccs_ns": 400},
    ),
    # Micron M60A 8 Gb SLC, two 4 Gb dies on one chip enable (MT29F8G08ADADA: 1 GiB, 128 KiB blocks, 2048+64 B
    # pages, 4-bit ECC per 512 B): byte 100 says 2 LUNs
    "MT29F8G08ADADA": (
        part(manufacturer="MICRON", model="MT29F8G08ADADAH4", jedec_id=0x2C, page_bytes=2048, spare_bytes=64,
             pages_per_block=64, blocks_per_lun=4096, luns=2, ecc_bits=4, features=ParamFeature.MULTI_LUN_OPS),
        b"",
        {"luns": 2, "bus_width": 8, "ecc_bits": 4, "ecc_step_bytes": 512, "blocks_per_lun": 4096,
         "pages_per_block": 64, "revision": "2.2"},
    ),
    # Micron M60A 4 Gb SLC with a 16-bit bus (MT29F4G16ABADA): features bit 0
    "MT29F4G16ABADA": (
        part(manufacturer="MICRON", model="MT29F4G16ABADAWP", jedec_id=0x2C, page_bytes=2048, spare_bytes=64,
             pages_per_block=64, blocks_per_lun=4096, luns=1, ecc_bits=4, features=ParamFeature.BUS_16),
        b"",
        {"luns": 1, "bus_width": 16, "ecc_bits": 4, "ecc_step_bytes": 512},
    ),
    # 16 KiB pages: the geometry of Toshiba's TC58TEG6DCJTA00 (64 Gb MLC, 16384+1280 B pages, 4 MiB blocks,
    # 2048 blocks, 40-bit ECC per 1 KiB), laid out as an ONFI 2.3 page with the extended ECC section
    "TC58TEG6DCJTA00": (
        part(manufacturer="TOSHIBA", model="TC58TEG6DCJTA00", jedec_id=0x98, page_bytes=16384, spare_bytes=1280,
             pages_per_block=256, blocks_per_lun=2048, luns=1, bits_per_cell=2, ecc_bits=0xFF, revision_bits=0x003E,
             features=ParamFeature.EXT_PARAM_PAGE, endurance_cycles=3000, programs_per_page=1, ext_page_units=3),
        ext_page(EccRequirement(40, 1024), 80, 3000),
        {"page_bytes": 16384, "spare_bytes": 1280, "pages_per_block": 256, "ecc_bits": 40, "ecc_step_bytes": 1024},
    ),
}

# the kernel's struct nand_onfi_params (include/linux/mtd/onfi.h), field by field, packed little-endian
KERNEL_FIELDS = [
    ("sig", "4s"), ("revision", "H"), ("features", "H"), ("opt_cmd", "H"), ("reserved0", "2s"),
    ("ext_param_page_length", "H"), ("num_of_param_pages", "B"), ("reserved1", "17s"),
    ("manufacturer", "12s"), ("model", "20s"), ("jedec_id", "B"), ("date_code", "H"), ("reserved2", "13s"),
    ("byte_per_page", "I"), ("spare_bytes_per_page", "H"), ("data_bytes_per_ppage", "I"),
    ("spare_bytes_per_ppage", "H"), ("pages_per_block", "I"), ("blocks_per_lun", "I"), ("lun_count", "B"),
    ("addr_cycles", "B"), ("bits_per_cell", "B"), ("bb_per_lun", "H"), ("block_endurance", "H"),
    ("guaranteed_good_blocks", "B"), ("guaranteed_block_endurance", "H"), ("programs_per_page", "B"),
    ("ppage_attr", "B"), ("ecc_bits", "B"), ("interleaved_bits", "B"), ("interleaved_ops", "B"),
    ("reserved3", "13s"), ("io_pin_capacitance_max", "B"), ("async_timing_mode", "H"),
    ("program_cache_timing_mode", "H"), ("t_prog", "H"), ("t_bers", "H"), ("t_r", "H"), ("t_ccs", "H"),
    ("src_sync_timing_mode", "H"), ("src_ssync_features", "B"), ("clk_pin_capacitance_typ", "H"),
    ("io_pin_capacitance_typ", "H"), ("input_pin_capacitance_typ", "H"), ("input_pin_capacitance_max", "B"),
    ("driver_strength_support", "B"), ("t_int_r", "H"), ("t_adl", "H"), ("reserved4", "8s"),
    ("vendor_revision", "H"), ("vendor", "88s"), ("crc", "H"),
]
KERNEL_STRUCT = struct.Struct("<" + "".join(f for _, f in KERNEL_FIELDS))


def kernel_reading(raw: bytes) -> dict:
    """What nand_onfi_detect() takes from a dump whose first copy is good (bytes -> fields by its struct)."""
    f = dict(zip([n for n, _ in KERNEL_FIELDS], KERNEL_STRUCT.unpack(raw[:256])))
    version = max((v for bit, v in {1: 10, 2: 20, 3: 21, 4: 22, 5: 23}.items() if f["revision"] >> bit & 1))
    out = {"page_bytes": f["byte_per_page"], "spare_bytes": f["spare_bytes_per_page"],
           "pages_per_block": f["pages_per_block"], "blocks_per_lun": f["blocks_per_lun"], "luns": f["lun_count"],
           "bits_per_cell": f["bits_per_cell"], "bus_width": 16 if f["features"] & 1 else 8,
           "sdr_timing_modes": [m for m in range(6) if f["async_timing_mode"] >> m & 1], "t_ccs_ns": f["t_ccs"],
           "revision": f"{version // 10}.{version % 10}"}
    if f["ecc_bits"] != 0xFF:
        out["ecc_bits"], out["ecc_step_bytes"] = f["ecc_bits"], 512
    else:  # nand_flash_detect_ext_param_page: the ECC section (type 2) after the 32-byte header
        ep = raw[256 * f["num_of_param_pages"]:][:16 * f["ext_param_page_length"]]
        assert struct.unpack_from("<H", ep)[0] == onfi_crc16(ep[2:]) and ep[2:6] == b"EPPS"
        cursor = 32
        for i in range(8):
            if ep[16 + 2 * i] == 2:
                break
            cursor += 16 * ep[17 + 2 * i]
        out["ecc_bits"], out["ecc_step_bytes"] = ep[cursor], 1 << ep[cursor + 1]
    return out


class ParamInfo(ctypes.Structure):
    _fields_ = [("copy", ctypes.c_int32)] + [(n, ctypes.c_uint32) for n in (
        "revision_bits", "onfi_version", "features", "optional_commands", "jedec_id", "page_bytes", "spare_bytes",
        "pages_per_block", "blocks_per_lun", "luns", "bits_per_cell", "row_cycles", "column_cycles",
        "max_bad_blocks", "timing_modes", "t_ccs_ns", "t_adl_ns", "bus_width", "ecc_bits", "ecc_step_bytes",
        "page_bits", "block_bits", "lun_bits")] + [("manufacturer", ctypes.c_char * 12), ("model", ctypes.c_char * 20)]


@pytest.fixture(scope="module")
def fw(tmp_path_factory):
    lib = tmp_path_factory.mktemp("ppfw") / "libpp.so"
    subprocess.run(["gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-o", str(lib),
                    str(SRC / "param_page.c")], check=True)
    so = ctypes.CDLL(str(lib))
    so.param_page_decode.argtypes = [ctypes.c_char_p, ctypes.c_uint32, ctypes.POINTER(ParamInfo)]
    so.param_page_check_rig.argtypes = [ctypes.POINTER(ParamInfo)]
    return so


def firmware_reading(fw, raw: bytes) -> tuple[int, int, ParamInfo]:
    info = ParamInfo()
    status = fw.param_page_decode(raw, len(raw), ctypes.byref(info))
    return status, (fw.param_page_check_rig(ctypes.byref(info)) if status == 0 else status), info


def host_reading(raw: bytes) -> tuple[int, int, dict | None]:
    try:
        d = decode_dump(raw)
    except ParamPageError as e:
        return int(e.code), int(e.code), None
    try:
        check_drivable(d.page, RIG_LIMITS)
        drive = 0
    except ParamPageError as e:
        drive = int(e.code)
    return 0, drive, d.fields()


def same(host: dict, fwinfo: ParamInfo) -> None:
    """The firmware's record holds what the host decoded."""
    for key, fkey in [("page_bytes", "page_bytes"), ("spare_bytes", "spare_bytes"), ("luns", "luns"),
                      ("pages_per_block", "pages_per_block"), ("blocks_per_lun", "blocks_per_lun"),
                      ("bits_per_cell", "bits_per_cell"), ("bus_width", "bus_width"), ("t_ccs_ns", "t_ccs_ns"),
                      ("t_adl_ns", "t_adl_ns"), ("revision_bits", "revision_bits"), ("jedec_id", "jedec_id"),
                      ("max_bad_blocks_per_lun", "max_bad_blocks"), ("row_address_cycles", "row_cycles")]:
        assert host[key] == getattr(fwinfo, fkey), key
    assert (host["ecc_bits"] or 0, host["ecc_step_bytes"] or 0) == (fwinfo.ecc_bits, fwinfo.ecc_step_bytes)
    assert host["sdr_timing_modes"] == [m for m in range(16) if fwinfo.timing_modes >> m & 1]
    assert host["manufacturer"] == fwinfo.manufacturer.decode().rstrip()
    assert host["copy"] == (None if fwinfo.copy < 0 else fwinfo.copy)


@pytest.mark.parametrize("name", list(PARTS))
def test_datasheet_pages_decode_as_the_kernel_reads_them(fw, name, run_cli):
    page, ext, expected = PARTS[name]
    raw = dump(page, ext).ljust(1024, b"\x00")
    KEPT.mkdir(parents=True, exist_ok=True)
    (KEPT / f"{name}.bin").write_bytes(raw)
    r = run_cli("rig", "decode-param-page", str(KEPT / f"{name}.bin"), "--json")
    assert r.code == 0, r.err
    host = json.loads(r.out)
    kernel = kernel_reading(raw)
    for key, want in {**kernel, **expected}.items():
        assert host[key] == want, key
    assert kernel_reading(raw).items() <= host.items()
    status, drive, info = firmware_reading(fw, raw)
    assert status == 0 and drive == host_reading(raw)[1]
    same(host, info)


def test_the_rig_says_which_parts_it_drives(fw):
    """x16 refused by its bus width; 2 LUNs, 16 KiB pages and extended-page ECC driven."""
    verdicts = {name: firmware_reading(fw, dump(p, e).ljust(1024, b"\x00"))[1] for name, (p, e, _) in PARTS.items()}
    assert verdicts == {"MT29F64G08CBABA": 0, "MT29F8G08ADADA": 0, "MT29F4G16ABADA": ParamError.BUS_WIDTH,
                        "TC58TEG6DCJTA00": 0}
    big = replace(PARTS["TC58TEG6DCJTA00"][0], page_bytes=32768, spare_bytes=2048)
    assert firmware_reading(fw, dump(big, PARTS["TC58TEG6DCJTA00"][1]))[1] == ParamError.PAGE_SIZE
    many = replace(PARTS["MT29F8G08ADADA"][0], luns=8)  # 32,768 blocks: more than the rig's bad-block table
    assert firmware_reading(fw, dump(many))[1] == ParamError.ADDRESSING


def test_damaged_dumps_get_the_same_verdict_from_host_and_firmware(fw):
    """Random bit damage, whole copies lost, revision words zeroed: both sides agree field by field, and on the
    error that names the field when no chip can be described."""
    rng = random.Random(25)
    seen = set()
    for trial in range(400):
        page, ext, _ = PARTS[rng.choice(list(PARTS))]
        if trial % 7 == 0:
            page = replace(page, revision_bits=rng.choice([0, 1, 0x40, 0x8000]))  # no version a host knows
        if trial % 11 == 0:
            page = replace(page, luns=0)
        raw = bytearray(dump(page, ext).ljust(1024, b"\x00"))
        for _ in range(rng.choice([0, 1, 3, 10, 60])):
            raw[rng.randrange(768)] ^= 1 << rng.randrange(8)
        if trial % 5 == 0:
            k = rng.randrange(3)
            raw[256 * k:256 * (k + 1)] = bytes(256)
        status, drive, info = firmware_reading(fw, bytes(raw))
        hstatus, hdrive, host = host_reading(bytes(raw))
        assert (status, drive) == (hstatus, hdrive), trial
        if host is not None:
            same(host, info)
        seen.add(status)
    assert seen >= {ParamError.OK, ParamError.NO_VALID_COPY, ParamError.REVISION, ParamError.GEOMETRY}


def test_bad_dumps_are_one_line_each(tmp_path, run_cli):
    def refused(*args) -> str:
        r = run_cli("rig", "decode-param-page", *map(str, args))
        assert r.code == 1 and len(r.err.strip().splitlines()) == 1 and not r.out, r.err
        return r.err

    page, ext, _ = PARTS["MT29F8G08ADADA"]
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes(768))
    assert "no parameter-page copy passes its CRC" in refused(junk)
    old = tmp_path / "old.bin"
    old.write_bytes(dump(replace(page, revision_bits=0)))
    assert "revision (bytes 4-5)" in refused(old)
    x16 = tmp_path / "x16.bin"
    x16.write_bytes(dump(PARTS["MT29F4G16ABADA"][0]))
    assert json.loads(run_cli("rig", "decode-param-page", str(x16), "--json").out)["bus_width"] == 16
    assert "16-bit data bus" in refused(x16, "--check-rig")
    assert "cannot use" in refused(tmp_path / "none.bin")
