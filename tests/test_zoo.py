"""MLPerf Tiny's networks (tinyrps.devtools.zoo) and their lowering to Cortex-M programs."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import torch
from script_module import load_script

from tinyrps.devtools import zoo
from tinyrps.infra.errors import UserError

REPO = Path(__file__).resolve().parents[1]
DOCUMENTED = json.loads((REPO / "docs" / "cortex-m-networks.json").read_text())
NAMES = list(zoo.NETWORKS)


def state_bytes(model) -> bytes:
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    return buffer.getvalue()


def account_script():
    return load_script("cortex_m_networks")


@pytest.mark.parametrize("name", NAMES)
def test_each_network_builds_with_its_output_shape(name):
    model = zoo.build(name)
    assert not model.training
    with torch.no_grad():
        out = model(*zoo.example_inputs(name))
    assert tuple(out.shape) == (1, zoo.NETWORKS[name].classes)


@pytest.mark.parametrize("name", NAMES)
def test_mac_count_is_the_registry_figure(name):
    model = zoo.build(name)
    assert zoo.count_macs(model, zoo.example_inputs(name)) == zoo.NETWORKS[name].macs


def test_mac_counts_match_the_official_measurement_to_its_digits():
    official = {"resnet8": 12.50e6, "ds-cnn-small": 2.66e6, "mobilenet-v1-0.25": 7.49e6, "fc-autoencoder": 0.26e6}
    assert {n: round(zoo.NETWORKS[n].macs / 1e4) * 1e4 for n in NAMES} == official


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_weights_other_seed_other_weights(name):
    assert state_bytes(zoo.build(name, seed=3)) == state_bytes(zoo.build(name, seed=3))
    assert state_bytes(zoo.build(name, seed=3)) != state_bytes(zoo.build(name, seed=4))


def test_building_leaves_the_global_generator_alone():
    torch.manual_seed(123)
    expected = torch.rand(4)
    torch.manual_seed(123)
    zoo.build("ds-cnn-small")
    assert torch.equal(torch.rand(4), expected)


@pytest.mark.parametrize("name", NAMES)
def test_batchnorm_statistics_are_not_the_identity(name):
    """Folding BatchNorm into the layer before must change the numbers."""
    norms = [m for m in zoo.build(name).modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    assert norms
    for bn in norms:
        assert not torch.allclose(bn.running_var, torch.ones_like(bn.running_var))
        assert not torch.allclose(bn.running_mean, torch.zeros_like(bn.running_mean))
        assert not torch.allclose(bn.weight, torch.ones_like(bn.weight))


def test_random_inputs_are_seeded_and_shaped():
    a, b = zoo.random_inputs("resnet8", 2, seed=5), zoo.random_inputs("resnet8", 2, seed=5)
    assert len(a) == 2 and all(torch.equal(x[0], y[0]) for x, y in zip(a, b))
    assert tuple(a[0][0].shape) == (1, 3, 32, 32) and not torch.equal(a[0][0], a[1][0])


def test_an_unknown_network_is_a_user_error():
    with pytest.raises(UserError, match="unknown network 'resnet9'"):
        zoo.build("resnet9")


def test_an_unknown_core_is_a_user_error():
    from tinyrps.export.cortex_m import target_config
    with pytest.raises(UserError, match="'cortex-m99' is not a Cortex-M core"):
        target_config("cortex-m99")


def test_the_registry_is_what_the_account_documents():
    for name in NAMES:
        entry, doc = zoo.NETWORKS[name], DOCUMENTED["networks"][name]
        assert doc["macs"] == doc["macs_counted"] == entry.macs
        assert doc["input_shapes"] == [list(s) for s in entry.input_shapes] and doc["classes"] == entry.classes
    assert DOCUMENTED["calibration"]["inputs"] == zoo.CALIBRATION_INPUTS
    assert DOCUMENTED["calibration"]["seed"] == zoo.CALIBRATION_SEED


def test_the_document_agrees_with_the_account():
    assert account_script().main(["--check"]) == 0, "run scripts/cortex_m_networks.py"


def test_a_stale_table_is_rewritten_from_the_account():
    script = account_script()
    stale = f"before\n{script.BEGIN.format(name='operators')}\n| 1 | 2 |\n{script.END.format(name='operators')}\nafter\n"
    text = script.rewrite(stale, DOCUMENTED)
    assert text.startswith("before\n") and text.endswith("\nafter\n") and "| 1 | 2 |" not in text
    assert "`cortex_m::quantized_add.out`" in text
    assert script.rewrite(text, DOCUMENTED) == text


# ---------------------------------------------------------------------------------------------
# Lowering (slow: each lowering quantizes, exports and serializes a whole network)
# ---------------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_each_network_lowers_for_cortex_m55_to_the_documented_program(name):
    from tinyrps.devtools.program_account import account
    lowered = zoo.lower_network(name, "cortex-m55")
    documented = DOCUMENTED["networks"][name]["programs"]["cortex-m55"]
    assert list(lowered.not_lowered) == []
    assert list(lowered.operators) == documented["operators"]
    acc = account(lowered.program)
    assert acc["kernel_calls_per_operator"] == documented["kernel_calls_per_operator"]
    assert acc["inputs"] == documented["inputs"] and acc["outputs"] == documented["outputs"]
    assert acc["file_bytes"] == documented["file_bytes"]


@pytest.mark.slow
def test_the_lowering_is_deterministic():
    first = zoo.lower_network("ds-cnn-small", "cortex-m55").program
    assert zoo.lower_network("ds-cnn-small", "cortex-m55").program == first


@pytest.mark.slow
def test_the_edge_reference_gives_the_int8_the_program_dequantizes():
    from tinyrps.export.cortex_m import edge_int8_outputs, edge_outputs
    lowered = zoo.lower_network("fc-autoencoder", "cortex-m4")
    (x,) = zoo.check_inputs("fc-autoencoder")[:1]
    (out,), (q,) = edge_outputs(lowered.edge_program, x), edge_int8_outputs(lowered.edge_program, x)
    # the program's own last dequantize: its scale is calibrated on this machine, so it may differ
    # in the last bits from the one docs/cortex-m-networks.json recorded on another CPU
    last = [n for n in lowered.edge_program.graph_module.graph.nodes if "dequantize_per_tensor" in str(n.target)][-1]
    scale, zero_point = last.args[1], last.args[2]
    assert q.dtype == torch.int8 and tuple(q.shape) == (1, 640)
    assert torch.equal(out, (q.to(torch.float32) - zero_point) * scale)


class TwoInputs(torch.nn.Module):
    """An image through a convolution and a vector through a linear layer, added."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.pool = torch.nn.AdaptiveAvgPool2d(1)
        self.fc = torch.nn.Linear(6, 4)

    def forward(self, image, vector):
        return torch.flatten(self.pool(self.conv(image)), 1) + self.fc(vector)


