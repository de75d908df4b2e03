import json

import numpy as np
import pytest

from tinyrps.infra.artifacts.files import sha256_file
from tinyrps.data import load_split
from tinyrps.devices import open_device
from tinyrps.infra.errors import UserError
from tinyrps.export import export_target

HOST_TARGETS = ("fp32", "fp32-xnnpack", "int8-xnnpack")


@pytest.fixture(scope="module")
def test_split(data_dir):
    return load_split(data_dir, "test")


@pytest.fixture(scope="module")
def eager_logits(trained_run, test_split):
    with open_device("eager", trained_run / "model.pt") as eager:
        return eager.classify(test_split[0])


@pytest.mark.parametrize("target", HOST_TARGETS)
def test_program_round_trips_through_the_runtime_and_agrees_with_eager(target, exported, test_split, eager_logits):
    pte = exported(target)
    with open_device("executorch", pte) as device:
        logits = device.classify(test_split[0])
    assert logits.shape == eager_logits.shape and logits.dtype == np.float32
    agreement = (logits.argmax(1) == eager_logits.argmax(1)).mean()
    if target.startswith("fp32"):
        assert np.abs(logits - eager_logits).max() < 1e-3
        assert agreement == 1.0
    else:
        assert agreement >= 0.97


@pytest.mark.parametrize("target", HOST_TARGETS)
def test_the_descriptor_describes_the_program(target, exported, trained_run):
    from tinyrps.hardware import descriptor
    pte = exported(target)
    d = descriptor.read(pte, pte.read_bytes())
    assert (d.target, d.family) == (target, "cpu")
    assert d.labels == ("rock", "paper", "scissors")
    assert [(t.dtype, t.shape, t.convention) for t in d.inputs] == [("float32", (1, 1, 28, 28), "uint8 image / 255")]
    assert [(t.dtype, t.shape) for t in d.outputs] == [("float32", (1, 3))]
    assert d.size_bytes == pte.stat().st_size and d.sha256 == sha256_file(pte)
    assert d.origin.checkpoint_sha256 == sha256_file(trained_run / "model.pt")
    assert d.versions["executorch"].startswith("1.5.1") and d.versions["torch"].startswith("2.13.0")
    assert json.loads(pte.with_suffix(".json").read_text())["descriptor_version"] == descriptor.DESCRIPTOR_VERSION


def test_int8_program_is_small_and_fully_delegated(exported):
    from tinyrps.hardware import descriptor
    d = descriptor.read(exported("int8-xnnpack"))
    assert d.size_bytes <= 450_000
    assert d.info.delegation["subgraphs"] == 1 and d.info.delegation["cpu_ops"] == []


def test_export_leaves_no_temporary_files(exported):
    export_dir = exported("fp32").parent
    assert not [p for p in export_dir.iterdir() if p.name.startswith(".") or p.name.endswith(".tmp")]


def test_unknown_target_lists_the_valid_ones(trained_run):
    with pytest.raises(UserError, match="valid targets: fp32, fp32-xnnpack, int8-xnnpack"):
        export_target(trained_run, "fp64")


def test_export_without_checkpoint_says_how_to_train(tmp_path):
    with pytest.raises(UserError, match="tinyrps train"):
        export_target(tmp_path, "fp32")


def test_failed_build_keeps_the_previous_program(trained_run, exported, monkeypatch):
    pte = exported("fp32-xnnpack")
    before = pte.read_bytes()
    from tinyrps.export import cpu

    def broken(target, ctx):
        raise RuntimeError("lowering failed")
    monkeypatch.setattr(cpu, "build", broken)
    with pytest.raises(RuntimeError):
        export_target(trained_run, "fp32-xnnpack")
    assert pte.read_bytes() == before
    assert not [p for p in pte.parent.iterdir() if p.name.startswith(".")]
