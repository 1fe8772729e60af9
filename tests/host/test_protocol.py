import random
import struct
import zlib

from nandrig import protocol as P
from nandrig.protocol import Deframer, Frame, Opcode, cobs_decode, cobs_encode


def test_frames_of_every_length_cross_the_deframer():
    """The framing's COBS (the `cobs` library) around bodies whose runs of non-zero bytes end exactly full."""
    rng = random.Random(1)
    d = Deframer()
    for n in [0, 1, 240, 241, 248, 249, 250, 496, 4000]:
        payload = bytes(rng.choice([0, 1, 255, rng.randrange(1, 256)]) for _ in range(n))
        f = P.request(Opcode.ERASE, n, payload)
        wire = f.encode()
        assert wire.endswith(b"\x00") and 0 not in wire[:-1] and cobs_decode(wire[:-1]) == f.body()
        assert list(d.feed(wire)) == [f]
    assert cobs_decode(bytes([5, 1, 2])) is None and cobs_encode(b"\x01" * 254) == b"\xff" + b"\x01" * 254


def test_frame_layout_is_the_documented_one():
    f = P.request(Opcode.ERASE, 0x1234, struct.pack("<IB", 7, 1))
    body = f.body()
    assert body[:6] == bytes([0x52, 0x10, 0x34, 0x12, 0, 0])
    assert body[6:11] == bytes([7, 0, 0, 0, 1])
    assert struct.unpack("<I", body[-4:])[0] == zlib.crc32(body[:-4])
    wire = f.encode()
    assert wire.endswith(b"\x00") and 0 not in wire[:-1]
    assert Frame.parse(body) == f


def test_crc_failure_and_bad_sizes_are_dropped():
    body = bytearray(P.request(Opcode.TIME, 1).body())
    body[3] ^= 0x10
    assert Frame.parse(bytes(body)) is None
    assert Frame.parse(b"\x01" * 5) is None
    big = P.Frame(P.REQUEST_TYPE, 1, 1, 0, bytes(P.MAX_PAYLOAD + 1)).body()
    assert Frame.parse(big) is None


def test_deframer_resynchronises_after_garbage():
    good = [P.request(Opcode.TIME, i).encode() for i in range(3)]
    stream = b"\x13\x37garbage" + good[0] + b"\xff\xfe" + b"\x00" + good[1][:5] + b"\x00" + good[2]
    d = Deframer()
    frames = []
    for i in range(0, len(stream), 3):  # arbitrary chunking
        frames += d.feed(stream[i:i + 3])
    # garbage with no delimiter merges into the next frame, which then fails its CRC;
    # from the next 0x00 on the stream is in step again
    assert [f.seq for f in frames] == [2]
    assert d.dropped >= 3
    # a leading 0x00 (the host sends one before every request) shields a frame from earlier noise
    assert [f.seq for f in Deframer().feed(b"noise\x01\x02" + b"\x00" + good[0])] == [0]
