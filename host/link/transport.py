"""Byte transports to a rig: any pyserial URL, or an in-process virtual rig."""
from __future__ import annotations

import contextlib
import random
import time
from typing import Protocol

from nandrig.errors import NandrigError
from nandrig.protocol import SERIAL_BAUD, Deframer


class Transport(Protocol):
    description: str

    def write(self, data: bytes) -> None: ...

    def read(self, timeout: float) -> bytes: ...

    def reopen(self) -> None: ...

    def close(self) -> None: ...


class SerialTransport:
    """pyserial's ``serial_for_url``: /dev/ttyUSB0, socket://host:port, loop://, rfc2217://..."""

    def __init__(self, url: str, baudrate: int = SERIAL_BAUD) -> None:
        if url.startswith(("socket://", "rfc2217://")):
            _host, _, port = url.split("://", 1)[1].partition("/")[0].rpartition(":")
            if not _host or not port.isdigit() or not 0 < int(port) < 65536:
                raise NandrigError(f"rig URL {url} needs a host and a port: {url.split('://')[0]}://HOST:PORT")
        self.description = url
        self.url, self.baudrate = url, baudrate
        self._ser = None
        self.reopen()

    def reopen(self) -> None:
        import serial

        self.close()
        try:
            # a local port is opened exclusively: a second process (a stray `rig info`) cannot interleave bytes
            local = "://" not in self.url
            self._ser = serial.serial_for_url(self.url, baudrate=self.baudrate, timeout=0.05, write_timeout=5,
                                              **({"exclusive": True} if local else {}))
        except (serial.SerialException, ValueError, OSError) as e:
            raise NandrigError(f"cannot open rig at {self.url}: {e}") from None

    def write(self, data: bytes) -> None:
        import serial

        try:
            self._ser.write(data)
            self._ser.flush()
        except (serial.SerialException, OSError) as e:
            raise NandrigError(f"lost the rig at {self.url}: {e}") from None

    def read(self, timeout: float) -> bytes:
        import serial

        try:
            self._ser.timeout = max(timeout, 0.0)
            first = self._ser.read(1)
            if not first:
                return b""
            waiting = self._ser.in_waiting
            return first + (self._ser.read(waiting) if waiting else b"")
        except (serial.SerialException, OSError) as e:
            raise NandrigError(f"lost the rig at {self.url}: {e}") from None

    def close(self) -> None:
        if self._ser is not None:
            try:
                self._ser.close()
            finally:
                self._ser = None


class InProcessTransport:
    """Frames go through the real encoder and deframer into a VirtualRig in this process."""

    def __init__(self, rig, hold: contextlib.AbstractContextManager | None = None) -> None:
        """``hold``: what this transport keeps while open (the chip's state, held from other processes)."""
        self.rig = rig
        self._hold = hold
        self.description = f"sim (in-process {rig.chip.profile.name}, seed {rig.chip.seed})"
        self._deframer = Deframer()
        self._out = bytearray()

    def write(self, data: bytes) -> None:
        for frame in self._deframer.feed(data):
            rep = self.rig.handle(frame)
            if rep is not None:
                self._out += b"".join(f.encode() for f in self.rig.wire(rep))

    def read(self, timeout: float) -> bytes:
        data, self._out = bytes(self._out), bytearray()
        if not data and timeout > 0:
            time.sleep(min(timeout, 0.001))
        return data

    def reopen(self) -> None:
        self._deframer = Deframer()

    def close(self) -> None:
        if self._hold is not None:
            self._hold.__exit__(None, None, None)
            self._hold = None


class FaultyTransport:
    """Drops, corrupts, duplicates and delays bytes in both directions (fault tests)."""

    def __init__(self, inner: Transport, seed: int = 0, drop: float = 0.0, corrupt: float = 0.0,
                 duplicate: float = 0.0, delay: float = 0.0) -> None:
        self.inner = inner
        self.description = f"faulty({inner.description})"
        self._rng = random.Random(seed)
        self.p = {"drop": drop, "corrupt": corrupt, "duplicate": duplicate, "delay": delay}
        self._queue = bytearray()  # bytes held back by a delay, in order
        self._holding = False
        self.injected = {"drop": 0, "corrupt": 0, "duplicate": 0, "delay": 0}

    def _mangle(self, data: bytes) -> bytes:
        out = bytearray()
        for b in data:
            r = self._rng.random
            if r() < self.p["drop"]:
                self.injected["drop"] += 1
                continue
            if r() < self.p["corrupt"]:
                self.injected["corrupt"] += 1
                b ^= 1 << self._rng.randrange(8)
            out.append(b)
            if r() < self.p["duplicate"]:
                self.injected["duplicate"] += 1
                out.append(b)
        return bytes(out)

    def write(self, data: bytes) -> None:
        self.inner.write(self._mangle(data))

    def read(self, timeout: float) -> bytes:
        data = self._mangle(self.inner.read(timeout))
        self._queue += data
        if self._holding:
            if self._rng.random() < 0.5:
                return b""
            self._holding = False
        elif data and self._rng.random() < self.p["delay"]:
            self._holding = True  # this and what follows arrive with a later read, in order
            self.injected["delay"] += 1
            return b""
        out = bytes(self._queue)
        self._queue.clear()
        return out

    def reopen(self) -> None:
        self._queue.clear()
        self._holding = False
        self.inner.reopen()

    def close(self) -> None:
        self.inner.close()
