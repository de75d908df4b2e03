"""The lock. A writer holds an flock on .TARGET.lock (which records its pid and start time) for the
whole stage; a second writer is refused with one line naming them. The kernel drops the lock when its
holder dies, however it dies, so a lock file left by a killed process is simply taken over. Readers
take no lock: they read the target, which is always whole, and check it against its manifest. A stage
that adds files to a folder another stage owns (an export into RUN/export) holds that folder's lock
(`folder_lock(RUN)`) while it writes, so that a swap of the folder cannot drop them.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from pathlib import Path

from ..errors import UserError


LOCK_WAIT_FOR_HOLDER_S = 1.0     # a new lock holder writes its pid right after locking


# ── interrupts ───────────────────────────────────────────────────────────────
@contextlib.contextmanager
def interrupts_deferred():
    """Hold Ctrl-C and SIGTERM until the block is done (the few renames of a swap and the
    clean-up after a failure), then deliver them. Only the main thread receives signals."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received = []
    previous = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        previous[signum] = signal.signal(signum, lambda s, _frame: received.append(s))
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for signum in dict.fromkeys(received):
            signal.raise_signal(signum)


# ── the lock per output folder ───────────────────────────────────────────────
def lock_path(target: Path) -> Path:
    return target.parent / f".{target.name}.lock"


def real_target(target) -> Path:
    """The folder a target names, symbolic links resolved: the swap happens beside the real one."""
    return Path(os.path.realpath(Path(target).expanduser()))


_held_locks: dict = {}
_held_guard = threading.Lock()


class FolderBusy(UserError):
    """Another process is writing the folder."""


def _holder_line(target: Path, fd: int) -> str:
    holder = {}
    deadline = time.monotonic() + LOCK_WAIT_FOR_HOLDER_S
    while True:
        try:
            holder = json.loads(os.pread(fd, 4096, 0) or b"{}")
        except ValueError:
            holder = {}
        if holder.get("pid") or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    pid = holder.get("pid", "?")
    since = time.strftime("%H:%M", time.localtime(holder["since"])) if "since" in holder else "just now"
    return f"{target} is being written by tinyrps (pid {pid}) since {since}; wait or choose another folder"


@contextlib.contextmanager
def folder_lock(target):
    """Hold the write lock of `target` (a folder, made or not) for the block; another process
    holding it is a FolderBusy error naming it. Reentrant within a process."""
    target = real_target(target)
    key = str(target)
    with _held_guard:
        if key in _held_locks:
            _held_locks[key] += 1
            nested = True
        else:
            nested = False
    if nested:
        try:
            yield
        finally:
            with _held_guard:
                _held_locks[key] -= 1
        return
    fd = None
    try:
        with interrupts_deferred():      # Ctrl-C now would leave a lock file nobody removes
            fd = _acquire(target)
            with _held_guard:
                _held_locks[key] = 1
        yield
    finally:
        if fd is not None:
            with interrupts_deferred():
                with _held_guard:
                    _held_locks.pop(key, None)
                # removed while still held: a process that opened the old file sees it is gone and retries
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(lock_path(target))
                os.close(fd)


def _acquire(target: Path) -> int:
    import fcntl
    path = lock_path(target)
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except PermissionError:
            raise UserError(f"cannot write beside {target}: {target.parent} is not writable (a new result is built "
                            f"next to the old one and swapped in whole): choose a folder in a place you may write "
                            f"to") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            line = _holder_line(target, fd)
            os.close(fd)
            raise FolderBusy(line) from None
        except BaseException:
            os.close(fd)
            raise
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)     # the previous holder removed the file between our open and lock
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps({"pid": os.getpid(), "since": time.time()}).encode(), 0)
    return fd
