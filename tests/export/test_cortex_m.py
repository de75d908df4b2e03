"""Cortex-M export targets and the Python reference (tinyrps.reference.cortex_m) the firmware is checked against."""
from __future__ import annotations

import json

import numpy as np
import pytest

from tinyrps.hardware import descriptor
from tinyrps.data import load_split
from tinyrps.devices.base import Device
from tinyrps.infra.errors import UserError
from tinyrps.evaluate import EvalContext, family_check
from tinyrps.export import BuildContext, cortex_m
from tinyrps.hardware.families import get_family, targets
from tinyrps.firmware.operators import runtime_operators
from tinyrps.reference import cortex_m as reference

# What the lowering emits for the default network, in the program's order (the runtime runs more).
CORTEX_M_OPERATORS = [
    "cortex_m::quantize_per_tensor.out", "cortex_m::quantized_depthwise_conv2d.out",
    "cortex_m::quantized_conv2d.out", "cortex_m::quantized_max_pool2d.out",
    "dim_order_ops::_clone_dim_order.out", "cortex_m::quantized_linear.out",
    "cortex_m::dequantize_per_tensor.out",
]


def test_cores_are_targets_of_the_cortex_m_family_run_by_the_firmware_devices():
    for name in ("cortex-m4", "cortex-m33", "cortex-m55", "cortex-m85"):
        assert targets()[name].family == "cortex-m"
        assert family_check(name) is reference.evaluate
    assert get_family("cortex-m").devices == ("mcu", "native")


def test_exported_program_uses_only_cmsis_nn_operators(exported):
    pte = exported("cortex-m55")
    described = descriptor.read(pte, pte.read_bytes())
    assert described.family == "cortex-m" and described.info.core == "cortex-m55"
    assert list(described.info.operators) == CORTEX_M_OPERATORS
    assert described.info.reference["checked_against_edge_program_examples"] == cortex_m.SELF_CHECK_EXAMPLES
    assert list(cortex_m.program_operators(pte.read_bytes())) == CORTEX_M_OPERATORS
    assert set(CORTEX_M_OPERATORS) <= {op.qualified for op in runtime_operators()}
    assert [(t.dtype, t.shape) for t in described.inputs] == [("float32", (1, 1, 28, 28))]
    assert [(t.dtype, t.shape) for t in described.outputs] == [("float32", (1, 3))]


def test_the_export_needs_no_firmware_tools(exported):
    """Export is ahead of time only: nothing of the firmware build or QEMU runs, and the descriptor
    holds no measured figure."""
    raw = json.loads(exported("cortex-m55").with_suffix(".json").read_text())
    assert "firmware" not in raw and "firmware" not in raw["cortex_m"]


@pytest.mark.slow
def test_export_checks_its_reference_against_the_edge_program(monkeypatch, tmp_path):
    """Every export replays the serialized program and compares it with the edge program's module
    (the reference ExecuTorch defines); a disagreement stops the export."""
    import torch
    from torch import nn

    from tinyrps.data import make_split
    from tinyrps.network.quantization import image_examples
    examples = image_examples(make_split("test", 3, 1)[0])
    model = nn.Sequential(nn.Conv2d(1, 4, 3, stride=2), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 13 * 13, 3)).eval()
    ctx = BuildContext(target=targets()["cortex-m55"], model=model, example_inputs=(torch.zeros(1, 1, 28, 28),),
                       calibration=examples, calibration_note="3 test images", workdir=tmp_path, options={})
    result = cortex_m.build("cortex-m55", ctx)
    assert result.info.reference["checked_against_edge_program_examples"] == len(examples)

    real_replay = cortex_m.replay
    monkeypatch.setattr(cortex_m, "replay", lambda prog, inputs: [o + np.float32(1) for o in real_replay(prog, inputs)])
    with pytest.raises(UserError, match="does not replay like its edge program"):
        cortex_m.build("cortex-m55", ctx)



