"""Byte-parallel BCH encoder whose correction capability t is chosen per codeword.

The remainder register is m * t_max bits wide for every t: the generator is
stored shifted up, g_t(x) * x^(m (t_max - t)), so the remainder comes out
MSB-aligned and its top m*t bits are exactly the parity that lib/bch.c stores
left-justified (unused low bits of the last byte are zero). The feedback tap
never moves, and t changes between codewords without a reset.

Streams: ``data_in`` carries bytes MSB first, ``first`` on the first byte
and ``last`` on the last. ``t`` must be stable from one cycle before a
codeword's first byte to that byte (the taps are loaded while idle, which
keeps the generator ROM out of the datapath); ``parity_out`` then carries
ceil(m t / 8) parity bytes, ``last`` on the final one, from the second cycle
after the last data byte (each byte is registered before its LFSR step).
``data_in`` is not ready from the cycle after the last byte until the parity
has streamed out.
"""
from __future__ import annotations

from amaranth import Array, Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import data, memory, stream, wiring
from amaranth.lib.wiring import In, Out

from nandrig.gateware.bch.config import BchConfig

IN_LAYOUT = data.StructLayout({"data": 8, "first": 1, "last": 1})
OUT_LAYOUT = data.StructLayout({"data": 8, "last": 1})


def feedback_matrix(taps: int, width: int) -> int:
    """The byte step's 8 feedback bits as a matrix over the 8 bits d = top remainder bits ^ data bits.

    Bit by bit, feedback s (data bit 7 - s) is d[s] plus the earlier feedback bits q < s the top taps select: a
    unit lower-triangular system L g = d. Its inverse M, fixed for a given t, gives every feedback bit as one
    XOR of at most 8 selected d bits (bit 8 s + j of the result: M[s][j]) instead of a chain 8 deep."""
    rows = []
    for j in range(8):  # column j of M: solve L g = e_j
        g = []
        for s_ in range(8):
            acc = int(s_ == j)
            for q in range(s_):
                acc ^= g[q] & (taps >> (width - s_ + q)) & 1
            g.append(acc)
        rows.append(g)
    return sum(rows[j][s_] << (8 * s_ + j) for s_ in range(8) for j in range(8))


def feedback_bits(m: Module, top: Value, byte: Value, fbm: Value) -> Value:
    """The byte step's 8 feedback bits (bit k: applied with shift k) from the remainder's top byte and the data
    byte through the matrix ``fbm`` (:func:`feedback_matrix`, loaded with the taps)."""
    d = [top[7 - s_] ^ byte[7 - s_] for s_ in range(8)]
    f = [Signal(name=f"lfsr_fb{k}") for k in range(8)]
    for s_ in range(8):
        acc = d[0] & fbm[8 * s_]
        for j in range(1, s_ + 1):
            acc = acc ^ (d[j] & fbm[8 * s_ + j])
        m.d.comb += f[7 - s_].eq(acc)
    return Cat(*f)


def lfsr_step(m: Module, r, taps, f, width: int) -> Signal:
    """One byte through the MSB-aligned LFSR in closed form, given its feedback bits ``f``: rem << 8 XOR the taps
    shifted by k for each set feedback bit k, a flat network for synthesis and eight integer operations for
    simulation."""
    out = Signal(width, name="lfsr_next")
    update = Cat(Const(0, 8), r[: width - 8])
    for k in range(8):
        update = update ^ Mux(f[k], Cat(Const(0, k), taps[: width - k]) if k else taps, 0)
    m.d.comb += out.eq(update)
    return out


class BchEncoder(wiring.Component):
    def __init__(self, config: BchConfig = BchConfig()) -> None:
        self.config = config
        super().__init__({
            "t": In(range(config.t_max + 1)),
            "data_in": In(stream.Signature(IN_LAYOUT)),
            "parity_out": Out(stream.Signature(OUT_LAYOUT)),
        })

    def elaborate(self, platform):
        cfg = self.config
        w = cfg.parity_bits_max
        m = Module()
        taps_of = [(g << (w - cfg.m * t)) & ((1 << w) - 1) for t, g in enumerate(cfg.generators, start=1)]
        # per t, the taps and their feedback matrix: a table in block RAM, read while idle into the port's register
        # (as a multiplexer of constants it cost 2,636 LUT4 and 897 FF more at t_max 64; docs/bch.md). Addressed by t
        # itself, entry 0 unused: an adder for t - 1 had led a ULX3S build's system-clock critical path
        m.submodules.generators = table = memory.Memory(
            shape=w + 64, depth=cfg.t_max + 1, init=[0] + [v | feedback_matrix(v, w) << w for v in taps_of])
        entry = table.read_port()
        taps, fbm = entry.data[:w], entry.data[w:]
        rem = Signal(w)
        t_cur = Signal(range(cfg.t_max + 1))
        m.d.comb += [entry.addr.eq(self.t), entry.en.eq(0)]
        left = Signal(range(cfg.ecc_bytes(cfg.t_max) + 1))  # parity bytes still to send
        ecc_bytes = Array([Const(cfg.ecc_bytes(t), left.shape()) for t in range(cfg.t_max + 1)])

        # each byte is registered before the LFSR step, and so are the step's 8 feedback bits, computed a cycle
        # ahead from what the remainder's top byte and the byte will be: the 600-bit update then starts at
        # flip-flops that fan out at once, not behind the feedback's XOR tree (the ULX3S's critical path)
        beat, pending = Signal(IN_LAYOUT), Signal()
        rem_next, beat_next = Signal(w), Signal(IN_LAYOUT)
        feedback = Signal(8)
        in_codeword = Signal()
        m.d.comb += [rem_next.eq(rem), beat_next.eq(beat)]
        m.d.sync += [rem.eq(rem_next), beat.eq(beat_next),
                     feedback.eq(feedback_bits(m, rem_next[w - 8:], beat_next.data, fbm))]
        with m.FSM():
            with m.State("DATA"):
                m.d.comb += self.data_in.ready.eq(~(pending & beat.last))
                m.d.sync += pending.eq(self.data_in.valid & self.data_in.ready)
                with m.If(self.data_in.valid & self.data_in.ready):
                    m.d.comb += beat_next.eq(self.data_in.payload)
                with m.If(~in_codeword & ~pending & ~(self.data_in.valid & self.data_in.payload.first)):
                    # idle: follow t. Never in the cycle before a step, so ``feedback`` is always made with the
                    # matrix the step uses
                    m.d.comb += entry.en.eq(1)
                    m.d.sync += t_cur.eq(self.t)
                with m.If(pending):
                    m.d.comb += rem_next.eq(lfsr_step(m, rem, taps, feedback, w))
                    m.d.sync += in_codeword.eq(~beat.last)
                    with m.If(beat.last):
                        m.d.sync += left.eq(ecc_bytes[t_cur])
                        m.next = "PARITY"
            with m.State("PARITY"):
                m.d.comb += [
                    self.parity_out.valid.eq(1),
                    self.parity_out.payload.data.eq(rem[w - 8:]),
                    self.parity_out.payload.last.eq(left == 1),
                ]
                with m.If(self.parity_out.ready):
                    m.d.comb += rem_next.eq(Mux(left == 1, 0, rem << 8))  # the next codeword starts from zero
                    m.d.sync += left.eq(left - 1)
                    with m.If(left == 1):
                        m.next = "DATA"
        return m

