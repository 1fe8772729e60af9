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

from amaranth import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from nandrig.gateware.bch.config import BchConfig

IN_LAYOUT = data.StructLayout({"data": 8, "first": 1, "last": 1})
OUT_LAYOUT = data.StructLayout({"data": 8, "last": 1})


def lfsr_step(m: Module, r, taps, byte, width: int) -> Signal:
    """One byte through the MSB-aligned LFSR in closed form.

    The 8 feedback bits depend only on the top 8 remainder bits, the data
    byte and the top 7 taps (a small triangle of XORs); the wide update is
    then rem << 8 XOR the taps shifted by k for each set feedback bit k, a
    flat network for synthesis and eight integer operations for simulation.
    """
    f = [Signal(name=f"lfsr_fb{k}") for k in range(8)]  # f[k]: feedback applied with shift k
    for s_ in range(8):  # step s_ handles data bit 7 - s_, whose feedback is shifted by 7 - s_
        acc = r[width - 1 - s_] ^ byte[7 - s_]
        for q in range(s_):
            acc = acc ^ (f[7 - q] & taps[width - s_ + q])
        m.d.comb += f[7 - s_].eq(acc)
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
        taps_rom = Array([Const((g << (w - cfg.m * t)) & ((1 << w) - 1), w)
                          for t, g in enumerate(cfg.generators, start=1)])
        rem = Signal(w)
        taps = Signal(w)
        t_cur = Signal(range(cfg.t_max + 1))
        left = Signal(range(cfg.ecc_bytes(cfg.t_max) + 1))  # parity bytes still to send
        ecc_bytes = Array([Const(cfg.ecc_bytes(t), left.shape()) for t in range(cfg.t_max + 1)])

        # each byte is registered before the LFSR step: the step's XOR network then starts at flip-flops, not at
        # the producer's valid/ready logic (the SoC's critical path ran from the frontend's FIFO through it)
        beat, pending = Signal(IN_LAYOUT), Signal()
        in_codeword = Signal()
        with m.FSM():
            with m.State("DATA"):
                m.d.comb += self.data_in.ready.eq(~(pending & beat.last))
                m.d.sync += pending.eq(self.data_in.valid & self.data_in.ready)
                with m.If(self.data_in.valid & self.data_in.ready):
                    m.d.sync += beat.eq(self.data_in.payload)
                with m.If(~in_codeword & ~pending & ~(self.data_in.valid & self.data_in.payload.first)):
                    m.d.sync += [taps.eq(taps_rom[self.t - 1]), t_cur.eq(self.t)]  # idle: follow t
                with m.If(pending):
                    # the first byte starts from a zero remainder
                    m.d.sync += rem.eq(lfsr_step(m, Mux(beat.first, 0, rem), taps, beat.data, w))
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
                    m.d.sync += [rem.eq(rem << 8), left.eq(left - 1)]
                    with m.If(left == 1):
                        m.next = "DATA"
        return m

