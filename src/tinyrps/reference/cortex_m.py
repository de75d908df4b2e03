"""What a Cortex-M program computes, on the host: the .pte replayed with ExecuTorch's Python operators.

tinyrps's C runtime must match, bit for bit, ExecuTorch's Python implementations of the
`cortex_m::` operators (executorch/backends/cortex_m/ops/operators.py) and of the portable
operators between them. `replay` is that reference for any .pte: it executes the serialized
program itself -- the same chain of kernel calls, the same memory plan, the same constants --
calling the Python operator of every kernel call. Working from the .pte bytes (rather than a
kept copy of the edge program) means the reference can never describe a different program
than the one on the device; the export checks the replay against the edge program it lowered.

    replay(program, inputs)        one inference: a list of input arrays -> a list of output arrays
    replay_many(program, inputs)   the same over arrays with a leading batch axis
    reference_int8(pte, images)    an RPS classifier's int8 outputs (its final dequantize's input)
    replay_layers(pte, image)      every kernel call's output bytes, to find where an implementation differs
    evaluate(ctx)                  the evaluation's check: the device's int8 outputs against the reference
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

from ..infra.errors import UserError
from ..firmware.c_facts import dtypes
from ..network.labels import LABELS
from ..infra.torch_settings import torch_threads

# ExecuTorch ScalarType codes -> numpy / torch dtypes, from the runtime's dtype list (c_facts.dtypes).
NP_DTYPES = {code: np.dtype(name).type for code, (name, _) in dtypes().items()}
TORCH_DTYPES = {code: getattr(torch, name) for code, (name, _) in dtypes().items()}
DEQUANTIZE = "dequantize_per_tensor"


class ParsedProgram:
    """What the replay needs of a .pte: values, constants, the kernel chain, the memory plan."""

    def __init__(self, program):
        plan = program.execution_plan[0]
        self.values = plan.values
        self.inputs = list(plan.inputs)
        self.outputs = list(plan.outputs)
        self.operators = [(op.name, op.overload) for op in plan.operators]
        self.instructions = [ins.instr_args for c in plan.chains for ins in c.instructions]
        self.constants = [bytes(b.storage) for b in program.constant_buffer]
        self.memory_sizes = list(plan.non_const_buffer_sizes)

    def tensor(self, index: int):
        return self.values[index].val

    def input_shapes(self) -> list:
        return [tuple(self.tensor(i).sizes) for i in self.inputs]


def parse_program(data: bytes) -> ParsedProgram:
    from executorch.exir._serialize._program import deserialize_pte_binary
    try:
        return ParsedProgram(deserialize_pte_binary(data).program)
    except Exception:
        raise UserError("the program is a corrupted ExecuTorch .pte: export it again with `tinyrps export`") from None


def _program(program) -> ParsedProgram:
    if isinstance(program, ParsedProgram):
        return program
    data = Path(program).read_bytes() if isinstance(program, (str, Path)) else bytes(program)
    return _parsed(hashlib.sha256(data).hexdigest(), data)


@lru_cache(maxsize=4)
def _parsed(_digest: str, data: bytes) -> ParsedProgram:
    return parse_program(data)


def replay(program, inputs: list) -> list:
    """One inference of a program (its bytes, path or ParsedProgram) on its inputs (one array per
    program input, shaped as the program declares it, in logical order): the outputs, in the
    program's own dtypes and shapes."""
    prog = _program(program)
    register_operators()
    with _one_thread(), torch.no_grad():
        return _Replay(prog).run(inputs)


def replay_many(program, inputs: list) -> list:
    """Like `replay`, over inputs with a leading batch axis: one array per program input, each
    [N, *shape]; returns one array per output, each [N, *shape]."""
    return replay_many_with_int8(program, inputs)[0]


