"""Network architectures as compact spec strings (torch-free: the CLI's help and the
tuner's search space read them without importing torch).

A spec is layers joined by "-":

    cN     3x3 convolution to N channels, stride 1, padding 1, then ReLU
    cNs2   the same with stride 2 (halves the feature map, rounding up)
    p      2x2 max-pool, stride 2 (halves the feature map, rounding down)
    p3     3x3 max-pool, stride 2 (halves it too; on an odd map its windows overlap and reach
           the last row and column, which a 2x2 pool would drop)
    fN     fully connected layer of N units, then ReLU (after the last conv/pool)

The classifier (a fully connected layer to the three labels) always ends the
network and is not written. Named architectures are specs with a name:
`tinyrps` (the default, Conv16-Conv32-Pool-Conv64-Pool-FC128-FC3) and `fast`
(the first convolution's map is pooled at once, so the 16->32 convolution runs at
14x14 and the 32->64 one at 7x7; a 2x2 max-pool then takes the 7x7 map to 3x3 and a
3x3 one to 1x1, the largest of each channel wherever the letter is, before a 64-64-3
classifier: 4x fewer MACs than the default and a classifier of 4,288 weights instead of
401,792, which the Ethos-U streams from DRAM on every inference).

A run records its architecture in RUN/config.json (`arch`); tinyrps.network.model.load_model
reads it there, and a checkpoint without a config.json beside it is the default network.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..infra.errors import UserError
from .labels import IMAGE_SIZE, LABELS

DEFAULT_ARCH = "tinyrps"
ARCHITECTURES = {
    "tinyrps": "c16-c32-p-c64-p-f128",
    "fast": "c16-p-c32-p-c64-p-p3-f64",
}

# Training epochs when --epochs is not given: `fast`, with a quarter of the default's
# MACs and a 64-unit hidden layer, needs longer to learn the full letter range (7-26 px,
# anywhere, both polarities); measured after 10 epochs over seeds 0, 1 and 2 of the whole pipeline:
# 99.83, 99.60 and 99.67 % int8 accuracy on the benchmark split (docs/benchmarks.md).
DEFAULT_EPOCHS = 4
ARCH_EPOCHS = {"tinyrps": DEFAULT_EPOCHS, "fast": 10}
# Which weights a training keeps: the last epoch's, where the cosine schedule has brought the learning
# rate to zero. The validation split used to choose the epoch (its best accuracy, the first on a tie); 900
# images tell epochs apart by a few images, and the choice often fell on a mid-training epoch. Measured on
# the tuner's quickly trained candidates (10 epochs, the benchmark split's 3,000 images, docs/benchmarks.md, "Which
# epoch's weights"): the last epoch read more images right in 13 trainings of 25, as many in 8 and 1-3
# fewer in 4 (67 more in all); `fast` read 2,994 with each of seeds 0-2 (2,995, 2,988, 2,990 before).
# Recorded in the run's config, so a run trained under the old rule is not reused for a new one.
CHECKPOINT_RULE = "last-epoch"

# Knowledge distillation's defaults (`train --teacher`): the weight of the teacher's soft targets
# and their temperature, picked on a short run (see docs/design.md, "Distillation").
DISTILL_ALPHA = 0.5
DISTILL_TEMPERATURE = 2.0

# Limits that keep every architecture runnable on every target: the firmware's static
# tables (kernel calls, tensors) and its int32 sums (reductions of at most 65,536 terms).
MAX_LAYERS = 10
MAX_CHANNELS = 256
MAX_UNITS = 1024
MAX_FLATTENED = 65536

_TOKEN = re.compile(r"^(?:c(\d+)(s2)?|p(3)?|f(\d+))$")


@dataclass(frozen=True)
class Layer:
    op: str          # "conv", "pool" or "fc"
    width: int = 0   # output channels (conv) or units (fc)
    stride: int = 1  # conv only
    kernel: int = 3  # conv: 3x3; pool: 2x2 or 3x3 (stride 2 either way)


@dataclass(frozen=True)
class Arch:
    name: str        # a registered name, or the spec itself
    spec: str        # canonical spec string
    layers: tuple    # Layer, ... without the classifier

    @property
    def feature_layers(self) -> tuple:
        return tuple(layer for layer in self.layers if layer.op != "fc")

    @property
    def hidden_units(self) -> tuple:
        return tuple(layer.width for layer in self.layers if layer.op == "fc")


def default_epochs(arch: str) -> int:
    """Epochs of a training that names none: the named architecture's, else the default's."""
    return ARCH_EPOCHS.get(str(arch).strip(), DEFAULT_EPOCHS)


def epochs_help() -> str:
    named = ", ".join(f"{epochs} for {name}" for name, epochs in ARCH_EPOCHS.items())
    return f"training epochs (default: the architecture's: {named}, {DEFAULT_EPOCHS} for a spec)"


def arch_names() -> list:
    return list(ARCHITECTURES)


def parse_arch(name_or_spec: str) -> Arch:
    """A registered name or a spec string -> Arch; UserError naming what is wrong otherwise."""
    text = str(name_or_spec).strip()
    spec = ARCHITECTURES.get(text, text)
    name = text if text in ARCHITECTURES else spec
    layers = tuple(_parse_token(token, spec) for token in spec.split("-"))
    _check_order(layers, spec)
    arch = Arch(name, "-".join(_format(layer) for layer in layers), layers)
    flattened = feature_shape(arch)
    if flattened[1] < 1:
        raise UserError(f"architecture '{spec}' shrinks the 28x28 image to nothing: use fewer pools or strides")
    if np.prod(flattened) > MAX_FLATTENED:
        raise UserError(f"architecture '{spec}' flattens {np.prod(flattened):,} features into its first fully "
                        f"connected layer (at most {MAX_FLATTENED:,}): add a pool or a stride")
    return arch


def _parse_token(token: str, spec: str) -> Layer:
    match = _TOKEN.match(token)
    if not match:
        raise UserError(f"bad layer '{token}' in architecture '{spec}': layers are cN, cNs2, p, p3 or fN "
                        f"(e.g. {ARCHITECTURES['fast']}), or a name: {', '.join(ARCHITECTURES)}")
    channels, strided, pool3, units = match.groups()
    if channels is not None:
        return Layer("conv", _bounded(int(channels), MAX_CHANNELS, token, spec), 2 if strided else 1)
    if units is not None:
        return Layer("fc", _bounded(int(units), MAX_UNITS, token, spec))
    return Layer("pool", kernel=3 if pool3 else 2)


def _bounded(value: int, limit: int, token: str, spec: str) -> int:
    if not 1 <= value <= limit:
        raise UserError(f"layer '{token}' in architecture '{spec}' must have 1 to {limit} channels or units")
    return value


def _check_order(layers: tuple, spec: str) -> None:
    if len(layers) > MAX_LAYERS:
        raise UserError(f"architecture '{spec}' has {len(layers)} layers; at most {MAX_LAYERS}")
    if not layers or layers[0].op != "conv":
        raise UserError(f"architecture '{spec}' must start with a convolution (cN)")
    ops = [layer.op for layer in layers]
    first_fc = ops.index("fc") if "fc" in ops else len(ops)
    if any(op != "fc" for op in ops[first_fc:]):
        raise UserError(f"architecture '{spec}': fully connected layers (fN) must come after every conv and pool")


def _format(layer: Layer) -> str:
    if layer.op == "conv":
        return f"c{layer.width}" + ("s2" if layer.stride == 2 else "")
    if layer.op == "pool":
        return "p3" if layer.kernel == 3 else "p"
    return f"f{layer.width}"


def feature_shape(arch: Arch) -> tuple:
    """(channels, height, width) of the last conv/pool output, which the classifier flattens."""
    channels, size = 1, IMAGE_SIZE
    for layer in arch.feature_layers:
        if layer.op == "conv":
            channels, size = layer.width, (size + 1) // 2 if layer.stride == 2 else size
        else:
            size = pooled(size, layer)
    return channels, size, size


def pooled(size: int, pool: Layer) -> int:
    """Side of a max-pool's output (stride 2, no padding, floor)."""
    return (size - pool.kernel) // 2 + 1 if size >= pool.kernel else 0


