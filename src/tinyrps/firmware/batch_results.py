"""The results file of a firmware batch (firmware/protocol/batch_format.h), read into a BatchResult.

A batch (tinyrps.firmware.qemu.run_batch) leaves one file: a header (the program as loaded, its arena,
its boot, the firmware's limits, and the description of every input and output), a record per sample
(its status, its instructions, its outputs), the per-layer profile of the run and a trailer. Every
part is checked here against the layouts the C header states (tinyrps.firmware.c_facts), and a file
that does not parse, or a program the firmware refused, becomes one UserError that says why.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from ..infra.errors import UserError
from . import c_facts
from .boards import DEFAULT_BOARD
from .tensors import description_layout, parse_description, result_bytes, split_results

# Batch files (firmware/protocol/batch_format.h).
BATCH_VERSION = c_facts.define("BATCH_VERSION")
# The parts of the arena a program needs, in their order (trt_arena_layout; docs/runtime.md, "Memory plan").
ARENA_PARTS = ("planned", "workspace", "working")
BATCH_MAGIC = c_facts.define("BATCH_HEADER_ID").encode()
BATCH_PROFILE_MAGIC = c_facts.define("BATCH_PROFILE_ID").encode()
BATCH_TRAILER_MAGIC = c_facts.define("BATCH_TRAILER_ID").encode()
BATCH_HEADER = c_facts.layout("BATCH_HEADER_FIELDS", "BATCH_HEADER_FIXED_BYTES")   # then the tensor descriptions
BATCH_RECORD = c_facts.layout("BATCH_RECORD_FIELDS", "BATCH_RECORD_HEADER_BYTES")  # then the outputs
BATCH_PROFILE_HEADER = c_facts.layout("BATCH_PROFILE_FIELDS", "BATCH_PROFILE_HEADER_BYTES")
BATCH_LAYER = c_facts.layout("BATCH_LAYER_FIELDS", "BATCH_LAYER_BYTES")
BATCH_TRAILER = c_facts.layout("BATCH_TRAILER_FIELDS", "BATCH_TRAILER_BYTES")
KERNEL_VARIANTS = c_facts.kernel_variants()                       # what trt_call_variant names
DELEGATE_VARIANTS = ("npu",)     # ... of an Ethos-U delegate's call (firmware/src/ethos_u_delegate.c)
BATCH_EXIT_CODES = {code: text for code, text in c_facts.named_values("BATCH_EXIT_LIST").items() if code}


@dataclass
class BatchResult:
    outputs: list                 # per output of the program: [N, *shape] in its dtype
    outputs_int8: list            # per output: its raw int8 values [N, *shape], or None where it has none
    instructions: np.ndarray      # [N] instructions per inference (trt_run)
    model_sha256: Optional[str]   # the program's SHA-256 as the firmware computed it; None unless asked (sha256=True)
    model_bytes: int
    arena_needed: int
    arena_capacity: int
    boot_instructions: int        # reset to ready: startup, the board, the program found and loaded
    stack_used: int
    stack_size: int
    wall_s: float                 # QEMU start to exit
    board: str = DEFAULT_BOARD    # the firmware's own board name
    # per kernel call, in chain order: {"op", "kernels" (the variant the runtime bound), "variant" (its place in
    # the operator's variant list as the firmware compiles it), "macs" (per inference), "instructions" (mean per
    # sample)}
    layers: list = field(default_factory=list)
    inputs: tuple = ()            # TensorLayout of each input and output, as the firmware describes them
    output_specs: tuple = ()
    limits: dict = field(default_factory=dict)   # the firmware build's TRT_MAX_* limits
    # arena_needed's parts (trt_arena_layout): {"planned", "workspace", "working"} bytes
    arena_parts: dict = field(default_factory=dict)
    load_instructions: int = 0    # trt_load's share of boot_instructions
    sha256_instructions: int = 0  # what the hash took, after the boot (0 unless asked)

    @property
    def int8(self) -> np.ndarray:
        """An image classifier's raw int8 outputs [N, classes] (output 0's)."""
        return _rows(self.outputs_int8[0])

    @property
    def logits(self) -> np.ndarray:
        """An image classifier's float32 logits [N, classes] (output 0)."""
        return _rows(self.outputs[0])


