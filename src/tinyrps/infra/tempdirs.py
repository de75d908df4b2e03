"""Temporary folders in the system's temporary folder, and what killed commands left there.

A command's working files (a QEMU board's log, a batch's inputs and results, a size build) go
into `temp_dir(kind)`: `$TMPDIR/tinyrps-KIND.PID.XXXXXXXX/`, removed when the block ends, by
an exception or by Ctrl-C alike. A process killed outright (SIGKILL, a closed terminal's SIGHUP,
the out-of-memory killer) cannot remove its own: the emulators die with it (PDEATHSIG), its
folders stay. So the first temporary folder a process makes removes those of earlier tinyrps
processes that are gone: the process id in the name is no running process, the folder is this
user's, and it has not changed for LEFT_BEHIND_AFTER_S. (Only a process of another PID namespace
sharing the folder, where the id means nothing, could lose a folder it still uses, and only one it
left unchanged that long; its clean-up then ignores the loss.)
"""
from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

from .artifacts.staging import process_alive

PREFIX = "tinyrps-"
LEFT_BEHIND_AFTER_S = 3600.0
_NAME = re.compile(rf"^{re.escape(PREFIX)}[a-z0-9-]+\.(\d+)\.[^/]+$")
_swept = False
_sweep_lock = threading.Lock()


def temp_dir(kind: str) -> tempfile.TemporaryDirectory:
    """A new temporary folder for `kind` (a word: "qemu", "batch", ...), removed on cleanup()."""
    sweep_once()
    return tempfile.TemporaryDirectory(prefix=f"{PREFIX}{kind}.{os.getpid()}.", ignore_cleanup_errors=True)


def sweep_once() -> None:
    """Remove what gone processes left (left_behind), once per process."""
    global _swept
    with _sweep_lock:
        if _swept:
            return
        _swept = True
    for folder in left_behind(Path(tempfile.gettempdir())):
        shutil.rmtree(folder, ignore_errors=True)


def left_behind(root: Path) -> list:
    """The temporary folders under `root` of tinyrps processes that no longer run (see the module
    docstring), oldest first. The temporary folder is shared, unlike the output folders that
    artifacts.remove_dead_entries tidies: only this user's folders count, and only old ones."""
    now = time.time()
    found = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return []
    for entry in entries:
        match = _NAME.match(entry.name)
        if match is None:
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if (entry.is_dir(follow_symlinks=False) and info.st_uid == os.getuid()
                and now - info.st_mtime >= LEFT_BEHIND_AFTER_S and not process_alive(int(match.group(1)))):
            found.append((info.st_mtime, Path(entry.path)))
    return [path for _, path in sorted(found)]


_cache: list = []


def missing_home():
    """The user's home folder if it does not exist (HOME names a folder that is not there), else None."""
    home = os.path.expanduser("~")
    return None if os.path.isdir(home) else home


def temporary_cache() -> str:
    """A cache folder for this process, removed at its end: where caches go when the home folder they
    belong in does not exist (tinyrps never makes a user's home folder). Said once on stderr."""
    if not _cache:
        _cache.append(temp_dir("cache"))       # its finaliser removes it as the interpreter exits
        print(f"tinyrps: note: the home folder {missing_home()} does not exist, so this command keeps its caches "
              "(firmware builds, plot fonts) in a temporary folder it removes at its end: set HOME to a folder "
              "to keep them", file=sys.stderr)
    return _cache[0].name
