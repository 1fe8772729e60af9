"""The rig firmware's portable modules, built natively, against the host's Python and zlib."""
import ctypes
import random
import re
import subprocess
import zlib
from pathlib import Path

import cobs.cobs
import pytest

from nandrig.chip.pattern import page_seed
from nandrig import protocol as P

SRC = Path(__file__).resolve().parents[2] / "firmware" / "rig"


@pytest.fixture(scope="module")
def fw(tmp_path_factory):
    lib = tmp_path_factory.mktemp("rigfw") / "librig.so"
    subprocess.run(["gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-o", str(lib),
                    str(SRC / "frame.c"), str(SRC / "pattern.c"), str(SRC / "capture.c"), str(SRC / "unique_id.c")],
                   check=True)
    so = ctypes.CDLL(str(lib))
    so.crc32_update.restype = ctypes.c_uint32
    so.crc32_update.argtypes = [ctypes.c_uint32, ctypes.c_char_p, ctypes.c_size_t]
    so.cobs_encode.restype = ctypes.c_size_t
    so.cobs_decode.restype = ctypes.c_long
    so.page_seed.restype = ctypes.c_uint32
    so.page_seed.argtypes = [ctypes.c_uint32] * 3
    so.prbs31_init.restype = ctypes.c_uint32
    so.prbs31_init.argtypes = [ctypes.c_uint32]
    so.prbs31_next.restype = ctypes.c_uint8
    so.prbs31_next.argtypes = [ctypes.POINTER(ctypes.c_uint32)]
    so.capture_trim_centre.argtypes = [ctypes.c_uint16]
    return so


def samples():
    rng = random.Random(5)
    yield b""
    yield b"\x00"
    yield b"\x00" * 300
    yield bytes(range(1, 256)) * 3  # runs of 254 non-zero bytes and more
    yield b"\x01" * 254  # full runs that end the input: no code byte after them
    yield b"\x00" + b"\x07" * 508
    for n in (1, 253, 254, 255, 508, 16394):
        yield bytes(rng.choice((0, rng.randrange(256))) for _ in range(n))


@pytest.mark.parametrize("data", list(samples()), ids=lambda d: f"{len(d)}B")
def test_cobs_and_crc_match_the_host(fw, data):
    out = ctypes.create_string_buffer(len(data) + len(data) // 254 + 2)
    n = fw.cobs_encode(data, ctypes.c_size_t(len(data)), out)
    enc = out.raw[:n]
    assert enc == P.cobs_encode(data) == cobs.cobs.encode(data)
    back = ctypes.create_string_buffer(len(data) + 1)
    assert fw.cobs_decode(enc, ctypes.c_size_t(n), back) == len(data)
    assert back.raw[:len(data)] == data
    assert fw.crc32_update(0, data, len(data)) == zlib.crc32(data)


def test_cobs_decode_rejects_what_the_host_rejects(fw):
    back = ctypes.create_string_buffer(64)
    for bad in (b"\x05ab", b"\x03a\x00b", b"\x00"):
        assert P.cobs_decode(bad) is None
        assert fw.cobs_decode(bad, ctypes.c_size_t(len(bad)), back) == -1


def test_page_seed_matches_the_virtual_rig(fw):
    rng = random.Random(9)
    for _ in range(500):
        seed, block, page = rng.randrange(1 << 32), rng.randrange(1 << 16), rng.randrange(1 << 10)
        assert fw.page_seed(seed, block, page) == page_seed(seed, block, page)


def test_protocol_constants_match_the_host():
    """The firmware's opcodes and error codes (protocol.h, generated) equal the spec's."""
    text = (SRC / "protocol.h").read_text()
    ops = {m[1]: int(m[2], 16) for m in re.finditer(r"\bOP_(\w+) = (0x[0-9A-Fa-f]+)", text)}
    assert ops == {op.name: int(op) for op in P.Opcode}
    errs = re.search(r"enum \{\s*(E_OK[^}]*)\}", text)[1]
    names = [e.strip()[2:] for e in errs.split(",") if e.strip()]
    assert names == [e.name for e in sorted(P.Err)]
    assert f"T_REQUEST = 0x{P.REQUEST_TYPE:02X}" in text and f"T_REPLY = 0x{P.REPLY_TYPE:02X}" in text


def test_feature_addresses_match_the_virtual_chip():
    from nandrig.virtual_chip import chip

    text = (SRC / "onfi_facts.h").read_text()
    got = {m[1]: int(m[2], 16) for m in re.finditer(r"\bFEATURE_(\w+) = (0x[0-9A-Fa-f]+)", text)}
    assert got == {"TIMING_MODE": chip.FEATURE_TIMING_MODE}


@pytest.mark.parametrize("seed", [1, 0x7FFFFFFF, 0, 0x1234567])
def test_software_prbs_matches_the_pattern(fw, seed):
    from nandrig.chip.pattern import prbs31_bytes

    state = ctypes.c_uint32(fw.prbs31_init(seed))
    got = bytes(fw.prbs31_next(ctypes.byref(state)) for _ in range(4320))
    assert got == prbs31_bytes(seed, 4320)


def test_capture_trim_centre_matches_the_host_for_every_mask(fw):
    """The trim the firmware settles on after its start-up sweep is the one the virtual rig computes."""
    from nandrig.gateware.onfi.timing import trim_centre

    lo, hi = P.Limit.CAPTURE_TRIM_MIN, P.Limit.CAPTURE_TRIM_MAX
    for mask in range(1 << (hi - lo + 1)):
        want = trim_centre(mask, lo)
        assert fw.capture_trim_centre(mask) == (hi + 1 if want is None else want), hex(mask)
    assert trim_centre(0b0111_0000_1100_0000, lo) == 5  # the longest run, not the first
    assert trim_centre(0b0000_0001_1000_0000, lo) == 0  # the later of two: more setup margin


def test_unique_id_check_takes_the_copy_the_host_takes(fw):
    """Damaged copies skipped, the first whole one taken, none when all are damaged or the part has none."""
    from nandrig.chip.onfi import UNIQUE_ID_BYTES, UNIQUE_ID_COPIES, decode_unique_id, unique_id_copies

    rng = random.Random(9)
    for trial in range(300):
        raw = bytearray(unique_id_copies(bytes(rng.randrange(256) for _ in range(UNIQUE_ID_BYTES))))
        for _ in range(rng.choice([0, 1, 5, 40, 200, 2000])):  # bit flips anywhere
            raw[rng.randrange(len(raw))] ^= 1 << rng.randrange(8)
        if trial % 50 == 0:
            raw = bytearray(b"\xff" * len(raw))  # a part without the command: the bus stays high
        uid = ctypes.create_string_buffer(UNIQUE_ID_BYTES)
        k = fw.unique_id_check(bytes(raw), UNIQUE_ID_COPIES, uid)
        want = decode_unique_id(bytes(raw))
        assert (k >= 0) == (want is not None)
        if want is not None:
            assert uid.raw == want
