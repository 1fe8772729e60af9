"""BCH engine with run-time programmable correction capability, bit-exact with Linux lib/bch.c."""
from nandrig.gateware.bch.config import BchConfig
from nandrig.gateware.bch.encoder import BchEncoder
from nandrig.gateware.bch.sim import simulate_encode, simulate_encode_many

__all__ = ["BchConfig", "BchEncoder", "simulate_encode", "simulate_encode_many"]
