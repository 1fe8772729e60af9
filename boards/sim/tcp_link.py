"""The virtual rig's link (the twin of firmware/rig/uart_link.c): a TCP loopback port, speaking the protocol byte
for byte (``nandrig sim serve``).

Several connections at once, each reply to the connection that asked; the
rig itself decides who may use it (HELLO: one host session holds it, others
are refused unless they take over, an observer only looks). A long command
keeps reading every socket between block operations, so it answers STATUS
and ABORT, keeps a CYCLE on another target to serve right after it (the
firmware runs it beside), and tells other requests BUSY. Nothing a client sends can stop the
server: bad frames are dropped, bad requests answered with errors, and an
unexpected failure inside a command is answered with INTERNAL.
"""
from __future__ import annotations

import select
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable

from nandrig.boards.sim.job import RigIO
from nandrig.boards.sim.server import VirtualRig
from nandrig import protocol as P
from nandrig.protocol import Deframer, Err, Frame


class _Connection:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.deframer = Deframer()
        self.closed = False

    def recv_frames(self, timeout: float) -> list[Frame]:
        if self.closed:
            return []
        ready, _, _ = select.select([self.sock], [], [], timeout)
        if not ready:
            return []
        try:
            data = self.sock.recv(65536)
        except OSError:
            data = b""
        if not data:
            self.closed = True
            return []
        return self.deframer.feed(data)

    def send(self, frame: Frame) -> None:
        if self.closed:
            return
        try:
            self.sock.sendall(frame.encode())
        except OSError:
            self.closed = True


class _Connections:
    """The open connections, and where each request came from so its reply goes back there."""

    def __init__(self) -> None:
        self.open: list[_Connection] = []
        self.asked: dict[tuple[int, int], _Connection] = {}  # (op, seq) of a request -> its connection

    def poll(self) -> list[Frame]:
        frames = []
        for conn in list(self.open):
            for f in conn.recv_frames(0.0):
                self.asked[(f.op, f.seq)] = conn
                frames.append(f)
            while len(self.asked) > 4096:  # requests that were never answered (frames a rig ignores)
                self.asked.pop(next(iter(self.asked)))
            if conn.closed:
                conn.sock.close()
                self.open.remove(conn)
        if not frames:  # a job polls between operations: let a host thread of this process (a test's) send
            time.sleep(0)
        return frames

    def send(self, *frames: Frame) -> None:
        """A reply (its parts, when it is streamed) to the connection that asked."""
        conn = self.asked.pop((frames[0].op, frames[0].seq), None)
        if conn is not None:
            for f in frames:
                conn.send(f)


def serve(rig: VirtualRig, port: int = 0, host: str = "127.0.0.1", ready: Callable[[int], None] | None = None,
          stop: threading.Event | None = None) -> None:
    stop = stop or threading.Event()
    conns = _Connections()
    io = RigIO(poll=conns.poll, send=conns.send)
    with socket.create_server((host, port)) as lsock:
        if ready:
            ready(lsock.getsockname()[1])
        while not stop.is_set():
            readable, _, _ = select.select([lsock] + [c.sock for c in conns.open], [], [], 0.1)
            if lsock in readable:
                new, _ = lsock.accept()
                new.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                conns.open.append(_Connection(new))
            pending = deque(conns.poll())
            while pending:
                frame = pending.popleft()
                try:
                    rep = rig.handle(frame, io)
                except Exception as e:  # a rig bug must not take the server down
                    print(f"nandrig sim: internal error on op 0x{frame.op:02x}: {e!r}", file=sys.stderr, flush=True)
                    rep = P.reply(frame, Err.INTERNAL)
                if rep is not None:
                    conns.send(*rig.wire(rep))
                else:
                    conns.asked.pop((frame.op, frame.seq), None)
                pending.extend(rig.take_deferred())  # kept while it ran: after what came before them
        for conn in conns.open:
            conn.sock.close()


def serve_in_thread(rig: VirtualRig) -> tuple[int, threading.Event, threading.Thread]:
    """Start a server on an ephemeral port in a daemon thread (tests, benchmarks)."""
    got: list[int] = []
    ready = threading.Event()
    stop = threading.Event()

    def on_ready(p: int) -> None:
        got.append(p)
        ready.set()

    th = threading.Thread(target=serve, args=(rig,), kwargs={"ready": on_ready, "stop": stop}, daemon=True)
    th.start()
    ready.wait(10)
    return got[0], stop, th
