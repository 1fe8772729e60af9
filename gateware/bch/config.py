"""Build-time parameters of the BCH engine, and the Galois-field arithmetic the generators use."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from nandrig.errors import NandrigError

# lib/bch.c's default primitive polynomials; m = 16 uses the one bchlib users pass (0x1100B)
PRIM_POLY = {13: 0x201B, 14: 0x402B, 15: 0x8003, 16: 0x1100B}


@dataclass(frozen=True)
class BchConfig:
    """A binary BCH code over GF(2^m) for ``k_bytes`` data bytes, correcting 1..t_max errors chosen at run time.

    The default is the rig's code: 2048-byte codewords, m = 15 (16384 + 15 t
    bits <= 32767), t_max = 64. A 4096 + 224-byte page holds two codewords and
    their parity up to t = 56 beside the bad-block mark and the FLARES profile
    (2 + 12 + 2 * 105 bytes); larger spares reach 64. docs/bch.md says why.
    """

    m: int = 15
    k_bytes: int = 2048
    t_max: int = 64
    prim_poly: int = field(default=0)
    width: int = 8  # datapath bits per cycle
    # degrees the Chien search covers per cycle (whole bytes): 16 keeps the last codeword's search of a
    # 2048-byte codeword within the decode budget (1.3x the page's input)
    chien_parallelism: int = 16
    # Berlekamp-Massey multiplier bank: "half" ((t_max + 3) // 2 multipliers, 3-6 cycles per iteration)
    # or "full" (t_max + 2 multipliers, 3 cycles); docs/bch.md has both measured
    bm_bank: str = "full"
    # the Chien search's clock as a multiple of the engine's: 2 runs it in its own domain (``SEARCH_DOMAIN``,
    # the ULX3S's NAND clock), so 8 degrees per search cycle cover 16 per engine cycle
    search_clock_ratio: int = 1

    def __post_init__(self) -> None:
        if self.search_clock_ratio not in (1, 2):
            raise NandrigError(f"the Chien search runs at 1 or 2 times the engine's clock, got {self.search_clock_ratio}")
        if self.search_clock_ratio > 1 and self.chien_parallelism != 8:
            # its pipeline never stalls, so each step may find roots in one byte only
            raise NandrigError("a Chien search on its own clock covers 8 degrees per cycle, "
                               f"got {self.chien_parallelism}")
        if self.bm_bank not in ("half", "full"):
            raise NandrigError(f"bm_bank must be 'half' or 'full', got {self.bm_bank!r}")
        if self.m not in PRIM_POLY:
            raise NandrigError(f"m must be one of {sorted(PRIM_POLY)}, got {self.m}")
        if not self.prim_poly:
            object.__setattr__(self, "prim_poly", PRIM_POLY[self.m])
        if self.chien_parallelism not in (8, 16, 24, 32):
            raise NandrigError(f"the Chien search takes whole bytes per cycle (8, 16, 24 or 32 degrees), "
                               f"got {self.chien_parallelism}")
        if self.width != 8:
            raise NandrigError("the datapath is 8 bits wide (one byte per cycle)")
        if self.t_max < 1 or self.k_bytes < 1:
            raise NandrigError("need t_max >= 1 and k_bytes >= 1")
        if self.k_bytes * 8 + self.m * self.t_max > (1 << self.m) - 1:
            raise NandrigError(f"{self.k_bytes} bytes and t_max {self.t_max} do not fit GF(2^{self.m})")

    @property
    def bm_multipliers(self) -> int:
        """GF multipliers in the Berlekamp-Massey bank, for the t_max + 2 locator coefficients."""
        return (self.t_max + 3) // 2 if self.bm_bank == "half" else self.t_max + 2

    @property
    def n_max(self) -> int:
        return (1 << self.m) - 1

    @property
    def parity_bits_max(self) -> int:
        return self.m * self.t_max

    def ecc_bytes(self, t: int) -> int:
        return (self.m * t + 7) // 8

    @cached_property
    def gf(self) -> "GF":
        return GF(self.m, self.prim_poly)

    @cached_property
    def generators(self) -> tuple[int, ...]:
        """g_t(x) for t = 1..t_max as integers (bit i = coefficient of x^i); index t - 1."""
        gf = self.gf
        out, g, used = [], 1, set()
        for t in range(1, self.t_max + 1):
            r = 2 * t - 1  # add the minimal polynomial of a^(2t-1) unless its coset is already in
            if r % self.n_max not in used:
                coset, x = [], r % self.n_max
                while x not in coset:
                    coset.append(x)
                    x = (2 * x) % self.n_max
                used.update(coset)
                poly = [1]  # GF coefficients, poly[i] of x^i
                for e in coset:
                    root = gf.exp[e]
                    nxt = [0] * (len(poly) + 1)
                    for i, c in enumerate(poly):
                        nxt[i + 1] ^= c
                        nxt[i] ^= gf.mul(c, root)
                    poly = nxt
                mp = sum(1 << i for i, c in enumerate(poly) if c)  # coefficients are 0/1
                g = clmul(g, mp)
            out.append(g)
        return tuple(out)


class GF:
    def __init__(self, m: int, poly: int) -> None:
        self.m, self.n = m, (1 << m) - 1
        self.exp = [0] * (2 * self.n)
        self.log = [0] * (self.n + 1)
        x = 1
        for i in range(self.n):
            self.exp[i] = self.exp[i + self.n] = x
            self.log[x] = i
            x <<= 1
            if x >> m:
                x ^= poly
        if len(set(self.exp[: self.n])) != self.n:
            raise NandrigError(f"0x{poly:x} is not primitive for m = {m}")

    def mul(self, a: int, b: int) -> int:
        return self.exp[self.log[a] + self.log[b]] if a and b else 0

    def pow(self, e: int) -> int:
        return self.exp[e % self.n]


def clmul(a: int, b: int) -> int:
    """Carry-less product of two GF(2) polynomials."""
    out = 0
    while b:
        if b & 1:
            out ^= a
        a <<= 1
        b >>= 1
    return out
