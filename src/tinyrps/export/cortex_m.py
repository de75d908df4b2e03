"""Programs for bare-metal Cortex-M: int8 with ExecuTorch's Cortex-M (CMSIS-NN) operators.

The firmware's C runtime executes these programs and must match, bit for bit,
ExecuTorch's Python implementations of the `cortex_m::` operators
(executorch/backends/cortex_m/ops/operators.py). `reference_int8` is that
reference for any given .pte: it replays the serialized program itself -- the
same instruction chain, the same memory plan, the same constants -- calling the
Python operators for every kernel. Working from the .pte bytes (rather than a
kept copy of the edge program) means the reference can never describe a
different program than the one on the device. At export time the replay is
checked against the transformed edge program's own module on the calibration
images, so the two agree by construction of every exported variant.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import hashlib
import multiprocessing
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from ..errors import UserError
from ..model import INPUT_SHAPE, LABELS, images_to_tensor
from ..torch_settings import torch_threads
from . import BuildContext, BuildResult, EvalContext, Target, register
from .host import calibrate

# Cores whose CortexMTargetConfig resolves to a CMSIS-NN backend in executorch 1.5.1:
# DSP (bias in the linear kernel) on M4/M33, MVE (precomputed kernel sums) on M55/M85.
CORES = {
    "cortex-m4": "Cortex-M4 (DSP)",
    "cortex-m33": "Cortex-M33 (DSP)",
    "cortex-m55": "Cortex-M55 (MVE)",
    "cortex-m85": "Cortex-M85 (MVE)",
}
# Calibration images on which an export checks the .pte replay against the edge program.
SELF_CHECK_IMAGES = 32

# ExecuTorch ScalarType codes (exir/_serialize/scalar_type.fbs) -> numpy / torch dtypes.
_NP_DTYPES = {0: np.uint8, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.int64, 6: np.float32, 7: np.float64,
              11: np.bool_}
_TORCH_DTYPES = {0: torch.uint8, 1: torch.int8, 2: torch.int16, 3: torch.int32, 4: torch.int64,
                 6: torch.float32, 7: torch.float64, 11: torch.bool}


# ---------------------------------------------------------------------------------------------
# Export
# ---------------------------------------------------------------------------------------------

def _channels_last_example() -> tuple:
    return (torch.zeros(INPUT_SHAPE).to(memory_format=torch.channels_last),)


def lower_to_edge(model, calibration, core: str):
    """Quantize with CMSIS-NN semantics and apply the Cortex-M passes; returns the edge manager."""
    from executorch.backends.cortex_m.edge_compile_config import cortex_m_edge_compile_config
    from executorch.backends.cortex_m.passes.cortex_m_pass_manager import CortexMPassManager
    from executorch.backends.cortex_m.quantizer.quantizer import CortexMQuantizer
    from executorch.backends.cortex_m.target_config import CortexMTargetConfig
    from executorch.exir import to_edge_transform_and_lower
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    model = model.to(memory_format=torch.channels_last)
    example = _channels_last_example()
    prepared = prepare_pt2e(torch.export.export(model, example).module(check_guards=False), CortexMQuantizer())
    calibrate(prepared, calibration)
    converted = convert_pt2e(prepared)
    edge = to_edge_transform_and_lower(torch.export.export(converted, example),
                                       compile_config=cortex_m_edge_compile_config())
    config = CortexMTargetConfig.from_target_string(core)
    edge._edge_programs["forward"] = CortexMPassManager(edge.exported_program(), target_config=config).transform()
    return edge


def edge_reference_int8(edge_program, images: np.ndarray) -> np.ndarray:
    """The transformed edge program's module on the host: int8 input of its final dequantize."""
    module = edge_program.module()
    captured = []

    class Capture(torch.fx.Interpreter):
        def run_node(self, node):
            result = super().run_node(node)
            if node.op == "call_function" and "dequantize_per_tensor" in str(node.target):
                captured.append(self.env[node.args[0]])
            return result

    interpreter = Capture(module)
    rows = []
    with _one_thread(), torch.no_grad():
        for x in images_to_tensor(images):
            captured.clear()
            interpreter.run(x.unsqueeze(0).contiguous(memory_format=torch.channels_last))
            rows.append(captured[-1].reshape(-1).numpy().astype(np.int8))
    return np.stack(rows)


