"""A link that drops, corrupts, duplicates and delays bytes: every command answered once, no P/E counted twice."""
import random
import socket
import struct
import time

import pytest

from nandrig.virtual_chip.chip import VirtualChip
from nandrig.boards.sim.server import VirtualRig
from nandrig.boards.sim.tcp_link import serve_in_thread
from nandrig import protocol as P
from nandrig.protocol import Deframer, Err, Opcode
from nandrig.host.link.rig import Rig, RigError
from nandrig.host.link.transport import FaultyTransport, InProcessTransport, SerialTransport


def workload(rig: Rig, vr: VirtualRig, steps: int, seed: int) -> dict:
    rng = random.Random(seed)
    expected = {b: vr.chip.pe_count(b) for b in range(vr.chip.geometry.blocks)}
    good = [b for b in range(vr.chip.geometry.blocks) if b not in vr.chip.factory_bad]
    answered = 0
    for _ in range(steps):
        kind = rng.choice(["erase", "cycle", "program", "read", "measure", "time"])
        b = rng.choice(good)
        if kind == "erase":
            assert not rig.erase(b).fail
            expected[b] += 1
        elif kind == "cycle":
            n, count = rng.randint(1, 3), rng.randint(1, 40)
            blocks = [x for x in range(b, min(b + n, vr.chip.geometry.blocks))]
            if any(x in vr.chip.factory_bad for x in blocks):
                continue
            res = rig.cycle(blocks[0], len(blocks), count, seed=rng.randrange(1 << 31))
            for x in blocks:
                assert res.done[x] == count
                expected[x] += count
        elif kind == "program":
            rig.erase(b)
            expected[b] += 1
            assert not rig.program(b, 0, seed=rng.randrange(1 << 31)).fail
        elif kind == "read":
            assert len(rig.read(b, rng.randrange(32), seed=1).codewords) == 2
        elif kind == "measure":
            assert rig.measure(b, 1, seed=1).errors.shape == (1, 32)
        else:
            rig.time_ns()
        answered += 1
    for blk, pe in expected.items():
        assert vr.chip.pe_count(blk) == pe, f"block {blk}: chip has {vr.chip.pe_count(blk)} P/E, expected {pe}"
    return {"answered": answered}


FAULTS = dict(drop=0.002, corrupt=0.002, duplicate=0.002, delay=0.05)


def test_faulty_link_in_process_exactly_once():
    vr = VirtualRig(VirtualChip("mlc-small", seed=5))
    shim = FaultyTransport(InProcessTransport(vr), seed=1, **FAULTS)
    workload(Rig(shim, timeout=0.02, retries=40), vr, 250, seed=2)
    assert min(shim.injected.values()) >= 10, shim.injected  # the link really was bad


@pytest.mark.slow
def test_faulty_link_over_tcp_exactly_once():
    vr = VirtualRig(VirtualChip("mlc-small", seed=6))
    port, stop, th = serve_in_thread(vr)
    try:
        shim = FaultyTransport(SerialTransport(f"socket://127.0.0.1:{port}"), seed=3, **FAULTS)
        rig = Rig(shim, timeout=0.1, retries=40)
        workload(rig, vr, 150, seed=4)
        rig.close()
        assert min(shim.injected.values()) >= 5, shim.injected
    finally:
        stop.set()
        th.join(5)


def test_lost_replies_are_recovered_without_re_execution():
    """Every reply to ERASE is swallowed once: the retry must be answered from the cache."""
    vr = VirtualRig(VirtualChip("mlc-small", seed=7))

    class SwallowFirstReply(InProcessTransport):
        def __init__(self, rig):
            super().__init__(rig)
            self.seen = set()

        def read(self, timeout):
            data = super().read(timeout)
            for f in Deframer().feed(data):
                if f.op == Opcode.ERASE and f.seq not in self.seen:
                    self.seen.add(f.seq)
                    return b""
            return data

    rig = Rig(SwallowFirstReply(vr), timeout=0.01, retries=5)
    for _ in range(10):
        rig.erase(3)
    assert vr.chip.pe_count(3) == 10


def test_dead_link_raises_a_clear_error():
    vr = VirtualRig(VirtualChip("mlc-small"))
    rig = Rig(InProcessTransport(vr), timeout=0.01, retries=2)
    rig.t = FaultyTransport(rig.t, drop=1.0)
    with pytest.raises(RigError, match="did not answer ERASE after 3 attempts"):
        rig.erase(1)
    assert vr.chip.pe_count(1) == 0


def test_status_and_abort_during_a_long_cycle_over_tcp():
    vr = VirtualRig(VirtualChip("mlc-small", seed=8), exact=True)
    port, stop, th = serve_in_thread(vr)
    try:
        with socket.create_connection(("127.0.0.1", port)) as s:
            d = Deframer()
            got = {}

            def ask(op, seq, payload=b""):
                s.sendall(P.request(op, seq, payload).encode())

            def wait_for(seq, timeout=10):
                end = time.monotonic() + timeout
                while seq not in got and time.monotonic() < end:
                    s.settimeout(0.2)
                    try:
                        data = s.recv(65536)
                    except socket.timeout:
                        continue
                    got.update((f.seq, f) for f in d.feed(data))
                assert seq in got, f"no reply to seq {seq}"
                return got.pop(seq)

            ask(Opcode.CYCLE, 1, struct.pack("<IHIIB", 2, 2, 100_000, 5, 0))
            time.sleep(0.3)
            ask(Opcode.STATUS, 2)
            st = P.STATUS_REPLY.unpack(wait_for(2).payload)
            assert st[0] == 1 and st[1] == Opcode.CYCLE and st[2] == 1 and st[3] > 0 and st[4] == 200_000
            ask(Opcode.TIME, 3)
            assert wait_for(3).status == Err.BUSY
            ask(Opcode.ABORT, 4)
            assert wait_for(4).payload == b"\x01"
            rep = wait_for(1)
            assert rep.status == Err.ABORTED
            done = [P.CYCLE_BLOCK.unpack_from(rep.payload, 4 + i * 5)[0] for i in range(2)]
            assert 0 < min(done) and max(done) - min(done) <= 1  # round by round
            assert [vr.chip.pe_count(2), vr.chip.pe_count(3)] == done
    finally:
        stop.set()
        th.join(5)
