"""A Ctrl-C that stops a command wherever it lands.

Python turns SIGINT into a KeyboardInterrupt raised in whatever Python code the main thread
runs next. When that code is a weakref callback or a finalizer, the exception cannot reach the
command: Python prints it as "Exception ignored in ..." and drops it. torch and the standard
library run such callbacks all through an export (their weak dictionaries drop dead entries), so
a Ctrl-C in the first seconds of `tinyrps all`'s export stage was lost now and then and the job
ran on to its end as if never stopped (exit 0; 6 of 165 Ctrl-Cs sent there, measured; with
`install()`, 0 of 90).

`install()` (called by the command line's main) makes a dropped KeyboardInterrupt a Ctrl-C again:
SIGINT is sent to the process once more a moment later, from a timer thread, so that it lands in
the code that runs then -- and again, in the rare case that this is another callback.
"""
from __future__ import annotations

import os
import signal
import sys
import threading

# Long enough for the callback that dropped the interrupt to have returned (they are a few
# bytecodes long), short enough to be instant for a person at the keyboard.
REDELIVER_AFTER_S = 0.01


def _send_again() -> None:
    timer = threading.Timer(REDELIVER_AFTER_S, os.kill, (os.getpid(), signal.SIGINT))
    timer.daemon = True
    timer.start()


def _hook(unraisable, previous) -> None:
    if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
        _send_again()
        return
    previous(unraisable)


def install() -> None:
    """Route a KeyboardInterrupt that Python would drop (sys.unraisablehook) back to a Ctrl-C.
    Installing twice changes nothing."""
    previous = sys.unraisablehook
    if getattr(previous, "tinyrps_ctrl_c", False):
        return

    def hook(unraisable) -> None:
        _hook(unraisable, previous)
    hook.tinyrps_ctrl_c = True
    sys.unraisablehook = hook
