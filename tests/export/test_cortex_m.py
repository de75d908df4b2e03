"""Cortex-M export targets and the Python reference the firmware is checked against."""
from __future__ import annotations

import json

import numpy as np
import pytest

from tinyrps.data import load_split
from tinyrps.devices.base import Device
from tinyrps.export import BuildContext, EvalContext, get_target, targets
from tinyrps.export import cortex_m
from tinyrps.firmware.operators import runtime_operators

# What the lowering emits for the default network, in the program's order (the runtime runs more).
CORTEX_M_OPERATORS = [
    "cortex_m::quantize_per_tensor.out", "cortex_m::quantized_depthwise_conv2d.out",
    "cortex_m::quantized_conv2d.out", "cortex_m::quantized_max_pool2d.out",
    "dim_order_ops::_clone_dim_order.out", "cortex_m::quantized_linear.out",
    "cortex_m::dequantize_per_tensor.out",
]


def test_cores_are_registered_for_the_firmware_devices():
    for name in ("cortex-m4", "cortex-m33", "cortex-m55", "cortex-m85"):
        target = targets()[name]
        assert target.family == "cortex-m" and target.default_device == "mcu"
        assert target.extra_eval is cortex_m.compare_with_reference
        assert target.unavailable() is None


def test_exported_program_uses_only_cmsis_nn_operators(exported):
    pte = exported("cortex-m55")
    sidecar = json.loads(pte.with_suffix(".json").read_text())
    assert sidecar["family"] == "cortex-m" and sidecar["core"] == "cortex-m55"
    assert sidecar["operators"] == CORTEX_M_OPERATORS
    assert sidecar["reference"]["checked_against_edge_program_images"] == cortex_m.SELF_CHECK_IMAGES
    assert cortex_m.program_operators(pte.read_bytes()) == CORTEX_M_OPERATORS
    assert set(CORTEX_M_OPERATORS) <= {op.qualified for op in runtime_operators()}


@pytest.mark.slow
def test_export_checks_its_reference_against_the_edge_program(monkeypatch, tmp_path):
    """Every export replays the serialized program and compares it with the edge program's module
    (the reference ExecuTorch defines); a disagreement stops the export."""
    from torch import nn
    from tinyrps.data import make_split
    images = make_split("test", 3, 1)[0]
    model = nn.Sequential(nn.Conv2d(1, 4, 3, stride=2), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 13 * 13, 3)).eval()
    ctx = BuildContext(model=model, calibration=images, workdir=tmp_path, options={})
    result = cortex_m.build_cortex_m(ctx, "cortex-m55")
    assert result.info["reference"]["checked_against_edge_program_images"] == len(images)

    real_replay = cortex_m.replay_int8
    monkeypatch.setattr(cortex_m, "replay_int8", lambda prog, imgs: real_replay(prog, imgs) + np.int8(1))
    with pytest.raises(RuntimeError, match="does not replay like its edge program"):
        cortex_m.build_cortex_m(ctx, "cortex-m55")


class FakeDevice(Device):
    """A device that reports the given int8 outputs (none: the Device defaults)."""
    name = "fake"

    def __init__(self, history=None, last=None):
        if history is not None:
            self.int8_outputs = history
        if last is not None:
            self.last_int8 = last


def test_eval_hook_compares_the_devices_last_outputs(exported, data_dir):
    pte = exported("cortex-m55")
    images = load_split(data_dir, "test")[0][:20]
    reference = cortex_m.reference_int8(pte, images)
    earlier = np.full((7, 3), 99, np.int8)   # outputs of images classified before: ignored
    hook = get_target("cortex-m55").extra_eval

    def run(device):
        return hook(EvalContext("cortex-m55", pte, images, None, None, device, {}))

    assert run(FakeDevice(history=np.concatenate([earlier, reference])))["bit_exact"] is True
    assert run(FakeDevice(last=reference))["bit_exact"] is True
    wrong = reference.copy()
    wrong[5, 1] += 1
    assert run(FakeDevice(history=wrong)) | {} == {"bit_exact": False, "mismatches": 1, "images": 20,
                                                     "max_abs_diff_lsb": 1,
                                                     "reference": "ExecuTorch cortex_m Python operators"}
    assert run(FakeDevice()) == {"bit_exact": False, "error": "device fake does not report its int8 outputs"}


def test_reference_refuses_a_corrupted_program(tmp_path):
    from tinyrps.errors import UserError
    bad = tmp_path / "bad.pte"
    bad.write_bytes(b"\x10\0\0\0ET12" + b"\xff" * 40)
    with pytest.raises(UserError, match="corrupted ExecuTorch .pte"):
        cortex_m.reference_int8(bad, np.zeros((1, 28, 28), np.uint8))


def test_reference_in_a_worker_thread_leaves_the_thread_count_alone(exported, monkeypatch):
    """Eval computes the Cortex-M reference in a worker thread while the main thread runs other
    programs: the worker must not resize torch's process-wide thread pool under them."""
    import concurrent.futures
    import threading

    import torch
    from tinyrps.data import make_split
    resized_by = []
    real_set_num_threads = torch.set_num_threads

    def recording(count):
        resized_by.append(threading.current_thread().name)
        real_set_num_threads(count)
    monkeypatch.setattr(torch, "set_num_threads", recording)
    images = make_split("test", 1, 2)[0]
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="worker") as pool:
        in_worker = pool.submit(cortex_m.reference_int8, exported("cortex-m55"), images).result()
    assert resized_by == []
    threads = torch.get_num_threads()
    in_main = cortex_m.reference_int8(exported("cortex-m55"), images)
    assert set(resized_by) <= {threading.main_thread().name} and torch.get_num_threads() == threads
    np.testing.assert_array_equal(in_worker, in_main)


@pytest.mark.slow
def test_identical_programs_are_replayed_once_in_a_worker_process(exported, test_images, tmp_path):
    pte = exported("cortex-m4")
    twin = tmp_path / "twin.pte"
    twin.write_bytes(pte.read_bytes())
    images = test_images[0][:4]
    with cortex_m.replays_in_background([pte, twin], images):
        assert len(cortex_m._background) == 1
        from_worker = cortex_m.reference_int8(twin, images)
    assert not cortex_m._background
    assert np.array_equal(from_worker, cortex_m.replay_int8(cortex_m.parse_program(pte.read_bytes()), images))
