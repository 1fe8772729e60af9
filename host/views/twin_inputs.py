"""What a store holds of one chip for its digital twin (characterization/twin.py, boards/sim/twin.py)."""
from __future__ import annotations

from nandrig.characterization.twin import TwinInputs
from nandrig.errors import NandrigError
from nandrig.host.storage.store import Store
from nandrig.host.views.export import export_rows

RBER_KINDS = ("endurance", "retention", "latency", "read-disturb")  # campaigns whose rows read pattern pages back


def twin_inputs(store: Store, label: str, campaign_ids: list[int] | None = None) -> TwinInputs:
    """Chip ``label``'s campaigns in ``store`` (``campaign_ids``: those alone, the rest held out to check the
    twin), as the twin is fitted to them."""
    chip_id = store.chip_id(label)
    if chip_id is None:
        raise NandrigError(f"no chip {label!r} in {store.name} (chips there: {', '.join(store.chip_labels()) or 'none'})")
    row = store.chip(chip_id)
    campaigns = [c for c in store.campaigns() if c.chip_id == chip_id and (not campaign_ids or c.id in campaign_ids)]
    if campaign_ids and (other := sorted(set(campaign_ids) - {c.id for c in campaigns})):
        raise NandrigError(f"campaign {other[0]} is not one of chip {label}'s in {store.name}")
    rber = [c for c in campaigns if c.kind in RBER_KINDS]
    every = list(range(row["blocks"]))
    scanned = sorted(set(every) - set(store.unscanned(chip_id, every)))
    plain = lambda r: r["reads"] == 0 and r["offset"] == 0  # noqa: E731
    return TwinInputs(
        label, store.name, tuple(c.id for c in campaigns), bytes(row["param_page"]), bytes.fromhex(row["read_id"]),
        store.page_map(chip_id), [(c.id, o) for c in campaigns for o in store.op_times(c.id)],
        [(c.id, e) for c in campaigns for e in store.op_energy(c.id)],
        # rows without read disturb or a read-retry offset: the cells' wear and retention alone
        [r for c in rber for r in export_rows(store, c) if plain(r)], tuple(c.id for c in rber),
        [r for c in rber for r in export_rows(store, c, by_block=True) if plain(r)],
        [r for c in rber for r in export_rows(store, c) if r["reads"] > 0 and r["offset"] == 0],
        tuple(store.factory_bad(chip_id, scanned)), len(scanned))
