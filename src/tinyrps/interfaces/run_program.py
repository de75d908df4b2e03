"""`tinyrps run`: any program's raw outputs for inputs from a file, on a device that runs tensors.

    inputs file   .npz with one array per program input, named input0, input1, ... (a single
                  array for a single input), each either one sample of the input's shape or N
                  samples [N, *shape], of the input's dtype
    outputs file  .npz with output0, output1, ... ([N, *shape], or the output's shape for a
                  single sample), output0_int8 ... where the device reports an output's raw int8
                  values (the int8 tensor its dequantize read), and instructions ([N]) where the
                  device counts them (the emulated boards: instructions, not cycles)

The program is checked against the file before anything runs: one line names what does not match.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..infra.errors import UserError


def input_arrays(path: Path, count: int, option: str, hint: str) -> list:
    """The arrays of an inputs .npz file, one per program input: input0, input1, ... (or the file's one
    array for a one-input program). A file that cannot be read, or lacks an array, is one line naming
    `option` and saying `hint`."""
    try:
        with np.load(path, allow_pickle=False) as f:
            arrays = {k: f[k] for k in f.files}
    except Exception as e:
        raise UserError(f"{option} {path} is not a readable .npz file ({type(e).__name__}): save it with "
                        "numpy.savez(path, input0=...)") from None
    names = [f"input{i}" for i in range(count)]
    if count == 1 and len(arrays) == 1:
        names = list(arrays)
    missing = [n for n in names if n not in arrays]
    if missing:
        raise UserError(f"{option} {path} has no array {', '.join(missing)} (it has: {', '.join(arrays) or 'none'}): "
                        f"{hint}")
    extra = [n for n in arrays if n not in names]
    if extra:       # an array the program takes none of is a mistake in the file, not something to skip
        raise UserError(f"{option} {path} has array{'s' if len(extra) != 1 else ''} {', '.join(extra)} besides "
                        f"{', '.join(names)}, and the program takes no other: {hint}")
    return [arrays[n] for n in names]


def read_inputs(path: Path, specs: tuple, program: str) -> tuple:
    """(arrays [N, *shape] per input, whether the file held single samples)."""
    given = input_arrays(path, len(specs), "--inputs", f"{program} takes {len(specs)} "
                         f"input{'s' if len(specs) != 1 else ''}: {', '.join(s.describe() for s in specs)}")
    single = all(a.shape == s.shape for a, s in zip(given, specs))
    return ([a[None] for a in given] if single else given), single


def run_file(model, inputs_path, out_path, device_name: str, board=None, options=None, etdump=None) -> dict:
    """Run the program on the samples of `inputs_path` and write `out_path`; returns a summary."""
    from ..infra.artifacts.files import atomic_write_bytes
    from ..infra.artifacts.locks import interrupts_deferred
    from ..devices import open_device, require_tensor_device
    model, out_path = Path(model), Path(out_path)
    require_tensor_device(model, device_name)
    with open_device(device_name, model, board=board, **(options or {})) as device:
        if device.inputs is None:
            raise UserError(f"device '{device_name}' runs image classifiers only; run {model.name}'s tensors with "
                            "--device native, mcu or executorch")
        samples, single = read_inputs(Path(inputs_path), device.inputs, model.name)
        result = device.run_batch(samples)
        described = device.describe()
    arrays = {}
    for k, values in enumerate(result.outputs):
        arrays[f"output{k}"] = values[0] if single else values
        if result.int8[k] is not None:
            arrays[f"output{k}_int8"] = result.int8[k][0] if single else result.int8[k]
    if result.instructions is not None:
        arrays["instructions"] = np.asarray(result.instructions)
    import io
    buffer = io.BytesIO()
    # a stop inside zipfile's opening of a member makes the archive's close raise a ValueError that
    # hides the stop (data.save_split): the few milliseconds of the in-memory archive are held whole
    with interrupts_deferred():
        np.savez(buffer, **arrays)
    atomic_write_bytes(out_path, buffer.getvalue())
    summary = {"model": str(model), "device": device_name, "runs_on": described, "samples": int(len(samples[0])),
               "outputs": {name: {"dtype": a.dtype.name, "shape": list(a.shape)} for name, a in arrays.items()},
               "out": str(out_path)}
    if result.instructions is not None:
        summary["instructions_per_inference"] = [int(n) for n in np.asarray(result.instructions)]
    if etdump is not None:
        if not result.layers:
            raise UserError(f"the {device_name} device took no per-layer profile of {model.name}: --etdump needs "
                            "the emulated board (--device mcu) or the native build (--device native)")
        summary.update(write_run_profile(etdump, result, model))
    return summary


def write_run_profile(path, result, model) -> dict:
    """The run's mean per-layer profile as an ETDump (one run of the file), its whole inference the
    mean of the samples'; returns the summary's entries: the file and its counter."""
    from ..hardware.etdump import mean_total, write_etdump
    total = mean_total(result)
    write_etdump(path, result.layers, program=model, counter=result.counter,
                 totals=None if total is None else [total])
    return {"etdump": str(path), "etdump_counter": result.counter}
