"""MLPerf Tiny's four reference networks, written in PyTorch from their published descriptions.

The benchmark's four tasks each have one reference network: ResNet-8 (image classification,
CIFAR-10), DS-CNN small (keyword spotting), MobileNetV1 x0.25 (visual wake words) and a
fully connected autoencoder (anomaly detection). They are here to be lowered to ExecuTorch
Cortex-M programs and run on the firmware: the weights are random, not trained, but fixed
by a seed, and every BatchNorm has seeded running statistics and affine parameters far from
the identity, so that folding it into the layer before changes the numbers.

Weights: convolution and linear weights are drawn N(0, 2/fan_in) (He initialisation, which
keeps activations near unit scale through the ReLUs, so that no layer's int8 range collapses);
biases N(0, 0.1^2). Each BatchNorm: weight U(0.5, 1.5), bias N(0, 0.1^2), running_mean
N(0, 0.1^2), running_var U(0.5, 2.0). Calibration and check inputs are float32 N(0, 1) from
seeded generators (CALIBRATION_SEED, CHECK_SEED); the example inputs export traces are zeros.

`NETWORKS` is the registry: name -> `Network` (constructor, input shapes, classes, MACs).
MACs count the multiply-accumulates of the convolutions and linear layers of one inference;
`count_macs` measures them on a module, and the tests hold the registry to it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn

DEFAULT_SEED = 0


# ---------------------------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------------------------

def conv_bn_relu(cin: int, cout: int, kernel, stride=1, padding=0, groups: int = 1) -> nn.Sequential:
    """Convolution without bias, BatchNorm, ReLU: the layer the quantizer folds into one int8 conv."""
    return nn.Sequential(nn.Conv2d(cin, cout, kernel, stride=stride, padding=padding, groups=groups, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU())


def depthwise_separable(cin: int, cout: int, stride: int) -> nn.Sequential:
    """3x3 depthwise convolution then 1x1 pointwise convolution, each with BatchNorm and ReLU."""
    return nn.Sequential(conv_bn_relu(cin, cin, 3, stride=stride, padding=1, groups=cin),
                         conv_bn_relu(cin, cout, 1))


class ResidualBlock(nn.Module):
    """Two 3x3 convolutions (BatchNorm after each, ReLU between) added to the block's input,
    then ReLU. Where the block changes the shape (stride 2, more channels) the input goes
    through a 1x1 convolution of the same stride first."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = conv_bn_relu(cin, cout, 3, stride=stride, padding=1)
        self.conv2 = nn.Sequential(nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout))
        self.shortcut = (nn.Identity() if stride == 1 and cin == cout
                         else nn.Conv2d(cin, cout, 1, stride=stride))
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.conv2(self.conv1(x)) + self.shortcut(x))


# ---------------------------------------------------------------------------------------------
# The four networks
# ---------------------------------------------------------------------------------------------

class ResNet8(nn.Module):
    """ResNet-8, MLPerf Tiny image classification: 32x32 RGB -> 10 classes (CIFAR-10).

    A 3x3 convolution of 16 channels, three residual stages of 16, 32 and 64 channels
    (the second and third start with stride 2 and a 1x1 convolution shortcut), global
    average pooling over the 8x8 map, a fully connected layer to 10."""

    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.stem = conv_bn_relu(3, 16, 3, padding=1)
        self.stages = nn.Sequential(ResidualBlock(16, 16, 1), ResidualBlock(16, 32, 2), ResidualBlock(32, 64, 2))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(self.pool(self.stages(self.stem(x))), 1))


class DSCNNSmall(nn.Module):
    """DS-CNN small, MLPerf Tiny keyword spotting: 49 frames x 10 MFCCs (one channel) -> 12 classes.

    A 10x4 convolution of 64 channels with stride 2 (25x5 out; padding 5 in time and 1 in
    frequency gives the 25x5 that TensorFlow's asymmetric 'same' padding gives), BatchNorm
    and ReLU; four depthwise-separable blocks of 64 channels; average pooling over the
    whole 25x5 map; a fully connected layer to 12."""

    def __init__(self, classes: int = 12) -> None:
        super().__init__()
        self.stem = conv_bn_relu(1, 64, (10, 4), stride=2, padding=(5, 1))
        self.blocks = nn.Sequential(*[depthwise_separable(64, 64, 1) for _ in range(4)])
        self.pool = nn.AvgPool2d((25, 5))
        self.fc = nn.Linear(64, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(self.pool(self.blocks(self.stem(x))), 1))


