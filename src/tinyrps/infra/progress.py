"""Progress bars and the console: rich on stderr, so stdout stays clean for --json."""
from __future__ import annotations

import contextlib
import sys

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

console = Console(stderr=True, highlight=False)


@contextlib.contextmanager
def progress_bar(quiet: bool = False):
    """A rich Progress on stderr; disabled when quiet or when stderr is not a terminal-ish stream."""
    bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[status]}"), TimeElapsedColumn(), TimeRemainingColumn(),
                   console=console, disable=quiet, transient=False)
    with bar:
        yield bar


def say(message: str, quiet: bool = False) -> None:
    if not quiet:
        console.print(message)


def stdout_is_terminal() -> bool:
    return sys.stdout.isatty()
