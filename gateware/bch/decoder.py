"""BCH decoder with run-time t: byte-parallel syndromes, inversion-less Berlekamp-Massey, parallel Chien.

Three components, joined by streams, work on three codewords at once (see model.py for the algorithm):

1. SYN consumes one byte per cycle (data, then parity with its unused low bits
   masked) and keeps the odd syndromes by byte-wise Horner. It also counts
   zero bits for erased-page detection.
2. BM squares its way to the even syndromes and runs t iterations of the
   simplified inversion-less Berlekamp-Massey on a bank of (t_max + 3) // 2 GF
   multipliers (``bm_bank="half"``; t_max + 2 with "full"): each step
   (discrepancy; gamma * lambda; + delta * x B) takes the low half of the
   coefficients, then the high half only while that half is not all zero:
   3 to 6 cycles per iteration (3 with a full bank). A shifting syndrome window
   keeps every multiplier's operands in fixed registers, selected by one-hot
   registers, and the discrepancy is summed a cycle after its products, so no
   path has more than 7 LUT levels (docs/bch.md).
3. CHIEN evaluates the locator at ``chien_parallelism`` degrees (whole bytes)
   per cycle, walking from the end of the codeword (degree 0) so it starts
   from lambda itself; each byte with roots goes out on ``errors`` as (byte
   index, bit mask, MSB = bit 7), one per beat, then
   ``status`` says how many were corrected or that decoding failed
   (locator degree > t, or roots != degree).

Erased pages: a codeword whose data and parity hold at most t zero bits is
reported as erased (``erased`` = 1, ``corrected`` = the zero bits) without
searching, and its consumer rewrites it as all 0xFF. That is what Linux does
for erased chunks (nand_check_erased_ecc_chunk) instead of an eccmask; an
all-0xFF page is not a BCH codeword, so without this it would fail to decode.
"""
from __future__ import annotations

from types import SimpleNamespace

from amaranth import Array, Cat, Const, DomainRenamer, Module, Mux, Signal, Value
from amaranth.lib import cdc, data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from nandrig.gateware.bch import gf as G
from nandrig.gateware.bch.config import BchConfig
from nandrig.gateware.bch.encoder import IN_LAYOUT
from nandrig.gateware.bch.model import pad_bits
from nandrig.gateware.logic import SkidBuffer, popcount

ERR_LAYOUT = data.StructLayout({"byte": 16, "mask": 8})
STATUS_LAYOUT = data.StructLayout({"corrected": 16, "fail": 1, "erased": 1})
# with ``search_clock_ratio`` 2 the Chien search runs in this domain; its user maps it to a clock at that ratio
SEARCH_DOMAIN = "bch_search"
# the search's results on their way back: an error beat, or the codeword's status (is_status set)
RESULT_LAYOUT = data.StructLayout({"is_status": 1, "beat": ERR_LAYOUT})
RESULT_DEPTH = 8  # room for the results in flight across the crossing
LANE_PARTS = 4  # a lane's registered partial sums in a search at twice the clock
FOUND_DEPTH = 16  # that search's queue of roots


def _codeword_fields(cfg: BchConfig) -> dict:
    """What travels with a codeword from stage to stage: its t, its length in bytes, its zero bits."""
    return {"t": range(cfg.t_max + 2), "bytes": 16, "zero": 16}


def syndromes_layout(cfg: BchConfig) -> data.StructLayout:
    """Stage 1 to stage 2: the odd syndromes S_1, S_3, ..., S_(2 t_max - 1)."""
    return data.StructLayout({"syn": data.ArrayLayout(cfg.m, cfg.t_max), **_codeword_fields(cfg)})


def locator_layout(cfg: BchConfig) -> data.StructLayout:
    """Stage 2 to stage 3: the error locator (degree <= t when it can be searched) and its degree."""
    return data.StructLayout({"lam": data.ArrayLayout(cfg.m, cfg.t_max + 1), "deg": range(cfg.t_max + 3),
                              **_codeword_fields(cfg)})


def _pad_bits_rom(cfg: BchConfig) -> Array:
    """Per t, the unused low bits of the parity's last byte."""
    return Array([Const(0 if t == 0 else pad_bits(cfg, t), 3) for t in range(cfg.t_max + 2)])


