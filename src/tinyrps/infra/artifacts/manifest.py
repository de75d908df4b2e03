"""A folder's manifest (manifest.json): every file's size and SHA-256, written last, so a folder with a
complete manifest is whole; readers check what they read against it.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Iterable, Optional

from .files import atomic_write_json, fsync_dir, sha256_bytes, sha256_file
from ..errors import UserError


MANIFEST = "manifest.json"
MANIFEST_FORMAT = 1

# What each kind of folder is, the command that makes it (and makes folder {dir} again), and
# the files by which a folder made before manifests existed is recognised (it may be
# replaced; any other non-empty folder is not tinyrps's to replace).
FOLDER_KINDS = {
    "data": ("a data set", "tinyrps data", "tinyrps data --out {dir}", ("data.json", "train.npz")),
    "run": ("a training run", "tinyrps train", "tinyrps train --data DATA --out {dir}", ("config.json", "model.pt")),
}


def describe_kind(kind: str) -> tuple:
    """(what it is, its command, the command that makes folder {dir}, files of an older folder of this kind)."""
    return FOLDER_KINDS.get(kind, (f"a '{kind}' folder", "tinyrps", "tinyrps", ()))


def kind_text(kind: str) -> str:
    noun, command, _, _ = describe_kind(kind)
    return f"{noun} (made by `{command}`)"


def remake_hint(folder, kind: str) -> str:
    return f"`{describe_kind(kind)[2].format(dir=folder)}`"


# ── manifests ────────────────────────────────────────────────────────────────
def folder_files(folder: Path) -> list:
    """Every file under `folder` (relative POSIX paths, sorted), the manifest itself excepted."""
    folder = Path(folder)
    found = []
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in files:
            rel = Path(root, name).relative_to(folder).as_posix()
            if rel != MANIFEST:
                found.append(rel)
    return sorted(found)


def write_manifest(folder, kind: str, files: Optional[Iterable[str]] = None) -> dict:
    """Record every file's size and SHA-256 in FOLDER/manifest.json (default: all files under
    the folder), after syncing them and their folders to disk; the manifest is written last."""
    folder = Path(folder)
    entries = {}
    for rel in sorted(files if files is not None else folder_files(folder)):
        h = hashlib.sha256()
        with open(folder / rel, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
            size = f.tell()
            os.fsync(f.fileno())
        entries[rel] = {"bytes": size, "sha256": h.hexdigest()}
    for root, _, _ in os.walk(folder):
        fsync_dir(root)
    manifest = {"format": MANIFEST_FORMAT, "kind": kind, "files": entries}
    atomic_write_json(folder / MANIFEST, manifest)
    return manifest


def refresh_manifest(folder) -> dict:
    """Hash the files a manifest lists again, after a deliberate change to one of them."""
    manifest = read_manifest(folder)
    if manifest is None:
        raise UserError(f"{folder} has no {MANIFEST} to refresh")
    return write_manifest(folder, manifest["kind"], manifest["files"])


def read_manifest(folder, kind: Optional[str] = None) -> Optional[dict]:
    """FOLDER/manifest.json, or None if there is none; a corrupt one, or one of another kind
    of folder than `kind`, is an error."""
    folder = Path(folder)
    path = folder / MANIFEST
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    manifest, why = _parse_manifest(raw)
    hint = remake_hint(folder, kind or (manifest or {}).get("kind", ""))
    if manifest is None:
        raise UserError(f"{path} is corrupt ({why}): make {folder} again with {hint}")
    if kind is not None and manifest["kind"] != kind:
        raise UserError(f"{folder} holds {kind_text(manifest['kind'])}, not {describe_kind(kind)[0]}: "
                        f"give another folder")
    return manifest


def _parse_manifest(raw: bytes) -> tuple:
    """(manifest, None) or (None, what is wrong)."""
    try:
        manifest = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None, "empty" if not raw.strip() else "not valid JSON"
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        return None, "not a tinyrps manifest"
    files = manifest.get("files")
    if not isinstance(manifest.get("kind"), str) or not isinstance(files, dict) or not all(
            isinstance(e, dict) and isinstance(e.get("sha256"), str) and isinstance(e.get("bytes"), int)
            for e in files.values()):
        return None, "not a tinyrps manifest"
    return manifest, None


def mismatch(folder, name: str, record: str, kind: str) -> UserError:
    return UserError(f"{Path(folder) / name} is not the file {record} records (changed, damaged or mixed with "
                     f"another result since tinyrps wrote it, or being replaced right now): make {folder} again "
                     f"with {remake_hint(folder, kind)}")


def verified_bytes(folder, name: str, kind: str, manifest: Optional[dict] = None) -> bytes:
    """The bytes of FOLDER/NAME, checked against the folder's manifest when it has one and
    lists the file. Read once and checked as read: what is returned is what was checked."""
    folder = Path(folder)
    data = (folder / name).read_bytes()
    manifest = read_manifest(folder, kind) if manifest is None else manifest
    entry = manifest["files"].get(name) if manifest else None
    if entry is not None and sha256_bytes(data) != entry["sha256"]:
        raise mismatch(folder, name, f"{folder / MANIFEST}", kind)
    return data


def check_manifest(folder, kind: Optional[str] = None, files: Optional[Iterable[str]] = None) -> dict:
    """Check that FOLDER has a manifest (of `kind`) and that the files it lists (or only
    `files`) are there with the recorded bytes; returns the manifest."""
    folder = Path(folder)
    manifest = read_manifest(folder, kind)
    if manifest is None:
        raise UserError(f"{folder} has no {MANIFEST}: it was not written whole by this version of tinyrps "
                        f"(an older or interrupted run, or a copy); make it again with "
                        f"{remake_hint(folder, kind or '')}")
    kind = manifest["kind"]
    for name in (files if files is not None else manifest["files"]):
        entry = manifest["files"].get(name)
        path = folder / name
        if entry is None or not path.is_file() or path.stat().st_size != entry["bytes"] \
                or sha256_file(path) != entry["sha256"]:
            raise mismatch(folder, name, str(folder / MANIFEST), kind)
    return manifest


def manifest_complete(folder: Path) -> bool:
    """A folder whose manifest is there and whose listed files all match it."""
    try:
        check_manifest(folder)
        return True
    except (UserError, OSError):
        return False
