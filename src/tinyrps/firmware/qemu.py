"""The firmware on an emulated Cortex-M board (tinyrps.firmware.boards), started and always stopped here.

Two ways to run it, one firmware image per board (firmware/board/<board>, built by build_firmware):

- `FirmwareServer`: boots once with a program and serves requests on its UART,
  which QEMU puts on a loopback TCP socket; `server.link` is a DeviceLink.
- `run_batch`: boots with a program and a file of images, runs them all and
  exits, exchanging files over semihosting (fast: no UART in the way). It also
  brings back the per-layer instruction profile.

QEMU runs with `-icount shift=0`: one guest instruction is one nanosecond of
virtual time, so the firmware's SysTick-based instruction counts are exact and
the same from run to run.

Every process started here is stopped: by close()/the context manager, by an
atexit hook, and by the kernel (PR_SET_PDEATHSIG) if this Python process dies
without cleaning up. Every wait has a timeout.
"""
from __future__ import annotations

import atexit
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from ..errors import UserError
from .boards import DEFAULT_BOARD, firmware_kind, get_board
from .link import DeviceLink, LinkError

QEMU = "qemu-system-arm"
INSTALL_HINT = "apt-get install --no-install-recommends gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm"
FIRMWARE_EXECUTABLE = "tinyrps_fw.elf"

# The boot descriptor (firmware/board/common/model_slot.h), at the start of the board's RAM.
DESCRIPTOR_MAGIC = 0x42505254       # "TRPB"
MODE_SERVE = 0
MODE_BATCH = 1

# Batch files (firmware/board/common/batch.c).
BATCH_MAGIC = b"TRPO"
BATCH_VERSION = 3
BATCH_HEADER = struct.Struct("<4sIIIIiIIII32s48s16s")  # then zero padding to header bytes
BATCH_HEADER_BYTES = 144
BATCH_RECORD = struct.Struct("<iIQ16b16f")
BATCH_PROFILE_MAGIC = b"TRPL"
BATCH_PROFILE_HEADER = struct.Struct("<4sIII")         # magic, layers, layer bytes, images
BATCH_LAYER = struct.Struct("<40s8sQQ")                # operator, kernel variant, MACs per inference, instructions summed
BATCH_MAX_LAYERS = 32                                  # the runtime's limit on kernel calls
KERNEL_VARIANTS = ("mve", "dsp", "c")                  # what trt_instruction_variant names
BATCH_TRAILER_MAGIC = b"TRPE"
BATCH_TRAILER = struct.Struct("<4sIII")                # magic, stack used, stack size, records
BATCH_EXIT_CODES = {1: "bad arguments or file I/O", 2: "the program did not load", 3: "a CPU fault"}

BOOT_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 3.0
# Budget of one inference in batch mode (~0.05 s of emulation; generous for a loaded machine).
BATCH_SECONDS_PER_IMAGE = 2.0

# QEMU chatter that says nothing about a failure.
_HARMLESS_STDERR = ("QEMU waiting for connection", "has no peer")


def require_qemu() -> str:
    path = shutil.which(QEMU)
    if path is None:
        raise UserError(f"{QEMU} is not installed; the mcu device needs it: {INSTALL_HINT}")
    return path


def firmware_elf(board: str = DEFAULT_BOARD, kernels: str = "fast") -> Path:
    """The firmware image of `board` with a kernel set ("fast" or "c"), built if its sources changed."""
    from .build import build_firmware
    return build_firmware(firmware_kind(board, kernels)).tool(FIRMWARE_EXECUTABLE)


def descriptor_words(model_length: int, mode: int) -> tuple:
    """The boot descriptor (model_slot.h) as two little-endian 64-bit words for QEMU's loader."""
    check = DESCRIPTOR_MAGIC ^ model_length ^ mode ^ 0xFFFFFFFF
    return DESCRIPTOR_MAGIC | model_length << 32, mode | check << 32


def qemu_option_value(path: Path) -> str:
    return str(path).replace(",", ",,")


