"""A user's own PyTorch model for `tinyrps export --module FILE.py:NAME`.

    FILE.py:NAME   NAME is an nn.Module subclass (built with no arguments), a function that
                   returns an nn.Module when called with none, or an nn.Module instance
    --input-shape  one per program input, e.g. 1,3,32,32 (the batch of one included)
    --input-dtype  one per input, or one for all (float32 by default)
    --calibration  FILE.npz with one array per input, named input0, input1, ... (or a single
                   array for a single input), each N examples of the input's shape with or
                   without its batch of one: [N,3,32,32] or [N,1,3,32,32]; or `random`:
                   RANDOM_EXAMPLES seeded examples (standard normal floats, integers over the
                   dtype's range)

Every mistake (a missing file, a NAME that is not there or not a model, shapes the model
does not take or this machine cannot hold, a calibration file that does not match or whose
values are not finite or quantize to nothing, a module that calls sys.exit or raises
KeyboardInterrupt, a model torch.export cannot trace) is one line that says what to do,
before any target's work starts.
The cheap checks (`parse_*`) import nothing heavy, so the command line refuses bad
arguments before torch is loaded.
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import sys
from pathlib import Path

from ..infra.errors import UserError, one_line

RANDOM_EXAMPLES = 32
RANDOM_SEED = 0
DTYPES = ("float32", "int8", "uint8", "int32")
MODULE_HINT = "give --module FILE.py:NAME, NAME an nn.Module class, instance or factory function in FILE.py"


def parse_module_spec(text: str) -> tuple:
    """'path/to/model.py:Net' -> (Path, 'Net'), checked to exist; nothing is imported."""
    path_text, sep, name = str(text).rpartition(":")
    if not sep or not path_text or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise UserError(f"--module {text} is not FILE.py:NAME: {MODULE_HINT}")
    path = Path(path_text)
    if not path.is_file():
        raise UserError(f"--module: no Python file {path}: {MODULE_HINT}")
    if path.suffix != ".py":
        raise UserError(f"--module: {path} is not a .py file: {MODULE_HINT}")
    return path, name


def parse_shape(text: str) -> tuple:
    """'1,3,32,32' -> (1, 3, 32, 32)."""
    try:
        shape = tuple(int(part) for part in str(text).split(","))
    except ValueError:
        shape = ()
    if not shape or any(size < 1 for size in shape):
        raise UserError(f"--input-shape {text} is not a shape: give positive sizes joined by commas, e.g. 1,3,32,32")
    return shape


def parse_inputs(shapes: list, dtypes: list) -> list:
    """[(shape, dtype)] per input from the command line's --input-shape and --input-dtype lists."""
    if not shapes:
        raise UserError("--module needs --input-shape (one per input of the model), e.g. --input-shape 1,3,32,32")
    parsed = [parse_shape(s) for s in shapes]
    dtypes = list(dtypes or ["float32"])
    if len(dtypes) == 1:
        dtypes *= len(parsed)
    if len(dtypes) != len(parsed):
        raise UserError(f"{len(dtypes)} --input-dtype for {len(parsed)} --input-shape: give one dtype per input, "
                        "or one for all")
    for dtype in dtypes:
        if dtype not in DTYPES:
            raise UserError(f"--input-dtype {dtype} is not one of {', '.join(DTYPES)}")
    for text, shape, dtype in zip(shapes, parsed, dtypes):
        check_size(text, shape, dtype)
    return list(zip(parsed, dtypes))


MAX_SIZE = 2 ** 31 - 1         # a program records each size of a tensor as an int32
ITEM_BYTES = {"float32": 4, "int8": 1, "uint8": 1, "int32": 4}


def check_size(text: str, shape: tuple, dtype: str) -> None:
    """An input a program can record and this machine can hold (its examples are made in memory)."""
    from ..infra.artifacts.files import available_memory, human_bytes
    if max(shape) > MAX_SIZE:
        raise UserError(f"--input-shape {text}: a size above {MAX_SIZE:,} (a program records sizes as 32-bit "
                        "integers): give a smaller shape")
    nbytes, free = ITEM_BYTES[dtype], available_memory()
    for size in shape:
        nbytes *= size
    if free is not None and nbytes > free:
        raise UserError(f"--input-shape {text} is {human_bytes(nbytes)} of {dtype}, more than the "
                        f"{human_bytes(free)} of memory free: give a smaller shape")


