"""Crash exactly between the rig's reply and the host's commit: the resume must take the cached reply."""
from nandrig.host.engine.campaigns import Runner
from nandrig.host.engine.campaigns import create, run
from nandrig.host.engine.chip_access import open_for_campaign, open_for_chip
from nandrig.host.views.tables import csv_text
from nandrig.host.storage.store import Store

PARAMS = {"blocks": [1, 2, 3], "seed": 4, "cycles": 600, "checkpoints": [1, 10, 100, 200, 400, 600]}


def campaign(db, crash_at: set[int], monkeypatch) -> tuple[str, dict]:
    store = Store(db)
    rig, chip_id = open_for_chip(store, "sim", "mlc-small", 5)
    cid = create(store, rig, chip_id, "endurance", PARAMS, "sim")
    applied = {"n": 0}
    original = Runner._apply

    def crashing(self, i, step, reply, *energy):
        applied["n"] += 1
        if applied["n"] in crash_at:
            raise KeyboardInterrupt("killed after the rig executed, before the commit")
        return original(self, i, step, reply, *energy)

    monkeypatch.setattr(Runner, "_apply", crashing)
    crashes = 0
    while True:
        try:
            run(store, rig, cid, progress=False)
            break
        except KeyboardInterrupt:
            crashes += 1
            rig.close()
            rig = open_for_campaign(store, store.campaign(cid))  # a new process: the rig reopened from its state
            assert store.pending(cid) is not None
    rig.close()
    assert crashes == len(crash_at)
    out = csv_text(store, store.campaign(cid), "pages"), store.pe_counts(chip_id, PARAMS["blocks"])
    store.close()
    return out


def test_crash_after_reply_before_commit_loses_and_doubles_nothing(tmp_path, monkeypatch):
    reference = campaign(tmp_path / "a.db", set(), monkeypatch)
    crashed = campaign(tmp_path / "b.db", {1, 2, 5, 8, 9, 11}, monkeypatch)
    assert crashed[1] == reference[1] == {1: 600, 2: 600, 3: 600}
    assert crashed[0] == reference[0]
