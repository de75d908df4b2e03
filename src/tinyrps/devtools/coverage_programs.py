"""A set of small programs of many kinds, to count how many of them the Cortex-M flow exports and runs.

Single operators across their options (elementwise arithmetic with every broadcast, activations,
reductions, softmax on every dimension, convolutions and pools in all their forms, matrix products,
copies and index operations) and a few whole architectures (the zoo's MLPerf Tiny networks,
MobileNetV2 and V3-small at 96x96, a small ResNet, an LSTM, a GRU). Every program is a factory named
in PROGRAMS, with the shapes of its float32 inputs; this file is also what
`tinyrps export --module coverage_programs.py:NAME` loads (each name is a module-level factory).
scripts/operator_coverage.py exports and runs them.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class Lambda(nn.Module):
    """A module computing fn(*inputs), with the given layers as submodules (their parameters seeded)."""

    def __init__(self, fn, **layers):
        super().__init__()
        self.fn = fn
        for name, layer in layers.items():
            setattr(self, name, layer)

    def forward(self, *inputs):
        return self.fn(self, *inputs)


# name -> (factory, input shapes)
PROGRAMS: dict = {}


def program(name: str, shapes, make) -> None:
    def factory():
        torch.manual_seed(sum(map(ord, name)))
        return make()
    factory.__name__ = name
    PROGRAMS[name] = (factory, tuple(tuple(s) for s in shapes))
    globals()[name] = factory


def functional(name: str, shapes, fn) -> None:
    program(name, shapes, lambda: Lambda(lambda self, *x: fn(*x)))


def layer(name: str, shapes, make_layer) -> None:
    program(name, shapes, lambda: Lambda(lambda self, x: self.layer(x), layer=make_layer()))


# --- elementwise arithmetic, every broadcast ------------------------------------------------------
BROADCASTS = {
    "same": ((2, 3, 5), (2, 3, 5)),
    "row": ((1, 8), (3, 1)),
    "last": ((2, 3, 4), (4,)),
    "middle": ((2, 1, 4), (1, 3, 1)),
    "every_axis": ((1, 3, 1, 5), (2, 1, 4, 1)),
    "channels": ((1, 3, 4, 4), (1, 3, 1, 1)),
    "scalar_shape": ((2, 5), (1,)),
    "odd": ((7, 1, 3), (1, 5, 1)),
}
BINARY = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
          "maximum": torch.maximum, "minimum": torch.minimum}
for op_name, op in BINARY.items():
    for b_name, shapes in BROADCASTS.items():
        functional(f"{op_name}_{b_name}", shapes, lambda x, y, op=op: op(x, y))
for alpha in (2, -0.5):
    functional(f"add_alpha_{str(alpha).replace('-', 'm').replace('.', 'p')}", ((3, 4), (1, 4)),
               lambda x, y, a=alpha: torch.add(x, y, alpha=a))
    functional(f"sub_alpha_{str(alpha).replace('-', 'm').replace('.', 'p')}", ((3, 4), (3, 1)),
               lambda x, y, a=alpha: torch.sub(x, y, alpha=a))
for const in (1.5, -3.0):
    tag = str(const).replace('-', 'm').replace('.', 'p')
    functional(f"add_const_{tag}", ((2, 6),), lambda x, c=const: x + c)
    functional(f"mul_const_{tag}", ((2, 6),), lambda x, c=const: x * c)
    functional(f"div_const_{tag}", ((2, 6),), lambda x, c=const: x / c)
functional("rsub_const", ((2, 6),), lambda x: 1.0 - x)
functional("square_self", ((3, 5),), lambda x: x * x)
functional("add_self", ((3, 5),), lambda x: x + x)
functional("add_three", ((2, 4), (2, 4), (1, 4)), lambda x, y, z: x + y + z)

# --- activations -------------------------------------------------------------------------------------
UNARY = {
    "relu": F.relu, "relu6": F.relu6, "hardtanh": lambda x: F.hardtanh(x, -0.5, 0.75),
    "clamp": lambda x: x.clamp(-0.25, 0.5), "clamp_min": lambda x: x.clamp(min=0.1),
    "clamp_max": lambda x: x.clamp(max=0.2), "sigmoid": torch.sigmoid, "tanh": torch.tanh,
    "hardswish": F.hardswish, "hardsigmoid": F.hardsigmoid, "silu": F.silu, "gelu": F.gelu,
    "elu": F.elu, "leaky_relu": lambda x: F.leaky_relu(x, 0.1), "abs": torch.abs, "neg": torch.neg,
    "pow2": lambda x: torch.pow(x, 2), "pow3": lambda x: torch.pow(x, 3), "exp": torch.exp,
    "softplus": F.softplus, "mish": F.mish, "square": torch.square,
}
for u_name, fn in UNARY.items():
    functional(f"{u_name}_2d", ((3, 7),), fn)
    functional(f"{u_name}_4d", ((1, 3, 5, 5),), fn)

# --- reductions ----------------------------------------------------------------------------------------
for dims, keep in (((1,), False), ((1,), True), ((-1,), False), ((2, 3), False), ((2, 3), True), ((1, 2), False),
                   ((0,), False)):
    tag = "_".join(str(d).replace('-', 'm') for d in dims) + ("_keep" if keep else "")
    functional(f"mean_{tag}", ((1, 3, 4, 5),), lambda x, d=dims, k=keep: x.mean(dim=d, keepdim=k))
    functional(f"sum_{tag}", ((1, 3, 4, 5),), lambda x, d=dims, k=keep: x.sum(dim=d, keepdim=k))
functional("mean_3d_last", ((2, 5, 3),), lambda x: x.mean(-1))
functional("amax_last", ((2, 5, 3),), lambda x: x.amax(-1))
layer("adaptive_avg_pool_1", ((1, 4, 6, 6),), lambda: nn.AdaptiveAvgPool2d(1))

# --- softmax -------------------------------------------------------------------------------------------
for shape in ((2, 7), (1, 3, 4, 5)):
    for dim in range(-1, len(shape)):
        if dim == -1 and len(shape) != 2:
            continue
        tag = f"{len(shape)}d_{str(dim).replace('-', 'm')}"
        functional(f"softmax_{tag}", (shape,), lambda x, d=dim: F.softmax(x, d))
        functional(f"log_softmax_{tag}", (shape,), lambda x, d=dim: F.log_softmax(x, d))

# --- convolutions --------------------------------------------------------------------------------------
CONVS = {
    "plain": dict(), "stride2": dict(stride=2), "pad1": dict(padding=1), "dilation2": dict(dilation=2, padding=2),
    "groups2": dict(groups=2), "depthwise": dict(groups=4), "asym": dict(stride=(2, 1), padding=(1, 0)),
    "nobias": dict(bias=False),
}
for c_name, kw in CONVS.items():
    kw = dict(kw)
    out = 4 if kw.get("groups") == 4 else 6
    layer(f"conv2d_{c_name}", ((1, 4, 9, 9),), lambda kw=kw, out=out: nn.Conv2d(4, out, 3, **kw))
for c_name, kw in {"plain": dict(), "stride2": dict(stride=2), "pad": dict(padding=1), "groups": dict(groups=2),
                   "dilation": dict(dilation=2)}.items():
    layer(f"conv1d_{c_name}", ((1, 4, 16),), lambda kw=kw: nn.Conv1d(4, 6, 3, **kw))
for t_name, kw in {"plain": dict(), "stride2": dict(stride=2), "outpad": dict(stride=2, output_padding=1),
                   "pad": dict(stride=2, padding=1), "groups": dict(groups=2), "dilation": dict(dilation=2)}.items():
    layer(f"conv_transpose2d_{t_name}", ((1, 4, 5, 5),), lambda kw=kw: nn.ConvTranspose2d(4, 6, 3, **kw))
layer("conv3d", ((1, 2, 4, 5, 5),), lambda: nn.Conv3d(2, 3, 3))

# --- pooling -------------------------------------------------------------------------------------------
for p_name, kw in {"k2": dict(kernel_size=2), "k3s2": dict(kernel_size=3, stride=2),
                   "pad": dict(kernel_size=3, stride=2, padding=1), "ceil": dict(kernel_size=3, stride=2, ceil_mode=True),
                   "dilation": dict(kernel_size=2, dilation=2)}.items():
    layer(f"max_pool2d_{p_name}", ((1, 3, 9, 9),), lambda kw=kw: nn.MaxPool2d(**kw))
for p_name, kw in {"k2": dict(kernel_size=2), "k3s2": dict(kernel_size=3, stride=2),
                   "pad": dict(kernel_size=3, stride=2, padding=1),
                   "pad_exclude": dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
                   "ceil": dict(kernel_size=3, stride=2, ceil_mode=True),
                   "divisor": dict(kernel_size=2, divisor_override=3)}.items():
    layer(f"avg_pool2d_{p_name}", ((1, 3, 9, 9),), lambda kw=kw: nn.AvgPool2d(**kw))
layer("max_pool1d", ((1, 3, 12),), lambda: nn.MaxPool1d(2))
layer("avg_pool1d", ((1, 3, 12),), lambda: nn.AvgPool1d(3))

# --- matrix products -----------------------------------------------------------------------------------
layer("linear_2d", ((3, 10),), lambda: nn.Linear(10, 7))
layer("linear_3d", ((2, 3, 10),), lambda: nn.Linear(10, 7))
layer("linear_nobias", ((1, 10),), lambda: nn.Linear(10, 7, bias=False))
functional("bmm", ((2, 3, 4), (2, 4, 5)), torch.bmm)
functional("matmul_broadcast", ((1, 3, 4), (2, 4, 5)), torch.matmul)
functional("matmul_2d", ((3, 4), (4, 5)), torch.matmul)
functional("matmul_4d", ((1, 2, 3, 4), (1, 2, 4, 5)), torch.matmul)

# --- copies, layouts and index operations --------------------------------------------------------------
functional("flatten", ((1, 3, 4, 4),), lambda x: torch.flatten(x, 1))
functional("reshape", ((2, 6),), lambda x: x.reshape(3, 4))
functional("permute_3d", ((2, 3, 4),), lambda x: x.permute(2, 0, 1))
functional("transpose_2d", ((3, 5),), lambda x: x.transpose(0, 1))
functional("cat_dim1", ((2, 3), (2, 4)), lambda x, y: torch.cat([x, y], 1))
functional("cat_dim0", ((2, 3), (1, 3)), lambda x, y: torch.cat([x, y], 0))
functional("stack", ((2, 3), (2, 3)), lambda x, y: torch.stack([x, y], 0))
functional("unsqueeze", ((2, 3),), lambda x: x.unsqueeze(1))
functional("squeeze", ((2, 1, 3),), lambda x: x.squeeze(1))
functional("pad_constant", ((1, 2, 4, 4),), lambda x: F.pad(x, (1, 2, 0, 1)))
functional("slice", ((4, 6),), lambda x: x[:, 1:5])
functional("select", ((4, 6),), lambda x: x[2])
functional("index_tensor", ((5, 3),), lambda x: x[torch.tensor([0, 2, 4])])
functional("split", ((4, 6),), lambda x: torch.split(x, [2, 4], 1)[1])
functional("chunk_sum", ((4, 6),), lambda x: x.chunk(2, 1)[0] + x.chunk(2, 1)[1])
functional("arange_add", ((1, 5),), lambda x: x + torch.arange(5, dtype=torch.float32))
functional("full_mul", ((2, 3),), lambda x: x * torch.full((2, 3), 0.5))
functional("contiguous_nchw", ((1, 3, 4, 4),), lambda x: x.contiguous() + 0.0)
functional("repeat", ((1, 3),), lambda x: x.repeat(2, 1))
functional("expand_add", ((1, 3), (4, 3)), lambda x, y: x.expand(4, 3) + y)
functional("upsample_nearest", ((1, 2, 4, 4),), lambda x: F.interpolate(x, scale_factor=2, mode="nearest"))
functional("pixel_shuffle", ((1, 4, 3, 3),), lambda x: F.pixel_shuffle(x, 2))

# --- normalizations and compositions -------------------------------------------------------------------
layer("batchnorm_alone", ((1, 3, 5, 5),), lambda: nn.BatchNorm2d(3).eval())
layer("layernorm", ((2, 8),), lambda: nn.LayerNorm(8))
layer("conv_bn_relu", ((1, 3, 8, 8),), lambda: nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU()))
layer("conv_relu6", ((1, 3, 8, 8),), lambda: nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU6()))
layer("conv_sigmoid", ((1, 3, 8, 8),), lambda: nn.Sequential(nn.Conv2d(3, 8, 3), nn.Sigmoid()))
layer("conv_hardswish", ((1, 3, 8, 8),), lambda: nn.Sequential(nn.Conv2d(3, 8, 3), nn.Hardswish()))
layer("mlp", ((1, 16),), lambda: nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)))
layer("mlp_tanh", ((1, 16),), lambda: nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 4)))
layer("mlp_softmax", ((1, 16),), lambda: nn.Sequential(nn.Linear(16, 8), nn.Softmax(-1)))
layer("conv_gap_linear", ((1, 3, 12, 12),), lambda: nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(),
                                                                  nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 5)))
program("squeeze_excite", ((1, 8, 6, 6),), lambda: Lambda(
    lambda self, x: x * torch.sigmoid(self.fc(x.mean((2, 3), keepdim=True))), fc=nn.Conv2d(8, 8, 1)))
program("gated", ((2, 8),), lambda: Lambda(
    lambda self, x: torch.tanh(self.a(x)) * torch.sigmoid(self.b(x)), a=nn.Linear(8, 6), b=nn.Linear(8, 6)))
program("residual_mean", ((1, 4, 6, 6),), lambda: Lambda(
    lambda self, x: (self.c(x) + x).mean((2, 3)), c=nn.Conv2d(4, 4, 3, padding=1)))
program("attention_tiny", ((1, 4, 8),), lambda: Lambda(
    lambda self, x: torch.softmax(self.q(x) @ self.k(x).transpose(1, 2), -1) @ self.v(x),
    q=nn.Linear(8, 8), k=nn.Linear(8, 8), v=nn.Linear(8, 8)))


# --- whole architectures -------------------------------------------------------------------------------
class TinyResNet(nn.Module):
    """Two residual stages over 16x16 images, global average pool, a linear head."""

    def __init__(self):
        super().__init__()
        from tinyrps.devtools.zoo import ResidualBlock, conv_bn_relu
        self.net = nn.Sequential(conv_bn_relu(3, 8, 3, padding=1), ResidualBlock(8, 8, 1), ResidualBlock(8, 16, 2),
                                 nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 6))

    def forward(self, x):
        return self.net(x)


class Recurrent(nn.Module):
    """One LSTM (or GRU) layer over 6 steps of 8 features, its last step through a linear layer."""

    def __init__(self, cell):
        super().__init__()
        self.rnn = cell(8, 12, batch_first=True)
        self.head = nn.Linear(12, 3)

    def forward(self, x):
        return self.head(self.rnn(x)[0][:, -1])


def _zoo(name):
    from tinyrps.devtools import zoo
    return lambda: zoo.build(name)


program("tiny_resnet", ((1, 3, 16, 16),), TinyResNet)
program("lstm", ((1, 6, 8),), lambda: Recurrent(nn.LSTM))
program("gru", ((1, 6, 8),), lambda: Recurrent(nn.GRU))
for zoo_name, shape in (("resnet8", (1, 3, 32, 32)), ("ds-cnn-small", (1, 1, 49, 10)),
                        ("mobilenet-v1-0.25", (1, 3, 96, 96)), ("fc-autoencoder", (1, 640)),
                        ("mobilenet-v2", (1, 3, 96, 96)), ("mobilenet-v3-small", (1, 3, 96, 96))):
    program(zoo_name.replace("-", "_").replace(".", "p"), (shape,), _zoo(zoo_name))
