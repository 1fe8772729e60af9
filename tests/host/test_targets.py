"""Several chips on one rig's bus (protocol 1.13): each request names its target (CE#), each target is its own
chip with its own history, every chip ages on the rig's one clock, and a chip moved between sockets is refused."""
import json
import signal
import socket
import subprocess
import sys
import time

import pytest

from nandrig.boards.sim.server import VirtualRig
from nandrig.boards.sim.target import parse_targets
from nandrig.boards.sim.tcp_link import serve_in_thread
from nandrig.errors import NandrigError
from nandrig.host.engine.campaigns import create, run
from nandrig.host.engine.chip_access import open_for_campaign, open_for_chip
from nandrig.host.link.rig import Rig, RigError
from nandrig.host.link.transport import InProcessTransport
from nandrig.host.storage.store import Store
from nandrig import protocol as P
from nandrig.protocol import Deframer, Err, Opcode
from nandrig.virtual_chip.chip import VirtualChip

PROFILE = "mlc-small"


def three() -> VirtualRig:
    """Chips on targets 0, 1 and 3; socket 2 empty."""
    return VirtualRig(VirtualChip(PROFILE, 1), others={1: VirtualChip(PROFILE, 2), 3: VirtualChip("mlc-16k", 3)})


def test_each_target_answers_for_its_own_chip_and_an_empty_socket_for_none():
    vr = three()
    rigs = {k: Rig(InProcessTransport(vr), target=k, take_over=True) for k in (0, 1, 3)}
    infos = {k: r.info() for k, r in rigs.items()}
    assert {k: (i.target, i.targets) for k, i in infos.items()} == {k: (k, (0, 1, 3)) for k in (0, 1, 3)}
    assert len({i.unique_id for i in infos.values()}) == 3 and infos[3].page_bytes == 16384
    rigs[1].erase(4)
    rigs[1].program(4, 0, seed=5)
    assert [vr.targets[k].chip.pe_count(4) for k in (0, 1, 3)] == [0, 1, 0]  # only target 1's chip was worn
    assert rigs[1].read(4, 0, seed=5).errors < 5 and rigs[0].read(4, 0, raw=True).data[:4] == b"\xff" * 4
    with pytest.raises(NandrigError, match=r"no chip on target 2 \(targets with a chip: 0, 1, 3\)"):
        Rig(InProcessTransport(vr), target=2, take_over=True).info()
    rigs[0].target = 2  # a request to the empty socket itself
    with pytest.raises(RigError) as e:
        rigs[0].erase(4)
    assert e.value.code == Err.OUT_OF_RANGE


def test_every_chip_ages_on_the_rigs_clock():
    """A chip that idled while another worked, or sat in the oven beside it, has aged as long."""
    vr = three()
    r = Rig(InProcessTransport(vr))
    r.erase(2)
    for p in range(8):  # target 0 works; the others idle
        r.program(2, p, seed=1)
    r.advance(hours=10, temp_c=85)
    r.target = 1
    r.read(2, 0, raw=True)  # served: its chip catches up first
    chips = {k: t.chip for k, t in vr.targets.items()}
    assert chips[1].clock_ns > chips[0].clock_ns  # caught up with target 0's work and bake, then read
    assert abs(chips[1].equiv_h - chips[0].equiv_h) < 1e-6 * chips[0].equiv_h  # the same bake, the same idle time
    assert chips[3].equiv_h == pytest.approx(chips[0].equiv_h, rel=1e-3)  # baked too, though never served since
    assert r.time_ns() == max(c.clock_ns for c in chips.values())


def test_a_rigs_targets_keep_their_state_across_a_restart(tmp_path):
    state = tmp_path / "rig.state"
    others = {1: (PROFILE, 2), 3: ("mlc-16k", 3)}
    vr = VirtualRig.open(PROFILE, 1, state, others)
    r = Rig(InProcessTransport(vr), target=3)
    r.cycle(5, 1, 7, seed=1)
    r.close()
    again = VirtualRig.open(PROFILE, 1, state, others)
    assert {k: t.chip.pe_count(5) for k, t in again.targets.items()} == {0: 0, 1: 0, 3: 7}
    assert again.targets[3].chip.instance == vr.targets[3].chip.instance  # the same chip, not a fresh one
    with pytest.raises(NandrigError, match="holds mlc-small seed 1 on target 0, mlc-small seed 2 on target 1, "
                                           "mlc-16k seed 3 on target 3, not"):
        VirtualRig.open(PROFILE, 1, state, {1: (PROFILE, 2)})


