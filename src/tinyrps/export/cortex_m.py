"""Recipes for bare-metal Cortex-M: int8 with ExecuTorch's Cortex-M (CMSIS-NN) operators, for any nn.Module.

The lowering is ExecuTorch 1.5.1's own Cortex-M flow, for any number and shape of inputs:

1. the module and its 4-D inputs go channels-last (NHWC), the layout the backend's quantizer
   requires of every convolution (it declines an NCHW one, which then stays float); inputs
   of other ranks are used as they are, contiguous;
2. PT2E post-training quantization with `CortexMQuantizer` (int8 activations per tensor,
   convolution weights per output channel; it folds Conv2d and Linear with BatchNorm),
   calibrated on the given input tuples one at a time, so the observers see batch-1 graphs;
3. `to_edge_transform_and_lower` with the backend's edge compile config, then
   `CortexMPassManager` for the core, which rewrites the quantized patterns to `cortex_m::`
   operators with the core's CMSIS-NN constants (MVE kernel sums on Cortex-M55/M85, bias on
   the DSP cores and the plain-C ones, whose SCALAR backend writes the DSP program);
4. `to_executorch`: memory planning and serialization.

A program that keeps an operator the firmware's runtime has no kernel for (a float layer the backend
did not take; firmware/src/ops/operators.def is the runtime's table) is refused, naming it, and so is
a program over one of the runtime's static tables, with the runtime's own reason
(tinyrps.export.runtime_check): what export writes, the generic firmware loads.

tinyrps's C runtime executes these programs and must match, bit for bit, ExecuTorch's Python
implementations of the operators. The reference that says what a program computes replays the
serialized .pte with them (tinyrps.reference.cortex_m); the export checks once, on calibration
examples, that the replay of the program it wrote agrees with the transformed edge program it
lowered, so the two agree for every exported program. Nothing here builds or runs firmware: a
program's footprint and instruction counts are the measure stage's (tinyrps.measure).
"""
from __future__ import annotations

import contextlib
import copy
from dataclasses import dataclass, field

import numpy as np
import torch

from ..infra.errors import UserError, one_line
from ..hardware.families import CortexMInfo
from ..reference.cortex_m import register_operators, replay
from ..infra.torch_settings import torch_threads
from . import BuildContext, BuildResult

# Calibration examples on which an export checks the .pte replay against the edge program.
SELF_CHECK_EXAMPLES = 32

# ExecuTorch's Cortex-M passes read only the target config's CMSIS-NN backend (DSP or MVE), not the
# core: cortex-m33 and cortex-m4 get the same program, byte for byte. The last checked lowering is
# kept, keyed by its source (checkpoint and calibration) and backend, so that the second DSP core
# of an export of every target does not lower it again (some 5 s).
_last_lowering: dict = {}

@dataclass
class CortexMProgram:
    """A lowered module: the .pte bytes and the transformed edge program they were serialized from."""
    program: bytes
    edge_program: object          # torch.export.ExportedProgram, runnable (a copy from before serialization)
    core: str
    operators: tuple = ()         # the program's operator table, "name.overload"
    not_lowered: tuple = field(default_factory=tuple)   # operators the firmware's runtime has no kernel for


def to_backend_layout(x: torch.Tensor) -> torch.Tensor:
    """A 4-D tensor in channels-last memory (the backend's NHWC); any other tensor contiguous.

    `.to(memory_format=...)` and not `.contiguous(memory_format=...)`: a one-channel tensor counts
    as channels-last contiguous already, so `.contiguous` would keep its NCHW strides; exported so,
    the program's input is NCHW and ExecuTorch 1.5.1 then flattens a later channels-last map
    without the `_clone_dim_order` that puts it in NCHW order first: the serialized program
    computes another flatten than its edge program (the export's replay check catches it)."""
    return x.to(memory_format=torch.channels_last) if x.dim() == 4 else x.contiguous()


def target_config(core: str):
    from executorch.backends.cortex_m.target_config import CortexMTargetConfig
    try:
        config = CortexMTargetConfig.from_target_string(core)
        config.backend
    except ValueError:
        from ..hardware.cores import core_names
        raise UserError(f"'{core}' is not a Cortex-M core the installed ExecuTorch lowers for: "
                        f"choose one of {', '.join(core_names())}") from None
    return config


def as_inputs(inputs, example_inputs) -> tuple:
    """One input tuple in the backend's layout, checked against the example's shapes and dtypes."""
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    expected = tuple(example_inputs)
    if len(inputs) != len(expected) or any(a.shape != b.shape or a.dtype != b.dtype
                                           for a, b in zip(inputs, expected)):
        raise UserError("a calibration input tuple does not match the example inputs: expected "
                        f"{_describe(expected)}, got {_describe(inputs)}")
    return tuple(to_backend_layout(x) for x in inputs)


