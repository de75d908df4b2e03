"""Your own model through the whole path: `tinyrps export --module FILE.py:NAME`, `tinyrps run`,
`tinyrps bench --model`, and every mistake on the way as one line with exit code 2."""
from __future__ import annotations

import json

import numpy as np
import pytest

MODEL = '''
import torch
from torch import nn


class Net(nn.Module):
    """A residual-free little network on a 3-channel 12x12 input: conv, pool, linear."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(7)
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                                  nn.Linear(8 * 6 * 6, 5))

    def forward(self, x):
        return self.body(x)


def build():
    return Net()


not_a_model = 42


class Soft(nn.Module):
    """A cumulative sum has no Cortex-M operator: the lowering leaves it in float, and the runtime has none."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return torch.cumsum(self.fc(x), 1)
'''


@pytest.fixture
def model_file(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text(MODEL)
    return path


def one_line(res, *needles):
    assert res.returncode == 2, (res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.mark.parametrize("args,needle", [
    (["--module", "nocolon"], "is not FILE.py:NAME"),
    (["--module", "missing.py:Net"], "no Python file missing.py"),
    (["--input-shape", "1,3,x"], "is not a shape"),
    (["--input-shape", "1,3,12,12", "--input-dtype", "float16"], "--input-dtype float16 is not one of"),
    (["--input-shape", "1,3,12,12", "--input-shape", "1,4", "--input-dtype", "float32", "--input-dtype", "int8",
      "--input-dtype", "int8"], "3 --input-dtype for 2 --input-shape"),
    (["--no-calibration"], "--module needs --calibration"),
])
def test_bad_module_arguments_are_one_line(cli, model_file, tmp_path, args, needle):
    base = {"--module": f"{model_file}:Net", "--input-shape": "1,3,12,12", "--calibration": "random"}
    given = dict(zip(args[::2], args[1::2])) if "--no-calibration" not in args else {}
    if "--no-calibration" in args:
        base.pop("--calibration")
    command = ["export", "--target", "cortex-m55", "--out", tmp_path / "out"]
    for flag, value in base.items():
        if flag not in given:
            command += [flag, value]
    command += [a for a in args if a != "--no-calibration"]
    one_line(cli(*command), needle)


@pytest.mark.parametrize("name,needle", [("Missing", "has no 'Missing' (its models: Net, Soft)"),
                                         ("not_a_model", "is not an nn.Module")])
def test_a_name_that_is_not_a_model_is_one_line(cli, model_file, tmp_path, name, needle):
    one_line(cli("export", "--module", f"{model_file}:{name}", "--input-shape", "1,3,12,12", "--calibration",
                 "random", "--target", "cortex-m55", "--out", tmp_path), needle)


def test_inputs_the_model_does_not_take_are_one_line(cli, model_file, tmp_path):
    one_line(cli("export", "--module", f"{model_file}:Net", "--input-shape", "1,3,10,10", "--calibration", "random",
                 "--target", "cortex-m55", "--out", tmp_path), "does not take inputs of shape 1x3x10x10")


@pytest.mark.parametrize("arrays,needle", [
    ({"images": np.zeros((4, 3, 12, 12), np.float32), "extra": np.zeros(2)}, "has no array input0"),
    ({"input0": np.zeros((4, 3, 11, 12), np.float32)}, "has shape [4, 3, 11, 12], not N examples of [1, 3, 12, 12]"),
    ({"input0": np.zeros((4, 3, 12, 12), np.float64)}, "input0 is float64, the input is float32"),
])
def test_a_calibration_file_that_does_not_match_is_one_line(cli, model_file, tmp_path, arrays, needle):
    calibration = tmp_path / "calibration.npz"
    np.savez(calibration, **arrays)
    one_line(cli("export", "--module", f"{model_file}:Net", "--input-shape", "1,3,12,12", "--calibration",
                 calibration, "--target", "cortex-m55", "--out", tmp_path / "out"), needle)


def test_run_refuses_inputs_that_do_not_match(cli, exported, tmp_path):
    inputs = tmp_path / "in.npz"
    np.savez(inputs, input0=np.zeros((2, 3), np.float32))
    one_line(cli("run", "--model", exported("cortex-m55"), "--inputs", inputs, "--out", tmp_path / "o.npz",
                 "--device", "native"), "input 0 of cortex-m55.pte is float32 [N, 1, 1, 28, 28]")
    (tmp_path / "bad.npz").write_bytes(b"garbage")
    one_line(cli("run", "--model", exported("cortex-m55"), "--inputs", tmp_path / "bad.npz", "--out",
                 tmp_path / "o.npz", "--device", "native"), "is not a readable .npz file")
    one_line(cli("run", "--model", exported("cortex-m55"), "--inputs", inputs, "--out", tmp_path, "--device",
                 "native"), "is a folder: give a file name")


@pytest.mark.slow     # lowers a network, builds and runs the native runtime
def test_your_model_exported_run_and_benchmarked(cli, model_file, tmp_path):
    out = tmp_path / "programs"
    calibration = tmp_path / "calibration.npz"
    rng = np.random.default_rng(1)
    np.savez(calibration, input0=rng.standard_normal((16, 3, 12, 12)).astype(np.float32))
    res = cli("export", "--module", f"{model_file}:build", "--input-shape", "1,3,12,12", "--calibration", calibration,
              "--target", "cortex-m55", "--out", out, "--name", "mine", timeout=600)
    assert res.returncode == 0, res.stderr
    pte = out / "mine.pte"
    assert res.stdout.strip() == str(pte)
    from tinyrps.hardware import descriptor
    d = descriptor.read(pte, pte.read_bytes())
    assert d.origin.module == "mine.py:build" and d.labels is None and d.info.core == "cortex-m55"
    assert [(t.dtype, t.shape) for t in d.inputs] == [("float32", (1, 3, 12, 12))]
    assert [(t.dtype, t.shape) for t in d.outputs] == [("float32", (1, 5))]
    assert "16 examples of calibration.npz" in d.origin.calibration

    samples = rng.standard_normal((6, 1, 3, 12, 12)).astype(np.float32)
    inputs = tmp_path / "in.npz"
    np.savez(inputs, input0=samples)
    res = cli("run", "--model", pte, "--inputs", inputs, "--out", tmp_path / "out.npz", "--device", "native", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["samples"] == 6
    from tinyrps.reference.cortex_m import replay_many_with_int8
    (want,), (want_q,) = replay_many_with_int8(pte, [samples])
    with np.load(tmp_path / "out.npz") as got:
        np.testing.assert_array_equal(got["output0"], want)
        np.testing.assert_array_equal(got["output0_int8"], want_q)

    res = cli("bench", "--model", pte, "--device", "native", "--runs", "3", "--json")
    assert res.returncode == 0, res.stderr
    (entry,) = json.loads(res.stdout)["programs"].values()
    assert entry["runs"] == 3 and entry["latency_ms"] > 0


@pytest.mark.slow     # lowers a network
def test_an_operator_the_backend_does_not_lower_is_named(cli, model_file, tmp_path):
    one_line(cli("export", "--module", f"{model_file}:Soft", "--input-shape", "1,4", "--calibration", "random",
                 "--target", "cortex-m55", "--out", tmp_path, timeout=600), "aten::cumsum.out(self=float32[1, 4], dim=1, dtype=None)",
             "not CMSIS-NN operators")
