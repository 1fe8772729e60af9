"""BCH engine with run-time programmable correction capability, bit-exact with Linux lib/bch.c."""
from nandrig.gateware.bch.config import BchConfig
from nandrig.gateware.bch.encoder import BchEncoder
from nandrig.gateware.bch.decoder import BchDecoder
from nandrig.gateware.bch.sim import simulate_decode, simulate_decode_many, simulate_encode, simulate_encode_many

__all__ = ["BchConfig", "BchDecoder", "BchEncoder", "simulate_decode", "simulate_decode_many", "simulate_encode",
           "simulate_encode_many"]
