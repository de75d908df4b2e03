"""The host side of the device link: framed requests to the firmware over a serial line.

Any pyserial port works (`/dev/ttyACM0` for a board, `socket://HOST:PORT` for a UART served on
TCP); the firmware in QEMU is reached through SocketPort, a plain TCP connection. The frames and
payloads are tinyrps.firmware.link_protocol's, read from firmware/protocol/link_protocol.h.

Every read has a deadline. A failure (no reply, a closed line, an error reply) raises
LinkError, a UserError with one clear line; a reply that breaks the protocol's promises
raises BoardReplyError, "the board's reply is invalid: ...".
"""
from __future__ import annotations

import collections
import select
import socket
import time
from typing import Callable, Optional

import numpy as np

from .link_protocol import (CMD_ECHO, CMD_INFER, CMD_INFO, CMD_READ, CMD_RUN, CMD_TENSOR, CMD_WRITE, ERR_FAULT, ERROR,
                            ERROR_CODES, IMAGE_BYTES, PART_INT8, PART_VALUES, READ_REPLY, READ_REQUEST, REPLY, RUN_REPLY,
                            STATUS_ERRORS, TENSOR_INPUT, TENSOR_OUTPUT, TENSOR_REQUEST, WRITE_REPLY, BoardReplyError,
                            DeviceError, Frame, FrameDecoder, InferResult, Info, LinkError, Piece, RunResult,
                            command_name, encode_frame, input_pieces, known_status, need_size, parse_error,
                            parse_infer, parse_info)
from .tensors import TensorLayout, parse_description


DEFAULT_TIMEOUT_S = 10.0
# how long one read call may block before the deadline and the liveness check are looked at again
POLL_S = 0.05


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
        need_size("write", reply, WRITE_REPLY.size)
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
            known_status(d["STATUS"], "the run reply")
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
        name = command_name(command)
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
                        known_status(value, f"the error to '{name}'")
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