@pytest.mark.slow     # four lowerings of a small network
def test_a_second_core_of_the_same_isa_reuses_the_lowering_of_the_same_source(monkeypatch, tmp_path):
    """cortex-m33 and cortex-m4 lower to the same bytes (ExecuTorch's passes read only the ISA):
    an export of one after the other, from the same checkpoint and calibration, lowers once."""
    import torch
    from torch import nn

    from tinyrps.data import make_split
    from tinyrps.network.quantization import image_examples
    examples = image_examples(make_split("test", 3, 1)[0])
    model = nn.Sequential(nn.Conv2d(1, 4, 3, stride=2), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 13 * 13, 3)).eval()
    lowerings = []
    real_lower = cortex_m.lower
    monkeypatch.setattr(cortex_m, "lower", lambda *a, **k: lowerings.append(a[3]) or real_lower(*a, **k))

    def build(core, source):
        ctx = BuildContext(target=targets()[core], model=model, example_inputs=(torch.zeros(1, 1, 28, 28),),
                           calibration=examples, calibration_note="3 test images", workdir=tmp_path, options={},
                           source=source)
        return cortex_m.build(core, ctx)
    m33, m4 = build("cortex-m33", "a"), build("cortex-m4", "a")
    assert lowerings == ["cortex-m33"] and m4.program == m33.program
    assert (m33.info.core, m4.info.core) == ("cortex-m33", "cortex-m4")
    assert build("cortex-m4", None).program == m33.program        # the premise, lowered afresh
    assert build("cortex-m55", "a").program != m33.program         # another ISA is lowered, not reused
    assert build("cortex-m4", "b").program == m33.program and lowerings == ["cortex-m33", "cortex-m4", "cortex-m55",
                                                                           "cortex-m4"]

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
    expected = reference.reference_int8(pte, images)
    earlier = np.full((7, 3), 99, np.int8)   # outputs of images classified before: ignored
    hook = family_check("cortex-m55")

    def run(device):
        return hook(EvalContext("cortex-m55", pte, images, None, None, device, {}))

    assert run(FakeDevice(history=np.concatenate([earlier, expected])))["bit_exact"] is True
    assert run(FakeDevice(last=expected))["bit_exact"] is True
    wrong = expected.copy()
    wrong[5, 1] += 1
    assert run(FakeDevice(history=wrong)) | {} == {"bit_exact": False, "mismatches": 1, "images": 20,
                                                     "max_abs_diff_lsb": 1,
                                                     "reference": "ExecuTorch cortex_m Python operators"}
    assert run(FakeDevice()) == {"bit_exact": False, "error": "device fake does not report its int8 outputs"}


def test_reference_refuses_a_corrupted_program(tmp_path):
    from tinyrps.infra.errors import UserError
    bad = tmp_path / "bad.pte"
    bad.write_bytes(b"\x10\0\0\0ET12" + b"\xff" * 40)
    with pytest.raises(UserError, match="corrupted ExecuTorch .pte"):
        reference.reference_int8(bad, np.zeros((1, 28, 28), np.uint8))


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
        in_worker = pool.submit(reference.reference_int8, exported("cortex-m55"), images).result()
    assert resized_by == []
    threads = torch.get_num_threads()
    in_main = reference.reference_int8(exported("cortex-m55"), images)
    assert set(resized_by) <= {threading.main_thread().name} and torch.get_num_threads() == threads
    np.testing.assert_array_equal(in_worker, in_main)


@pytest.mark.slow
def test_identical_programs_are_replayed_once_in_a_worker_process(exported, test_images, tmp_path):
    pte = exported("cortex-m4")
    twin = tmp_path / "twin.pte"
    twin.write_bytes(pte.read_bytes())
    images = test_images[0][:4]
    with reference.replays_in_background([pte, twin], images):
        assert len(reference._background) == 1
        from_worker = reference.reference_int8(twin, images)
    assert not reference._background
    assert np.array_equal(from_worker, reference.replay_int8(reference.parse_program(pte.read_bytes()), images))


def test_the_replay_takes_any_inputs_and_gives_every_output(exported, test_images):
    """The generic form: inputs as the program declares them, every output in its own dtype; for
    an RPS program the outputs are the dequantized int8 the classifier check uses."""
    pte = exported("cortex-m55")
    images = test_images[0][:3]
    (logits,) = reference.replay_many(pte, reference.rps_inputs(images))
    assert logits.shape == (3, 1, 3) and logits.dtype == np.float32
    int8 = reference.replay_int8(reference.parse_program(pte.read_bytes()), images)
    described = descriptor.read(pte)
    assert described.outputs[0].shape == (1, 3)
    assert not np.array_equal(logits.reshape(3, 3), int8.astype(np.float32))   # dequantized, not raw
    from tinyrps.infra.errors import UserError
    with pytest.raises(UserError, match="takes 1 inputs, 2 were given"):
        reference.replay(pte, [np.zeros((1, 1, 28, 28), np.float32)] * 2)