def _describe(inputs) -> str:
    return "(" + ", ".join(f"{str(x.dtype).removeprefix('torch.')}{list(x.shape)}" for x in inputs) + ")"


def lower_to_edge(model, example_inputs: tuple, calibration, core: str, int8_inputs=(), int8_outputs=()):
    """Quantize with CMSIS-NN semantics and apply the core's Cortex-M passes; returns the edge manager.

    `model` is not changed (a copy is lowered); `calibration` is an iterable of input tuples
    shaped like `example_inputs`. `int8_inputs` / `int8_outputs`: the indices of inputs and outputs
    the program takes and gives as int8 (its quantize / dequantize moved out of the program, with
    ExecuTorch's QuantizeInputs / QuantizeOutputs passes, which also write each one's scale and zero
    point into the program as constant methods, `input0_scale`, ...); `int8_outputs="all"`: every output."""
    from executorch.backends.cortex_m.edge_compile_config import cortex_m_edge_compile_config
    from executorch.backends.cortex_m.passes.cortex_m_pass_manager import CortexMPassManager
    from executorch.backends.cortex_m.quantizer.quantizer import CortexMQuantizer
    from executorch.exir import to_edge_transform_and_lower
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    config = target_config(core)
    example = as_inputs(example_inputs, example_inputs)
    # only the 4-D weights: Module.to(memory_format=channels_last) refuses the 5-D weight of a Conv3d
    model = copy.deepcopy(model).eval()._apply(lambda t: t.to(memory_format=torch.channels_last) if t.dim() == 4 else t)
    with library_step("torch.export and PT2E's prepare_pt2e"):
        prepared = prepare_pt2e(torch.export.export(model, example).module(check_guards=False), CortexMQuantizer())
    count = 0
    with torch.no_grad():
        for inputs in calibration:
            inputs = as_inputs(inputs, example_inputs)
            with library_step("the calibration"):
                prepared(*inputs)
            count += 1
    if count == 0:
        raise UserError("no calibration inputs: post-training quantization needs at least one input tuple")
    with library_step("convert_pt2e and to_edge_transform_and_lower"):
        converted = convert_pt2e(prepared)
        edge = to_edge_transform_and_lower(torch.export.export(converted, example),
                                           compile_config=cortex_m_edge_compile_config())
    if int8_outputs == "all":
        int8_outputs = range(len(edge.exported_program().graph_signature.user_outputs))
    if int8_inputs or int8_outputs:
        from executorch.exir.passes.quantize_io_pass import QuantizeInputs, QuantizeOutputs
        with library_step("ExecuTorch's QuantizeInputs / QuantizeOutputs passes (integer inputs and outputs)"):
            edge = edge.transform([QuantizeInputs(edge, list(int8_inputs)), QuantizeOutputs(edge, list(int8_outputs))])
    with library_step("the Cortex-M passes (CortexMPassManager)"):
        edge._edge_programs["forward"] = CortexMPassManager(edge.exported_program(), target_config=config).transform()
    return edge


@contextlib.contextmanager
def library_step(what: str):
    """An exception raised inside one of torch's or ExecuTorch's own lowering steps, as one line: the installed
    ExecuTorch cannot lower the model this way (a quantizable LSTM, a max pool that returns its indices)."""
    try:
        yield
    except (UserError, KeyboardInterrupt):
        raise
    except Exception as e:
        raise UserError(f"ExecuTorch's Cortex-M lowering cannot take this model: {what} failed "
                        f"({type(e).__name__}: {one_line(e, 200)}); change the layers it cannot take") from None


def lower(model, example_inputs: tuple, calibration, core: str, strict: bool = True, io: str = "float") -> CortexMProgram:
    """`model` as a Cortex-M program for `core` (e.g. "cortex-m55").

    io: "float", the program takes and gives what the model does; "int8", it takes every input and gives
    every output as the int8 tensor the float program quantizes first and dequantizes last (the same
    int8 values reach the first layer; each scale and zero point is in the program, see `io_quantization`),
    memory-planned by the smaller of ExecuTorch's greedy plan and a plan by lifetime (`backend_config`).

    strict: refuse (UserError) a lowering that leaves an operator in the program which the firmware's
    runtime has no kernel for, or that the runtime refuses over one of its tables (its reason); with
    strict=False such a program is returned and `not_lowered` names the operators."""
    with torch_threads(1):   # batch-1 tensors: one thread is several times faster, and leaves the other core alone
        integer = io != "float"
        edge = lower_to_edge(model, example_inputs, calibration, core,
                             int8_inputs=range(len(example_inputs)) if integer else (),
                             int8_outputs="all" if integer else ())
        # the edge module must be kept (and run) before to_executorch, which rewrites it to out-variants in place
        kept = copy.deepcopy(edge.exported_program())
        with library_step("to_executorch (memory planning and serialization)"):
            program = edge.to_executorch(*([backend_config()] if integer else [])).buffer
    operators = program_operators(program)
    not_lowered = tuple(op for op in operators if not is_lowered(op))
    if strict and not_lowered:
        raise UserError(f"the Cortex-M lowering left {'; '.join(unrun_calls(program, not_lowered))} in the program "
                        "(not CMSIS-NN operators, and the firmware's runtime has no kernel for them): change those layers")
    if strict:
        from .runtime_check import runtime_refusal
        reason = runtime_refusal(program)
        if reason:
            raise UserError(f"the firmware's runtime would refuse this program ({reason}): make the model smaller, "
                            "or build the firmware with larger limits (docs/runtime.md, Limits)")
    return CortexMProgram(program, kept, core, operators, not_lowered)


