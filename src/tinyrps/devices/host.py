"""The ExecuTorch runtime (pybindings) running a .pte on this CPU: portable kernels and XNNPACK.

The runtime is reached through its compiled extension only. `executorch.runtime` and
the pybindings' `portable_lib` wrapper import the exir compiler on the way (~3 s);
running a program needs none of it, only torch (whose libraries the extension links
and whose tensors it takes).
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import sys

import numpy as np

from ..errors import UserError
from ..model import images_to_tensor
from ..pte import program_contents, read_program
from .base import Device, require_family


def runtime_extension():
    """ExecuTorch's runtime extension module (torch first: it loads the libraries the extension links)."""
    import torch  # noqa: F401
    from executorch.extension.pybindings import _C
    return _C


class HostDevice(Device):
    name = "host"
    batch_size = 1  # the programs are exported with a static batch of one

    def __init__(self, model_path, **_):
        program = read_program(model_path)
        require_family(model_path, "host", self.name, program)
        runtime = runtime_extension()
        # The runtime uses the program's bytes in place: keep them (and the Program) alive with the method.
        self._program_bytes = program
        try:
            with silenced_c_stderr():
                self._program = runtime._load_program_from_buffer(
                    program, program_verification=runtime.Verification.Minimal)
                self.method = self._program.load_method("forward")
                self._classify_batch(np.zeros((1, 28, 28), np.uint8))  # first run probes the CPU
        except (RuntimeError, ValueError) as e:  # what the extension raises for a program it cannot run
            raise UserError(f"{model_path} could not be loaded by the ExecuTorch runtime ({e}); export it again") from None
        backends = sorted({d.replace("Backend", "") for d in program_contents(program, model_path).delegates})
        self._describe = "ExecuTorch runtime" + (f" ({', '.join(backends)})" if backends else " (portable kernels)")

    def _classify_batch(self, images: np.ndarray) -> np.ndarray:
        return self.method(images_to_tensor(images))[0].numpy()

    def describe(self) -> str:
        return self._describe


@contextlib.contextmanager
def silenced_c_stderr():
    """Point fd 2 at /dev/null for a while. The runtime's CPU probe prints lines on the C
    stderr (buffered, so they would surface at exit) that say nothing to a user."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            try:
                yield
            finally:
                ctypes.CDLL(None).fflush(None)
    finally:
        os.dup2(saved, 2)
        os.close(saved)
