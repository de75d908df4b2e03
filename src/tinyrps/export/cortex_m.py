"""Recipes for bare-metal Cortex-M: int8 with ExecuTorch's Cortex-M (CMSIS-NN) operators.

tinyrps's C runtime executes these programs and must match, bit for bit, ExecuTorch's
Python implementations of the `cortex_m::` operators. The reference that says what a
program computes replays the serialized .pte with those operators (tinyrps.reference.cortex_m);
the export checks once, on calibration examples, that the replay of the program it wrote
agrees with the transformed edge program it lowered, so the two agree for every exported
program. Nothing here builds or runs firmware: the program's footprint and instruction
counts are the measure stage's (tinyrps.measure).
"""
from __future__ import annotations

import numpy as np
import torch

from ..families import CortexMInfo
from ..quantization import calibrate
from ..reference.cortex_m import replay
from ..torch_settings import torch_threads
from . import BuildContext, BuildResult

# Calibration examples on which an export checks the .pte replay against the edge program.
SELF_CHECK_EXAMPLES = 32


def channels_last(x: torch.Tensor) -> torch.Tensor:
    """4-D tensors in the channels-last layout the backend's operators take; others as they are."""
    return x.to(memory_format=torch.channels_last) if x.dim() == 4 else x


def lower_to_edge(model, example_inputs: tuple, calibration: list, core: str):
    """Quantize with CMSIS-NN semantics and apply the Cortex-M passes; returns the edge manager."""
    from executorch.backends.cortex_m.edge_compile_config import cortex_m_edge_compile_config
    from executorch.backends.cortex_m.passes.cortex_m_pass_manager import CortexMPassManager
    from executorch.backends.cortex_m.quantizer.quantizer import CortexMQuantizer
    from executorch.backends.cortex_m.target_config import CortexMTargetConfig
    from executorch.exir import to_edge_transform_and_lower
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    model = model.to(memory_format=torch.channels_last)
    example = tuple(channels_last(x) for x in example_inputs)
    prepared = prepare_pt2e(torch.export.export(model, example).module(check_guards=False), CortexMQuantizer())
    calibrate(prepared, [tuple(channels_last(x) for x in inputs) for inputs in calibration])
    converted = convert_pt2e(prepared)
    edge = to_edge_transform_and_lower(torch.export.export(converted, example),
                                       compile_config=cortex_m_edge_compile_config())
    config = CortexMTargetConfig.from_target_string(core)
    edge._edge_programs["forward"] = CortexMPassManager(edge.exported_program(), target_config=config).transform()
    return edge


def lower_images(model, images, core: str):
    """`lower_to_edge` with the RPS programs' input (float32 [1,1,28,28] = uint8 image / 255),
    calibrated on uint8 images [N,28,28]."""
    from ..model import INPUT_SHAPE
    from ..quantization import image_examples
    return lower_to_edge(model, (torch.zeros(INPUT_SHAPE),), image_examples(images), core)


def edge_outputs(edge_program, examples: list) -> list:
    """The transformed edge program's module on the host: per example, its outputs as numpy arrays."""
    module = edge_program.module()
    results = []
    with torch_threads(1), torch.no_grad():
        for inputs in examples:
            out = module(*(channels_last(x) for x in inputs))
            outs = out if isinstance(out, (tuple, list)) else (out,)
            results.append([o.detach().contiguous().numpy() for o in outs])
    return results


def check_replay(program: bytes, examples: list, expected: list) -> None:
    """The .pte replay must compute what the edge program computed, bit for bit, on every example."""
    for inputs, want in zip(examples, expected):
        got = replay(program, [x.contiguous().numpy() for x in inputs])
        if len(got) != len(want) or not all(g.shape == w.shape and np.array_equal(g, w) for g, w in zip(got, want)):
            raise RuntimeError("the serialized Cortex-M program does not replay like its edge program; "
                               "the .pte reference would be wrong")


def program_operators(program: bytes) -> tuple:
    from executorch.exir._serialize._program import deserialize_pte_binary
    plan = deserialize_pte_binary(program).program.execution_plan[0]
    return tuple(op.name + (f".{op.overload}" if op.overload else "") for op in plan.operators)


def build(core: str, ctx: BuildContext) -> BuildResult:
    """Lower for `core` (a target name: cortex-m55, ...) and check the program's replay."""
    with torch_threads(1):   # calibration batches of one example: 4-5x faster on one thread than on a shared pool
        edge = lower_to_edge(ctx.model, ctx.example_inputs, ctx.calibration, core)
        # the edge module must run before to_executorch, which rewrites it to out-variants in place
        examples = ctx.calibration[:SELF_CHECK_EXAMPLES]
        expected = edge_outputs(edge.exported_program(), examples)
        program = edge.to_executorch().buffer
    check_replay(program, examples, expected)
    return BuildResult(program, CortexMInfo(
        core=core, operators=program_operators(program),
        quantization={"scheme": "int8 CMSIS-NN (CortexMQuantizer), per-channel conv weights, PT2E PTQ",
                      "calibration": ctx.calibration_note},
        reference={"what": "ExecuTorch cortex_m Python operators replaying the .pte",
                   "checked_against_edge_program_examples": len(examples)}))
