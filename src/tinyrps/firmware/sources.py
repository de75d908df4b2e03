"""Which files of the firmware tree are its sources.

One definition for the two places that need it: the build, which hashes exactly these
files into its cache key, and the wheel (setup.py loads this file on its own, so it
imports nothing from the package at import time), which ships exactly these files. An
installed package therefore gets the same key as the checkout it was built from. Where
the sources are (firmware_dir) is here too: the build and the C facts (c_facts) read them.
"""
from __future__ import annotations

from pathlib import Path

SOURCE_SUFFIXES = {".c", ".h", ".def", ".s", ".S", ".ld", ".cmake", ".txt"}
# Where a wheel puts the firmware sources, inside the tinyrps.firmware package.
PACKAGED_DIR = "sources"


def source_files(root: Path) -> list:
    """The firmware sources under `root`, sorted; build folders inside the tree are skipped."""
    root = Path(root)
    found = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0].startswith("build") or not path.is_file() or path.suffix not in SOURCE_SUFFIXES:
            continue
        found.append(path)
    return found


def firmware_dir() -> Path:
    """The firmware sources: the copy an installed wheel carries inside this package, else
    firmware/ of the checkout this package runs from (development, editable install)."""
    package = Path(__file__).resolve().parent
    candidates = (package / PACKAGED_DIR, package.parents[2] / "firmware")
    for root in candidates:
        if (root / "CMakeLists.txt").is_file():
            return root
    from ..infra.errors import UserError     # here: setup.py loads this file on its own, outside the package
    raise UserError(f"firmware sources not found (looked in {' and '.join(map(str, candidates))}): "
                    f"reinstall tinyrps from its wheel, or run it from a checkout of the repository")
