"""Helpers for tests that start servers in other processes (labgrid, the live page)."""
from __future__ import annotations

import socket
import time


def free_ports(n: int) -> list[int]:
    """``n`` different TCP ports on 127.0.0.1 that nothing listens on now (held together while chosen, so the
    system cannot hand out one twice)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def listening(port: int) -> bool:
    """Whether something accepts TCP connections on 127.0.0.1:``port``."""
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def wait_for(predicate, timeout_s: float, what: str):
    """The first true value ``predicate()`` returns, polled every 0.2 s; an assertion after ``timeout_s``."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if (v := predicate()):
            return v
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")
