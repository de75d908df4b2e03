"""Post-training quantization with PT2E, shared by the export recipes and by the references
that recompute a recipe's model (the Ethos-U family's agreement with the int8 CPU model).

The calibration set is a list of input tuples, each one example with a batch of one (the
exported graphs have a static batch of one).
"""
from __future__ import annotations

import torch

from ..infra import ctrl_c


def calibrate(prepared, calibration) -> None:
    """Run every calibration example through a PT2E-prepared module."""
    with torch.no_grad():
        for inputs in calibration:
            prepared(*inputs)


def pt2e_quantize(model, quantizer, calibration, example_inputs: tuple):
    """Post-training quantization with PT2E; returns the converted (fake-quantized) module."""
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
    with ctrl_c.held("the quantization"):      # torch's mode stacks survive no interrupt
        graph = torch.export.export(model, example_inputs).module(check_guards=False)
        prepared = prepare_pt2e(graph, quantizer)
        calibrate(prepared, calibration)
        return convert_pt2e(prepared)


def xnnpack_quantizer():
    """XNNPACK's int8 scheme as int8-xnnpack uses it: symmetric, per-channel weights."""
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer, get_symmetric_quantization_config)
    return XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=True))


# How many training images calibrate an RPS program's post-training quantization.
CALIBRATION_IMAGES = 256


def calibration_images(data_dir, count: int = CALIBRATION_IMAGES):
    """The first `count` training images of a data set, uint8 [N,28,28]."""
    from ..data import load_split
    images, _ = load_split(data_dir, "train")
    return images[:count]


def image_examples(images) -> list:
    """uint8 images [N,28,28] -> calibration examples: one input tuple per image, float32 [1,1,28,28]."""
    from .model import images_to_tensor
    return [(x.unsqueeze(0),) for x in images_to_tensor(images)]


def rps_calibration_note(count: int) -> str:
    return f"the first {count} training images"
