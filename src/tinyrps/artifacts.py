"""The files and folders the pipeline writes and reads back: atomic writes, checksums,
whole-folder stages with a manifest, a lock per output folder and a run's configuration
(a program's descriptor is tinyrps.descriptor's).

A stage's result is a folder (a data set, a training run). It is never written in place:
`staged_folder(target, kind)` hands the stage a fresh folder beside the target (a unique
hidden name), and when the stage is done it writes the folder's manifest last (every
file's size and SHA-256) and swaps the folder in whole. Until then the target is exactly
as it was; a stage that fails, is stopped by Ctrl-C or killed, or hits a full disk
leaves it so, and a new target that fails leaves nothing behind.

The swap. Linux cannot rename a folder over a non-empty one, so the swap is
renameat2(RENAME_EXCHANGE), which trades the two names atomically: at every instant the
target is either the old folder or the new one. Where the file system cannot exchange,
the old folder is renamed aside and the new one in; a crash between the two leaves no
target, and `recover` (run first by every writer and by a reader that finds no target)
puts back the folder whose manifest is complete: the new one if it has its manifest,
else the old one. Leftovers of a killed stage sit beside the target under hidden
names (.TARGET.stage-*, .TARGET.old-*, .TARGET.lock) and are removed by the next
writer or reader. Files and folders are fsync'ed before the renames that publish them,
so the same holds after a power loss.

The lock. A writer holds an flock on .TARGET.lock (which records its pid and start time)
for the whole stage; a second writer is refused with one line naming them. The kernel
drops the lock when its holder dies, however it dies, so a lock file left by a killed
process is simply taken over. Readers take no lock: they read the target, which is
always whole, and check what they read against the manifest (and the folder's own
record: data.json, config.json), so a folder replaced while it is read is refused, not
mixed. A stage that adds files to a folder another stage owns (an export into
RUN/export) should hold that folder's lock (`folder_lock(RUN)`) while it writes, so that
a swap of the folder cannot drop them.

Files of the old folder that the new stage does not own (the manifest says which are the
stage's) are carried over into the new folder (hard links, or copies where links are not
possible): a retrained run keeps its exported programs (their descriptors record the
checkpoint they were made from; eval and bench refuse them until they are exported again) and whatever a user put there.

Every stage uses this module, so it imports only the standard library: reading a
descriptor or writing a JSON result must not cost a torch or ExecuTorch import.
"""
from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import stat
import tempfile
import threading
import time
from pathlib import Path
from typing import Iterable, Optional

from .errors import UserError

MANIFEST = "manifest.json"
MANIFEST_FORMAT = 1
# What each kind of folder is, the command that makes it (and makes folder {dir} again), and
# the files by which a folder made before manifests existed is recognised (it may be
# replaced; any other non-empty folder is not tinyrps's to replace).
FOLDER_KINDS = {
    "data": ("a data set", "tinyrps data", "tinyrps data --out {dir}", ("data.json", "train.npz")),
    "run": ("a training run", "tinyrps train", "tinyrps train --data DATA --out {dir}", ("config.json", "model.pt")),
}
# The keys a run's config.json must hold (written by tinyrps.train).
RUN_CONFIG_KEYS = {"data": str, "arch": str, "epochs": int, "seed": int, "checkpoint_sha256": str,
                   "data_identity": dict}
LOCK_WAIT_FOR_HOLDER_S = 1.0     # a new lock holder writes its pid right after locking


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


def _complete(folder: Path) -> bool:
    """A folder whose manifest is there and whose listed files all match it."""
    try:
        check_manifest(folder)
        return True
    except (UserError, OSError):
        return False


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
            complete = [s for s in stages if _complete(s)]
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