def qemu_command(elf: Path, pte: Path, mode: int, board: str = DEFAULT_BOARD) -> list:
    """QEMU's board with the firmware, the program in its model slot and the boot descriptor
    at the start of its RAM; no serial yet.

    Paths are absolute (QEMU may run in another folder) and commas doubled (QEMU's option syntax)."""
    spec = get_board(board)
    pte, elf = Path(pte).resolve(), Path(elf).resolve()
    length = pte.stat().st_size
    if length > spec.model_max_bytes:
        raise UserError(f"{pte} is {length} bytes; the model slot of the {spec.name} firmware holds at most "
                        f"{spec.model_max_bytes} bytes")
    word0, word1 = descriptor_words(length, mode)
    descriptor = spec.descriptor_address
    return [require_qemu(), "-M", spec.machine, "-nodefaults", "-display", "none", "-monitor", "none", "-nic", "none",
            "-icount", "shift=0", "-no-reboot",
            "-kernel", str(elf),
            "-device", f"loader,file={qemu_option_value(pte)},addr={spec.model_address:#x}",
            "-device", f"loader,addr={descriptor:#x},data={word0:#x},data-len=8",
            "-device", f"loader,addr={descriptor + 8:#x},data={word1:#x},data-len=8"]


# ---------------------------------------------------------------------------------------------
# Process handling
# ---------------------------------------------------------------------------------------------

_live_processes: set = set()
_live_lock = threading.Lock()


def _stop_all_at_exit() -> None:
    with _live_lock:
        processes = list(_live_processes)
    for process in processes:
        _stop_process(process)


atexit.register(_stop_all_at_exit)


def _parent_death_signal():
    """A function for the child (between fork and exec) that asks Linux to SIGKILL it when
    this process dies, so an interpreter killed without cleanup leaves no QEMU behind.
    Resolved here, in the parent: the child only makes the one prctl call."""
    try:
        import ctypes
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    PR_SET_PDEATHSIG = 1
    return lambda: prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


_die_with_parent = _parent_death_signal()


def _start_process(command: list, stderr_path: Path, cwd: Optional[Path] = None,
                   pass_fds: tuple = ()) -> subprocess.Popen:
    with open(stderr_path, "wb") as stderr:
        # its own session: a Ctrl-C in the terminal reaches Python, which then stops QEMU in order
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr, cwd=cwd,
                                   pass_fds=pass_fds, start_new_session=True, preexec_fn=_die_with_parent)
    with _live_lock:
        _live_processes.add(process)
    return process


def _stop_process(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_TIMEOUT_S)
    with _live_lock:
        _live_processes.discard(process)