def build_cortex_m(ctx: BuildContext, core: str) -> BuildResult:
    with _one_thread():   # calibration batches of one image: 4-5x faster on one thread than on a shared pool
        edge = lower_to_edge(ctx.model, ctx.calibration, core)
        # the edge module must run before to_executorch, which rewrites it to out-variants in place
        check_images = ctx.calibration[:SELF_CHECK_IMAGES]
        expected = edge_reference_int8(edge.exported_program(), check_images)
        program = edge.to_executorch().buffer
    replayed = replay_int8(parse_program(program), check_images)
    if not np.array_equal(expected, replayed):
        raise RuntimeError("the serialized Cortex-M program does not replay like its edge program; "
                           "the .pte reference would be wrong")
    ops = program_operators(program)
    return BuildResult(program, {
        "firmware": firmware_figures(program, core),
        "core": core,
        "operators": ops,
        "quantization": {"scheme": "int8 CMSIS-NN (CortexMQuantizer), per-channel conv weights, PT2E PTQ",
                         "calibration_images": len(ctx.calibration)},
        "reference": {"what": "ExecuTorch cortex_m Python operators replaying the .pte",
                      "checked_against_edge_program_images": len(check_images)},
    })


def firmware_figures(program: bytes, core: str) -> dict:
    """The program on the firmware of its core's emulated board: footprint, instructions, layers."""
    from ..firmware.boards import board_for_core
    from ..firmware.measure import measure_firmware
    board = board_for_core(core)
    figures = measure_firmware(program, board.name)
    if board.core != core:
        figures["note"] = (f"QEMU 7.2 has no {core} board: measured on the {board.core} of the {board.name} "
                           "(the same Armv8.1-M MVE instruction set); the counts are that core's")
    return figures


def program_operators(program: bytes) -> list:
    from executorch.exir._serialize._program import deserialize_pte_binary
    plan = deserialize_pte_binary(program).program.execution_plan[0]
    return [op.name + (f".{op.overload}" if op.overload else "") for op in plan.operators]


def _unavailable_for(core: str):
    def unavailable():
        try:
            from executorch.backends.cortex_m.target_config import CortexMTargetConfig
            CortexMTargetConfig.from_target_string(core).backend
        except Exception as e:  # ImportError or an executorch without this core
            return f"the installed executorch has no Cortex-M backend for {core} ({e})"
        return None
    return unavailable


def compare_with_reference(ctx: EvalContext) -> dict:
    """Eval hook: the device's int8 outputs against the Python reference, on every image."""
    device_int8 = device_int8_outputs(ctx.device, len(ctx.images))
    if device_int8 is None:
        return {"bit_exact": False, "error": f"device {ctx.device.name} does not report its int8 outputs"}
    return compare_int8(device_int8, reference_int8(ctx.pte, ctx.images))


def device_int8_outputs(device, count: int):
    """The int8 outputs of the device's last `count` images, or None where it does not report them.

    Devices running the firmware keep `int8_outputs` (every int8 output since they were
    opened, in order; eval classifies in chunks) and `last_int8` (the latest classify call).
    """
    history = device.int8_outputs
    if history is not None and len(history) >= count:
        return np.asarray(history)[len(history) - count:]
    last = device.last_int8
    return None if last is None else np.asarray(last)


def compare_int8(device_int8: np.ndarray, reference: np.ndarray) -> dict:
    if device_int8.shape != reference.shape:
        return {"bit_exact": False, "images": int(len(reference)),
                "error": f"device gave int8 outputs of shape {list(device_int8.shape)}, "
                         f"reference {list(reference.shape)}"}
    diff = np.abs(device_int8.astype(np.int32) - reference.astype(np.int32))
    mismatches = int(np.count_nonzero(diff.reshape(len(diff), -1).max(axis=1, initial=0)))
    return {"bit_exact": mismatches == 0, "mismatches": mismatches, "images": int(len(reference)),
            "max_abs_diff_lsb": int(diff.max(initial=0)),
            "reference": "ExecuTorch cortex_m Python operators"}


for _core, _what in CORES.items():
    register(Target(_core, "cortex-m", f"int8 CMSIS-NN operators for {_what}, bare-metal firmware",
                    (lambda core: lambda ctx: build_cortex_m(ctx, core))(_core), "mcu",
                    extra_eval=compare_with_reference, unavailable=_unavailable_for(_core)))


# ---------------------------------------------------------------------------------------------
# Reference: replay a serialized program with ExecuTorch's Python operators
# ---------------------------------------------------------------------------------------------

