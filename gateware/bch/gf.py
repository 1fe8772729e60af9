"""GF(2^m) arithmetic as Amaranth logic: flat XOR networks the simulator and synthesis both handle well."""
from __future__ import annotations

from functools import reduce
from operator import xor

from amaranth import Const, Signal
from amaranth.hdl import Value

from nandrig.gateware.bch.config import GF


def _xor_all(terms: list[Value], width: int = 1) -> Value:
    return reduce(xor, terms) if terms else Const(0, width)


def const_mul(gf: GF, x: Value, c: int) -> Value:
    """x * c for a constant c: out bit k is the XOR of the x bits i whose a^i * c has bit k set."""
    cols = [gf.mul(1 << i, c) if c else 0 for i in range(gf.m)]
    bits = [_xor_all([x[i] for i in range(gf.m) if cols[i] >> k & 1]) for k in range(gf.m)]
    return Value.cast(bits[0]) if gf.m == 1 else _cat(bits)


def mul(gf: GF, a: Value, b: Value) -> Value:
    """a * b: XOR over the a_i & b_j whose a^(i+j) has bit k set."""
    terms: list[list[Value]] = [[] for _ in range(gf.m)]
    for i in range(gf.m):
        for j in range(gf.m):
            p = gf.exp[i + j]
            for k in range(gf.m):
                if p >> k & 1:
                    terms[k].append(a[i] & b[j])
    return _cat([_xor_all(t) for t in terms])


def square(gf: GF, x: Value) -> Value:
    """x^2 is linear over GF(2): bit i of x moves to a^(2i)."""
    bits = [_xor_all([x[i] for i in range(gf.m) if gf.exp[2 * i] >> k & 1]) for k in range(gf.m)]
    return _cat(bits)


def byte_map(gf: GF, byte: Value, j: int) -> Value:
    """sum of byte bit i * a^(j i): a byte's contribution to the syndrome S_j."""
    bits = [_xor_all([byte[i] for i in range(8) if gf.pow(j * i) >> k & 1]) for k in range(gf.m)]
    return _cat(bits)


def _cat(bits: list[Value]) -> Value:
    from amaranth import Cat

    return Cat(*bits)


def reg_array(n: int, width: int, name: str) -> list[Signal]:
    return [Signal(width, name=f"{name}{i}") for i in range(n)]
