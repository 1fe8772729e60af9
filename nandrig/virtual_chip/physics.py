"""Threshold-voltage physics of a 2-bit MLC cell, shared by both chip APIs.

Every cell's Vth, given its state and history, is a mixture of Gaussians:

* a program-noise core of width sigma(N) and, with weight w_tail(N), a wider
  tail component (both grow with the P/E count N; past the 10k P/E the
  calibration covers, the core widens by knee * (N/1e4 - 1)**2 more: the
  sharp rise of MLC errors shortly after rated life);
* retention charge loss of programmed states: the mean shifts down by
  k_s * alpha * (N/1e3)**a_n * ln(1 + t/t0) and the variance grows by
  k_s * beta * (N/1e3)**b_n * ln(1 + t/t0) (k_s larger for higher states);
* read disturb: erased cells drift up with the reads R their block has seen
  since its erase: rd_shift * (R/R_onset)**rd_power up to the block's onset
  (nothing visible well before it), then rd_shift * (1 + rd_log*ln(R/R_onset)),
  so errors keep growing about tenfold per decade of reads instead of
  running away with the erased state's Gaussian tail; worn oxide lets more
  charge in, so the shift grows by rd_wear per 10k P/E;
* program disturb: erased cells drift up by pd_shift per extra program pulse
  on a neighbouring wordline;
* interference: a wordline's cells move up by gamma times the Vth step its
  next neighbour takes when that neighbour's upper page is programmed;
* read noise of width sigma_read, fresh at every read.

Chips of one design differ (the chip applies its draws to these constants):
the states' program-verify levels are trimmed per die, so L1..L3 each sit some
ten mV off their design level (which moves errors between the lower and upper
pages, whatever their program speed), and oxides wear at different
rates, so a chip ages as if it had seen ``wear_rate`` times its P/E cycles in
every wear-dependent term above (the spread widens as chips age).

Because the conditional distribution is Gaussian, the statistical path
computes exact error probabilities from these formulas, and the byte path
draws every cell from the very same distributions: the two agree in
distribution by construction, and tests check that they do.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.special import ndtr

# Gray map, state -> (lsb, msb): adjacent states differ in one bit
LSB_OF_STATE = np.array([1, 1, 0, 0], dtype=np.uint8)
MSB_OF_STATE = np.array([1, 0, 0, 1], dtype=np.uint8)
# (lsb, msb) -> state
STATE_OF_BITS = np.array([[2, 3], [1, 0]], dtype=np.uint8)  # [lsb][msb]


class _Floats:
    """The few numpy functions the physics formulas use, on one plain number: the statistical read path asks about
    one page at a time, where numpy's per-call cost would be most of the work."""

    sqrt, log, log1p, maximum, minimum = math.sqrt, math.log, math.log1p, max, min

    @staticmethod
    def asarray(x, dtype=float) -> float:
        return dtype(x)

    @staticmethod
    def where(cond, a, b):
        return a if cond else b


def _ops(*xs):
    """``_Floats`` when every argument is a plain number, else numpy."""
    return _Floats if all(isinstance(x, (int, float)) for x in xs) else np