def backend_config():
    """to_executorch's configuration for a program with integer inputs and outputs: ExecuTorch's defaults, its
    memory planning choosing the smaller of its greedy plan and a plan by lifetime (tinyrps.export.memory_plan).
    (A float program keeps ExecuTorch's own plan and bytes.)"""
    from executorch.exir import ExecutorchBackendConfig
    from executorch.exir.passes import MemoryPlanningPass
    from .memory_plan import planning_suite
    return ExecutorchBackendConfig(memory_planning_pass=MemoryPlanningPass(memory_planning_algo=planning_suite()))


def lower_images(model, images, core: str) -> CortexMProgram:
    """`lower` with the RPS programs' input (float32 [1,1,28,28] = uint8 image / 255), calibrated on
    uint8 images [N,28,28]."""
    from ..network.model import INPUT_SHAPE
    from ..network.quantization import image_examples
    return lower(model, (torch.zeros(INPUT_SHAPE),), image_examples(images), core)


def is_lowered(operator: str) -> bool:
    """An operator ("name.overload") of the firmware runtime's table: a `cortex_m::` kernel, or a portable
    one the runtime runs (copies, clamp)."""
    from ..firmware.operators import runtime_operators
    return operator in {op.qualified for op in runtime_operators()}


def unrun_calls(program: bytes, operators) -> list:
    """Each of `operators` ("name.overload") with the arguments of its first call in the program, as
    `aten::convolution.out(input=float32[1, 4, 16], ..., groups=2)`: what the runtime would have to run."""
    from ..devtools.program_account import account
    first = {}
    for call in account(program)["calls"]:
        if call["operator"] in operators and call["operator"] not in first:
            args = [f"{a['name']}={_argument(a)}" for a in call["args"] if a["name"] not in ("out", "return")]
            first[call["operator"]] = f"{call['operator']}({', '.join(args)})"
    return [first.get(op, op) for op in operators]


def _argument(arg: dict) -> str:
    if arg.get("kind") == "tensor":
        return f"{arg['dtype']}{arg['sizes']}"
    if arg.get("kind") == "null":
        return "None"
    return str(arg["value"]) if "value" in arg else arg.get("kind", "?")


def program_operators(program: bytes) -> tuple:
    from executorch.exir._serialize._program import deserialize_pte_binary
    plan = deserialize_pte_binary(program).program.execution_plan[0]
    return tuple(op.name + (f".{op.overload}" if op.overload else "") for op in plan.operators)


# --- the edge program: ExecuTorch's own reference for what the program computes ----------------------

def edge_outputs(edge_program, inputs: tuple) -> list:
    """The edge program's module run on one input tuple: its outputs (float, after any dequantize)."""
    return _run_edge(edge_program, inputs)[0]


def edge_int8_outputs(edge_program, inputs: tuple) -> list:
    """The int8 tensor each output of the edge program dequantizes (None for an output that is
    not produced by a dequantize): what a runtime's last kernel before the dequantize holds."""
    return _run_edge(edge_program, inputs)[1]


def _run_edge(edge_program, inputs: tuple):
    register_operators()
    module = edge_program.module()
    (output_node,) = [n for n in module.graph.nodes if n.op == "output"]
    results = output_node.args[0]
    results = list(results) if isinstance(results, (list, tuple)) else [results]
    interpreter = torch.fx.Interpreter(module, garbage_collect_values=False)
    with torch_threads(1), torch.no_grad():
        outputs = interpreter.run(*(to_backend_layout(x) for x in inputs))
    int8 = []
    for node in results:
        source = node.args[0] if _is_dequantize(node) else None
        int8.append(interpreter.env[source].clone() if isinstance(source, torch.fx.Node) else None)
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    return outputs, int8


