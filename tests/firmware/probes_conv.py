"""Probe models for the Cortex-M convolution, pooling, linear and matmul operators.

Each probe is a small PyTorch module whose lowering (the project's Cortex-M flow,
`tinyrps.export.cortex_m.lower_to_edge`, or ExecuTorch's explicit-layout flow below) reaches
particular forms of the `cortex_m::` operators: which PyTorch construct becomes which operator,
with which arguments, is the point of each probe's comment. Until the runtime takes any input,
every probe starts from the one input it takes (float32 [1, 1, 28, 28]) and ends in a linear
layer of at most 16 outputs and the final dequantize.

What the lowering (executorch 1.5.1) does with the constructs, as these probes show:

- nn.Conv2d with one input channel (any kernel, stride, padding) -> quantized_depthwise_conv2d
  with depth_multiplier = out_channels (in_c == groups == 1 counts as depthwise);
- nn.Conv2d(groups=C_in, out = k * C_in) -> quantized_depthwise_conv2d, depth_multiplier k;
- every other nn.Conv2d (1x1 pointwise, strided, rectangular, dilated, grouped) ->
  quantized_conv2d, weights OHWI;
- nn.ConvTranspose2d (groups 1, dilation 1, output_padding 0: the quantizer leaves the others
  in float) -> quantized_transpose_conv2d;
- nn.AvgPool2d(count_include_pad=False) -> quantized_avg_pool2d with its padding; with the
  default count_include_pad=True -> cortex_m::pad, then quantized_avg_pool2d with padding 0;
  nn.AdaptiveAvgPool2d(1) and x.mean((2, 3)) -> one quantized_avg_pool2d over the whole map;
- nn.MaxPool2d (dilation 1, floor mode) -> quantized_max_pool2d; ceil mode stays a portable
  max_pool2d_with_indices;
- nn.Linear -> quantized_linear: kernel_sum form (bias folded) on cortex-m55/m85, bias form on
  cortex-m4/m33; a 3-D input gives rows > 1;
- torch.bmm with a constant right-hand side -> quantized_batch_matmul (its transpose folded
  into the constant); with an activation there, cortex_m::transpose feeds it;
- a flatten(2) of a channels-last convolution map before a linear layer or a bmm is read in
  the map's channels-last byte order (no layout copy is planned): the program then differs
  from the model, and `tinyrps export`'s self-check refuses it;
- padding on one side (nn.ZeroPad2d, or 'same' with an even kernel) -> cortex_m::pad before the
  convolution, which then has padding 0.

With the explicit-layout flow (CortexMQuantizer(use_explicit_layout=True), the pass manager's
use_explicit_layout, a model left in NCHW, as ExecuTorch's aot_arm_compiler does) the same
constructs become the `_nhwc` operators, whose activations are NHWC in logical order.
"""
from __future__ import annotations


import torch
from torch import nn

LINEAR_OUT = 16   # the most outputs a program may have today


def with_head(body: nn.Module, outputs: int = LINEAR_OUT) -> nn.Module:
    with torch.no_grad():
        features = body(torch.zeros(1, 1, 28, 28)).numel()
    return nn.Sequential(body, nn.Flatten(), nn.Linear(features, outputs))


class Rows(nn.Module):
    """The image as eight rows of 98 pixels, then linear layers over the last axis (rows > 1), or
    a batch matmul with a constant right-hand side and a linear layer.

    (The rows are the input itself: a flatten(2) of a channels-last convolution map would be read
    by the lowered program in the map's channels-last byte order -- executorch 1.5.1 plans the
    view without the layout copy, so the program no longer computes the model. A batch matmul
    after a linear layer does not lower at all: its ReplaceScalarWithTensorArgPass fails on the
    int8/int32 mix.)"""

    def __init__(self, bmm: bool = False):
        super().__init__()
        self.fc = None if bmm else nn.Linear(98, 12)         # [1, 8, 12]: eight rows
        self.rhs = nn.Parameter(torch.randn(1, 98, 5) / 8) if bmm else None
        self.out = nn.Linear(5 if bmm else 12, 2)            # [1, 8, 2]: 16 outputs

    def forward(self, x):
        y = x.reshape(1, 8, 98)
        y = torch.bmm(y, self.rhs) if self.rhs is not None else torch.relu(self.fc(y))
        return self.out(y).flatten(1)