def count_macs(arch="tinyrps") -> int:
    """Multiply-accumulates of one inference (convolutions and fully connected layers)."""
    arch = arch if isinstance(arch, Arch) else parse_arch(arch)
    macs, channels, size = 0, 1, IMAGE_SIZE
    for layer in arch.feature_layers:
        if layer.op == "conv":
            size = (size + 1) // 2 if layer.stride == 2 else size
            macs += size * size * layer.width * channels * 9
            channels = layer.width
        else:
            size = pooled(size, layer)
    features = channels * size * size
    for units in (*arch.hidden_units, len(LABELS)):
        macs += features * units
        features = units
    return macs


def count_params(arch="tinyrps") -> int:
    """Weights and biases of the network (the same count as the torch module's parameters)."""
    arch = arch if isinstance(arch, Arch) else parse_arch(arch)
    params, channels = 0, 1
    for layer in arch.feature_layers:
        if layer.op == "conv":
            params += layer.width * channels * 9 + layer.width
            channels = layer.width
    features = int(np.prod(feature_shape(arch)))
    for units in (*arch.hidden_units, len(LABELS)):
        params += features * units + units
        features = units
    return params


def describe_arch(arch) -> dict:
    """What a run's config and a program's descriptor record of the architecture."""
    arch = arch if isinstance(arch, Arch) else parse_arch(arch)
    return {"name": arch.name, "spec": arch.spec, "macs": count_macs(arch), "params": count_params(arch)}
