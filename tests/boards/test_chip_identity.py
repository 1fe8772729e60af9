import crcmod
import pytest

from nandrig.virtual_chip.chip import FEATURE_TIMING_MODE, VirtualChip
from nandrig.chip.onfi import onfi_crc16
from nandrig.chip.param_page import decode_dump
from nandrig.virtual_chip.profile import load_profile, profile_names
from nandrig.errors import NandrigError

# an independent CRC engine configured as ONFI specifies it
ONFI_CRC = crcmod.mkCrcFun(0x18005, initCrc=0x4F4E, rev=False, xorOut=0)


@pytest.mark.parametrize("name", profile_names())
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
    assert (pp.page_bytes, pp.spare_bytes, pp.pages_per_block, pp.blocks_per_lun * pp.luns, pp.luns) == (
        g.page_bytes, g.spare_bytes, g.pages_per_block, g.blocks, g.luns)
    assert pp.bits_per_cell == 2 and pp.timing_modes == (0, 1, 2, 3, 4, 5)
    assert d.ecc.bits > 0 and pp.endurance_cycles == 10000 and d.notes == ()


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


@pytest.mark.parametrize("name", profile_names())
def test_each_identity_is_one_a_host_accepts_without_contradiction(name):
    """READ ID against the page (maker byte, the extended ID's page and block size, MLC); an ECC requirement the
    spare and the rig's decoder can meet; a real tCCS; a maker that owns its ID."""
    from nandrig.boards.sim import ecc_layout as ecc
    from nandrig.virtual_chip.profile import BAD_BLOCK_MARK_BYTES, parity_bytes
    from nandrig.characterization.uber import required_t, rber_max
    from nandrig.chip.vendor import NANDRIG_MAKER_ID, decode_read_id

    prof = load_profile(name)
    chip = VirtualChip(name)
    d = decode_dump(chip.read_parameter_page())
    ident = chip.read_id(0x00)
    assert chip.read_id(0x20) == b"ONFI" and len(ident) == 5 and ident[0] == d.page.jedec_id
    if prof.identity["manufacturer"] == "NANDRIG":
        assert ident[0] == NANDRIG_MAKER_ID and bin(ident[0]).count("1") % 2 == 0  # JEP106 codes have odd parity
        legacy = decode_read_id(ident)
        g = prof.geometry
        assert (legacy["page_bytes"], legacy["block_bytes"], legacy["bits_per_cell"], legacy["bus_width"]) == (
            g.page_bytes, g.page_bytes * g.pages_per_block, 2, 8)
    g = prof.geometry
    assert parity_bytes(d.ecc, g.page_bytes) <= g.spare_bytes - BAD_BLOCK_MARK_BYTES
    # the rig's own code reaches the chip's requirement, carried to its codeword at equal strength: the t that
    # meets UBER 1e-11 at the RBER the chip's own t meets it on its own step
    rber = rber_max(d.ecc.bits, 1e-11, d.ecc.step_bytes * 8)
    assert ecc.t_max(g.page_bytes, g.spare_bytes) >= required_t(rber, 1e-11, ecc.CODEWORD_BYTES * 8, t_max=200)
    assert 0 < d.page.t_ccs_ns <= 500


def test_mlc3x_moves_its_ecc_requirement_to_the_extended_page():
    """24 bits per 1 KiB cannot be said in byte 112 (bits per 512 B): 0xFF there, the ECC section says it."""
    d = decode_dump(VirtualChip("mlc-3x").read_parameter_page())
    assert d.page.ecc_bits == 0xFF and (d.ecc.bits, d.ecc.step_bytes) == (24, 1024)


@pytest.mark.parametrize("name", profile_names())
def test_factory_bad_blocks_respect_the_pages_maximum_and_the_makers_mark(name):
    """Seeds 0-199: never more bad blocks per LUN than the parameter page promises; each marked where its maker
    marks (Samsung MLC: the last page), block 0 never bad."""
    prof = load_profile(name)
    g, most = prof.geometry, prof.onfi["max_bad_blocks"]
    for seed in range(200 if g.blocks <= 4096 else 20):
        chip = VirtualChip(name, seed)
        for lun in range(g.luns):
            assert sum(lun * g.blocks_per_lun <= b < (lun + 1) * g.blocks_per_lun for b in chip.factory_bad) <= most
        assert 0 not in chip.factory_bad
    for b in sorted(chip.factory_bad)[:3]:
        for page in range(g.pages_per_block) if g.pages_per_block <= 32 else (0, 1, g.pages_per_block - 1):
            first_spare = chip.read(b, page).data[g.page_bytes]
            assert (first_spare != 0xFF) == (page in prof.bad_block_pages), (b, page)


def test_features_read_retry_and_timing_mode():
    chip = VirtualChip("mlc-small")  # its table: one feature per reference, 0xA0-0xA2 (nandrig/chip/read_retry.py)
    assert not chip.set_read_offsets((-10, 3, 100)).fail
    assert chip.read_offsets == (-10, 3, 100) and chip.get_features(0xA0)[0] == 0xF6 and chip.get_features(0xA2)[0] == 100
    assert not chip.set_features(0xA1, bytes([0x80, 0, 0, 0])).fail  # -128: the chip holds its range's end
    assert chip.read_offsets == (-10, -100, 100)
    with pytest.raises(NandrigError, match="outside this chip's retry range -100..100"):
        chip.set_read_offsets((0, 101, 0))
    other = VirtualChip("mlc-3x")  # one feature, the three offsets in P1-P3
    other.set_read_offsets((1, -2, 3))
    assert other.get_features(0x89) == bytes([1, 0xFE, 3, 0]) and other.read_offsets == (1, -2, 3)
    with pytest.raises(NandrigError, match="no read-retry table"):
        VirtualChip("mlc-samsung").set_read_offsets((0, 0, 0))
    assert not chip.set_features(FEATURE_TIMING_MODE, bytes([4, 0, 0, 0])).fail
    assert chip.set_features(FEATURE_TIMING_MODE, bytes([7, 0, 0, 0])).fail  # unsupported mode
    chip.reset()
    assert chip.read_offsets == (0, 0, 0)


def test_unknown_profile_is_a_clear_error():
    with pytest.raises(NandrigError, match="unknown chip profile"):
        VirtualChip("mlc-9x")