class ParsedProgram:
    """What the replay needs of a .pte: values, constants, the kernel chain, the arena size."""

    def __init__(self, program):
        plan = program.execution_plan[0]
        self.values = plan.values
        self.inputs = list(plan.inputs)
        self.outputs = list(plan.outputs)
        self.operators = [(op.name, op.overload) for op in plan.operators]
        self.instructions = [ins.instr_args for c in plan.chains for ins in c.instructions]
        self.constants = [bytes(b.storage) for b in program.constant_buffer]
        self.memory_sizes = list(plan.non_const_buffer_sizes)


def parse_program(data: bytes) -> ParsedProgram:
    from executorch.exir._serialize._program import deserialize_pte_binary
    try:
        return ParsedProgram(deserialize_pte_binary(data).program)
    except Exception:
        raise UserError("the program is a corrupted ExecuTorch .pte: export it again with "
                        "`tinyrps export --target cortex-m55`") from None


def reference_int8(pte_path, images_uint8: np.ndarray) -> np.ndarray:
    """int8 outputs [N, classes] of ExecuTorch's Python Cortex-M operators replaying the program at pte_path
    (from the background replay of `replays_in_background` when one was started for it)."""
    data = Path(pte_path).read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    future = _background.get((digest, _images_digest(images_uint8)))
    if future is not None:
        try:
            return future.result()
        except concurrent.futures.process.BrokenProcessPool:   # the worker died: replay here instead
            pass
    return replay_int8(_parsed(digest, data), images_uint8)


# Replays started ahead of an evaluation: (program sha256, images sha256) -> Future of the int8 outputs.
_background: dict = {}


@contextlib.contextmanager
def replays_in_background(pte_paths, images_uint8: np.ndarray):
    """Replay these programs over the images in a worker process while the devices run.

    The replay is Python operators (about 15 ms an image) that hold the GIL: in a thread it
    would take turns with every other variant's evaluation instead of using the second core.
    Identical programs (the cortex-m33 and cortex-m4 builds are the same bytes) are replayed once."""
    digests = {}
    for path in pte_paths:
        digests.setdefault(hashlib.sha256(Path(path).read_bytes()).hexdigest(), str(path))
    if not digests:
        yield
        return
    images = np.ascontiguousarray(images_uint8)
    key_of_images = _images_digest(images)
    from ..library_noise import quiet_libraries
    pool = concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                                                  initializer=quiet_libraries)
    try:
        for digest, path in digests.items():
            _background[(digest, key_of_images)] = pool.submit(_replay_file, path, images)
        yield
    finally:
        for digest in digests:
            _background.pop((digest, key_of_images), None)
        pool.shutdown(wait=True, cancel_futures=True)


def _replay_file(path: str, images_uint8: np.ndarray) -> np.ndarray:
    data = Path(path).read_bytes()
    return replay_int8(parse_program(data), images_uint8)


def _images_digest(images_uint8: np.ndarray) -> str:
    a = np.ascontiguousarray(images_uint8)
    return hashlib.sha256(str(a.shape).encode() + a.tobytes()).hexdigest()


@lru_cache(maxsize=4)
def _parsed(_digest: str, data: bytes) -> ParsedProgram:
    return parse_program(data)


def _register_operators() -> None:
    """Importing these defines torch.ops.cortex_m.* and torch.ops.dim_order_ops.* with their Python kernels.

    The passes package first: importing the operators module on its own runs into a circular import."""
    import executorch.backends.cortex_m.passes  # noqa: F401
    import executorch.backends.cortex_m.ops.operators  # noqa: F401
    import executorch.exir.passes.dim_order_ops_registry  # noqa: F401


def _one_thread():
    """Tensors of one 28x28 image are tiny: one thread is several times faster than torch's pool
    (and does not fight other work for the cores). Off the main thread the pool stays as it is
    (see torch_threads); eval, which runs the reference in a worker, sets one thread itself."""
    return torch_threads(1)


def replay_int8(prog: ParsedProgram, images: np.ndarray) -> np.ndarray:
    _register_operators()
    with _one_thread(), torch.no_grad():
        return np.stack([_Replay(prog).run(x) for x in images_to_tensor(images)]) if len(images) else \
            np.zeros((0, len(LABELS)), np.int8)


