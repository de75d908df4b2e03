"""Process-wide torch settings, changed only for the length of a `with` block.

Torch's intra-op thread count, its deterministic-algorithms switch and its global
random generator belong to the whole process. A stage that needs other values
(training wants determinism; the int8 reference replay wants one thread) sets them
in a block that restores the previous values on the way out, so later stages of
`tinyrps all` and the rest of a test session see torch as they left it.
"""
from __future__ import annotations

import contextlib
import threading

# Training's intra-op thread count: fixed, because it decides how float reductions are split
# (the same seed gives the same model only with the same count). Here, not in train.py, so that
# the tuner reads it before torch loads.
TRAINING_THREADS = 2


@contextlib.contextmanager
def torch_threads(count: int):
    """Run a block with torch's intra-op pool at `count` threads, then restore its size.

    The pool is shared by every thread of the process, so only the main thread
    resizes it: elsewhere the block runs with the pool as it is, because resizing it
    from a worker would change it under whatever the main thread is computing (and
    two workers restoring in the wrong order would leave it at the wrong size)."""
    import torch     # here, not at the top: a command that only checks its arguments must not pay for it
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = torch.get_num_threads()
    if previous == count:
        yield
        return
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


@contextlib.contextmanager
def deterministic(seed: int, threads: int):
    """Seeded global generator, deterministic algorithms and a fixed thread count for a block.

    The thread count decides how float reductions are split, so the same seed gives the
    same model only with the same count: this must run in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("deterministic() needs the main thread: only it may set torch's thread count")
    import torch
    was_enabled = torch.are_deterministic_algorithms_enabled()
    was_warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    with torch.random.fork_rng(devices=[]), torch_threads(threads):
        torch.manual_seed(seed)
        torch.use_deterministic_algorithms(True)
        try:
            yield
        finally:
            torch.use_deterministic_algorithms(was_enabled, warn_only=was_warn_only)