# MobileNetV1's 13 depthwise-separable layers at width 1.0: (output channels, stride).
_MOBILENET_LAYERS = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2),
                     (512, 1), (512, 1), (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1))


class MobileNetV1(nn.Module):
    """MobileNetV1 at width multiplier alpha, MLPerf Tiny visual wake words at alpha 0.25:
    96x96 RGB -> 2 classes (person / no person).

    A 3x3 stride-2 convolution of 32*alpha channels, then 13 depthwise-separable layers
    (3x3 depthwise + 1x1 pointwise, BatchNorm and ReLU after each) up to 1024*alpha
    channels and down to 3x3, global average pooling, a fully connected layer."""

    def __init__(self, alpha: float = 0.25, classes: int = 2) -> None:
        super().__init__()
        width = int(32 * alpha)
        layers = [conv_bn_relu(3, width, 3, stride=2, padding=1)]
        for channels, stride in _MOBILENET_LAYERS:
            layers.append(depthwise_separable(width, int(channels * alpha), stride))
            width = int(channels * alpha)
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(self.pool(self.features(x)), 1))


class FCAutoencoder(nn.Module):
    """The fully connected autoencoder of MLPerf Tiny anomaly detection (ToyADMOS machine
    sounds): 5 frames x 128 log-mel bins = 640 in, 640 reconstructed out.

    640-128-128-128-128-8-128-128-128-128-640: every layer but the last is Linear,
    BatchNorm and ReLU; the last is Linear alone (the reconstruction has no activation)."""

    WIDTHS = (640, 128, 128, 128, 128, 8, 128, 128, 128, 128, 640)

    def __init__(self) -> None:
        super().__init__()
        layers = []
        for i, (fin, fout) in enumerate(zip(self.WIDTHS, self.WIDTHS[1:])):
            layers.append(nn.Linear(fin, fout))
            if i < len(self.WIDTHS) - 2:
                layers += [nn.BatchNorm1d(fout), nn.ReLU()]
        self.layers = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


# ---------------------------------------------------------------------------------------------
# Two deployed networks beyond MLPerf Tiny: MobileNetV2 and MobileNetV3-small (torchvision's
# layer tables, from the papers: Sandler et al. 2018, Howard et al. 2019), 1000 classes
# ---------------------------------------------------------------------------------------------

def _divisible(value: float, divisor: int = 8) -> int:
    """The channel count nearest `value` that is a multiple of `divisor`, never 10 % below it (the
    rounding both papers' width tables use)."""
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * value else rounded


