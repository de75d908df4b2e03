"""The firmware's C runtime built for this host: a Cortex-M .pte run by `tinyrps-native`.

Same source, same arithmetic as the firmware on the Cortex-M55, without QEMU. Opening the
device asks the tool for the program's inputs and outputs (`info`); each run_batch call
writes the samples to a file and runs the tool once on all of them (`run`, the tensor
files of docs/firmware.md). classify is run_batch on the images as the program's float32
input. The int8 outputs (before the program's final dequantize) are kept for the
bit-exactness check: `last_int8` for the latest classify call, `int8_outputs` for every call
since the device was opened, in order.

Every run also takes the runtime's per-layer profile with the host's monotonic clock as its
counter (the profile file of firmware/protocol/native_profile.h): RunResult.layers holds each
kernel call's mean nanoseconds over the batch (key "nanoseconds"), `profile_totals` each
inference's. They are wall-clock times of this machine, not cycles of a core, and vary with its
load; the emulated boards' counts (instructions under QEMU) are the deterministic ones.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np

from ..infra.errors import UserError
from ..firmware import c_facts
from ..network.labels import LABELS
from ..hardware.pte import read_program
from ..infra.tempdirs import temp_dir
from .base import Device, RunResult, require_family

# exit status of tinyrps-native when it rejects the program
REJECTED = 3
# what the tool's profile counts (the key of each layer's count): the host's monotonic nanoseconds
COUNTER = c_facts.define("NATIVE_PROFILE_COUNTER")


def read_profile(raw: bytes, samples: int, calls: int) -> tuple:
    """The tool's profile file: (each inference's count [samples], each kernel call's [samples, calls]),
    uint64, in COUNTER."""
    header = c_facts.layout("NATIVE_PROFILE_FIELDS", "NATIVE_PROFILE_HEADER_BYTES")
    width = c_facts.define("NATIVE_PROFILE_COUNT_BYTES")
    fields = header.unpack(raw) if len(raw) >= header.size else {}
    if (fields.get("MAGIC") != c_facts.define("NATIVE_PROFILE_ID")
            or fields.get("VERSION") != c_facts.define("NATIVE_PROFILE_VERSION") or fields.get("COUNTER") != COUNTER
            or fields.get("SAMPLES") != samples or fields.get("CALLS") != calls
            or len(raw) != header.size + samples * (calls + 1) * width):
        raise UserError(f"tinyrps-native wrote a profile of {len(raw)} bytes ({fields or 'no header'}) for {samples} "
                        f"samples of {calls} kernel calls: rebuild it")
    counts = np.frombuffer(raw, "<u8", offset=header.size).reshape(samples, calls + 1)
    return counts[:, 0].copy(), counts[:, 1:]


class NativeDevice(Device):
    name = "native"

    @classmethod
    def runs_on(cls, pte, target, described, board=None, port=None) -> tuple:
        return "the firmware's C runtime on this CPU", None
    out_of_process = True
    batch_size = 100_000   # one tool run per classify call

    def __init__(self, model_path, **_):
        from ..firmware import build_firmware
        from ..firmware.tensors import spec_from_json
        self.model_path = Path(model_path)
        program = read_program(self.model_path)   # a .pte at all?
        require_family(self.model_path, "cortex-m", self.name, program, descriptor_only=True)
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
        with temp_dir("native") as work:
            samples, results, profile = (Path(work) / name for name in ("samples.bin", "results.bin", "profile.bin"))
            samples.write_bytes(samples_file_bytes(list(self.inputs), arrays))
            summary = json.loads(self._run("run", str(self.model_path), str(samples), str(results), str(profile)))
            raw, profile_raw = results.read_bytes(), profile.read_bytes()
        count, size = len(arrays[0]), result_bytes(list(self.outputs))
        if summary["samples"] != count or summary["result_bytes"] != size or len(raw) != count * size:
            raise UserError(f"tinyrps-native wrote {len(raw)} bytes of results for {count} samples of {size} bytes "
                            f"({summary}): rebuild it")
        outputs, int8 = split_results(np.frombuffer(raw, np.uint8).reshape(count, size), list(self.outputs))
        totals, calls = read_profile(profile_raw, count, len(self.info["calls"]))
        layers = [{"op": op, "kernels": kernels, COUNTER: int(round(float(calls[:, i].mean())))}
                  for i, (op, kernels) in enumerate(zip(self.info["calls"], self.info["kernels"]))]
        return RunResult(outputs, int8, layers=layers, counter=COUNTER, profile_totals=totals)

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
