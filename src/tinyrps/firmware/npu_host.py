"""The host end of the NPU link: the Ethos-U half of an emulated Cortex-M55 + Ethos-U system.

QEMU models no NPU. A program with an Ethos-U delegate runs on the board's firmware, whose NPU
driver (firmware/board/common/npu_link.c) sends each job over semihosting, through two named
pipes in QEMU's working folder (firmware/protocol/npu_link.h), to a process of its own that runs
the NPU functional model (tinyrps.npu) on the job and sends regions 1 and 2 back, the delegate's
outputs in region 1 where the NPU writes them.
Region 0, the weights, stays here: the host holds the same program, and each side refuses a job
whose program hash is not its own.

    host = NpuHost(pte, folder)     the pipes in `folder` and the model's process, started
    host.failure()                  what the process said went wrong ("" if nothing)
    host.close()                    stopped (also when its parent dies: PR_SET_PDEATHSIG)

`python -m tinyrps.firmware.npu_host PTE FOLDER` is that process. The process is apart from
QEMU's parent so that a host that dies mid-job is a real case: its pipes close, and the board
reports the failed run instead of waiting.
"""
from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import numpy as np

from . import c_facts

REQUEST = c_facts.layout("NPU_LINK_REQUEST_FIELDS", "NPU_LINK_REQUEST_BYTES")
REPLY = c_facts.layout("NPU_LINK_REPLY_FIELDS", "NPU_LINK_REPLY_BYTES")
VERSION = c_facts.define("NPU_LINK_VERSION")
REQUEST_PATH, REPLY_PATH = c_facts.define("NPU_LINK_REQUEST_PATH"), c_facts.define("NPU_LINK_REPLY_PATH")
STATUS = {name: value for name, value, _ in c_facts.listing("NPU_LINK_STATUS_LIST")}
MAX_REGION = 1 << 26          # far above any scratch an Ethos-U program asks for
LOG = "npu-host.log"


def has_ethos_u(program: bytes) -> bool:
    """Whether a program has an Ethos-U delegate (and so needs the NPU link on a board)."""
    from ..infra.errors import UserError
    from ..npu.blob import ethos_u_blobs
    try:
        return bool(ethos_u_blobs(program, "program"))
    except UserError:       # none, or a program the board will refuse itself
        return False


class NpuHost:
    def __init__(self, pte, folder):
        from .qemu import _start_process
        self.folder = Path(folder)
        for name in (REQUEST_PATH, REPLY_PATH):
            os.mkfifo(self.folder / name)
        package_root = str(Path(__file__).resolve().parents[2])   # this package, wherever it runs from
        command = [sys.executable, "-c", f"import sys; sys.path.insert(0, {package_root!r}); "
                   "from tinyrps.firmware.npu_host import main; main()", str(Path(pte).resolve()), str(self.folder)]
        self.process = _start_process(command, self.folder / LOG)

    @property
    def pid(self) -> int:
        return self.process.pid

    def failure(self) -> str:
        try:
            lines = [line for line in (self.folder / LOG).read_text(errors="replace").splitlines() if line.strip()]
        except OSError:
            lines = []
        said = lines[-1] if lines else ""
        if self.process.poll() is not None and self.process.returncode:
            return f"the NPU model's process ended (status {self.process.returncode})" + (f": {said}" if said else "")
        return said

    def close(self) -> None:
        from .qemu import _stop_process
        _stop_process(self.process)


# ---- the process ------------------------------------------------------------------------------

def _read(fd: int, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _reply(fd: int, request: dict, status: str, sha: bytes, text: str = "", regions: tuple = ()) -> None:
    header = REPLY.pack(MAGIC=c_facts.define("NPU_LINK_REPLY_ID"), VERSION=VERSION, SEQUENCE=request["SEQUENCE"],
                        STATUS=STATUS[status], SHA256=sha, TEXT=text[:63])
    if text:    # said before the reply: the board's failure reaches the user after it
        print(f"NPU job {request['SEQUENCE']} refused: {text}", file=sys.stderr, flush=True)
    data = memoryview(header + b"".join(regions))
    while data:
        data = data[os.write(fd, data):]


def _run_job(programs: list, request: dict, cmd: bytes, r1: bytes, r2: bytes) -> tuple:
    """(status, text, regions): the job run by the delegate whose command stream it carries."""
    program = next((p for p in programs if p.delegate.cmd_data == cmd), None)
    if program is None:
        return "NPU_LINK_UNKNOWN_STREAM", "no delegate of the program has this command stream", ()
    sizes = request["SIZES"]
    need = (len(program.weights), program.delegate.scratch_size, program.region_sizes[2])
    if sizes[0] != need[0] or sizes[1] < need[1] or sizes[2] < need[2]:
        return "NPU_LINK_BAD_REQUEST", f"regions of {sizes} bytes; the delegate needs {list(need)}", ()
    # the model's own entry point: the inputs as the driver placed them in the scratch, the outputs
    # written back where the NPU writes them; what else the job leaves in the scratches nobody reads
    scratch = np.frombuffer(r1, np.uint8).copy()
    outputs = program.run([scratch[p.offset:p.offset + p.nbytes] for p in program.inputs])
    for place, value in zip(program.outputs, outputs):
        scratch[place.offset:place.offset + place.nbytes] = np.asarray(value).view(np.uint8).reshape(-1)
    return "NPU_LINK_OK", "", (scratch.tobytes(), r2)


def serve(pte: Path, folder: Path) -> None:
    program = pte.read_bytes()
    sha = hashlib.sha256(program).digest()
    # O_RDWR: opening never waits for the board, and the board's opens never wait for this process
    requests, replies = (os.open(folder / name, os.O_RDWR) for name in (REQUEST_PATH, REPLY_PATH))
    from ..npu import load
    programs = load(program, pte.name)
    while True:
        request = REQUEST.unpack(_read(requests, REQUEST.size))
        sizes = request["SIZES"]
        if (request["MAGIC"] != c_facts.define("NPU_LINK_REQUEST_ID") or request["VERSION"] != VERSION
                or request["CMD_BYTES"] > MAX_REGION or max(sizes) > MAX_REGION):
            raise SystemExit(f"a request that breaks the NPU link ({request['MAGIC']!r}, version {request['VERSION']})")
        cmd, r1, r2 = (_read(requests, n) for n in (request["CMD_BYTES"], sizes[1], sizes[2]))
        if request["SHA256"] != sha:
            _reply(replies, request, "NPU_LINK_WRONG_PROGRAM", sha,
                   f"board holds {request['SHA256'].hex()[:12]}..., host {pte.name} {sha.hex()[:12]}...")
            continue
        try:
            status, text, regions = _run_job(programs, request, cmd, r1, r2)
        except Exception as error:      # the model's refusal, said in one line to the board's user
            status, text, regions = "NPU_LINK_FAILED", str(error), ()
        _reply(replies, request, status, sha, text, regions)


def main() -> None:
    try:
        serve(Path(sys.argv[1]), Path(sys.argv[2]))
    except Exception as error:
        print(f"{type(error).__name__}: {error}", file=sys.stderr, flush=True)
        raise SystemExit(1)


if __name__ == "__main__":
    main()
