"""GF(2^m) arithmetic as Amaranth logic: flat XOR networks the simulator and synthesis both handle well."""
from __future__ import annotations

from amaranth import Cat, Const, Module, Mux, Signal
from amaranth.hdl import Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from nandrig.gateware.bch.config import GF


def xor_all(terms: list[Value], width: int = 1) -> Value:
    """The XOR of the terms as a balanced tree: synthesis keeps the structure it is given."""
    if not terms:
        return Const(0, width)
    while len(terms) > 1:
        terms = [terms[i] ^ terms[i + 1] if i + 1 < len(terms) else terms[i] for i in range(0, len(terms), 2)]
    return terms[0]


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
    """Datapath registers, each loaded before it is read: without a reset, which would otherwise fan out to all of
    them (on the ULX3S the NAND clock's reset took 12.7 ns of routing to the Chien search's locator)."""
    return [Signal(width, name=f"{name}{i}", reset_less=True) for i in range(n)]


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


def wide_cat(target, bits: list, chunk: int = 256) -> list:
    """``target.eq(Cat(*bits))`` in slices: the simulator compiles one Cat as one nested expression, whose
    depth past about 3,000 terms exceeds Python's recursion limit."""
    return [target[i:i + chunk].eq(Cat(*bits[i:i + chunk])) for i in range(0, len(bits), chunk)]


class XorNetwork(wiring.Component):
    """y[k] = XOR of the bits of x that ``rows[k]`` (an integer bit mask) selects: a GF(2)-linear map.

    Each row is one masked reduce-XOR, which yosys reads as an XOR of the selected bits and the
    simulator evaluates as one operation."""

    def __init__(self, n_in: int, rows: tuple[int, ...]) -> None:
        self.rows = rows
        super().__init__({"x": In(n_in), "y": Out(len(rows))})

    def elaborate(self, platform):
        mod = Module()
        bits = []
        for r in self.rows:  # the slice spanning the row first: the simulator's cost grows with the width
            lo, hi = (r & -r).bit_length() - 1, r.bit_length()
            bits.append((self.x[lo:hi] & Const(r >> lo, hi - lo)).xor() if r else Const(0, 1))
        mod.d.comb += wide_cat(self.y, bits)
        return mod


class PieceXors(wiring.Component):
    """The terms a ``share_pieces`` network works on: for each piece of x, its bits and the XORs of
    its bit subsets that some row needs, in ``subsets`` order (a piece of up to 4 bits: one LUT4 each)."""

    def __init__(self, n_in: int, pieces: tuple[tuple[int, int, tuple[int, ...]], ...]) -> None:
        self.pieces = pieces
        super().__init__({"x": In(n_in), "y": Out(sum(len(subs) for _, _, subs in pieces))})

    def elaborate(self, platform):
        mod = Module()
        out = []
        for lo, hi, subs in self.pieces:
            out += [(self.x[lo:hi] & s).xor() for s in subs]
        mod.d.comb += wide_cat(self.y, out)
        return mod


def share_pieces(rows: list[int], n_in: int, chunk: int = 4, word: int = 0):
    """Many XOR rows over ``n_in`` bits as two levels that share work (the four Russians' method, for LUT4).

    The inputs are cut into ``chunk``-bit pieces (restarting at every ``word`` boundary when given);
    every subset of a piece that some row needs becomes one shared XOR, so a row then takes at most
    one term per piece instead of up to ``chunk``. Returns the ``PieceXors`` layout (per piece: its
    bounds and the subsets it provides, its own bits first) and the rows rewritten over its terms.
    """
    bounds, lo = [], 0
    while lo < n_in:
        hi = min(lo + chunk, n_in, (lo // word + 1) * word if word else n_in)
        bounds.append((lo, hi))
        lo = hi
    parts = [[r >> lo & ((1 << (hi - lo)) - 1) for lo, hi in bounds] for r in rows]  # each row, per piece
    used = [{1 << b for b in range(hi - lo)} for lo, hi in bounds]
    for row in parts:
        for u, part in zip(used, row):
            u.add(part)
    pieces, index, base = [], [], 0
    for u, (lo, hi) in zip(used, bounds):
        u.discard(0)
        subs = sorted(u, key=lambda s: (s & (s - 1) != 0, s))  # the piece's own bits, then the XORs
        pieces.append((lo, hi, tuple(subs)))
        index.append({s: base + k for k, s in enumerate(subs)})
        base += len(subs)
    rewritten = [sum(1 << ix[part] for ix, part in zip(index, row) if part) for row in parts]
    return tuple(pieces), rewritten


def split_rows(rows: list[int], n_in: int, parts: int) -> list[list[int]]:
    """The rows cut into ``parts`` networks over consecutive ranges of the input: XORing the parts' outputs
    gives the rows again (a registered partial sum per part)."""
    bounds = [n_in * k // parts for k in range(parts + 1)]
    return [[r & ((1 << hi) - 1) & ~((1 << lo) - 1) for r in rows] for lo, hi in zip(bounds, bounds[1:])]


def const_mul_rows(gf: GF, c: int, offset: int) -> list[int]:
    """The m rows of x * c, for x at bits offset .. offset + m - 1 of a wider input."""
    return [sum(1 << (offset + j) for j in range(gf.m) if gf.mul(1 << j, c) >> k & 1) for k in range(gf.m)]
