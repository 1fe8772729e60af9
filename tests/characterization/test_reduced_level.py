"""ReduceCode: 3 bits over 2 cells of three levels, through standard lower and upper page programs."""
import numpy as np
import pytest

from nandrig.characterization.reduced_level import (
    LEVEL_BITS, PAIRS, bits_of, levels_of, levels_read, page_bits, reference_offsets, wordline_pages,
)
from nandrig.errors import NandrigError
from nandrig.virtual_chip.physics import STATE_OF_BITS


def test_data_round_trips_and_no_cell_is_l2():
    rs = np.random.default_rng(2)
    data = rs.integers(0, 2, 3 * 5000).astype(np.uint8)
    levels = levels_of(data)
    assert levels.size == 10_000 and set(np.unique(levels)) == {0, 1, 2}
    lower, upper = page_bits(levels)
    states = STATE_OF_BITS[lower, upper]
    assert set(np.unique(states)) == {0, 1, 3}  # L2 never programmed: lower and upper never both 0
    assert (levels_read(lower, upper) == levels).all()
    back, unknown = bits_of(levels_read(lower, upper))
    assert (back == data).all() and unknown == 0
    with pytest.raises(NandrigError, match="3 bits at a time"):
        levels_of(data[:4])


def test_a_cell_one_level_low_after_charge_loss_from_l3_costs_one_bit():
    value = {pair: v for v, pair in enumerate(PAIRS)}
    assert len(value) == 8 and (2, 2) not in value
    for (a, b), v in value.items():
        for low, cell in (((a - 1, b), a), ((a, b - 1), b)):
            if cell == 2 and low in value:  # L3 read as L1
                assert bin(v ^ value[low]).count("1") == 1, ((a, b), low)


def test_an_l3_pair_no_value_maps_to_reads_as_its_nearest_and_is_counted():
    bits_, unknown = bits_of(np.array([2, 2], np.uint8))
    assert unknown == 1 and (bits_ == bits_of(np.array([2, 1], np.uint8))[0]).all()


def test_reduced_pages_and_references():
    lower, upper = wordline_pages(np.zeros(48, np.uint8))
    assert len(lower) == len(upper) == 4  # 48 bits -> 32 cells -> 4 bytes a page
    assert LEVEL_BITS == ((1, 1), (1, 0), (0, 1))
    assert reference_offsets((0.0, 1.2, 2.4), (-2.0, 0.6, 1.8, 3.0), 0.01) == (0, 60, -60)
