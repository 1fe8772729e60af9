"""Framing of the rig protocol: COBS with a 0x00 delimiter around a body with a CRC-32 (zlib's)."""
from __future__ import annotations

import zlib
from dataclasses import dataclass

from cobs import cobs

from nandrig.protocol.spec import (END_TYPE, FRAME_CRC_BYTES, FRAME_HEAD, MAX_BODY, MAX_PAYLOAD, MIN_BODY, PART_TYPE,
                                   REPLY_TYPE, REQUEST_TYPE, STREAM_END, Err, Limit, Opcode)

__all__ = ["Frame", "Deframer", "ReplyAssembly", "cobs_encode", "cobs_decode", "request", "reply", "in_parts",
           "MAX_PAYLOAD"]


def cobs_encode(data: bytes) -> bytes:
    """COBS (Cheshire and Baker) as the `cobs` library encodes it: a run of 254 non-zero bytes at the end takes
    no further code byte. The firmware's encoder (frame.c) is tested byte-equal with it."""
    return cobs.encode(data)


def cobs_decode(data: bytes) -> bytes | None:
    """None for input that is not valid COBS."""
    try:
        return cobs.decode(data)
    except cobs.DecodeError:
        return None


@dataclass(frozen=True)
class Frame:
    type: int
    op: int
    seq: int
    status: int  # FRAME_HEAD's status_or_target: a reply's Err, a request's target
    payload: bytes

    @property
    def target(self) -> int:
        """A request's target: the chip (CE# k) it addresses."""
        return self.status

    def body(self) -> bytes:
        head = FRAME_HEAD.pack(self.type, self.op, self.seq & 0xFFFF, self.status) + self.payload
        return head + zlib.crc32(head).to_bytes(FRAME_CRC_BYTES, "little")

    def encode(self) -> bytes:
        return cobs_encode(self.body()) + b"\x00"

    @classmethod
    def parse(cls, body: bytes) -> "Frame | None":
        """A decoded body to a Frame; None when it is too short, too long or fails its CRC."""
        if not MIN_BODY <= len(body) <= MAX_BODY:
            return None
        if zlib.crc32(body[:-FRAME_CRC_BYTES]) != int.from_bytes(body[-FRAME_CRC_BYTES:], "little"):
            return None
        t, op, seq, status = FRAME_HEAD.unpack(body)
        return cls(t, op, seq, status, bytes(body[FRAME_HEAD.size:-FRAME_CRC_BYTES]))


class Deframer:
    """Splits a byte stream into frames at 0x00; bad frames vanish, the stream resynchronises."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self.dropped = 0

    def flush(self) -> None:
        """Forget a partial frame (its delimiter was lost: it would swallow the next frame)."""
        if self._buf:
            self._buf.clear()
            self.dropped += 1

    def feed(self, data: bytes) -> list[Frame]:
        frames = []
        self._buf += data
        while True:
            i = self._buf.find(0)
            if i < 0:
                if len(self._buf) > 2 * MAX_BODY:  # runaway garbage without a delimiter
                    self._buf.clear()
                    self.dropped += 1
                return frames
            raw = bytes(self._buf[:i])
            del self._buf[:i + 1]
            if not raw:
                continue
            body = cobs_decode(raw)
            frame = Frame.parse(body) if body is not None else None
            if frame is None:
                self.dropped += 1
            else:
                frames.append(frame)


def request(op: Opcode, seq: int, payload: bytes = b"", target: int = 0) -> Frame:
    return Frame(REQUEST_TYPE, int(op), seq, target, payload)


def reply(req: Frame, status: Err | int, payload: bytes = b"") -> Frame:
    return Frame(REPLY_TYPE, req.op, req.seq, int(status), payload)


def in_parts(rep: Frame, upto: int | None = None, part_bytes: int = Limit.STREAM_PART_MAX) -> list[Frame]:
    """A reply as a streaming rig sends it: 'P' frames of its payload up to ``upto`` (all of it by default), then
    an 'E' frame with its status and the rest."""
    upto = len(rep.payload) if upto is None else min(upto, len(rep.payload))
    parts = [Frame(PART_TYPE, rep.op, rep.seq, at, rep.payload[at:min(at + part_bytes, upto)])
             for at in range(0, upto, part_bytes)]
    return parts + [Frame(END_TYPE, rep.op, rep.seq, rep.status, STREAM_END.pack(upto) + rep.payload[upto:])]


class ReplyAssembly:
    """The reply to one request, whole ('A') or in parts ('P' frames, then an 'E'; docs/protocol.md). Parts may
    repeat (a rig sends them again from the start when the request is retried while it runs); an 'E' whose
    offset the parts received do not reach leaves a ``gap``: the request is to be sent again, and a rig that has
    finished answers it from its reply cache."""

    def __init__(self, op: int, seq: int) -> None:
        self.op, self.seq = op, seq
        self._payload = bytearray()  # bytes 0 .. len received without a hole
        self.gap = False

    def take(self, f: Frame) -> Frame | None:
        """The whole reply once ``f`` completes it; None for frames of other requests and for parts."""
        if f.seq != self.seq or f.op != self.op:
            return None
        if f.type == REPLY_TYPE:
            return f
        if f.type == PART_TYPE:
            if f.status <= len(self._payload):  # a part beyond a hole is dropped; the rig's resend brings it again
                self._payload[f.status:f.status + len(f.payload)] = f.payload
            return None
        if f.type != END_TYPE or len(f.payload) < STREAM_END.size:
            return None
        (offset,) = STREAM_END.unpack_from(f.payload)
        if offset > len(self._payload):
            self.gap = True
            return None
        return Frame(REPLY_TYPE, f.op, f.seq, f.status, bytes(self._payload[:offset]) + f.payload[STREAM_END.size:])
