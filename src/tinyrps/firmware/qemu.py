"""The firmware on an emulated Cortex-M board (tinyrps.firmware.boards), started and always stopped here.

Two ways to run it, one firmware image per board (firmware/board/<board>, built by build_firmware):

- `LinkedFirmware`: boots once with a program and serves requests on its UART,
  which QEMU puts on a loopback TCP socket; `server.link` is a DeviceLink.
- `run_batch`: boots with a program and a samples file (every input of each
  sample), runs them all and exits, exchanging files over semihosting (fast: no
  UART in the way). It also brings back the per-layer instruction profile; the
  results file is read by tinyrps.firmware.batch_results.

QEMU runs with `-icount shift=0`: one guest instruction is one nanosecond of
virtual time, so the firmware's SysTick-based instruction counts are exact and
the same from run to run.

Every process started here is stopped: by close()/the context manager, by an
atexit hook, and by the kernel (PR_SET_PDEATHSIG) if this Python process dies
without cleaning up. Every wait has a timeout.
"""
from __future__ import annotations

import atexit
import hashlib
import shutil
import socket
import struct
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Optional

import numpy as np

from ..infra.errors import UserError
from ..infra.tempdirs import temp_dir
from . import c_facts
from .batch_results import BatchResult, parse_batch
from .boards import DEFAULT_BOARD, firmware_build, get_board
from .build import APT_ARM
from .link import DeviceLink
from .link_protocol import LinkError
from .tensors import check_inputs, images_as_input, samples_file_bytes

QEMU = "qemu-system-arm"
FIRMWARE_EXECUTABLE = "tinyrps_fw.elf"

# The boot descriptor (firmware/board/common/model_slot.h), at the start of the board's RAM.
DESCRIPTOR = c_facts.layout("BOOT_DESCRIPTOR_FIELDS", "BOOT_DESCRIPTOR_BYTES")
DESCRIPTOR_MAGIC = c_facts.define("BOOT_DESCRIPTOR_MAGIC")       # "TRPB"
DESCRIPTOR_VERSION = c_facts.define("BOOT_DESCRIPTOR_VERSION")
MODE_LINK = c_facts.define("BOOT_MODE_LINK")
MODE_BATCH = c_facts.define("BOOT_MODE_BATCH")
FLAG_SHA256 = c_facts.define("BOOT_FLAG_SHA256")                 # batch: hash the program, report the hash
FLAG_NPU_LINK = c_facts.define("BOOT_FLAG_NPU_LINK")             # the host serves the NPU link (npu_host)
SEMIHOSTING = ["-semihosting-config", "enable=on,target=native"]


BOOT_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 3.0
# Budget of one inference in batch mode (~0.05 s of emulation; generous for a loaded machine).
BATCH_SECONDS_PER_IMAGE = 2.0

# QEMU chatter that says nothing about a failure.
_HARMLESS_STDERR = ("QEMU waiting for connection", "has no peer")


def require_qemu() -> str:
    path = shutil.which(QEMU)
    if path is None:
        raise UserError(f"{QEMU} is not installed; the mcu device needs it: {APT_ARM}")
    return path


def firmware_elf(board: str = DEFAULT_BOARD, kernels: str = "isa", core: str = None) -> Path:
    """The firmware image of `board` with a kernel set ("isa" or "c"), built if its sources changed;
    with `core`, that core's own build if it has one on the board (tinyrps.firmware.boards.firmware_build)."""
    from .build import build_firmware
    return build_firmware(firmware_build(board, kernels, core)).tool(FIRMWARE_EXECUTABLE)


def descriptor_bytes(model_length: int, mode: int, flags: int = 0) -> bytes:
    """The boot descriptor (model_slot.h): its check is every other word XORed, then inverted."""
    fields = {"MAGIC": DESCRIPTOR_MAGIC, "VERSION": DESCRIPTOR_VERSION, "MODEL_LENGTH": model_length, "MODE": mode,
              "FLAGS": flags}
    check = 0xFFFFFFFF
    for value in fields.values():
        check ^= value
    return DESCRIPTOR.pack(**fields, CHECK=check)


def descriptor_words(model_length: int, mode: int, flags: int = 0) -> tuple:
    """The boot descriptor as little-endian 64-bit words, one per item of QEMU's loader (whose `data`
    holds at most 8 bytes)."""
    raw = descriptor_bytes(model_length, mode, flags)
    return struct.unpack(f"<{len(raw) // 8}Q", raw)


