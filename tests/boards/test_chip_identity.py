import crcmod
import pytest

from nandrig.boards.sim.chip import FEATURE_READ_RETRY, FEATURE_TIMING_MODE, VirtualChip
from nandrig.chip.onfi import onfi_crc16
from nandrig.chip.param_page import decode_dump
from nandrig.boards.sim.profile import load_profile, profile_names
from nandrig.errors import NandrigError

# an independent CRC engine configured as ONFI specifies it
ONFI_CRC = crcmod.mkCrcFun(0x18005, initCrc=0x4F4E, rev=False, xorOut=0)


@pytest.mark.parametrize("name", ["mlc-3x", "mlc-small"])
def test_parameter_page_crc_and_geometry_round_trip(name):
    chip = VirtualChip(name, seed=1)
    raw = chip.read_parameter_page()
    for i in range(3):
        copy = raw[i * 256:(i + 1) * 256]
        assert copy[:4] == b"ONFI"
        assert int.from_bytes(copy[254:256], "little") == ONFI_CRC(copy[:254])
    d = decode_dump(raw)
    pp = d.page
    g = chip.geometry
    assert (pp.page_bytes, pp.spare_bytes, pp.pages_per_block, pp.blocks_per_lun) == (
        g.page_bytes, g.spare_bytes, g.pages_per_block, g.blocks)
    assert pp.bits_per_cell == 2 and pp.timing_modes == (0, 1, 2, 3, 4, 5)
    assert pp.manufacturer == "NANDRIG" and d.ecc.bits > 0 and pp.endurance_cycles == 10000


def test_mlc3x_geometry_is_the_issue_s():
    g = load_profile("mlc-3x").geometry
    assert (g.page_bytes, g.spare_bytes, g.pages_per_block, g.blocks) == (4096, 224, 128, 4096)
    assert set(profile_names()) >= {"mlc-3x", "mlc-small"}


def test_crc_matches_independent_engine_on_arbitrary_data():
    for data in (b"", b"ONFI", bytes(range(254)), b"\xff" * 254):
        assert onfi_crc16(data) == ONFI_CRC(data)


def test_corrupt_first_copy_falls_back_to_the_next():
    raw = bytearray(VirtualChip("mlc-small").read_parameter_page())
    raw[90] ^= 0x40
    assert decode_dump(bytes(raw)).page.page_bytes == 2048 and decode_dump(bytes(raw)).copy == 1
    raw[256 + 91] ^= 0x40
    raw[512 + 92] ^= 0x40  # every copy damaged, each in another place: the majority still holds
    assert decode_dump(bytes(raw)).copy is None and decode_dump(bytes(raw)).page.page_bytes == 2048
    raw[512 + 90] ^= 0x40  # two copies damaged alike: the majority is damaged too
    with pytest.raises(NandrigError, match="no parameter-page copy passes its CRC"):
        decode_dump(bytes(raw))


def test_read_id():
    chip = VirtualChip("mlc-3x")
    assert chip.read_id(0x20) == b"ONFI"
    ident = chip.read_id(0x00)
    assert ident[0] == 0x4E and len(ident) == 5


def test_features_read_retry_and_timing_mode():
    chip = VirtualChip("mlc-small")
    assert not chip.set_features(FEATURE_READ_RETRY, bytes([0xF6, 0, 0, 0])).fail
    assert chip.read_offset == -10 and chip.get_features(FEATURE_READ_RETRY)[0] == 0xF6
    assert not chip.set_features(FEATURE_TIMING_MODE, bytes([4, 0, 0, 0])).fail
    assert chip.set_features(FEATURE_TIMING_MODE, bytes([7, 0, 0, 0])).fail  # unsupported mode
    chip.reset()
    assert chip.read_offset == 0


def test_unknown_profile_is_a_clear_error():
    with pytest.raises(NandrigError, match="unknown chip profile"):
        VirtualChip("mlc-9x")
