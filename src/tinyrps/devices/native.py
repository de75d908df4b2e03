"""The firmware's C runtime built for this host: a Cortex-M .pte run by `tinyrps-native`.

Same source, same arithmetic as the firmware on the Cortex-M55, without QEMU:
each classify call writes the images to a file and runs the tool once on all of
them. The int8 outputs (before the program's final dequantize) are kept for the
bit-exactness check: `last_int8` for the latest classify call, `int8_outputs` for
every call since the device was opened, in order.
"""
from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from ..errors import UserError
from ..labels import LABELS
from ..pte import read_program
from .base import Device, require_family

# exit status of tinyrps-native when it rejects the program
REJECTED = 3


class NativeDevice(Device):
    name = "native"
    out_of_process = True
    batch_size = 100_000   # one tool run per classify call

    def __init__(self, model_path, **_):
        from ..firmware import build_firmware
        self.model_path = Path(model_path)
        program = read_program(self.model_path)   # a .pte at all?
        require_family(self.model_path, "cortex-m", self.name, program, sidecar_only=True)
        self.tool = build_firmware("native").tool("tinyrps-native")
        self.info = json.loads(self._run("info", str(self.model_path)))
        self.last_int8 = np.zeros((0, len(LABELS)), np.int8)
        self._int8_chunks = []
        self._batch_int8 = []

    @property
    def int8_outputs(self) -> np.ndarray:
        return np.concatenate(self._int8_chunks) if self._int8_chunks else np.zeros((0, len(LABELS)), np.int8)

    def classify(self, images: np.ndarray) -> np.ndarray:
        self._batch_int8 = []
        logits = super().classify(images)
        n_out = logits.shape[1] if logits.ndim == 2 else len(LABELS)
        self.last_int8 = np.concatenate(self._batch_int8) if self._batch_int8 else np.zeros((0, n_out), np.int8)
        self._int8_chunks.append(self.last_int8)
        return logits

    def _classify_batch(self, images: np.ndarray) -> np.ndarray:
        with tempfile.TemporaryDirectory(prefix="tinyrps-native.") as work:
            images_file, out_file = Path(work) / "images.u8", Path(work) / "out.bin"
            np.ascontiguousarray(images, np.uint8).tofile(images_file)
            result = json.loads(self._run("infer", str(self.model_path), str(images_file), str(out_file)))
            n, n_out = result["images"], result["outputs"]
            raw = out_file.read_bytes()
        int8 = np.frombuffer(raw, np.int8, n * n_out).reshape(n, n_out)
        logits = np.frombuffer(raw, "<f4", n * n_out, offset=n * n_out).reshape(n, n_out)
        self._batch_int8.append(int8.copy())
        return logits.astype(np.float32)

    def describe(self) -> str:
        return "firmware C runtime on this host (native build)"

    def _run(self, *args) -> str:
        result = subprocess.run([str(self.tool), *args], capture_output=True, text=True)
        if result.returncode == REJECTED:
            reason = result.stderr.strip().splitlines()[-1].removeprefix("error: ") if result.stderr.strip() else "rejected"
            raise UserError(f"{self.model_path.name} cannot run on the firmware runtime ({reason}): "
                            f"export a Cortex-M program with `tinyrps export --target cortex-m55`")
        if result.returncode != 0:
            raise UserError(f"tinyrps-native failed on {self.model_path.name}: {result.stderr.strip() or result.returncode}")
        return result.stdout
