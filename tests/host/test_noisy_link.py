"""A campaign over a link that corrupts, drops and duplicates 0.1 % of the bytes both ways (a marginal cable)
completes with exactly the measurements of a clean link: damaged replies are asked for again at once."""
from nandrig.virtual_chip.chip import VirtualChip
from nandrig.boards.sim.server import VirtualRig
from nandrig.boards.sim.tcp_link import serve_in_thread
from nandrig.host.engine.campaigns import create, run
from nandrig.host.views.export import export_rows
from nandrig.host.link.rig import Rig
from nandrig.host.storage.store import Store
from nandrig.host.link.transport import FaultyTransport, SerialTransport

PLAN = {"blocks": [1, 2], "seed": 3, "cycles": 400, "checkpoints": [1, 100, 200, 300, 400], "oven": "virtual"}


def endurance(tmp_path, name: str, noise: float) -> tuple[list[dict], dict]:
    vr = VirtualRig(VirtualChip("mlc-3x", 6))  # 128-page blocks: a MEASURE reply is about 1 KB
    port, stop, _ = serve_in_thread(vr)
    link = SerialTransport(f"socket://127.0.0.1:{port}")
    if noise:
        link = FaultyTransport(link, seed=11, drop=noise, corrupt=noise, duplicate=noise)
    store = Store(tmp_path / f"{name}.db")
    try:
        with Rig(link, timeout=0.3, retries=20) as rig:
            chip_id = store.add_chip("mlc-3x:6", rig.info(), rig.read_param_page(), None)
            cid = create(store, rig, chip_id, "endurance", PLAN, "socket")
            c = run(store, rig, cid, progress=False)
            assert c.state == "done"
            rows = export_rows(store, c)
        return rows, getattr(link, "injected", {})
    finally:
        store.close()
        stop.set()


def test_a_campaign_over_a_link_damaging_a_thousandth_of_the_bytes_measures_what_a_clean_one_does(tmp_path):
    clean, _ = endurance(tmp_path, "clean", 0.0)
    noisy, injected = endurance(tmp_path, "noisy", 0.001)
    # really noisy, every way (485 of the rarest kind on 2026-12-03: a reply in parts keeps its good parts across
    # retries, so fewer bytes cross than when every damaged reply came again whole, which made over 1,000)
    assert min(injected[k] for k in ("drop", "corrupt", "duplicate")) > 300
    assert noisy == clean and len(clean) > 0
