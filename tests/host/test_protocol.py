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


def _measure_reply(n_pages: int) -> Frame:
    payload = b"".join(P.MEASURE_PAGE.pack(i, 2 * i, 1000 + i) for i in range(n_pages))
    return P.reply(P.request(Opcode.MEASURE, 9), P.Err.OK, payload)


def test_a_reply_in_parts_is_the_reply_whole_however_its_parts_arrive():
    """Protocol 1.18: parts ('P', status field = offset) then an end ('E', STREAM_END + tail) make the reply;
    parts again from the start (a rig's answer to a retry while it runs) and a whole reply are taken as well."""
    rep = _measure_reply(100)
    frames = P.in_parts(rep, 300)
    assert [f.type for f in frames] == [P.PART_TYPE] * 3 + [P.END_TYPE] and P.Limit.STREAM_PART_MAX == 112
    assert [f.status for f in frames[:3]] == [0, 112, 224] and len(frames[2].payload) == 76
    assert frames[-1].payload[:2] == (300).to_bytes(2, "little") and frames[-1].payload[2:] == rep.payload[300:]
    wire = b"".join(f.encode() for f in [Frame(P.PART_TYPE, Opcode.MEASURE, 8, 0, b"\x01"), *frames])
    a = P.ReplyAssembly(Opcode.MEASURE, 9)
    got = [r for f in Deframer().feed(wire) if (r := a.take(f)) is not None]
    assert got == [rep]  # the part of another request (seq 8) changed nothing
    again = P.ReplyAssembly(Opcode.MEASURE, 9)  # a part twice, then all of them again from the start
    assert [again.take(f) for f in [frames[0], frames[1], frames[1], frames[0], *frames]][-1] == rep
    assert P.ReplyAssembly(Opcode.MEASURE, 9).take(rep) == rep
    ended = P.in_parts(P.reply(P.request(Opcode.MEASURE, 9), P.Err.TIMEOUT), 0)  # no payload: the end alone
    assert P.ReplyAssembly(Opcode.MEASURE, 9).take(ended[-1]) == P.reply(P.request(Opcode.MEASURE, 9), P.Err.TIMEOUT)


def test_a_reply_whose_parts_were_lost_is_asked_for_again():
    rep = _measure_reply(100)
    parts = P.in_parts(rep, 720)
    for lost in range(len(parts) - 1):
        a = P.ReplyAssembly(Opcode.MEASURE, 9)
        assert all(a.take(f) is None for i, f in enumerate(parts) if i != lost)
        assert a.gap
        assert a.take(rep) == rep  # the rig's cache answers the retry whole


def test_a_measure_reply_comes_in_parts_only_to_a_host_that_takes_them():
    """The virtual rig streams a MEASURE to a host of 1.18 (as the firmware does), and not to one of 1.17."""
    from nandrig.boards.sim.server import VirtualRig
    from nandrig.virtual_chip.chip import VirtualChip

    pages = VirtualChip("mlc-small", 1).geometry.pages_per_block
    measure = P.request(Opcode.MEASURE, 2, P.MEASURE_REQ.pack(0, 2, 0, pages, 7, 0))
    sent = {}
    for version in [(1, 17), P.VERSION]:
        vr = VirtualRig(VirtualChip("mlc-small", 1))
        vr.handle(P.request(Opcode.HELLO, 1, P.HELLO_REQ.pack(*version, 5, 0)))
        rep = vr.handle(measure)
        sent[version] = vr.wire(rep)
        assert rep.status == P.Err.OK and len(rep.payload) == 2 * pages * P.MEASURE_PAGE.size
    assert sent[(1, 17)] == [rep]
    a = P.ReplyAssembly(Opcode.MEASURE, 2)
    assert [a.take(f) for f in sent[P.VERSION]][-1] == rep and len(sent[P.VERSION]) > 1