def _is_dequantize(node) -> bool:
    return node.op == "call_function" and "dequantize_per_tensor" in str(node.target)


def quantize_inputs(program: bytes, inputs: tuple) -> tuple:
    """A float input tuple as the int8 inputs a program exported with integer inputs takes: each quantized
    with the scale and zero point the program records, by the backend's own quantize_per_tensor (the
    operator the float program's first call runs, so the same int8 values reach the first layer).
    Inputs the program takes as they are pass unchanged."""
    from executorch.exir._serialize._program import deserialize_pte_binary
    from . import io_quantization
    register_operators()
    quantized = io_quantization(deserialize_pte_binary(program).program)
    out = []
    for k, x in enumerate(inputs):
        if ("input", k) in quantized:
            scale, zero_point = quantized[("input", k)]
            x = torch.ops.cortex_m.quantize_per_tensor(to_backend_layout(x), scale, zero_point, -128, 127, torch.int8)
        out.append(x)
    return tuple(out)


def check_replay(lowered: CortexMProgram, examples: list) -> None:
    """The .pte replay must compute what the edge program computed, bit for bit, on every example.

    Both are ExecuTorch's: its Python operators on its serialized program and on its edge program. A program
    they cannot compute, or on which they disagree, is refused in one line (ExecuTorch 1.5.1 leaves a hardswish
    that follows no convolution or linear layer as aten::hardswish on the int8 codes, which no kernel of torch
    or of ExecuTorch's runtime computes, serializes a batched matmul of channels-last 4-D inputs wrongly, and
    may leave a float aten::full before an integer operator).
    The examples are float; a program with integer inputs gets them quantized (`quantize_inputs`)."""
    examples = [quantize_inputs(lowered.program, inputs) for inputs in examples]
    for inputs in examples:
        try:
            want = [o.detach().contiguous().numpy() for o in edge_outputs(lowered.edge_program, inputs)]
            got = replay(lowered.program, [x.contiguous().numpy() for x in inputs])
        except NotImplementedError as e:
            said = str(e).split("While executing")[0]      # torch.fx's trace of the node follows
            raise UserError(f"ExecuTorch's Python reference of the Cortex-M operators cannot compute this program "
                            f"({one_line(said, 160)}), so its results cannot be checked: change that layer (a hardswish "
                            "after no convolution or linear layer is one: the lowering leaves it on int8 codes)") from None
        except AssertionError as e:   # ExecuTorch's Python operators check their operands' dtypes
            raise UserError(f"the serialized Cortex-M program does not replay ({one_line(e, 160)}): ExecuTorch's "
                            "lowering wrote an operand its operator does not take (a constant made by aten::full "
                            "left float before an integer operator is one); change that layer") from None
        if len(got) != len(want) or not all(g.shape == w.shape and np.array_equal(g, w) for g, w in zip(got, want)):
            raise UserError("the serialized Cortex-M program does not replay like its edge program "
                            f"({_difference(got, want)}): ExecuTorch's lowering wrote a program that computes "
                            "something else (a batched matmul of 4-D inputs is one such layer); change that layer")


def _difference(got: list, want: list) -> str:
    """How the replay differs: the first output that does, and by how much."""
    if len(got) != len(want):
        return f"{len(got)} outputs for {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape:
            return f"output {k} is {list(g.shape)}, not {list(w.shape)}"
        if not np.array_equal(g, w):
            off = np.abs(g.astype(np.float64) - w.astype(np.float64))
            return f"output {k}: {int(np.count_nonzero(off))} of {off.size} values differ, by up to {float(off.max()):g}"
    return "no difference"


# --- the recipe ------------------------------------------------------------------------------------

def build(core: str, ctx: BuildContext) -> BuildResult:
    """Lower for `core` (a target name: cortex-m55, ...) and check the program's replay."""
    examples = ctx.calibration[:SELF_CHECK_EXAMPLES]
    io = ctx.options.get("io", "float")
    key = (ctx.source, target_config(core).backend.name, io) if ctx.source else None
    if key is None or key not in _last_lowering:       # no source: never reused
        lowered = lower(ctx.model, ctx.example_inputs, ctx.calibration, core, io=io)
        check_replay(lowered, examples)
        _last_lowering.clear()
        _last_lowering[key] = (lowered.program, lowered.operators)
    program, operators = _last_lowering[key]
    return BuildResult(program, CortexMInfo(
        core=core, operators=operators,
        quantization={"scheme": "int8 CMSIS-NN (CortexMQuantizer), per-channel conv weights, PT2E PTQ",
                      "calibration": ctx.calibration_note, "io": io},
        reference={"what": "ExecuTorch cortex_m Python operators replaying the .pte",
                   "checked_against_edge_program_examples": len(examples)}))
