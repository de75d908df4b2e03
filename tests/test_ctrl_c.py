"""A Ctrl-C that lands in a weakref callback still stops the command (tinyrps.infra.ctrl_c)."""
from __future__ import annotations

import subprocess
import sys

import pytest
from proc_table import command_of, in_group

# A real SIGINT that arrives while a weakref callback runs, then half a second of work.
SCRIPT = r"""
import os, signal, sys, time, weakref
signal.signal(signal.SIGINT, signal.default_int_handler)
if sys.argv[1] == "installed":
    from tinyrps.infra import ctrl_c
    ctrl_c.install()

class Thing:
    pass

def callback(_):
    os.kill(os.getpid(), signal.SIGINT)
    for _ in range(10000):      # the handler runs in here: the KeyboardInterrupt is raised inside the callback
        pass

thing = Thing()
ref = weakref.ref(thing, callback)
try:
    del thing
    # the work that follows: Python code, idle between its steps; 50 times the 10 ms after which
    # ctrl_c.install() sends the dropped Ctrl-C again
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline:
        time.sleep(0.005)
except KeyboardInterrupt:
    print("stopped")
    sys.exit(130)
print("ran on")
"""


def run(mode: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, timeout=60)


def test_python_alone_drops_a_ctrl_c_that_lands_in_a_weakref_callback():
    result = run("plain")
    assert (result.returncode, result.stdout.strip()) == (0, "ran on"), result
    assert "Exception ignored" in result.stderr and "KeyboardInterrupt" in result.stderr


def test_installed_the_dropped_ctrl_c_stops_the_work_that_follows():
    result = run("installed")
    assert (result.returncode, result.stdout.strip()) == (130, "stopped"), result
    assert "Exception ignored" not in result.stderr, result.stderr


def test_other_dropped_exceptions_are_reported_as_before(monkeypatch):
    from tinyrps.infra import ctrl_c
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)
    ctrl_c.install()
    ctrl_c.install()           # twice: still one hook in front of the previous one
    error = ValueError("in a finalizer")
    sys.unraisablehook(type("Args", (), {"exc_type": ValueError, "exc_value": error, "exc_traceback": None,
                                         "err_msg": None, "object": None})())
    assert [args.exc_value for args in seen] == [error]


def test_the_command_line_installs_it(monkeypatch):
    from tinyrps.interfaces import cli
    monkeypatch.setattr(sys, "unraisablehook", sys.__unraisablehook__)
    with pytest.raises(SystemExit):
        cli.main(["--version"])
    assert getattr(sys.unraisablehook, "tinyrps_ctrl_c", False)


# Real SIGINTs (`presses` of them) in the middle of torch.export inside a held block; one process
# for all the cases (torch takes seconds to import). Each case prints what happened to its block.
HELD = r"""
import contextlib, os, signal, sys
import torch
from tinyrps.infra import ctrl_c

class Net(torch.nn.Module):
    presses = 0

    def forward(self, x):
        for _ in range(self.presses):
            os.kill(os.getpid(), signal.SIGINT)      # while torch.export traces: its modes are pushed
        return torch.relu(x) + 1

for case, presses, handler in (("once", 1, None), ("twice", 2, None), ("failed", 1, None), ("nested", 1, None),
                               ("none", 0, None), ("ignored", 1, signal.SIG_IGN)):
    signal.signal(signal.SIGINT, handler or signal.default_int_handler)
    Net.presses, events = presses, []
    try:
        with ctrl_c.held("the export"):
            with ctrl_c.held("the inner step") if case == "nested" else contextlib.nullcontext():
                torch.export.export(Net(), (torch.zeros(2),))
            events.append("built")
            if case == "failed":
                raise RuntimeError("the block failed after the Ctrl-C")
        events.append("ran on")
    except KeyboardInterrupt:
        events.append("stopped")
    print(case, *events, flush=True)
    print(case, file=sys.stderr, flush=True)
"""


