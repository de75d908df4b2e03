"""MLPerf Tiny's four reference networks through the whole Cortex-M path: exported for the Cortex-M55,
M33 and M4 by the export driver, then run on the C runtime natively and on each core's emulated board,
bit-exact with ExecuTorch's reference operators replaying the same program on the same 64 random inputs.

Programs, reference outputs and board outputs are kept in the fixture cache (keyed by what makes them),
so a second run of the suite pays only for what changed."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fixture_cache  # noqa: E402

from tinyrps.devtools import zoo  # noqa: E402

pytestmark = pytest.mark.slow     # exports four networks for three cores, QEMU runs over 64 inputs
CORES = ("cortex-m55", "cortex-m33", "cortex-m4")
CASES = [(name, core) for name in zoo.NETWORKS for core in CORES]


@pytest.fixture(scope="session")
def network_program(tmp_path_factory):
    """network_program(name, core) -> the exported .pte (and its descriptor), kept across runs."""
    key = fixture_cache.fixture_key("zoo-export", zoo.DEFAULT_SEED,
                                    modules=["tinyrps.devtools.zoo", *fixture_cache.package_modules("tinyrps.export")])
    done = {}

    def get(name: str, core: str) -> Path:
        if (name, core) not in done:
            def build(out: Path) -> None:
                zoo.export_network(name, core, out)
            folder = fixture_cache.cached_folder(f"zoo-{name}-{core}", key, build,
                                                 tmp_path_factory.mktemp(f"zoo-{name}-{core}"))
            done[name, core] = folder / f"{name}-{core}.pte"
        return done[name, core]
    return get


@pytest.fixture(scope="session")
def reference_outputs(tmp_path_factory):
    """reference_outputs(pte, name) -> (outputs, int8) of the .pte replay on the network's 64 inputs,
    kept across runs by the program's bytes (the M33 and M4 programs are the same bytes)."""
    from tinyrps.infra.artifacts.files import sha256_file
    from tinyrps.reference.cortex_m import replay_many_with_int8
    done = {}

    def get(pte: Path, name: str):
        digest = sha256_file(pte)
        if digest not in done:
            key = fixture_cache.fixture_key("zoo-reference", digest, zoo.BIT_EXACT_INPUTS, zoo.BIT_EXACT_SEED,
                                            modules=["tinyrps.reference.cortex_m", "tinyrps.devtools.zoo"])

            def build(out: Path) -> None:
                outputs, int8 = replay_many_with_int8(pte, zoo.bit_exact_inputs(name))
                np.savez(out / "reference.npz", **{f"o{k}": o for k, o in enumerate(outputs)},
                         **{f"q{k}": q for k, q in enumerate(int8) if q is not None})
            folder = fixture_cache.cached_folder("zoo-reference", key, build, tmp_path_factory.mktemp("zoo-ref"))
            with np.load(folder / "reference.npz") as f:
                count = len([k for k in f.files if k.startswith("o")])
                done[digest] = ([f[f"o{k}"] for k in range(count)],
                                [f[f"q{k}"] if f"q{k}" in f.files else None for k in range(count)])
        return done[digest]
    return get


def assert_bit_exact(result, reference, where: str) -> None:
    outputs, int8 = reference
    assert len(result.outputs) == len(outputs), where
    for k, (got, want) in enumerate(zip(result.outputs, outputs)):
        assert got.shape == want.shape and got.dtype == want.dtype, (where, k, got.shape, want.shape)
        differing = int(np.count_nonzero(got.view(np.uint8) != want.view(np.uint8)))
        assert differing == 0, f"{where}: output {k} differs from the reference in {differing} bytes"
        if int8[k] is not None:
            np.testing.assert_array_equal(result.int8[k], int8[k], err_msg=f"{where}: output {k}'s int8")


@pytest.mark.parametrize("name,core", CASES)
def test_each_network_is_bit_exact_natively(name, core, network_program, reference_outputs):
    from tinyrps.devices import open_device
    pte = network_program(name, core)
    with open_device("native", pte) as device:
        result = device.run_batch(zoo.bit_exact_inputs(name))
    assert_bit_exact(result, reference_outputs(pte, name), f"{name} for {core} on native")


@pytest.mark.parametrize("name,core", CASES)
def test_each_network_is_bit_exact_on_its_cores_board(name, core, network_program, reference_outputs,
                                                       firmware_elf_path):
    from tinyrps.devices import open_device
    pte = network_program(name, core)
    with open_device("mcu", pte, transport="batch") as device:
        result = device.run_batch(zoo.bit_exact_inputs(name))
        board = device.board.name
    assert result.instructions is not None and (result.instructions > 0).all()
    assert_bit_exact(result, reference_outputs(pte, name), f"{name} for {core} on {board}")
