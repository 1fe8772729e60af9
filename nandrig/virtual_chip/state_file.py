"""The virtual chip's state file (and the virtual rig's, which adds its own records: boards/sim/state_file.py): JSON that names only the record types below, so loading a state file
someone handed you builds data and never runs code (a pickle would run whatever it names).

Values map to JSON one to one except: bytes (``{"$bytes": base64}``), tuples (``{"$tuple": [...]}``), dicts
whose keys are not all plain strings (``{"$map": [[key, value], ...]}``) and the records in ``RECORDS``
(``{"$record": name, field: value, ...}``). IntEnum and IntFlag values are stored as their integers.

A rig saves its state after every operation that changes it (a board's chip keeps its wear whatever the host
does next), so the file is written in parts: the values at the paths a writer names ``apart`` (a chip's
blocks, one part each) are compressed on their own, and a part that did not change since the last save is
written again from a cache instead of being encoded again. An operation touches one block: saving costs
that block, not the chip (flares-validate with --db ran about thirty times slower with whole-state saves).
The writer says which parts it knows unchanged (the chip's block table notes every block it handed out);
the others are compared with their last save (`flares-validate --scale 0.05 --db`: 164 s comparing every
block at every save, 56 s with the block table's word, 2026-11-28).
"""
from __future__ import annotations

import base64
import dataclasses
import json
import os
import pickle
import struct
import zlib
from pathlib import Path
from typing import Any

from nandrig.errors import NandrigError

MAGIC = b"nandrig-sim-state 1\n"  # then zlib-compressed JSON (read, no longer written)
MAGIC_PARTS = b"nandrig-sim-state 2\n"  # then parts: path length, value length, JSON path, zlib-compressed JSON
_PART = struct.Struct(">HI")
# a part this long (a block whose pages hold explicit bytes: base64 that compresses by a quarter) is stored, not
# compressed: compressing it cost 12 ms a save, most of a reduced-state read on the virtual rig
STORE_ABOVE = 256 * 1024
RECORDS: dict[str, type] = {}


def record(cls: type) -> type:
    """Register a dataclass that may appear in a state file (by class name)."""
    RECORDS[cls.__name__] = cls
    _FIELDS[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return cls


_FIELDS: dict[type, tuple[str, ...]] = {}  # each record's field names (a rig saves after every operation)


def _plain_key(k: Any) -> bool:
    return type(k) is str and not k.startswith("$")


def encode(v: Any) -> Any:
    t = type(v)
    if v is None or t is bool or t is str or t is float:
        return v
    names = _FIELDS.get(t)
    if names is not None:
        return {"$record": t.__name__, **{n: encode(getattr(v, n)) for n in names}}
    if t is list:
        return [encode(x) for x in v]
    if isinstance(v, str):
        return v
    if isinstance(v, int):  # IntEnum and IntFlag values as their integers
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
    raise TypeError(f"a state file cannot hold {t.__name__}")


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


def _matches(path: tuple, pattern: tuple) -> bool:
    """``path`` is ``pattern``'s first keys ("*": any key)."""
    return all(x == "*" or x == y for x, y in zip(pattern, path))


def _split(value: Any, path: tuple, apart: frozenset, out: list) -> Any:
    """``value`` (at ``path``: its keys from the top) less the values recorded apart below it, which go to ``out``
    as (path, value), each after its parent. ``apart`` holds paths; ``path + ("*",)`` is every entry of a dict."""
    if not isinstance(value, dict) or not any(len(a) > len(path) and _matches(path, a) for a in apart):
        return value  # nothing apart below it: as it is
    own = {}
    here = [a for a in apart if len(a) == len(path) + 1 and _matches(path, a)]
    for k, v in value.items():
        sub = path + (k,)
        if any(a[-1] in ("*", k) for a in here):
            slot = len(out)
            out.append(None)
            out[slot] = (sub, _split(v, sub, apart, out))
        else:
            own[k] = _split(v, sub, apart, out)
    return own


def save_state(path: str | Path, state: dict, apart: frozenset = frozenset(), cache: dict | None = None,
               unchanged: frozenset = frozenset()) -> None:
    """Write ``state`` to ``path`` atomically and durably (write, fsync, rename). With a ``cache`` (the same dict
    on every save of one state), each part recorded ``apart`` that is unchanged since the last save is reused:
    a part whose path is in ``unchanged`` (the writer knows) as it is, any other if it compares equal."""
    path = Path(path)
    cache = {} if cache is None else cache
    out: list = []
    parts = [((), _split(state, (), frozenset(apart), out))] + out
    chunks = [MAGIC_PARTS]
    for where, value in parts:
        hit = cache.get(where)
        if hit is not None and where in unchanged:
            chunks.append(hit[1])
            continue
        key = pickle.dumps(value, 5)  # compared only, never loaded
        if hit is None or hit[0] != key:
            name = json.dumps(encode(list(where))).encode()
            text = json.dumps(encode(value), separators=(",", ":")).encode()
            body = zlib.compress(text, 0 if len(text) > STORE_ABOVE else 1)
            hit = cache[where] = (key, _PART.pack(len(name), len(body)) + name + body)
        chunks.append(hit[1])
    for gone in set(cache) - {where for where, _ in parts}:  # parts the state no longer has
        del cache[gone]
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(b"".join(chunks))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as e:  # a full disk: the previous state stays whole; name the file, leave no half of it
        tmp.unlink(missing_ok=True)
        raise OSError(e.errno, e.strerror, str(path)) from None


def _load_parts(data: bytes) -> dict:
    state, i = None, len(MAGIC_PARTS)
    while i < len(data):
        if i + _PART.size > len(data):
            raise ValueError("truncated part header")
        n_name, n_body = _PART.unpack_from(data, i)
        i += _PART.size
        if i + n_name + n_body > len(data):
            raise ValueError("truncated part")
        where = _decode(json.loads(data[i:i + n_name]))
        value = _decode(json.loads(zlib.decompress(data[i + n_name:i + n_name + n_body])))
        i += n_name + n_body
        if not isinstance(where, list):
            raise ValueError("a part's path is not a list")
        if state is None:
            if where:
                raise ValueError("the first part is not the top")
            state = value
            continue
        parent = state
        for k in where[:-1]:
            parent = parent[k]
        if not where or not isinstance(parent, dict):
            raise ValueError(f"part {where} has no parent")
        parent[where[-1]] = value
    return state


def load_state(path: str | Path) -> dict:
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise NandrigError(f"cannot load state {path}: {e.strerror or e}") from None
    if not data.startswith((MAGIC, MAGIC_PARTS)):
        old = " (a pickle, as older nandrig wrote: not loaded, a pickle can run code)" if data[:1] == b"\x80" else ""
        raise NandrigError(f"cannot load state {path}: not a nandrig state file{old}")
    try:
        if data.startswith(MAGIC_PARTS):
            state = _load_parts(data)
        else:
            state = _decode(json.loads(zlib.decompress(data[len(MAGIC):])))
    except (ValueError, TypeError, KeyError, IndexError, zlib.error, RecursionError) as e:
        raise NandrigError(f"cannot load state {path}: {e}") from None
    if not isinstance(state, dict):
        raise NandrigError(f"cannot load state {path}: not a nandrig state file")
    return state
