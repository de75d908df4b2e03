"""The firmware on an emulated Cortex-M board (QEMU), driven over its serial link.

Opening the device boots the firmware once with the program in its model slot and
checks, with `info`, that the firmware holds exactly this file (SHA-256), that the
program loaded and that the firmware is the board's; `info` also describes the
program's inputs and outputs. run_batch (any program's tensors) writes each sample's
inputs, runs it and reads every output and its raw int8 values over the UART, in
pieces of one frame; classify is run_batch on the images as the program's float32
input (they travel as their uint8 pixels: the link's image encoding). Every reply is
checked: one that breaks the protocol, or non-finite logits, is "the board's reply is
invalid: ...".

Board (option `board`): the program's descriptor names its core, and the core its board
(tinyrps.hardware.cores: mps3-an547 for cortex-m55 and cortex-m85, mps2-an505 for cortex-m33,
cortex-m35p and cortex-m23, mps2-an386 for cortex-m4, mps2-an500 for cortex-m7, mps2-an385 for
cortex-m3, cortex-m0 and cortex-m0plus; a core with a build of its own there, such as the M0 on the
M3's board, runs that build); `board` overrides it, e.g. to run a cortex-m4 program on the Cortex-M33.

Transport (option `transport`):
- "serial" (default): every sample over the serial link, as a board on a serial
  line would be used. `play` and `classify` use this.
- "batch": each call is one extra QEMU boot that reads the samples and writes the
  outputs over semihosting: the same firmware and arithmetic, without the UART's
  ~0.1 s per image. For bulk evaluation. Each such boot is asked for the program's
  SHA-256 too (boot descriptor flag), and checked like `info`'s.
- "auto": batch from BATCH_THRESHOLD samples up, serial below.

Option `port` (e.g. "/dev/ttyACM0"): talk to a real board running the firmware,
with its program already flashed, instead of booting QEMU (serial transport only).

`last_int8` holds the raw int8 outputs of the last classify call (for the
bit-exactness check), `int8_outputs` those of every call since opening, and
`last_stats()` the instruction count (of trt_run) and link time of the last inference.
"""
from __future__ import annotations

import hashlib
import time
from pathlib import Path

import numpy as np

from ..hardware.cores import display_name, find_core
from ..infra.errors import UserError
from ..network.labels import LABELS
from ..hardware.pte import read_program
from .base import Device, RunResult, check_images, require_family

TRANSPORTS = ("serial", "batch", "auto")
# From this many images per classify call, "auto" pays one QEMU boot (~0.3 s) to skip
# the UART (~0.05-0.1 s per image here).
BATCH_THRESHOLD = 16


