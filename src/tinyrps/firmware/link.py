"""The host side of the device link: framed requests to the firmware over a serial line.

The wire format is defined once, in firmware/protocol/link_protocol.h (described in
docs/firmware.md): the constants, commands, error codes and payload layouts below are read
from it (c_facts). Any pyserial port works (`/dev/ttyACM0` for a board, `socket://HOST:PORT` for a
UART served on TCP); the firmware in QEMU is reached through SocketPort, a plain TCP connection.

Every read has a deadline. A failure (no reply, a closed line, an error reply) raises
LinkError, a UserError with one clear line; a reply that breaks the protocol's promises (a
wrong size, a count that does not add up, a status no firmware sends) raises BoardReplyError,
"the board's reply is invalid: ...".
"""
from __future__ import annotations

import collections
import select
import socket
import struct
import time
import zlib
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Optional

import numpy as np

from ..infra.errors import UserError
from . import c_facts
from .tensors import TensorLayout, parse_description


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

DEFAULT_TIMEOUT_S = 10.0
# how long one read call may block before the deadline and the liveness check are looked at again
POLL_S = 0.05


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

def _need_size(what: str, payload: bytes, size: int) -> None:
    if len(payload) != size:
        raise BoardReplyError(f"the {what} reply is {len(payload)} bytes, not {size}")


def _known_status(status: int, where: str) -> str:
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
    _need_size("info", payload, INFO_LAYOUT.size)
    d = INFO_LAYOUT.unpack(payload)
    if d["SIZE"] != INFO_LAYOUT.size:
        raise BoardReplyError(f"the info reply says it is {d['SIZE']} bytes; it is {INFO_LAYOUT.size}")
    _known_status(d["LOAD_STATUS"], "the program's load")
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


# ---------------------------------------------------------------------------------------------
# The link
# ---------------------------------------------------------------------------------------------

