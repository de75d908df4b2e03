"""The Python reference replay of tinyrps.reference.cortex_m, for one program it does not take yet.

`_Replay` replays a .pte with ExecuTorch's Python operators, calling each operator's default
overload; an overload writing to `out` whose functional form is another overload is beyond it
(aten::squeeze_copy.dims_out is squeeze_copy.dims, not squeeze_copy(self)). This subclass calls
that overload -- still the same Python operators on the same memory plan -- so every kernel call
of those programs can be compared too.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from tinyrps.reference import cortex_m as reference


class Replay(reference._Replay):
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
    """(operator, output bytes) of every kernel call on one image, as reference.replay_layers gives them."""
    reference.register_operators()
    replay = Replay(reference.parse_program(Path(pte).read_bytes()), record=True)
    with torch.no_grad():
        replay.run([reference.rps_inputs(image_uint8[None])[0][0]])
    return replay.layers


def reference_int8(pte: Path, images: np.ndarray) -> np.ndarray:
    """int8 outputs [N, n] of the replay (the final dequantize's input), as reference.reference_int8 gives them."""
    reference.register_operators()
    prog = reference.parse_program(Path(pte).read_bytes())
    rows = []
    with torch.no_grad():
        for x in reference.rps_inputs(images)[0]:
            replay = Replay(prog)
            replay.run([x])
            rows.append(replay.last_dequantized)
    return np.stack(rows)


def edited_program(pte: Path, operator: str, ints: dict | None = None, doubles: dict | None = None,
                   int_lists: dict | None = None, constants: dict | None = None) -> bytes:
    """The program with new values for arguments of every call of `operator` ("cortex_m::quantized_add").

    `ints`, `doubles` and `int_lists` map an argument position to its new value; each new
    value is a value of its own (appended), so other calls sharing the old one keep it.
    `constants` maps an argument position to new bytes for that constant tensor's buffer, or to a
    function of the call's old bytes that gives them (calls of other shapes keep their own size)."""
    from executorch.exir._serialize._program import deserialize_pte_binary, serialize_pte_binary
    from executorch.exir.schema import Double, EValue, Int, IntList
    program = deserialize_pte_binary(Path(pte).read_bytes())
    plan = program.program.execution_plan[0]
    names = [op.name for op in plan.operators]

    def append(val) -> int:
        plan.values.append(EValue(val))
        return len(plan.values) - 1

    found = 0
    for chain in plan.chains:
        for entry in chain.instructions:
            call = entry.instr_args
            if names[call.op_index] != operator:
                continue
            found += 1
            for position, value in (ints or {}).items():
                call.args[position] = append(Int(int(value)))
            for position, value in (doubles or {}).items():
                call.args[position] = append(Double(float(value)))
            for position, items in (int_lists or {}).items():
                call.args[position] = append(IntList([append(Int(int(v))) for v in items]))
            for position, data in (constants or {}).items():
                tensor = plan.values[call.args[position]].val
                buffer = program.program.constant_buffer[tensor.data_buffer_idx]
                buffer.storage = bytes(data(bytes(buffer.storage)) if callable(data) else data)
    if not found:
        raise ValueError(f"the program calls no {operator}")
    return bytes(serialize_pte_binary(program, extract_delegate_segments=False))