def _stderr_summary(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    useful = [line.strip() for line in lines if line.strip() and not any(h in line for h in _HARMLESS_STDERR)]
    return " / ".join(useful[-3:])


# ---------------------------------------------------------------------------------------------
# Serving over the UART
# ---------------------------------------------------------------------------------------------

class FirmwareServer:
    """The firmware booted once in QEMU, serving on its UART (a loopback TCP socket).

        with FirmwareServer(pte) as server:
            info = server.link.info()
            result = server.link.infer(image)
    """

    def __init__(self, pte, elf: Optional[Path] = None, timeout: float = 10.0, board: str = DEFAULT_BOARD):
        self.pte = Path(pte)
        self.board = get_board(board)
        self.elf = Path(elf) if elf else None
        self.timeout = timeout
        self.process: Optional[subprocess.Popen] = None
        self.link: Optional[DeviceLink] = None
        self.port: Optional[int] = None
        self._workdir: Optional[tempfile.TemporaryDirectory] = None

    def start(self) -> "FirmwareServer":
        """Boot QEMU and connect (once: starting a started server does nothing)."""
        if self.process is not None:
            return self
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def _start(self) -> None:
        elf = self.elf or firmware_elf(self.board.name)
        command = qemu_command(elf, self.pte, MODE_SERVE, self.board.name)
        self._workdir = tempfile.TemporaryDirectory(prefix="tinyrps-qemu.")
        # Python owns the listening socket and hands it to QEMU: no free-port race.
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            listener.bind(("127.0.0.1", 0))
            listener.listen(1)
            self.port = listener.getsockname()[1]
            fd = listener.fileno()
            command += ["-chardev", f"socket,id=uart0,fd={fd},server=on,wait=on,nodelay=on", "-serial", "chardev:uart0"]
            self.process = _start_process(command, self.stderr_path, pass_fds=(fd,))
        finally:
            listener.close()
        self.link = DeviceLink.open(f"socket://127.0.0.1:{self.port}", timeout=self.timeout,
                                    describe=f"the firmware in QEMU ({self.board.machine})", check_alive=self.check_alive)

    @property
    def stderr_path(self) -> Path:
        return Path(self._workdir.name) / "qemu.log"

    def check_alive(self) -> None:
        """Raise LinkError if QEMU has exited (what it said on stderr included)."""
        if self.process is not None and self.process.poll() is not None:
            said = _stderr_summary(self.stderr_path)
            raise LinkError(f"QEMU exited (status {self.process.returncode}) while serving {self.pte.name}"
                            + (f": {said}" if said else ""))

    def close(self) -> None:
        if self.link is not None:
            self.link.close()
            self.link = None
        if self.process is not None:
            _stop_process(self.process)
        if self._workdir is not None:
            self._workdir.cleanup()
            self._workdir = None

    def __enter__(self) -> "FirmwareServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            if self.process is not None and self.process.poll() is None:
                _stop_process(self.process)
        except Exception:       # interpreter shutdown: the atexit hook and PDEATHSIG cover it
            pass


# ---------------------------------------------------------------------------------------------
# Batch over semihosting
# ---------------------------------------------------------------------------------------------

@dataclass
class BatchResult:
    int8: np.ndarray              # [N, n_out] raw int8 outputs
    logits: np.ndarray            # [N, n_out] float32
    instructions: np.ndarray      # [N] instructions per inference
    model_sha256: str
    model_bytes: int
    arena_needed: int
    arena_capacity: int
    boot_instructions: int
    stack_used: int
    stack_size: int
    wall_s: float                 # QEMU start to exit
    board: str = DEFAULT_BOARD    # the firmware's own board name
    # per kernel call, in chain order: {"op", "kernels" (the variant the runtime bound), "macs" (per inference),
    # "instructions" (mean per image)}
    layers: list = field(default_factory=list)


def run_batch(pte, images: np.ndarray, elf: Optional[Path] = None, timeout: Optional[float] = None,
              board: str = DEFAULT_BOARD) -> BatchResult:
    """Run uint8 images [N,28,28] through the firmware in one QEMU boot of `board`, files over semihosting."""
    pte = Path(pte)
    images = np.ascontiguousarray(images, dtype=np.uint8)
    elf = elf or firmware_elf(board)
    timeout = timeout if timeout is not None else BOOT_TIMEOUT_S + BATCH_SECONDS_PER_IMAGE * len(images)
    with tempfile.TemporaryDirectory(prefix="tinyrps-batch.") as work:
        work = Path(work)
        images.tofile(work / "images.bin")
        command = qemu_command(elf, pte, MODE_BATCH, board) + [
            "-serial", "null",
            "-semihosting-config", "enable=on,target=native,arg=tinyrps_fw,arg=images.bin,arg=outputs.bin"]
        start = time.perf_counter()
        process = _start_process(command, work / "qemu.log", cwd=work)
        try:
            status = process.wait(timeout)
        except subprocess.TimeoutExpired:
            raise UserError(f"the firmware batch on {pte.name} did not finish within {timeout:.0f} s; "
                            "QEMU was stopped") from None
        finally:
            _stop_process(process)
        wall = time.perf_counter() - start
        output = work / "outputs.bin"
        raw = output.read_bytes() if output.is_file() else b""
        said = _stderr_summary(work / "qemu.log")
    result = _parse_batch(raw, status, said, pte, len(images), wall)
    if result.board != board:
        raise UserError(f"{Path(elf).name} is the firmware of {result.board or 'another board'}, not of {board}: "
                        f"use the {board} build (firmware_elf('{board}'))")
    return result


_RECORD_DTYPE = np.dtype([("status", "<i4"), ("n_out", "<u4"), ("instructions", "<u8"), ("int8", "i1", 16),
                          ("logits", "<f4", 16)])


def _parse_batch(raw: bytes, status: int, said: str, pte: Path, count: int, wall: float) -> BatchResult:
    header = _batch_header(raw, status, said, pte)
    if header["load_status"] != 0:
        detail = header["load_detail"] or f"status {header['load_status']}"
        raise UserError(f"{pte.name} does not run on the firmware ({detail}): export a Cortex-M program "
                        "with `tinyrps export --target cortex-m55` (or another cortex-m target)")
    if status != 0:
        raise UserError(f"the firmware batch on {pte.name} failed: {BATCH_EXIT_CODES.get(status, f'exit {status}')}"
                        + (f" ({said})" if said else ""))
    mismatch = f"the firmware batch on {pte.name} wrote a results file that does not parse"
    if header["count"] != count:
        raise UserError(f"{mismatch}: its header counts {header['count']} images, {count} were sent; rebuild the "
                        "firmware")
    body = raw[BATCH_HEADER_BYTES:]
    records_size = count * BATCH_RECORD.size
    if header["record_bytes"] != BATCH_RECORD.size or len(body) < records_size + BATCH_TRAILER.size:
        raise UserError(f"{mismatch} ({len(body)} bytes of results for {count} images); rebuild the firmware "
                        "(host and firmware disagree on the file layout)")
    records = np.frombuffer(body[:records_size], dtype=_RECORD_DTYPE)
    failed = records["status"] != 0
    if failed.any():
        raise UserError(f"the firmware refused image {int(np.argmax(failed))} of the batch "
                        f"(runtime status {int(records['status'][failed][0])})")
    layers, profile_size = _batch_profile(body[records_size:len(body) - BATCH_TRAILER.size], count, mismatch)
    if records_size + profile_size + BATCH_TRAILER.size != len(body):
        raise UserError(f"{mismatch}: {len(body) - records_size - profile_size - BATCH_TRAILER.size} bytes too many; "
                        "rebuild the firmware")
    magic, stack_used, stack_size, trailer_records = BATCH_TRAILER.unpack(body[-BATCH_TRAILER.size:])
    if magic != BATCH_TRAILER_MAGIC or trailer_records != count:
        raise UserError(f"the firmware batch on {pte.name} ends with a damaged trailer ({magic!r}, "
                        f"{trailer_records} records for {count} images): the file was cut short or overwritten; "
                        "run it again")
    n_out = int(records["n_out"][0]) if count else 3
    return BatchResult(records["int8"][:, :n_out].copy(), records["logits"][:, :n_out].astype(np.float32),
                       records["instructions"].astype(np.int64), header["sha256"], header["model_bytes"],
                       header["arena_needed"], header["arena_capacity"], header["boot_instructions"],
                       stack_used, stack_size, wall, header["board"], layers)


def _batch_profile(raw: bytes, count: int, mismatch: str) -> tuple:
    """The per-layer profile block: ([{op, kernels, macs, instructions (mean per image)}], its size in bytes)."""
    if len(raw) < BATCH_PROFILE_HEADER.size:
        raise UserError(f"{mismatch}: no per-layer profile; rebuild the firmware")
    magic, n_layers, layer_bytes, images = BATCH_PROFILE_HEADER.unpack_from(raw)
    size = BATCH_PROFILE_HEADER.size + n_layers * layer_bytes
    if (magic != BATCH_PROFILE_MAGIC or layer_bytes != BATCH_LAYER.size or images != count
            or n_layers > BATCH_MAX_LAYERS or len(raw) < size):
        raise UserError(f"{mismatch}: a damaged per-layer profile ({n_layers} kernel calls, {images} images for "
                        f"{count}); rebuild the firmware")
    layers = []
    for i in range(n_layers):
        name, variant, macs, total = BATCH_LAYER.unpack_from(raw, BATCH_PROFILE_HEADER.size + i * BATCH_LAYER.size)
        if _text(variant) not in KERNEL_VARIANTS:
            raise UserError(f"{mismatch}: kernel call {i} ran an unknown kernel variant {_text(variant)!r} "
                            f"(known: {', '.join(KERNEL_VARIANTS)}); rebuild the firmware")
        layers.append({"op": _text(name), "kernels": _text(variant), "macs": int(macs),
                       "instructions": round(total / count) if count else 0})
    return layers, size


def _text(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("ascii", "replace")


def _batch_header(raw: bytes, status: int, said: str, pte: Path) -> dict:
    if len(raw) < BATCH_HEADER.size or raw[:4] != BATCH_MAGIC:
        why = BATCH_EXIT_CODES.get(status, f"exit status {status}")
        raise UserError(f"the firmware batch on {pte.name} produced no results ({why})" + (f": {said}" if said else ""))
    (_magic, version, header_bytes, record_bytes, count, load_status, arena_needed, arena_capacity, model_bytes,
     boot_instructions, sha, detail, board) = BATCH_HEADER.unpack_from(raw)
    if version != BATCH_VERSION or header_bytes != BATCH_HEADER_BYTES:
        raise UserError(f"the firmware wrote batch results of version {version} ({header_bytes}-byte header), this "
                        f"host reads version {BATCH_VERSION} ({BATCH_HEADER_BYTES} bytes): rebuild the firmware from "
                        "the same sources as the host")
    return {"count": count, "record_bytes": record_bytes, "load_status": load_status,
            "arena_needed": arena_needed, "arena_capacity": arena_capacity, "model_bytes": model_bytes,
            "boot_instructions": boot_instructions, "sha256": sha.hex(),
            "load_detail": _text(detail), "board": _text(board)}
