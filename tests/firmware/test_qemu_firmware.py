"""The firmware in QEMU: the round trip computes what the reference and the native build
compute, the batch transport agrees with the serial link, and QEMU is always stopped."""
from __future__ import annotations

import bisect
import hashlib
import os
import re
import signal
import struct
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from tinyrps.infra.errors import UserError
from tinyrps.firmware import batch_results, qemu
from tinyrps.firmware.link_protocol import LinkError

pytestmark = pytest.mark.slow     # builds the firmware, boots QEMU

def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie left for its parent to reap counts as stopped
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def wait_gone(pid: int, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


class Served:
    """One inference over the serial link, run on the program's tensors (write, run, read)."""

    def __init__(self, result):
        self.int8 = result.int8[0].reshape(-1)
        self.logits = result.outputs[0].reshape(-1)
        self.instructions = result.instructions


@pytest.fixture(scope="module")
def serial_results(cortex_m_pte, firmware_elf_path, test_images):
    with qemu.LinkedFirmware(cortex_m_pte, elf=firmware_elf_path) as server:
        info = server.link.info()
        inputs = qemu.images_as_input(test_images[0])
        results = [Served(server.link.run_tensors([x], info.inputs, info.outputs)) for x in inputs]
        # the image-classifier command computes the same
        inferred = [server.link.infer(image) for image in test_images[0]]
    assert [r.int8.tolist() for r in results] == [r.int8.tolist() for r in inferred]
    assert np.array_equal(np.stack([r.logits for r in results]), np.stack([r.logits for r in inferred]))
    return results


def test_serial_round_trip_is_bit_exact_with_the_reference(serial_results, cortex_m_pte, test_images):
    from tinyrps.reference.cortex_m import reference_int8
    device_int8 = np.stack([r.int8 for r in serial_results])
    assert np.array_equal(device_int8, reference_int8(cortex_m_pte, test_images[0]))


def test_serial_round_trip_matches_the_native_build(serial_results, cortex_m_pte, test_images):
    from tinyrps.devices import open_device
    with open_device("native", cortex_m_pte) as native:
        logits = native.classify(test_images[0])
        native_int8 = native.last_int8
    assert np.array_equal(np.stack([r.int8 for r in serial_results]), native_int8)
    assert np.array_equal(np.stack([r.logits for r in serial_results]), logits)


def test_batch_agrees_with_the_serial_link(serial_results, cortex_m_pte, firmware_elf_path, test_images):
    batch = qemu.run_batch(cortex_m_pte, test_images[0], elf=firmware_elf_path)
    assert np.array_equal(batch.int8, np.stack([r.int8 for r in serial_results]))
    assert np.array_equal(batch.logits, np.stack([r.logits for r in serial_results]))
    # same firmware, same counter: the instruction counts agree image by image
    assert batch.instructions.tolist() == [r.instructions for r in serial_results]
    assert 0 < batch.stack_used < batch.stack_size


def test_batch_of_nothing(cortex_m_pte, firmware_elf_path):
    batch = qemu.run_batch(cortex_m_pte, np.zeros((0, 28, 28), np.uint8), elf=firmware_elf_path)
    assert batch.int8.shape[0] == 0 and batch.outputs[0].shape == (0, 1, 3)


def test_batch_rejects_a_corrupted_program(cortex_m_pte, firmware_elf_path, tmp_path, test_images):
    bad = tmp_path / "truncated.pte"
    bad.write_bytes(cortex_m_pte.read_bytes()[:5000])
    with pytest.raises(UserError, match="does not run on the firmware"):
        qemu.run_batch(bad, test_images[0][:1], elf=firmware_elf_path)


def test_batch_timeout_stops_qemu(cortex_m_pte, firmware_elf_path, test_images):
    before = set(qemu._live_processes)
    with pytest.raises(UserError, match="did not finish within"):
        qemu.run_batch(cortex_m_pte, np.repeat(test_images[0], 20, axis=0), elf=firmware_elf_path, timeout=0.05)
    assert set(qemu._live_processes) == before


def description(dtype_code: int, shape: tuple, int8: bool = False) -> bytes:
    from tinyrps.firmware.tensors import description_layout
    numel = int(np.prod(shape))
    size = {0: 1, 1: 1, 3: 4, 6: 4}[dtype_code]
    return description_layout().pack(DTYPE=dtype_code, RANK=len(shape), FLAGS=int(int8), NUMEL=numel,
                                     NBYTES=numel * size, SIZES=list(shape), DIM_ORDER=bytes(range(len(shape))))


def batch_file(count: int, trailer_magic: str = "TRPE", trailer_records: int = None, version: int = None,
               header_count: int = None, profile_layers: int = 2, variant: str = "dsp", record_bytes: int = None,
               max_calls: int = 64) -> bytes:
    """A well-formed batch results file of `count` records, unless told otherwise: one float32 [1, 4] input,
    outputs float32 [1, 3] (with raw int8 values) and int32 [2]."""
    tensors = description(6, (1, 4)) + description(6, (1, 3), int8=True) + description(3, (2,))
    header = batch_results.BATCH_HEADER.pack(MAGIC="TRPO", VERSION=batch_results.BATCH_VERSION if version is None else version,
                                    HEADER_BYTES=batch_results.BATCH_HEADER.size + len(tensors),
                                    RECORD_BYTES=record_bytes or batch_results.BATCH_RECORD.size + 12 + 3 + 8,
                                    COUNT=count if header_count is None else header_count, ARENA_NEEDED=42048,
                                    ARENA_CAPACITY=65536, PROGRAM_BYTES=1000, BOOT_INSTRUCTIONS=5, BOARD="mps2-an505",
                                    INPUTS=1, OUTPUTS=2, SAMPLE_BYTES=16, LIMIT_COUNT=3, LIMITS=[65535, 32, max_calls])
    record = batch_results.BATCH_RECORD.pack(INSTRUCTIONS=2_000_000) + np.float32([0.5, 1, -1]).tobytes() \
        + np.int8([1, -2, 3]).tobytes() + np.int32([7, -8]).tobytes()
    profile = batch_results.BATCH_PROFILE_HEADER.pack(MAGIC="TRPL", LAYERS=profile_layers, LAYER_BYTES=batch_results.BATCH_LAYER.size,
                                             SAMPLES=count) \
        + batch_results.BATCH_LAYER.pack(OPERATOR="cortex_m::quantized_conv2d", VARIANT=variant, VARIANT_INDEX=2,
                                MACS=1000, INSTRUCTIONS=1_500_000 * count) \
        + batch_results.BATCH_LAYER.pack(OPERATOR="cortex_m::quantized_linear", VARIANT="c", MACS=10,
                                INSTRUCTIONS=499_000 * count)
    trailer = batch_results.BATCH_TRAILER.pack(MAGIC=trailer_magic, STACK_USED=2000, STACK_SIZE=8192,
                                      RECORDS=count if trailer_records is None else trailer_records)
    return header + tensors + record * count + profile + trailer


def test_batch_parser_reads_a_well_formed_file(tmp_path):
    result = batch_results.parse_batch(batch_file(2), 0, "", tmp_path / "m.pte", 2, 0.1)
    assert result.int8.tolist() == [[1, -2, 3]] * 2 and result.stack_used == 2000
    assert result.logits.tolist() == [[0.5, 1, -1]] * 2
    assert [o.shape for o in result.outputs] == [(2, 1, 3), (2, 2)] and result.outputs_int8[1] is None
    assert result.outputs[1].dtype == np.int32 and result.outputs[1].tolist() == [[7, -8]] * 2
    assert result.board == "mps2-an505" and result.limits["TRT_MAX_KERNEL_CALLS"] == 64
    assert [s.shape for s in result.inputs] == [(1, 4)]
    assert result.layers == [
        {"op": "cortex_m::quantized_conv2d", "kernels": "dsp", "variant": 2, "macs": 1000, "instructions": 1_500_000},
        {"op": "cortex_m::quantized_linear", "kernels": "c", "variant": 0, "macs": 10, "instructions": 499_000}]


def test_batch_parser_refuses_a_cut_profile(tmp_path):
    raw = batch_file(2)
    cut = raw[:-16 - batch_results.BATCH_LAYER.size] + raw[-16:]        # the last layer entry is missing
    with pytest.raises(UserError, match="profile"):
        batch_results.parse_batch(cut, 0, "", tmp_path / "m.pte", 2, 0.1)


@pytest.mark.parametrize("damage,message", [
    ({"version": batch_results.BATCH_VERSION - 1}, f"version {batch_results.BATCH_VERSION - 1}, this host reads version "
                                          f"{batch_results.BATCH_VERSION}"),
    ({"header_count": 3}, "header counts 3 samples, 2 were sent"),
    ({"profile_layers": 3}, "damaged per-layer profile"),                 # more layers than the block holds
    ({"profile_layers": 1}, "bytes too many"),                           # fewer: a layer left over
    ({"profile_layers": 65}, "65 kernel calls of at most 64"),           # more than the firmware's limit
    ({"max_calls": 1}, "2 kernel calls of at most 1"),
    ({"variant": "neon"}, "unknown kernel variant 'neon'"),
    ({"trailer_magic": "XXXX"}, "trailer"),
    ({"trailer_records": 1}, "trailer"),
    ({"record_bytes": 40}, "disagree on the file layout"),               # not what the outputs take
], ids=["version", "header-count", "layers-over", "layers-under", "layers-limit", "firmware-limit", "variant",
        "trailer-magic", "trailer-records", "record-size"])
def test_batch_parser_refuses_a_damaged_file(tmp_path, damage, message):
    with pytest.raises(UserError, match=message):
        batch_results.parse_batch(batch_file(2, **damage), 0, "", tmp_path / "m.pte", 2, 0.1)


def test_server_is_stopped_on_close_and_on_error(cortex_m_pte, firmware_elf_path):
    with qemu.LinkedFirmware(cortex_m_pte, elf=firmware_elf_path) as server:
        pid = server.process.pid
        assert server.link.info().loaded
    assert wait_gone(pid)

    with pytest.raises(RuntimeError):
        with qemu.LinkedFirmware(cortex_m_pte, elf=firmware_elf_path) as server:
            pid = server.process.pid
            raise RuntimeError("boom")
    assert wait_gone(pid)

    with pytest.raises(KeyboardInterrupt):
        with qemu.LinkedFirmware(cortex_m_pte, elf=firmware_elf_path) as server:
            pid = server.process.pid
            raise KeyboardInterrupt
    assert wait_gone(pid)


def test_qemu_that_dies_is_reported_at_once(cortex_m_pte, firmware_elf_path):
    with qemu.LinkedFirmware(cortex_m_pte, elf=firmware_elf_path, timeout=30) as server:
        server.link.info()
        server.process.kill()
        start = time.monotonic()
        with pytest.raises(LinkError, match="QEMU exited|broke"):
            server.link.info()
        assert time.monotonic() - start < 5


def _child_with_a_server(pte, elf) -> subprocess.Popen:
    script = textwrap.dedent(f"""
        import signal, time
        from tinyrps.firmware.qemu import LinkedFirmware
        signal.signal(signal.SIGINT, signal.default_int_handler)   # as in a terminal, even if started in the background
        server = LinkedFirmware({str(pte)!r}, elf={str(elf)!r}).start()
        server.link.info()
        print(server.process.pid, flush=True)
        with server:
            time.sleep(60)
    """)
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "killed"])
def test_qemu_does_not_outlive_its_python(cortex_m_pte, firmware_elf_path, how):
    child = _child_with_a_server(cortex_m_pte, firmware_elf_path)
    try:
        qemu_pid = int(child.stdout.readline())
        assert alive(qemu_pid)
        child.send_signal(how)
        child.wait(10)
        assert wait_gone(qemu_pid), "QEMU survived its parent"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_missing_qemu_says_how_to_install(monkeypatch):
    monkeypatch.setattr(qemu.shutil, "which", lambda name: None)
    with pytest.raises(UserError, match="apt-get install --no-install-recommends .*qemu-system-arm"):
        qemu.require_qemu()


