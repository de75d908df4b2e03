"""`python -m tinyrps ARGS` in a process forked from one that has already imported torch and numpy.

Most commands import torch first thing (1.5-3 s of a test's time), and the tests run about a hundred
of them. Here one server process per test session imports torch and numpy once, then forks a child per
command. The child is a real process running `python -m tinyrps`'s own `__main__` (runpy) with the
command's arguments, working folder, environment and standard input, its standard output and error in
files, and it exits as the interpreter would: non-daemon threads joined, atexit handlers run, the exit
code main returned (or -N for a signal). The only difference from a fresh interpreter is that torch
and numpy are already in sys.modules; the server refuses to start if importing them printed or warned
anything, since a fresh `tinyrps` would then print it too. Tests about what a command imports, or about
its signals, start their own interpreter (tests/test_startup.py).

Run as a script, this file is the server: it reads one JSON request a line on standard input and
answers `pid N` when the child starts and `status S` when it ends.
"""
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

PRELOAD = ("torch", "numpy")


# ── the server (this file run as a script) ──────────────────────────────────────────────────────

def _read_line(fd: int) -> bytes:
    """One line of fd, read unbuffered (a child must inherit no read-ahead of later requests)."""
    line = b""
    while not line.endswith(b"\n"):
        chunk = os.read(fd, 1)
        if not chunk:
            return b""
        line += chunk
    return line


def _child(request: dict) -> None:
    """Become `python -m tinyrps ARGS` and never return."""
    code = 1
    try:
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        for fd, (path, mode) in enumerate([(request["stdin"], os.O_RDONLY),
                                           (request["stdout"], os.O_WRONLY), (request["stderr"], os.O_WRONLY)]):
            opened = os.open(path, mode)
            os.dup2(opened, fd)
            os.close(opened)
        sys.path[0] = os.getcwd()          # as `python -m` sets it
        sys.argv = ["-m", *request["args"]]
        import runpy
        try:
            runpy.run_module("tinyrps", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as e:
            if e.code is None:
                code = 0
            elif isinstance(e.code, int):
                code = e.code
            else:
                print(e.code, file=sys.stderr)
                code = 1
        except BaseException:   # the interpreter's own report of an uncaught exception
            sys.excepthook(*sys.exc_info())
            code = 1
        threading._shutdown()               # what the interpreter does at exit, in its order
        import atexit
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
    finally:
        os._exit(code & 0xFF)


def serve() -> None:
    import warnings
    saved = os.dup(2)
    with tempfile.TemporaryFile() as noise:
        os.dup2(noise.fileno(), 2)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for module in PRELOAD:
                __import__(module)
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        noise.seek(0)
        printed = noise.read().decode(errors="replace").strip()
    if printed or caught:
        said = printed or "; ".join(str(w.message) for w in caught)
        os.write(1, f"unclean importing {', '.join(PRELOAD)} printed or warned: {said}\n".encode())
        return
    os.write(1, b"ready\n")
    while True:
        line = _read_line(0)
        if not line:
            return
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request)
        os.write(1, f"pid {pid}\n".encode())
        _, status = os.waitpid(pid, 0)
        os.write(1, f"status {os.waitstatus_to_exitcode(status)}\n".encode())


# ── the client (imported by tests/conftest.py) ──────────────────────────────────────────────────

class CliServer:
    """run(*args, input=None, timeout=300, cwd=None) -> subprocess.CompletedProcess, as `run_cli` gives."""

    def __init__(self, work: Path, env: dict):
        self.work, self.env, self.lock, self.count = Path(work), env, threading.Lock(), 0
        # unbuffered: select() on the pipe must see every answer not yet read
        self.process = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        env=env, cwd=work, bufsize=0)
        first = self.process.stdout.readline().decode().strip()
        if first != "ready":
            self.close()
            raise RuntimeError(f"the tinyrps command server did not start: {first or 'no answer'}")

    def _answer(self, word: str, deadline: float | None) -> int:
        import time
        fd = self.process.stdout.fileno()
        if deadline is not None and not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
            raise TimeoutError
        line = self.process.stdout.readline().decode().split()
        if len(line) != 2 or line[0] != word:
            raise RuntimeError(f"the tinyrps command server stopped (answered {line})")
        return int(line[1])

    def run(self, *args, input=None, timeout=300, cwd=None) -> subprocess.CompletedProcess:
        import time
        argv = [str(a) for a in args]
        with self.lock:
            self.count += 1
            folder = self.work / f"call-{self.count}"
            folder.mkdir()
            stdin = folder / "stdin"
            stdin.write_text(input or "")
            request = {"args": argv, "cwd": str(Path(cwd or os.getcwd()).resolve()),
                       "env": {**os.environ, **self.env_overrides()},
                       "stdin": str(stdin), "stdout": str(folder / "stdout"), "stderr": str(folder / "stderr")}
            (folder / "stdout").touch()
            (folder / "stderr").touch()
            data = memoryview((json.dumps(request) + "\n").encode())
            while data:
                data = data[self.process.stdin.write(data):]
            pid = self._answer("pid", None)
            deadline = time.monotonic() + timeout if timeout is not None else None
            try:
                code = self._answer("status", deadline)
            except TimeoutError:
                os.kill(pid, signal.SIGKILL)
                self._answer("status", None)
                raise subprocess.TimeoutExpired([sys.executable, "-m", "tinyrps", *argv], timeout,
                                                output=self._text(folder / "stdout"),
                                                stderr=self._text(folder / "stderr")) from None
            return subprocess.CompletedProcess([sys.executable, "-m", "tinyrps", *argv], code,
                                               self._text(folder / "stdout"), self._text(folder / "stderr"))

    @staticmethod
    def env_overrides() -> dict:
        return {"PYTHONUNBUFFERED": "1", "COLUMNS": "120"}

    @staticmethod
    def _text(path: Path) -> str:
        with open(path) as f:     # as subprocess's text mode reads: the locale's encoding, universal newlines
            return f.read()

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout:
            self.process.stdout.close()


if __name__ == "__main__":
    serve()
