"""The RTL rig's chip server: bus cycles in, the virtual chip's answers out, its clock following simulated time."""
import struct

from nandrig.virtual_chip.chip import VirtualChip
from nandrig.boards.sim.rtl.bridge import ADDR, ADVANCE, CMD, DIN, REPLY, ChipBridge


def call(br, kind, payload, now, wp_n=1):
    rep = br.handle(kind, wp_n, now, bytes(payload))
    busy, status, has_out, _mode, _array, _ua, n = REPLY.unpack_from(rep)
    return busy, status, rep[REPLY.size:REPLY.size + n] if has_out else None


def row_addr(chip, block, page):
    bits = (chip.geometry.pages_per_block - 1).bit_length()
    r = block << bits | page
    return [0, 0, r & 0xFF, r >> 8 & 0xFF, r >> 16]


def test_identity_and_parameter_page_come_back_whole():
    chip = VirtualChip("mlc-small", 3)
    br = ChipBridge(chip)
    call(br, CMD, [0x90], 1000)
    _, _, out = call(br, ADDR, [0x00], 1100)
    assert out[:5] == chip.read_id(0)
    call(br, CMD, [0xEC], 2000)
    busy, _, out = call(br, ADDR, [0x00], 2100)
    assert busy > 0 and out == chip.read_parameter_page()


def test_program_then_read_through_bus_cycles_and_time_follows():
    chip = VirtualChip("mlc-small", 3)
    ref = VirtualChip("mlc-small", 3)
    br = ChipBridge(chip)
    now = 10_000
    call(br, CMD, [0x60], now)
    for b in row_addr(chip, 2, 0)[2:]:
        call(br, ADDR, [b], now)
    rep = br.handle(CMD, 1, now, bytes([0xD0]))
    busy, _, _, _, array, busy_ua, _ = REPLY.unpack_from(rep)
    assert busy == ref.erase(2).busy_ns
    # what the front end's ADC reads meanwhile: the erase's current, for as long as the array erases
    assert array == busy and busy_ua == round(chip.profile.power.icc_erase_ma * 1000)
    now += busy + 1000
    data = bytes((i * 7) & 0xFF for i in range(chip.geometry.raw_page_bytes))
    call(br, CMD, [0x80], now)
    for b in row_addr(chip, 2, 5):
        call(br, ADDR, [b], now)
    call(br, DIN, data, now)
    busy, status, _ = call(br, CMD, [0x10], now)
    assert busy > 0 and status & 0x01 == 0
    now += busy + 1000
    call(br, CMD, [0x00], now)
    for b in row_addr(chip, 2, 5):
        call(br, ADDR, [b], now)
    busy, _, out = call(br, CMD, [0x30], now)
    assert busy > 0 and len(out) == len(data)
    flipped = sum(bin(a ^ b).count("1") for a, b in zip(out, data))
    assert flipped < len(data) * 8 // 1000  # what was programmed, up to the fresh chip's raw bit errors
    assert chip.clock_ns >= now  # the chip's clock caught up with simulated time
    before = chip.clock_ns
    call(br, ADVANCE, struct.pack("<Qh", 3_600_000_000_000, 8500), now + 10)
    assert chip.clock_ns - before >= 3_600_000_000_000


def test_write_protect_fails_the_erase():
    chip = VirtualChip("mlc-small", 3)
    br = ChipBridge(chip)
    call(br, CMD, [0x60], 0, wp_n=0)
    for b in row_addr(chip, 1, 0)[2:]:
        call(br, ADDR, [b], 0, wp_n=0)
    _, status, _ = call(br, CMD, [0xD0], 0, wp_n=0)
    assert status & 0x01
    assert chip.pe_count(1) == 0


def test_replies_carry_the_chip_timing_mode_that_shapes_the_data_valid_windows():
    chip = VirtualChip("mlc-small", 3)
    br = ChipBridge(chip)
    call(br, CMD, [0xEF], 1000)
    call(br, ADDR, [0x01], 1100)
    call(br, DIN, [3, 0, 0, 0], 1200)
    rep = br.handle(CMD, 1, 5000, bytes([0x70]))  # the data goes to the chip before the next command
    assert REPLY.unpack_from(rep)[3] == 3
