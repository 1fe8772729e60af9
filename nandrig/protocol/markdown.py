"""docs/protocol.md's command and INFO tables from the spec.

``python -m nandrig.protocol.markdown`` rewrites them in place between their markers; a test fails while
the document differs from what the spec renders.
"""
from __future__ import annotations

import re
from pathlib import Path

from nandrig.protocol import spec

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


def commands_table() -> str:
    rows = ["| opcode | name | request payload | reply payload |", "| --- | --- | --- | --- |"]
    for op, c in spec.COMMANDS.items():
        rows.append(f"| 0x{int(op):02X} | {op.name} | {c.render(c.request)} | {c.render(c.reply)} |")
    return "\n".join(rows)


def info_table() -> str:
    rows = ["| size | field |", "| --- | --- |"]
    for f in spec.INFO_REPLY.fields:
        rows.append(f"| {f.size if f.is_bytes else f.kind} | {spec.INFO_FIELDS[f.name]} |")
    return "\n".join(rows)


TABLES = {"commands": commands_table, "info": info_table}


def render(doc: str) -> str:
    """``doc`` with each generated table replaced by the spec's."""
    for name, make in TABLES.items():
        pattern = re.compile(rf"(<!-- {name} table: generated from nandrig/protocol/spec.py -->\n).*?(\n<!-- end -->)",
                             re.S)
        if not pattern.search(doc):
            raise ValueError(f"docs/protocol.md lacks the markers of the {name} table")
        doc = pattern.sub(lambda m: m.group(1) + make() + m.group(2), doc)
    return doc


if __name__ == "__main__":
    DOC.write_text(render(DOC.read_text()))