@contextlib.contextmanager
def no_exit(what: str):
    """The user's code run in the block (`what`: "importing FILE.py", "FILE.py:NAME's forward") may not end
    the command: a sys.exit() or a KeyboardInterrupt it raises itself is one line naming it. A Ctrl-C
    pressed meanwhile still stops the command."""
    from ..infra import ctrl_c
    try:
        yield
    except SystemExit as e:
        raise UserError(f"--module: {what} called sys.exit({e.code!r}), which would end tinyrps: remove the call "
                        "(a model's module is imported and run, never as a program)") from None
    except KeyboardInterrupt:
        if ctrl_c.received():
            raise
        raise UserError(f"--module: {what} raised KeyboardInterrupt itself (no Ctrl-C was pressed): remove the "
                        "raise") from None


def load_model(path: Path, name: str):
    """The nn.Module NAME of a user's Python file, in eval mode."""
    with no_exit(f"importing {path}"):
        return _load_model(path, name)


def _load_model(path: Path, name: str):
    import torch
    module_name = f"tinyrps_user_model_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    source = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = source
    try:
        spec.loader.exec_module(source)
    except Exception as e:   # the user's file: every failure is theirs to fix, told in one line
        raise UserError(f"--module: importing {path} failed ({type(e).__name__}: {one_line(e, 200)})") from None
    if not hasattr(source, name):
        found = sorted(n for n, v in vars(source).items() if isinstance(v, type) and issubclass(v, torch.nn.Module)
                       and v.__module__ == module_name)
        raise UserError(f"--module: {path} has no '{name}'" + (f" (its models: {', '.join(found)})" if found else ""))
    thing = getattr(source, name)
    try:
        model = thing() if callable(thing) and not isinstance(thing, torch.nn.Module) else thing
    except Exception as e:
        raise UserError(f"--module: {name}() failed ({type(e).__name__}: {one_line(e, 200)}): NAME must be "
                        "buildable with no arguments") from None
    if not isinstance(model, torch.nn.Module):
        raise UserError(f"--module: {path}:{name} is not an nn.Module (it gives {type(model).__name__}): "
                        f"{MODULE_HINT}")
    return model.eval()


def torch_dtype(name: str):
    import torch
    return {"float32": torch.float32, "int8": torch.int8, "uint8": torch.uint8, "int32": torch.int32}[name]


def example_inputs(inputs: list) -> tuple:
    """Zeros of every input's shape and dtype: what the exporter traces with."""
    import torch
    return tuple(torch.zeros(shape, dtype=torch_dtype(dtype)) for shape, dtype in inputs)


def check_model_takes(model, examples: tuple, path: Path, name: str) -> None:
    """The model runs on the example inputs, and torch.export can trace it into a graph of the
    operations ExecuTorch represents: checked before any target's work starts."""
    import torch
    try:
        with no_exit(f"{path}:{name}'s forward"), torch.no_grad():
            model(*examples)
    except UserError:
        raise
    except Exception as e:
        shapes = ", ".join("x".join(map(str, x.shape)) for x in examples)
        raise UserError(f"--module: {path}:{name} does not take inputs of shape {shapes} "
                        f"({type(e).__name__}: {one_line(e, 200)}): check --input-shape") from None
    check_traceable(model, examples, path, name)


@contextlib.contextmanager
def torch_logs_held():
    """torch's own log lines and prints held back for the block: a model torch.export cannot trace makes it
    print the graph it got so far, dozens of lines; the refusal's one line says what is wrong."""
    import logging
    loggers = [logger for name, logger in list(logging.root.manager.loggerDict.items())
               if (name == "torch" or name.startswith("torch.")) and isinstance(logger, logging.Logger)
               and not logger.disabled]
    for logger in loggers:
        logger.disabled = True
    try:
        with contextlib.redirect_stderr(io.StringIO()):   # torch.export prints the graph as well
            yield
    finally:
        for logger in loggers:
            logger.disabled = False