def replay_many_with_int8(program, inputs: list) -> tuple:
    """(outputs, int8): `replay_many`'s outputs, and per output written by a dequantize_per_tensor the
    int8 tensor that call read, [N, *shape] (None for an output no dequantize wrote): what a runtime
    reports as an output's raw values."""
    prog = _program(program)
    register_operators()
    shapes = [tuple(prog.tensor(i).sizes) for i in prog.outputs]
    dtypes = [NP_DTYPES[prog.tensor(i).scalar_type] for i in prog.outputs]

    def per_sample(array, k: int, count: int) -> np.ndarray:
        """A batch's output k as [count, *its shape]: a batch of one holds the output as the program
        declares it, a larger one in place of the leading axis of one (batchable)."""
        return None if array is None else array.reshape(count, *shapes[k])
    outputs, int8 = [], []
    with _one_thread(), torch.no_grad():
        for replayer, outs, count in _replays(prog, inputs):
            outputs.append([per_sample(o, k, count) for k, o in enumerate(outs)])
            int8.append([per_sample(replayer.dequantized.get(index), k, count) for k, index in enumerate(prog.outputs)])
    stacked = [np.concatenate([o[k] for o in outputs]) if outputs else np.zeros((0, *shapes[k]), dtypes[k])
               for k in range(len(shapes))]
    stacked_int8 = [None if not int8 or int8[0][k] is None else np.concatenate([q[k] for q in int8])
                    for k in range(len(shapes))]
    return stacked, stacked_int8


# One replay may take a batch of inputs where each of these operators computes each sample of its
# batch on its own (ExecuTorch's Python kernels of them do: convolutions, pooling, matrix products
# and elementwise arithmetic over a leading batch axis), and every planned tensor holds one sample,
# batch axis first (batchable). The memory plan is then scaled by the batch size: tensors apart in
# the plan stay apart, and a tensor read through two values at one offset (the flattening before a
# linear layer) keeps each sample's bytes in the same block. The Python operators cost 13-15 ms an
# image one at a time (a Python loop over output channels per convolution), 4 ms in batches of 100.
BATCHABLE_OPERATORS = frozenset({
    "cortex_m::quantize_per_tensor", "cortex_m::dequantize_per_tensor", "cortex_m::quantized_conv2d",
    "cortex_m::quantized_depthwise_conv2d", "cortex_m::quantized_max_pool2d", "cortex_m::quantized_linear",
    "dim_order_ops::_clone_dim_order"})
BATCH = 100


def batchable(prog: ParsedProgram) -> bool:
    """Whether one replay can take a batch (see BATCHABLE_OPERATORS). A kernel's scratch buffer is
    exempt from the one-sample rule: no Python kernel reads or writes it."""
    if any(name not in BATCHABLE_OPERATORS for name, _ in prog.operators):
        return False
    register_operators()
    scratch = set()
    for call in prog.instructions:
        arguments = _schema(*prog.operators[call.op_index]).arguments
        scratch.update(index for arg, index in zip(arguments, call.args) if arg.name == "scratch")
    for index, value in enumerate(prog.values):
        t = value.val
        if type(t).__name__ == "Tensor" and t.data_buffer_idx == 0 and t.allocation_info is not None \
                and index not in scratch:
            if not t.sizes or t.sizes[0] != 1 or list(t.dim_order)[0] != 0:
                return False
    return True


def _replays(prog: ParsedProgram, inputs: list):
    """A _Replay per batch of the inputs (one array per program input, each [N, *shape]), each run:
    (the replay, its outputs, the samples in it). Batches of BATCH where the program is batchable,
    else of one; each input's samples go one after another along the program's leading axis of one."""
    count = len(inputs[0]) if inputs else 0
    step = BATCH if count and batchable(prog) else 1
    for i in range(0, count, step):
        chunk = [np.asarray(x[i:i + step]) for x in inputs]
        replay = _Replay(prog, batch=len(chunk[0]))
        outputs = replay.run([c.reshape(-1, *c.shape[2:]) for c in chunk])
        yield replay, outputs, len(chunk[0])


def _packet(name: str):
    """torch's operator packet of a program's operator name, e.g. "cortex_m::quantized_conv2d"."""
    namespace, op_name = name.split("::")
    return getattr(getattr(torch.ops, namespace), op_name)


def _schema(name: str, overload: str):
    return getattr(_packet(name), overload or "default")._schema


def rps_inputs(images_uint8: np.ndarray) -> list:
    """uint8 images [N,28,28] -> the RPS programs' one input, float32 [N,1,1,28,28] in [0,1]
    (float32 division, the same rounding as the firmware's (float)x / 255.0f)."""
    return [(np.asarray(images_uint8, np.uint8).astype(np.float32) / np.float32(255.0))[:, None, None]]