def qemu_option_value(path: Path) -> str:
    return str(path).replace(",", ",,")


def qemu_command(elf: Path, pte: Path, mode: int, board: str = DEFAULT_BOARD, flags: int = 0) -> list:
    """QEMU's board with the firmware, the program in its model slot and the boot descriptor
    (mode, flags: BOOT_FLAG_*) at the start of its RAM; no serial yet.

    Paths are absolute (QEMU may run in another folder) and commas doubled (QEMU's option syntax)."""
    spec = get_board(board)
    pte, elf = Path(pte).resolve(), Path(elf).resolve()
    length = pte.stat().st_size
    if length > spec.model_max_bytes:
        raise UserError(f"{pte} is {length} bytes; the model slot of the {spec.name} firmware holds at most "
                        f"{spec.model_max_bytes} bytes")
    descriptor = []
    for i, word in enumerate(descriptor_words(length, mode, flags)):
        descriptor += ["-device", f"loader,addr={spec.descriptor_address + 8 * i:#x},data={word:#x},data-len=8"]
    return [require_qemu(), "-M", spec.machine, "-nodefaults", "-display", "none", "-monitor", "none", "-nic", "none",
            "-icount", "shift=0", "-no-reboot",
            "-kernel", str(elf),
            "-device", f"loader,file={qemu_option_value(pte)},addr={spec.model_address:#x}"] + descriptor


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


