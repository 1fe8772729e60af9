"""One process per running campaign: an advisory lock file per campaign beside its database.

The lock is held while a process runs the campaign and goes with the process (the kernel releases it on
any exit, SIGKILL and power loss included), so a campaign whose state is "running" and whose lock is free
was interrupted and can be resumed, and one whose lock is held is live elsewhere.
"""
from __future__ import annotations

import fcntl
import os
from pathlib import Path

from nandrig.errors import NandrigError


def lock_path(db: Path, campaign_id: int) -> Path:
    return Path(f"{db}.locks") / f"campaign-{campaign_id}.lock"


class CampaignLock:
    def __init__(self, db: Path, campaign_id: int) -> None:
        self.path, self.campaign_id = lock_path(db, campaign_id), campaign_id
        self.fd: int | None = None

    def __enter__(self) -> "CampaignLock":
        self.path.parent.mkdir(exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise _held(self.campaign_id, holder) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self.fd = fd
        return self

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            os.ftruncate(self.fd, 0)
            os.close(self.fd)  # closing releases the lock
            self.fd = None


def _held(campaign_id: int, holder: str) -> NandrigError:
    return NandrigError(f"campaign {campaign_id} is running in another process (pid {holder}); "
                        "wait for it to end or stop that process")


def check_not_live(db: Path, campaign_id: int) -> None:
    """Refuse early (before a rig is opened) a campaign another process runs; the lock itself still decides."""
    if is_live(db, campaign_id):
        try:
            holder = lock_path(db, campaign_id).read_text().strip() or "?"
        except OSError:
            holder = "?"
        raise _held(campaign_id, holder)


def is_live(db: Path, campaign_id: int) -> bool:
    """Whether some process holds the campaign's lock now."""
    path = lock_path(db, campaign_id)
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