def test_boot_descriptor_words():
    words = qemu.descriptor_words(437820, qemu.MODE_BATCH, qemu.FLAG_SHA256)
    assert len(words) == 3
    raw = b"".join(word.to_bytes(8, "little") for word in words)
    fields = qemu.DESCRIPTOR.unpack(raw)
    assert (fields["MAGIC"], fields["VERSION"], fields["MODEL_LENGTH"], fields["MODE"], fields["FLAGS"]) == \
        (qemu.DESCRIPTOR_MAGIC, qemu.DESCRIPTOR_VERSION, 437820, qemu.MODE_BATCH, qemu.FLAG_SHA256)
    assert fields["CHECK"] == qemu.DESCRIPTOR_MAGIC ^ qemu.DESCRIPTOR_VERSION ^ 437820 ^ qemu.MODE_BATCH \
        ^ qemu.FLAG_SHA256 ^ 0xFFFFFFFF


def test_the_batch_hashes_the_program_only_when_asked(cortex_m_pte, firmware_elf_path, test_images):
    """The boot (reset to ready) does not hash the program: a batch hashes it when its boot descriptor asks,
    after the boot, and reports what the hash took apart. The boot costs the same either way."""
    plain = qemu.run_batch(cortex_m_pte, test_images[0][:1], elf=firmware_elf_path)
    hashed = qemu.run_batch(cortex_m_pte, test_images[0][:1], elf=firmware_elf_path, sha256=True)
    assert plain.model_sha256 is None and plain.sha256_instructions == 0
    assert hashed.model_sha256 == hashlib.sha256(cortex_m_pte.read_bytes()).hexdigest()
    assert hashed.sha256_instructions > 10 * hashed.boot_instructions
    assert (plain.boot_instructions, plain.load_instructions) == (hashed.boot_instructions, hashed.load_instructions)
    assert 0 < plain.load_instructions < plain.boot_instructions <= 2_000_000
    assert np.array_equal(plain.instructions, hashed.instructions) and np.array_equal(plain.int8, hashed.int8)


