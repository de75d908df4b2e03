"""Fixtures of the firmware runtime tests: the native builds, exported Cortex-M programs, images.

The builds come from `tinyrps.firmware.build_firmware`, as users get them; a missing
cmake or compiler makes the fixture fail with the install command (never a skip).
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

# Fresh images (not the training or test split) for bit-exactness checks.
IMAGE_SEED = 11


@pytest.fixture(scope="session")
def native_build():
    from tinyrps.firmware import build_firmware
    return build_firmware("native")


@pytest.fixture(scope="session")
def asan_build():
    from tinyrps.firmware import build_firmware
    return build_firmware("native-asan")


@pytest.fixture(scope="session")
def native_tool(native_build) -> Path:
    return native_build.tool("tinyrps-native")


@pytest.fixture(scope="session")
def native_dsp_tool(native_build) -> Path:
    """The runtime with its DSP kernels, on the portable model of the DSP instructions."""
    return native_build.tool("tinyrps-native-dsp")


@pytest.fixture(scope="session")
def m55_pte(exported) -> Path:
    return exported("cortex-m55")


@pytest.fixture(scope="session")
def m4_pte(exported) -> Path:
    return exported("cortex-m4")


@pytest.fixture(scope="session")
def images() -> np.ndarray:
    """300 uint8 28x28 images of all three letters."""
    from tinyrps.data import make_split
    return make_split("test", 100, IMAGE_SEED)[0]


@pytest.fixture(scope="session")
def generic_pte(tmp_path_factory):
    """generic_pte(name, core) -> Path of a program of generic_programs.PROGRAMS for a core (cortex-m55, -m33,
    -m4), exported once (and kept across runs)."""
    import sys
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import fixture_cache
    import generic_programs
    cores = ("cortex-m55", "cortex-m33", "cortex-m4")
    key = fixture_cache.fixture_key("generic-programs", sorted(generic_programs.PROGRAMS), cores,
                                    files=[Path(generic_programs.__file__)])

    def build(out: Path) -> None:
        for name in generic_programs.PROGRAMS:
            for core in cores:
                (out / f"{name}-{core}.pte").write_bytes(generic_programs.export(name, core))
    folder = fixture_cache.cached_folder("generic-programs", key, build, tmp_path_factory.mktemp("generic"))
    return lambda name, core: folder / f"{name}-{core}.pte"


class NativeTools:
    """Running the native firmware tools (handed to tests by the `native` fixture)."""

    @staticmethod
    def tool(tool: Path, *args, check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run([str(tool), *map(str, args)], capture_output=True, text=True, timeout=120)
        if check and result.returncode != 0:
            raise AssertionError(f"{tool.name} {' '.join(map(str, args))} exited {result.returncode}: {result.stderr}")
        return result

    @staticmethod
    def run(tool: Path, pte: Path, images: np.ndarray, work: Path) -> tuple:
        """int8 outputs [N, n] and float32 logits [N, n] of `tinyrps-native infer` (the image classifier's
        convenience, trt_infer)."""
        images_file, out_file = work / "images.u8", work / "out.bin"
        np.ascontiguousarray(images, np.uint8).tofile(images_file)
        summary = json.loads(NativeTools.tool(tool, "infer", pte, images_file, out_file).stdout)
        n, n_out = summary["images"], summary["outputs"]
        raw = out_file.read_bytes()
        assert len(raw) == n * n_out * 5
        int8 = np.frombuffer(raw, np.int8, n * n_out).reshape(n, n_out)
        logits = np.frombuffer(raw, "<f4", n * n_out, offset=n * n_out).reshape(n, n_out)
        return int8, logits


    @staticmethod
    def layers(tool: Path, pte: Path, images: np.ndarray, work: Path) -> tuple:
        """`tinyrps-native layers` on images as the classifier's float32 input (x / 255): its summary and
        the bytes it wrote."""
        samples, out = work / "samples.bin", work / "layers.bin"
        (np.ascontiguousarray(images, np.uint8).astype(np.float32) / np.float32(255)).tofile(samples)
        summary = json.loads(NativeTools.tool(tool, "layers", pte, samples, out).stdout)
        return summary, out.read_bytes()

    @staticmethod
    def layer_mismatches(tool: Path, pte: Path, images: np.ndarray, work: Path, reference_layers) -> list:
        """'image i: call k operator (variant) differs in n bytes' for every kernel call of the native run
        that differs from `reference_layers(pte, image)` (the reference's (operator, output bytes) per call)."""
        summary, raw = NativeTools.layers(tool, pte, images, work)
        kernels = json.loads(NativeTools.tool(tool, "info", pte).stdout)["kernels"]
        found, pos = [], 0
        for i, image in enumerate(images):
            for k, (call, (name, expected)) in enumerate(zip(summary["calls"], reference_layers(pte, image))):
                assert call["name"] == name
                got = np.frombuffer(raw[pos:pos + call["bytes"]], np.uint8)
                pos += call["bytes"]
                differing = int(np.count_nonzero(got != np.frombuffer(expected, np.uint8)))
                if differing:
                    found.append(f"image {i}: call {k} {name} ({kernels[k]}) differs in {differing} bytes")
        assert pos == len(raw)
        return found


@pytest.fixture(scope="session")
def native() -> NativeTools:
    return NativeTools()
