"""The Python reference replay of tinyrps.export.cortex_m, for the programs it does not take yet.

`cortex_m._Replay` replays a .pte with ExecuTorch's Python operators; two things of the
elementwise programs are beyond it: a `Tensor[]` argument (aten::cat's tensors) and an out
variant whose functional form is not the default overload (aten::squeeze_copy.dims_out is
squeeze_copy.dims). This subclass adds both -- still calling the same Python operators on the
same memory plan -- so every kernel call of those programs can be compared too.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from tinyrps.export import cortex_m
from tinyrps.model import images_to_tensor


class Replay(cortex_m._Replay):
    def _value(self, index: int):
        val = self.prog.values[index].val
        if type(val).__name__ == "TensorList":
            return [self._tensor(self.prog.values[i].val) for i in val.items]
        return super()._value(index)

    def _execute(self, call) -> None:
        name, overload = self.prog.operators[call.op_index]
        if not overload.endswith("_out"):
            return super()._execute(call)
        namespace, op_name = name.split("::")
        packet = getattr(getattr(torch.ops, namespace), op_name)
        schema = getattr(packet, overload)._schema
        named = {a.name: call.args[i] for i, a in enumerate(schema.arguments)}
        out_index = named.pop("out")
        result = getattr(packet, overload[:-len("_out")])(*(self._value(i) for i in named.values()))
        self._write(out_index, result)
        if self.layers is not None:
            self.layers.append((name, self._bytes(out_index)))


def replay_layers(pte: Path, image_uint8: np.ndarray) -> list:
    """(operator, output bytes) of every kernel call, as cortex_m.replay_layers gives them."""
    cortex_m._register_operators()
    replay = Replay(cortex_m.parse_program(Path(pte).read_bytes()), record=True)
    with torch.no_grad():
        replay.run(images_to_tensor(image_uint8[None])[0])
    return replay.layers


def reference_int8(pte: Path, images: np.ndarray) -> np.ndarray:
    """int8 outputs [N, n] of the replay, as cortex_m.reference_int8 gives them."""
    cortex_m._register_operators()
    prog = cortex_m.parse_program(Path(pte).read_bytes())
    with torch.no_grad():
        return np.stack([Replay(prog).run(x) for x in images_to_tensor(images)])
