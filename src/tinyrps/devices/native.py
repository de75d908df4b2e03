"""The firmware's C runtime built for this host: a Cortex-M .pte run by `tinyrps-native`.

Same source, same arithmetic as the firmware on the Cortex-M55, without QEMU. Opening the
device asks the tool for the program's inputs and outputs (`info`); each run_batch call
writes the samples to a file and runs the tool once on all of them (`run`, the tensor
files of docs/firmware.md). classify is run_batch on the images as the program's float32
input. The int8 outputs (before the program's final dequantize) are kept for the
bit-exactness check: `last_int8` for the latest classify call, `int8_outputs` for every call
since the device was opened, in order.
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
from .base import Device, RunResult, require_family

# exit status of tinyrps-native when it rejects the program
REJECTED = 3


class NativeDevice(Device):
    name = "native"
    out_of_process = True
    batch_size = 100_000   # one tool run per classify call

    def __init__(self, model_path, **_):
        from ..firmware import build_firmware
        from ..firmware.tensors import spec_from_json
        self.model_path = Path(model_path)
        program = read_program(self.model_path)   # a .pte at all?
        require_family(self.model_path, "cortex-m", self.name, program, sidecar_only=True)
        self.tool = build_firmware("native").tool("tinyrps-native")
        self.info = json.loads(self._run("info", str(self.model_path)))
        self.inputs = tuple(spec_from_json(entry) for entry in self.info["inputs"])
        self.outputs = tuple(spec_from_json(entry) for entry in self.info["outputs"])
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
        logits, int8, _ = self._classify_by_run(images)
        if int8 is None:
            raise UserError(f"{self.model_path.name}'s output 0 has no raw int8 values (its last kernel call is not "
                            "a dequantize_per_tensor): classify needs them; run it with run() instead")
        self._batch_int8.append(int8)
        return logits

    def _run_batch(self, arrays: list) -> RunResult:
        from ..firmware.tensors import result_bytes, samples_file_bytes, split_results
        with tempfile.TemporaryDirectory(prefix="tinyrps-native.") as work:
            samples, results = Path(work) / "samples.bin", Path(work) / "results.bin"
            samples.write_bytes(samples_file_bytes(list(self.inputs), arrays))
            summary = json.loads(self._run("run", str(self.model_path), str(samples), str(results)))
            raw = results.read_bytes()
        count, size = len(arrays[0]), result_bytes(list(self.outputs))
        if summary["samples"] != count or summary["result_bytes"] != size or len(raw) != count * size:
            raise UserError(f"tinyrps-native wrote {len(raw)} bytes of results for {count} samples of {size} bytes "
                            f"({summary}): rebuild it")
        outputs, int8 = split_results(np.frombuffer(raw, np.uint8).reshape(count, size), list(self.outputs))
        return RunResult(outputs, int8)

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
