"""``firmware/rig/protocol.h`` from the spec: the firmware's only source of protocol names.

Run ``python -m nandrig.protocol.cheader > firmware/rig/protocol.h`` after
changing :mod:`nandrig.protocol.spec`; a test fails while the checked-in file
differs from what this prints.
"""
from __future__ import annotations

import enum
import re

from nandrig.protocol import spec
from nandrig.protocol.layout import Layout

HEADER_PATH = "firmware/rig/protocol.h"


def _c_int(v: int) -> str:
    """A C literal of v: negatives in parentheses, values past int32 unsigned."""
    return f"({v})" if v < 0 else f"{v}u" if v > 0x7FFF_FFFF else str(v)


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()


def _enum(prefix: str, e: type[enum.Enum], doc: str) -> list[str]:
    lines = [f"/* {doc} */", "enum {"]
    lines += [f"\t{prefix}{m.name} = 0x{int(m.value):02X}," for m in e]
    return lines + ["};"]


def _accessors(lay: Layout) -> list[str]:
    lines = [f"/* {lay.name}{': ' + lay.doc if lay.doc else ''} */", f"#define {lay.name}_BYTES {lay.size}u"]
    for f in lay.fields:
        off, name = lay.offset(f.name), f"{lay.name}_{f.name.upper()}"
        if f.is_bytes:
            lines += [f"#define {name}_OFFSET {off}u", f"#define {name}_SIZE {f.size}u"]
            continue
        lines += [f"#define {name}(p) (({f.ctype})get_le((p) + {off}, {f.size}))",
                  f"#define SET_{name}(p, v) put_le((p) + {off}, (uint64_t)(v), {f.size})"]
    return lines


def render() -> str:
    out = ["/* The rig protocol (docs/protocol.md). GENERATED from nandrig/protocol/spec.py by",
           " * `python -m nandrig.protocol.cheader`: edit the spec, not this file. */",
           "#ifndef NANDRIG_PROTOCOL_H", "#define NANDRIG_PROTOCOL_H", "#include <stdint.h>", '#include "frame.h"', "",
           f"#define PROTOCOL_VERSION_MAJOR {spec.VERSION[0]}", f"#define PROTOCOL_VERSION_MINOR {spec.VERSION[1]}",
           f"enum {{ T_REQUEST = 0x{spec.REQUEST_TYPE:02X}, T_REPLY = 0x{spec.REPLY_TYPE:02X}, "
           f"T_PART = 0x{spec.PART_TYPE:02X}, T_END = 0x{spec.END_TYPE:02X} }};",
           f"#define STREAMED_SINCE_MINOR {spec.STREAMED_SINCE[1]}  /* of major {spec.STREAMED_SINCE[0]} */",
           f"#define MAX_PAYLOAD {spec.MAX_PAYLOAD}u", f"#define FRAME_CRC_BYTES {spec.FRAME_CRC_BYTES}u",
           f"#define MIN_BODY {spec.MIN_BODY}u", f"#define MAX_BODY {spec.MAX_BODY}u", ""]
    out += ["/* limits */"] + [f"#define {k} {_c_int(v)}" for k, v in spec.Limit.items()] + [""]
    out += _enum("OP_", spec.Opcode, "opcodes") + [""]
    assert [int(e) for e in spec.Err] == list(range(len(spec.Err))), "E_ codes are listed in order from 0"
    out += ["/* reply statuses, from 0 */", "enum {", "\t" + ", ".join(f"E_{e.name}" for e in spec.Err) + ",", "};", ""]
    out += _enum("RIG_KIND_", spec.RigKind, "HELLO's rig_kind") + [""]
    out += _enum("CAP_", spec.Cap, "capability bits") + [""]
    out += _enum("JOB_", spec.JobState, "STATUS's state") + [""]
    out += _enum("CAPTURE_", spec.Capture, "INFO's capture") + [""]
    for flags in spec.FLAG_ENUMS:
        prefix = _snake(flags.__name__) + "_"
        out += _enum(prefix, flags, f"{flags.__name__} bits; others get E_BAD_PARAMETER")
        out += [f"#define {prefix.rstrip('_')}S_ALL 0x{spec.all_flags(flags):02X}u", ""]
    out += _enum("PROFILE_SOURCE_", spec.ProfileSource, "FLARES_READ's profile source") + [""]
    out += _enum("DECIDE_", spec.Decide, "FLARES decision flags") + [""]
    out += _enum("TABLES_", spec.TablesSource, "FLARES tables in use") + [""]
    cached = " || ".join(f"(op) == OP_{op.name}" for op in sorted(spec.UNCACHED))
    out += ["/* requests whose replies stay out of the reply cache */", f"#define OP_UNCACHED(op) ({cached})", ""]
    streamed = " || ".join(f"(op) == OP_{op.name}" for op in sorted(spec.STREAMED))
    out += ["/* requests whose replies go in parts to hosts of STREAMED_SINCE */",
            f"#define OP_STREAMED(op) ({streamed})", ""]
    wide = " || ".join(f"(op) == OP_{op.name}" for op in sorted(set(spec.COMMANDS) - spec.TARGETED))
    out += ["/* requests to the rig as a whole: their target is not read (the others act on the target's chip) */",
            f"#define OP_RIG_WIDE(op) ({wide})", ""]
    keeps = " || ".join(f"(st) == E_{e.name}" for e in sorted(spec.PAYLOAD_STATUSES))
    out += ["/* statuses whose reply keeps its payload */", f"#define STATUS_KEEPS_PAYLOAD(st) ({keeps})", ""]
    for lay in spec.LAYOUTS:
        out += _accessors(lay) + [""]
    return "\n".join(out + ["#endif"]) + "\n"


if __name__ == "__main__":
    print(render(), end="")
