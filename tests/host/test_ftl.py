"""The FTL (host/ftl): every read returns the last write or a reported loss, through garbage collection, wear
leveling and failing blocks; the NAND rules hold (erase before program, pages in order, bad blocks untouched);
its policies choose t and density from the model; on the virtual rig a decoder's miscorrection is caught."""
import numpy as np
import pytest

from nandrig.boards.sim import ecc_layout
from nandrig.boards.sim.server import VirtualRig
from nandrig.characterization.rber import load_params
from nandrig.chip.geometry import PageMap, PageType
from nandrig.errors import NandrigError
from nandrig.host.ftl.flash import FlashGeometry, PageRead, RigFlash
from nandrig.host.ftl.ftl import BlockState, Ftl, FtlConfig, Victim
from nandrig.host.ftl.policy import BlockMode, FixedT, FlaresT, make_policy
from nandrig.host.link.rig import ChipResult, Rig
from nandrig.host.link.transport import InProcessTransport
from nandrig.virtual_chip.chip import VirtualChip


class MemoryFlash:
    """A flash that keeps each page's pattern seed and enforces NAND's rules: a page is programmed once after
    its block's erase, a block's pages in rising order, a factory bad block is never touched. ``fail_program``
    and ``fail_erase``: (block, nth operation on it) that fail; ``endurance``: per block, the P/E after which its
    erases fail (wear-out)."""

    def __init__(self, blocks=48, ppb=32, bad=(), fail_program=(), fail_erase=(), endurance=None):
        self.geometry = FlashGeometry(blocks, ppb, 2048, PageMap.shuffled_mlc(ppb))
        self.t_max = 40
        self.bad = set(bad)
        self.pages: dict[tuple[int, int], int] = {}
        self.last = {}  # block -> last page programmed since its erase
        self.erased = set()
        self.ops = {"program": {}, "erase": {}}
        self.fail = {"program": set(fail_program), "erase": set(fail_erase)}
        self.endurance = endurance
        self.pe = [0] * blocks

    def _count(self, kind, block):
        assert block not in self.bad, f"{kind} on factory bad block {block}"
        n = self.ops[kind][block] = self.ops[kind].get(block, 0) + 1
        return (block, n) in self.fail[kind]

    def erase(self, block):
        fail = self._count("erase", block) or self._worn(block)
        self.pe[block] += 1
        for p in range(self.geometry.pages_per_block):
            self.pages.pop((block, p), None)
        self.last.pop(block, None)
        self.erased.add(block)
        return ChipResult(int(fail), 3_000_000)

    def program(self, block, page, seed, t):
        fail = self._count("program", block)
        assert block in self.erased, f"block {block} programmed before it was erased"
        assert (block, page) not in self.pages, f"block {block} page {page} programmed twice"
        assert page > self.last.get(block, -1), f"block {block}: page {page} after page {self.last[block]}"
        self.last[block] = page
        if not fail:
            self.pages[(block, page)] = seed
        return ChipResult(int(fail), 800_000)

    def read(self, block, page, seed, t):
        intact = self.pages.get((block, page)) == seed
        return PageRead(50_000, 0 if intact else 5000, 0, 0 if intact else 1, 0)

    def factory_bad(self):
        return set(self.bad)

    def idle(self, ns):
        self.idled = getattr(self, "idled", 0.0) + ns

    def energy_pj(self):
        return None

    def _worn(self, block):
        return self.endurance is not None and self.pe[block] >= self.endurance[block]

    def wear(self, block, cycles, pslc):
        self.pages = {k: v for k, v in self.pages.items() if k[0] != block}  # it ends holding other data
        self.last[block] = self.geometry.pages_per_block
        for done in range(1, cycles + 1):
            failed = self._worn(block)
            self.pe[block] += 1
            if failed:
                return done, True  # the failing round wore it too
        return cycles, False


