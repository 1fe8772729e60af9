"""Campaign kinds: each one module (parameters, plan, CLI options, report section), all found here."""
from __future__ import annotations

from nandrig.errors import NandrigError
from nandrig.host.kinds import (bitmap, density, endurance, flexlevel, latency, program_disturb, read_disturb,
                                retention, vth, vth_states, wom)
from nandrig.host.kinds.base import CampaignKind, KindParams

KINDS: dict[str, CampaignKind] = {m.KIND.name: m.KIND for m in
                                  (endurance, retention, read_disturb, program_disturb, latency, vth, vth_states,
                                                     bitmap, density, wom, flexlevel)}


def kind(name: str) -> CampaignKind:
    try:
        return KINDS[name]
    except KeyError:
        raise NandrigError(f"unknown campaign kind {name!r} ({', '.join(KINDS)})") from None


__all__ = ["KINDS", "CampaignKind", "KindParams", "kind"]
