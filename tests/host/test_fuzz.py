"""10,000 random and mutated frames at a real ``nandrig sim serve``: it stays up and keeps its word."""
import random
import re
import socket
import struct
import subprocess
import sys
import time

import pytest

from nandrig import protocol as P
from nandrig.protocol import Deframer, Err, Frame, Opcode
from nandrig.host.link.rig import Rig

VALID = [
    (Opcode.HELLO, struct.pack("<HHI", 1, 0, 5)), (Opcode.INFO, b""), (Opcode.TIME, b""), (Opcode.READ_ID, b"\x20"),
    (Opcode.ERASE, struct.pack("<IB", 3, 0)), (Opcode.PROGRAM, P.PROGRAM_HEAD.pack(3, 0, 0, 0) + b"\1\0\0\0"),
    (Opcode.READ, struct.pack("<IHBBI", 3, 0, 4, 2, 1)), (Opcode.MEASURE, struct.pack("<IHHHI", 3, 1, 0, 32, 1)),
    (Opcode.CYCLE, struct.pack("<IHIIB", 4, 2, 3, 9, 0)), (Opcode.SCAN_BAD, struct.pack("<IH", 0, 16)),
    (Opcode.READ_DISTURB, struct.pack("<IHI", 5, 1, 1000)), (Opcode.ADVANCE, struct.pack("<Qh", 10**9, 2500)),
    (Opcode.SET_READ_OFFSET, b"\xfc"), (Opcode.STATUS, b""), (Opcode.READ_PARAM_PAGE, b""),
]
ABORT_EVERY = 25


def fuzz_frames(n: int, rng: random.Random):
    for i in range(n):
        if i % ABORT_EVERY == ABORT_EVERY - 1:  # stop any fuzzed long command, so later frames reach the dispatcher
            yield P.request(Opcode.ABORT, rng.randrange(65536)).encode()
            continue
        kind = i % 4
        if kind == 0:  # noise
            yield bytes(rng.randrange(256) for _ in range(rng.randrange(1, 60))) + b"\x00"
        elif kind == 1:  # a valid frame with bytes flipped after encoding (fails CRC or COBS)
            op, payload = rng.choice(VALID)
            raw = bytearray(P.request(op, rng.randrange(65536), payload).encode())
            for _ in range(rng.randrange(1, 4)):
                raw[rng.randrange(len(raw) - 1)] = rng.randrange(1, 256)
            yield bytes(raw)
        elif kind == 2:  # good CRC, mutated payload: wrong lengths, wild values, random opcodes
            op, payload = rng.choice(VALID)
            body = bytearray(payload)
            action = rng.randrange(4)
            if action == 0 and body:
                del body[rng.randrange(len(body)):]
            elif action == 1:
                body += bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9)))
            elif action == 2 and body:
                for _ in range(rng.randrange(1, 4)):
                    body[rng.randrange(len(body))] = rng.randrange(256)
            else:
                op = rng.randrange(256)
            yield Frame(P.REQUEST_TYPE, int(op), rng.randrange(65536), rng.randrange(65536), bytes(body)).encode()
        else:  # a reply-typed frame, which a rig must ignore, or a valid request
            op, payload = rng.choice(VALID)
            t = P.REPLY_TYPE if rng.random() < 0.5 else P.REQUEST_TYPE
            yield Frame(t, int(op), rng.randrange(65536), 0, payload).encode()


@pytest.fixture
def server():
    proc = subprocess.Popen([sys.executable, "-m", "nandrig", "sim", "serve", "--port", "0", "--chip", "mlc-small",
                             "--seed", "3"], stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    port = int(re.search(r":(\d+)$", line.strip()).group(1))
    yield proc, port
    proc.terminate()
    proc.wait(10)


def test_fuzz_server_stays_up_answers_errors_and_then_serves(server):
    proc, port = server
    rng = random.Random(2024)
    statuses = {}
    d = Deframer()
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.setblocking(False)
        for i, frame in enumerate(fuzz_frames(10_000, rng)):
            _send(s, frame)
            # wait for each ABORT's answer: what follows it then meets an idle rig however loaded the
            # machine is (otherwise a slow server answers the rest of a window with BUSY)
            until = time.monotonic() + (2.0 if i % ABORT_EVERY == ABORT_EVERY - 1 else 0.0)
            while True:
                got = _drain(s, d)
                for f in got:
                    statuses[f.status] = statuses.get(f.status, 0) + 1
                if time.monotonic() >= until or any(f.op == Opcode.ABORT for f in got):
                    break
                time.sleep(0.001)
        end = time.monotonic() + 5
        while time.monotonic() < end:
            for f in _drain(s, d):
                statuses[f.status] = statuses.get(f.status, 0) + 1
            time.sleep(0.05)
    assert proc.poll() is None, "the server died"
    assert statuses.get(Err.BAD_FRAME, 0) > 100 and statuses.get(Err.UNKNOWN_COMMAND, 0) > 50
    assert statuses.get(Err.OK, 0) > 100
    assert Err.INTERNAL not in statuses, statuses
    with Rig.open(f"socket://127.0.0.1:{port}", timeout=2.0) as rig:
        if rig.status().busy:  # a fuzzed CYCLE may still run: stop it like an operator would
            rig.abort()
        assert rig.info().blocks == 16
        assert rig.read_id(0x20) == b"ONFI"


def _send(s: socket.socket, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            n = s.send(view)
            view = view[n:]
        except BlockingIOError:
            time.sleep(0.001)


def _drain(s: socket.socket, d: Deframer) -> list[Frame]:
    out = []
    while True:
        try:
            data = s.recv(65536)
        except BlockingIOError:
            return out
        if not data:
            return out
        out += d.feed(data)
