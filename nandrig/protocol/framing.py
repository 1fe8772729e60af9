"""Framing of the rig protocol: COBS with a 0x00 delimiter around a body with a CRC-32 (zlib's)."""
from __future__ import annotations

import zlib
from dataclasses import dataclass

from cobs import cobs

from nandrig.protocol.spec import (FRAME_CRC_BYTES, FRAME_HEAD, MAX_BODY, MAX_PAYLOAD, MIN_BODY, REPLY_TYPE,
                                   REQUEST_TYPE, Err, Opcode)

__all__ = ["Frame", "Deframer", "cobs_encode", "cobs_decode", "request", "reply", "MAX_PAYLOAD"]


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
