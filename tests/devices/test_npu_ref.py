"""npu-ref: the TOSA graph compiled for an Ethos-U program, run in the TOSA reference model."""
import shutil

import numpy as np
import pytest
import torch

from tinyrps.data import load_split
from tinyrps.devices import open_device
from tinyrps.reference.ethos_u import quantize
from tinyrps.infra.errors import UserError
from tinyrps.network.model import images_to_tensor

pytestmark = pytest.mark.slow     # the TOSA reference model on the test split, PT2E quantization


@pytest.fixture(scope="module")
def test_set(data_dir):
    return load_split(data_dir, "test")


@pytest.fixture(scope="module")
def npu_logits(exported, test_set):
    with open_device("npu-ref", exported("ethos-u85-128")) as device:
        return device.classify(test_set[0])


def test_npu_ref_agrees_with_the_int8_cpu_program(exported, trained_run, test_set, npu_logits):
    images, labels = test_set
    with open_device("executorch", exported("int8-xnnpack")) as cpu:
        cpu_predictions = cpu.classify(images).argmax(1)
    with open_device("eager", trained_run / "model.pt") as eager:
        eager_accuracy = (eager.classify(images).argmax(1) == labels).mean()
    assert npu_logits.shape == (len(images), 3) and npu_logits.dtype == np.float32
    assert (npu_logits.argmax(1) == cpu_predictions).mean() >= 0.99
    # int8 on the NPU costs at most a few points of the float model's accuracy
    assert (npu_logits.argmax(1) == labels).mean() >= eager_accuracy - 0.03


def test_eval_agreement_without_an_evaluated_int8_program(exported, test_set, npu_logits):
    """Without int8-xnnpack's predictions at hand, the family's check builds the int8 CPU reference itself."""
    from tinyrps.evaluate import EvalContext
    from tinyrps.reference.ethos_u import evaluate, int8_cpu_predictions
    images, labels = test_set
    pte = exported("ethos-u85-128")
    result = evaluate(EvalContext("ethos-u85-128", pte, images, labels, npu_logits, None, {}))
    assert result["agreement_with"].startswith("int8-xnnpack recipe") and result["agreement"] >= 0.99
    # the stand-in predicts what the int8-xnnpack program predicts
    with open_device("executorch", exported("int8-xnnpack")) as cpu:
        program_predictions = cpu.classify(images).argmax(1)
    assert (int8_cpu_predictions(pte, images) == program_predictions).mean() >= 0.99


def test_npu_ref_computes_the_quantized_model_to_the_last_step(exported, trained_run, test_set, npu_logits):
    """The Ethos-U recipe's own PT2E model on the CPU differs from the NPU graph by rounding only."""
    from executorch.backends.arm.quantizer import EthosUQuantizer, get_symmetric_quantization_config
    from tinyrps.hardware import descriptor
    from tinyrps.infra.artifacts.records import run_config
    from tinyrps.export.ethos_u import compile_spec
    from tinyrps.network.model import load_model
    from tinyrps.network.quantization import calibration_images, image_examples, pt2e_quantize
    pte = exported("ethos-u85-128")
    output_scale = descriptor.read(pte).info.quantization["output"]["scale"]
    spec = compile_spec("ethos-u85-128", "Ethos_U85_SYS_DRAM_Mid", "Dedicated_Sram", trained_run / "unused")
    quantizer = EthosUQuantizer(spec).set_global(get_symmetric_quantization_config(is_per_channel=True))
    examples = image_examples(calibration_images(run_config(trained_run)["data"]))
    module = pt2e_quantize(load_model(trained_run / "model.pt"), quantizer, examples, examples[0])
    with torch.no_grad():
        cpu = np.concatenate([module(x.unsqueeze(0)).numpy() for x in images_to_tensor(test_set[0])])
    steps = np.abs(npu_logits - cpu) / output_scale
    assert steps.max() <= 1.01
    assert (steps < 0.01).mean() >= 0.9


def test_stats_carry_vela_estimate(exported, test_set):
    from tinyrps import measure
    pte = exported("ethos-u85-128")
    vela = measure.measure(pte)["vela"]
    with open_device("npu-ref", pte) as device:
        device.classify(test_set[0][:2])
        stats = device.last_stats()
        assert "ethos-u85-128" in device.describe()
    assert stats["npu_estimate_ms"] == vela["inference_ms"] and stats["npu_cycles"] == vela["npu_cycles"]
    assert stats["reference_ms"] > 0


def test_input_quantization_matches_executorch_kernel(test_set):
    import executorch.exir  # noqa: F401  (registers the quantized_decomposed operators)
    params = {"scale": 0.0039043352007865906, "zero_point": -128, "qmin": -128, "qmax": 127}
    x = images_to_tensor(test_set[0])
    expected = torch.ops.quantized_decomposed.quantize_per_tensor(x, params["scale"], -128, -128, 127, torch.int8)
    assert np.array_equal(quantize(x.numpy(), params), expected.numpy())


def test_host_device_refuses_an_ethos_u_program(exported):
    with pytest.raises(UserError) as e:
        open_device("executorch", exported("ethos-u85-128"))
    assert "NPU" in str(e.value) and "npu-ref" in str(e.value)


def test_npu_ref_refuses_a_host_program(exported):
    with pytest.raises(UserError) as e:
        open_device("npu-ref", exported("int8-xnnpack"))
    assert "--device executorch" in str(e.value)


def copy_program(pte, folder):
    for path in (pte, pte.with_suffix(".json")):
        shutil.copy(path, folder / path.name)
    shutil.copytree(pte.parent / pte.stem, folder / pte.stem)
    return folder / pte.name


def test_npu_ref_runs_only_the_graph_compiled_for_the_program(exported, tmp_path):
    pte = copy_program(exported("ethos-u85-128"), tmp_path)
    with open_device("npu-ref", pte):
        pass
    tosa = tmp_path / pte.stem / "out.tosa"
    tosa.write_bytes(tosa.read_bytes() + b"\0")
    with pytest.raises(UserError, match="sha256"):
        open_device("npu-ref", pte)
    tosa.unlink()
    with pytest.raises(UserError, match="missing"):
        open_device("npu-ref", pte)
    pte.with_suffix(".json").unlink()
    with pytest.raises(UserError, match="descriptor"):
        open_device("npu-ref", pte)
