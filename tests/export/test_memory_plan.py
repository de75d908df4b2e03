"""The memory plan by lifetime (tinyrps.export.memory_plan) that a program with integer inputs and outputs is
planned with when it is smaller than ExecuTorch's greedy plan: smaller on a small MobileNet-like network, above
its largest live set, and the program computes the same, bit for bit."""
from __future__ import annotations

import copy

import numpy as np
import torch
from torch import nn

from tinyrps.devtools.zoo import conv_bn_relu, depthwise_separable
from tinyrps.export.cortex_m import backend_config, lower_to_edge
from tinyrps.measure.live_set import largest_live_set
from tinyrps.reference.cortex_m import replay


class Mini(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(conv_bn_relu(3, 8, 3, stride=2, padding=1), depthwise_separable(8, 16, 1),
                                      depthwise_separable(16, 32, 2), depthwise_separable(32, 32, 1),
                                      depthwise_separable(32, 64, 2))
        self.fc = nn.Linear(64, 4)

    def forward(self, x):
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(self.features(x), 1), 1))


def _plan_bytes(program: bytes) -> int:
    from executorch.exir._serialize._program import deserialize_pte_binary
    return sum(deserialize_pte_binary(program).program.execution_plan[0].non_const_buffer_sizes)


def test_the_plan_by_lifetime_is_smaller_and_computes_the_same():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    calibration = [(torch.randn(1, 3, 32, 32, generator=g),) for _ in range(4)]
    edge = lower_to_edge(Mini().eval(), (torch.zeros(1, 3, 32, 32),), calibration, "cortex-m55",
                         int8_inputs=[0], int8_outputs="all")
    greedy = copy.deepcopy(edge).to_executorch().buffer
    planned = edge.to_executorch(backend_config()).buffer
    assert largest_live_set(planned)["bytes"] <= _plan_bytes(planned) < _plan_bytes(greedy)
    rng = np.random.default_rng(2)
    for _ in range(4):
        x = rng.integers(-128, 128, (1, 3, 32, 32), dtype=np.int8)
        (a,), (b,) = replay(greedy, [x]), replay(planned, [x])
        assert a.dtype == np.int8 and np.array_equal(a, b)
