"""The native build of the runtime against the Python reference on a few hundred images,
through the `native` device and the eval hook that reports bit-exactness."""
from __future__ import annotations

import numpy as np
import pytest

from tinyrps.devices import open_device
from tinyrps.evaluate import EvalContext, family_check
from fixture_cache import reference_int8  # (tests/, on the path from the top conftest)
from tinyrps.reference.cortex_m import compare_int8


def final_dequantize(pte) -> tuple:
    """(scale, zero_point) of the program's last dequantize_per_tensor call."""
    from executorch.exir._serialize._program import deserialize_pte_binary
    plan = deserialize_pte_binary(pte.read_bytes()).program.execution_plan[0]
    call = plan.chains[0].instructions[-1].instr_args
    assert plan.operators[call.op_index].name == "cortex_m::dequantize_per_tensor"
    return plan.values[call.args[1]].val.double_val, plan.values[call.args[2]].val.int_val


@pytest.mark.slow     # the full network on 300 images, and its Python reference
def test_native_device_is_bit_exact_on_300_images(m55_pte, images):
    reference = reference_int8(m55_pte, images)
    with open_device("native", m55_pte) as device:
        logits = np.concatenate([device.classify(images[i:i + 50]) for i in range(0, len(images), 50)])
        result = family_check("cortex-m55")(EvalContext("cortex-m55", m55_pte, images, None, logits,
                                                                  device, {}))
        assert device.int8_outputs.shape == (len(images), 3)
        np.testing.assert_array_equal(device.last_int8, reference[-50:])
    assert result == {"bit_exact": True, "mismatches": 0, "images": len(images), "max_abs_diff_lsb": 0,
                      "reference": "ExecuTorch cortex_m Python operators"}
    # the logits are the program's own dequantize of those int8 values, in float32
    scale, zero_point = final_dequantize(m55_pte)
    expected = (reference.astype(np.float32) - np.float32(zero_point)) * np.float32(scale)
    np.testing.assert_array_equal(logits, expected)
    assert len(np.unique(logits.argmax(1))) == 3


def test_bias_form_of_the_linear_layers_is_bit_exact(m4_pte, images, native, native_tool, tmp_path):
    int8, _ = native.run(native_tool, m4_pte, images[:100], tmp_path)
    np.testing.assert_array_equal(int8, reference_int8(m4_pte, images[:100]))


def test_comparison_counts_every_mismatching_image():
    reference = np.zeros((4, 3), np.int8)
    device = reference.copy()
    device[1, 2] = 1
    device[3, 0] = -2
    assert compare_int8(device, reference) == {"bit_exact": False, "mismatches": 2, "images": 4,
                                               "max_abs_diff_lsb": 2,
                                               "reference": "ExecuTorch cortex_m Python operators"}
    assert compare_int8(device[:3], reference)["bit_exact"] is False