def top_nonzero(flags: list) -> tuple:
    """(any flag set, index of the highest set flag) as a balanced tree of muxes."""
    if len(flags) == 1:
        return flags[0], Const(0, 1)
    mid = 1 << ((len(flags) - 1).bit_length() - 1)
    lo_any, lo_idx = top_nonzero(flags[:mid])
    hi_any, hi_idx = top_nonzero(flags[mid:])
    return lo_any | hi_any, Mux(hi_any, hi_idx + mid, lo_idx)


class BchSyndromes(wiring.Component):
    """Stage 1: one byte per cycle in (data, then parity with its unused low bits masked); the odd syndromes by
    byte-wise Horner and the codeword's zero bits out."""

    def __init__(self, config: BchConfig = BchConfig()) -> None:
        self.config = config
        super().__init__({
            "t": In(range(config.t_max + 1)),
            "data_in": In(stream.Signature(IN_LAYOUT)),
            "syndromes": Out(stream.Signature(syndromes_layout(config))),
        })

    def elaborate(self, platform):
        cfg, gf = self.config, self.config.gf
        m, tm = cfg.m, cfg.t_max
        mod = Module()
        t_shape = range(tm + 2)
        pad_rom = Array([Const(0xFF if t == 0 else (0xFF << pad_bits(cfg, t)) & 0xFF, 8) for t in range(tm + 2)])
        syn = G.reg_array(tm, m, "syn")  # S_1, S_3, ..., S_(2 t_max - 1)
        s1_t = Signal(t_shape)
        s1_bytes = Signal(16)
        s1_zero = Signal(16)
        s1_pending = Signal()
        beat = self.data_in.payload
        pad_mask = Signal(8)  # the parity's unused low bits, looked up at the first byte (the last comes later)
        byte = Signal(8)
        mod.d.comb += [
            self.data_in.ready.eq(~s1_pending),
            self.syndromes.valid.eq(s1_pending),
            self.syndromes.payload.t.eq(s1_t),
            self.syndromes.payload.bytes.eq(s1_bytes),
            self.syndromes.payload.zero.eq(s1_zero),
            *(self.syndromes.payload.syn[i].eq(syn[i]) for i in range(tm)),
            byte.eq(Mux(beat.last, beat.data & pad_mask, beat.data)),
        ]
        ones = Signal(8)  # padding bits count as ones for the erased check
        mod.d.comb += ones.eq(Mux(beat.last, beat.data | ~pad_mask, beat.data))
        with mod.If(self.data_in.valid & self.data_in.ready):
            for idx in range(tm):
                j = 2 * idx + 1
                fresh = G.byte_map(gf, byte, j)
                mod.d.sync += syn[idx].eq(Mux(beat.first, fresh, G.const_mul(gf, syn[idx], gf.pow(8 * j)) ^ fresh))
            zeros = 8 - popcount(ones)
            mod.d.sync += [
                s1_bytes.eq(Mux(beat.first, 1, s1_bytes + 1)),
                s1_zero.eq(Mux(beat.first, zeros, s1_zero + zeros)),
            ]
            with mod.If(beat.first):
                mod.d.sync += [s1_t.eq(self.t), pad_mask.eq(pad_rom[self.t])]
            with mod.If(beat.last):
                mod.d.sync += s1_pending.eq(1)
        with mod.If(self.syndromes.valid & self.syndromes.ready):
            mod.d.sync += s1_pending.eq(0)

        return mod


