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

from ..infra.errors import UserError
from ..hardware.pte import program_contents, read_program
from .base import Device, RunResult, require_family


def runtime_extension():
    """ExecuTorch's runtime extension module (torch first: it loads the libraries the extension links)."""
    import torch  # noqa: F401
    from executorch.extension.pybindings import _C
    return _C


class ExecuTorchDevice(Device):
    name = "executorch"

    @classmethod
    def runs_on(cls, pte, target, described, board=None, port=None) -> tuple:
        return "this CPU, ExecuTorch runtime", None

    @classmethod
    def figures(cls, stats: dict, pte, target: str, core) -> list:
        return [{"name": "ExecuTorch latency", "value": f"{stats['host_ms']:.3f} ms",
                 "note": "one inference in the ExecuTorch runtime on this server's CPU, timed around the call"}]
    batch_size = 1  # the programs are exported with a static batch of one

    def __init__(self, model_path, **_):
        from pathlib import Path
        self.model_path = Path(model_path)
        program = read_program(model_path)
        described = require_family(self.model_path, "cpu", self.name, program)
        self.inputs, self.outputs = io_layouts(described)
        runtime = runtime_extension()
        # The runtime uses the program's bytes in place: keep them (and the Program) alive with the method.
        self._program_bytes = program
        try:
            with silenced_c_stderr():
                self._program = runtime._load_program_from_buffer(
                    program, program_verification=runtime.Verification.Minimal)
                self.method = self._program.load_method("forward")
                if self.inputs is not None:   # the first run probes the CPU
                    self._run_batch([np.zeros((1, *t.shape), t.dtype) for t in self.inputs])
        except (RuntimeError, ValueError) as e:  # what the extension raises for a program it cannot run
            raise UserError(f"{model_path} could not be loaded by the ExecuTorch runtime ({e}); export it again") from None
        backends = sorted({d.replace("Backend", "") for d in program_contents(program, model_path).delegates})
        self._describe = "ExecuTorch runtime" + (f" ({', '.join(backends)})" if backends else " (portable kernels)")

    def _classify_batch(self, images: np.ndarray) -> np.ndarray:
        from ..network.model import images_to_tensor
        return self.method(images_to_tensor(images))[0].numpy()

    def _run_batch(self, arrays: list) -> RunResult:
        import torch
        rows = [[o.numpy().copy() for o in self.method([torch.from_numpy(np.ascontiguousarray(a[n])) for a in arrays])]
                for n in range(len(arrays[0]))]
        return RunResult([np.stack([row[k] for row in rows]) for k in range(len(rows[0]))], [None] * len(rows[0]))

    def describe(self) -> str:
        return self._describe


def io_layouts(described) -> tuple:
    """The program's inputs and outputs as tensors in logical order (the runtime's pybindings take and give
    contiguous tensors), from its descriptor; (None, None) for a program without one."""
    if described is None:
        return None, None
    from ..firmware.tensors import TensorLayout

    def layout(spec):
        return TensorLayout(np.dtype(spec.dtype).newbyteorder("<"), spec.shape, tuple(range(len(spec.shape))))
    return tuple(layout(t) for t in described.inputs), tuple(layout(t) for t in described.outputs)


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
