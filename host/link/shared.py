"""One link to a rig shared by the campaigns of one host process, a :class:`~nandrig.host.link.rig.Rig` per target.

The rig serves one host session; this process's campaigns on its targets all
speak as that session, each through a :class:`LinkView` of the one transport.
Every byte the rig sends reaches every view (a Rig keeps the replies to its own
requests by sequence number, which the link draws from one counter), and the
link's :attr:`~SharedLink.turn` orders what the rig's reply cache needs
ordered: it keeps one reply per session, the latest, so a campaign holds the
turn from journaling a request until its reply is recorded. A CYCLE on a rig
that runs it as a job (``Cap.CYCLE_JOBS``) lets the turn go once sent: its
reply is kept by its target's job, not the cache.
"""
from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence

from nandrig.errors import NandrigError
from nandrig.host.link.place import SCHEME as PLACE_SCHEME
from nandrig.host.link.place import PlaceLease
from nandrig.host.link.rig import Rig
from nandrig.host.link.transport import SerialTransport, Transport


class SharedLink:
    def __init__(self, transport: Transport, on_close: Callable[[], None] | None = None) -> None:
        """``on_close``: called once the last view closed the transport (a labgrid place released)."""
        self.transport, self._on_close = transport, on_close
        self.description = transport.description
        self.turn = FifoLock()
        self._write = threading.Lock()
        self._read = threading.Lock()  # one thread reads the transport at a time, for every view
        self._bytes = threading.Lock()  # the views' pending bytes
        self._seq = random.randrange(1 << 16)
        self._seq_lock = threading.Lock()
        self._views: list[LinkView] = []

    @property
    def users(self) -> int:
        return len(self._views)

    def view(self) -> LinkView:
        v = LinkView(self)
        self._views.append(v)
        return v

    def next_seq(self) -> int:
        with self._seq_lock:
            self._seq = (self._seq + 1) & 0xFFFF
            return self._seq

    def write(self, data: bytes) -> None:
        with self._write:
            self.transport.write(data)

    def pump(self, view: LinkView, timeout: float) -> None:
        """Read the transport once for every view (unless another thread is: then wait up to ``timeout``)."""
        if not self._read.acquire(timeout=max(timeout, 0.0)):
            return
        try:
            if view.pending:  # bytes came in while this thread waited for its turn to read
                return
            data = self.transport.read(timeout)
        finally:
            self._read.release()
        if data:
            with self._bytes:
                for v in self._views:
                    v.pending += data

    def take(self, view: LinkView) -> bytes:
        with self._bytes:
            data, view.pending = bytes(view.pending), bytearray()
        return data

    def reopen(self) -> None:
        with self._write, self._read, self._bytes:
            for v in self._views:
                v.pending = bytearray()
            self.transport.reopen()

    def detach(self, view: LinkView) -> None:
        with self._bytes:
            self._views.remove(view)
            last = not self._views
        if last:
            self.transport.close()
            if self._on_close is not None:
                self._on_close()


class FifoLock:
    """A lock granted in the order it was asked for: campaigns sharing a link take turns, none starved by one that
    asks again the moment it lets go (threading's locks promise no order)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._next = self._serving = 0

    def acquire(self) -> None:
        with self._cond:
            ticket, self._next = self._next, self._next + 1
            self._cond.wait_for(lambda: self._serving == ticket)

    def release(self) -> None:
        with self._cond:
            self._serving += 1
            self._cond.notify_all()


class LinkView:
    """A :class:`~nandrig.host.link.transport.Transport` for one Rig on a :class:`SharedLink`."""

    def __init__(self, link: SharedLink) -> None:
        self.link = link
        self.description = link.description
        self.pending = bytearray()

    @property
    def last(self) -> bool:
        """Whether this view is the link's only one left (its Rig releases the rig on closing)."""
        return self.link.users == 1

    def next_seq(self) -> int:
        return self.link.next_seq()

    def write(self, data: bytes) -> None:
        self.link.write(data)

    def read(self, timeout: float) -> bytes:
        deadline = time.monotonic() + timeout
        while True:
            if self.pending:
                return self.link.take(self)
            left = deadline - time.monotonic()
            if left <= 0:
                return b""
            self.link.pump(self, min(left, 0.05))

    def reopen(self) -> None:
        self.link.reopen()

    def close(self) -> None:
        self.link.detach(self)


def open_targets(url: str, targets: Sequence[int], **kw) -> dict[int, Rig]:
    """A Rig for each of ``targets`` over one link to the rig at ``url`` (a pyserial URL or a labgrid place), all
    one host session; ``kw`` as :class:`Rig` takes it (``take_over`` asked once, by the first)."""
    if url == "sim":
        raise NandrigError("--rig sim drives one chip: several targets at once are served by nandrig sim serve "
                           "--targets (then --rig socket://localhost:PORT)")
    lease = None
    if url.startswith(PLACE_SCHEME):
        lease = PlaceLease(url)
        url = lease.rig_url
    try:
        link = SharedLink(SerialTransport(url), on_close=lease.release if lease else None)
    except BaseException:
        if lease:
            lease.release()
        raise
    rigs: dict[int, Rig] = {}
    try:
        for k in targets:
            view = link.view()
            try:
                rigs[k] = Rig(view, target=k, **kw)
            except BaseException:
                view.close()
                raise
            kw = {**kw, "session": rigs[k].session, "take_over": False}  # the rig is this session's now
    except BaseException:
        for r in rigs.values():
            r.close()
        raise
    return rigs
