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
the code that runs then -- and again, in the rare case that this is another callback. `settle()`
(main, as the command ends) sends none after that: the interpreter's shutdown puts SIGINT back to
its default action, and a Ctrl-C sent again there would end the process by the signal (exit -2)
after the command had said "interrupted" and chosen 130. It also clears CPython's note of a
KeyboardInterrupt that left exec()'d text, which ends the process by SIGINT the same way.

`held(what)` keeps a Ctrl-C out of library code that a KeyboardInterrupt leaves broken. An export
runs torch.export, PT2E quantization and ExecuTorch's lowering, which push and pop torch's
dispatch modes in Python; an interrupt raised between a push and its pop leaves torch's mode stack
inconsistent, and the unwinding then fails with a second error ("Attempted to unset
FakeTensorMode") or aborts the process in C++ (SIGABRT) instead of stopping it. Inside the block
the first Ctrl-C is noted (one line says so) and raised as the block ends; a second one stops at
once, as a person who will not wait asks.

`install()` also puts in Python's place a SIGINT handler of the same effect (a KeyboardInterrupt)
that notes the Ctrl-C first (`received()`). A library may turn the KeyboardInterrupt raised inside
it into an error of its own: matplotlib's renderer, interrupted while it reads a transform, raises
"ValueError: Invalid affine transformation matrix" with no trace of the interrupt (seen once in a
training stopped while it drew its curves). The command was stopped all the same, and says so.

`read_line(stream)` is a prompt's read that Ctrl-C stops. The kernel may hand a process's SIGINT to
any of its threads (the runtimes' worker threads included); Python's C handler then only notes it,
and a main thread blocked in read() sleeps on until the next Enter. On a terminal the read waits in
short select() calls instead, so that the noted Ctrl-C is raised within a tenth of a second.
"""
from __future__ import annotations

import contextlib
import io
import os
import select
import signal
import sys
import termios
import threading
import time

# Long enough for the callback that dropped the interrupt to have returned (they are a few
# bytecodes long), short enough to be instant for a person at the keyboard.
REDELIVER_AFTER_S = 0.01
# How often a prompt's wait looks for a Ctrl-C that another thread received: instant for a person.
PROMPT_WAKE_S = 0.1


def _send_again() -> None:
    timer = threading.Timer(REDELIVER_AFTER_S, _redeliver)
    timer.daemon = True
    with _redelivery:
        if _redelivery_ended:
            return
        _redeliveries.append(timer)
    timer.start()


def _redeliver() -> None:
    with _redelivery:       # settle() waits for a Ctrl-C being sent, and no other is sent after it
        if not _redelivery_ended:
            os.kill(os.getpid(), signal.SIGINT)


# The Ctrl-Cs to be sent again (their timers), and whether the command has ended (settle).
_redelivery = threading.Lock()
_redeliveries: list = []
_redelivery_ended = False


def settle() -> None:
    """The command has ended and chosen its exit status: send no dropped Ctrl-C again (one sent just
    before lands here, on a handler that only notes it, instead of in the interpreter's shutdown), and
    make sure the process ends with that status (_forget_handled_interrupt)."""
    global _redelivery_ended
    with _redelivery:
        _redelivery_ended = True
        sent = bool(_redeliveries)
        for timer in _redeliveries:
            timer.cancel()
        _redeliveries.clear()
    if sent and threading.current_thread() is threading.main_thread() and _python_handles_ctrl_c():
        handler = signal.signal(signal.SIGINT, lambda _signum, _frame: _received.append(True))
        try:
            time.sleep(REDELIVER_AFTER_S)       # a signal on its way to this thread arrives within it
        finally:
            signal.signal(signal.SIGINT, handler)
    if _received:
        _forget_handled_interrupt()


def _forget_handled_interrupt() -> None:
    """CPython notes a KeyboardInterrupt that leaves code run by exec() of a string (dataclasses and
    typing build functions so, torch's imports are full of them) in a process-wide flag, and when the
    flag is still set as the interpreter ends, it ends the process by SIGINT (exit -2) whatever the
    status: even when the interrupt was caught further up, as main catches it to say "interrupted"
    and exit with 130. A Ctrl-C during the imports of an evaluation was seen to end so. The command
    has handled it: clear the flag. (Where the flag is not there, another Python, nothing to do.)"""
    import ctypes
    try:
        ctypes.c_int.in_dll(ctypes.pythonapi, "_Py_UnhandledKeyboardInterrupt").value = 0
    except (AttributeError, OSError, ValueError):
        pass


def _hook(unraisable, previous) -> None:
    if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
        _send_again()
        return
    previous(unraisable)


def install() -> None:
    """Route a KeyboardInterrupt that Python would drop (sys.unraisablehook) back to a Ctrl-C, and note
    each Ctrl-C of the command from now on (received). Installing twice changes nothing but forgets
    the Ctrl-Cs noted before (and a settle() before)."""
    global _redelivery_ended
    _received.clear()
    with _redelivery:
        _redelivery_ended = False
    if threading.current_thread() is threading.main_thread() and _python_handles_ctrl_c():
        signal.signal(signal.SIGINT, _interrupt)
    previous = sys.unraisablehook
    if getattr(previous, "tinyrps_ctrl_c", False):
        return

    def hook(unraisable) -> None:
        _hook(unraisable, previous)
    hook.tinyrps_ctrl_c = True
    sys.unraisablehook = hook


# One entry per Ctrl-C this process's handlers took since install().
_received: list = []


def _interrupt(_signum, _frame) -> None:
    """Python's Ctrl-C (a KeyboardInterrupt), noted first."""
    _received.append(True)
    raise KeyboardInterrupt


def _python_handles_ctrl_c() -> bool:
    """SIGINT raises a KeyboardInterrupt (Python's handler or install's), not ignored nor handled otherwise."""
    return signal.getsignal(signal.SIGINT) in (signal.default_int_handler, _interrupt)


def received() -> bool:
    """Whether a Ctrl-C reached the command since install(): an error that follows it may be the
    Ctrl-C that a library reported as an error of its own (see above)."""
    return bool(_received)


@contextlib.contextmanager
def workers_start_blocked():
    """Start a pool's worker processes in this block. SIGINT is blocked in this thread, and a child
    inherits the blocked mask across exec, so a Ctrl-C during its interpreter's start waits for
    worker_init. The process's other threads still receive SIGINT, and Python raises it in this
    thread: it is held until the block ends too (held), because a KeyboardInterrupt raised while
    the pool writes a worker's start-up data cuts them short (the worker then printed EOFError)."""
    with held("the reference worker's start"):
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            yield
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def worker_init() -> None:
    """The initializer of a command's worker processes (started in workers_start_blocked). A Ctrl-C in
    the terminal reaches the whole process group, the workers too: each ends at once and silently
    (SIGINT's default action), and the command says "interrupted". As Python's KeyboardInterrupt it
    printed tracebacks (torch's import, its finalizers) after the command's last line. Here, in a
    module that imports no library, so that it runs before the worker imports any."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})     # one that came meanwhile ends it now
    from .library_noise import quiet_libraries
    quiet_libraries()


def _interrupt_now(_signum, _frame) -> None:
    _received.append(True)
    raise KeyboardInterrupt


@contextlib.contextmanager
def held(what: str):
    """Hold a Ctrl-C until the block (`what`, as a person would name it) is done, then raise it.
    Only where a Ctrl-C raises a KeyboardInterrupt (Python's handler or install's; not where a
    command ignores or handles SIGINT itself), in the main thread, and once however deeply the blocks
    nest (inside a block, the handler in place is the block's own)."""
    if threading.current_thread() is not threading.main_thread() or not _python_handles_ctrl_c():
        yield
        return
    handler = signal.getsignal(signal.SIGINT)
    pressed = []

    def note(_signum, _frame) -> None:
        pressed.append(True)
        _received.append(True)
        print(f"tinyrps: stopping once {what} is done (Ctrl-C again stops at once)", file=sys.stderr, flush=True)
        signal.signal(signal.SIGINT, _interrupt_now)
    signal.signal(signal.SIGINT, note)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, handler)
        if pressed:         # whatever else the block raised meanwhile: the command was stopped
            raise KeyboardInterrupt


def caused_by_ctrl_c(error: BaseException) -> bool:
    """Whether `error` was raised while a KeyboardInterrupt was being handled: a library that a
    second Ctrl-C stopped half-way fails as it unwinds, and the command was still stopped by Ctrl-C."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, KeyboardInterrupt):
            return True
        seen.add(id(error))
        error = error.__context__
    return False


def read_line(stream) -> str:
    """stream.readline(), stopped by a Ctrl-C whichever thread the kernel gave it to (see above).
    Only a terminal in canonical (line) mode waits in select(): there one read returns at most one
    line, so no typed line can sit in the stream's buffer while select() waits on the descriptor.
    Other streams (pipes, files, StringIO, a raw-mode terminal) are read as they are."""
    try:
        fd = stream.fileno()
        terminal = os.isatty(fd) and bool(termios.tcgetattr(fd)[3] & termios.ICANON)
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation, termios.error):
        terminal = False
    while terminal and not select.select([fd], [], [], PROMPT_WAKE_S)[0]:
        pass       # back in Python between waits: a SIGINT noted by any thread raises here
    return stream.readline()
