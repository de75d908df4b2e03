"""What an Ethos-U program computes, on the host: its TOSA graph in Arm's TOSA reference model.

Vela compiles a TOSA graph into the NPU's command stream, and TOSA defines the int8
arithmetic bit for bit, so running that graph through the TOSA reference model gives
the NPU's numbers. The export keeps the very graph compiled into the .pte
(RUN/export/T/out.tosa, its sha256 in the program's descriptor). What the program leaves
to the CPU -- quantizing the float input and dequantizing the int8 output -- is done here
with the parameters read from the program itself.

    io_quantization(program)   the program's input and output (de)quantization parameters
    read_tosa(pte, descriptor) the kept graph, checked against the descriptor
    run_graph(tosa, inputs)    int8 inputs -> int8 outputs
    evaluate(ctx)              the evaluation's check: agreement with the int8 CPU model
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from ..infra.errors import UserError
from ..infra.library_noise import output_to
from ..hardware.pte import kernel_calls

QUANTIZE = "quantized_decomposed::quantize_per_tensor"
DEQUANTIZE = "quantized_decomposed::dequantize_per_tensor"


def io_quantization(program: bytes) -> dict:
    """The program's input quantization and output dequantization (scale, zero point, range),
    read from the arguments of its quantize/dequantize kernel calls."""
    sides = {QUANTIZE: "input", DEQUANTIZE: "output"}
    found = {}
    for call in kernel_calls(program):
        if call.name in sides:
            _, scale, zero_point, qmin, qmax = call.args[:5]
            found.setdefault(sides[call.name], []).append(
                {"scale": scale, "zero_point": zero_point, "qmin": qmin, "qmax": qmax, "dtype": "int8"})
    if set(found) != {"input", "output"} or any(len(v) != 1 for v in found.values()):
        raise UserError("the program does not quantize its input and dequantize its output exactly once; "
                        "it is not a tinyrps Ethos-U program: export it again")
    return {side: entries[0] for side, entries in found.items()}


def tosa_path(pte: Path, descriptor) -> Path:
    """Where the export kept the program's TOSA graph: RUN/export/T/out.tosa next to RUN/export/T.pte."""
    return Path(pte).parent / descriptor.files.get(descriptor.info.tosa, Path(pte).stem + "/" + descriptor.info.tosa)


def read_tosa(pte: Path, descriptor) -> bytes:
    path = tosa_path(pte, descriptor)
    if not path.is_file():
        raise UserError(f"the TOSA graph compiled into {Path(pte).name} is missing ({path}): export it again")
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != descriptor.info.tosa_sha256:
        raise UserError(f"{path} is not the TOSA graph compiled into {Path(pte).name} (its sha256 differs): "
                        f"export it again")
    return data


def graph_input_shape(tosa: bytes, pte: Path) -> tuple:
    """Shape of the graph's input; the graph must have one int8 input and one int8 output."""
    from tosa.DType import DType
    from tosa.TosaGraph import TosaGraph
    try:
        block = TosaGraph.GetRootAs(tosa, 0).Regions(0).Blocks(0)
        tensors = {block.Tensors(i).Name(): block.Tensors(i) for i in range(block.TensorsLength())}
        inputs = [tensors[block.Inputs(i)] for i in range(block.InputsLength())]
        outputs = [tensors[block.Outputs(i)] for i in range(block.OutputsLength())]
    except Exception:
        raise UserError(f"the TOSA graph of {Path(pte).name} is unreadable: export it again") from None
    if len(inputs) != 1 or len(outputs) != 1 or any(t.Type() != DType.INT8 for t in inputs + outputs):
        raise UserError(f"the TOSA graph of {Path(pte).name} does not have one int8 input and one int8 output: "
                        f"it is not a tinyrps program")
    return tuple(int(d) for d in inputs[0].ShapeAsNumpy())


def run_graph(tosa: bytes, inputs: list) -> np.ndarray:
    """Run the graph once per int8 input; return the int8 outputs as [N, outputs]."""
    import tosa_reference_model as refm
    outputs = []
    with output_to(None):  # the reference model prints a version note on every run
        for x in inputs:
            result, status = refm.run(tosa, [x])
            if status != refm.GraphStatus.TOSA_VALID:
                raise UserError(f"the TOSA reference model could not run this program's graph ({status.name}): "
                                f"export it again")
            outputs.append(np.asarray(result[0]).reshape(-1))
    return np.stack(outputs)


def images_to_float(images: np.ndarray) -> np.ndarray:
    """uint8 [N,28,28] -> float32 [N,1,28,28] in [0,1], as tinyrps.network.model.images_to_tensor."""
    return (images.astype(np.float32) / np.float32(255.0))[:, None]


