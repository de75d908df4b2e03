"""The session fixtures' results, kept across test runs in the user's cache.

A fixture's folder (the data set, the trained run, one exported program) is built once
and stored under `$XDG_CACHE_HOME/tinyrps/test-fixtures/<name>-<key>/`, where the key
hashes everything the result depends on: the fixture's parameters, the library
versions, and the source files of the tinyrps modules that make it -- found by
following the package's own imports from the modules the fixture calls, so no list
has to be kept up to date by hand -- plus any other sources it reads (the firmware's). A changed source gives a new key, so a stale result is never used.

Tests never see the cached folder itself: each session gets a copy. A stored folder
carries a manifest of its files' SHA-256, checked on every use; one that was changed
after it was stored is removed and built again.
"""
from __future__ import annotations

import ast
import fcntl
import hashlib
import json
import os
import shutil
import stat
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Callable, Iterable

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "tinyrps"
MANIFEST = ".manifest.json"
# A stored folder unused for this long is removed (sources change; old keys never come back).
PRUNE_AFTER_S = 7 * 24 * 3600
# Libraries whose version can change what a fixture builds.
LIBRARIES = ("torch", "executorch", "numpy", "pillow", "matplotlib", "ethos-u-vela", "tosa-tools")


def cache_root() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "tinyrps" / "test-fixtures"


# ── keys ─────────────────────────────────────────────────────────────────────

def module_file(module: str) -> Path:
    """tinyrps.a.b -> src/tinyrps/a/b.py, or .../b/__init__.py for a package."""
    path = PACKAGE.joinpath(*module.split(".")[1:])
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def imported_modules(module: str, path: Path) -> set:
    """The tinyrps modules a module's source imports, at top level or inside functions."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base.split(".")[0] == "tinyrps":
                # `from . import host` names a submodule; `from .x import name` a module
                found |= {base} | {f"{base}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "tinyrps"}
    return found


def module_closure(roots: Iterable[str]) -> list:
    """Source files of the modules in `roots`, of their packages and of everything they import."""
    seen, todo = {}, list(roots)
    while todo:
        module = todo.pop()
        path = module_file(module)
        if module in seen or not path.is_file():
            continue
        seen[module] = path
        parents = module.split(".")
        todo += [".".join(parents[:i]) for i in range(1, len(parents))]   # importing a.b.c runs a and a.b
        todo += sorted(imported_modules(module, path))
    return sorted(set(seen.values()))


def package_modules(package: str) -> list:
    """Every module of a tinyrps package (for registries that import their members by name)."""
    folder = PACKAGE.joinpath(*package.split(".")[1:])
    return [package] + [f"{package}.{p.stem}" for p in sorted(folder.glob("*.py")) if p.stem != "__init__"]


def tree_files(folder: Path) -> list:
    return sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def fixture_key(*parts, modules: Iterable[str] = (), files: Iterable[Path] = ()) -> str:
    """Hash of `parts` (parameters, keys of the fixtures this one builds on), library versions,
    the source closure of `modules` and the other source `files` the fixture reads."""
    h = hashlib.sha256(json.dumps([str(p) for p in parts]).encode())
    h.update(sys.version.encode())
    for name in LIBRARIES:
        try:
            h.update(f"{name}={metadata.version(name)}".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{name}=none".encode())
    named = [(f"tinyrps/{p.relative_to(PACKAGE)}", p) for p in module_closure(modules)]
    named += [(os.path.relpath(p, REPO), Path(p)) for p in files]
    for name, path in named:
        h.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:20]


# ── storing and restoring ────────────────────────────────────────────────────

def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def manifest_of(folder: Path) -> dict:
    return {str(p.relative_to(folder)): sha256(p) for p in tree_files(folder) if p.name != MANIFEST}


def intact(entry: Path) -> bool:
    """The stored folder holds exactly the files, with exactly the bytes, it was stored with."""
    try:
        return json.loads((entry / MANIFEST).read_text()) == manifest_of(entry)
    except (OSError, ValueError):
        return False


def cached_folder(name: str, key: str, build: Callable[[Path], None], dest: Path) -> Path:
    """Fill `dest` (an empty folder, made if missing) with the fixture's files: a copy of the stored ones, or
    built by `build(dest)` and then stored. Returns dest."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    dest.mkdir(parents=True, exist_ok=True)
    entry = root / f"{name}-{key}"
    with open(root / f".{name}-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)   # one session builds, others wait and copy
        if entry.is_dir() and not intact(entry):
            _remove(entry)
        if entry.is_dir():
            shutil.copytree(entry, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns(MANIFEST))
            _make_writable(dest)
            os.utime(entry)
            return dest
        build(dest)
        _store(dest, entry)
    _prune(root)
    return dest


def _store(source: Path, entry: Path) -> None:
    staging = entry.with_name(f".{entry.name}.{os.getpid()}.tmp")
    _remove(staging)
    shutil.copytree(source, staging)
    (staging / MANIFEST).write_text(json.dumps(manifest_of(staging), indent=1))
    for path in tree_files(staging):
        path.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    os.replace(staging, entry)


def _prune(root: Path) -> None:
    """Remove stored folders unused for PRUNE_AFTER_S, skipping any another session holds."""
    cutoff = time.time() - PRUNE_AFTER_S
    for old in root.iterdir():
        if not old.is_dir() or old.name.startswith(".") or old.stat().st_mtime > cutoff:
            continue
        lock_path = root / f".{old.name}.lock"
        with open(lock_path, "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue
            _remove(old)
            lock_path.unlink(missing_ok=True)


def _make_writable(folder: Path) -> None:
    for path in tree_files(folder):
        path.chmod(path.stat().st_mode | stat.S_IWUSR)


def _remove(folder: Path) -> None:
    if folder.exists():
        _make_writable(folder)
        shutil.rmtree(folder)


# ── replays ──────────────────────────────────────────────────────────────────
def reference_int8(pte: Path, images) -> "np.ndarray":
    """ExecuTorch's Python Cortex-M operators replaying the program on `images`: its int8 outputs
    (tinyrps.reference.cortex_m.reference_int8), kept across runs by the program's and the images'
    bytes (a replay of 600 pictures takes some 8 s; the boards' and the library's tests compare
    against the same ones)."""
    import numpy as np
    images = np.ascontiguousarray(images)
    data = Path(pte).read_bytes()
    key = fixture_key("reference-int8", hashlib.sha256(data).hexdigest(), images.dtype.str, images.shape,
                      hashlib.sha256(images.tobytes()).hexdigest(), modules=["tinyrps.reference.cortex_m"])

    def build(folder: Path) -> None:
        from tinyrps.reference.cortex_m import reference_int8 as replay
        np.save(folder / "int8.npy", replay(Path(pte), images))
    with tempfile.TemporaryDirectory(prefix="reference-") as work:
        return np.load(cached_folder("reference-int8", key, build, Path(work)) / "int8.npy")
