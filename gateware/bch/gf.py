"""GF(2^m) arithmetic as Amaranth logic: flat XOR networks the simulator and synthesis both handle well."""
from __future__ import annotations

from functools import reduce
from operator import xor

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.hdl import Value
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from nandrig.gateware.bch.config import GF


def xor_all(terms: list[Value], width: int = 1) -> Value:
    return reduce(xor, terms) if terms else Const(0, width)


# Word-level forms: a few wide conditional XORs instead of thousands of single-bit terms. Synthesis
# flattens them to the same functions; the simulator and the Verilog stay small.

def const_mul(gf: GF, x: Value, c: int) -> Value:
    """x * c for a constant c: XOR of the columns a^i * c selected by the bits of x."""
    if not c:
        return Const(0, gf.m)
    return xor_all([Mux(x[i], gf.mul(1 << i, c), 0) for i in range(gf.m)], gf.m)


def mul(gf: GF, a: Value, b: Value) -> Value:
    """a * b: the carry-less product of a and b, reduced with the constants a^k for k >= m."""
    m = gf.m
    prod = xor_all([Mux(b[j], a << j, 0) for j in range(m)], 2 * m - 1)
    return prod[:m] ^ xor_all([Mux(prod[k], gf.exp[k], 0) for k in range(m, 2 * m - 1)], m)


def square(gf: GF, x: Value) -> Value:
    """x^2 is linear over GF(2): bit i of x moves to a^(2i)."""
    bits = [xor_all([x[i] for i in range(gf.m) if gf.exp[2 * i] >> k & 1]) for k in range(gf.m)]
    return Cat(*bits)


def byte_map(gf: GF, byte: Value, j: int) -> Value:
    """sum of byte bit i * a^(j i): a byte's contribution to the syndrome S_j."""
    bits = [xor_all([byte[i] for i in range(8) if gf.pow(j * i) >> k & 1]) for k in range(gf.m)]
    return Cat(*bits)


def reg_array(n: int, width: int, name: str) -> list[Signal]:
    return [Signal(width, name=f"{name}{i}") for i in range(n)]


# Units kept as their own modules: synthesis maps each alone (-noflatten), which keeps the LUT mapper's
# problems small; flattened, the decoder is one 160 k-gate XOR network that ABC does not finish.

class Multiplier(wiring.Component):
    """p = a * b in GF(2^m)."""

    def __init__(self, gf: GF) -> None:
        self.gf = gf
        super().__init__({"a": In(gf.m), "b": In(gf.m), "p": Out(gf.m)})

    def elaborate(self, platform):
        mod = Module()
        mod.d.comb += self.p.eq(mul(self.gf, self.a, self.b))
        return mod


class PolyEval(wiring.Component):
    """v = sum_i c_i x^i at the constant x = a^e, for n coefficients c_i."""

    def __init__(self, gf: GF, n: int, e: int) -> None:
        self.gf, self.e = gf, e
        super().__init__({"c": In(data.ArrayLayout(gf.m, n)), "v": Out(gf.m)})

    def elaborate(self, platform):
        mod = Module()
        gf = self.gf
        mod.d.comb += self.v.eq(xor_all([const_mul(gf, self.c[i], gf.pow(self.e * i)) for i in range(len(self.c))], gf.m))
        return mod


class Scale(wiring.Component):
    """out_i = c_i * a^(e i): one step of a polynomial's argument from x to x a^e."""

    def __init__(self, gf: GF, n: int, e: int) -> None:
        self.gf, self.e = gf, e
        super().__init__({"c": In(data.ArrayLayout(gf.m, n)), "out": Out(data.ArrayLayout(gf.m, n))})

    def elaborate(self, platform):
        mod = Module()
        mod.d.comb += [self.out[i].eq(const_mul(self.gf, self.c[i], self.gf.pow(self.e * i))) for i in range(len(self.c))]
        return mod