def _symbol(elf, name: str) -> int:
    symbols = subprocess.run(["arm-none-eabi-nm", str(elf)], capture_output=True, text=True, check=True).stdout
    return next(int(line.split()[0], 16) & ~1 for line in symbols.splitlines() if line.endswith(f" {name}"))


def test_the_boot_is_counted_from_reset_to_ready(cortex_m_pte, firmware_elf_path, tmp_path):
    """The boot figure is every instruction from reset until the firmware is ready (here: run_batch starts),
    counted apart from SysTick: QEMU's trace of the translation blocks it ran, each block's instructions
    counted in the firmware's disassembly (QEMU's own disassembler splits the MVE instructions)."""
    dump = subprocess.run(["arm-none-eabi-objdump", "-d", "-m", "armv8.1-m.main", str(firmware_elf_path)],
                          capture_output=True, text=True, check=True).stdout
    instructions = sorted(int(m.group(1), 16) for m in re.finditer(r"^\s+([0-9a-f]+):\s", dump, re.M))
    ready = _symbol(firmware_elf_path, "run_batch")
    (tmp_path / "samples.bin").write_bytes(b"")
    log = tmp_path / "exec.log"
    command = qemu.qemu_command(firmware_elf_path, cortex_m_pte, qemu.MODE_BATCH) + [
        "-serial", "null", "-semihosting-config", "enable=on,target=native,arg=fw,arg=samples.bin,arg=results.bin",
        "-d", "in_asm,exec,nochain", "-D", str(log)]
    subprocess.run(command, cwd=tmp_path, timeout=300, check=True, capture_output=True)
    header = batch_results.batch_header((tmp_path / "results.bin").read_bytes(), 0, "", cortex_m_pte)
    blocks, executed, block, reached = {}, 0, None, False
    with open(log, errors="replace") as lines:
        for line in lines:
            if line.startswith("IN:"):          # a block translated: its instructions follow, one a line
                block = None
            elif re.match(r"0x[0-9a-f]{8}:\s", line):
                address = int(line[2:10], 16)
                block = address if block is None else block
                blocks[block] = (block, address)
            elif line.startswith("Trace"):      # a block run: [cs_base/pc/flags/cflags]
                block = None
                pc = int(re.search(r"/([0-9a-f]{8})/", line).group(1), 16)
                if pc == ready:
                    reached = True
                    break
                first, last = blocks[pc]
                executed += bisect.bisect_right(instructions, last) - bisect.bisect_left(instructions, first)
    assert reached, "run_batch never ran"
    # SysTick is read to a tick (31.25 instructions here); a few instructions of the reset handler run before
    # it starts, a few of main after the figure is read, and a block QEMU leaves at once (its instruction
    # budget spent) is traced though it ran nothing
    assert abs(header["BOOT_INSTRUCTIONS"] - executed) <= 100 + executed // 1000, (header["BOOT_INSTRUCTIONS"], executed)
    assert 0 < header["LOAD_INSTRUCTIONS"] < header["BOOT_INSTRUCTIONS"] <= 2_000_000