def replay_int8(prog: ParsedProgram, images: np.ndarray) -> np.ndarray:
    """An RPS classifier's int8 outputs [N, classes]: the input of its final dequantize."""
    register_operators()
    with _one_thread(), torch.no_grad():
        rows = []
        for replay, _, count in _replays(prog, rps_inputs(images)):
            if replay.last_dequantized is None:
                raise UserError("the program has no dequantize_per_tensor: not a Cortex-M int8 classifier")
            rows.append(replay.last_dequantized.reshape(count, -1))
    return np.concatenate(rows) if rows else np.zeros((0, len(LABELS)), np.int8)


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


def replay_layers(pte_path, image_uint8: np.ndarray) -> list:
    """(operator, output bytes) of every kernel call of an RPS program on one 28x28 image, in chain order.

    The bytes are the output tensor's storage in the memory plan, as a runtime leaves it:
    comparing them call by call locates the first operator where an implementation differs."""
    return replay_calls(pte_path, [rps_inputs(image_uint8[None])[0][0]])


def replay_calls(program, inputs: list) -> list:
    """(operator, output bytes) of every kernel call of one inference on `inputs`, in chain order."""
    prog = _program(program)
    register_operators()
    replay = _Replay(prog, record=True)
    with _one_thread(), torch.no_grad():
        replay.run(list(inputs))
    return replay.layers


# --- the evaluation's check ------------------------------------------------------------------------

def evaluate(ctx) -> dict:
    """The device's int8 outputs against the Python reference, on every image of the evaluation."""
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


# Replays started ahead of an evaluation: (program sha256, images sha256) -> Future of the int8 outputs.
_background: dict = {}


@contextlib.contextmanager
def replays_in_background(pte_paths, images_uint8: np.ndarray):
    """Replay these programs over the images in a worker process while the devices run.

    The replay is Python operators (about 15 ms an image) that hold the GIL: in a thread it
    would take turns with every other program's evaluation instead of using the second core.
    Identical programs (the cortex-m33 and cortex-m4 builds are the same bytes) are replayed once."""
    digests = {}
    for path in pte_paths:
        digests.setdefault(hashlib.sha256(Path(path).read_bytes()).hexdigest(), str(path))
    if not digests:
        yield
        return
    images = np.ascontiguousarray(images_uint8)
    key_of_images = _images_digest(images)
    from ..infra.ctrl_c import worker_init, workers_start_blocked
    pool = concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                                                  initializer=worker_init)
    try:
        with workers_start_blocked():       # the first submit starts the worker
            for digest, path in digests.items():
                _background[(digest, key_of_images)] = pool.submit(_replay_file, path, images)
        yield
    finally:
        for digest in digests:
            _background.pop((digest, key_of_images), None)
        pool.shutdown(wait=True, cancel_futures=True)


def _replay_file(path: str, images_uint8: np.ndarray) -> np.ndarray:
    return replay_int8(parse_program(Path(path).read_bytes()), images_uint8)


def _images_digest(images_uint8: np.ndarray) -> str:
    a = np.ascontiguousarray(images_uint8)
    return hashlib.sha256(str(a.shape).encode() + a.tobytes()).hexdigest()


# --- the replay ---------------------------------------------------------------------------------------

def register_operators() -> None:
    """Importing these defines torch.ops.cortex_m.* and torch.ops.dim_order_ops.* with their Python kernels.

    The passes package first: importing the operators module on its own runs into a circular import.
    The operators then see torch.nn.functional through `_ExactIntegerConvolution`."""
    import executorch.backends.cortex_m.passes  # noqa: F401
    from executorch.backends.cortex_m.ops import operators
    import executorch.exir.passes.dim_order_ops_registry  # noqa: F401
    if not isinstance(operators.F, _ExactIntegerConvolution):
        operators.F = _ExactIntegerConvolution(operators.F)


