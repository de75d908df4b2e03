"""Checksums and single files: SHA-256, fsync, atomic writes that replace only a regular file or nothing,
and the memory and disk a stage can count on.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Optional

from ..errors import UserError


# ── checksums and single files ───────────────────────────────────────────────
def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fsync_dir(path) -> None:
    """Make a folder's entries (new names, renames) durable; a file system that cannot sync a
    folder (some network ones) is left to do what it does."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EBADF):
            raise
    finally:
        os.close(fd)


# What a path is that a file may not be renamed over, by the stat module's test of it.
NOT_A_FILE = (("a folder", stat.S_ISDIR), ("a character device", stat.S_ISCHR), ("a block device", stat.S_ISBLK),
              ("a named pipe", stat.S_ISFIFO), ("a socket", stat.S_ISSOCK))


def check_replaceable_file(path, option: str = "") -> Path:
    """`path` if a file may be written there by renaming a new one over it: it is absent or a regular
    file (a link is judged by what it points to), and its parent is a folder or can be made one.
    Anything else (a device, a named pipe, a folder, a parent that is a file) is one line, refused
    before any work: the rename would put a file where the system or the user keeps something else."""
    path = Path(path)
    named = f"{option} {path}" if option else str(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    except NotADirectoryError:
        mode = None                   # a parent is a file: told below
    if mode is not None and not stat.S_ISREG(mode):
        what = next((text for text, test in NOT_A_FILE if test(mode)), "not a regular file")
        why = "" if stat.S_ISDIR(mode) else ", which tinyrps does not replace (only a regular file)"
        raise UserError(f"{named} is {what}{why}: give a file name")
    for parent in path.parents:
        if os.path.lexists(parent):
            if not parent.is_dir():
                raise UserError(f"{named}: {parent} is a file, not a folder: give a path in a folder")
            break
    return path


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write a file whole or not at all: a unique temporary file beside it, synced, renamed over it
    (only over a regular file: check_replaceable_file)."""
    path = check_replaceable_file(path)
    if not path.parent.is_dir():
        path.parent.mkdir(parents=True, exist_ok=True)
    # the writer's pid in the name: what a killed writer leaves is told from a live one's (tidy)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{os.getpid()}-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the file normal permissions
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_json(path: Path, obj) -> None:
    atomic_write_bytes(path, (json.dumps(obj, indent=2) + "\n").encode())


# ── resources ────────────────────────────────────────────────────────────────
def available_memory() -> Optional[int]:
    """Bytes of memory this process can still get: the system's available memory, or less
    under a control group's limit; None where neither can be read."""
    found = []
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    found.append(int(line.split()[1]) * 1024)
    except OSError:
        pass
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit != "max":
            found.append(int(limit) - int(Path("/sys/fs/cgroup/memory.current").read_text()))
    except (OSError, ValueError):
        pass
    return min(found) if found else None


def free_disk(folder) -> int:
    """Free bytes on the file system that holds `folder` (or would: its nearest existing parent)."""
    path = Path(folder).resolve()
    while not path.exists():
        path = path.parent
    return shutil.disk_usage(path).free


def human_bytes(n: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB", "TB", "PB"):
        if n < 1000 or unit == "PB":
            return f"{n:,.0f} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1000
