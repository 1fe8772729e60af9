"""The architecture as a graph: Python modules and packages, and the firmware's C files, import (call) in one
direction; gateware names no board; the virtual chip stands on the chip's facts and the characterization core
alone. Every import counts, lazy ones and type-only ones too: a circle hidden in a function is still a circle."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# setup.py maps each top-level folder into the one package
AREAS = {"nandrig": "nandrig", "characterization": "nandrig.characterization", "host": "nandrig.host",
         "boards": "nandrig.boards", "gateware": "nandrig.gateware", "firmware": "nandrig.firmware"}


def python_modules() -> dict[str, Path]:
    mods = {}
    for folder, pkg in AREAS.items():
        for p in (ROOT / folder).rglob("*.py"):
            parts = list(p.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            mods[".".join([pkg, *parts])] = p
    return mods


def _imported(module: str, path: Path) -> set[str]:
    """Every nandrig name the module imports: import statements anywhere, and importlib.import_module("...")."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = module if path.name == "__init__.py" else module.rpartition(".")[0]
                for _ in range(node.level - 1):
                    pkg = pkg.rpartition(".")[0]
                base = f"{pkg}.{base}" if base else pkg
            names |= {f"{base}.{a.name}" for a in node.names}
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module" and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            names.add(node.args[0].value)
    return {n for n in names if n == "nandrig" or n.startswith("nandrig.")}


def module_graph() -> dict[str, set[str]]:
    mods = python_modules()

    def resolve(name: str) -> str | None:  # a module, or the module a name inside it belongs to
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    return {m: {t for n in _imported(m, p) if (t := resolve(n)) and t != m} for m, p in mods.items()}


def package_graph() -> dict[str, set[str]]:
    """Package to package: a package may use its own subpackages; any other arrow between two counts."""
    mods = python_modules()
    pkg = {m: m if p.name == "__init__.py" else m.rpartition(".")[0] for m, p in mods.items()}
    out: dict[str, set[str]] = {p: set() for p in pkg.values()}
    for m, targets in module_graph().items():
        out[pkg[m]] |= {pkg[t] for t in targets if pkg[t] != pkg[m] and not pkg[t].startswith(pkg[m] + ".")}
    return out


def firmware_graph() -> dict[str, set[str]]:
    """C file to C file: X uses Y when X names a function or variable Y defines (not static)."""
    files = sorted((ROOT / "firmware").rglob("*.c"))
    code = {f.stem: re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", "", f.read_text(), flags=re.S)) for f in files}
    defined: dict[str, str] = {}
    own: dict[str, set[str]] = {}
    for stem, text in code.items():
        functions = re.findall(r"^(static\s+)?(?:inline\s+)?[A-Za-z_][\w \*]*?\b(\w+)\s*\([^;{]*\)\s*\{", text, flags=re.M)
        variables = re.findall(r"^(static\s+)?(?!extern\b|typedef\b|return\b)(?:const\s+)?(?:struct\s+)?\w+\s+\*?(\w+)"
                               r"\s*(?:\[[^\]]*\])*\s*(?:=[^;]*)?;", text, flags=re.M)
        own[stem] = {name for _, name in functions + variables}
        for static, name in functions + variables:
            if not static:
                defined.setdefault(name, stem)
    return {stem: {defined[t] for t in set(re.findall(r"\b[A-Za-z_]\w*\b", text)) - own[stem]
                   if t in defined and defined[t] != stem} for stem, text in code.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's strongly connected parts of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


@pytest.mark.parametrize("graph", [module_graph, package_graph, firmware_graph])
def test_no_import_circle(graph):
    g = graph()
    assert len(g) > 15  # the graph was drawn
    assert cycles(g) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_firmware_graph_sees_calls_across_files():
    g = firmware_graph()
    assert {"commands", "flares_ops", "job"} <= g["server"] and "page_io" in g["flares_ops"]


def test_gateware_names_no_board():
    g = module_graph()
    assert [(m, t) for m, ts in g.items() if m.startswith("nandrig.gateware") for t in ts
            if t.startswith("nandrig.boards")] == []


def test_the_virtual_chip_stands_on_the_chips_facts_and_the_characterization_core():
    allowed = ("nandrig.virtual_chip", "nandrig.chip", "nandrig.errors", "nandrig.characterization.rber",
               "nandrig.characterization.arrhenius")
    g = module_graph()
    used = {t for m, ts in g.items() if m.startswith("nandrig.virtual_chip") for t in ts}
    assert used and [t for t in used if not t.startswith(allowed)] == []


def test_the_hosts_roles_stack():
    """host/'s subpackages in layers: each imports only the host packages below it."""
    below = {"link": set(), "lab": set(), "storage": set(), "kinds": {"lab", "storage", "link"},
             "ftl": {"link"}, "workload": {"ftl", "link"},
             "engine": {"kinds", "lab", "link", "storage", "ftl", "workload"},
             "views": {"engine", "kinds", "lab", "link", "storage", "ftl", "workload"}}
    g = package_graph()
    for role, allowed in below.items():
        used = {t.split(".")[2] for t in g[f"nandrig.host.{role}"] if t.startswith("nandrig.host.")}
        assert used <= allowed, role
