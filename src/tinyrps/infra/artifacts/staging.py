"""Whole-folder stages. A stage's result (a data set, a training run) is never written in place:
`staged_folder(target, kind)` hands the stage a fresh folder beside the target (a unique hidden name);
when the stage is done it writes the folder's manifest last and swaps the folder in whole. Until then
the target is exactly as it was, whatever stops the stage (Ctrl-C, a kill, a full disk).

The swap is renameat2(RENAME_EXCHANGE), which trades the two names atomically. Where the file system
cannot exchange, the old folder is renamed aside and the new one in; `recover` (run first by every
writer, and by a reader that finds no target) puts back the folder whose manifest is complete.
Leftovers of a killed stage sit beside the target under hidden names (.TARGET.stage-*, .TARGET.old-*)
and are removed by the next writer or reader. Files and folders are fsync'ed before the renames that
publish them. Files of the old folder that the new stage does not own are carried over into the new
one (hard links, or copies).
"""
from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import re
import secrets
import shutil
from pathlib import Path
from typing import Optional

from .files import fsync_dir
from .locks import folder_lock, interrupts_deferred, lock_path, real_target
from .manifest import (MANIFEST, describe_kind, folder_files, kind_text, manifest_complete, read_manifest,
                       write_manifest)
from ..errors import UserError


# ── leftovers and recovery ───────────────────────────────────────────────────
def _leftovers(target: Path) -> tuple:
    """(staged folders, folders set aside) of `target` left by earlier stages."""
    stages, olds = [], []
    try:
        names = os.listdir(target.parent)
    except FileNotFoundError:
        return stages, olds
    for name in names:
        if name.startswith(f".{target.name}.stage-"):
            stages.append(target.parent / name)
        elif name.startswith(f".{target.name}.old-"):
            olds.append(target.parent / name)
    return stages, olds


_LEFTOVER = re.compile(r"\..+\.(stage|old)-\d+-[0-9a-f]{8}")


def _is_leftover(entry: os.DirEntry) -> bool:
    """A staged or set-aside folder, or a lock file, of a stage of a folder inside this one."""
    if _LEFTOVER.fullmatch(entry.name):
        return True
    if not (entry.name.startswith(".") and entry.name.endswith(".lock") and entry.is_file(follow_symlinks=False)):
        return False
    try:
        holder = json.loads(Path(entry.path).read_bytes() or b"{}")
    except (OSError, ValueError):
        return False
    return isinstance(holder, dict) and set(holder) <= {"pid", "since"}


_active_stages: set = set()      # this process's stages under way: never another's leftovers


def recover(target) -> None:
    """Finish or undo a swap that was cut short, and remove what earlier stages left behind.
    The caller holds the target's lock."""
    target = real_target(target)
    stages, olds = _leftovers(target)
    stages = [s for s in stages if s not in _active_stages]
    if not stages and not olds:
        return
    with interrupts_deferred():
        if not os.path.lexists(target):
            complete = [s for s in stages if manifest_complete(s)]
            pick = max(complete or olds, key=lambda p: p.stat().st_ctime, default=None)
            if pick is not None:
                os.rename(pick, target)
                fsync_dir(target.parent)
        for leftover in stages + olds:
            if leftover.exists():
                shutil.rmtree(leftover, ignore_errors=True)
        fsync_dir(target.parent)


_TEMPORARY = re.compile(r"\..+\.(?P<pid>\d+)-[a-z0-9_]+\.tmp")      # atomic_write_bytes's, with its writer's pid


def process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_dead_entries(folder, pattern: re.Pattern) -> None:
    """The entries of `folder` whose names `pattern` matches in full and whose group "pid" names a
    process that is gone (a killed writer's files or folders), removed; a live writer's are left alone."""
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return
    for entry in entries:
        found = pattern.fullmatch(entry.name)
        if not found or process_alive(int(found.group("pid"))):
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.remove(entry.path)


def remove_dead_temporaries(folder) -> None:
    """The temporary files in `folder` of writers killed mid-write (a live writer's are left alone)."""
    remove_dead_entries(folder, _TEMPORARY)


def tidy(folder) -> None:
    """What killed writers of `folder` left: a swap cut short finished, their staged folders and
    set-aside folders removed and a dead holder's lock file cleared (under the folder's lock, so never
    a live writer's), and their temporary files beside and inside it removed. A stage does this even
    when its result is current and it writes nothing."""
    target = real_target(folder)
    if any(_leftovers(target)) or os.path.lexists(lock_path(target)):
        with folder_lock(target):
            recover(target)
    remove_dead_temporaries(target.parent)
    if target.is_dir():
        remove_dead_temporaries(target)


def recover_for_reading(folder) -> None:
    """What a reader does first: if the folder is missing but an interrupted swap left it beside
    its name, put it back (when no writer is at work; else that writer is named)."""
    target = real_target(folder)
    if os.path.lexists(target) or not any(_leftovers(target)):
        return
    with folder_lock(target):
        recover(target)


