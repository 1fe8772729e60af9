"""Soft reads: the sensing order, LLRs from reads of known data, and the rate-8/9 LDPC decoding frames read from
the virtual chip with more sensing levels where hard reads lose them."""
import numpy as np
import pytest

from nandrig.characterization.ldpc_code import LdpcDecoder, QcLdpcCode
from nandrig.characterization.soft_read import (
    LlrTable, decode_levels, fer_upper, frames_to_show, levels_needed, read_patterns, sensing_offsets,
)
from nandrig.chip.pattern import bits
from nandrig.errors import NandrigError
from nandrig.virtual_chip.chip import VirtualChip, page_map
from tests.characterization.ldpc_reference import agrees_with_the_library


def test_sensing_levels_start_at_the_hard_read_and_widen_below_first():
    assert sensing_offsets(1, 4) == (0,)
    assert sensing_offsets(5, 4) == (0, -4, 4, -8, 8)
    for levels, step in ((0, 4), (8, 4), (3, 0)):
        with pytest.raises(NandrigError):
            sensing_offsets(levels, step)


def test_llrs_follow_the_voltage_and_one_level_is_the_hard_read():
    """Two Gaussian states read at three references: the LLR falls as a cell reads above more references, and
    a single level's decision is the read itself."""
    rs = np.random.default_rng(5)
    stored = rs.integers(0, 2, 200_000).astype(np.uint8)
    vth = np.where(stored == 1, -1.0, 1.0) + rs.normal(0, 0.6, stored.size)
    refs = (0.0, -0.3, 0.3)
    reads = [(vth < r).astype(np.uint8) for r in refs]  # a 1 reads below the reference
    table = LlrTable.fit(stored, read_patterns(reads), 3)
    seen = [(np.mean(vth[read_patterns(reads) == k]), table.llr[k]) for k in np.unique(read_patterns(reads))]
    llrs = [llr for _, llr in sorted(seen)]
    assert llrs == sorted(llrs, reverse=True) and len(llrs) == 4  # four voltage bins, ordered
    hard = LlrTable.fit(stored, read_patterns(reads[:1]), 1)
    assert (hard.decide(read_patterns(reads[:1]))[0] == reads[0]).all()


def test_frame_error_bounds():
    assert fer_upper(0, 2995) <= 1e-3 < fer_upper(0, 2990) and frames_to_show(1e-3) == 2995
    assert fer_upper(5, 5) == 1.0 and fer_upper(0, 0) == 1.0


def test_soft_levels_decode_the_virtual_chips_pages_that_hard_reads_lose():
    """Upper pages at 10k P/E after 5 years, read with the references 12 steps off: the hard read's RBER (about
    1.5 %) is past the rate-8/9 code's reach and every frame fails; a second sensing level, 4 steps lower, decodes
    them all, the LLR table fitted on other pages of the block."""
    chip = VirtualChip("mlc-3x", 5)
    chip.cycle(20, 10_000, seed=3)
    chip.wait(hours=5 * 8760)
    n = chip.geometry.raw_page_bytes
    uppers = [p for p in range(chip.geometry.pages_per_block) if page_map(p, chip.geometry.pages_per_block)[1]][:24]
    stored = {p: bits(chip.content(20, p).bytes(n)) for p in uppers}
    reads: dict[int, list[np.ndarray]] = {p: [] for p in uppers}
    for off in sensing_offsets(3, 4):
        chip.set_read_offsets((12 + off,) * 3)
        for p in uppers:
            reads[p].append(bits(chip.read(20, p).data))

    def joined(pages):
        return np.concatenate([stored[p] for p in pages]), [np.concatenate([reads[p][i] for p in pages])
                                                            for i in range(3)]

    (train_bits, train_reads), (test_bits, test_reads) = joined(uppers[0::2]), joined(uppers[1::2])
    hard_rber = float(np.mean(test_reads[0] != test_bits))
    assert 0.01 < hard_rber < 0.03
    out = decode_levels(train_bits, train_reads, test_bits, test_reads, LdpcDecoder(QcLdpcCode()))
    assert [o.levels for o in out] == [1, 2, 3] and out[0].frames == 11
    assert out[0].failures == out[0].frames and out[0].mean_iterations == 50
    assert out[1].failures == out[2].failures == 0
    assert out[1].raw_errors < 0.7 * out[0].raw_errors  # the LLRs' decisions already beat the hard read
    assert levels_needed(out, 0.25) == 2 and levels_needed(out, 1e-3) is None  # 11 frames cannot show 1e-3

    # The decode of these frames is the library's own on the word read: each frame's errors laid on a random
    # codeword, at one level (frames that fail) and at two (frames that decode).
    code, n, rs = QcLdpcCode(), QcLdpcCode().n, np.random.default_rng(5)
    for levels, decoded in ((1, False), (2, True)):
        table = LlrTable.fit(train_bits, read_patterns(train_reads[:levels]), levels)
        decided, rel = table.decide(read_patterns(test_reads[:levels]))
        errors = (decided != test_bits).astype(np.uint8)
        for f in range(2):
            e, llr = errors[f * n:(f + 1) * n], rel[f * n:(f + 1) * n]
            ours = LdpcDecoder(code).decode(e, llr)
            assert ours.decoded == decoded
            assert agrees_with_the_library(code, ours, code.encode(rs.integers(0, 2, code.k).astype(np.uint8)), e, llr)
