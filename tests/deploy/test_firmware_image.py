"""The sources of a program's own firmware image: only its operators and the kernel variants its calls bind."""
from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pytest

from tinyrps.deploy.firmware_image import image_tree
from tinyrps.deploy.selection import variant_rows
from tinyrps.infra.errors import UserError
from tinyrps.measure.firmware import same_run
from tinyrps.firmware.sources import firmware_dir

OPERATORS = ["cortex_m::quantize_per_tensor", "cortex_m::quantized_depthwise_conv2d", "cortex_m::quantized_linear",
             "cortex_m::dequantize_per_tensor"]


def layer(op, kernels, variant):
    return {"op": op, "kernels": kernels, "variant": variant}


@pytest.fixture(scope="module")
def tree():
    layers = [layer(OPERATORS[0], "mve", 0), layer(OPERATORS[1], "mve", 0), layer(OPERATORS[1], "dsp", 3),
              layer(OPERATORS[2], "c", 3), layer(OPERATORS[3], "mve", 0)]
    return image_tree(firmware_dir(), OPERATORS, layers, "mve")


def selected(tree, kind):
    """The operators (TRT_WITH_) or variants (TRT_USES_) the image's ops/operator_selection.h names."""
    return re.findall(rf"^#define TRT_{kind}_(\w+) 1$", tree["src/ops/operator_selection.h"], re.M)


def test_only_the_programs_operators_are_listed(tree):
    assert tree["src/ops/operators.def"] == (firmware_dir() / "src" / "ops" / "operators.def").read_text()
    assert selected(tree, "WITH") == ["quantize_per_tensor", "dequantize_per_tensor", "quantized_depthwise_conv2d",
                                      "quantized_depthwise_conv2d_nhwc", "quantized_linear"]
    assert "#define TRT_SELECTION 1" in tree["src/ops/operator_selection.h"]
    assert "src/ops/softmax.c" not in tree and "src/ops/conv2d.c" not in tree
    assert "src/ops/conv_common.c" in tree and "src/ops/operator_table.c" in tree     # shared, no operator
    # the kernels and the board's code stay: the link (--gc-sections) drops what no variant list refers to
    assert "src/kernels/c/softmax.c" in tree and "board/common/firmware.c" in tree and "CMakeLists.txt" in tree


def test_only_the_bound_variants_stay_in_the_lists(tree):
    source = firmware_dir() / "src" / "ops"
    for rel in ("depthwise_conv2d.c", "linear.c", "quantize.c"):     # the sources as they are
        assert tree[f"src/ops/{rel}"] == (source / rel).read_text()
    every = variant_rows((source / "depthwise_conv2d.c").read_text(), "quantized_depthwise_conv2d", "ops")
    linear = variant_rows((source / "linear.c").read_text(), "quantized_linear", "ops")
    quantize = variant_rows((source / "quantize.c").read_text(), "quantize_per_tensor", "ops")
    used = set(selected(tree, "USES"))
    assert [row for row in every if row[1] in used] == [every[0], every[3]] and len(every) > 4
    assert [isa for isa, name in linear if name in used] == ["c"]
    assert [isa for isa, name in quantize if name in used] == ["mve"]


def test_a_variant_the_sources_do_not_list_so_is_refused():
    with pytest.raises(UserError, match="variant 7"):
        image_tree(firmware_dir(), OPERATORS, [layer(OPERATORS[2], "mve", 7)], "mve")


def run(instructions, kernels="mve", out=(1, 2)):
    return SimpleNamespace(int8=np.array(out), outputs=[np.array(out, np.float32)], outputs_int8=[np.array(out)],
                           instructions=np.array(instructions), arena_needed=100,
                           layers=[{"op": "cortex_m::quantized_linear", "kernels": kernels, "macs": 10,
                                    "instructions": instructions[0]}])


def test_an_image_that_runs_the_program_otherwise_is_refused():
    same_run(run([5]), run([5]), "mps3-an547")
    for other in (run([6]), run([5], kernels="c"), run([5], out=(1, 3))):
        with pytest.raises(UserError, match="runs it otherwise than the generic image"):
            same_run(run([5]), other, "mps3-an547")


def test_an_integer_output_is_compared_itself():
    """A program exported with integer outputs has no raw int8 values beside them: its outputs are compared."""
    def integer(values):
        return SimpleNamespace(outputs=[np.array(values, np.int8)], outputs_int8=[None], instructions=np.array([5]),
                               arena_needed=100, layers=run([5]).layers)
    same_run(integer([1, 2]), integer([1, 2]), "mps3-an547")
    with pytest.raises(UserError, match="runs it otherwise than the generic image"):
        same_run(integer([1, 2]), integer([1, 3]), "mps3-an547")
