"""The rig protocol of docs/protocol.md: framing, opcodes, error codes, payload layouts."""
from __future__ import annotations

import enum
import struct
import zlib
from dataclasses import dataclass

VERSION = (1, 1)
MAX_PAYLOAD = 16_384
HEADER = struct.Struct("<BBHH")
MIN_BODY = HEADER.size + 4
MAX_BODY = HEADER.size + MAX_PAYLOAD + 4
REQUEST, REPLY = 0x52, 0x41


class Op(enum.IntEnum):
    HELLO = 0x01
    INFO = 0x02
    RESET = 0x03
    READ_ID = 0x04
    READ_PARAM_PAGE = 0x05
    SCAN_BAD = 0x06
    ERASE = 0x10
    PROGRAM = 0x11
    READ = 0x12
    SET_READ_OFFSET = 0x13
    CYCLE = 0x14
    MEASURE = 0x15
    READ_DISTURB = 0x16
    TIME = 0x20
    ADVANCE = 0x21
    STATUS = 0x30
    ABORT = 0x31
    FLARES_CONFIG = 0x40
    FLARES_PROGRAM = 0x41
    FLARES_READ = 0x42


class Err(enum.IntEnum):
    OK = 0
    BAD_FRAME = 1
    UNKNOWN_COMMAND = 2
    VERSION_MISMATCH = 3
    OUT_OF_RANGE = 4
    BAD_BLOCK = 5
    CHIP_FAIL = 6
    BUSY = 7
    ABORTED = 8
    UNSUPPORTED = 9
    BAD_PARAMETER = 10
    TIMEOUT = 11
    INTERNAL = 12
    NO_SPACE = 13


class Flag(enum.IntFlag):
    FORCE = 0x01
    EXPLICIT = 0x02  # PROGRAM: payload carries the bytes
    COMPARE = 0x02  # READ: count errors against the pattern
    RAW = 0x04  # READ: return the page bytes


class RigKind(enum.IntEnum):
    VIRTUAL = 1
    RTL = 2
    HARDWARE = 3


class Cap(enum.IntFlag):
    VIRTUAL_TIME = 0x1
    BCH = 0x2
    RAW_READ = 0x4
    FLARES = 0x8


class Source(enum.IntEnum):
    """Where FLARES_READ found the page's profile."""

    RAM = 0
    SPARE = 1  # the record in the page's spare area (the rig had none in RAM)
    NONE = 2  # an erased record: the page was not written by FLARES_PROGRAM
    UNREADABLE = 3  # the record's own code could not correct it


class Decide(enum.IntFlag):
    """FLARES decision flags in FLARES_PROGRAM and FLARES_READ replies."""

    ALARM = 0x1  # rewrite alarm: the data is older than its t protects for
    INVALIDATE = 0x2  # too many decode failures: the page's data should be moved
    NEW_PROFILE = 0x4  # the page had no profile; FLARES started one at the model's t


# request/reply layouts of fixed-size payloads (struct formats, little-endian)
REQ = {
    Op.HELLO: "<HHI", Op.INFO: "<", Op.RESET: "<", Op.READ_ID: "<B", Op.READ_PARAM_PAGE: "<",
    Op.SCAN_BAD: "<IH", Op.ERASE: "<IB", Op.READ: "<IHBBI", Op.SET_READ_OFFSET: "<b",
    Op.CYCLE: "<IHIIB", Op.MEASURE: "<IHHHI", Op.READ_DISTURB: "<IHI", Op.TIME: "<",
    Op.ADVANCE: "<Qh", Op.STATUS: "<", Op.ABORT: "<",
    Op.FLARES_CONFIG: "<HHHBBBI", Op.FLARES_PROGRAM: "<IHBII", Op.FLARES_READ: "<IHBI",
}
PROGRAM_HEAD = struct.Struct("<IHBB")
STATUS_BUSY = struct.Struct("<BI")  # chip_status, busy_ns
CODEWORD = struct.Struct("<HHh")
CYCLE_BLOCK = struct.Struct("<IB")
MEASURE_PAGE = struct.Struct("<HHI")
STATUS_REPLY = struct.Struct("<BBHII")
INFO_REPLY = struct.Struct("<5s12s20sIHIIBHBBHBI")
HELLO_REPLY = struct.Struct("<HHBIB")
FLARES_CONFIG_REPLY = struct.Struct("<BBH")  # t_min, t_cap, profile slots
FLARES_DECISION = struct.Struct("<BBBB")  # t used, zone, t computed, Decide flags
FLARES_READ_TAIL = struct.Struct("<BHB")  # profile source, deterr, failed codewords


def cobs_encode(data: bytes) -> bytes:
    out = bytearray()
    block = bytearray()
    for b in data:
        if b == 0:
            out.append(len(block) + 1)
            out += block
            block.clear()
        else:
            block.append(b)
            if len(block) == 254:
                out.append(255)
                out += block
                block.clear()
    out.append(len(block) + 1)
    out += block
    return bytes(out)


def cobs_decode(data: bytes) -> bytes | None:
    """None for input that is not valid COBS."""
    out = bytearray()
    i, n = 0, len(data)
    while i < n:
        code = data[i]
        end = i + code
        if code == 0 or end > n:
            return None
        chunk = data[i + 1:end]
        if 0 in chunk:
            return None
        out += chunk
        i = end
        if code < 255 and i < n:
            out.append(0)
    return bytes(out)


@dataclass(frozen=True)
class Frame:
    type: int
    op: int
    seq: int
    status: int
    payload: bytes

    def body(self) -> bytes:
        head = HEADER.pack(self.type, self.op, self.seq & 0xFFFF, self.status) + self.payload
        return head + struct.pack("<I", zlib.crc32(head))

    def encode(self) -> bytes:
        return cobs_encode(self.body()) + b"\x00"

    @classmethod
    def parse(cls, body: bytes) -> "Frame | None":
        """A decoded body to a Frame; None when it is too short, too long or fails its CRC."""
        if not MIN_BODY <= len(body) <= MAX_BODY:
            return None
        (crc,) = struct.unpack_from("<I", body, len(body) - 4)
        if zlib.crc32(body[:-4]) != crc:
            return None
        t, op, seq, status = HEADER.unpack_from(body)
        return cls(t, op, seq, status, bytes(body[HEADER.size:-4]))


class Deframer:
    """Splits a byte stream into frames at 0x00; bad frames vanish, the stream resynchronises."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self.dropped = 0

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


def request(op: Op, seq: int, payload: bytes = b"") -> Frame:
    return Frame(REQUEST, int(op), seq, 0, payload)


def reply(req: Frame, status: Err | int, payload: bytes = b"") -> Frame:
    return Frame(REPLY, req.op, req.seq, int(status), payload)
