"""The SoC's banked SRAM on its Wishbone port: every bank reached, byte lanes honoured, reads return what was written."""
import random

from migen.sim import run_simulation

from nandrig.gateware.soc.bus import BANK_BYTES, BankedSRAM


def test_banked_sram_reads_back_words_and_bytes_across_every_bank():
    size = 3 * BANK_BYTES
    dut = BankedSRAM(size)
    rng = random.Random(1)
    # word addresses at each bank's edges and inside it
    addrs = [k * BANK_BYTES // 4 + off for k in range(3) for off in (0, 1, BANK_BYTES // 4 - 1, rng.randrange(BANK_BYTES // 4))]
    want = {a: rng.getrandbits(32) for a in addrs}
    got = {}

    def bench():
        for a, v in want.items():
            yield from dut.bus.write(a, v)
        yield from dut.bus.write(addrs[1], 0xAB << 8, sel=0b0010)  # one byte lane of one word
        want[addrs[1]] = want[addrs[1]] & ~0xFF00 | 0xAB00
        for a in want:
            got[a] = yield from dut.bus.read(a)

    run_simulation(dut, bench())
    assert got == want