def replay(ftl: Ftl, n: int, hot: float = 0.0, read_share: float = 0.5, seed: int = 1) -> dict[int, int]:
    """Random writes and reads (``hot``: the share of writes to the first tenth of the logical pages); every
    read of a written page must come back intact. The last seed written to each page."""
    rng = np.random.default_rng(seed)
    written: dict[int, int] = {}
    n_lpn = ftl.logical_pages
    for _ in range(n):
        if rng.random() < read_share and written:
            lpn = int(rng.choice(list(written)))
            assert ftl.read(lpn), f"logical page {lpn} came back damaged"
            continue
        lpn = int(rng.integers(n_lpn // 10)) if rng.random() < hot else int(rng.integers(n_lpn))
        written[lpn] = int(rng.integers(1 << 31))
        ftl.write(lpn, written[lpn])
    return written


def test_every_read_returns_the_last_write_through_collection_and_leveling():
    flash = MemoryFlash(bad=(5, 17))
    ftl = Ftl(flash, FixedT(8), FtlConfig(static_wl_spread=4))
    written = replay(ftl, 20_000, hot=0.8)
    assert all(ftl.read(lpn) for lpn in written)
    c = ftl.counters
    assert c.gc_moves > 0 and c.wl_moves > 0 and c.write_amplification > 1.0
    assert c.flash_programs == c.host_writes + c.gc_moves + c.wl_moves
    assert int(ftl.pe.sum()) == c.erases == sum(flash.ops["erase"].values())
    assert (flash.ops["erase"].keys() | flash.ops["program"].keys()).isdisjoint({5, 17})


def test_static_leveling_bounds_the_erase_spread_that_hot_data_would_open():
    spreads = {}
    for spread in (None, 8):
        ftl = Ftl(MemoryFlash(), FixedT(8), FtlConfig(static_wl_spread=spread))
        replay(ftl, 30_000, hot=0.95, read_share=0.0)
        good = ftl.pe[ftl.state != BlockState.BAD]
        spreads[spread] = int(good.max() - good.min())
    assert spreads[8] <= 8 + 2 < spreads[None], spreads


def test_cost_benefit_beats_greedy_on_hot_and_cold_data_and_greedy_wins_on_uniform_writes():
    """The classic result (Kawaguchi et al., Rosenblum and Ousterhout): weighing a block's age lets cold blocks
    fill with stale pages before they are collected, so skewed writes move fewer pages; uniform writes have no
    cold data, and the fewest valid pages is best."""
    amp = {}
    for victim in Victim:
        for hot in (0.0, 0.9):
            ftl = Ftl(MemoryFlash(), FixedT(8), FtlConfig(victim=victim, static_wl_spread=None))
            written = replay(ftl, 30_000, hot=hot, read_share=0.0)
            assert all(ftl.read(lpn) for lpn in written)
            amp[victim, hot] = ftl.counters.write_amplification
    assert amp[Victim.COST_BENEFIT, 0.9] < 0.85 * amp[Victim.GREEDY, 0.9], amp
    assert amp[Victim.GREEDY, 0.0] <= amp[Victim.COST_BENEFIT, 0.0], amp


def test_a_failed_program_or_erase_retires_its_block_and_loses_nothing():
    flash = MemoryFlash(fail_program=[(3, 7)], fail_erase=[(9, 2)])
    ftl = Ftl(flash, FixedT(8), FtlConfig())
    written = replay(ftl, 12_000, hot=0.5)
    assert all(ftl.read(lpn) for lpn in written)
    assert ftl.counters.retired_blocks == 2
    assert ftl.state[3] == BlockState.RETIRED and ftl.state[9] == BlockState.RETIRED
    programs_after = flash.ops["program"][3]
    replay(ftl, 2_000, seed=2)
    assert flash.ops["program"][3] == programs_after  # a retired block takes nothing more


def test_bad_configuration_and_addresses_are_refused_in_one_line():
    with pytest.raises(NandrigError, match="over-provisioning"):
        FtlConfig(over_provisioning=0.95)
    ftl = Ftl(MemoryFlash(), FixedT(8))
    with pytest.raises(NandrigError, match=r"logical page .* is outside"):
        ftl.write(ftl.logical_pages, 1)
    with pytest.raises(NandrigError, match="no room"):
        Ftl(MemoryFlash(blocks=6, bad=(1, 2, 3)), FixedT(8))


def test_flares_policies_follow_wear_and_page_type_and_density_goes_pslc_past_reach():
    lower, upper = load_params("flares-taco2014"), load_params("flares-taco2014")
    flares = FlaresT(lower, upper, t_max=40, codeword_bytes=2048)
    ts = [flares.t_for(pe, PageType.UPPER, BlockMode.MLC) for pe in (0, 3000, 6000, 10_000)]
    assert ts == sorted(ts) and ts[0] < ts[-1]
    fixed = make_policy("fixed", lower, upper, 40, 2048, rated_pe=10_000)
    assert fixed.t_for(0, PageType.LOWER, BlockMode.MLC) == ts[-1]
    dense = FlaresT(lower, upper, t_max=12, codeword_bytes=2048, density=True)
    modes = [dense.mode_for(pe) for pe in (0, 10_000)]
    assert modes == [BlockMode.MLC, BlockMode.PSLC]
    assert FlaresT(lower, upper, t_max=12, codeword_bytes=2048).mode_for(10_000) == BlockMode.MLC
    with pytest.raises(NandrigError, match="policy 'worst'"):
        make_policy("worst", lower, upper, 40, 2048, 10_000)


def test_on_the_virtual_rig_reads_are_checked_end_to_end_and_a_miscorrection_is_caught(monkeypatch):
    """Over the protocol: pages programmed and read at t, each read's decoded bytes compared with the page its
    seed makes. A decoder that claims success on a codeword it got wrong is counted and the read reported
    damaged, never taken as data."""
    rig = Rig(InProcessTransport(VirtualRig(VirtualChip("mlc-small", 4))))
    ftl = Ftl(RigFlash(rig, range(16)), FixedT(8), FtlConfig(over_provisioning=0.3))
    written = replay(ftl, 300, read_share=0.3)
    assert ftl.counters.silent_caught == 0 and all(ftl.read(lpn) for lpn in list(written)[:20])
    decode = ecc_layout.decode_codeword

    def wrong(data, parity, t):
        out, corrected = decode(data, parity, t)
        return bytes([out[0] ^ 1]) + out[1:], corrected  # claims success, one bit off

    monkeypatch.setattr(ecc_layout, "decode_codeword", wrong)
    lpn = next(iter(written))
    assert not ftl.read(lpn)
    assert ftl.counters.silent_caught >= 1 and ftl.counters.uncorrectable_reads == 1
