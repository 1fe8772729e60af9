import numpy as np
import pytest

from nandrig.characterization import wom


@pytest.mark.parametrize("page_bytes", [2048, 4097])
def test_two_writes_decode_and_the_second_only_programs_cells(page_bytes):
    rng = np.random.default_rng(page_bytes)
    k = wom.capacity(page_bytes)
    a, b = (rng.integers(0, 2, k).astype(np.uint8) for _ in range(2))
    first = wom.encode(a, page_bytes)
    second = wom.encode(b, page_bytes, before=first)
    assert len(first) == len(second) == page_bytes
    assert (wom.decode(first, k) == a).all() and (wom.decode(second, k) == b).all()
    x1, x2 = np.frombuffer(first, np.uint8), np.frombuffer(second, np.uint8)
    assert not (x2 & ~x1).any()  # no bit goes 0 -> 1: no erase needed
    assert np.unpackbits(x1)[3 * (k // 2):].all()  # the cells past the last triplet stay erased


def test_the_code_is_rivest_and_shamirs():
    """Every value over every value: the second word covers the first, a repeat changes nothing."""
    for old in range(4):
        for new in range(4):
            bits = lambda v: np.array([v >> 1, v & 1], np.uint8)  # noqa: E731
            first = wom.encode(bits(old), 1)
            second = wom.encode(bits(new), 1, before=first)
            assert (wom.decode(second, 2) == bits(new)).all()
            if old == new:
                assert second == first
            else:
                assert bin(~second[0] & 0xE0).count("1") >= 2  # a second-write word: two or three cells programmed
