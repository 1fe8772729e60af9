"""The rate-8/9 QC-LDPC code: its construction, its encoder, and its decode (the error pattern's syndrome, as the
rig poses it) against the `ldpc` library decoding the word read itself."""
import numpy as np
import pytest
from nandrig.characterization.ldpc_code import LdpcDecoder, QcLdpcCode
from nandrig.errors import NandrigError
from tests.characterization.ldpc_reference import agrees_with_the_library

CODE = QcLdpcCode()


def test_the_code_is_4_kb_at_rate_8_9_with_the_shape_it_documents():
    h = CODE.pcm()
    assert (CODE.k, CODE.n, CODE.rate) == (32_768, 36_864, pytest.approx(8 / 9))
    cols = np.asarray(h.sum(axis=0)).ravel()
    assert set(cols[:CODE.k]) == {4}  # every data bit in every block row
    assert list(cols[CODE.k:].reshape(CODE.rows, CODE.z).max(axis=1)) == [2, 2, 2, 1]  # the staircase
    assert set(np.asarray(h.sum(axis=1)).ravel()) == {33, 34}
    hi = h.astype(np.int32)
    overlap = (hi.T @ hi).tocoo()  # checks each pair of columns shares
    assert overlap.data[overlap.row != overlap.col].max() <= 1  # never two: no 4-cycle, girth >= 6


def test_encoded_words_are_codewords_and_carry_their_data():
    rs = np.random.default_rng(3)
    for _ in range(3):
        u = rs.integers(0, 2, CODE.k).astype(np.uint8)
        w = CODE.encode(u)
        assert not CODE.syndrome(w).any() and (w[:CODE.k] == u).all()
    with pytest.raises(NandrigError, match="32768 data bits"):
        CODE.encode(np.zeros(10, np.uint8))


@pytest.mark.parametrize("soft", [False, True], ids=["hard", "soft"])
def test_the_decode_is_the_librarys_own_on_the_received_word(soft):
    """Random codewords, errors injected at rates around the code's threshold so some frames fail: our decode
    finds what the library finds decoding the word read, frame by frame, iterations included."""
    rs = np.random.default_rng(11 + soft)
    dec = LdpcDecoder(CODE)
    outcomes = set()
    for noise in (3e-3, 8e-3, 1.1e-2) if not soft else (0.42, 0.5, 0.56):
        for _ in range(3):
            c = CODE.encode(rs.integers(0, 2, CODE.k).astype(np.uint8))
            if soft:  # each bit seen through Gaussian noise of sd ``noise`` on +-1: its LLR is 2 x / sd^2
                x = 1.0 + rs.normal(0.0, noise, CODE.n)
                e, llr = (x < 0).astype(np.uint8), np.abs(2 * x / noise**2)
            else:  # a binary symmetric channel of crossover ``noise``
                e = (rs.random(CODE.n) < noise).astype(np.uint8)
                llr = np.full(CODE.n, np.log((1 - noise) / noise))
            ours = dec.decode(e, llr)
            assert agrees_with_the_library(CODE, ours, c, e, llr)
            outcomes.add(ours.decoded)
    assert outcomes == {True, False}  # the comparison covered failures as well as successes


def test_a_frame_of_the_wrong_length_is_refused():
    with pytest.raises(NandrigError, match="36864 bits"):
        LdpcDecoder(CODE).decode(np.zeros(100, np.uint8), np.ones(100))