@pytest.mark.slow     # lowers a small network
def test_an_output_without_a_leading_axis_of_one_is_replayed_sample_by_sample():
    """A program whose output is [3] (no batch axis) is replayed one sample at a time, and the samples'
    outputs come back stacked, [N, 3], each the replay of its sample alone."""
    import torch
    from torch import nn

    class OneDimensional(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.fc = nn.Conv2d(1, 4, 3, stride=2), nn.Linear(4 * 13 * 13, 3)

        def forward(self, x):
            return self.fc(torch.relu(self.conv(x)).flatten(1)).reshape(3)
    torch.manual_seed(0)
    calibration = [(torch.rand(1, 1, 28, 28),) for _ in range(4)]
    program = cortex_m.lower(OneDimensional().eval(), (torch.zeros(1, 1, 28, 28),), calibration, "cortex-m55").program
    inputs = [np.stack([x.numpy() for (x,) in calibration])]
    assert not reference.batchable(reference.parse_program(program))
    (outputs,), (int8,) = reference.replay_many_with_int8(program, inputs)
    assert outputs.shape == int8.shape == (4, 3)
    for i, (x,) in enumerate(calibration):
        np.testing.assert_array_equal(outputs[i], reference.replay(program, [x.numpy()])[0])

@pytest.mark.slow     # replays a hundred images one at a time
def test_a_batch_replays_each_image_as_a_replay_of_it_alone(exported, data_dir, monkeypatch):
    """The batched replay (the memory plan scaled by the batch size) gives, bit for bit, what one
    replay per image gives: a full batch and a partial one, the classifier's int8 and the generic
    outputs. A program with an operator outside the list is replayed one image at a time."""
    import copy
    images = load_split(data_dir, "test")[0][:reference.BATCH + 7]
    for target in ("cortex-m55", "cortex-m4"):
        prog = reference.parse_program(exported(target).read_bytes())
        assert reference.batchable(prog)
        batched = reference.replay_int8(prog, images)
        batched_many = reference.replay_many_with_int8(prog, reference.rps_inputs(images[:9]))
        with monkeypatch.context() as alone:
            alone.setattr(reference, "batchable", lambda _prog: False)
            np.testing.assert_array_equal(batched, reference.replay_int8(prog, images))
            one_by_one = reference.replay_many_with_int8(prog, reference.rps_inputs(images[:9]))
        for got, expected in zip(batched_many, one_by_one):
            assert len(got) == len(expected) == 1
            np.testing.assert_array_equal(got[0], expected[0])
            assert got[0].shape == (9, 1, 3)
        other = copy.copy(prog)
        other.operators = prog.operators + [("cortex_m::quantized_add", "out")]
        assert not reference.batchable(other)


def path_without(tmp_path, *prefixes: str) -> str:
    """A PATH with every program of this one but those whose names start with one of `prefixes`."""
    import os
    shown = tmp_path / "bin"
    shown.mkdir()
    for folder in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(folder):
            continue
        for name in os.listdir(folder):
            link = shown / name
            if not name.startswith(prefixes) and not link.exists():
                link.symlink_to(os.path.join(folder, name))
    return str(shown)


@pytest.mark.slow     # a whole export in a fresh interpreter
def test_export_needs_neither_the_cross_toolchain_nor_qemu_and_measure_says_what_to_install(
        trained_run, exported, tmp_path):
    """Export is ahead of time only: with arm-none-eabi-* and qemu-system-* off PATH it writes the same
    program byte for byte; measuring it then asks for them in one line."""
    import os
    import shutil
    import subprocess
    import sys
    run = tmp_path / "run"
    shutil.copytree(trained_run, run, ignore=shutil.ignore_patterns("export"))
    env = {**os.environ, "PATH": path_without(tmp_path, "arm-none-eabi-", "qemu-system-")}
    assert shutil.which("arm-none-eabi-gcc", path=env["PATH"]) is None and shutil.which("qemu-system-arm", path=env["PATH"]) is None

    def tinyrps(*args):
        return subprocess.run([sys.executable, "-m", "tinyrps", *map(str, args)], capture_output=True, text=True,
                              env=env, timeout=600)
    done = tinyrps("export", "--run", run, "--target", "cortex-m55", "--quiet")
    assert done.returncode == 0, done.stderr[-3000:]
    pte = run / "export" / "cortex-m55.pte"
    assert pte.read_bytes() == exported("cortex-m55").read_bytes()
    refused = tinyrps("measure", "--model", pte)
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 2 and len(lines) == 1, refused.stderr[-3000:]
    assert "arm-none-eabi-gcc" in lines[0] and "qemu-system-arm" in lines[0] and "apt-get install" in lines[0], lines