@pytest.mark.slow
def test_a_module_with_two_inputs_of_different_ranks_lowers():
    from tinyrps.export.cortex_m import lower
    from tinyrps.devtools.program_account import account
    torch.manual_seed(0)
    model = TwoInputs().eval()
    example = (torch.zeros(1, 3, 8, 8), torch.zeros(1, 6))
    calibration = [(torch.randn(1, 3, 8, 8), torch.randn(1, 6)) for _ in range(4)]
    lowered = lower(model, example, calibration, "cortex-m33")
    inputs = account(lowered.program)["inputs"]
    assert [(t["sizes"], t["dim_order"]) for t in inputs] == [([1, 3, 8, 8], [0, 2, 3, 1]), ([1, 6], [0, 1])]
    assert all(op.startswith("cortex_m::") for op in lowered.operators)


@pytest.mark.slow
def test_a_layer_the_backend_does_not_take_is_refused_by_name():
    from tinyrps.export.cortex_m import lower
    class CumSum(torch.nn.Module):
        def forward(self, x):
            return torch.cumsum(x, 1)

    model = torch.nn.Sequential(torch.nn.Linear(4, 4), CumSum()).eval()
    example, calibration = (torch.zeros(1, 4),), [(torch.randn(1, 4),)]
    with pytest.raises(UserError, match=r"left .*aten::cumsum\.out.* in the program"):   # the runtime has no cumsum
        lower(model, example, calibration, "cortex-m55")
    lowered = lower(model, example, calibration, "cortex-m55", strict=False)   # the cumsum stays float
    assert "aten::cumsum.out" in lowered.not_lowered
    assert not any(op.startswith("cortex_m::") for op in lowered.not_lowered)


@pytest.mark.slow
def test_a_calibration_tuple_of_the_wrong_shape_is_a_user_error():
    from tinyrps.export.cortex_m import lower
    model = torch.nn.Linear(4, 2).eval()
    with pytest.raises(UserError, match=r"expected \(float32\[1, 4\]\), got \(float32\[1, 5\]\)"):
        lower(model, (torch.zeros(1, 4),), [(torch.zeros(1, 5),)], "cortex-m55")
