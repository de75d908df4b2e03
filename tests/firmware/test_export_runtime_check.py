"""The exporter and the runtime agree: what export writes the generic firmware loads, and a program the runtime
refuses over its tables is refused at export first, with the runtime's own reason (tinyrps.export.runtime_check).
A standalone ReLU, hardtanh or clamp leaves the portable aten::clamp.out, which the runtime has: exported, it runs
bit-exact."""
from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generic_programs import replay, sample_inputs  # noqa: E402
from test_generic_io import longer_program, more_outputs_program  # noqa: E402

from tinyrps.devices import open_device  # noqa: E402
from tinyrps.infra.errors import UserError  # noqa: E402
from tinyrps.export.runtime_check import runtime_refusal  # noqa: E402

ACTIVATIONS = {"relu": nn.ReLU(), "hardtanh": nn.Hardtanh(-0.5, 0.5), "clamp": None}


class Standalone(nn.Module):
    """One activation on the input, nothing before it to fold it into."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.activation = ACTIVATIONS[name]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp(x, -1.0, 2.0) if self.activation is None else self.activation(x)


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_a_standalone_activation_exports_and_runs_bit_exact(name, tmp_path):
    from tinyrps.hardware.descriptor import Origin
    from tinyrps.export import export_model
    generator = torch.Generator().manual_seed(2)
    calibration = [(torch.randn(1, 4, 8, 8, generator=generator) * 2,) for _ in range(8)]
    pte = export_model(Standalone(name), (torch.zeros(1, 4, 8, 8),), calibration, "cortex-m55", tmp_path,
                       Origin(module=f"Standalone({name})", calibration="8 random"), name=name)
    program = pte.read_bytes()
    assert "aten::clamp.out" in json.loads(pte.with_suffix(".json").read_text())["cortex_m"]["operators"]
    samples = [(a * 6 - 3).astype(np.float32) for a in sample_inputs(program, 6, seed=3)]
    with open_device("native", pte) as device:
        (got,) = device.run_batch(samples).outputs
    (want,), _ = replay(program, samples)
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8)) and len(np.unique(want)) > 10


def native_refusal(native, tool, program: Path) -> str:
    result = native.tool(tool, "info", program, check=False)
    assert result.returncode == 3, result.stdout
    return result.stderr.strip()


def test_the_check_gives_the_runtimes_reason_for_each_table(m55_pte, native, native_tool, tmp_path):
    """Programs over the kernel calls, the outputs, an operator the table lacks: the check's reason is the one
    the runtime loads them with; the program itself passes."""
    from executorch.exir._serialize._program import deserialize_pte_binary, serialize_pte_binary
    assert runtime_refusal(m55_pte.read_bytes()) is None
    renamed = deserialize_pte_binary(m55_pte.read_bytes())
    renamed.program.execution_plan[0].operators[-1].name = "aten::cumsum"
    unknown = tmp_path / "unknown.pte"
    unknown.write_bytes(bytes(serialize_pte_binary(renamed, extract_delegate_segments=False)))
    for program in (longer_program(m55_pte, 125, tmp_path / "longer.pte"),
                    more_outputs_program(m55_pte, 17, tmp_path / "wider.pte"), unknown):
        reason = runtime_refusal(program.read_bytes())
        assert reason is not None and native_refusal(native, native_tool, program).endswith(f": {reason}"), reason


class Deep(nn.Module):
    """130 linear layers: 132 kernel calls with the quantize and the dequantize, above the runtime's 128."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(*[nn.Linear(4, 4) for _ in range(130)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


@pytest.mark.slow       # a lowering of 130 layers
def test_export_refuses_what_the_runtime_refuses_with_its_reason(native, native_tool, tmp_path, monkeypatch):
    from tinyrps.export import cortex_m
    torch.manual_seed(0)
    model = Deep().eval()
    generator = torch.Generator().manual_seed(1)
    calibration = [(torch.randn(1, 4, generator=generator),) for _ in range(4)]
    # the strict and the unchecked export lower the same model alike: the second takes a copy of the first's
    # edge program (to_executorch rewrites the one it is given), which is most of the time of a lowering
    edges, lower_to_edge = [], cortex_m.lower_to_edge
    monkeypatch.setattr(cortex_m, "lower_to_edge", lambda *args, **kwargs: copy.deepcopy(
        edges[0] if edges else edges.append(lower_to_edge(*args, **kwargs)) or edges[0]))
    with pytest.raises(UserError) as raised:
        cortex_m.lower(model, (torch.zeros(1, 4),), calibration, "cortex-m55")
    message = str(raised.value)
    assert "the firmware's runtime would refuse this program (kernel calls above TRT_MAX_KERNEL_CALLS: 132)" in message
    unchecked = tmp_path / "deep.pte"
    unchecked.write_bytes(cortex_m.lower(model, (torch.zeros(1, 4),), calibration, "cortex-m55", strict=False).program)
    assert len(edges) == 1
    assert native_refusal(native, native_tool, unchecked) == \
        "error: over runtime limit: kernel calls above TRT_MAX_KERNEL_CALLS: 132"