def test_a_ctrl_c_in_a_held_block_stops_the_command_once_the_block_is_done():
    result = subprocess.run([sys.executable, "-c", HELD], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result
    assert result.stdout.splitlines() == ["once built stopped",     # the block done, then stopped
                                          "twice stopped",          # a second Ctrl-C stops at once
                                          "failed built stopped",   # stopped, whatever else the block raised
                                          "nested built stopped",   # the outer block holds it, once
                                          "none built ran on",
                                          "ignored built ran on"]   # a command that ignores Ctrl-C still does
    notice = "tinyrps: stopping once the export is done (Ctrl-C again stops at once)"
    assert result.stderr.splitlines() == [notice, "once", notice, "twice", notice, "failed", notice, "nested",
                                          "none", "ignored"], result.stderr


def test_an_error_raised_while_a_ctrl_c_unwinds_is_the_ctrl_c():
    from tinyrps.infra import ctrl_c
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise RuntimeError("Attempted to unset FakeTensorMode, but there wasn't one active.")
    except RuntimeError as e:
        assert ctrl_c.caused_by_ctrl_c(e)
    assert not ctrl_c.caused_by_ctrl_c(RuntimeError("a bug"))


# A command whose library turns the KeyboardInterrupt raised inside it into an error of its own, with no
# trace of the interrupt (matplotlib's renderer: "ValueError: Invalid affine transformation matrix").
SWALLOWED = r"""
import os, signal, sys
from tinyrps.interfaces import cli

def command(_args):
    if sys.argv[1] == "ctrl-c":
        try:
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(100000):     # the handler runs in here
                pass
        except KeyboardInterrupt:
            pass                        # the library's own handling: the interrupt is gone
    raise ValueError("Invalid affine transformation matrix")

import tinyrps.data
tinyrps.data.make_data = lambda *_, **__: command(None)    # the data command's stage
sys.exit(cli.main(["data", "--out", "unused"]))
"""


def test_an_error_a_library_made_of_a_ctrl_c_is_the_ctrl_c():
    stopped = subprocess.run([sys.executable, "-c", SWALLOWED, "ctrl-c"], capture_output=True, text=True, timeout=60)
    assert (stopped.returncode, stopped.stderr) == (130, "tinyrps: interrupted\n"), stopped
    # the same error without a Ctrl-C is a bug, reported as one
    failed = subprocess.run([sys.executable, "-c", SWALLOWED, "none"], capture_output=True, text=True, timeout=60)
    assert failed.returncode == 1 and "Traceback" in failed.stderr, failed
    assert failed.stderr.splitlines()[-1].startswith("tinyrps: internal error (ValueError)"), failed.stderr


# A Ctrl-C that Python drops in a finalizer, then the command ends at once (as when the same Ctrl-C
# ended a pool's worker, and the pool reports it), then what the interpreter's shutdown would meet.
ENDED_BEFORE_IT_IS_SENT_AGAIN = r"""
import os, signal, sys, time
from tinyrps.interfaces import cli

class Finalized:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(100000):     # the handler runs in here: the KeyboardInterrupt is dropped
            pass

def command(_args):
    Finalized()
    raise EOFError("the worker is gone")

import tinyrps.data
tinyrps.data.make_data = lambda *_, **__: command(None)    # the data command's stage
status = cli.main(["data", "--out", "unused"])
late = []
signal.signal(signal.SIGINT, lambda *_: late.append(True))  # the shutdown's SIGINT (its default action: the end)
time.sleep(0.2)
if late:
    print("a Ctrl-C was sent again after the command had ended", file=sys.stderr)
sys.exit(status)
"""


def test_a_dropped_ctrl_c_is_not_sent_again_once_the_command_has_ended():
    """The command says "interrupted" and exits with 130, and nothing comes after: the Ctrl-C sent again
    landed in the interpreter's shutdown, where SIGINT is back at its default action, and the process
    ended by the signal (exit -2) after its last line."""
    for _ in range(3):
        ended = subprocess.run([sys.executable, "-c", ENDED_BEFORE_IT_IS_SENT_AGAIN], capture_output=True, text=True,
                               timeout=60)
        assert (ended.returncode, ended.stderr) == (130, "tinyrps: interrupted\n"), ended


# A Ctrl-C that lands in code run by exec() of a string, as in the methods dataclasses builds while
# torch is imported; run as `python -m`, the way the process ends by SIGINT when the flag is left set.
IN_EXECUTED_TEXT = r"""
import ctypes, os, signal, sys
from tinyrps.interfaces import cli

def command(_args):
    exec("os.kill(os.getpid(), signal.SIGINT)\nfor _ in range(100000): pass", {"os": os, "signal": signal})

import tinyrps.data
tinyrps.data.make_data = lambda *_, **__: command(None)    # the data command's stage
status = cli.main(["data", "--out", "unused"])
if ctypes.c_int.in_dll(ctypes.pythonapi, "_Py_UnhandledKeyboardInterrupt").value:
    print("the interpreter will end by SIGINT", file=sys.stderr)
raise SystemExit(status)
"""


def test_a_ctrl_c_in_executed_text_ends_the_process_with_130(tmp_path):
    """CPython ends a process by SIGINT, whatever its exit status, when a KeyboardInterrupt left code
    run by exec() of a string, even though main caught it: the command clears that note once it has
    said "interrupted" (an evaluation stopped during its imports ended with -2 instead of 130)."""
    (tmp_path / "stopped_in_exec.py").write_text(IN_EXECUTED_TEXT)
    ended = subprocess.run([sys.executable, "-m", "stopped_in_exec"], cwd=tmp_path, capture_output=True, text=True,
                           timeout=60)
    assert (ended.returncode, ended.stderr) == (130, "tinyrps: interrupted\n"), ended


@pytest.mark.slow     # an evaluation on the native build, stopped three times
def test_a_ctrl_c_ends_the_reference_worker_without_a_word(trained_run, exported, tmp_path):
    """A terminal's Ctrl-C reaches the whole process group, the evaluation's reference worker too: at its
    start (while it imports torch) or later, the command's last line is "tinyrps: interrupted" and
    nothing follows or precedes it from the worker (it printed KeyboardInterrupt tracebacks)."""
    import os
    import shutil
    import signal
    import time
    exported("cortex-m55")
    run = tmp_path / "run"
    shutil.copytree(trained_run, run)
    for delay in (0.0, 0.3, 1.0):
        command = [sys.executable, "-m", "tinyrps", "eval", "--run", str(run), "--program", "cortex-m55",
                   "--device", "native", "--quiet"]
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        deadline = time.monotonic() + 120
        while not any("multiprocessing" in command_of(pid) for pid in in_group(proc.pid)):
            assert proc.poll() is None and time.monotonic() < deadline, "the evaluation started no reference worker"
            time.sleep(0.01)
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 130 and err.strip().splitlines()[-1] == "tinyrps: interrupted", (delay, err[-3000:])
        assert "Traceback" not in err and "KeyboardInterrupt" not in err, (delay, err[-3000:])
        assert not (run / "eval.json").exists()
