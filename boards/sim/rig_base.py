"""What the virtual rig's parts share (firmware/rig/rig.h): a refusal, the link during a long command, the job."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from nandrig.protocol import Err, Frame


class Reject(Exception):
    """A request the rig answers with an error status."""

    def __init__(self, code: Err, payload: bytes = b"") -> None:
        super().__init__(code.name)
        self.code, self.payload = code, payload


@dataclass
class RigIO:
    """How a long command reaches the host while it runs."""

    poll: Callable[[], list[Frame]] = lambda: []
    send: Callable[[Frame], None] = lambda frame: None


@dataclass
class Job:
    op: int
    seq: int
    done: int = 0
    total: int = 0
    running: bool = False
    abort: bool = False