def replay_layers(pte_path, image_uint8: np.ndarray) -> list:
    """(operator, output bytes) of every kernel call of the program on one 28x28 image, in chain order.

    The bytes are the output tensor's storage in the memory plan, as a runtime leaves it:
    comparing them call by call locates the first operator where an implementation differs."""
    _register_operators()
    prog = parse_program(Path(pte_path).read_bytes())
    replay = _Replay(prog, record=True)
    with _one_thread(), torch.no_grad():
        replay.run(images_to_tensor(image_uint8[None])[0])
    return replay.layers


class _Replay:
    """One inference: an arena per memory id, tensors as strided views into it."""

    def __init__(self, prog: ParsedProgram, record: bool = False):
        self.prog = prog
        self.arenas = [np.zeros(max(int(n), 1), np.uint8) for n in prog.memory_sizes]
        self.last_quantized = None
        self.layers = [] if record else None

    def run(self, image: torch.Tensor) -> np.ndarray:
        (input_index,) = self.prog.inputs
        self._write(input_index, image.unsqueeze(0))
        for call in self.prog.instructions:
            self._execute(call)
        if self.last_quantized is None:
            raise UserError("the program has no dequantize_per_tensor: not a Cortex-M int8 program")
        return self.last_quantized.reshape(-1).numpy().astype(np.int8)

    def _execute(self, call) -> None:
        name, overload = self.prog.operators[call.op_index]
        namespace, op_name = name.split("::")
        packet = getattr(getattr(torch.ops, namespace), op_name)
        schema = getattr(packet, overload or "default")._schema
        named = {a.name: (a, call.args[i]) for i, a in enumerate(schema.arguments)}
        out_index = named.pop("out")[1]
        positional, keywords = [], {}
        for arg_name, (arg, value_index) in named.items():
            value = self._value(value_index)
            if str(arg.type) == "ScalarType" and isinstance(value, int):
                value = _TORCH_DTYPES[value]
            if arg.kwarg_only:
                keywords[arg_name] = value
            else:
                positional.append(value)
        if op_name == "dequantize_per_tensor":
            self.last_quantized = positional[0].clone()
        result = packet.default(*positional, **keywords)
        self._write(out_index, result)
        if self.layers is not None:
            self.layers.append((name, self._bytes(out_index)))

    def _bytes(self, index: int) -> bytes:
        t = self.prog.values[index].val
        nbytes = int(np.prod(t.sizes, dtype=np.int64)) * np.dtype(_NP_DTYPES[t.scalar_type]).itemsize
        return self._storage(t)[:nbytes].tobytes()

    def _value(self, index: int):
        val = self.prog.values[index].val
        kind = type(val).__name__
        if kind == "Tensor":
            return self._tensor(val)
        if kind == "Int":
            return val.int_val
        if kind == "Double":
            return val.double_val
        if kind == "Bool":
            return val.bool_val
        if kind == "Null":
            return None
        if kind == "IntList":
            return [self.prog.values[i].val.int_val for i in val.items]
        raise UserError(f"the program has a value of kind {kind}, which the Cortex-M reference does not take")

    def _storage(self, t) -> np.ndarray:
        if t.data_buffer_idx > 0:
            return np.frombuffer(self.prog.constants[t.data_buffer_idx], np.uint8)
        alloc = t.allocation_info
        arena = self.arenas[alloc.memory_id]
        return arena[alloc.memory_offset_low + (alloc.memory_offset_high << 32):]

    def _view(self, t) -> np.ndarray:
        """numpy view of a serialized tensor in logical (sizes) order, strided by its dim_order."""
        dtype = np.dtype(_NP_DTYPES[t.scalar_type])
        sizes = list(t.sizes)
        strides = [0] * len(sizes)
        step = dtype.itemsize
        for dim in reversed(list(t.dim_order)):
            strides[dim] = step
            step *= sizes[dim]
        raw = self._storage(t)
        return np.lib.stride_tricks.as_strided(raw[:step].view(dtype), shape=sizes, strides=strides,
                                               writeable=t.data_buffer_idx == 0)

    def _tensor(self, t) -> torch.Tensor:
        view = self._view(t)
        # a copy in logical order; channels-last tensors get channels-last memory, as the exporter traced them
        tensor = torch.from_numpy(view.copy())
        if len(t.dim_order) == 4 and list(t.dim_order) == [0, 2, 3, 1]:
            tensor = tensor.contiguous(memory_format=torch.channels_last)
        return tensor

    def _write(self, index: int, tensor: torch.Tensor) -> None:
        t = self.prog.values[index].val
        view = self._view(t)
        view[...] = tensor.reshape(view.shape).numpy().astype(view.dtype)
