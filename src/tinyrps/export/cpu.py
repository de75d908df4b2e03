"""Recipes for an application CPU (the cpu family): portable fp32, XNNPACK fp32 and XNNPACK int8 (PT2E PTQ)."""
from __future__ import annotations

import torch

from ..infra.errors import UserError
from ..hardware.families import CpuInfo
from ..network.quantization import pt2e_quantize, xnnpack_quantizer
from . import BuildContext, BuildResult


def lower(module, example_inputs: tuple, partitioners) -> bytes:
    from executorch.exir import to_edge_transform_and_lower
    ep = torch.export.export(module, example_inputs)
    return to_edge_transform_and_lower(ep, partitioner=partitioners).to_executorch().buffer


def delegation(program: bytes) -> dict:
    """Delegate count and the operators left outside any delegate, from the serialized program."""
    from executorch.exir._serialize._program import deserialize_pte_binary
    plan = deserialize_pte_binary(program).program.execution_plan[0]
    ops = sorted({op.name + (f".{op.overload}" if op.overload else "") for op in plan.operators})
    return {"subgraphs": len(plan.delegates), "backends": [d.id for d in plan.delegates], "cpu_ops": ops}


def xnnpack_partitioners() -> list:
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    return [XnnpackPartitioner()]


def build(target: str, ctx: BuildContext) -> BuildResult:
    model, quantization = ctx.model, None
    if target == "int8-xnnpack":
        model = pt2e_quantize(ctx.model, xnnpack_quantizer(), ctx.calibration, ctx.example_inputs)
        quantization = {"scheme": "int8 symmetric per-channel weights, PT2E PTQ", "calibration": ctx.calibration_note}
    partitioners = [] if target == "fp32" else xnnpack_partitioners()
    program = lower(model, ctx.example_inputs, partitioners)
    delegated = delegation(program)
    check_runtime_has(target, delegated)
    return BuildResult(program, CpuInfo(delegation=delegated, quantization=quantization))


def check_runtime_has(target: str, delegated: dict) -> None:
    """Every operator left outside a delegate has a kernel in the ExecuTorch runtime that runs
    the cpu family's programs, and every delegate its backend: a program the runtime cannot load is refused here, before
    it is written, not when it is run."""
    from ..devices.executorch import runtime_extension
    runtime = runtime_extension()
    kernels, backends = set(runtime._get_operator_names()), set(runtime._get_registered_backend_names())
    missing = [op for op in delegated["cpu_ops"] if op not in kernels]
    missing += [f"the {b} delegate" for b in delegated["backends"] if b not in backends]
    if missing:
        raise UserError(f"the {target} program needs {', '.join(missing)}, which the ExecuTorch runtime has no "
                        "kernel for: change the model to use other operators, or export it for another target")
