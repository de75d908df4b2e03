"""What the Ethos-U NPU computes, on the host: the program's TOSA graph in the TOSA reference model.

The device runs the very graph compiled for the .pte (kept by the export as
RUN/export/T/out.tosa, its sha256 in the program's descriptor) through
tinyrps.reference.ethos_u, and does on the host what the program leaves to the CPU:
quantize the float input and dequantize the int8 output, with the parameters read from
the program itself. Vela's estimate of the NPU's time, where the program was measured
(`tinyrps measure`), is what it reports of an inference.
"""
from __future__ import annotations

import hashlib
import json
import time

import numpy as np

from ..infra.errors import UserError
from ..reference.ethos_u import dequantize, graph_input_shape, images_to_float, quantize, read_tosa, run_graph
from .base import RunResult
from .ethos_u import EthosUDevice, accelerator_name, vela_figure


class NpuRefDevice(EthosUDevice):
    name = "npu-ref"

    @classmethod
    def runs_on(cls, pte, target, described, board=None, port=None) -> tuple:
        return f"{accelerator_name(described, target)}, its TOSA graph in the reference model", None

    @classmethod
    def figures(cls, stats: dict, pte, target: str, core) -> list:
        return [vela_figure(stats, pte, target),
                {"name": "TOSA reference model on this CPU", "value": f"{stats.get('reference_ms', stats['host_ms']):.1f} ms",
                 "note": "what the NPU computes, run on the host: not the NPU's speed"}]
    # The graph has a batch of one, so each image is one run; batches (of EthosUDevice.batch_size) only
    # amortise the output redirection.
    simulated_by = "the TOSA reference model"
    # each run is about 18 ms of the reference model, whose time is not the NPU's (the benchmark shows
    # Vela's estimate as the device's): 50 runs give its median well enough
    bench_runs = 50

    def __init__(self, model_path, **_):
        program = self._open(model_path)
        if self.descriptor is None:
            raise UserError(f"{self.model_path.with_suffix('.json')} (the descriptor naming the TOSA graph of "
                            f"{self.model_path.name}) is missing: export the program again with `tinyrps export`")
        self.tosa = read_tosa(self.model_path, self.descriptor)
        self.input_shape = graph_input_shape(self.tosa, self.model_path)
        self._read_io(program)
        self._reference_ms = None

    def _classify_batch(self, images: np.ndarray) -> np.ndarray:
        quantized = quantize(images_to_float(images), self.input_q)
        start = time.perf_counter()
        outputs = run_graph(self.tosa, [q.reshape(self.input_shape) for q in quantized])
        self._reference_ms = (time.perf_counter() - start) * 1000 / len(images)
        return dequantize(outputs, self.output_q)

    def _run_batch(self, arrays: list) -> RunResult:
        """Any one-input, one-output Ethos-U program's tensors: quantized, through the graph, dequantized."""
        (x,) = arrays
        (spec,) = self.outputs
        quantized = quantize(x.astype(np.float32), self.input_q)
        if quantized[0].size != int(np.prod(self.input_shape)):
            raise UserError(f"{self.model_path.name}: its TOSA graph takes {self.input_shape}, "
                            f"the program {self.inputs[0].describe()}")
        raw = run_graph(self.tosa, [q.reshape(self.input_shape) for q in quantized])
        if raw[0].size != int(np.prod(spec.shape)):
            raise UserError(f"{self.model_path.name}: its TOSA graph gives {raw[0].size} values, "
                            f"the program {spec.describe()}")
        raw = raw.reshape((len(raw), *spec.shape))
        return RunResult([dequantize(raw, self.output_q).astype(spec.dtype)], [raw])

    def computation(self) -> str:
        """The graph and the (de)quantization around it: the Ethos-U55 and U85 programs of one
        model compile the same TOSA graph, byte for byte, for Vela."""
        around = json.dumps([self.input_q, self.output_q], sort_keys=True)
        # the graph's sha256 as read_tosa checked it against the descriptor
        return hashlib.sha256((self.descriptor.info.tosa_sha256 + around).encode()).hexdigest()

    def describe(self) -> str:
        vela = self.vela
        if not vela:
            return f"TOSA reference model ({self.descriptor.info.accelerator} graph)"
        return (f"TOSA reference model ({vela['accelerator']} graph; Vela estimate {vela['inference_ms']:.3f} ms "
                f"at {vela['clock_hz'] / 1e6:.0f} MHz)")

    def last_stats(self) -> dict:
        """Vela's estimate of one inference on the NPU, and what the reference model took per image here."""
        stats = self._vela_stats(self.descriptor.info.accelerator)
        if self._reference_ms is not None:
            stats["reference_ms"] = self._reference_ms
        return stats

