"""The `ldpc` library decoding a received word itself: the reference the rig's syndrome-posed decode is held to."""
import numpy as np
from ldpc import BpDecoder

from nandrig.characterization.ldpc_code import (
    MAX_ITERATIONS, MIN_SUM_SCALING, FrameDecode, QcLdpcCode, error_probability,
)


def library_on_the_word(code: QcLdpcCode, word: np.ndarray, probs: np.ndarray) -> tuple[np.ndarray, int, bool]:
    bp = BpDecoder(code.pcm(), error_channel=probs, max_iter=MAX_ITERATIONS, bp_method="minimum_sum",
                   ms_scaling_factor=MIN_SUM_SCALING, schedule="parallel", input_vector_type="received_vector")
    return bp.decode(word), bp.iter, bool(bp.converge)


def agrees_with_the_library(code: QcLdpcCode, ours: FrameDecode, codeword: np.ndarray, errors: np.ndarray,
                            llr_abs: np.ndarray) -> bool:
    """Our decode of ``errors`` (posed on their syndrome) found what the library finds decoding the word read,
    ``codeword`` with those errors: the same iterations, convergence, and success."""
    word, iters, converged = library_on_the_word(code, codeword ^ errors, error_probability(llr_abs))
    return (ours.iterations == iters and ours.converged == converged
            and ours.decoded == (converged and bool((word == codeword).all())))
