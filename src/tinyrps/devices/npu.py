"""The Ethos-U NPU's program itself, on the host: the command stream Vela wrote, in tinyrps.npu.

The device executes the delegate of an Ethos-U .pte as a driver hands it to the NPU (the
command stream, the weights as region 0, the scratch as region 1, the fast scratch as
region 2) in the functional model tinyrps.npu, and does on the host what the program leaves
to the CPU: quantize the float input and dequantize the int8 output, with the parameters read
from the program itself. Its int8 outputs are those of the TOSA reference model (`npu-ref`)
bit for bit (tests/npu). Vela's estimate of the NPU's time, where the program was measured,
is what it reports of an inference; the model's own time is the host's.
"""
from __future__ import annotations

import hashlib
import time

import numpy as np

from ..infra.errors import UserError
from ..reference.ethos_u import dequantize, images_to_float, quantize
from .base import RunResult
from .ethos_u import EthosUDevice, accelerator_name, vela_figure


class NpuDevice(EthosUDevice):
    name = "npu"

    @classmethod
    def runs_on(cls, pte, target, described, board=None, port=None) -> tuple:
        return f"{accelerator_name(described, target)}, its command stream in tinyrps's NPU model", None

    @classmethod
    def figures(cls, stats: dict, pte, target: str, core) -> list:
        figures = [vela_figure(stats, pte, target)]
        if stats.get("model_ms") is not None:
            figures.append({"name": "NPU model on this CPU", "value": f"{stats['model_ms']:.1f} ms",
                            "note": "the command stream run by tinyrps's functional model on the host: what the "
                                    "NPU computes, not the NPU's speed"})
        if stats.get("npu_macs") is not None:
            figures.append({"name": "NPU work", "value": f"{stats['npu_macs']:,} MACs, {stats['npu_dma_bytes']:,} "
                            "DMA bytes", "note": "what the model executed for one inference"})
        return figures
    simulated_by = "tinyrps's functional model of the Ethos-U"

    def __init__(self, model_path, **_):
        from .. import npu
        program = self._open(model_path)
        self.programs = npu.load(program, self.model_path.name)
        if len(self.programs) != 1 or len(self.programs[0].inputs) != 1 or len(self.programs[0].outputs) != 1:
            raise UserError(f"{model_path.name} is not one Ethos-U delegate with one input and one output, "
                            f"which is what the npu device runs")
        self.program = self.programs[0]
        self._read_io(program)
        self.accelerator = getattr(getattr(self.descriptor, "info", None), "accelerator", None) or \
            self.program.config.product
        self._model_ms = None
        self._digest = hashlib.sha256(program).hexdigest()
        self.int8_outputs = np.zeros((0, self.program.outputs[0].nbytes), np.int8)

    def _classify_batch(self, images: np.ndarray) -> np.ndarray:
        quantized = quantize(images_to_float(images), self.input_q)
        start = time.perf_counter()
        outputs = np.stack([self.program.run([q.reshape(-1)])[0] for q in quantized])
        self._model_ms = (time.perf_counter() - start) * 1000 / len(images)
        self.last_int8 = outputs
        self.int8_outputs = np.concatenate([self.int8_outputs, outputs])
        return dequantize(outputs, self.output_q)

    def _run_batch(self, arrays: list) -> RunResult:
        """Any such program's tensors: the float32 input quantized as the program does, its bytes as the
        delegate's input (the delegate keeps the program's dimension order), the int8 output dequantized."""
        (x,) = arrays
        (spec,) = self.outputs
        quantized = quantize(x.astype(np.float32), self.input_q)
        raw = np.stack([self.program.run([q.reshape(-1)])[0] for q in quantized])
        if raw[0].size != int(np.prod(spec.shape)):
            raise UserError(f"{self.model_path.name}: the delegate's output has {raw[0].size} elements, "
                            f"the program's {spec.describe()}")
        raw = raw.reshape((len(raw), *spec.shape))
        return RunResult([dequantize(raw, self.output_q).astype(spec.dtype)], [raw])

    def computation(self) -> str:
        """The program's bytes: the same command stream and weights compute the same outputs."""
        return "npu:" + self._digest

    def describe(self) -> str:
        npu = str(self.accelerator).replace("ethos-u", "Ethos-U")
        if not self.vela:
            return f"{npu} command stream in tinyrps's functional model"
        return (f"{npu} command stream in tinyrps's functional model (Vela estimate {self.vela['inference_ms']:.3f} "
                f"ms at {self.vela['clock_hz'] / 1e6:.0f} MHz)")

    def last_stats(self) -> dict:
        """Vela's estimate of one inference on the NPU; the model's time per image here; what it executed."""
        stats = {**self._vela_stats(self.accelerator),
                 "npu_macs": sum(r["macs"] for r in self.program.report()),
                 "npu_dma_bytes": sum(r["dma_bytes"] for r in self.program.report())}
        if self._model_ms is not None:
            stats["model_ms"] = self._model_ms
        return stats

    def layers(self) -> list:
        """What one inference executes, step by step (tinyrps.npu.Program.report)."""
        return self.program.report()
