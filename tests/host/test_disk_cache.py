"""Kgil's flash disk cache (host/workload/disk_cache.py): reads come back from DRAM, flash or disk as they should,
dirty pages reach the disk before their block is erased, a decoder failure is a miss for a clean page and a
loss for a dirty one, and a programmable controller trades capacity for pseudo-SLC as the flash wears."""
import json
import sys
from pathlib import Path

from nandrig.characterization.rber import load_params
from nandrig.host.ftl.flash import PageRead
from nandrig.host.ftl.policy import BlockMode, FixedT, FlaresT
from nandrig.host.workload.disk_cache import CacheConfig, DiskCache, run_cache_to_end
from nandrig.host.workload.replay import BusTiming
from nandrig.host.workload.trace import IoOp, Request, Synthetic, synthetic

sys.path.insert(0, str(Path(__file__).parent))
from test_ftl import MemoryFlash  # noqa: E402

BUS = BusTiming(t_wc_ns=20.0, t_rc_ns=20.0, raw_page_bytes=2112)
PAGE = 2048


def _req(op, lba):
    return Request(0, op, lba * PAGE, PAGE)


def test_reads_come_from_dram_flash_or_disk_and_dirty_pages_reach_the_disk():
    flash = MemoryFlash(blocks=20, ppb=16)
    cache = DiskCache(flash, FixedT(8), BUS, CacheConfig(read_share=0.8, dram_pages=4, disk_ns=5e6))
    c = cache.counters
    assert cache.serve(_req(IoOp.READ, 7)) >= 5e6 and c.misses == 1 and c.disk_reads == 1  # from the disk
    assert cache.serve(_req(IoOp.READ, 7)) == 100.0 and c.dram_hits == 1  # then from DRAM
    for lba in range(100, 110):  # push it out of DRAM: the next read of 7 is the flash's
        cache.serve(_req(IoOp.READ, lba))
    cache.serve(_req(IoOp.READ, 7))
    assert c.flash_hits == 1
    # 4 write blocks of 16 pages: 200 writes evict write blocks, each dirty page read and written to the disk
    for k in range(200):
        cache.serve(_req(IoOp.WRITE, 1000 + k % 90))
    assert c.disk_writes > 0 and c.lost_dirty == 0 and c.flash_read_failures == 0
    for lba in range(1000, 1090):  # every page reads back as last written, from whichever level has it
        cache.serve(_req(IoOp.READ, lba))
    assert c.flash_read_failures == 0 and c.lost_dirty == 0


class FailingReads(MemoryFlash):
    """Reads of the listed (block, page) the decoder gives up on."""

    failing: set = set()

    def read(self, block, page, seed, t):
        if (block, page) in self.failing:
            return PageRead(50_000, 500, 0, 1, 0)
        return super().read(block, page, seed, t)


def test_a_failed_decode_is_a_miss_for_a_clean_page_and_a_loss_for_a_dirty_one():
    flash = FailingReads(blocks=20, ppb=16)
    cache = DiskCache(flash, FixedT(1), BUS, CacheConfig(read_share=0.8, dram_pages=0))
    c = cache.counters
    cache.serve(_req(IoOp.READ, 3))  # clean copy in the read region
    cache.serve(_req(IoOp.WRITE, 4))  # dirty copy in the write region
    flash.failing = {divmod(cache.where[3][0], 16), divmod(cache.where[4][0], 16)}
    cache.serve(_req(IoOp.READ, 3))
    assert c.flash_read_failures == 1 and c.misses == 2 and c.lost_dirty == 0  # fetched from the disk again
    cache.serve(_req(IoOp.READ, 4))
    assert c.flash_read_failures == 2 and c.lost_dirty == 1


def test_a_programmable_controller_opens_worn_blocks_in_pseudo_slc_and_the_cache_holds_less():
    model = load_params("flares-taco2014")
    policy = FlaresT(model, model, 40, 2048, density=True)
    flash = MemoryFlash(blocks=20, ppb=16)
    cache = DiskCache(flash, policy, BUS, CacheConfig(read_share=0.8, dram_pages=0))
    work = synthetic(Synthetic("zipf", reads=0.9, size=PAGE), 40 * 16 * PAGE, 1 << 40, seed=4)
    life = run_cache_to_end(cache, work, window=2000, warm_up=2000, max_windows=1)
    fresh = life.windows[-1].hit_rate
    assert cache.counters.pslc_opens == 0
    beyond = next(pe for pe in range(0, 200_000, 500) if policy.mode_for(pe) == BlockMode.PSLC)
    cache.age({"read": beyond, "write": beyond})
    life = run_cache_to_end(cache, work, window=4000, warm_up=4000, max_windows=0)
    assert cache.counters.pslc_opens > 0 and cache.counters.lost_dirty == 0
    assert life.windows[-1].hit_rate < fresh  # half-size blocks: the cache holds less of the working set


def test_kgils_baseline_loses_a_write_to_its_decoder_on_the_virtual_chip(run_cli):
    """BCH t 1 in MLC on mlc-small: its first lost dirty page comes within tens of thousands of requests, and the
    cache goes on (as Kgil counts) until a region has no block left."""
    out = run_cli("workload", "cache", "--controllers", "bch1", "--window", "5000", "--skip", "400000", "--json")
    assert out.code == 0, out.err
    r = json.loads(out.out)["controllers"]["bch1"]
    assert r["fixed_t"] == 1 and r["end"] == "no room" and 0 < r["first_loss_request"] < r["requests"]
    assert 0.5 < r["hit_rate"] < 1.0 and r["counters"]["lost_dirty"] >= 1