def conv_bn(cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1, activation=None) -> nn.Sequential:
    """Convolution without bias ("same" padding), BatchNorm, then the activation if any."""
    layers = [nn.Conv2d(cin, cout, kernel, stride=stride, padding=(kernel - 1) // 2, groups=groups, bias=False),
              nn.BatchNorm2d(cout)]
    return nn.Sequential(*layers, *([activation()] if activation else []))


class InvertedResidual(nn.Module):
    """MobileNetV2's block: 1x1 expansion (skipped at ratio 1), depthwise kxk, squeeze-and-excitation
    (MobileNetV3), 1x1 linear projection; added to the input when stride 1 keeps the shape."""

    def __init__(self, cin: int, expanded: int, cout: int, kernel: int, stride: int, activation,
                 squeeze: bool = False) -> None:
        super().__init__()
        layers = [] if expanded == cin else [conv_bn(cin, expanded, 1, activation=activation)]
        layers.append(conv_bn(expanded, expanded, kernel, stride, groups=expanded, activation=activation))
        if squeeze:
            layers.append(SqueezeExcitation(expanded, _divisible(expanded // 4)))
        layers.append(conv_bn(expanded, cout, 1))
        self.block = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.block(x) if self.residual else self.block(x)


class SqueezeExcitation(nn.Module):
    """Channel weights from the pooled map: 1x1 conv, ReLU, 1x1 conv, hard sigmoid; multiplied in."""

    def __init__(self, channels: int, squeezed: int) -> None:
        super().__init__()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(channels, squeezed, 1)
        self.fc2 = nn.Conv2d(squeezed, channels, 1)
        self.relu, self.gate = nn.ReLU(), nn.Hardsigmoid()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.gate(self.fc2(self.relu(self.fc1(self.pool(x)))))


# MobileNetV2: (expansion t, output channels c, repeats n, first stride s) per stage.
_MOBILENET_V2_STAGES = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                        (6, 160, 3, 2), (6, 320, 1, 1))


class MobileNetV2(nn.Module):
    """MobileNetV2 at width 1.0: a 3x3 stride-2 convolution of 32, 17 inverted residual blocks
    (ReLU6), a 1x1 convolution of 1280, global average pooling, a linear layer (dropout in training)."""

    def __init__(self, classes: int = 1000) -> None:
        super().__init__()
        layers, width = [conv_bn(3, 32, 3, 2, activation=nn.ReLU6)], 32
        for t, c, n, s in _MOBILENET_V2_STAGES:
            for i in range(n):
                layers.append(InvertedResidual(width, width * t, c, 3, s if i == 0 else 1, nn.ReLU6))
                width = c
        layers.append(conv_bn(width, 1280, 1, activation=nn.ReLU6))
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))


# MobileNetV3-small: (kernel, expanded, output channels, squeeze-and-excitation, hard swish, stride).
_MOBILENET_V3_SMALL_BLOCKS = (
    (3, 16, 16, True, False, 2), (3, 72, 24, False, False, 2), (3, 88, 24, False, False, 1),
    (5, 96, 40, True, True, 2), (5, 240, 40, True, True, 1), (5, 240, 40, True, True, 1),
    (5, 120, 48, True, True, 1), (5, 144, 48, True, True, 1), (5, 288, 96, True, True, 2),
    (5, 576, 96, True, True, 1), (5, 576, 96, True, True, 1))


class MobileNetV3Small(nn.Module):
    """MobileNetV3-small: a 3x3 stride-2 convolution of 16 (hard swish), 11 inverted residual blocks
    (ReLU or hard swish, most with squeeze-and-excitation), a 1x1 convolution of 576, global average
    pooling, linear 576 -> 1024 with hard swish, linear to the classes (dropout in training)."""

    def __init__(self, classes: int = 1000) -> None:
        super().__init__()
        layers, width = [conv_bn(3, 16, 3, 2, activation=nn.Hardswish)], 16
        for kernel, expanded, out, squeeze, hard, stride in _MOBILENET_V3_SMALL_BLOCKS:
            layers.append(InvertedResidual(width, expanded, out, kernel, stride,
                                           nn.Hardswish if hard else nn.ReLU, squeeze))
            width = out
        layers.append(conv_bn(width, 576, 1, activation=nn.Hardswish))
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Linear(576, 1024), nn.Hardswish(), nn.Dropout(0.2), nn.Linear(1024, classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))


# ---------------------------------------------------------------------------------------------
# Registry
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Network:
    name: str
    task: str
    constructor: Callable[[], nn.Module]
    input_shapes: tuple            # one shape per input, batch 1
    classes: int                   # size of the output (640 for the autoencoder's reconstruction)
    macs: int                      # conv + linear multiply-accumulates of one inference
    dtype: torch.dtype = torch.float32


NETWORKS = {n.name: n for n in (
    Network("resnet8", "image classification (CIFAR-10)", ResNet8, ((1, 3, 32, 32),), 10, 12_501_632),
    Network("ds-cnn-small", "keyword spotting (Speech Commands)", DSCNNSmall, ((1, 1, 49, 10),), 12, 2_656_768),
    Network("mobilenet-v1-0.25", "visual wake words (COCO person)", MobileNetV1, ((1, 3, 96, 96),), 2, 7_489_664),
    Network("fc-autoencoder", "anomaly detection (ToyADMOS)", FCAutoencoder, ((1, 640),), 640, 264_192),
)}


# Networks people deploy beyond MLPerf Tiny, at MLPerf Tiny's visual-wake-words input size: programs
# of 60 to 120 kernel calls, measured beside the four (scripts/mlperf_tiny.py --network).
DEPLOYED = {n.name: n for n in (
    Network("mobilenet-v2", "image classification (ImageNet classes)", MobileNetV2, ((1, 3, 96, 96),), 1000,
            56_289_152),
    Network("mobilenet-v3-small", "image classification (ImageNet classes)", MobileNetV3Small, ((1, 3, 96, 96),),
            1000, 12_071_360),
)}


def network(name: str) -> Network:
    from ..infra.errors import UserError
    known = {**NETWORKS, **DEPLOYED}
    if name not in known:
        raise UserError(f"unknown network '{name}': choose one of {', '.join(known)}")
    return known[name]


def build(name: str, seed: int = DEFAULT_SEED) -> nn.Module:
    """The network `name` in eval mode with the seeded weights and BatchNorm statistics."""
    entry = network(name)
    generator = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):   # the constructors' default init must not touch the global generator
        torch.manual_seed(seed)
        model = entry.constructor()
    with torch.no_grad():
        for module in model.modules():
            _seed_parameters(module, generator)
    return model.eval()


