"""The npu device runs the command stream of tinyrps's own Ethos-U programs bit-exact with the TOSA
reference model (npu-ref) on the test images, and reports what it executed."""
import json

import numpy as np
import pytest

from tinyrps.hardware import descriptor
from tinyrps.data import load_split
from tinyrps.devices import default_device, open_device
from tinyrps.hardware.pte import read_program
from tinyrps.reference.ethos_u import (graph_input_shape, images_to_float, io_quantization, quantize, read_tosa,
                                       run_graph)

pytestmark = pytest.mark.slow     # the TOSA reference model on the test split

TARGETS = ["ethos-u55-128", "ethos-u85-128"]


def tosa_int8(pte, images) -> np.ndarray:
    """The TOSA reference model's int8 outputs of the graph compiled into `pte`."""
    program = read_program(pte)
    tosa = read_tosa(pte, descriptor.read(pte, program))
    shape = graph_input_shape(tosa, pte)
    return run_graph(tosa, [q.reshape(shape) for q in quantize(images_to_float(images),
                                                                io_quantization(program)["input"])])


@pytest.mark.parametrize("target", TARGETS)
def test_the_command_stream_is_bit_exact_with_the_tosa_reference(exported, data_dir, target):
    images, _ = load_split(data_dir, "test")
    pte = exported(target)
    assert default_device(pte) == "npu"
    with open_device("npu", pte) as npu, open_device("npu-ref", pte) as reference:
        logits = npu.classify(images)
        ours = npu.int8_outputs
        np.testing.assert_array_equal(logits, reference.classify(images))
    assert ours.shape == (len(images), 3)
    np.testing.assert_array_equal(ours, tosa_int8(pte, images))


@pytest.mark.parametrize("target,convolutions,pools", [("ethos-u55-128", 7, 73), ("ethos-u85-128", 6, 2)])
def test_the_device_reports_what_it_executed(exported, target, convolutions, pools):
    with open_device("npu", exported(target)) as npu:
        layers = npu.layers()
        stats = npu.last_stats()
    kinds = [layer["operation"] for layer in layers]
    assert kinds.count("CONV") == convolutions and sum(k.startswith("POOL") for k in kinds) == pools
    # the network's multiply-accumulates: conv 1->16, 16->32, 32->64 (as slices), FC 3136->128, 128->3
    conv_macs = sum(layer["macs"] for layer in layers if layer["operation"] == "CONV")
    assert conv_macs == 28 * 28 * 16 * 9 + 28 * 28 * 32 * 16 * 9 + 14 * 14 * 64 * 32 * 9 + 3136 * 128 + 128 * 3
    assert stats["npu_macs"] >= conv_macs and stats["npu_dma_bytes"] > 10_000


def test_eval_has_the_npu_rows_bit_exact_column(cli, trained_run, exported):
    for target in TARGETS:
        exported(target)
    res = cli("eval", "--run", trained_run, "--json", *[a for t in TARGETS for a in ("--program", t)])
    assert res.returncode == 0, res.stderr
    programs = json.loads(res.stdout)["programs"]
    for target in TARGETS:
        assert programs[target]["device"] == "npu"
        assert programs[target]["bit_exact"] is True and programs[target]["mismatches"] == 0
        assert programs[target]["reference"] == "the TOSA reference model (npu-ref)"


@pytest.mark.parametrize("target", TARGETS)
def test_run_takes_the_programs_tensors_on_both_devices(cli, exported, tmp_path, target):
    pte = exported(target)
    x = np.random.default_rng(3).uniform(0, 1, (4, 1, 1, 28, 28)).astype(np.float32)
    np.savez(tmp_path / "in.npz", input0=x)
    outputs = {}
    for device in ("npu", "npu-ref"):
        res = cli("run", "--model", pte, "--inputs", tmp_path / "in.npz", "--out", tmp_path / f"{device}.npz",
                  "--device", device)
        assert res.returncode == 0, res.stderr
        outputs[device] = np.load(tmp_path / f"{device}.npz")
    assert outputs["npu"]["output0_int8"].shape == (4, 1, 3)
    for key in ("output0", "output0_int8"):
        np.testing.assert_array_equal(outputs["npu"][key], outputs["npu-ref"][key])
    with open_device("npu", pte) as npu:      # the same as classifying the images x * 255
        images = np.rint(x[:, 0, 0] * 255).astype(np.uint8)
        np.testing.assert_allclose(npu.classify(images), outputs["npu"]["output0"][:, 0], atol=0.2)
