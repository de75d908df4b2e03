"""The ExecuTorch runtime (pybindings) running a .pte on this CPU: portable kernels and XNNPACK."""
from __future__ import annotations

import numpy as np
import torch

from ..errors import UserError
from ..export import FAMILY_DEVICES
from ..model import images_to_tensor
from ..pte import family_of_program, read_program
from .base import Device


class HostDevice(Device):
    name = "host"
    batch_size = 1  # the programs are exported with a static batch of one

    def __init__(self, model_path, **_):
        program = read_program(model_path)
        family = family_of_program(program, model_path)
        if family != "host":
            need = "the Ethos-U NPU" if family == "ethos-u" else "the Cortex-M (CMSIS-NN) operators"
            raise UserError(f"{model_path.name} is a {family} program: it needs {need}, which the host runtime "
                            f"does not have; run it with --device {' or --device '.join(FAMILY_DEVICES[family])}")
        from executorch.runtime import Runtime, Verification
        try:
            self.method = Runtime.get().load_program(program, verification=Verification.Minimal).load_method("forward")
        except Exception as e:
            raise UserError(f"{model_path} could not be loaded by the ExecuTorch runtime ({e}); export it again") from None
        backends = sorted({d for d in _delegate_ids(program)})
        self._describe = "ExecuTorch runtime" + (f" ({', '.join(backends)})" if backends else " (portable kernels)")

    def _classify_batch(self, images: np.ndarray) -> np.ndarray:
        return self.method.execute([images_to_tensor(images)])[0].numpy().astype(np.float32)

    def describe(self) -> str:
        return self._describe


def _delegate_ids(program: bytes) -> list:
    from executorch.exir._serialize._program import deserialize_pte_binary
    return [d.id.replace("Backend", "") for d in deserialize_pte_binary(program).program.execution_plan[0].delegates]