def _seed_parameters(module: nn.Module, generator: torch.Generator) -> None:
    if isinstance(module, (nn.Conv2d, nn.Linear)):
        fan_in = module.weight[0].numel()
        module.weight.copy_(torch.randn(module.weight.shape, generator=generator) * math.sqrt(2.0 / fan_in))
        if module.bias is not None:
            module.bias.copy_(torch.randn(module.bias.shape, generator=generator) * 0.1)
    elif isinstance(module, nn.modules.batchnorm._BatchNorm):
        n = module.num_features
        module.weight.copy_(0.5 + torch.rand(n, generator=generator))
        module.bias.copy_(torch.randn(n, generator=generator) * 0.1)
        module.running_mean.copy_(torch.randn(n, generator=generator) * 0.1)
        module.running_var.copy_(0.5 + 1.5 * torch.rand(n, generator=generator))


def example_inputs(name: str) -> tuple:
    """Zero inputs of the network's shapes (what export traces)."""
    entry = network(name)
    return tuple(torch.zeros(shape, dtype=entry.dtype) for shape in entry.input_shapes)


def random_inputs(name: str, count: int, seed: int = DEFAULT_SEED) -> list:
    """`count` input tuples, each input float32 N(0, 1) from a generator seeded with `seed`."""
    entry = network(name)
    generator = torch.Generator().manual_seed(seed)
    return [tuple(torch.randn(shape, generator=generator, dtype=entry.dtype) for shape in entry.input_shapes)
            for _ in range(count)]


def count_macs(model: nn.Module, inputs: tuple) -> int:
    """Multiply-accumulates of the Conv2d and Linear layers on one forward pass of `inputs`
    (per output element: the kernel's input channels x kernel height x width, or in_features)."""
    total = 0

    def hook(module, _args, output):
        nonlocal total
        per_output = module.weight[0].numel()   # (cin / groups) * kh * kw, or in_features
        total += output.numel() * per_output

    handles = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]
    try:
        with torch.no_grad():
            model(*inputs)
    finally:
        for h in handles:
            h.remove()
    return total


# ---------------------------------------------------------------------------------------------
# Calibration and lowering
# ---------------------------------------------------------------------------------------------

# Post-training quantization calibrates on this many seeded N(0, 1) input tuples.
CALIBRATION_INPUTS = 16
CALIBRATION_SEED = 1
# Inputs on which the lowered program is checked against the float network and the references.
CHECK_INPUTS = 4
CHECK_SEED = 2


def calibration_inputs(name: str) -> list:
    return random_inputs(name, CALIBRATION_INPUTS, seed=CALIBRATION_SEED)


def check_inputs(name: str) -> list:
    return random_inputs(name, CHECK_INPUTS, seed=CHECK_SEED)


def lower_network(name: str, core: str, seed: int = DEFAULT_SEED, strict: bool = True):
    """The network as an ExecuTorch Cortex-M program for `core` (a CortexMProgram)."""
    from ..export.cortex_m import lower
    return lower(build(name, seed), example_inputs(name), calibration_inputs(name), core, strict=strict)


def export_network(name: str, core: str, out_dir, seed: int = DEFAULT_SEED, io: str = "float"):
    """The network exported for `core` as OUT/NAME-CORE.pte (io "int8": OUT/NAME-CORE-int8.pte, integer inputs
    and outputs) with its descriptor, through the export's own driver (the program is checked against its edge
    program, as every export is)."""
    from ..hardware.descriptor import Origin
    from ..export import export_model
    origin = Origin(module=f"tinyrps.devtools.zoo:{name} (seed {seed})",
                    calibration=f"{CALIBRATION_INPUTS} float32 N(0, 1) input tuples (seed {CALIBRATION_SEED})")
    return export_model(build(name, seed), example_inputs(name), calibration_inputs(name), core, out_dir,
                        origin, name=f"{name}-{core}" + ("" if io == "float" else f"-{io}"),
                        **({} if io == "float" else {"io": io}))


# Random inputs on which a network's program is checked bit for bit, on every device.
BIT_EXACT_INPUTS = 64
BIT_EXACT_SEED = 3


def bit_exact_inputs(name: str, count: int = BIT_EXACT_INPUTS) -> list:
    """One array [count, *shape] per input of the network: what its programs are checked on."""
    tuples = random_inputs(name, count, seed=BIT_EXACT_SEED)
    return [torch.stack([t[k] for t in tuples]).numpy() for k in range(len(tuples[0]))]