class GlobalMean(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 13, 3)                      # 13 x 26 x 26

    def forward(self, x):
        return self.conv(x).mean((2, 3), keepdim=True)


def dw(channels: int, kernel=3, **kw) -> nn.Conv2d:
    return nn.Conv2d(channels, channels, kernel, groups=channels, **kw)


# name -> builder; every probe is exported for cortex-m55 (MVE forms) and cortex-m4 (DSP forms).
PROBES = {
    # 1x1 pointwise convolutions with 8, 12 and 5 input channels, one strided; ReLU fused
    "pointwise": lambda: with_head(nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(),
        nn.Conv2d(8, 12, 1), nn.ReLU(),
        nn.Conv2d(12, 5, 1, stride=2),
        nn.Conv2d(5, 17, 1), nn.ReLU6(),
        nn.MaxPool2d(4))),
    # DS-CNN's first layer (10x4, stride 2: a one-channel depthwise of 40 taps), rectangular
    # kernels with padding on one axis, a rectangular stride
    "rectangular": lambda: with_head(nn.Sequential(
        nn.Conv2d(1, 6, (10, 4), stride=2, padding=(4, 1)), nn.ReLU(),
        nn.Conv2d(6, 7, (3, 5), padding=(1, 2)),
        nn.Conv2d(7, 9, (1, 3), stride=(1, 2)),
        nn.MaxPool2d(2))),
    # dilation 2, groups 2 and 3 (one with a dilated rectangular kernel)
    "dilated_grouped": lambda: with_head(nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(),
        nn.Conv2d(8, 6, 3, padding=2, dilation=2),
        nn.Conv2d(6, 12, 3, padding=1, groups=2), nn.ReLU(),
        nn.Conv2d(12, 9, (3, 1), padding=(2, 0), dilation=(2, 1), groups=3),
        nn.MaxPool2d(3, stride=2))),
    # maps down to one pixel, then a 1x1 convolution padded by 1 (its border is the bias alone);
    # the first layer has an odd channel count and a 16-tap window
    "one_pixel": lambda: with_head(nn.Sequential(
        nn.Conv2d(1, 5, 4, stride=4),                        # 7x7
        nn.Conv2d(5, 10, 3, stride=2, padding=1),            # 4x4
        nn.Conv2d(10, 12, 3, stride=2, padding=1),           # 2x2
        nn.Conv2d(12, 16, 3, stride=2, padding=1),           # 1x1
        nn.Conv2d(16, 5, 1, padding=1))),                    # 3x3
    # depthwise with 5 and 17 channels, stride 2, unpadded
    "depthwise": lambda: with_head(nn.Sequential(
        nn.Conv2d(1, 5, 3, padding=1), nn.ReLU(),
        dw(5, padding=1), nn.ReLU(),
        dw(5, stride=2, padding=1),
        nn.Conv2d(5, 17, 1),
        dw(17, padding=1), nn.ReLU6(),
        dw(17, stride=2))),
    # depth multipliers 2 and 3, a 5x5 window, dilation, a rectangular window
    "depth_multiplier": lambda: with_head(nn.Sequential(
        nn.Conv2d(1, 3, 3, stride=2, padding=1),             # 14x14x3
        nn.Conv2d(3, 6, 3, padding=1, groups=3), nn.ReLU(),  # multiplier 2
        nn.Conv2d(6, 18, 5, stride=2, padding=2, groups=6),  # multiplier 3, 7x7
        nn.Conv2d(18, 18, 3, padding=2, dilation=2, groups=18),
        nn.Conv2d(18, 18, (1, 3), padding=(0, 1), groups=18))),
    # large windows (5x5, 7x7 strided) on 16 and 32 channels
    "depthwise_windows": lambda: with_head(nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1),
        dw(16, 5, padding=2), nn.ReLU(),
        dw(16, 7, stride=2, padding=3),                      # 14x14
        nn.Conv2d(16, 32, 3, padding=1, groups=16),          # multiplier 2
        dw(32, stride=2, padding=1))),                       # 7x7
    # depthwise down to one pixel, then a 3x3 window of which only the centre tap is inside
    "depthwise_one_pixel": lambda: with_head(nn.Sequential(
        nn.Conv2d(1, 8, 4, stride=4),                        # 7x7
        dw(8, stride=2, padding=1),                          # 4x4
        dw(8, stride=2, padding=1),                          # 2x2
        dw(8, stride=2, padding=1),                          # 1x1
        dw(8, padding=1), nn.ReLU())),
    # 3x3 depthwise at stride 3, rows of 10 and 4 output pixels, 13 and 6 channels (the DSP kernel's
    # halfword planes, which take strides above 2 in their general loop)
    "depthwise_stride3": lambda: with_head(nn.Sequential(
        nn.Conv2d(1, 13, 3, padding=1), nn.ReLU(),           # 28x28x13
        dw(13, stride=3, padding=1), nn.ReLU(),              # 10x10
        nn.Conv2d(13, 6, 1),
        dw(6, stride=3, padding=1))),                        # 4x4
    # transposed convolutions: stride 2 with padding (14 -> 27), a rectangular stride and kernel,
    # a 1x1
    "transpose": lambda: with_head(nn.Sequential(
        nn.Conv2d(1, 4, 3, stride=2, padding=1),             # 14x14
        nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1), nn.ReLU(),   # 27x27
        nn.Conv2d(6, 5, 3, stride=2),                        # 13x13
        nn.ConvTranspose2d(5, 7, (2, 3), stride=(2, 1)),     # 26x15
        nn.ConvTranspose2d(7, 3, 1),
        nn.MaxPool2d(4))),
    # average pooling: padding not counted, ceil mode with a partial last window, a rectangular
    # window and stride
    "avg_pool": lambda: with_head(nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1),
        nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False),   # 14x14
        nn.Conv2d(8, 5, 3),                                  # 12x12
        nn.AvgPool2d(3, stride=2, ceil_mode=True, count_include_pad=False),  # 6x6, last window partial
        nn.AvgPool2d((2, 3), stride=(1, 2), padding=(1, 1), count_include_pad=False))),
    # global average pooling, spelled as AdaptiveAvgPool2d and as a mean
    "global_avg_pool": lambda: nn.Sequential(
        nn.Conv2d(1, 13, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(13, LINEAR_OUT)),
    "global_mean": lambda: nn.Sequential(GlobalMean(), nn.Flatten(), nn.Linear(13, LINEAR_OUT)),
    # linear layers over eight rows, one without bias
    "linear_rows": lambda: Rows(),
    "linear_no_bias": lambda: nn.Sequential(
        nn.Flatten(), nn.Linear(784, 20, bias=False), nn.ReLU(), nn.Linear(20, LINEAR_OUT)),
    # a batch matmul with a constant right-hand side (its zero point is not 0)
    "batch_matmul": lambda: Rows(bmm=True),
}

