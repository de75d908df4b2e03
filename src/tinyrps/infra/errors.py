"""User-facing errors: the CLI prints the message on one line and exits with code 2."""
from __future__ import annotations

from pathlib import Path


class UserError(Exception):
    """Bad input from the user: a missing file, a wrong option, a corrupted program."""


def require_file(path, what: str, hint: str = "") -> Path:
    """`path` as a Path if it is an existing file; else a UserError that tells a missing
    file from a folder given where a file belongs. `hint` says how to get the file."""
    path = Path(path)
    if path.is_file():
        return path
    tail = f" ({hint})" if hint else ""
    if path.is_dir():
        raise UserError(f"{what} {path} is a folder, not a file{tail}")
    raise UserError(f"{what} not found: {path}{tail}")


def one_line(error: BaseException, limit: int = 300) -> str:
    """An exception's message on one line, cut to `limit` characters: for a UserError that
    quotes what a library said."""
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= limit else text[:limit - 3] + "..."
