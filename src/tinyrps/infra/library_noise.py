"""The libraries' known chatter (torchao, torch's pytree, executorch), silenced by logger name
and warning message; every other warning still shows. The CLI calls `quiet_libraries` at
start, and so does every worker process it starts. `output_to` keeps what native code prints
(Vela's reports, the TOSA reference model's version note) off tinyrps's stdout."""
import contextlib
import ctypes
import os
import sys

# Loggers whose import-time messages say nothing about this program (torchao's CUDA-only
# extensions that fail to load on a CPU machine, torch's pytree registration notes).
QUIET_LOGGERS = ("torchao", "torch.utils._pytree", "torch._export", "executorch")


# Warnings the libraries give on every export, by message and category: torch's own pytree
# code (its stack level points into copyreg, so the module says nothing). DeprecationWarnings
# (executorch's ExperimentalWarning among them) are hidden by Python's defaults already.
KNOWN_WARNINGS = ((r"`isinstance\(treespec, LeafSpec\)` is deprecated", FutureWarning),)


# Log records of loggers that set their own level on import (so QUIET_LOGGERS does not reach
# them): logger name -> the start of the message. A filter on a logger outlives its setLevel.
KNOWN_LOG_MESSAGES = {"executorch.exir.pass_manager": "PassManager is deprecated"}


def quiet_libraries() -> None:
    """Silence the libraries' known chatter by logger name and warning message; every
    other warning still shows."""
    import logging
    import warnings
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    for name, start in KNOWN_LOG_MESSAGES.items():
        logging.getLogger(name).addFilter(lambda record, start=start: not str(record.msg).startswith(start))
    for message, category in KNOWN_WARNINGS:
        warnings.filterwarnings("ignore", message=message, category=category)


@contextlib.contextmanager
def output_to(path):
    """Send standard output, of Python and of native code, to a file (or, with None, to nowhere).

    Vela prints its reports with print(); the TOSA reference model prints a version
    note from C++ on every run. Neither belongs in tinyrps' output (stdout may carry
    --json results). Standard error, where the progress display lives, is left alone.
    """
    flush_stdout()
    saved = os.dup(1)
    with open(path if path else os.devnull, "a") as sink:
        try:
            os.dup2(sink.fileno(), 1)
            with contextlib.redirect_stdout(sink):
                yield
        finally:
            flush_stdout()  # native code's buffered output belongs to the sink, not to what comes back
            os.dup2(saved, 1)
            os.close(saved)


def flush_stdout() -> None:
    sys.stdout.flush()
    ctypes.CDLL(None).fflush(None)  # the C library's buffers, which native printf fills