# The probes that also go through the explicit-layout flow (the _nhwc operators). Their flatten
# before the head would need a cortex_m::transpose back to NCHW; a global average pool in front of
# the head makes that a no-op (and tests the pool's _nhwc form on every map).
EXPLICIT_PROBES = ("pointwise", "rectangular", "dilated_grouped", "one_pixel", "depthwise", "depth_multiplier",
                   "depthwise_windows", "depthwise_one_pixel", "transpose", "avg_pool")


def pool_head(model: nn.Module) -> nn.Module:
    """The body of a with_head probe, then a global average pool and the linear head."""
    body = model[0]
    with torch.no_grad():
        channels = body(torch.zeros(1, 1, 28, 28)).shape[1]
    return nn.Sequential(body, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(channels, LINEAR_OUT))


def _relu6_block(*layers) -> list:
    out = []
    for layer in layers:
        out += [layer, nn.ReLU6()]
    return out


def pw(cin: int, cout: int) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, 1)


def gap_head(body: nn.Module, channels: int, outputs: int = LINEAR_OUT) -> nn.Module:
    return nn.Sequential(body, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(channels, outputs))


# Layers of real networks at their real sizes, for instruction counts per MAC (measure_firmware).
# Each starts from the 28x28 input with a layer that makes the map the network has there (its
# cost is reported, and left out of the network's figures).
PERF_PROBES = {
    # MobileNetV1 0.25 (96x96 input): its 48x48 stage, where CMSIS-NN's depthwise costs the most
    "mobilenet_48": lambda: with_head(nn.Sequential(
        nn.Conv2d(1, 8, 1, padding=10),                      # 48x48x8 (a one-tap first layer)
        *_relu6_block(dw(8, padding=1), pw(8, 16), dw(16, stride=2, padding=1), pw(16, 32)),
        nn.MaxPool2d(4))),                                   # 6x6x32
    # its 24x24 stage
    "mobilenet_24": lambda: gap_head(nn.Sequential(
        nn.Conv2d(1, 32, 5),                                 # 24x24x32
        *_relu6_block(dw(32, padding=1), pw(32, 32), dw(32, stride=2, padding=1), pw(32, 64))), 64),
    # its 12x12 stage
    "mobilenet_12": lambda: gap_head(nn.Sequential(
        nn.Conv2d(1, 64, 5, stride=2),                       # 12x12x64
        *_relu6_block(dw(64, padding=1), pw(64, 64), dw(64, stride=2, padding=1), pw(64, 128))), 128),
    # its 6x6 stage (five such blocks in the network)
    "mobilenet_6": lambda: gap_head(nn.Sequential(
        nn.Conv2d(1, 128, 5, stride=4),                      # 6x6x128
        *_relu6_block(dw(128, padding=1), pw(128, 128), dw(128, padding=1), pw(128, 128))), 128),
    # its 3x3 stage
    "mobilenet_3": lambda: gap_head(nn.Sequential(
        nn.Conv2d(1, 128, 5, stride=4),                      # 6x6x128
        *_relu6_block(dw(128, stride=2, padding=1), pw(128, 256), dw(256, padding=1), pw(256, 256))), 256),
    # DS-CNN small (49x10 MFCC input): the 10x4 stride-2 first layer and two of its four (equal)
    # depthwise-separable blocks (all four would pass the runtime's 256 values)
    "ds_cnn": lambda: gap_head(nn.Sequential(
        nn.Conv2d(1, 1, (2, 19), padding=(11, 0)),           # 49x10x1
        nn.Conv2d(1, 64, (10, 4), stride=2, padding=(4, 1)), nn.ReLU(),   # 24x5x64
        *[m for _ in range(2) for m in (dw(64, padding=1), nn.ReLU(), pw(64, 64), nn.ReLU())]), 64, 12),
    # ResNet-8 (32x32x3 input): its convolutions (the residual adds aside), in two chains
    "resnet8_32": lambda: gap_head(nn.Sequential(
        nn.Conv2d(1, 3, 1, padding=2),                       # 32x32x3
        *_relu6_block(nn.Conv2d(3, 16, 3, padding=1), nn.Conv2d(16, 16, 3, padding=1),
                      nn.Conv2d(16, 16, 3, padding=1))), 16, 10),
    "resnet8_16": lambda: gap_head(nn.Sequential(
        nn.Conv2d(1, 16, 1, padding=2),                      # 32x32x16
        *_relu6_block(nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.Conv2d(32, 32, 3, padding=1),
                      nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.Conv2d(64, 64, 3, padding=1))), 64, 10),
    # ResNet-8's strided 1x1 shortcut convolutions
    "resnet8_shortcuts": lambda: gap_head(nn.Sequential(
        nn.Conv2d(1, 16, 1, padding=2),                      # 32x32x16
        nn.Conv2d(16, 32, 1, stride=2), nn.Conv2d(32, 64, 1, stride=2)), 64, 10),
    # the MLPerf Tiny anomaly-detection autoencoder (640 -> 128 x4 -> 8 -> 128 x4 -> 640), after a
    # layer from the 784 pixels to its 640 inputs and before a 16-output head
    "fc_autoencoder": lambda: nn.Sequential(
        nn.Flatten(), nn.Linear(784, 640),
        *_relu_linears([640, 128, 128, 128, 128, 8, 128, 128, 128, 128, 640]), nn.Linear(640, LINEAR_OUT)),
}


