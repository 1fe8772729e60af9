"""``nandrig sim serve``: the virtual rig on a TCP loopback port, speaking the protocol byte for byte.

One host at a time, as on a serial line: a new connection replaces the old
one. A long command keeps reading the socket between block operations so it
can answer STATUS and ABORT. Nothing a client sends can stop the server: bad
frames are dropped, bad requests answered with errors, and an unexpected
failure inside a command is answered with INTERNAL.
"""
from __future__ import annotations

import select
import socket
import sys
import threading
from collections.abc import Callable

from nandrig.boards.sim.rig import RigIO, VirtualRig
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


def serve(rig: VirtualRig, port: int = 0, host: str = "127.0.0.1", ready: Callable[[int], None] | None = None,
          stop: threading.Event | None = None) -> None:
    stop = stop or threading.Event()
    with socket.create_server((host, port)) as lsock:
        if ready:
            ready(lsock.getsockname()[1])
        conn: _Connection | None = None
        while not stop.is_set():
            watch = [lsock] + ([conn.sock] if conn and not conn.closed else [])
            readable, _, _ = select.select(watch, [], [], 0.1)
            if lsock in readable:
                new, _ = lsock.accept()
                new.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                if conn:
                    conn.sock.close()
                conn = _Connection(new)
                continue
            if conn is None or conn.closed:
                if conn is not None:
                    conn.sock.close()
                    conn = None
                continue
            io = RigIO(poll=lambda c=conn: c.recv_frames(0.0), send=conn.send)
            for frame in conn.recv_frames(0.0):
                try:
                    rep = rig.handle(frame, io)
                except Exception as e:  # a rig bug must not take the server down
                    print(f"nandrig sim: internal error on op 0x{frame.op:02x}: {e!r}", file=sys.stderr, flush=True)
                    rep = P.reply(frame, Err.INTERNAL)
                if rep is not None:
                    conn.send(rep)
        if conn:
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
