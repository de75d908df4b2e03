"""The device link's wire format, the Python side of firmware/protocol/link_protocol.h.

The format is defined once, in that header (described in docs/firmware.md): the constants,
commands, error codes and payload layouts below are read from it (c_facts). Here: frames
encoded and decoded, each reply parsed and checked, an input cut into the WRITE requests that
carry it, and the errors of the link. tinyrps.firmware.link sends and waits.

A reply that breaks the protocol's promises (a wrong size, a count that does not add up, a
status no firmware sends) raises BoardReplyError, "the board's reply is invalid: ...".
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Optional

import numpy as np

from ..infra.errors import UserError
from . import c_facts
from .tensors import TensorLayout


def _define(name: str):
    return c_facts.define(name)


SYNC = bytes([_define("LINK_SYNC0"), _define("LINK_SYNC1")])
HEADER = struct.Struct("<2sBBH")       # sync, type, sequence, payload length (LINK_HEADER_BYTES)
CRC = struct.Struct("<I")
MAX_PAYLOAD = _define("LINK_MAX_PAYLOAD")
PROTOCOL_VERSION = _define("LINK_PROTOCOL_VERSION")
REPLY = _define("LINK_REPLY")
ERROR = _define("LINK_ERROR")
assert HEADER.size == _define("LINK_HEADER_BYTES") and CRC.size == _define("LINK_CRC_BYTES")

COMMANDS = {row[2]: row[1] for row in c_facts.listing("LINK_COMMAND_LIST")}    # "info" -> 0x01
CMD_INFO, CMD_INFER, CMD_ECHO = COMMANDS["info"], COMMANDS["infer"], COMMANDS["echo"]
CMD_TENSOR, CMD_WRITE, CMD_RUN, CMD_READ = COMMANDS["tensor"], COMMANDS["write"], COMMANDS["run"], COMMANDS["read"]

# Error codes of the firmware -> what they mean for the user.
ERROR_CODES = c_facts.named_values("LINK_ERROR_LIST")
ERR_GARBAGE = c_facts.value_of("LINK_ERROR_LIST", "LINK_ERR_GARBAGE")
ERR_FAULT = c_facts.value_of("LINK_ERROR_LIST", "LINK_ERR_FAULT")
ERR_OVERRUN = c_facts.value_of("LINK_ERROR_LIST", "LINK_ERR_OVERRUN")
# errors whose value is a trt_status
STATUS_ERRORS = {c_facts.value_of("LINK_ERROR_LIST", "LINK_ERR_NO_PROGRAM"),
                 c_facts.value_of("LINK_ERROR_LIST", "LINK_ERR_INFER_FAILED")}

IMAGE_BYTES = _define("LINK_INFER_IMAGE_BYTES")
MODEL_SOURCES = c_facts.named_values("LINK_MODEL_SOURCE_LIST")
TRT_STATUS = c_facts.status_names()
ENCODING_RAW = c_facts.value_of("LINK_ENCODING_LIST", "LINK_ENCODING_RAW")
ENCODING_IMAGE = c_facts.value_of("LINK_ENCODING_LIST", "LINK_ENCODING_IMAGE")
PART_VALUES = c_facts.value_of("LINK_PART_LIST", "LINK_PART_VALUES")
PART_INT8 = c_facts.value_of("LINK_PART_LIST", "LINK_PART_INT8")
TENSOR_INPUT = c_facts.value_of("LINK_TENSOR_KIND_LIST", "LINK_TENSOR_INPUT")
TENSOR_OUTPUT = c_facts.value_of("LINK_TENSOR_KIND_LIST", "LINK_TENSOR_OUTPUT")


def _layout(fields: str, size: str) -> c_facts.Layout:
    return c_facts.layout(fields, size)


INFO_LAYOUT = _layout("LINK_INFO_FIELDS", "LINK_INFO_BYTES")
INFER_HEADER = _layout("LINK_INFER_FIELDS", "LINK_INFER_HEADER_BYTES")
ERROR_HEADER = _layout("LINK_ERROR_FIELDS", "LINK_ERROR_HEADER_BYTES")
TENSOR_REQUEST = _layout("LINK_TENSOR_FIELDS", "LINK_TENSOR_REQUEST_BYTES")
WRITE_HEADER = _layout("LINK_WRITE_FIELDS", "LINK_WRITE_HEADER_BYTES")
WRITE_REPLY = _layout("LINK_WRITE_REPLY_FIELDS", "LINK_WRITE_REPLY_BYTES")
RUN_REPLY = _layout("LINK_RUN_FIELDS", "LINK_RUN_REPLY_BYTES")
READ_REQUEST = _layout("LINK_READ_FIELDS", "LINK_READ_REQUEST_BYTES")
READ_REPLY = _layout("LINK_READ_REPLY_FIELDS", "LINK_READ_REPLY_HEADER_BYTES")



class LinkError(UserError):
    """The device link failed: no reply, a broken line, or an error reported by the firmware."""


class BoardReplyError(LinkError):
    """A reply that breaks the protocol: it cannot come from a working board with this firmware."""

    def __init__(self, what: str):
        super().__init__(f"the board's reply is invalid: {what}")


class DeviceError(LinkError):
    """The firmware answered a request with an error frame."""

    def __init__(self, code: int, value: int, text: str, command: str):
        self.code, self.value, self.text = code, value, text
        meaning = ERROR_CODES.get(code, f"error code {code}")
        said = "" if text == meaning else f"{text}, "
        if code in STATUS_ERRORS:
            said += f"runtime status {TRT_STATUS[value]}"
        else:
            said += f"value {value}"
        super().__init__(f"the device rejected '{command}': {meaning} ({said})")


@dataclass(frozen=True)
class Frame:
    type: int
    seq: int
    payload: bytes


@dataclass(frozen=True)
class Info:
    protocol: int
    firmware: str
    board: str
    model_sha256: str          # as the firmware computed it (on the first INFO: not part of its boot)
    model_bytes: int
    model_source: str
    load_status: int
    arena_capacity: int
    arena_needed: int
    stack_size: int
    stack_used: int
    boot_instructions: int     # reset to ready: startup, the board, the program found and loaded
    load_detail: str
    input_count: int = 0       # the loaded program's inputs
    output_count: int = 0      # and outputs
    inputs: tuple = ()         # TensorLayout of each input (TENSOR; DeviceLink.info asks for them)
    outputs: tuple = ()        # and of each output
    limits: dict = field(default_factory=dict)   # the firmware build's TRT_MAX_* limits
    load_instructions: int = 0      # trt_load's share of boot_instructions
    sha256_instructions: int = 0    # what the hash took, on the first INFO after the boot

    @property
    def loaded(self) -> bool:
        return self.load_status == 0

    @property
    def load_status_name(self) -> str:
        return TRT_STATUS.get(self.load_status, str(self.load_status))


@dataclass(frozen=True)
class InferResult:
    int8: np.ndarray          # raw int8 outputs of the last quantized operator
    logits: np.ndarray        # float32 logits (dequantized)
    instructions: int         # instructions of the inference on the device
    link_ms: float            # wall time of the whole request/reply round trip


@dataclass(frozen=True)
class RunResult:
    outputs: list             # each output in its dtype and logical shape
    int8: list                # its raw int8 values (same shape), or None where it has none
    instructions: int         # instructions of trt_run on the device
    link_ms: float            # wall time of writing the inputs, running and reading the outputs


def encode_frame(frame_type: int, seq: int, payload: bytes = b"") -> bytes:
    if len(payload) > MAX_PAYLOAD:
        raise ValueError(f"payload of {len(payload)} bytes exceeds the link's maximum of {MAX_PAYLOAD}")
    body = HEADER.pack(SYNC, frame_type, seq, len(payload))[2:] + payload
    return SYNC + body + CRC.pack(zlib.crc32(body))


class FrameDecoder:
    """Turns received bytes into frames; skips noise and corrupted frames, like the firmware."""

    def __init__(self):
        self.buffer = bytearray()
        self.skipped = 0          # bytes dropped while looking for frames

    def feed(self, data: bytes) -> list:
        self.buffer += data
        frames = []
        while True:
            frame = self._next_frame()
            if frame is None:
                return frames
            frames.append(frame)

    def _next_frame(self) -> Optional[Frame]:
        while True:
            start = self.buffer.find(SYNC)
            if start < 0:
                # keep a trailing first sync byte: the second may be on its way
                keep = 1 if self.buffer[-1:] == SYNC[:1] else 0
                self._drop(len(self.buffer) - keep)
                return None
            self._drop(start)
            if len(self.buffer) < HEADER.size:
                return None
            _, frame_type, seq, length = HEADER.unpack_from(self.buffer)
            if length > MAX_PAYLOAD:
                self._drop(1)
                continue
            total = HEADER.size + length + CRC.size
            if len(self.buffer) < total:
                return None
            body = bytes(self.buffer[2:HEADER.size + length])
            (crc,) = CRC.unpack_from(self.buffer, HEADER.size + length)
            if zlib.crc32(body) != crc:
                self._drop(1)       # a frame may start inside this one
                continue
            payload = bytes(self.buffer[HEADER.size:HEADER.size + length])
            del self.buffer[:total]
            return Frame(frame_type, seq, payload)

    def bytes_wanted(self) -> int:
        """How many more bytes complete the frame being received (at least 1): reading
        exactly that many never waits for bytes that are not coming."""
        start = self.buffer.find(SYNC)
        if start < 0:
            return 1
        have = len(self.buffer) - start
        if have < HEADER.size:
            return HEADER.size - have
        (length,) = struct.unpack_from("<H", self.buffer, start + 4)
        if length > MAX_PAYLOAD:
            return 1
        return max(1, HEADER.size + length + CRC.size - have)

    def _drop(self, count: int) -> None:
        self.skipped += count
        del self.buffer[:count]


# ---------------------------------------------------------------------------------------------
# Parsing and checking replies
# ---------------------------------------------------------------------------------------------

def need_size(what: str, payload: bytes, size: int) -> None:
    if len(payload) != size:
        raise BoardReplyError(f"the {what} reply is {len(payload)} bytes, not {size}")


def known_status(status: int, where: str) -> str:
    if status not in TRT_STATUS:
        raise BoardReplyError(f"{where} is status {status}, which the runtime never returns")
    return TRT_STATUS[status]


def parse_info(payload: bytes) -> Info:
    """An INFO reply (the tensors' descriptions come from TENSOR requests: DeviceLink.info)."""
    if len(payload) < 2 or struct.unpack_from("<H", payload)[0] != PROTOCOL_VERSION:
        protocol = struct.unpack_from("<H", payload)[0] if len(payload) >= 2 else "unknown"
        # the layout of every other reply may have changed too: parse nothing more from this device
        raise LinkError(f"the device speaks link protocol version {protocol}, this host version {PROTOCOL_VERSION}: "
                        "rebuild the firmware from the same sources as the host (or update the host)")
    need_size("info", payload, INFO_LAYOUT.size)
    d = INFO_LAYOUT.unpack(payload)
    if d["SIZE"] != INFO_LAYOUT.size:
        raise BoardReplyError(f"the info reply says it is {d['SIZE']} bytes; it is {INFO_LAYOUT.size}")
    known_status(d["LOAD_STATUS"], "the program's load")
    names, count = c_facts.limit_names(), d["LIMIT_COUNT"]
    if count > len(d["LIMITS"]):
        raise BoardReplyError(f"the info reply counts {count} limits, it holds at most {len(d['LIMITS'])}")
    limits = {names[i] if i < len(names) else f"limit {i}": d["LIMITS"][i] for i in range(count)}
    if d["LOAD_STATUS"] != 0 and (d["INPUTS"] or d["OUTPUTS"]):
        raise BoardReplyError(f"a program that did not load has {d['INPUTS']} inputs and {d['OUTPUTS']} outputs")
    info = Info(d["PROTOCOL"], d["FIRMWARE"], d["BOARD"], d["SHA256"].hex(), d["MODEL_BYTES"],
                MODEL_SOURCES.get(d["MODEL_SOURCE"], f"unknown ({d['MODEL_SOURCE']})"), d["LOAD_STATUS"],
                d["ARENA_CAPACITY"], d["ARENA_NEEDED"], d["STACK_SIZE"], d["STACK_USED"], d["BOOT_INSTRUCTIONS"],
                d["LOAD_DETAIL"], d["INPUTS"], d["OUTPUTS"], limits=limits,
                load_instructions=d["LOAD_INSTRUCTIONS"], sha256_instructions=d["SHA256_INSTRUCTIONS"])
    return info


def parse_infer(payload: bytes, link_ms: float) -> InferResult:
    if len(payload) < INFER_HEADER.size:
        raise BoardReplyError(f"the infer reply is {len(payload)} bytes, too short for its header")
    d = INFER_HEADER.unpack(payload)
    if d["STATUS"] != 0:
        raise BoardReplyError(f"the infer reply carries status {d['STATUS']}; a reply always carries 0 "
                              "(a refusal comes as an error)")
    n = d["OUTPUTS"]
    expected = INFER_HEADER.size + 5 * n
    if len(payload) != expected or n == 0:
        raise BoardReplyError(f"the infer reply is {len(payload)} bytes for {n} outputs (expected {expected})")
    body = payload[INFER_HEADER.size:]
    int8 = np.frombuffer(body, np.int8, n).copy()
    logits = np.frombuffer(body, "<f4", n, offset=n).astype(np.float32)
    return InferResult(int8, logits, d["INSTRUCTIONS"], link_ms)


def parse_error(payload: bytes) -> tuple:
    if len(payload) < ERROR_HEADER.size:
        return 0, 0, "unparsable error frame"
    d = ERROR_HEADER.unpack(payload)
    return d["CODE"], d["VALUE"], payload[ERROR_HEADER.size:].decode("ascii", "replace")


@dataclass(frozen=True)
class Piece:
    """One WRITE request's payload (header and data) and the elements it puts."""
    index: int
    first: int
    count: int
    payload: bytes


def input_pieces(index: int, spec: TensorLayout, array: np.ndarray) -> list:
    """The WRITE requests that put input `index` in full, one frame each. A float32 tensor whose every value is
    a uint8 over 255 (an image) travels as those bytes, a quarter of the size."""
    pixels = image_pixels(spec, array)
    if pixels is not None:
        encoding, data, elem = ENCODING_IMAGE, pixels, 1
    else:
        encoding, data, elem = ENCODING_RAW, spec.to_bytes(array), spec.dtype.itemsize
    per_frame = (MAX_PAYLOAD - WRITE_HEADER.size) // elem
    return [Piece(index, first, min(per_frame, spec.numel - first),
                  WRITE_HEADER.pack(INDEX=index, ENCODING=encoding, FIRST=first)
                  + data[first * elem:(first + per_frame) * elem])
            for first in range(0, spec.numel, per_frame)]


def image_pixels(spec: TensorLayout, array: np.ndarray) -> Optional[bytes]:
    """A float32 tensor whose every value is exactly (float32)v / 255 for a uint8 v, bit for bit: those v in
    memory order (the link's image encoding, which the firmware turns back into the same floats); else None."""
    if spec.dtype != np.float32:
        return None
    x = np.ascontiguousarray(np.asarray(array, np.float32).transpose(spec.dim_order)).reshape(-1)
    with np.errstate(invalid="ignore"):     # NaN and inf are no pixels: they fail the comparison below
        v = np.clip(np.nan_to_num(np.rint(x * np.float32(255))), 0, 255).astype(np.uint8)
    back = v.astype(np.float32) / np.float32(255)
    return v.tobytes() if np.array_equal(back.view(np.uint32), x.view(np.uint32)) else None


@lru_cache(maxsize=None)
def command_names() -> dict:
    return {value: name for name, value in COMMANDS.items()}


def command_name(command: int) -> str:
    return command_names().get(command, f"command 0x{command:02x}")