class McuDevice(Device):
    name = "mcu"
    out_of_process = True
    batch_size = 1
    bench_runs = 20          # each run is a serial round trip of ~0.1 s

    def __init__(self, model_path, transport: str = None, timeout: float = 10.0, port=None, bulk: bool = False,
                 board: str = None, **_):
        # bulk work (eval) takes the batch transport for big calls unless told otherwise
        transport = transport or ("auto" if bulk and not port else "serial")
        if transport not in TRANSPORTS:
            raise UserError(f"unknown mcu transport '{transport}'; valid: {', '.join(TRANSPORTS)}")
        if port and transport != "serial":
            raise UserError("a board on a serial port only has the serial transport; drop the transport option")
        self.model_path = Path(model_path)
        self.transport = transport
        self.port = port
        program = read_program(self.model_path)
        # a Cortex-M program, or an Ethos-U one: the Cortex-M55 runs its CPU part, the NPU link its delegate
        require_family(self.model_path, _family(self.model_path, program), self.name, program, descriptor_only=True)
        from ..firmware.npu_host import has_ethos_u
        self.family = "ethos-u" if has_ethos_u(program) else "cortex-m"   # by its contents
        self.board = program_board(self.model_path, board)
        self.core = program_core(self.model_path)       # its own build runs it where the board has one
        self.model_sha256 = hashlib.sha256(program).hexdigest()
        self.server = self.link = self.elf = None
        try:
            self.link = self._connect(timeout)
            self.info = self.link.info()
            self._check_info()
        except BaseException:
            self.close()
            raise
        self.inputs, self.outputs = self.info.inputs, self.info.outputs
        self.last_int8 = np.zeros((0, len(LABELS)), np.int8)
        self._int8_chunks = []
        self._stats = {}

    def _connect(self, timeout: float):
        """The link to the firmware: a board on `port`, or the firmware booted in QEMU."""
        if self.port:
            from ..firmware.link import DeviceLink
            return DeviceLink.open(self.port, timeout=timeout, describe=f"the board on {self.port}")
        from ..firmware.qemu import LinkedFirmware, firmware_elf
        self.elf = firmware_elf(self.board.name, "isa", self.core)
        self.server = LinkedFirmware(self.model_path, elf=self.elf, timeout=timeout, board=self.board.name).start()
        return self.server.link

    def _check_info(self) -> None:
        info = self.info
        if info.model_sha256 != self.model_sha256:
            where = "flash it to the board's model slot" if self.port else "the model slot was not loaded correctly"
            raise UserError(f"the firmware holds a different program than {self.model_path.name} "
                            f"(SHA-256 {info.model_sha256[:12]}... vs {self.model_sha256[:12]}...): {where}")
        if not self.port and info.board != self.board.name:
            raise UserError(f"the firmware booted on QEMU's {self.board.machine} reports board '{info.board}': "
                            "rebuild the firmware")
        if not info.loaded:
            from ..firmware.batch_results import CORTEX_M_HINT, load_refusal
            # an Ethos-U program's delegate the runtime refused: its blob is damaged, not the program's kind
            hint = "export it again with `tinyrps export`" if self.family == "ethos-u" else CORTEX_M_HINT
            raise UserError(load_refusal(self.model_path.name, info.load_status, info.load_detail, info.arena_needed,
                                         info.arena_capacity, info.board, hint))

    @property
    def int8_outputs(self) -> np.ndarray:
        return np.concatenate(self._int8_chunks) if self._int8_chunks else np.zeros((0, len(LABELS)), np.int8)

    def classify(self, images) -> np.ndarray:
        images = check_images(images)
        if not len(images):
            n_out = self.outputs[0].numel if self.outputs else len(LABELS)
            self.last_int8 = np.zeros((0, n_out), np.int8)
            return np.zeros((0, n_out), np.float32)
        logits, int8, _ = self._classify_by_run(images)
        if int8 is None:
            raise UserError(f"{self.model_path.name}'s output 0 has no raw int8 values (its last kernel call is not "
                            "a dequantize_per_tensor): classify needs them; run it with run() instead")
        bad = ~np.isfinite(logits).all(axis=1)
        if bad.any():
            from ..firmware.link_protocol import BoardReplyError
            raise BoardReplyError(f"the logits of image {int(np.argmax(bad))} are not finite "
                                  f"({logits[int(np.argmax(bad))].tolist()}); a dequantized output always is")
        self.last_int8 = int8
        self._int8_chunks.append(int8)
        return logits

    def _use_batch(self, count: int) -> bool:
        return self.transport == "batch" or (self.transport == "auto" and count >= BATCH_THRESHOLD)

    def _run_batch(self, arrays: list) -> RunResult:
        return self._run_by_batch(arrays) if self._use_batch(len(arrays[0])) else self._run_by_serial(arrays)

    def _run_by_serial(self, arrays: list) -> RunResult:
        runs = []
        for n in range(len(arrays[0])):
            result = self._run_one([a[n] for a in arrays])
            runs.append(result)
            self._stats = {"instructions": int(result.instructions), "link_ms": round(result.link_ms, 2),
                           "transport": "serial"}
        outputs = [np.stack([r.outputs[k] for r in runs]) for k in range(len(self.outputs))]
        int8 = [np.stack([r.int8[k] for r in runs]) if spec.has_int8 else None for k, spec in enumerate(self.outputs)]
        return RunResult(outputs, int8, np.array([r.instructions for r in runs], np.int64), dict(self._stats))

    def _run_one(self, inputs: list):
        try:
            return self.link.run_tensors(inputs, self.inputs, self.outputs)
        except UserError as error:
            npu = self.server.npu_host if self.server is not None else None
            said = npu.failure() if npu is not None else ""
            if said:
                raise UserError(f"{error} (NPU link: {said})") from None
            raise

    def _run_by_batch(self, arrays: list) -> RunResult:
        from ..firmware.qemu import run_batch
        start = time.perf_counter()
        # a boot of its own, with the model slot loaded again: the firmware hashes what it holds
        result = run_batch(self.model_path, arrays, elf=self.elf, board=self.board.name, specs=self.inputs,
                           sha256=True)
        if result.model_sha256 != self.model_sha256:
            raise UserError(f"the firmware batch ran a different program than {self.model_path.name}; "
                            "the model slot was not loaded correctly")
        if tuple(result.output_specs) != tuple(self.outputs):
            raise UserError(f"the firmware batch describes the outputs of {self.model_path.name} otherwise than its "
                            "serial link: rebuild the firmware")
        self._stats = {"instructions": int(result.instructions[-1]),
                       "link_ms": round((time.perf_counter() - start) * 1000.0 / len(arrays[0]), 2),
                       "transport": "batch"}
        return RunResult(result.outputs, result.outputs_int8, result.instructions, dict(self._stats),
                         layers=result.layers or None, profile_totals=result.instructions if result.layers else None)

    def last_stats(self) -> dict:
        """Of the last inference: `instructions` on the board's core, `link_ms` the request's
        wall time (serial) or the batch's wall time per image (batch), `transport`, `board`."""
        return {**self._stats, "board": self.info.board} if self._stats else {}

    @property
    def simulated_by(self):
        return None if self.port else "QEMU"

    @classmethod
    def runs_on(cls, pte, target, described, board=None, port=None) -> tuple:
        chosen = program_board(pte, board)
        core = running_core(chosen, program_core(Path(pte)))
        return (f"{core} on the board at {port}" if port else f"{core} on QEMU {chosen.machine}"), core

    @classmethod
    def figures(cls, stats: dict, pte, target: str, core) -> list:
        figures = []
        if "instructions" in stats:
            figures.append({"name": f"instructions on the {core}", "value": f"{stats['instructions']:,}",
                            "note": "counted by QEMU (-icount): instructions, not cycles"})
        if "link_ms" in stats:
            figures.append({"name": "serial round trip", "value": f"{stats['link_ms']:.1f} ms",
                            "note": "the request and its reply over the board's UART, wall time"})
        if str(target).startswith("ethos-u"):
            figures.append(_npu_figure(pte, target))
        return figures

    def describe(self) -> str:
        where = f"{self.info.board} on {self.port}" if self.port else \
            f"QEMU {self.info.board} ({running_core(self.board, self.core)})"
        npu = " + the NPU model on this host" if self.family == "ethos-u" and not self.port else ""
        return f"tinyrps firmware {self.info.firmware} on {where}{npu}, {self.transport} link"

    def close(self) -> None:
        if getattr(self, "server", None) is not None:
            self.server.close()
        elif getattr(self, "link", None) is not None:
            self.link.close()