def _relu_linears(widths: list) -> list:
    out = []
    for a, b in zip(widths, widths[1:]):
        out += [nn.Linear(a, b), nn.ReLU()]
    return out


def lower_explicit(model, calibration, core: str):
    """ExecuTorch's explicit-layout Cortex-M flow (the _nhwc operators): the model stays NCHW."""
    from executorch.backends.cortex_m.edge_compile_config import cortex_m_edge_compile_config
    from executorch.backends.cortex_m.passes.cortex_m_pass_manager import CortexMPassManager
    from executorch.backends.cortex_m.quantizer.quantizer import CortexMQuantizer
    from executorch.backends.cortex_m.target_config import CortexMTargetConfig
    from executorch.exir import to_edge_transform_and_lower
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    from tinyrps.network.model import images_to_tensor

    example = (torch.zeros(1, 1, 28, 28),)
    prepared = prepare_pt2e(torch.export.export(model, example).module(check_guards=False),
                            CortexMQuantizer(use_explicit_layout=True))
    with torch.no_grad():
        for x in images_to_tensor(calibration):
            prepared(x.unsqueeze(0))
    converted = convert_pt2e(prepared)
    edge = to_edge_transform_and_lower(torch.export.export(converted, example),
                                       compile_config=cortex_m_edge_compile_config())
    config = CortexMTargetConfig.from_target_string(core)
    edge._edge_programs["forward"] = CortexMPassManager(edge.exported_program(), target_config=config,
                                                        use_explicit_layout=True).transform()
    return edge


