"""Programs for the host CPU: portable fp32, XNNPACK fp32 and XNNPACK int8 (PT2E PTQ)."""
from __future__ import annotations

import torch

from ..model import INPUT_SHAPE, images_to_tensor
from . import BuildContext, BuildResult, Target, register


def example_input() -> tuple:
    return (torch.zeros(INPUT_SHAPE),)


def calibrate(prepared, images) -> None:
    """Run the calibration images through a PT2E-prepared module, one at a time (batch 1 graph)."""
    with torch.no_grad():
        for x in images_to_tensor(images):
            prepared(x.unsqueeze(0))


def pt2e_quantize(model, quantizer, calibration, example=None):
    """Post-training quantization with PT2E; returns the converted (fake-quantized) module."""
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    example = example or example_input()
    graph = torch.export.export(model, example).module(check_guards=False)
    prepared = prepare_pt2e(graph, quantizer)
    calibrate(prepared, calibration)
    return convert_pt2e(prepared)


def _lower(module, partitioners) -> bytes:
    from executorch.exir import to_edge_transform_and_lower
    ep = torch.export.export(module, example_input())
    return to_edge_transform_and_lower(ep, partitioner=partitioners).to_executorch().buffer


def delegation(program: bytes) -> dict:
    """Delegate count and the operators left outside any delegate, from the serialized program."""
    from executorch.exir._serialize._program import deserialize_pte_binary
    plan = deserialize_pte_binary(program).program.execution_plan[0]
    ops = sorted({op.name + (f".{op.overload}" if op.overload else "") for op in plan.operators})
    return {"subgraphs": len(plan.delegates), "backends": [d.id for d in plan.delegates], "cpu_ops": ops}


def build_fp32(ctx: BuildContext) -> BuildResult:
    program = _lower(ctx.model, [])
    return BuildResult(program, {"delegation": delegation(program)})


def build_fp32_xnnpack(ctx: BuildContext) -> BuildResult:
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    program = _lower(ctx.model, [XnnpackPartitioner()])
    return BuildResult(program, {"delegation": delegation(program)})


def build_int8_xnnpack(ctx: BuildContext) -> BuildResult:
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer, get_symmetric_quantization_config)
    quantizer = XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=True))
    quantized = pt2e_quantize(ctx.model, quantizer, ctx.calibration)
    program = _lower(quantized, [XnnpackPartitioner()])
    return BuildResult(program, {"delegation": delegation(program),
                                 "quantization": {"scheme": "int8 symmetric per-channel weights, PT2E PTQ",
                                                  "calibration_images": len(ctx.calibration)}})


register(Target("fp32", "host", "float32, ExecuTorch portable kernels", build_fp32, "host"))
register(Target("fp32-xnnpack", "host", "float32, XNNPACK delegate", build_fp32_xnnpack, "host"))
register(Target("int8-xnnpack", "host", "int8 PTQ, XNNPACK delegate", build_int8_xnnpack, "host"))
