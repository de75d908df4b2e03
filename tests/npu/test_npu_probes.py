"""Operator probes: small modules exported for five NPU configurations, their command streams run on
the model bit-exact with the TOSA reference model on random int8 inputs. Different configurations
give different block sizes, micro-blocks, weight orders and, on the U85-1024, four cores."""
import inspect
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import fixture_cache  # noqa: E402
import probe_modules  # noqa: E402
import probe_modules_ops  # noqa: E402

PROBES = {**probe_modules.PROBES, **probe_modules_ops.PROBES}
U85_PROBES = {**probe_modules.U85_PROBES, **probe_modules_ops.U85_PROBES}

pytestmark = pytest.mark.slow     # each probe is an export (a few seconds) the first time

TARGETS = ["ethos-u55-64", "ethos-u55-128", "ethos-u55-256", "ethos-u85-128", "ethos-u85-1024"]
INPUTS = 8
# what each probe must make the NPU do (besides the layout copies around it)
OPERATIONS = {"conv-pad-stride": "CONV", "conv-relu-5x5": "CONV", "depthwise": "DEPTHWISE",
              "max-pool": "POOL MAX", "avg-pool": "POOL AVERAGE", "avg-pool-padded": "POOL AVERAGE",
              "add": "ELEMENTWISE ADD", "mul": "ELEMENTWISE MUL", "sigmoid": "DMA", "tanh": "DMA",
              "transpose-conv": "CONV", "linear": "CONV", "flip": "POOL SUM",
              "abs": "ELEMENTWISE ABS", "softsign": "ELEMENTWISE ABS", "minimum": "ELEMENTWISE MIN",
              "mean-spatial": "POOL REDUCE_SUM", "sum-channels": "POOL REDUCE_SUM", "softmax": "ELEMENTWISE SUB",
              "hardswish": "DMA", "leaky-relu": "DMA", "where": "ELEMENTWISE CMP_GT",
              "where-ge": "ELEMENTWISE CMP_GE", "where-ne": "ELEMENTWISE NOT", "where-xor": "ELEMENTWISE XOR",
              "resize-nearest": "RESIZE NEAREST", "upsample-bilinear": "RESIZE BILINEAR",
              "resize-bilinear-corners": "RESIZE BILINEAR"}
CASES = [(name, target) for name in PROBES for target in TARGETS] + \
        [(name, target) for name in U85_PROBES for target in TARGETS if target.startswith("ethos-u85")]


def probe_program(name: str, target: str, tmp_path_factory) -> Path:
    """The probe's program for `target`, exported once (kept in the fixture cache, by the file
    that defines the probe's module)."""
    module, shape = {**PROBES, **U85_PROBES}[name]
    key = fixture_cache.fixture_key("npu-probe", name, target,
                                    modules=fixture_cache.package_modules("tinyrps.export"),
                                    files=[Path(inspect.getsourcefile(module))])

    def build(out: Path) -> None:
        import torch
        from tinyrps.hardware.descriptor import Origin
        from tinyrps.export import export_model
        generator = torch.Generator().manual_seed(0)
        calibration = [(torch.rand(shape, generator=generator) * 4 - 2,) for _ in range(8)]
        origin = Origin(module=f"{Path(inspect.getsourcefile(module)).name}:{module.__name__}",
                        calibration="8 random examples")
        export_model(module(), calibration[0], calibration, target, out, origin)
    folder = fixture_cache.cached_folder(f"npu-probe-{name}-{target}", key, build,
                                         tmp_path_factory.mktemp(f"probe-{name}-{target}"))
    return folder / f"{target}.pte"


@pytest.mark.parametrize("name,target", CASES)
def test_probe_is_bit_exact_with_the_tosa_reference(name, target, tmp_path_factory):
    from tinyrps.npu import load
    from tinyrps.reference.ethos_u import graph_input_shape, run_graph
    pte = probe_program(name, target, tmp_path_factory)
    tosa = (pte.parent / pte.stem / "out.tosa").read_bytes()
    shape = graph_input_shape(tosa, pte)
    (program,) = load(pte.read_bytes(), pte.name)
    assert OPERATIONS[name] in {step["operation"] for step in program.report()}
    rng = np.random.default_rng(0)
    for _ in range(INPUTS):
        x = rng.integers(-128, 128, size=shape, dtype=np.int8)
        (ours,) = program.run([x.reshape(-1)])
        np.testing.assert_array_equal(ours, run_graph(tosa, [x])[0].reshape(-1))