def _npu_figure(pte, target: str) -> dict:
    """What ran the delegate of an Ethos-U program on the board, and Vela's estimate of the NPU's time."""
    from .. import measure
    vela = (measure.read(pte, needs=("vela",)) or {}).get("vela") or {}
    npu = target.replace("ethos-u", "Ethos-U")
    value = f"{vela['inference_ms']:.3f} ms (Vela estimate)" if vela.get("inference_ms") is not None else "not measured"
    return {"name": f"{npu} delegate", "value": value,
            "note": "QEMU models no NPU: the board's NPU driver hands each job to tinyrps's NPU model on this host; "
                    "the instructions are the Cortex-M55's part only (quantize, copies, dequantize)"}


def _family(model_path: Path, program: bytes) -> str:
    """The family the device takes a program as: ethos-u when its descriptor says so and it has an Ethos-U
    delegate, else cortex-m."""
    from ..hardware import descriptor
    from ..firmware.npu_host import has_ethos_u
    described = descriptor.read(model_path, program)
    ethos_u = described is not None and described.family == "ethos-u" and has_ethos_u(program)
    return "ethos-u" if ethos_u else "cortex-m"


def program_core(model_path: Path):
    """The core a Cortex-M program's descriptor names, or None."""
    from ..hardware import descriptor
    described = descriptor.read(model_path)
    return described.info.core if described is not None and described.family == "cortex-m" else None


def running_core(board, core: str = None) -> str:
    """"Cortex-M4", or "Cortex-M0 build on the Cortex-M3" where a core's own build runs on another's board."""
    from ..firmware.boards import guest_core
    guest = guest_core(board.name, core)
    own = display_name(board.core)
    return f"{guest.display} build on the {own}" if guest else own


def program_board(model_path: Path, board: str = None):
    """The board to run a program on: `board` if given, else the board of the core its descriptor
    names, else the default board."""
    from ..firmware.boards import DEFAULT_BOARD, get_board
    if board:
        return get_board(board)
    core = find_core(program_core(model_path) or "")
    return get_board(core.board if core else DEFAULT_BOARD)