def test_targets_spec():
    assert parse_targets("3", "mlc-3x", 4) == {1: ("mlc-3x", 5), 2: ("mlc-3x", 6)}
    assert parse_targets(".,mlc-16k:5,-,mlc-3x:9", "mlc-3x", 0) == {1: ("mlc-16k", 5), 3: ("mlc-3x", 9)}
    for bad in ("9", "0", "mlc-3x:1", ".,mlc-3x", ".," + ",".join(["-"] * 8)):
        with pytest.raises(NandrigError, match="--targets"):
            parse_targets(bad, "mlc-3x", 0)


def test_campaigns_on_two_targets_keep_two_histories_and_chips_swapped_between_sockets_are_refused(run_cli, tmp_path):
    """Two campaigns, one per target, each on its own chip in the store; the chips swapped between the sockets
    before resume: refused in one line naming both chips, neither touched."""
    db = tmp_path / "lab.db"
    a, b = VirtualChip(PROFILE, 41), VirtualChip(PROFILE, 42)
    port, stop, _ = serve_in_thread(VirtualRig(a, others={1: b}))
    url = f"socket://127.0.0.1:{port}"
    store = Store(db)
    try:
        cids = []
        for target in (0, 1):
            rig, chip_id = open_for_chip(store, url, "", 0, target=target)
            with rig:
                cids.append(create(store, rig, chip_id, "endurance", {"blocks": [2], "seed": 1, "cycles": 20,
                                                                      "checkpoints": [20]}, url))
        assert [store.campaign(c).target for c in cids] == [0, 1]
        assert len({store.campaign(c).chip_id for c in cids}) == 2
        with open_for_campaign(store, store.campaign(cids[1])) as rig:  # resumed where it was: target 1
            assert run(store, rig, cids[1], progress=False).state == "done"
        assert (a.pe_count(2), b.pe_count(2)) == (0, 20)
    finally:
        store.close()
        stop.set()
    port, stop, _ = serve_in_thread(VirtualRig(b, others={1: a}))  # the two chips swapped
    try:
        url = f"socket://127.0.0.1:{port}"
        run_cli("resume", "--db", db, "--rig", url).assert_one_line_error(
            f"is uid:{b.unique_id.hex()}", f"not uid:{a.unique_id.hex()}", "moved between sockets")
        assert (a.pe_count(2), b.pe_count(2)) == (0, 20)  # nothing touched
        ls = run_cli("ls", "--db", db)
        assert f"{url.rsplit(':', 1)[0]}" in ls.out and "target 1" in ls.out
        r = run_cli("resume", "--db", db, "--rig", url, "--campaign", cids[0], "--target", 1)  # where it is now
        assert r.code == 0 and f"campaign {cids[0]} done" in r.out, r.err
        assert (a.pe_count(2), b.pe_count(2)) == (20, 20)
        run_cli("resume", "--db", db, "--target", 1).assert_one_line_error("give --campaign with --target")
    finally:
        stop.set()
    store = Store(db)
    try:
        assert store.campaign(cids[0]).target == 1
        assert any(kind == "moved" and "target 0 to target 1" in d for _, kind, d in store.events(cids[0]))
    finally:
        store.close()


def _worn(seed: int, blocks=(2, 3), pe: int = 10_000) -> VirtualChip:
    """A chip whose blocks carry wear already (bulk cycling, ending erased): its reads have errors to compare."""
    c = VirtualChip(PROFILE, seed)
    for b in blocks:
        c.cycle(b, pe, seed=9, program=False)
    return c


def _rig(seeds: list[int]) -> VirtualRig:
    return VirtualRig(_worn(seeds[0]), others={k: _worn(s) for k, s in enumerate(seeds) if k})


def _url(vr: VirtualRig) -> tuple[str, object]:
    port, stop, _ = serve_in_thread(vr)
    return f"socket://127.0.0.1:{port}", stop


ENDURANCE = ("endurance", "--blocks", "2-3", "--cycles", "30", "--checkpoints", "10,30")


def _one_at_a_time(run_cli, seeds: list[int], db) -> None:
    """The campaign on each target's chip on its own, target after target: campaigns 1..4 in ``db``."""
    url, stop = _url(_rig(seeds))
    try:
        for k in range(len(seeds)):
            r = run_cli("run", *ENDURANCE, "--rig", url, "--db", db, "--target", k)
            assert r.code == 0, r.err
    finally:
        stop.set()