def _rows(a: np.ndarray) -> np.ndarray:
    """[N, ...] -> [N, elements of one]."""
    return a.reshape(len(a), int(np.prod(a.shape[1:], dtype=np.int64)))


CORTEX_M_HINT = "export a Cortex-M program with `tinyrps export --target cortex-m55` (or another cortex-m target)"


def load_refusal(name: str, status: int, detail: str, needed: int, capacity: int, board: str,
                 hint: str = CORTEX_M_HINT) -> str:
    """The one line that says why the firmware of `board` did not load program `name`, and what to do: a
    program that does not fit says how much it needs against how much the board has."""
    statuses = {text: value for value, text in c_facts.status_names().items()}
    detail = detail or c_facts.status_names().get(status, f"status {status}")
    if status == statuses["arena too small"]:
        return (f"{name} does not fit the {board} firmware: it needs an arena of {needed:,} bytes, the board has "
                f"{capacity:,} bytes of RAM left for it")
    if status == statuses["over runtime limit"]:
        return (f"{name} does not run on the {board} firmware ({detail}): that build's tables hold fewer; a program's "
                "own image and library are sized to it (tinyrps.deploy)")
    return f"{name} does not run on the firmware ({detail}): {hint}"


def parse_batch(raw: bytes, status: int, said: str, pte: Path, count: int, wall: float) -> BatchResult:
    header = batch_header(raw, status, said, pte)
    if header["LOAD_STATUS"] != 0:
        raise UserError(load_refusal(pte.name, header["LOAD_STATUS"], header["LOAD_DETAIL"], header["ARENA_NEEDED"],
                                     header["ARENA_CAPACITY"], header["BOARD"]))
    if status != 0:
        raise UserError(f"the firmware batch on {pte.name} failed: {BATCH_EXIT_CODES.get(status, f'exit {status}')}"
                        + (f" ({said})" if said else ""))
    mismatch = f"the firmware batch on {pte.name} wrote a results file that does not parse"
    if header["COUNT"] != count:
        raise UserError(f"{mismatch}: its header counts {header['COUNT']} samples, {count} were sent; rebuild the "
                        "firmware")
    inputs, outputs = header["inputs"], header["outputs"]
    results = result_bytes(outputs)
    body = raw[header["HEADER_BYTES"]:]
    records_size = count * header["RECORD_BYTES"]
    if header["RECORD_BYTES"] != BATCH_RECORD.size + results or len(body) < records_size + BATCH_TRAILER.size:
        raise UserError(f"{mismatch} ({len(body)} bytes of results for {count} samples of {header['RECORD_BYTES']} "
                        "bytes); rebuild the firmware (host and firmware disagree on the file layout)")
    records = np.frombuffer(body[:records_size], np.uint8).reshape(count, header["RECORD_BYTES"])
    heads = [BATCH_RECORD.unpack(bytes(row[:BATCH_RECORD.size])) for row in records]
    failed = [i for i, h in enumerate(heads) if h["STATUS"] != 0]
    if failed:
        raise UserError(f"the firmware refused sample {failed[0]} of the batch "
                        f"(runtime status {heads[failed[0]]['STATUS']})")
    values, int8 = split_results(records[:, BATCH_RECORD.size:], list(outputs))
    layers, profile_size = batch_profile(body[records_size:len(body) - BATCH_TRAILER.size], count, mismatch,
                                          header["limits"])
    if records_size + profile_size + BATCH_TRAILER.size != len(body):
        raise UserError(f"{mismatch}: {len(body) - records_size - profile_size - BATCH_TRAILER.size} bytes too many; "
                        "rebuild the firmware")
    trailer = BATCH_TRAILER.unpack(body[-BATCH_TRAILER.size:])
    if trailer["MAGIC"].encode() != BATCH_TRAILER_MAGIC or trailer["RECORDS"] != count:
        raise UserError(f"the firmware batch on {pte.name} ends with a damaged trailer ({trailer['MAGIC']!r}, "
                        f"{trailer['RECORDS']} records for {count} samples): the file was cut short or overwritten; "
                        "run it again")
    instructions = np.array([h["INSTRUCTIONS"] for h in heads], np.int64)
    sha = header["SHA256"].hex() if header["SHA256_KNOWN"] else None
    return BatchResult(values, int8, instructions, sha, header["PROGRAM_BYTES"],
                       header["ARENA_NEEDED"], header["ARENA_CAPACITY"], header["BOOT_INSTRUCTIONS"],
                       trailer["STACK_USED"], trailer["STACK_SIZE"], wall, header["BOARD"], layers, inputs, outputs,
                       header["limits"], {part: header[f"ARENA_{part.upper()}"] for part in ARENA_PARTS},
                       load_instructions=header["LOAD_INSTRUCTIONS"], sha256_instructions=header["SHA256_INSTRUCTIONS"])