# ── a data set's record ──────────────────────────────────────────────────────
def data_info(data_dir) -> tuple:
    """(DATA/data.json as a dict, its SHA-256): checked against the folder's manifest, with a
    sha256 recorded for each split. Every split a reader loads is checked against it."""
    data_dir = Path(data_dir)
    recover_for_reading(data_dir)
    hint = remake_hint(data_dir, "data")
    path = data_dir / "data.json"
    if not data_dir.is_dir():
        raise UserError(f"no data set at {data_dir}: create it with {hint}")
    read_manifest(data_dir, "data")      # another kind of folder is named as such
    if not path.is_file():
        raise UserError(f"{data_dir} has no data.json, so its splits cannot be checked (not made by this version "
                        f"of tinyrps, or not finished): make it again with {hint}")
    raw = verified_bytes(data_dir, "data.json", "data")
    info = _json_object(raw, path, hint)
    splits = info.get("splits")
    if not isinstance(splits, dict) or not all(isinstance(s, dict) and isinstance(s.get("sha256"), str)
                                               for s in splits.values()):
        raise UserError(f"{path} records no checksum of the splits (made by an older tinyrps, or edited): "
                        f"make the data again with {hint}")
    return info, sha256_bytes(raw)


def _json_object(raw: bytes, path: Path, hint: str) -> dict:
    if not raw.strip():
        raise UserError(f"{path} is empty: make it again with {hint}")
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        where = f" (line {e.lineno})" if isinstance(e, json.JSONDecodeError) else ""
        raise UserError(f"{path} is not valid JSON{where}: make it again with {hint}") from None
    if not isinstance(obj, dict):
        raise UserError(f"{path} holds a JSON {type(obj).__name__}, not an object: make it again with {hint}")
    return obj


def data_identity(info: dict, info_sha256: str) -> dict:
    """What a run records of the data it was trained on: enough to tell the same data from
    other data, and to make it again."""
    train_count = info.get("per_class", {}).get("train") if isinstance(info.get("per_class"), dict) else None
    return {"data_json_sha256": info_sha256, "seed": info.get("seed"), "per_class": train_count,
            "splits": {name: split["sha256"] for name, split in info["splits"].items()}}


# ── a run's record ───────────────────────────────────────────────────────────
def run_config(run_dir) -> dict:
    """RUN/config.json, checked: against the run's manifest when it has one, and for the keys
    every later stage reads. Any problem is one line naming the file."""
    run_dir = Path(run_dir)
    recover_for_reading(run_dir)
    path = run_dir / "config.json"
    hint = remake_hint(run_dir, "run")
    if not path.is_file():
        raise UserError(f"{run_dir} is not a training run (no config.json): create one with {hint}")
    config = _json_object(verified_bytes(run_dir, "config.json", "run"), path, hint)
    for key, kind in RUN_CONFIG_KEYS.items():
        if key not in config:
            raise UserError(f"{path} has no '{key}' (made by an older tinyrps, or edited): train again with {hint}")
        if not isinstance(config[key], kind) or isinstance(config[key], bool):
            raise UserError(f"{path}: '{key}' is {json.dumps(config[key])[:40]}, not a {kind.__name__}: "
                            f"train again with {hint}")
    return config


def check_run_data(run_dir, splits: Optional[Iterable[str]] = None, data_option: bool = False) -> Path:
    """The data folder a run was trained on, if it still holds that data: each of `splits`
    (default: every split the run recorded) has the checksum it had at training. Otherwise one
    line saying which split changed and how to get the run's data back (or, for a command
    that takes --data, `data_option`, to give another folder)."""
    run_dir = Path(run_dir)
    config = run_config(run_dir)
    data_dir = Path(config["data"])
    recorded = config["data_identity"].get("splits", {})
    seed, per_class = config["data_identity"].get("seed"), config["data_identity"].get("per_class")
    again = (f"`tinyrps data --out {data_dir}" + (f" --seed {seed}" if seed is not None else "")
             + (f" --per-class {per_class}" if per_class is not None else "") + "`")
    if not (data_dir / "data.json").is_file():
        raise UserError(f"the data {run_dir} was trained on is gone from {data_dir}: make it again with {again}"
                        + (", or give --data" if data_option else ""))
    info, _ = data_info(data_dir)
    for split in (list(splits) if splits is not None else list(recorded)):
        if split not in recorded:
            raise UserError(f"{run_dir / 'config.json'} records no {split} split: train again with "
                            f"{remake_hint(run_dir, 'run')}")
        if info["splits"].get(split, {}).get("sha256") != recorded[split]:
            raise UserError(f"the {split} split in {data_dir} is not the one {run_dir} was trained with (the data "
                            f"was made again since): make it again with {again}, or train again")
    return data_dir