class _ExactIntegerConvolution:
    """torch.nn.functional as ExecuTorch's Cortex-M operators call it, with the one integer convolution torch
    lacks: a dilated one ("slow_conv_dilated<>" not implemented for 'Int'), which the quantized and depthwise
    convolutions run on their int32 operands. It is computed in float64, where every product of two operands
    and every partial sum is an integer far below 2**53 and so exact in any order of summation: the integer
    result, as an int32 accumulator (what CMSIS-NN keeps) holds it. Everything else is torch's own."""

    def __init__(self, functional):
        self._functional = functional

    def __getattr__(self, name: str):
        return getattr(self._functional, name)

    def conv2d(self, input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        dilated = any(d != 1 for d in ((dilation,) * 2 if isinstance(dilation, int) else dilation))
        if input.is_floating_point() or not dilated:
            return self._functional.conv2d(input, weight, bias, stride, padding, dilation, groups)
        return integer_conv2d(input, weight, bias, stride, padding, dilation, groups)


def integer_conv2d(input, weight, bias, stride, padding, dilation, groups) -> torch.Tensor:
    """An integer 2-D convolution, exactly, in input's dtype (see _ExactIntegerConvolution); NotImplementedError
    where a sum could leave float64's exact integers or the result int32's range."""
    def largest(t) -> int:
        return 0 if t is None or t.numel() == 0 else int(t.abs().max())
    terms = weight[0].numel()                  # products in one output value: (in channels / groups) * kh * kw
    if largest(input) * largest(weight) * terms + largest(bias) >= 2 ** 53:
        raise NotImplementedError("an integer convolution whose sums exceed float64's exact integers")
    as_float = [None if t is None else t.to(torch.float64) for t in (input, weight, bias)]
    result = torch.nn.functional.conv2d(*as_float, stride, padding, dilation, groups)
    if result.numel() and largest(result) >= 2 ** 31:
        raise NotImplementedError("an integer convolution whose result exceeds int32")
    return result.to(input.dtype)


def _one_thread():
    """Tensors of one small inference are tiny: one thread is several times faster than torch's pool
    (and does not fight other work for the cores). Off the main thread the pool stays as it is
    (see torch_threads); eval, which runs the reference in a worker, sets one thread itself."""
    return torch_threads(1)


class _Replay:
    """One inference: an arena per memory id, tensors as strided views into it."""

    def __init__(self, prog: ParsedProgram, record: bool = False, batch: int = 1):
        self.prog = prog
        self.batch = batch      # samples per planned tensor (BATCHABLE_OPERATORS): the plan scaled by it
        self.arenas = [np.zeros(max(int(n) * batch, 1), np.uint8) for n in prog.memory_sizes]
        self.last_dequantized = None     # int8 input of the latest dequantize_per_tensor call
        self.dequantized = {}            # output value index -> the int8 input of the dequantize that wrote it
        self.layers = [] if record else None

    def run(self, inputs: list) -> list:
        if len(inputs) != len(self.prog.inputs):
            raise UserError(f"the program takes {len(self.prog.inputs)} inputs, {len(inputs)} were given")
        for index, x in zip(self.prog.inputs, inputs):
            self._write(index, torch.from_numpy(np.ascontiguousarray(x)))
        for call in self.prog.instructions:
            self._execute(call)
        return [self._view(self.prog.tensor(i)).copy() for i in self.prog.outputs]

    def _execute(self, call) -> None:
        name, overload = self.prog.operators[call.op_index]
        op_name = name.split("::")[1]
        packet = _packet(name)
        schema = getattr(packet, overload or "default")._schema
        named = {a.name: (a, call.args[i]) for i, a in enumerate(schema.arguments)}
        # the call's first output: `out`, or `out0` of an operator returning several (native_layer_norm)
        out_name = "out" if "out" in named else next(a.name for a in schema.arguments if a.is_out)
        out_index = named.pop(out_name)[1]
        # an aten call's other outputs (max_pool2d_with_indices' indices): torch writes them beside `out`
        more_outs = {a.name: named.pop(a.name)[1] for a in schema.arguments
                     if a.is_out and a.name != out_name and name.startswith("aten::")}
        positional, keywords = [], {}
        for arg_name, (arg, value_index) in named.items():
            value = self._value(value_index)
            if str(arg.type) == "ScalarType" and isinstance(value, int):
                value = TORCH_DTYPES[value]
            if arg.kwarg_only:
                keywords[arg_name] = value
            else:
                positional.append(value)
        if op_name == DEQUANTIZE:
            self.last_dequantized = positional[0].reshape(-1).numpy().astype(np.int8)
            self.dequantized[out_index] = positional[0].contiguous().numpy().astype(np.int8)
        if name.startswith("aten::"):
            # torch's own overload of the call: the functional `default` of an aten name is often another
            # operator (aten::add.default adds two Scalars)
            items = self._out_items(out_index)
            if items:   # a Tensor[] out (split_with_sizes_copy): each item written, the call returns nothing
                outs = [torch.empty(list(t.sizes), dtype=TORCH_DTYPES[t.scalar_type])
                        for t in (self.prog.tensor(i) for i in items)]
                getattr(packet, overload or "default")(*positional, **keywords, out=outs)
                for index, tensor in zip(items, outs):
                    self._write(index, tensor)
                return
            outs = {n: torch.empty(list(self.prog.tensor(i).sizes), dtype=TORCH_DTYPES[self.prog.tensor(i).scalar_type])
                    for n, i in {out_name: out_index, **more_outs}.items()}
            result = getattr(packet, overload or "default")(*positional, **keywords, **outs)
            for n, i in more_outs.items():
                self._write(i, outs[n])
            result = outs[out_name]
        else:
            result = packet.default(*positional, **keywords)
        self._write(out_index, result)
        if self.layers is not None:
            self.layers.append((name, self._bytes(out_index)))

    def _out_items(self, index: int):
        """The value indices of a Tensor[] out's items, or None for a tensor out."""
        val = self.prog.values[index].val
        return list(val.items) if type(val).__name__ == "TensorList" else None

    def _bytes(self, index: int) -> bytes:
        t = self.prog.tensor(index)
        nbytes = int(np.prod(t.sizes, dtype=np.int64)) * np.dtype(NP_DTYPES[t.scalar_type]).itemsize
        return self._storage(t)[:nbytes].tobytes()

    def _value(self, index: int):
        val = self.prog.values[index].val
        tag = type(val).__name__
        if tag == "Tensor":
            return self._tensor(val)
        if tag == "Int":
            return val.int_val
        if tag == "Double":
            return val.double_val
        if tag == "Bool":
            return val.bool_val
        if tag == "Null":
            return None
        if tag == "IntList":
            return [self.prog.values[i].val.int_val for i in val.items]
        if tag == "BoolList":
            return list(val.items)
        if tag == "DoubleList":
            return list(val.items)
        if tag == "TensorList":
            return [self._tensor(self.prog.values[i].val) for i in val.items]
        if tag == "OptionalTensorList":   # index.Tensor's indices: None where a dim is not indexed
            return [None if i < 0 or type(self.prog.values[i].val).__name__ == "Null"
                    else self._tensor(self.prog.values[i].val) for i in val.items]
        raise UserError(f"the program has a value of type {tag}, which the Cortex-M reference does not take")

    def _storage(self, t) -> np.ndarray:
        if t.data_buffer_idx > 0:
            return np.frombuffer(self.prog.constants[t.data_buffer_idx], np.uint8)
        alloc = t.allocation_info
        arena = self.arenas[alloc.memory_id]
        return arena[(alloc.memory_offset_low + (alloc.memory_offset_high << 32)) * self.batch:]

    def _view(self, t) -> np.ndarray:
        """numpy view of a serialized tensor in logical (sizes) order, strided by its dim_order."""
        dtype = np.dtype(NP_DTYPES[t.scalar_type])
        sizes = list(t.sizes)
        if self.batch != 1 and t.data_buffer_idx == 0 and sizes and sizes[0] == 1:    # a planned sample (batchable)
            sizes[0] = self.batch
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
        t = self.prog.tensor(index)
        view = self._view(t)
        if tuple(tensor.shape) != tuple(view.shape) and tensor.numel() != view.size:
            raise UserError(f"an input of shape {list(tensor.shape)} does not fit the program's tensor of shape "
                            f"{list(view.shape)}")
        view[...] = tensor.reshape(view.shape).numpy().astype(view.dtype)