def test_campaigns_on_four_targets_at_once_measure_as_one_at_a_time(run_cli, per_page, tmp_path):
    """`run --target 0-3`: a campaign on each target's chip, run by one process over one link; each chip's
    per-page export equals the same campaign run on its own, one target after another (a rig that runs each
    request to its end, as the virtual rig does, serves the four in turns)."""
    seeds = [61, 62, 63, 64]
    _one_at_a_time(run_cli, seeds, tmp_path / "apart.db")
    url, stop = _url(vr := _rig(seeds))
    try:
        r = run_cli("run", *ENDURANCE, "--rig", url, "--db", tmp_path / "together.db", "--target", "0-3", "--json")
        assert r.code == 0, r.err
    finally:
        stop.set()
    got = json.loads(r.out)
    assert [g["state"] for g in got] == ["done"] * 4
    errors = 0
    for k, g in enumerate(got):
        together = per_page(tmp_path / "together.db", g["campaign"])
        assert together == per_page(tmp_path / "apart.db", k + 1), k
        errors += sum(int(row[8]) + int(row[9]) for row in together[1:])
    assert errors > 0  # something to compare
    assert {k: t.chip.pe_count(2) for k, t in vr.targets.items()} == {k: 10_030 for k in range(4)}


def test_four_campaigns_killed_at_once_resume_as_one_run_and_chips_swapped_before_are_refused(run_cli, per_page,
                                                                                                   tmp_path):
    """SIGKILL of the process running four campaigns at once; two chips swapped between sockets before `resume`:
    refused in one line naming both, nothing touched; back in place, `resume` runs the four together again and
    each chip's wear and per-page export are those of its campaign run on its own."""
    seeds = [71, 72, 73, 74]
    _one_at_a_time(run_cli, seeds, tmp_path / "apart.db")
    url, stop = _url(vr := _rig(seeds))
    db = tmp_path / "together.db"
    p = subprocess.Popen([sys.executable, "-m", "nandrig", "run", *ENDURANCE, "--rig", url, "--db", str(db),
                          "--target", "0-3"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while sum(t.chip.pe_count(2) - 10_000 for t in vr.targets.values()) < 30 and time.monotonic() < deadline:
            time.sleep(0.01)  # killed once the four have worn 30 cycles between them
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
        stop.set()
    store = Store(db)
    try:
        assert [c.state for c in store.campaigns()] == ["running"] * 4, "killed too late"
    finally:
        store.close()
    chips = {k: t.chip for k, t in vr.targets.items()}
    wear = {k: c.pe_count(2) for k, c in chips.items()}
    url, stop = _url(VirtualRig(chips[1], others={1: chips[0], 2: chips[2], 3: chips[3]}))
    try:
        run_cli("resume", "--db", db, "--rig", url).assert_one_line_error(
            f"is uid:{chips[1].unique_id.hex()}", f"not uid:{chips[0].unique_id.hex()}", "moved between sockets")
    finally:
        stop.set()
    assert {k: c.pe_count(2) for k, c in chips.items()} == wear  # nothing touched
    url, stop = _url(vr)  # the rig as the killed process left it
    try:
        r = run_cli("resume", "--db", db, "--rig", url)
        assert r.code == 0, r.err
        assert "at once" in r.err
    finally:
        stop.set()
    assert {k: c.pe_count(2) for k, c in chips.items()} == {k: 10_030 for k in range(4)}
    for k in range(4):
        assert per_page(db, k + 1) == per_page(tmp_path / "apart.db", k + 1), k


def test_what_cannot_run_at_once_is_refused_before_any_wear(run_cli, tmp_path):
    """A bake in the virtual oven would age every chip of the rig; a target outside the rig's; a label for
    several chips: each refused in one line, no campaign made, no block worn."""
    url, stop = _url(vr := _rig([81, 82]))
    db = tmp_path / "lab.db"
    try:
        run_cli("run", "retention", "--rig", url, "--db", db, "--target", "0-1", "--blocks", "2-3", "--wear", "10",
                "--times", "1", "--oven", "virtual").assert_one_line_error("virtual oven", "every chip", "--oven wall")
        run_cli("run", *ENDURANCE, "--rig", url, "--db", db, "--target", "0-8").assert_one_line_error(
            "--target 0-8", "0..7")
        run_cli("run", *ENDURANCE, "--rig", url, "--db", db, "--target", "0,1", "--chip-label", "x") \
            .assert_one_line_error("--chip-label", "unique ID")
        run_cli("run", *ENDURANCE, "--rig", url, "--db", db, "--target", "0-2").assert_one_line_error(
            "no chip on target 2")
    finally:
        stop.set()
    assert {(k, b): t.chip.pe_count(b) for k, t in vr.targets.items() for b in (2, 3)} == \
        {(k, b): 10_000 for k in (0, 1) for b in (2, 3)}
    assert json.loads(run_cli("ls", "--db", db, "--json").out) == []


def test_rigs_sharing_one_link_each_get_their_own_replies():
    """Two threads, a Rig each on its target, over one link: every reply reaches the Rig that asked (the link
    hands every byte to both; each keeps the frames of its own seqs, drawn from one counter) and equals what
    the same requests get one at a time."""
    import threading

    from nandrig.host.link.shared import SharedLink

    def work(rig: Rig, out: list) -> None:
        rig.erase(5)
        for page in range(8):
            rig.program(5, page, seed=rig.target + 1)
        out += [rig.read(5, page, seed=rig.target + 1).codewords for page in range(8)]

    alone = {}
    for k in (0, 1):
        with Rig(InProcessTransport(three()), target=k) as rig:
            work(rig, alone.setdefault(k, []))
    link = SharedLink(InProcessTransport(three()))
    rigs = {0: Rig(link.view(), target=0)}
    rigs[1] = Rig(link.view(), target=1, session=rigs[0].session)
    got: dict[int, list] = {0: [], 1: []}
    threads = [threading.Thread(target=work, args=(rigs[k], got[k])) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert got == alone
    for r in rigs.values():
        r.close()


def test_a_cycles_reply_stays_with_its_target_for_a_retry_after_another_targets_request():
    """As the firmware's CYCLE jobs: the session's reply slot holds the latest request's reply, which another
    target's request may take before the host records a CYCLE's reply; the CYCLE's retry is answered from its
    target and wears nothing again."""
    vr = three()
    cycle = P.request(Opcode.CYCLE, 10, P.CYCLE_REQ.pack(4, 1, 3, 9, 0), 1)
    first = vr.handle(cycle)
    assert first.status == Err.OK and vr.targets[1].chip.pe_count(4) == 3
    assert vr.handle(P.request(Opcode.ERASE, 11, P.ERASE_REQ.pack(5, 0), 0)).status == Err.OK  # takes the slot
    again = vr.handle(cycle)
    assert again.encode() == first.encode() and vr.targets[1].chip.pe_count(4) == 3
    refused = P.request(Opcode.CYCLE, 12, P.CYCLE_REQ.pack(10_000, 1, 1, 9, 0), 1)
    assert vr.handle(refused).status == Err.OUT_OF_RANGE and vr.targets[1].cycle_reply[3].seq == 10


def test_a_cycle_sent_while_another_runs_starts_beside_it_and_an_abort_reaches_it_before_it_starts():
    """Over the link: a long CYCLE runs on target 0; a CYCLE on target 1 is not refused BUSY but kept, reported
    running by STATUS on target 1, and ended ABORTED with nothing done when aborted before it started; a CYCLE
    on target 0's busy chip is refused BUSY."""
    vr = VirtualRig(VirtualChip(PROFILE, 1), exact=True, others={1: VirtualChip(PROFILE, 2)})
    port, stop, th = serve_in_thread(vr)
    try:
        with socket.create_connection(("127.0.0.1", port)) as s:
            got, d = {}, Deframer()

            def ask(op, seq, payload=b"", target=0):
                s.sendall(P.request(op, seq, payload, target).encode())

            def wait_for(seq, timeout=30):
                end = time.monotonic() + timeout
                s.settimeout(0.2)
                while seq not in got and time.monotonic() < end:
                    try:
                        got.update((f.seq, f) for f in d.feed(s.recv(65536)))
                    except socket.timeout:
                        continue
                assert seq in got, f"no reply to seq {seq}"
                return got.pop(seq)

            ask(Opcode.CYCLE, 1, P.CYCLE_REQ.pack(4, 1, 1000, 5, 0))  # seconds of work: aborted long before its end
            time.sleep(0.3)
            ask(Opcode.CYCLE, 2, P.CYCLE_REQ.pack(4, 1, 2, 6, 0), target=1)
            ask(Opcode.CYCLE, 3, P.CYCLE_REQ.pack(6, 1, 2, 6, 0), target=0)
            ask(Opcode.STATUS, 4, target=1)
            assert wait_for(3).status == Err.BUSY
            state, op, seq = P.STATUS_REPLY.unpack(wait_for(4).payload)[:3]
            assert (state, op, seq) == (P.JobState.BUSY, Opcode.CYCLE, 2)
            ask(Opcode.ABORT, 5, target=1)
            assert P.BYTE_REPLY.unpack(wait_for(5).payload)[0] == 1
            ask(Opcode.ABORT, 6, target=0)
            assert wait_for(1).status == Err.ABORTED
            aborted = wait_for(2)
            assert aborted.status == Err.ABORTED and P.CYCLE_HEAD.unpack(aborted.payload[:P.CYCLE_HEAD.size])[0] == 0
            assert vr.targets[1].chip.pe_count(4) == 0
    finally:
        stop.set()
        th.join(5)