def export_probe(builder, name: str, core: str, calibration, folder, explicit: bool = False):
    """The probe's .pte (written into folder), seeded by its name and core. Like `tinyrps export`,
    it checks that the serialized program, replayed by the Python reference, computes what the
    edge program does on the calibration images: a probe must be the model it claims to be."""
    import numpy as np

    from tinyrps.export import cortex_m
    from tinyrps.network.model import INPUT_SHAPE
    from tinyrps.network.quantization import image_examples
    from tinyrps.reference.cortex_m import reference_int8
    torch.manual_seed(sum(map(ord, name + core)))
    model = (pool_head(builder()) if explicit else builder()).eval()
    examples = image_examples(calibration)
    edge = lower_explicit(model, calibration, core) if explicit else \
        cortex_m.lower_to_edge(model, (torch.zeros(INPUT_SHAPE),), examples, core)
    # the edge module runs before to_executorch rewrites it in place
    expected = np.stack([cortex_m.edge_int8_outputs(edge.exported_program(), example)[0].reshape(-1).numpy()
                         for example in examples])
    pte = folder / f"{name}-{core}{'-nhwc' if explicit else ''}.pte"
    pte.write_bytes(edge.to_executorch().buffer)
    replayed = reference_int8(pte, calibration)
    if not np.array_equal(expected, replayed):
        raise AssertionError(f"{pte.name}: the serialized program does not compute what its edge program does")
    return pte


def program_calls(pte) -> list:
    """Operator name of every kernel call, in chain order."""
    from executorch.exir._serialize._program import deserialize_pte_binary
    from pathlib import Path
    plan = deserialize_pte_binary(Path(pte).read_bytes()).program.execution_plan[0]
    return [plan.operators[ins.instr_args.op_index].name for chain in plan.chains for ins in chain.instructions]