def test_program_without_descriptor_is_found_by_its_header(cortex_m_pte, firmware_elf_path, monkeypatch):
    """A board has no loader for the descriptor: the firmware reads the length from the .pte's own header."""
    plain = qemu.qemu_command

    def without_descriptor(elf, pte, mode, board, flags=0):
        command = plain(elf, pte, mode, board, flags)
        return [a for i, a in enumerate(command)
                if "data-len" not in a and not (a == "-device" and "data-len" in command[i + 1])]
    monkeypatch.setattr(qemu, "qemu_command", without_descriptor)
    with qemu.LinkedFirmware(cortex_m_pte, elf=firmware_elf_path) as server:
        info = server.link.info()
    assert info.model_source == "program header"
    assert info.model_bytes == cortex_m_pte.stat().st_size and info.loaded


def _firmware_with_a_trap_in(elf, function: str, out):
    """A copy of the firmware whose `function` starts with an undefined instruction (UDF)."""
    symbols = subprocess.run(["arm-none-eabi-nm", str(elf)], capture_output=True, text=True, check=True).stdout
    address = next(int(line.split()[0], 16) for line in symbols.splitlines() if line.endswith(f" {function}"))
    data = bytearray(elf.read_bytes())
    shoff, = struct.unpack_from("<I", data, 0x20)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x2E)
    for i in range(shnum):
        _, _, _, addr, offset, size = struct.unpack_from("<IIIIII", data, shoff + i * shentsize)
        if addr <= address < addr + size and offset:
            at = offset + (address & ~1) - addr
            data[at:at + 2] = b"\xfe\xde"          # Thumb UDF #0xfe
            out.write_bytes(bytes(data))
            return out
    raise AssertionError(f"{function} not found in {elf}")


def test_cpu_fault_is_reported_and_qemu_ends(cortex_m_pte, firmware_elf_path, test_images, tmp_path):
    # the image command's trt_infer and the batch's trt_run (which trt_infer may have inlined)
    trapped = _firmware_with_a_trap_in(firmware_elf_path, "trt_infer", tmp_path / "trapped.elf")
    trapped = _firmware_with_a_trap_in(trapped, "trt_run", tmp_path / "trapped.elf")
    with qemu.LinkedFirmware(cortex_m_pte, elf=trapped) as server:
        assert server.link.info().loaded
        with pytest.raises(LinkError, match=r"crashed during 'infer': cpu fault: pc=0x"):
            server.link.infer(test_images[0][0])
        server.process.wait(5)          # the firmware resets; -no-reboot ends QEMU
    with pytest.raises(UserError, match="a CPU fault"):
        qemu.run_batch(cortex_m_pte, test_images[0][:1], elf=trapped)   # its inputs from an empty batch: no run