def check_traceable(model, examples: tuple, path: Path, name: str) -> None:
    """torch.export's graph of the model, and ExecuTorch's float program of it: what every target lowers.
    A model whose operations depend on its input's values (an `if` on a tensor, a size from nonzero) or
    that ExecuTorch cannot represent (complex numbers) is refused in one line."""
    import torch
    from executorch.exir import to_edge
    step = "torch.export cannot trace"
    try:
        with no_exit(f"{path}:{name}'s forward"), torch_logs_held():
            program = torch.export.export(model, examples)
            step = "ExecuTorch cannot lower"
            to_edge(program).to_executorch()      # the float program: its memory plan needs static sizes
    except UserError:
        raise
    except Exception as e:
        raise UserError(f"--module: {step} {path}:{name} ({type(e).__name__}: {one_line(e, 160)}): export a "
                        "model whose operations do not depend on its input's values and use real numbers only"
                        ) from None


def random_calibration(inputs: list, count: int = RANDOM_EXAMPLES, seed: int = RANDOM_SEED) -> list:
    """`count` seeded examples: standard normal floats; integers uniform over the dtype's range."""
    import torch
    generator = torch.Generator().manual_seed(seed)
    examples = []
    for _ in range(count):
        example = []
        for shape, dtype in inputs:
            if dtype == "float32":
                example.append(torch.randn(shape, generator=generator))
            else:
                info = torch.iinfo(torch_dtype(dtype))
                low, high = max(info.min, -(2 ** 15)), min(info.max, 2 ** 15)
                example.append(torch.randint(low, high + 1, shape, generator=generator, dtype=torch_dtype(dtype)))
        examples.append(tuple(example))
    return examples


def file_calibration(path: Path, inputs: list) -> list:
    """The examples of a calibration .npz file, checked against the inputs' shapes and dtypes."""
    import numpy as np
    import torch
    if not Path(path).is_file():
        raise UserError(f"--calibration: no file {path}: give a .npz file of examples, or `random`")
    from ..interfaces.run_program import input_arrays
    given = input_arrays(path, len(inputs), "--calibration",
                         f"name them {', '.join(f'input{i}' for i in range(len(inputs)))}")
    per_input, count = [], None
    for name, a, (shape, dtype) in zip([f"input{i}" for i in range(len(inputs))], given, inputs):
        if tuple(a.shape[1:]) == shape:
            rows = [a[i] for i in range(len(a))]
        elif shape[0] == 1 and tuple(a.shape[1:]) == shape[1:]:
            rows = [a[i:i + 1] for i in range(len(a))]
        else:
            raise UserError(f"--calibration {path}: {name} has shape {list(a.shape)}, not N examples of "
                            f"{list(shape)}")
        if a.dtype != np.dtype(dtype):
            raise UserError(f"--calibration {path}: {name} is {a.dtype}, the input is {dtype}")
        if not len(rows):
            raise UserError(f"--calibration {path}: {name} has no examples")
        if count is not None and len(rows) != count:
            raise UserError(f"--calibration {path}: the arrays hold different numbers of examples")
        if a.dtype.kind == "f":
            check_calibration_values(path, name, a)
        count = len(rows)
        per_input.append([torch.from_numpy(np.ascontiguousarray(r)) for r in rows])
    return [tuple(column) for column in zip(*per_input)]


def check_calibration_values(path: Path, name: str, a) -> None:
    """Float examples that calibrate an int8 quantization: finite, and spread so that most of them keep a
    value at the int8 step their range gives (one value of 3e38 among values near 1 makes the step about
    1e36, every other value 0, and every output of the program 0)."""
    import numpy as np
    values = a.astype(np.float64, copy=False).ravel()
    bad = ~np.isfinite(values)
    if bad.any():
        raise UserError(f"--calibration {path}: {name} holds {int(bad.sum())} value(s) that are NaN or infinite: "
                        "give finite examples")
    low, high = min(values.min(), 0.0), max(values.max(), 0.0)
    step = (high - low) / 255
    nonzero = np.abs(values[values != 0])
    if len(nonzero) and np.count_nonzero(nonzero < step / 2) * 2 > len(nonzero):
        raise UserError(f"--calibration {path}: {name} spans {low:.3g} to {high:.3g}, so the int8 step is "
                        f"{step:.3g} and most of its values would quantize to 0: remove the outliers")