def _die_with_parent_prefix() -> list:
    """The words that make the child ask Linux to SIGKILL it when this process dies, so an
    interpreter killed without cleanup leaves no QEMU behind. util-linux's setpriv makes the
    prctl call and then executes QEMU in the same process. It is done in a program of its own,
    not in a preexec_fn: a preexec_fn makes Python fork with its at-fork handlers, and a Ctrl-C
    landing inside one of them (logging's lock) leaves a lock held that deadlocks the next fork
    from the other worker thread."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--"] if setpriv else []


_DIE_WITH_PARENT = _die_with_parent_prefix()


def _start_process(command: list, stderr_path: Path, cwd: Optional[Path] = None,
                   pass_fds: tuple = ()) -> subprocess.Popen:
    with open(stderr_path, "wb") as stderr:
        # its own session: a Ctrl-C in the terminal reaches Python, which then stops QEMU in order
        process = subprocess.Popen(_DIE_WITH_PARENT + list(command), stdin=subprocess.DEVNULL, stdout=stderr,
                                   stderr=stderr, cwd=cwd, pass_fds=pass_fds, start_new_session=True)
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

class LinkedFirmware:
    """The firmware booted once in QEMU, serving on its UART (a loopback TCP socket).

        with LinkedFirmware(pte) as server:
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
        self.npu_host = None          # NpuHost, for a program with an Ethos-U delegate

    def start(self) -> "LinkedFirmware":
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
        self._workdir = temp_dir("qemu")
        npu = npu_host_for(self.pte, Path(self._workdir.name))
        self.npu_host = npu
        command = qemu_command(elf, self.pte, MODE_LINK, self.board.name, FLAG_NPU_LINK if npu else 0) + \
            (SEMIHOSTING if npu else [])
        # Python owns the listening socket and hands it to QEMU: no free-port race.
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            listener.bind(("127.0.0.1", 0))
            listener.listen(1)
            self.port = listener.getsockname()[1]
            fd = listener.fileno()
            command += ["-chardev", f"socket,id=uart0,fd={fd},server=on,wait=on,nodelay=on", "-serial", "chardev:uart0"]
            self.process = _start_process(command, self.stderr_path, pass_fds=(fd,), cwd=self._workdir.name)
        finally:
            listener.close()
        self.link = DeviceLink.connect("127.0.0.1", self.port, timeout=self.timeout,
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
        if self.npu_host is not None:
            self.npu_host.close()
        if self._workdir is not None:
            self._workdir.cleanup()
            self._workdir = None

    def __enter__(self) -> "LinkedFirmware":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            if self.process is not None and self.process.poll() is None:
                _stop_process(self.process)
        except Exception:       # interpreter shutdown: the atexit hook and PDEATHSIG cover it
            pass


def npu_host_for(pte: Path, folder: Path):
    """The NPU link's host end in `folder` (QEMU's working folder), for a program with an Ethos-U
    delegate; None for any other program."""
    from .npu_host import NpuHost, has_ethos_u
    return NpuHost(pte, folder) if has_ethos_u(Path(pte).read_bytes()) else None


# ---------------------------------------------------------------------------------------------
# Batch over semihosting
# ---------------------------------------------------------------------------------------------

def run_batch(pte, samples, elf: Optional[Path] = None, timeout: Optional[float] = None,
              board: str = DEFAULT_BOARD, specs: Optional[tuple] = None, sha256: bool = False) -> BatchResult:
    """Run samples through the firmware in one QEMU boot of `board`, files over semihosting.

    samples: one array [N, *input shape] per input of the program, in its dtype; or, for an image
    classifier, uint8 images [N, 28, 28] (its float32 input x / 255). specs: the program's input
    TensorLayouts if known (the device has them from `info`); else one empty batch asks the firmware.
    sha256: the firmware hashes the program it holds (after its boot, counted apart) for
    `model_sha256`, to check it is this file; without it the batch does not hash."""
    pte = Path(pte)
    elf = elf or firmware_elf(board)
    if specs is None:
        specs = program_inputs(pte, elf, board)
    if isinstance(samples, np.ndarray) and samples.dtype == np.uint8 and samples.ndim == 3:
        samples = [images_as_input(samples)]
    samples = check_inputs(list(specs), samples, pte.name, batched=True)
    count = len(samples[0])
    timeout = timeout if timeout is not None else BOOT_TIMEOUT_S + BATCH_SECONDS_PER_IMAGE * count
    result = _boot_batch(pte, elf, board, samples, specs, timeout, FLAG_SHA256 if sha256 else 0)
    if tuple(result.inputs) != tuple(specs):
        raise UserError(f"the firmware describes the inputs of {pte.name} as "
                        f"{', '.join(s.describe() for s in result.inputs)}; they were given as "
                        f"{', '.join(s.describe() for s in specs)}: rebuild the firmware")
    return result


_input_specs: dict = {}


def program_inputs(pte: Path, elf: Path, board: str) -> tuple:
    """The input TensorLayouts of a program, as the firmware describes them: an empty batch (cached per
    program bytes and firmware image)."""
    key = (hashlib.sha256(Path(pte).read_bytes()).hexdigest(), str(elf), Path(elf).stat().st_mtime_ns)
    if key not in _input_specs:
        _input_specs[key] = _boot_batch(Path(pte), elf, board, [], (), BOOT_TIMEOUT_S).inputs
    return _input_specs[key]


def _boot_batch(pte: Path, elf: Path, board: str, samples: list, specs: tuple, timeout: float,
                flags: int = 0) -> BatchResult:
    count = len(samples[0]) if samples else 0
    with temp_dir("batch") as work:
        work = Path(work)
        (work / "samples.bin").write_bytes(samples_file_bytes(list(specs), samples))
        npu = npu_host_for(pte, work)
        if npu:   # the board hashes the program for the link at boot: the batch reports it
            flags |= FLAG_NPU_LINK | FLAG_SHA256
        command = qemu_command(elf, pte, MODE_BATCH, board, flags) + [
            "-serial", "null",
            "-semihosting-config", "enable=on,target=native,arg=tinyrps_fw,arg=samples.bin,arg=results.bin"]
        start = time.perf_counter()
        process = _start_process(command, work / "qemu.log", cwd=work)
        try:
            status = process.wait(timeout)
        except subprocess.TimeoutExpired:
            raise UserError(f"the firmware batch on {pte.name} did not finish within {timeout:.0f} s; "
                            "QEMU was stopped") from None
        finally:
            _stop_process(process)
            npu_said = npu.failure() if npu else ""   # before it is stopped here
            if npu:
                npu.close()
        wall = time.perf_counter() - start
        output = work / "results.bin"
        raw = output.read_bytes() if output.is_file() else b""
        said = _stderr_summary(work / "qemu.log")
    try:
        result = parse_batch(raw, status, said, pte, count, wall)
    except UserError as error:
        if npu_said:
            raise UserError(f"{error} (NPU link: {npu_said})") from None
        raise
    if bool(flags & FLAG_SHA256) != (result.model_sha256 is not None):
        raise UserError(f"the firmware batch on {pte.name} " + ("did not hash the program it was asked to hash"
                        if flags & FLAG_SHA256 else "hashed the program unasked") + ": rebuild the firmware")
    if result.board != board:
        raise UserError(f"{Path(elf).name} is the firmware of {result.board or 'another board'}, not of {board}: "
                        f"use the {board} build (firmware_elf('{board}'))")
    return result
