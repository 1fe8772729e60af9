"""Maps the repository's top-level folders into the one ``nandrig`` package.

``characterization/`` becomes ``nandrig.characterization``, ``boards/sim/``
becomes ``nandrig.boards.sim`` and so on; metadata lives in pyproject.toml.
"""
from pathlib import Path

from setuptools import setup

ROOT = Path(__file__).parent
AREAS = ["nandrig", "characterization", "host", "boards", "gateware", "firmware"]


def package_dirs() -> dict[str, str]:
    dirs = {"nandrig": "nandrig"}
    for area in AREAS[1:]:
        if (ROOT / area / "__init__.py").exists():
            dirs[f"nandrig.{area}"] = area
    return dirs


def packages(dirs: dict[str, str]) -> list[str]:
    found = []
    for name, folder in dirs.items():
        for init in sorted((ROOT / folder).rglob("__init__.py")):
            rel = init.parent.relative_to(ROOT / folder)
            found.append(".".join([name, *rel.parts]))
    return found


DIRS = package_dirs()
setup(
    package_dir=DIRS,
    packages=packages(DIRS),
    package_data={"": ["*.json", "*.md", "*.c", "*.h", "Makefile"]},
    include_package_data=True,
)
