"""The virtual rig's state file: JSON that names only the record types below, so loading a state file
someone handed you builds data and never runs code (a pickle would run whatever it names).

Values map to JSON one to one except: bytes (``{"$bytes": base64}``), tuples (``{"$tuple": [...]}``), dicts
whose keys are not all plain strings (``{"$map": [[key, value], ...]}``) and the records in ``RECORDS``
(``{"$record": name, field: value, ...}``). IntEnum and IntFlag values are stored as their integers.
"""
from __future__ import annotations

import base64
import dataclasses
import importlib
import json
import os
import zlib
from pathlib import Path
from typing import Any

from nandrig.errors import NandrigError

MAGIC = b"nandrig-sim-state 1\n"  # then zlib-compressed JSON
RECORDS: dict[str, type] = {}


def record(cls: type) -> type:
    """Register a dataclass that may appear in a state file (by class name)."""
    RECORDS[cls.__name__] = cls
    return cls


def _plain_key(k: Any) -> bool:
    return type(k) is str and not k.startswith("$")


def encode(v: Any) -> Any:
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        return float(v)
    if isinstance(v, (bytes, bytearray)):
        return {"$bytes": base64.b64encode(v).decode()}
    if isinstance(v, tuple):
        return {"$tuple": [encode(x) for x in v]}
    if isinstance(v, list):
        return [encode(x) for x in v]
    if isinstance(v, dict):
        if all(_plain_key(k) for k in v):
            return {k: encode(x) for k, x in v.items()}
        return {"$map": [[encode(k), encode(x)] for k, x in v.items()]}
    if dataclasses.is_dataclass(v) and RECORDS.get(type(v).__name__) is type(v):
        return {"$record": type(v).__name__, **{f.name: encode(getattr(v, f.name)) for f in dataclasses.fields(v)}}
    raise TypeError(f"a state file cannot hold {type(v).__name__}")


def _decode(v: Any) -> Any:
    if isinstance(v, list):
        return [_decode(x) for x in v]
    if not isinstance(v, dict):
        return v
    if "$bytes" in v:
        return base64.b64decode(v["$bytes"], validate=True)
    if "$tuple" in v:
        return tuple(_decode(x) for x in v["$tuple"])
    if "$map" in v:
        return {_decode(k): _decode(x) for k, x in v["$map"]}
    if "$record" in v:
        cls = RECORDS.get(v["$record"])
        if cls is None:
            raise ValueError(f"unknown record {v['$record']!r}")
        return cls(**{k: _decode(x) for k, x in v.items() if k != "$record"})
    return {k: _decode(x) for k, x in v.items()}


def save_state(path: str | Path, state: dict) -> None:
    """Write ``state`` to ``path`` atomically and durably (write, fsync, rename)."""
    path = Path(path)
    data = MAGIC + zlib.compress(json.dumps(encode(state), separators=(",", ":")).encode(), 1)
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as e:  # a full disk: the previous state stays whole; name the file, leave no half of it
        tmp.unlink(missing_ok=True)
        raise OSError(e.errno, e.strerror, str(path)) from None


def load_state(path: str | Path) -> dict:
    # the modules whose record types a rig's state holds register them on import: whoever loads a state file
    # (a test, a tool) gets them all, not only what it happened to import before
    importlib.import_module("nandrig.boards.sim.rig")

    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise NandrigError(f"cannot load state {path}: {e.strerror or e}") from None
    if not data.startswith(MAGIC):
        old = " (a pickle, as older nandrig wrote: not loaded, a pickle can run code)" if data[:1] == b"\x80" else ""
        raise NandrigError(f"cannot load state {path}: not a nandrig state file{old}")
    try:
        state = _decode(json.loads(zlib.decompress(data[len(MAGIC):])))
    except (ValueError, TypeError, zlib.error, RecursionError) as e:
        raise NandrigError(f"cannot load state {path}: {e}") from None
    if not isinstance(state, dict):
        raise NandrigError(f"cannot load state {path}: not a nandrig state file")
    return state