@dataclass(frozen=True)
class Physics:
    """Constants of one chip design; the profile JSON holds them."""

    vref: tuple[float, float, float]  # read references VR1..VR3 (V)
    mu: tuple[float, float, float, float]  # state means L0..L3 after programming (V)
    mu_lm: float  # intermediate state after the lower page only
    sigma_erase: float
    sigma_prog: float  # programmed-state core width at N = 0
    sigma_growth: float  # relative core widening at N = 1e4 (sqrt law)
    tail_weight: float  # tail weight at N = 1e4 (linear in N)
    tail_scale: float  # tail width / core width
    ret_alpha: float
    ret_beta: float
    ret_an: float
    ret_bn: float
    ret_t0_h: float
    ret_k: tuple[float, float, float, float]
    rd_shift: float  # erased-state shift at R = R_onset
    rd_power: float  # growth of the shift before onset
    rd_log: float  # logarithmic growth after onset
    pd_shift: float
    coupling: float
    sigma_read: float
    rd_wear: float = 0.0  # relative growth of the read-disturb shift per 10k P/E
    knee: float = 0.0  # relative core widening per (N/1e4 - 1)**2 past 10k P/E
    # wear of a pSLC cycle (lower pages only: cells go no higher than LM) in full MLC cycles. SLC parts are rated
    # for 10x the cycles of MLC ones of the same node (Kgil et al., ISCA'08 Table 1; Grupp et al., MICRO'09)
    pslc_stress: float = 0.1
    retry_step: float = 0.0  # V per read-retry step: the chip's read-retry table's (nandrig/chip/read_retry.py)
    verify_step: float = 0.0  # V per program-verify step: its verify-level feature's, where the design has one
    wear_rate: float = 1.0  # this chip's P/E cycles count this many times over in every wear term

    def _wear(self, n, xp=np) -> np.ndarray:
        return xp.asarray(n, float) * self.wear_rate

    def core_sigma(self, n: np.ndarray) -> np.ndarray:
        xp = _ops(n)
        x = self._wear(n, xp) / 1e4
        return self.sigma_prog * (1.0 + self.sigma_growth * xp.sqrt(x) + self.knee * xp.maximum(x - 1.0, 0.0) ** 2)

    def tail_w(self, n: np.ndarray) -> np.ndarray:
        xp = _ops(n)
        return xp.minimum(self.tail_weight * self._wear(n, xp) / 1e4, 0.5)

    def retention(self, n: np.ndarray, t_h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(mean shift down, added variance) per unit k_s."""
        xp = _ops(n, t_h)
        lt = xp.log1p(xp.asarray(t_h, float) / self.ret_t0_h)
        nk = self._wear(n, xp) / 1e3
        return self.ret_alpha * nk**self.ret_an * lt, self.ret_beta * nk**self.ret_bn * lt

    def read_disturb(self, reads: np.ndarray, onset: np.ndarray, n: np.ndarray) -> np.ndarray:
        """The erased state's shift after ``reads`` of its block, programmed at ``n`` P/E."""
        xp = _ops(reads, onset, n)
        x = xp.asarray(reads, float) / onset
        wear = 1.0 + self.rd_wear * self._wear(n, xp) / 1e4
        growth = xp.where(x <= 1.0, x**self.rd_power, 1.0 + self.rd_log * xp.log(xp.maximum(x, 1.0)))
        return self.rd_shift * wear * growth

    def interference_steps(self, verify: tuple[int, int, int] | None = None) -> np.ndarray:
        """Mean Vth step of a neighbour cell when its upper page is programmed, per final state (its wordline's
        verify levels moved ``verify`` steps)."""
        m = self.placed_levels(verify)[0]
        return np.array([0.0, m[1] - m[0], m[2] - self.mu_lm, m[3] - self.mu_lm])

    def placed_levels(self, verify: tuple[int, int, int] | None) -> tuple[np.ndarray, np.ndarray]:
        """L0..L3's means after programming and their charge-loss factors k_s, on a wordline whose upper page was
        programmed with PV1..PV3 moved ``verify`` steps (None: where the design puts them). A level placed higher
        holds more charge and loses it in proportion: its k_s scales with its height above the erased state."""
        mu, k = np.asarray(self.mu, float), np.asarray(self.ret_k, float)
        if not verify:
            return mu, k
        dv = np.concatenate([[0.0], self.verify_step * np.asarray(verify, float)])
        height = mu[1:] - mu[0]
        return mu + dv, np.concatenate([[k[0]], k[1:] * (height + dv[1:]) / height])


def region_probs(mean: np.ndarray, sd: np.ndarray, vref: np.ndarray) -> np.ndarray:
    """P(read region r) for Gaussians: regions split at VR1 < VR2 < VR3; last axis is r."""
    z = (vref - mean[..., None]) / sd[..., None]
    c = ndtr(z)
    return np.concatenate([c[..., :1], np.diff(c, axis=-1), 1.0 - c[..., -1:]], axis=-1)


def read_state(vth: np.ndarray, vref: np.ndarray) -> np.ndarray:
    return np.searchsorted(vref, vth).astype(np.uint8)


def gaussian_tail(x: float) -> float:
    return 0.5 * math.erfc(x / math.sqrt(2))


@dataclass(frozen=True)
class PageCondition:
    """What an analytic error probability depends on (arrays broadcast together)."""

    n: np.ndarray  # P/E count when the wordline was programmed
    t_h: np.ndarray  # retention, 25 degC-equivalent hours
    reads: np.ndarray  # block reads since erase
    onset: np.ndarray  # the block's read-disturb onset
    pd: np.ndarray  # extra program pulses seen from neighbours
    coupled: np.ndarray  # bool: the next wordline's upper page came later
    offset: np.ndarray  # read-retry offsets of VR1..VR3 in steps: (P, 3), or (3,) for every page


@lru_cache(maxsize=256)
def _state_constants(ph: Physics, states: tuple[int, ...], lm: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per state: retention factor k, mean after programming, and whether it is the erased state."""
    lm_state = [lm and s == 2 for s in states]
    k = np.array([0.0 if s == 0 else ph.ret_k[3] if is_lm else ph.ret_k[s] for s, is_lm in zip(states, lm_state)])
    mu = np.array([ph.mu[0] if s == 0 else ph.mu_lm if is_lm else ph.mu[s] for s, is_lm in zip(states, lm_state)])
    return k, mu, np.array([s == 0 for s in states])


def state_components(ph: Physics, c: PageCondition, states: tuple[int, ...], lm: bool = False):
    """Mixture components per page, state and component: (weight, mean, sd), each (P, S, 2).

    ``lm``: state 2 stands for the lower-page-only intermediate state. Built whole rather than state by state,
    with as few numpy calls as the formulas allow: the statistical read path asks for one page at a time, where
    numpy's per-call cost is all there is.
    """
    k, mu, erased = _state_constants(ph, states, lm)
    n = np.atleast_1d(np.asarray(c.n, float))
    shift, var_add = ph.retention(n, c.t_h)
    core = ph.core_sigma(n)
    dist = ph.read_disturb(c.reads, c.onset, n) + ph.pd_shift * np.asarray(c.pd, float)
    mean = np.where(erased, mu + dist[:, None], mu - k * shift[:, None])  # (P, S)
    read2 = ph.sigma_read**2
    var_ret = k * var_add[:, None] + read2
    spread = np.stack([core**2, (core * ph.tail_scale) ** 2], -1)[:, None, :] + var_ret[..., None]  # (P, S, 2)
    sd = np.sqrt(np.where(erased[:, None], ph.sigma_erase**2 + read2, spread))
    w_t = np.where(erased, 0.0, ph.tail_w(n)[:, None])
    return np.stack([1.0 - w_t, w_t], -1), np.stack([mean, mean], -1), sd


def _vref(ph: Physics, c: PageCondition) -> np.ndarray:
    """Read references per page, (P, 3) or (3,) when every page reads at the same, each shifted by its read-retry
    offset."""
    return np.asarray(ph.vref) + ph.retry_step * np.asarray(c.offset, float)


@lru_cache(maxsize=2)
def _region_weights(msb: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For a page's bit: whether a cell of each state reads wrong when its Vth lies above the last reference, the
    change in that as the Vth drops below each reference (state, reference), and which states store a 1."""
    bits = MSB_OF_STATE if msb else LSB_OF_STATE
    wrong = (bits[:, None] != bits[None, :]).astype(float)  # [stored state, read region]
    return wrong[:, 3], wrong[:, :3] - wrong[:, 1:], bits == 1


def page_error_probs(ph: Physics, c: PageCondition, msb: bool) -> tuple[np.ndarray, np.ndarray]:
    """(P(1 read as 0 | stored 1), P(0 read as 1 | stored 0)) per bit of a fully programmed wordline.

    Data are random (each of the 4 states equally likely, and so is the
    neighbour's), as the rig's PRBS patterns make them.
    """
    w, m, s = state_components(ph, c, (0, 1, 2, 3))  # (P, 4, 2)
    vref = _vref(ph, c)
    if vref.ndim == 1:
        vref = vref[None, :]
    steps = ph.coupling * ph.interference_steps()  # neighbour's final state j -> shift
    shift = np.where(np.asarray(c.coupled, bool).reshape(-1, 1), steps, 0.0)  # (P or 1, J)
    # P(read below each reference) for page p, neighbour state j, state s, component c: (P, J, S, C, 3)
    below = ndtr((vref[:, None, None, None, :] - m[:, None, :, :, None] - shift[:, :, None, None, None])
                 / s[:, None, :, :, None])
    above_all, step, ones = _region_weights(msb)
    # P(wrong) = wrong above VR3 + sum over references of P(below it) times the change in wrong across it
    total = 0.25 * np.einsum("pjscr,sr,psc->ps", below, step, w) + above_all
    return total[:, ones].mean(-1), total[:, ~ones].mean(-1)


_SQRT_HALF = math.sqrt(0.5)


def one_page_error_probs(ph: Physics, n: float, t_h: float, reads: float, onset: float, pd: float, coupled: bool,
                         offset: tuple[float, float, float], msb: bool) -> tuple[float, float]:
    """:func:`page_error_probs` of one page, in plain floats: the same sums, with the terms that are zero left out
    (the erased state has no tail; a state's error chance changes only across the references its bit flips at)."""
    core, w_t, ret_a, ret_b = _at_wear(ph, n)
    lt = math.log1p(float(t_h) / ph.ret_t0_h)
    shift, var_add = ret_a * lt, ret_b * lt  # Physics.retention's products, in its order
    read2 = ph.sigma_read**2
    vref = [v + ph.retry_step * float(o) for v, o in zip(ph.vref, offset)]
    nb = _neighbour_steps(ph) if coupled else (0.0,) * 4
    terms, ones = _flip_terms(msb)
    sd_erased = math.sqrt(ph.sigma_erase**2 + read2)
    comps = [((1.0, ph.mu[0] + ph.read_disturb(reads, onset, n) + ph.pd_shift * pd, sd_erased),)]
    for s in (1, 2, 3):
        k = ph.ret_k[s]
        mean, var = ph.mu[s] - k * shift, k * var_add + read2
        comps.append(((1.0 - w_t, mean, math.sqrt(core**2 + var)), (w_t, mean, math.sqrt((core * ph.tail_scale) ** 2 + var))))
    total = [0.0] * 4
    for s, r, d in terms:
        for w, m, sd in comps[s]:
            x, u = (m - vref[r]) / sd * _SQRT_HALF, _SQRT_HALF / sd
            total[s] += d * w * (math.erfc(x + nb[0] * u) + math.erfc(x + nb[1] * u) + math.erfc(x + nb[2] * u)
                                 + math.erfc(x + nb[3] * u))
    # P(wrong) = wrong above VR3 + 1/4 over neighbours of sum over references of P(below it) times the change in
    # wrong across it; P(below) = erfc(...) / 2
    above_all = _region_weights(msb)[0]
    total = [float(a) + 0.125 * t for a, t in zip(above_all, total)]
    one = [t for t, o in zip(total, ones) if o]
    zero = [t for t, o in zip(total, ones) if not o]
    return sum(one) / len(one), sum(zero) / len(zero)


@lru_cache(maxsize=4096)
def _at_wear(ph: Physics, n: float) -> tuple[float, float, float, float]:
    """What a page's error chances take from the wear its wordline was programmed at, which its every read asks
    again: the core width, the tail weight and retention's two wear factors (Physics.retention's first products)."""
    nk = ph._wear(n, _Floats) / 1e3
    return ph.core_sigma(n), ph.tail_w(n), ph.ret_alpha * nk**ph.ret_an, ph.ret_beta * nk**ph.ret_bn


@lru_cache(maxsize=256)
def _neighbour_steps(ph: Physics) -> tuple[float, ...]:
    return tuple(float(x) * ph.coupling for x in ph.interference_steps())


@lru_cache(maxsize=2)
def _flip_terms(msb: bool) -> tuple[tuple[tuple[int, int, float], ...], tuple[bool, ...]]:
    """The (state, reference, change in wrong) where a page's bit flips, and which states store a 1."""
    _, step, ones = _region_weights(msb)
    terms = tuple((s, r, float(step[s, r])) for s in range(4) for r in range(3) if step[s, r])
    return terms, tuple(bool(o) for o in ones)


def lsb_only_error_probs(ph: Physics, c: PageCondition) -> tuple[np.ndarray, np.ndarray]:
    """Lower page of a wordline whose upper page is unprogrammed: read at VR1, states L0 and LM."""
    w, m, s = state_components(ph, c, (0, 2), lm=True)  # (P, 2, 2)
    cut = np.atleast_2d(_vref(ph, c))[:, :1, None]  # (P, 1, 1)
    above = 1.0 - ndtr((cut - m) / s)
    return np.sum(w[:, 0] * above[:, 0], -1), np.sum(w[:, 1] * (1.0 - above[:, 1]), -1)


def block_rber(ph: Physics, n, t_h, reads=0.0, onset=1e6, wordlines: int = 64) -> np.ndarray:
    """Mean RBER of a whole block programmed in order with random data (both pages)."""
    n, t_h = (np.ravel(a) for a in np.broadcast_arrays(np.asarray(n, float), np.asarray(t_h, float)))
    out = np.zeros(n.shape)
    z = np.zeros(n.shape)
    for coupled, weight in ((True, (wordlines - 1) / wordlines), (False, 1 / wordlines)):
        c = PageCondition(n, t_h, z + reads, z + onset, z, np.full(n.shape, coupled), np.zeros(3))
        for msb in (False, True):
            p10, p01 = page_error_probs(ph, c, msb)
            out += weight * 0.25 * (p10 + p01)
    return out
