"""Fixed-size records of the rig protocol as named field tables.

A :class:`Layout` is the one description of a record: Python packs and
unpacks it through the struct format derived here, the firmware reads and
writes it through the accessors generated into ``firmware/rig/protocol.h``,
and docs/protocol.md lists it from the same table.
"""
from __future__ import annotations

import re
import struct
from collections import namedtuple
from dataclasses import dataclass, field

from nandrig.errors import NandrigError

# field kinds: C type, struct code, bytes
_SCALARS = {
    "u8": ("uint8_t", "B", 1), "u16": ("uint16_t", "H", 2), "u32": ("uint32_t", "I", 4), "u64": ("uint64_t", "Q", 8),
    "i8": ("int8_t", "b", 1), "i16": ("int16_t", "h", 2),
}
_BYTES = re.compile(r"bytes(\d+)$")
_NUMPY = {"u8": "u1", "u16": "<u2", "u32": "<u4", "u64": "<u8", "i8": "i1", "i16": "<i2"}


class FieldRangeError(NandrigError, struct.error):
    """A value outside its protocol field (a user's count or temperature no request can carry)."""


@dataclass(frozen=True)
class Field:
    name: str
    kind: str  # u8 u16 u32 u64 i8 i16, or bytesN for N raw bytes
    doc: str = ""

    @property
    def size(self) -> int:
        m = _BYTES.match(self.kind)
        return int(m.group(1)) if m else _SCALARS[self.kind][2]

    @property
    def code(self) -> str:
        m = _BYTES.match(self.kind)
        return f"{m.group(1)}s" if m else _SCALARS[self.kind][1]

    @property
    def is_bytes(self) -> bool:
        return bool(_BYTES.match(self.kind))

    @property
    def ctype(self) -> str:
        return _SCALARS[self.kind][0]

    @property
    def bounds(self) -> tuple[int, int]:
        """The smallest and largest value a scalar field carries."""
        bits = 8 * self.size
        return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if self.kind.startswith("i") else (0, (1 << bits) - 1)

    def text(self) -> str:
        """How docs/protocol.md's command table names the field (with its range, when it has one)."""
        base = f"{self.size} bytes {self.name}" if self.is_bytes else f"{self.kind} {self.name}"
        return f"{base} ({self.doc})" if self.doc else base


@dataclass(frozen=True)
class Layout:
    """A little-endian record: its fields in wire order."""

    name: str  # C prefix, e.g. CYCLE_REQ
    fields: tuple[Field, ...]
    doc: str = ""
    _struct: struct.Struct = field(init=False, repr=False, compare=False)
    _tuple: type = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_struct", struct.Struct("<" + "".join(f.code for f in self.fields)))
        object.__setattr__(self, "_tuple", namedtuple(self.name.title().replace("_", ""),
                                                      [f.name for f in self.fields]))

    @property
    def size(self) -> int:
        return self._struct.size

    @property
    def format(self) -> str:
        return self._struct.format

    def offset(self, name: str) -> int:
        off = 0
        for f in self.fields:
            if f.name == name:
                return off
            off += f.size
        raise KeyError(name)

    def pack(self, *values, **named) -> bytes:
        if named:
            values = tuple(self._tuple(*values, **named))
        try:  # ints and int enums as they are (the common case, and every frame packs a few)
            return self._struct.pack(*values)
        except struct.error:
            pass
        try:
            return self._struct.pack(*(int(v) if not isinstance(v, (bytes, bytearray)) else v for v in values))
        except struct.error:
            for f, v in zip(self.fields, values):
                if not f.is_bytes and not f.bounds[0] <= int(v) <= f.bounds[1]:
                    raise FieldRangeError(f"{v} does not fit the rig protocol's {self.name} {f.name} ({f.kind}, "
                                          f"{f.bounds[0]}..{f.bounds[1]})") from None
            raise

    def unpack(self, buf: bytes, offset: int = 0):
        """The record at ``offset`` as a named tuple (struct.error when ``buf`` is too short)."""
        return self._tuple(*self._struct.unpack_from(buf, offset))

    unpack_from = unpack  # struct.Struct's name for the same

    def unpack_exact(self, buf: bytes):
        """The record that is all of ``buf`` (struct.error for any other length)."""
        if len(buf) != self.size:
            raise struct.error(f"{self.name} takes {self.size} bytes, not {len(buf)}")
        return self.unpack(buf)

    def dtype(self) -> list[tuple[str, str]]:
        """The record as numpy dtype fields (``np.dtype(layout.dtype())``)."""
        return [(f.name, f"S{f.size}" if f.is_bytes else _NUMPY[f.kind]) for f in self.fields]

    def text(self) -> str:
        return ", ".join(f.text() for f in self.fields) if self.fields else "—"


def layout(name: str, *fields: tuple[str, str] | tuple[str, str, str], doc: str = "") -> Layout:
    return Layout(name, tuple(Field(*f) for f in fields), doc)