# ── the staged stage ─────────────────────────────────────────────────────────
def _make_parents(folder: Path) -> list:
    """Make the missing folders up to `folder` (not itself); return those made, deepest first."""
    made = []
    for parent in reversed([folder.parent, *folder.parent.parents]):
        if not parent.exists():
            try:
                parent.mkdir()
                made.append(parent)
            except FileExistsError:
                pass
    return made[::-1]


@contextlib.contextmanager
def parents_made(target: Path):
    """The missing folders up to `target` made for the block, and removed after it (those left empty)
    if the block leaves no `target`: a stage that fails on a new path leaves nothing behind."""
    made = []
    try:
        with interrupts_deferred():
            made += _make_parents(target)
        yield
    finally:
        with interrupts_deferred():
            if not target.exists():
                for folder in made:
                    with contextlib.suppress(OSError):
                        folder.rmdir()


def _check_replaceable(target: Path, kind: str) -> Optional[dict]:
    """The old folder's manifest (None if it has none); an error if `target` is not a folder
    this stage may replace: another kind of result, or a folder of someone else's files."""
    if not os.path.lexists(target):
        return None
    if not target.is_dir():
        raise UserError(f"{target} is a file: give a folder (it is created if missing)")
    if os.stat(target).st_dev != os.stat(target.parent).st_dev:
        raise UserError(f"{target} is a mount point, which cannot be replaced whole: give a folder inside it")
    manifest = read_manifest(target, kind)
    if manifest is not None:
        return manifest
    names = sorted(os.listdir(target))
    if names and not any(name in names for name in describe_kind(kind)[3]):
        shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        raise UserError(f"{target} is not empty and is not {kind_text(kind)} (it holds {shown}), so it is not "
                        f"replaced: choose a new or empty folder")
    return None


def _link_or_copy(src, dst) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _carry_over(old: Path, stage: Path, skip: set) -> None:
    """Bring the entries of the old folder that are not the stage's own into the new one."""
    for entry in os.scandir(old):
        if entry.name in skip or entry.name == MANIFEST or _is_leftover(entry):
            continue
        dst = stage / entry.name
        if os.path.lexists(dst):
            continue
        if entry.is_symlink():
            os.symlink(os.readlink(entry.path), dst)
        elif entry.is_dir():
            shutil.copytree(entry.path, dst, symlinks=True, copy_function=_link_or_copy)
        else:
            _link_or_copy(entry.path, dst)


_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def exchange(a: Path, b: Path) -> bool:
    """Swap the names of two folders atomically (Linux renameat2); False where the system or
    the file system cannot."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    renameat2.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint)
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), str(b))


def swap_in(stage: Path, target: Path) -> None:
    """Put the finished `stage` at `target`; the old folder, if any, is removed."""
    if not os.path.lexists(target):
        os.rename(stage, target)
        fsync_dir(target.parent)
        return
    # the new folder is in place once the names are swapped: what is left of the old one, if it
    # cannot be removed now, is a leftover the next writer or reader removes
    if exchange(stage, target):
        fsync_dir(target.parent)
        shutil.rmtree(stage, ignore_errors=True)       # now the old folder
        return
    aside = target.parent / f".{target.name}.old-{os.getpid()}-{secrets.token_hex(4)}"
    os.rename(target, aside)
    os.rename(stage, target)           # a crash between the two: `recover` rolls forward
    fsync_dir(target.parent)
    shutil.rmtree(aside, ignore_errors=True)


@contextlib.contextmanager
def staged_folder(target, kind: str, carry: bool = True):
    """Build a stage's folder beside `target` and swap it in whole when the block ends without
    an error; yields the folder to write into. The stage owns every file it writes; with
    `carry`, the old folder's other entries are kept in the new one. An exception leaves
    `target` exactly as it was (and no folder where there was none)."""
    target = real_target(target)
    with parents_made(target), folder_lock(target):
        recover(target)
        old_manifest = _check_replaceable(target, kind)
        stage = target.parent / f".{target.name}.stage-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            stage.mkdir()
            _active_stages.add(stage)
            yield stage
            with interrupts_deferred():
                owned = folder_files(stage)
                if carry and target.is_dir():
                    skip = {name.split("/")[0] for name in owned}
                    skip |= {name.split("/")[0] for name in (old_manifest or {}).get("files", {})}
                    _carry_over(target, stage, skip)
                write_manifest(stage, kind, owned)
                try:
                    swap_in(stage, target)
                except OSError as e:
                    if e.errno not in (errno.EBUSY, errno.EXDEV):
                        raise
                    raise UserError(f"{target} cannot be replaced ({e.strerror}; a mount point?): give a "
                                    f"folder inside it") from None
        except BaseException:
            with interrupts_deferred():
                shutil.rmtree(stage, ignore_errors=True)
            raise
        finally:
            _active_stages.discard(stage)
