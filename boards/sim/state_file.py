"""The virtual rig's state file: the chip's format (nandrig.virtual_chip.state_file) with the rig's own records
(its reply cache's frames), and the lock that lets one process at a time serve a chip."""
from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from nandrig.errors import NandrigError
from nandrig.protocol.framing import Frame
from nandrig.virtual_chip.state_file import MAGIC, MAGIC_PARTS, encode, load_state, record, save_state

__all__ = ["MAGIC", "MAGIC_PARTS", "encode", "hold_state", "load_state", "save_state"]
record(Frame)  # the reply cache's entries


@contextlib.contextmanager
def hold_state(path: str | Path | None) -> Iterator[None]:
    """Held while one process serves the chip saved at ``path`` (a lock file beside it, released with the process
    however it ends): a second server of the same state is refused instead of keeping a copy of the chip whose
    saves would undo the first's wear. ``None``: a chip without state, nothing to hold."""
    if path is None:
        yield
        return
    lock = Path(f"{path}.lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            who = f.read().strip() or "another process"
            raise NandrigError(f"the virtual chip {path} is in use by {who}: one process drives a chip at a time (two "
                               "would each keep a copy of its wear); stop that one first") from None
        f.seek(0)
        f.truncate()
        f.write(f"pid {os.getpid()}")
        f.flush()
        yield
