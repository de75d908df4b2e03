"""The processes the tests look for, read from /proc: by parent or by process group, and their command lines."""
from __future__ import annotations

from pathlib import Path


def _with_stat_field(index: int, value: int) -> list:
    """The pids whose /proc/PID/stat field `index` (counted after the command's closing parenthesis:
    0 state, 1 parent, 2 process group) is `value`; a process that ends meanwhile is passed over."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[index]) == value:
                found.append(int(entry.name))
        except (OSError, ValueError, IndexError):
            pass
    return found


def children(pid: int) -> list:
    return _with_stat_field(1, pid)


def in_group(group: int) -> list:
    return _with_stat_field(2, group)


def command_of(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""
