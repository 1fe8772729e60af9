"""What the virtual rig's parts share (firmware/rig/rig.h): a request refused with an error status."""
from __future__ import annotations

from nandrig.protocol import Err


class Reject(Exception):
    """A request the rig answers with an error status."""

    def __init__(self, code: Err, payload: bytes = b"") -> None:
        super().__init__(code.name)
        self.code, self.payload = code, payload