class SocketPort:
    """A TCP connection with the few calls the link makes of a pyserial port. pyserial's own
    socket:// port would serve, but its close() sleeps 0.3 s (room for a quick reconnect, which
    the emulator's one connection never makes): a third of a second on every board closed."""

    def __init__(self, host: str, port: int, write_timeout: float):
        self.sock = socket.create_connection((host, port), timeout=write_timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def read(self, size: int) -> bytes:
        """Up to `size` bytes: what has come within POLL_S (b"" if nothing). A closed connection
        raises OSError once what the other end sent before closing has been read."""
        if not select.select([self.sock], [], [], POLL_S)[0]:
            return b""
        data = self.sock.recv(size)
        if not data:
            raise ConnectionResetError("the other end closed the connection")
        return data

    def write(self, data: bytes) -> None:
        self.sock.sendall(data)         # within the write timeout given at connection

    def flush(self) -> None:
        """Nothing to do: sendall has handed every byte to the kernel."""

    def close(self) -> None:
        self.sock.close()


class DeviceLink:
    """Requests to the firmware over one serial port. Not thread-safe: one request at a time."""

    def __init__(self, port, timeout: float = DEFAULT_TIMEOUT_S, describe: str = "the device",
                 check_alive: Optional[Callable[[], None]] = None):
        """port: an open pyserial port. check_alive, if given, is called while waiting and
        raises when the other end is known to be gone (e.g. the QEMU process exited)."""
        self.port = port
        self.timeout = timeout
        self.describe = describe
        self.check_alive = check_alive or (lambda: None)
        self.decoder = FrameDecoder()
        self.pending = collections.deque()   # frames decoded but not yet looked at, oldest first
        self.notices = []          # unsolicited error reports (garbage, overrun), newest last
        self._seq = 0

    @classmethod
    def connect(cls, host: str, port: int, timeout: float = DEFAULT_TIMEOUT_S, **kwargs) -> "DeviceLink":
        """A link over a TCP connection (the emulator's UART on a loopback socket)."""
        try:
            connection = SocketPort(host, port, write_timeout=timeout)
        except OSError as e:
            raise LinkError(f"cannot connect to {host}:{port}: {e}") from None
        return cls(connection, timeout, **kwargs)

    @classmethod
    def open(cls, url: str, timeout: float = DEFAULT_TIMEOUT_S, baudrate: int = 115200, **kwargs) -> "DeviceLink":
        import serial
        try:
            port = serial.serial_for_url(url, baudrate=baudrate, timeout=POLL_S, write_timeout=timeout)
        except (serial.SerialException, ValueError) as e:
            raise LinkError(f"cannot open the serial port {url}: {e}") from None
        return cls(port, timeout, describe=kwargs.pop("describe", url), **kwargs)

    def close(self) -> None:
        try:
            self.port.close()
        except Exception:
            pass

    # ---- commands ----

    def info(self, timeout: Optional[float] = None) -> Info:
        """INFO, then the description of every input and output of the program (TENSOR)."""
        info = parse_info(self.request(CMD_INFO, b"", timeout=timeout).payload)
        inputs = tuple(self.tensor(TENSOR_INPUT, i, timeout) for i in range(info.input_count))
        outputs = tuple(self.tensor(TENSOR_OUTPUT, i, timeout) for i in range(info.output_count))
        if any(spec.has_int8 for spec in inputs):
            raise BoardReplyError("an input is described as having raw int8 values (only outputs have them)")
        return Info(**{**info.__dict__, "inputs": inputs, "outputs": outputs})

    def tensor(self, kind: int, index: int, timeout: Optional[float] = None) -> TensorLayout:
        payload = self.request(CMD_TENSOR, TENSOR_REQUEST.pack(KIND=kind, INDEX=index), timeout=timeout).payload
        try:
            return parse_description(payload)
        except ValueError as e:
            which = "input" if kind == TENSOR_INPUT else "output"
            raise BoardReplyError(f"the description of {which} {index} does not add up ({e})") from None

    def infer(self, image, timeout: Optional[float] = None) -> InferResult:
        """The image-classifier convenience: one 28x28 uint8 image, its raw int8 outputs and logits."""
        data = np.ascontiguousarray(image, dtype=np.uint8).tobytes() if not isinstance(image, bytes) else image
        if len(data) != IMAGE_BYTES:
            raise LinkError(f"an image for the device must be 28x28 uint8 ({IMAGE_BYTES} bytes), got {len(data)} bytes")
        start = time.perf_counter()
        reply = self.request(CMD_INFER, data, timeout=timeout)
        return parse_infer(reply.payload, (time.perf_counter() - start) * 1000.0)

    def echo(self, data: bytes, timeout: Optional[float] = None) -> bytes:
        return self.request(CMD_ECHO, data, timeout=timeout).payload

    def write_input(self, index: int, spec: TensorLayout, array: np.ndarray, timeout: Optional[float] = None) -> None:
        """Input `index` (an array of its spec's shape and dtype), in pieces of one frame each."""
        for piece in input_pieces(index, spec, array):
            self.write_piece(piece, timeout)

    def write_piece(self, piece: "Piece", timeout: Optional[float] = None) -> None:
        """One WRITE request, its reply checked against what was sent."""
        reply = self.request(CMD_WRITE, piece.payload, timeout=timeout).payload
        _need_size("write", reply, WRITE_REPLY.size)
        d = WRITE_REPLY.unpack(reply)
        if (d["FIRST"], d["COUNT"]) != (piece.first, piece.count):
            raise BoardReplyError(f"input {piece.index}: wrote {d['COUNT']} elements from {d['FIRST']}; "
                                  f"{piece.count} were sent from {piece.first}")

    def run(self, last_piece: bytes = b"", output_specs: tuple = (), timeout: Optional[float] = None) -> tuple:
        """Run the program on the inputs as written (after writing `last_piece`, a piece of input_pieces, if
        given): (the instructions it took, the outputs the reply carries in full: [(values, raw int8 values or
        None)] of the first outputs of `output_specs`)."""
        reply = self.request(CMD_RUN, last_piece, timeout=timeout).payload
        if len(reply) < RUN_REPLY.size:
            raise BoardReplyError(f"the run reply is {len(reply)} bytes, too short for its header")
        d = RUN_REPLY.unpack(reply)
        if d["STATUS"] != 0:
            _known_status(d["STATUS"], "the run reply")
            raise BoardReplyError(f"the run reply carries status {d['STATUS']}; a reply always carries 0 "
                                  "(a refusal comes as an error)")
        if d["OUTPUTS"] > len(output_specs):
            raise BoardReplyError(f"the run reply carries {d['OUTPUTS']} outputs; the program has {len(output_specs)}")
        outputs, at = [], RUN_REPLY.size
        for spec in output_specs[:d["OUTPUTS"]]:
            size = spec.nbytes + (spec.numel if spec.has_int8 else 0)
            if len(reply) < at + size:
                break
            values = spec.from_bytes(reply[at:at + spec.nbytes])[0]
            int8 = spec.from_bytes(reply[at + spec.nbytes:at + size], np.int8)[0] if spec.has_int8 else None
            outputs.append((values, int8))
            at += size
        if len(outputs) < d["OUTPUTS"] or at != len(reply):
            needed = RUN_REPLY.size + sum(spec.nbytes + (spec.numel if spec.has_int8 else 0)
                                          for spec in output_specs[:d["OUTPUTS"]])
            raise BoardReplyError(f"the run reply is {len(reply)} bytes; its header and the {d['OUTPUTS']} outputs "
                                  f"it says it carries take {needed}")
        return d["INSTRUCTIONS"], outputs

    def read_output(self, index: int, spec: TensorLayout, part: int = PART_VALUES,
                    timeout: Optional[float] = None) -> np.ndarray:
        """Output `index` (or, with PART_INT8, its raw int8 values) in logical order, in pieces."""
        dtype = spec.dtype if part == PART_VALUES else np.dtype(np.int8)
        elem, data = dtype.itemsize, bytearray()
        while len(data) < spec.numel * elem:
            first = len(data) // elem
            reply = self.request(CMD_READ, READ_REQUEST.pack(INDEX=index, PART=part, FIRST=first),
                                 timeout=timeout).payload
            if len(reply) < READ_REPLY.size:
                raise BoardReplyError(f"the read reply is {len(reply)} bytes, too short for its header")
            d = READ_REPLY.unpack(reply)
            body = reply[READ_REPLY.size:]
            what = f"output {index}{' (int8)' if part == PART_INT8 else ''}"
            if d["TOTAL"] != spec.numel:
                raise BoardReplyError(f"{what} has {d['TOTAL']} elements in the read reply, {spec.numel} in its "
                                      "description")
            if d["FIRST"] != first or not body or len(body) % elem or first + len(body) // elem > spec.numel:
                raise BoardReplyError(f"{what}: the read reply holds {len(body)} bytes from element {d['FIRST']}, "
                                      f"for element {first} of {spec.numel} ({elem} bytes each)")
            data += body
        return spec.from_bytes(bytes(data), dtype)[0]

    def run_tensors(self, inputs: list, input_specs: list, output_specs: list,
                    timeout: Optional[float] = None) -> RunResult:
        """One inference: write every input (its last piece in the RUN request), run, and read every output and
        its raw int8 values the RUN reply does not carry. An image classifier's is one exchange."""
        start = time.perf_counter()
        pieces = [piece for i, (spec, array) in enumerate(zip(input_specs, inputs))
                  for piece in input_pieces(i, spec, array)]
        for piece in pieces[:-1]:
            self.write_piece(piece, timeout)
        instructions, carried = self.run(pieces[-1].payload if pieces else b"", tuple(output_specs), timeout)
        outputs = [values for values, _ in carried]
        int8 = [q for _, q in carried]
        for i, spec in enumerate(output_specs[len(carried):], start=len(carried)):
            outputs.append(self.read_output(i, spec, PART_VALUES, timeout))
            int8.append(self.read_output(i, spec, PART_INT8, timeout) if spec.has_int8 else None)
        return RunResult(outputs, int8, instructions, (time.perf_counter() - start) * 1000.0)

    # ---- requests ----

    def request(self, command: int, payload: bytes, timeout: Optional[float] = None) -> Frame:
        """Send one command and wait for the reply with the same sequence number."""
        seq = self._next_seq()
        self.send_raw(encode_frame(command, seq, payload))
        return self.wait_reply(command, seq, timeout)

    def send_raw(self, data: bytes) -> None:
        """Write bytes as they are (tests use it for broken frames)."""
        import serial
        try:
            self.port.write(data)
            self.port.flush()
        except (serial.SerialException, OSError) as e:
            self.check_alive()
            raise LinkError(f"writing to {self.describe} failed: {e}") from None

    def wait_reply(self, command: int, seq: int, timeout: Optional[float] = None) -> Frame:
        """The reply (or error) for request seq; stale and unsolicited frames are set aside."""
        name = _command_name(command)
        limit = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        while True:
            frame = self.next_frame(deadline, f"no reply from {self.describe} to '{name}' within {limit:g} s")
            if frame.type == ERROR:
                code, value, text = parse_error(frame.payload)
                if code == ERR_FAULT:
                    raise LinkError(f"{self.describe} crashed during '{name}': {text}")
                if frame.seq == seq:
                    if code not in ERROR_CODES:
                        raise BoardReplyError(f"error code {code} to '{name}' is not one the firmware sends")
                    if code in STATUS_ERRORS:
                        _known_status(value, f"the error to '{name}'")
                    raise DeviceError(code, value, text, name)
                self.notices.append((code, value, text))
            elif frame.seq == seq and frame.type == command | REPLY:
                return frame

    def next_frame(self, deadline: float, timeout_message: str) -> Frame:
        """The oldest frame not looked at yet: one decoded earlier (a read may bring several),
        else the next to arrive before the deadline."""
        if not self.pending:
            self.pending.extend(self.read_frames(deadline, timeout_message))
        return self.pending.popleft()

    def read_frames(self, deadline: float, timeout_message: str) -> list:
        """Frames received before the deadline (at least one), else LinkError(timeout_message)."""
        import serial
        while True:
            try:
                data = self.port.read(self.decoder.bytes_wanted())
            except (serial.SerialException, OSError) as e:
                self.check_alive()
                raise LinkError(f"the serial line to {self.describe} broke: {e}") from None
            frames = self.decoder.feed(data) if data else []
            if frames:
                return frames
            if not data:
                try:
                    self.check_alive()
                except LinkError:
                    frames = self._last_frames()     # a board that ends just after its fault report
                    if frames:
                        return frames
                    raise
            if time.monotonic() > deadline:
                raise LinkError(timeout_message)

    def _last_frames(self) -> list:
        """The frames a device that has ended sent just before (read after it is gone, up to what is there)."""
        import serial
        for _ in range(64):
            try:
                data = self.port.read(self.decoder.bytes_wanted())
            except (serial.SerialException, OSError):
                return []
            if not data:
                return []
            frames = self.decoder.feed(data)
            if frames:
                return frames
        return []

    def _next_seq(self) -> int:
        self._seq = self._seq % 255 + 1      # 1..255; 0 marks messages the firmware sends on its own
        return self._seq


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
def _command_names() -> dict:
    return {value: name for name, value in COMMANDS.items()}


def _command_name(command: int) -> str:
    return _command_names().get(command, f"command 0x{command:02x}")