def batch_profile(raw: bytes, count: int, mismatch: str, limits: dict) -> tuple:
    """The per-layer profile block: ([{op, kernels, macs, instructions (mean per sample)}], its size in bytes)."""
    if len(raw) < BATCH_PROFILE_HEADER.size:
        raise UserError(f"{mismatch}: no per-layer profile; rebuild the firmware")
    profile = BATCH_PROFILE_HEADER.unpack(raw)
    n_layers, size = profile["LAYERS"], BATCH_PROFILE_HEADER.size + profile["LAYERS"] * profile["LAYER_BYTES"]
    max_calls = limits.get("TRT_MAX_KERNEL_CALLS", 0)
    if (profile["MAGIC"].encode() != BATCH_PROFILE_MAGIC or profile["LAYER_BYTES"] != BATCH_LAYER.size
            or profile["SAMPLES"] != count or n_layers > max_calls or len(raw) < size):
        raise UserError(f"{mismatch}: a damaged per-layer profile ({n_layers} kernel calls of at most {max_calls}, "
                        f"{profile['SAMPLES']} samples for {count}); rebuild the firmware")
    layers = []
    for i in range(n_layers):
        layer = BATCH_LAYER.unpack(raw, BATCH_PROFILE_HEADER.size + i * BATCH_LAYER.size)
        if layer["VARIANT"] not in KERNEL_VARIANTS + DELEGATE_VARIANTS:
            raise UserError(f"{mismatch}: kernel call {i} ran an unknown kernel variant {layer['VARIANT']!r} "
                            f"(known: {', '.join(KERNEL_VARIANTS)}); rebuild the firmware")
        layers.append({"op": layer["OPERATOR"], "kernels": layer["VARIANT"], "variant": int(layer["VARIANT_INDEX"]),
                       "macs": int(layer["MACS"]),
                       "instructions": round(layer["INSTRUCTIONS"] / count) if count else 0})
    return layers, size


def batch_header(raw: bytes, status: int, said: str, pte: Path) -> dict:
    if len(raw) < BATCH_HEADER.size or raw[:4] != BATCH_MAGIC:
        why = BATCH_EXIT_CODES.get(status, f"exit status {status}")
        raise UserError(f"the firmware batch on {pte.name} produced no results ({why})" + (f": {said}" if said else ""))
    header = BATCH_HEADER.unpack(raw)
    if header["VERSION"] != BATCH_VERSION:
        raise UserError(f"the firmware wrote batch results of version {header['VERSION']}, this host reads version "
                        f"{BATCH_VERSION}: rebuild the firmware from the same sources as the host")
    described = header["INPUTS"] + header["OUTPUTS"]
    desc = description_layout()
    if header["HEADER_BYTES"] != BATCH_HEADER.size + described * desc.size or len(raw) < header["HEADER_BYTES"]:
        raise UserError(f"the firmware batch on {pte.name} wrote a damaged header ({header['HEADER_BYTES']} bytes for "
                        f"{described} tensor descriptions); rebuild the firmware")
    try:
        specs = [parse_description(raw[BATCH_HEADER.size + k * desc.size:BATCH_HEADER.size + (k + 1) * desc.size])
                 for k in range(described)]
    except ValueError as e:
        raise UserError(f"the firmware batch on {pte.name} describes a tensor that does not add up ({e}); "
                        "rebuild the firmware") from None
    names = c_facts.limit_names()
    header["limits"] = {names[i] if i < len(names) else f"limit {i}": header["LIMITS"][i]
                        for i in range(min(header["LIMIT_COUNT"], len(header["LIMITS"])))}
    header["inputs"], header["outputs"] = tuple(specs[:header["INPUTS"]]), tuple(specs[header["INPUTS"]:])
    return header
