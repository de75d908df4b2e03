"""Command line: one command per pipeline stage, each a `Command` record (options.Command) in the table
below, its options and its handler side by side in its module. Thin: parse, check, call the stage, print.

    stages     data, train, export, measure, all
    inference  eval, classify, bench, run
    game       play, serve
    search     npu-sweep, tune
    deploy     deploy fvp, deploy library

Every number and every path named on the command line is checked before any work
starts. A user error (tinyrps.infra.errors.UserError, a bad argument, a file or disk
problem the user can fix) prints one line on stderr and exits with code 2; any other
failure is a bug and prints its traceback (TINYRPS_DEBUG=1 shows the traceback of
every error). stdout carries only results (tables, or JSON with --json).

Heavy modules (torch, ExecuTorch, matplotlib) are imported inside the commands that
need them, so `tinyrps --help` and a mistyped option answer at once.
"""
from __future__ import annotations

import argparse
import errno
import os
import sys
import traceback

from ...infra import ctrl_c
from ...infra.errors import UserError
from ...infra.library_noise import quiet_libraries
from . import deploy, game, inference, search, stages

DEBUG_ENV = "TINYRPS_DEBUG"
EXIT_USER_ERROR = 2
EXIT_BUG = 1
EXIT_INTERRUPTED = 130      # 128 + SIGINT: what a shell reports for a command stopped by Ctrl-C

# Every command, in the order --help lists them. Adding a command is its record in its module's COMMANDS.
COMMANDS = stages.COMMANDS[:-1] + inference.COMMANDS + game.COMMANDS + stages.COMMANDS[-1:] + search.COMMANDS + \
    deploy.COMMANDS
GROUPS = {"deploy": deploy.GROUP_HELP}      # commands of two words: the first word's help


class Parser(argparse.ArgumentParser):
    def error(self, message):
        print(f"{self.prog}: error: {message} (see `{self.prog} --help`)", file=sys.stderr)
        raise SystemExit(EXIT_USER_ERROR)


class HelpWithDefaults(argparse.HelpFormatter):
    """Adds '(default: X)' to an option's help where the default is a value; options whose
    default is decided at run time say it in their own help text."""

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if ("default" not in text and action.option_strings and action.nargs != 0
                and default not in (None, argparse.SUPPRESS)):
            text += " (default: %(default)s)"
        return text


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as package_version
    try:
        return package_version("tinyrps")
    except PackageNotFoundError:   # run from a source tree that was never installed
        return "unknown (not installed)"


class VersionAction(argparse.Action):
    """--version: looked up only when asked for (the package metadata costs a few ms)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"tinyrps {version()}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="tinyrps", formatter_class=HelpWithDefaults,
               description="A tiny rock-paper-scissors classifier, from PyTorch to Arm microcontrollers.",
               epilog=f"Errors: one line on stderr and exit code {EXIT_USER_ERROR} for a user error; "
                      f"{DEBUG_ENV}=1 shows the traceback of any error.")
    p.add_argument("--version", action=VersionAction, help="print the version and exit")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser, metavar="COMMAND")
    groups = {}
    for command in COMMANDS:
        parent, _, name = command.name.rpartition(" ")
        if parent and parent not in groups:
            g = sub.add_parser(parent, help=GROUPS[parent], description=GROUPS[parent])
            groups[parent] = g.add_subparsers(dest="where", required=True, parser_class=Parser, metavar="WHERE")
        s = (groups[parent] if parent else sub).add_parser(
            name, help=command.help, description=command.description or command.help,
            formatter_class=HelpWithDefaults)
        s.set_defaults(func=command.run)
        if command.quiet:
            s.add_argument("--quiet", action="store_true", help="no progress bars")
        command.arguments(s)
    return p


# ── errors ──────────────────────────────────────────────────────────────────
# What a user can cause and fix with a file or folder: these OS errors are one line, not a bug.
USER_ERRNOS = {
    errno.EACCES: "choose a place you may write to, or change its permissions",
    errno.EPERM: "choose a place you may write to, or change its permissions",
    errno.EROFS: "choose a place on a writable file system",
    errno.ENOSPC: "free some space, or write somewhere else",
    errno.EDQUOT: "free some space, or write somewhere else",
    errno.EFBIG: "free some space, or write somewhere else",
    errno.ENOENT: "",
    errno.EISDIR: "",
    errno.ENOTDIR: "",
    errno.ENAMETOOLONG: "",
}
# Only the plain file-system exception classes: TimeoutError, ConnectionError or pyserial's
# SerialException (all OSErrors) mean something else went wrong.
USER_OS_ERROR_TYPES = (OSError, PermissionError, FileNotFoundError, IsADirectoryError, NotADirectoryError)


def is_user_os_error(e: BaseException) -> bool:
    return type(e) in USER_OS_ERROR_TYPES and e.errno in USER_ERRNOS


def os_error_line(e: OSError) -> str:
    where = f": {e.filename}" if e.filename else ""
    hint = USER_ERRNOS[e.errno]
    return f"{e.strerror or e}{where}" + (f" ({hint})" if hint else "")


def debugging() -> bool:
    return os.environ.get(DEBUG_ENV, "") not in ("", "0")


def report_error(line: str) -> None:
    if debugging():
        traceback.print_exc()
    print(f"tinyrps: error: {line}", file=sys.stderr)


def report_bug(e: BaseException) -> None:
    traceback.print_exc()
    print(f"tinyrps: internal error ({type(e).__name__}): this is a bug in tinyrps, not something you did; "
          "please report it with the command you ran and the traceback above", file=sys.stderr)


def interrupted() -> int:
    if debugging():
        traceback.print_exc()
    print("tinyrps: interrupted", file=sys.stderr)
    return EXIT_INTERRUPTED


def main(argv=None) -> int:
    ctrl_c.install()      # a Ctrl-C that lands in a weakref callback stops the command all the same
    try:
        return run_command(argv)
    finally:
        ctrl_c.settle()     # the exit status is chosen: no Ctrl-C is sent again into the shutdown


def run_command(argv) -> int:
    try:
        quiet_libraries()
        args = build_parser().parse_args(argv)
    except KeyboardInterrupt:      # Ctrl-C while the command line is still being read
        return interrupted()
    try:
        status = args.func(args)
    except BrokenPipeError:   # output piped into `head` and the like
        return 0
    except UserError as e:
        report_error(str(e))
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        return interrupted()
    except Exception as e:
        if ctrl_c.caused_by_ctrl_c(e) or ctrl_c.received():
            return interrupted()
        if is_user_os_error(e):
            report_error(os_error_line(e))
            return EXIT_USER_ERROR
        report_bug(e)
        return EXIT_BUG
    return status or 0   # a stage may finish its work and still report a problem (classify: a bad picture)