class BchSolver(wiring.Component):
    """Stage 2: the even syndromes by squaring, then t iterations of inversion-less Berlekamp-Massey on a bank of
    shared GF multipliers; the error locator and its degree out."""

    def __init__(self, config: BchConfig = BchConfig()) -> None:
        self.config = config
        super().__init__({
            "syndromes": In(stream.Signature(syndromes_layout(config))),
            "locator": Out(stream.Signature(locator_layout(config))),
        })

    # The stage in five parts, emitted in this order (later statements take precedence in a cycle): the registers,
    # the multiplier bank and its operand selects, the codeword taken in, an iteration's phases, the coefficients
    # written back, the locator handed over.
    def elaborate(self, platform):
        mod = Module()
        s = self._registers(mod)
        self._bank(mod, s)
        self._take(mod, s)
        self._iterate(mod, s)
        self._write_back(mod, s)
        self._hand_over(mod, s)
        return mod

    DISC, GL, DXB = 0, 1, 2  # DISC: delta = sum lambda_i S_(2r+1-i); GL: gamma * lambda; DXB: + delta * x B

    def _registers(self, mod: Module) -> SimpleNamespace:
        cfg, gf = self.config, self.config.gf
        m, tm = cfg.m, cfg.t_max
        t_shape = range(tm + 2)
        s = SimpleNamespace(m=m, tm=tm)
        s.n = n = tm + 2  # locator coefficients kept: x^(t+1) shows a degree above t
        # the bank's multipliers: the low half of the coefficients, then the high half (a full bank has no high half)
        s.half_n = half_n = cfg.bm_multipliers
        s.busy2 = Signal()
        s.s2_t = Signal(t_shape)
        s.s2_bytes = Signal(16)
        s.s2_zero = Signal(16)
        s.s2_done = Signal()  # locator ready, waiting for stage 3
        s.lam = G.reg_array(n, m, "lam")
        s.bpol = G.reg_array(n, m, "b")  # b[n-1] stays 0: x B needs b[0..n-2] only
        s.win = G.reg_array(n, m, "win")  # win[i] = S_(2r+1-i)
        s.queue = G.reg_array(tm, m, "q")  # S_(2r+3), S_(2r+5), ...: even syndromes are squared on the fly
        s.tmp = G.reg_array(n, m, "tmp")
        s.gamma = Signal(m)
        s.delta = Signal(m)
        s.k = Signal(range(-4 * tm - 2, 4 * tm + 2))
        s.r = Signal(t_shape)
        s.more = Signal()  # r < t: iterations left (t >= 1)
        s.phase = Signal(2)
        s.half = Signal()  # the bank works on the high half of the coefficients
        # registered with the phase: this cycle is DXB's low half, which ends the iteration. The window and the
        # queue (t_max syndromes wide) shift on it: from one flop, not from the phase logic (the ULX3S's path)
        s.ending = Signal()
        # S_(2r+2) = S_(r+1)^2, and S_(r+1) is in the window at win[r]
        s.s_even = Signal(m)
        mod.d.comb += s.s_even.eq(G.square(gf, Array(s.win)[s.r]))
        # a high half of zeros multiplies to zeros: its cycles are skipped, which keeps the
        # half-size bank within a few cycles of a full one (the locator grows one degree per iteration)
        # registered, so their wide ORs stay off the control paths: a half written in the previous cycle
        # counts as non-zero (at worst one cycle spent on zeros)
        lam_hi_r, xb_hi_r, s.lam_hi_w, s.xb_hi_w = Signal(), Signal(), Signal(), Signal()
        mod.d.sync += [lam_hi_r.eq(Cat(*s.lam[half_n:]).any()), xb_hi_r.eq(Cat(*s.bpol[half_n - 1:n - 1]).any()),
                       s.lam_hi_w.eq(0), s.xb_hi_w.eq(0)]
        s.lam_hi, s.xb_hi = lam_hi_r | s.lam_hi_w, xb_hi_r | s.xb_hi_w
        # the bank's operands as AND-OR of registers: one-hot selects, set with the phase and half by _goto(),
        # leave no decoding in front of the multipliers
        s.sel = {name: Signal(name=f"sel_{name}") for name in ("lam_lo", "lam_hi", "b_lo", "b_hi", "win_lo", "win_hi",
                                                               "gamma", "delta")}
        s.running = s.busy2 & ~s.s2_done & s.more
        return s

    def _goto(self, s: SimpleNamespace, ph: int, hf) -> list:
        """The statements that move the iteration to phase ``ph`` on half ``hf``, with the bank's selects."""
        hf = Const(hf, 1) if isinstance(hf, int) else hf
        on = {"lo": ~hf, "hi": hf}
        stmts = [s.phase.eq(ph), s.half.eq(hf), s.sel["gamma"].eq(ph == self.GL), s.sel["delta"].eq(ph == self.DXB),
                 s.ending.eq(~hf if ph == self.DXB else 0)]
        for h in on:
            stmts += [s.sel[f"lam_{h}"].eq(on[h] if ph != self.DXB else 0),
                      s.sel[f"b_{h}"].eq(on[h] if ph == self.DXB else 0),
                      s.sel[f"win_{h}"].eq(on[h] if ph == self.DISC else 0)]
        return stmts

    def _bank(self, mod: Module, s: SimpleNamespace) -> None:
        m, n, half_n, lam, bpol, win = s.m, s.n, s.half_n, s.lam, s.bpol, s.win

        def pick(pairs) -> Value:  # one-hot: the XOR is an OR
            return G.xor_all([x & s.sel[name].replicate(m) for name, x in pairs if x is not None], m)

        s.prods = []
        for j in range(half_n):
            mul = mod.submodules[f"mul{j}"] = G.Multiplier(self.config.gf)
            jh = j + half_n
            mod.d.comb += [
                mul.a.eq(pick([("lam_lo", lam[j]), ("lam_hi", lam[jh] if jh < n else None),
                               ("b_lo", bpol[j - 1] if j else None), ("b_hi", bpol[jh - 1] if jh < n else None)])),
                mul.b.eq(pick([("win_lo", win[j]), ("win_hi", win[jh] if jh < n else None),
                               ("gamma", s.gamma), ("delta", s.delta)])),
            ]
            s.prods.append(mul.p)
        # the discrepancy is kept as XORs of product pairs (one LUT level after the bank) and summed in GL
        s.dpart = G.reg_array((half_n + 1) // 2, m, "dpart")
        s.pair_sums = [G.xor_all(s.prods[2 * i:2 * i + 2], m) for i in range(len(s.dpart))]
        s.d_sum = G.xor_all(s.dpart, m)

    def _take(self, mod: Module, s: SimpleNamespace) -> None:
        """Stage 1's codeword in: the first syndrome in the window, the rest queued."""
        src, tm = self.syndromes.payload, s.tm
        mod.d.comb += self.syndromes.ready.eq(~s.busy2)
        with mod.If(self.syndromes.valid & self.syndromes.ready):
            mod.d.sync += [s.busy2.eq(1), s.s2_t.eq(src.t), s.s2_bytes.eq(src.bytes), s.s2_zero.eq(src.zero),
                           s.r.eq(0), s.more.eq(1), s.gamma.eq(1), s.k.eq(0), *self._goto(s, self.DISC, 0)]
            mod.d.sync += [s.lam[0].eq(1), s.bpol[0].eq(1), s.win[0].eq(src.syn[0])]
            mod.d.sync += [x.eq(0) for x in s.lam[1:] + s.bpol[1:] + s.win[1:]]
            mod.d.sync += [s.queue[i].eq(src.syn[i + 1]) for i in range(tm - 1)] + [s.queue[-1].eq(0)]

    def _iterate(self, mod: Module, s: SimpleNamespace) -> None:
        """One Berlekamp-Massey iteration: DISC, GL and DXB, each on the low half and, when not zero, the high."""
        m, tm, half_n, goto = s.m, s.tm, s.half_n, lambda ph, hf: self._goto(s, ph, hf)
        DISC, GL, DXB = self.DISC, self.GL, self.DXB
        take_lam = (s.delta != 0) & (s.k >= 0)  # B <- x lambda, else B <- x^2 B

        def update_b(indices) -> list:
            zero = Const(0, m)
            return [s.xb_hi_w.eq(1)] + [s.bpol[i].eq(Mux(take_lam, s.lam[i - 1] if i else zero,
                                                         s.bpol[i - 2] if i >= 2 else zero)) for i in indices]

        def end_iteration() -> None:
            with mod.If(take_lam):
                mod.d.sync += [s.gamma.eq(s.delta), s.k.eq(-s.k)]
            with mod.Else():
                mod.d.sync += s.k.eq(s.k + 2)
            mod.d.sync += [s.r.eq(s.r + 1), s.more.eq(s.r + 1 < s.s2_t), *goto(DISC, 0)]

        win, queue = s.win, s.queue
        with mod.If(s.ending):  # = running & (phase == DXB) & ~half: that cycle always ends the iteration
            mod.d.sync += [win[0].eq(queue[0]), win[1].eq(s.s_even)] + [win[i].eq(win[i - 2]) for i in range(2, tm + 1)]
            mod.d.sync += [queue[i].eq(queue[i + 1]) for i in range(tm - 1)] + [queue[-1].eq(0)]

        with mod.If(s.running):
            with mod.Switch(s.phase):
                with mod.Case(DISC):
                    with mod.If(~s.half):
                        mod.d.sync += [dp.eq(ps) for dp, ps in zip(s.dpart, s.pair_sums)]
                        with mod.If(s.lam_hi):
                            mod.d.sync += goto(DISC, 1)
                        with mod.Else():
                            mod.d.sync += goto(GL, 0)
                    with mod.Else():
                        mod.d.sync += [dp.eq(dp ^ ps) for dp, ps in zip(s.dpart, s.pair_sums)] + goto(GL, 0)
                with mod.Case(GL):
                    mod.d.sync += s.delta.eq(s.d_sum)  # for DXB's operand, the next gamma and B's update
                    with mod.If(~s.half & s.lam_hi):
                        mod.d.sync += goto(GL, 1)
                    with mod.Else():
                        # the high half first: its B update writes only above what the low half still reads
                        mod.d.sync += goto(DXB, s.lam_hi | s.xb_hi)
                with mod.Case(DXB):
                    with mod.If(s.half):
                        mod.d.sync += update_b(range(half_n + 1, tm + 1)) + goto(DXB, 0) + [s.lam_hi_w.eq(1)]
                    with mod.Else():
                        mod.d.sync += update_b(range(min(half_n, tm) + 1))
                        end_iteration()

    def _write_back(self, mod: Module, s: SimpleNamespace) -> None:
        """One write per coefficient, the enable decided by control and the product entering last: GL keeps
        gamma * lambda, DXB adds delta * x B (delta = 0 adds nothing)."""
        half, half_n = s.half, s.half_n
        gl, dxb = s.running & (s.phase == self.GL), s.running & (s.phase == self.DXB)
        for i in range(s.n):
            j, on_half = (i, ~half) if i < half_n else (i - half_n, half)
            with mod.If(gl & on_half):
                mod.d.sync += s.tmp[i].eq(s.prods[j])
            with mod.If(dxb & on_half):
                mod.d.sync += s.lam[i].eq(s.tmp[i] ^ s.prods[j])
        with mod.If(gl & ~half & ~s.lam_hi):
            mod.d.sync += [s.tmp[i].eq(0) for i in range(half_n, s.n)]  # gamma * 0, for a DXB of the high half
        settle = Signal()  # one cycle for the degree's second step
        with mod.If(s.busy2 & ~s.s2_done & ~s.more):
            mod.d.sync += settle.eq(~settle)
            with mod.If(settle):
                mod.d.sync += s.s2_done.eq(1)

    def _hand_over(self, mod: Module, s: SimpleNamespace) -> None:
        """The locator's degree in two registered steps (non-zero flags, then a balanced tree): the locator holds
        still for two cycles between the last iteration and the hand-over."""
        tm = s.tm
        deg = Signal(range(tm + 3))
        lam_nz = Signal(s.n)
        mod.d.sync += [lam_nz.eq(Cat(*(c != 0 for c in s.lam))), deg.eq(top_nonzero(list(lam_nz))[1])]
        out = self.locator.payload
        mod.d.comb += [self.locator.valid.eq(s.s2_done), out.t.eq(s.s2_t), out.bytes.eq(s.s2_bytes),
                       out.zero.eq(s.s2_zero), out.deg.eq(deg), *(out.lam[i].eq(s.lam[i]) for i in range(tm + 1))]
        with mod.If(self.locator.valid & self.locator.ready):
            mod.d.sync += [s.busy2.eq(0), s.s2_done.eq(0)]


class BchChien(wiring.Component):
    """Stage 3: the Chien search, ``chien_parallelism`` degrees per cycle; each byte with roots out on ``errors``,
    then ``status``."""

    def __init__(self, config: BchConfig = BchConfig()) -> None:
        self.config = config
        super().__init__({
            "locator": In(stream.Signature(locator_layout(config))),
            "errors": Out(stream.Signature(ERR_LAYOUT)),
            "status": Out(stream.Signature(STATUS_LAYOUT)),
        })

    def elaborate(self, platform):
        cfg, gf = self.config, self.config.gf
        m, tm = cfg.m, cfg.t_max
        mod = Module()
        t_shape = range(tm + 2)
        busy3 = Signal()
        loc = G.reg_array(tm + 1, m, "loc")  # a searched locator has degree <= t <= t_max
        s3_t = Signal(t_shape)
        s3_bytes = Signal(16)
        s3_zero = Signal(16)
        s3_deg = Signal(range(tm + 3))
        s3_pad = Signal(3)
        col = Signal(16)  # byte groups searched so far, from the end
        count = Signal(16)
        searching = Signal()

        src = self.locator.payload
        mod.d.comb += self.locator.ready.eq(~busy3)
        with mod.If(self.locator.valid & self.locator.ready):  # take stage 2's locator
            mod.d.sync += [busy3.eq(1), s3_t.eq(src.t), s3_bytes.eq(src.bytes), s3_zero.eq(src.zero), s3_deg.eq(src.deg),
                           s3_pad.eq(_pad_bits_rom(cfg)[src.t]), col.eq(0), count.eq(0)]
            mod.d.sync += [loc[i].eq(src.lam[i]) for i in range(tm + 1)]
            # erased pages, clean codewords and locators of degree > t (a certain failure) need no search
            mod.d.sync += searching.eq((src.zero > src.t) & (src.deg != 0) & (src.deg <= src.t))

        # lane p evaluates the locator at a^-p, the step multiplies coefficient i by a^-(lanes i); all are
        # XORs of locator bits, built from XORs of 4-bit pieces of each coefficient shared by all
        lanes, group = cfg.chien_parallelism, cfg.chien_parallelism // 8  # degrees and bytes per cycle
        nloc = (tm + 1) * m
        lane_rows = [[0] * m for _ in range(lanes)]
        step_rows = []
        for i in range(tm + 1):
            for p in range(lanes):
                for k, row in enumerate(G.const_mul_rows(gf, gf.pow(-p * i), i * m)):
                    lane_rows[p][k] |= row
            step_rows += G.const_mul_rows(gf, gf.pow(-lanes * i), i * m)
        shared, rows = G.share_pieces([r for lane in lane_rows for r in lane] + step_rows, nloc, word=m)
        pieces = mod.submodules.chien_pieces = G.PieceXors(nloc, shared)
        mod.d.comb += pieces.x.eq(Cat(*loc))
        terms = pieces.y
        step = mod.submodules.chien_step = G.XorNetwork(len(terms), tuple(rows[lanes * m:]))
        mod.d.comb += step.x.eq(terms)
        # two register stages after the lanes (their values, then the root mask) keep the XOR depth
        # off the locator's wide enable; a whole-pipeline stall stands for the errors stream's ready
        # and, with several bytes per cycle, for sending a group's bytes with roots one at a time
        stall = Signal()
        # a search at twice the engine's clock registers the lanes' terms and their partial sums too, and its
        # pipeline never stalls: its roots go into a queue, and only the locator's step waits (``stall``, there a
        # flop) while that queue lacks room for what the pipeline still holds, so no enable fans out from logic
        split = cfg.search_clock_ratio > 1
        lane_terms = Signal.like(terms, name="chien_terms", reset_less=True) if split else terms
        stages = ["terms", "sums", "1", "2"] if split else ["1", "2"]
        oks = [Signal(name=f"ok{n}") for n in stages]  # per stage: a column is in it, and which
        cols = [Signal(16, name=f"col{n}", reset_less=True) for n in stages]
        ok1, col1, ok2, col2 = oks[-2], cols[-2], oks[-1], cols[-1]
        v1 = G.reg_array(lanes, m, "chien_v")
        mask2 = Signal(lanes)
        piped = Const(1) if split else ~stall
        with mod.If(piped):
            mod.d.sync += [oks[0].eq(busy3 & searching & (~stall if split else 1)), cols[0].eq(col)]
            mod.d.sync += [b.eq(a) for a, b in zip(oks, oks[1:])] + [b.eq(a) for a, b in zip(cols, cols[1:])]
            if split:
                mod.d.sync += lane_terms.eq(terms)
        # byte b of a group holds its degrees 8 b .. 8 b + 7; the first group's pad degrees are not positions,
        # nor is anything before the codeword's first byte
        for p in range(lanes):
            lane_rows_p = rows[p * m:(p + 1) * m]
            if split:
                parts = G.split_rows(lane_rows_p, len(terms), LANE_PARTS)
                sums = Signal(LANE_PARTS * m, name=f"chien_part{p}", reset_less=True)
                for k, part in enumerate(parts):
                    net = mod.submodules[f"chien{p}_{k}"] = G.XorNetwork(len(terms), tuple(part))
                    mod.d.comb += net.x.eq(lane_terms)
                    mod.d.sync += sums[k * m:(k + 1) * m].eq(net.y)
                value = G.xor_all([sums[k * m:(k + 1) * m] for k in range(LANE_PARTS)], m)
            else:
                lane = mod.submodules[f"chien{p}"] = G.XorNetwork(len(terms), tuple(lane_rows_p))
                mod.d.comb += lane.x.eq(terms)
                value = lane.y
            with mod.If(piped):
                inside = ((col1 != 0) | (s3_pad <= p)) & (group * col1 + p // 8 < s3_bytes)
                mod.d.sync += [v1[p].eq(value), mask2[p].eq((v1[p] == 0) & inside)]
        found_left = Const(0)  # roots queued, not yet out on the errors stream
        if split:
            mod.submodules.found = found = fifo.SyncFIFO(width=ERR_LAYOUT.size, depth=FOUND_DEPTH)
            root = Signal(ERR_LAYOUT)
            mod.d.comb += [root.byte.eq(s3_bytes - 1 - col2), root.mask.eq(mask2), found.w_data.eq(root),
                           found.w_en.eq(ok2 & mask2.any()), self.errors.valid.eq(found.r_rdy),
                           self.errors.payload.eq(found.r_data), found.r_en.eq(self.errors.ready)]
            # a column a cycle enters the pipeline, each with at most one byte of roots (8 lanes)
            mod.d.sync += stall.eq(found.level >= FOUND_DEPTH - len(oks) - 2)
            found_left = found.r_rdy
        else:
            self._send_groups(mod, group, mask2, ok2, col2, s3_bytes, stall)
        with mod.If(ok2 & piped):
            mod.d.sync += count.eq(count + popcount(mask2))
        with mod.If(busy3 & searching & ~stall):
            mod.d.sync += [loc[i].eq(step.y[i * m:(i + 1) * m]) for i in range(tm + 1)]
            mod.d.sync += col.eq(col + 1)
            with mod.If((col + 1) * group >= s3_bytes):
                mod.d.sync += searching.eq(0)
        erased = s3_zero <= s3_t
        fail = ~erased & ((s3_deg > s3_t) | (count != s3_deg))
        mod.d.comb += [
            self.status.payload.erased.eq(erased),
            self.status.payload.fail.eq(fail),
            self.status.payload.corrected.eq(Mux(erased, s3_zero, Mux(fail, 0, count))),
        ]
        with mod.If(busy3 & ~searching & ~Cat(*oks).any() & ~found_left):
            mod.d.comb += self.status.valid.eq(1)
            with mod.If(self.status.ready):
                mod.d.sync += busy3.eq(0)
        return mod

    def _send_groups(self, mod: Module, group: int, mask2: Signal, ok2: Signal, col2: Signal, s3_bytes: Signal,
                     stall: Signal) -> None:
        """The bytes of a group with roots out on the errors stream one at a time, the pipeline stalled meanwhile
        and while the stream is not ready."""
        byte_masks = [mask2[8 * b:8 * b + 8] for b in range(group)]
        sent = Signal(group)  # bytes of the group in stage 2 already out on the errors stream
        todo = [(byte_masks[b] != 0) & ~sent[b] for b in range(group)]
        more = Signal()  # a byte with roots stays after the one going out now
        pick_mask, pick_byte = Signal(8), Signal(16)
        for b in reversed(range(group)):  # the lowest byte of the group with roots not yet sent
            with mod.If(todo[b]):
                mod.d.comb += [pick_mask.eq(byte_masks[b]), pick_byte.eq(s3_bytes - 1 - group * col2 - b),
                               more.eq(Cat(*todo[b + 1:]).any() if b + 1 < group else 0)]
        mod.d.comb += [self.errors.valid.eq(ok2 & Cat(*todo).any()), self.errors.payload.byte.eq(pick_byte),
                       self.errors.payload.mask.eq(pick_mask),
                       stall.eq(self.errors.valid & (~self.errors.ready | more))]
        with mod.If(self.errors.valid & self.errors.ready):
            for b in range(group):
                with mod.If(todo[b] & ~Cat(*todo[:b]).any() if b else todo[b]):
                    mod.d.sync += sent[b].eq(more)
            with mod.If(~more):
                mod.d.sync += sent.eq(0)


class BchDecoder(wiring.Component):
    def __init__(self, config: BchConfig = BchConfig()) -> None:
        self.config = config
        super().__init__({
            "t": In(range(config.t_max + 1)),
            "data_in": In(stream.Signature(IN_LAYOUT)),
            "errors": Out(stream.Signature(ERR_LAYOUT)),
            "status": Out(stream.Signature(STATUS_LAYOUT)),
        })

    def elaborate(self, platform):
        mod = Module()
        cfg = self.config
        mod.submodules.syndromes = syn = BchSyndromes(cfg)
        mod.submodules.solver = solver = BchSolver(cfg)
        own_clock = cfg.search_clock_ratio > 1
        mod.submodules.chien = chien = DomainRenamer(SEARCH_DOMAIN)(BchChien(cfg)) if own_clock else BchChien(cfg)
        mod.d.comb += syn.t.eq(self.t)
        wiring.connect(mod, wiring.flipped(self.data_in), syn.data_in)
        wiring.connect(mod, syn.syndromes, solver.syndromes)
        if not own_clock:
            wiring.connect(mod, solver.locator, chien.locator)
            # the consumer's ready stops at a skid buffer: from it the Chien search's stall fanned out to every
            # locator register (the ULX3S's critical path once the encoder's was gone); status waits until drained
            mod.submodules.errors_skid = skid = SkidBuffer(ERR_LAYOUT)
            wiring.connect(mod, chien.errors, skid.i)
            wiring.connect(mod, skid.o, wiring.flipped(self.errors))
            mod.d.comb += [self.status.payload.eq(chien.status.payload),
                           self.status.valid.eq(chien.status.valid & skid.empty),
                           chien.status.ready.eq(self.status.ready & skid.empty)]
            return mod
        mod.submodules.locator_cdc = lcdc = HeldStreamCDC(locator_layout(cfg), "sync", SEARCH_DOMAIN)
        wiring.connect(mod, solver.locator, lcdc.i)
        wiring.connect(mod, lcdc.o, chien.locator)
        # errors, then the status, through one queue: the order the frontend relies on survives the crossing
        mod.submodules.results = q = fifo.AsyncFIFO(width=RESULT_LAYOUT.size, depth=RESULT_DEPTH,
                                                    w_domain=SEARCH_DOMAIN, r_domain="sync")
        w = Signal(RESULT_LAYOUT)
        mod.d.comb += [q.w_data.eq(w), q.w_en.eq(chien.errors.valid | chien.status.valid),
                       chien.errors.ready.eq(q.w_rdy), chien.status.ready.eq(q.w_rdy & ~chien.errors.valid),
                       w.is_status.eq(~chien.errors.valid)]
        with mod.If(chien.errors.valid):
            mod.d.comb += w.beat.eq(chien.errors.payload)
        with mod.Else():
            mod.d.comb += w.beat.as_value()[:STATUS_LAYOUT.size].eq(chien.status.payload)
        r = RESULT_LAYOUT(q.r_data)
        mod.d.comb += [self.errors.payload.eq(r.beat), self.status.payload.eq(r.beat.as_value()[:STATUS_LAYOUT.size]),
                       self.errors.valid.eq(q.r_rdy & ~r.is_status), self.status.valid.eq(q.r_rdy & r.is_status),
                       q.r_en.eq(Mux(r.is_status, self.status.ready, self.errors.ready))]
        return mod


class HeldStreamCDC(wiring.Component):
    """A stream whose producer holds a wide payload in registers until ready, into another clock domain: only a
    request and an acknowledgement cross (pulse synchronizers); the consumer takes the payload, which has held
    still since before the request, once the request has crossed."""

    def __init__(self, layout: data.Layout, i_domain: str, o_domain: str) -> None:
        self._domains = i_domain, o_domain
        super().__init__({"i": In(stream.Signature(layout)), "o": Out(stream.Signature(layout))})

    def elaborate(self, platform):
        i_dom, o_dom = self._domains
        mod = Module()
        mod.submodules.req = req = cdc.PulseSynchronizer(i_dom, o_dom)
        mod.submodules.ack = ack = cdc.PulseSynchronizer(o_dom, i_dom)
        asked, pending = Signal(), Signal()  # a request is on its way (i side); one has arrived (o side)
        mod.d.comb += [req.i.eq(self.i.valid & ~asked), self.i.ready.eq(ack.o),
                       self.o.valid.eq(pending), self.o.payload.eq(self.i.payload),
                       ack.i.eq(self.o.valid & self.o.ready)]
        with mod.If(req.i):
            mod.d[i_dom] += asked.eq(1)
        with mod.If(ack.o):
            mod.d[i_dom] += asked.eq(0)
        with mod.If(req.o):
            mod.d[o_dom] += pending.eq(1)
        with mod.If(ack.i):
            mod.d[o_dom] += pending.eq(0)
        return mod
