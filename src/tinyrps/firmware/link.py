"""The host side of the device link: framed requests to the firmware over a serial line.

The wire format is defined in firmware/protocol/link_protocol.h (and described in
docs/firmware.md); this module is its Python twin. Any pyserial port works:
`socket://127.0.0.1:PORT` for the firmware in QEMU, `/dev/ttyACM0` for a board.

Every read has a deadline. A failure (no reply, a closed line, an error reply,
a reply that does not parse) raises LinkError, a UserError with one clear line.
"""
from __future__ import annotations

import collections
import struct
import time
import zlib
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from ..errors import UserError

SYNC = b"\xa5\x5a"
HEADER = struct.Struct("<2sBBH")       # sync, type, sequence, payload length
CRC = struct.Struct("<I")
MAX_PAYLOAD = 1024
PROTOCOL_VERSION = 1

CMD_INFO = 0x01
CMD_INFER = 0x02
CMD_ECHO = 0x03
REPLY = 0x80
ERROR = 0xFF

# Error codes of the firmware (LINK_ERR_* in link_protocol.h) -> what they mean for the user.
ERROR_CODES = {
    1: "a frame arrived with a bad CRC",
    2: "a frame announced a payload above the maximum",
    3: "a frame stopped arriving before its end",
    4: "bytes outside any frame were skipped",
    5: "the firmware does not know this command",
    6: "the payload has the wrong size for this command",
    7: "the program did not load on the firmware",
    8: "the runtime refused to run the inference",
    9: "the firmware hit a CPU fault and reset",
    10: "received bytes were lost (receive queue overrun)",
}
ERR_GARBAGE = 4
ERR_FAULT = 9
ERR_OVERRUN = 10

IMAGE_BYTES = 28 * 28
INFO_LAYOUT = struct.Struct("<HH16s16s32sIIiIIIII48s")   # LINK_INFO_* offsets, 148 bytes
INFER_HEADER = struct.Struct("<iIQ")                     # status, outputs, instructions
ERROR_HEADER = struct.Struct("<BxxxI")                   # code, value (signed, see below)

MODEL_SOURCES = {1: "boot descriptor", 2: "program header"}
# trt_status values (firmware/include/tinyrps_runtime.h)
TRT_STATUS = {0: "ok", -1: "truncated", -2: "bad magic", -3: "malformed", -4: "unsupported operator",
              -5: "arena too small", -6: "bad tensor", -7: "bad input", -8: "runtime limit"}

DEFAULT_TIMEOUT_S = 10.0
# how long one read call may block before the deadline and the liveness check are looked at again
POLL_S = 0.05


class LinkError(UserError):
    """The device link failed: no reply, a broken line, or an error reported by the firmware."""


class DeviceError(LinkError):
    """The firmware answered a request with an error frame."""

    def __init__(self, code: int, value: int, text: str, command: str):
        self.code, self.value, self.text = code, value, text
        meaning = ERROR_CODES.get(code, f"error code {code}")
        super().__init__(f"the device rejected '{command}': {meaning} ({text}, value {value})")


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
    model_sha256: str
    model_bytes: int
    model_source: str
    load_status: int
    arena_capacity: int
    arena_needed: int
    stack_size: int
    stack_used: int
    boot_instructions: int
    load_detail: str

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


def _text(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("ascii", "replace")


def parse_info(payload: bytes) -> Info:
    if len(payload) < INFO_LAYOUT.size:
        raise LinkError(f"the device's info reply has {len(payload)} bytes, expected {INFO_LAYOUT.size}: "
                        "host and firmware speak different protocol versions; rebuild the firmware")
    (protocol, _size, firmware, board, sha, model_bytes, source, load_status, arena_capacity, arena_needed,
     stack_size, stack_used, boot_instructions, detail) = INFO_LAYOUT.unpack_from(payload)
    if protocol != PROTOCOL_VERSION:
        # the layout of every other reply may have changed too: parse nothing more from this device
        raise LinkError(f"the device speaks link protocol version {protocol}, this host version {PROTOCOL_VERSION}: "
                        "rebuild the firmware from the same sources as the host (or update the host)")
    return Info(protocol, _text(firmware), _text(board), sha.hex(), model_bytes,
                MODEL_SOURCES.get(source, f"unknown ({source})"), load_status, arena_capacity, arena_needed,
                stack_size, stack_used, boot_instructions, _text(detail))


def parse_infer(payload: bytes, link_ms: float) -> InferResult:
    if len(payload) < INFER_HEADER.size:
        raise LinkError(f"the device's infer reply is {len(payload)} bytes, too short to parse")
    _status, n, instructions = INFER_HEADER.unpack_from(payload)
    expected = INFER_HEADER.size + 5 * n
    if len(payload) != expected:
        raise LinkError(f"the device's infer reply is {len(payload)} bytes, expected {expected} for {n} outputs")
    body = payload[INFER_HEADER.size:]
    int8 = np.frombuffer(body, np.int8, n).copy()
    logits = np.frombuffer(body, "<f4", n, offset=n).astype(np.float32)
    return InferResult(int8, logits, instructions, link_ms)


def parse_error(payload: bytes) -> tuple:
    if len(payload) < ERROR_HEADER.size:
        return 0, 0, "unparsable error frame"
    code, value = ERROR_HEADER.unpack_from(payload)
    value = value - (1 << 32) if value >= 1 << 31 else value
    return code, value, payload[ERROR_HEADER.size:].decode("ascii", "replace")


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
        return parse_info(self.request(CMD_INFO, b"", timeout=timeout).payload)

    def infer(self, image, timeout: Optional[float] = None) -> InferResult:
        data = np.ascontiguousarray(image, dtype=np.uint8).tobytes() if not isinstance(image, bytes) else image
        if len(data) != IMAGE_BYTES:
            raise LinkError(f"an image for the device must be 28x28 uint8 ({IMAGE_BYTES} bytes), got {len(data)} bytes")
        start = time.perf_counter()
        reply = self.request(CMD_INFER, data, timeout=timeout)
        return parse_infer(reply.payload, (time.perf_counter() - start) * 1000.0)

    def echo(self, data: bytes, timeout: Optional[float] = None) -> bytes:
        return self.request(CMD_ECHO, data, timeout=timeout).payload

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
                self.check_alive()
            if time.monotonic() > deadline:
                raise LinkError(timeout_message)

    def _next_seq(self) -> int:
        self._seq = self._seq % 255 + 1      # 1..255; 0 marks messages the firmware sends on its own
        return self._seq


def _command_name(command: int) -> str:
    return {CMD_INFO: "info", CMD_INFER: "infer", CMD_ECHO: "echo"}.get(command, f"command 0x{command:02x}")
