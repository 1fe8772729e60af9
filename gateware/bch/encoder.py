"""Byte-parallel BCH encoder whose correction capability t is chosen per codeword.

The remainder register is m * t_max bits wide for every t: the generator is
stored shifted up, g_t(x) * x^(m (t_max - t)), so the remainder comes out
MSB-aligned and its top m*t bits are exactly the parity that lib/bch.c stores
left-justified (unused low bits of the last byte are zero). The feedback tap
never moves, and t changes between codewords without a reset.

Streams: ``data_in`` carries bytes MSB first, ``first`` on the first byte
(when ``t`` is sampled) and ``last`` on the last; ``parity_out`` then carries
ceil(m t / 8) parity bytes, ``last`` on the final one. ``data_in`` is not
ready while parity streams out.
"""
from __future__ import annotations

from amaranth import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from nandrig.gateware.bch.config import BchConfig

IN_LAYOUT = data.StructLayout({"data": 8, "first": 1, "last": 1})
OUT_LAYOUT = data.StructLayout({"data": 8, "last": 1})


def lfsr_step(m: Module, r, taps, byte, width: int) -> Signal:
    """One byte through the MSB-aligned LFSR: 8 single-bit steps, unrolled.

    Each step lands in its own signal: nesting the expressions would reference
    the previous step twice per level and grow as 2^8.
    """
    for i in range(7, -1, -1):
        nxt = Signal(width, name=f"lfsr_bit{i}")
        fb = r[width - 1] ^ byte[i]
        m.d.comb += nxt.eq(Cat(Const(0, 1), r[: width - 1]) ^ Mux(fb, taps, 0))
        r = nxt
    return r


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

        beat = self.data_in.payload
        with m.FSM():
            with m.State("DATA"):
                m.d.comb += self.data_in.ready.eq(1)
                with m.If(self.data_in.valid):
                    # the first byte starts from a zero remainder with the taps of the t given with it
                    tap_now = Signal(w)
                    base = Signal(w)
                    with m.If(beat.first):
                        m.d.comb += [tap_now.eq(taps_rom[self.t - 1]), base.eq(0)]
                        m.d.sync += [taps.eq(taps_rom[self.t - 1]), t_cur.eq(self.t)]
                    with m.Else():
                        m.d.comb += [tap_now.eq(taps), base.eq(rem)]
                    m.d.sync += rem.eq(lfsr_step(m, base, tap_now, beat.data, w))
                    with m.If(beat.last):
                        m.d.sync += left.eq(ecc_bytes[Mux(beat.first, self.t, t_cur)])
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