def quantize(x: np.ndarray, q: dict) -> np.ndarray:
    """float32 -> int8 as ExecuTorch's quantize_per_tensor kernel: multiply by the float32
    reciprocal of the scale, round half to even, add the zero point, clamp."""
    inverse = np.float32(1.0) / np.float32(q["scale"])
    return np.clip(np.rint(x * inverse) + q["zero_point"], q["qmin"], q["qmax"]).astype(np.int8)


def dequantize(q: np.ndarray, p: dict) -> np.ndarray:
    """int8 -> float32 as ExecuTorch's dequantize_per_tensor kernel: (q - zero point) * scale in double."""
    return ((q.astype(np.int64) - p["zero_point"]) * float(p["scale"])).astype(np.float32)


# --- the evaluation's check ------------------------------------------------------------------------

def evaluate(ctx) -> dict:
    """Agreement of this program's predictions (on npu-ref) with the int8 CPU model's.

    The int8 CPU model is the `int8-xnnpack` program. When it was evaluated before
    this one, its predictions are used as they are. Otherwise they are computed here
    from the same recipe without building the program: the checkpoint quantized by
    PT2E with the XNNPACK quantizer and the same calibration images as the int8-xnnpack
    export, run in PyTorch. That module computes what the int8-xnnpack program computes
    to within one int8 step of its output, so its predictions stand in for the program's.

    Returns {"agreement": fraction of predictions equal to the int8 CPU model's
             (replacing the evaluation's agreement with eager, which stays as "agreement_eager"),
             "agreement_with": "int8-xnnpack" or "int8-xnnpack recipe in PyTorch (PT2E)"}.
    """
    predictions = ctx.logits.argmax(1)
    if "int8-xnnpack" in ctx.predictions:
        reference, source = np.asarray(ctx.predictions["int8-xnnpack"]), "int8-xnnpack"
    else:
        reference, source = int8_cpu_predictions(ctx.pte, ctx.images), "int8-xnnpack recipe in PyTorch (PT2E)"
    agreement = float((predictions == reference).mean()) if len(predictions) else 0.0
    result = {"agreement": agreement, "agreement_with": source}
    if getattr(ctx.device, "name", None) == "npu":      # the NPU model: checked against the TOSA reference
        result.update(npu_bit_exact(ctx.pte, ctx.images, ctx.device.int8_outputs[len(ctx.device.int8_outputs)
                                                                                   - len(ctx.images):]))
    return result


def npu_bit_exact(pte: Path, images: np.ndarray, npu_int8: np.ndarray) -> dict:
    """The npu device's int8 outputs (the command stream in tinyrps.npu) against the TOSA reference
    model's on the same images (the npu-ref device's computation)."""
    from ..hardware import descriptor as descriptors
    from ..hardware.pte import read_program
    program = read_program(pte)
    described = descriptors.read(pte, program)
    if described is None:
        return {"bit_exact": None, "bit_exact_note": f"{Path(pte).name} has no descriptor naming its TOSA graph"}
    tosa = read_tosa(pte, described)
    shape = graph_input_shape(tosa, pte)
    quantized = quantize(images_to_float(images), io_quantization(program)["input"])
    reference = run_graph(tosa, [q.reshape(shape) for q in quantized]) if len(images) else npu_int8
    differ = np.any(reference.reshape(len(reference), -1) != npu_int8.reshape(len(npu_int8), -1), axis=1)
    mismatches = int(differ.sum())
    return {"bit_exact": mismatches == 0, "mismatches": mismatches, "images": int(len(images)),
            "reference": "the TOSA reference model (npu-ref)"}


def int8_cpu_predictions(pte: Path, images: np.ndarray) -> np.ndarray:
    """Predicted labels of the int8-xnnpack recipe (PT2E, XNNPACK quantizer) for the run that made `pte`."""
    import torch

    from ..hardware import descriptor as descriptors
    from ..infra.artifacts.records import run_config
    from ..infra.artifacts.files import sha256_file
    from ..network.model import images_to_tensor, load_model
    from ..network.quantization import calibration_images, image_examples, pt2e_quantize, xnnpack_quantizer
    run_dir = Path(pte).resolve().parent.parent
    checkpoint = run_dir / "model.pt"
    described = descriptors.read(pte)
    if not checkpoint.is_file() or described is None or \
            sha256_file(checkpoint) != described.origin.checkpoint_sha256:
        raise UserError(f"{pte} was not exported from {checkpoint} as it is now: export it again, "
                        f"or export and evaluate int8-xnnpack before it")
    calibration = image_examples(calibration_images(run_config(run_dir)["data"]))
    module = pt2e_quantize(load_model(checkpoint), xnnpack_quantizer(), calibration, calibration[0])
    with torch.no_grad():
        # the exported graph has a static batch of one
        return np.array([int(module(x.unsqueeze(0)).argmax()) for x in images_to_tensor(images)], dtype=np.int64)
