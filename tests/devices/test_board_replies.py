"""Replies a working board never sends are refused in one line, "the board's reply is invalid: ...",
never an internal error: a fake board on a socket speaks the link protocol and breaks one promise at a
time (a wrong size, counts that do not add up, a status the runtime never returns, non-finite logits)."""
from __future__ import annotations

import hashlib
import socket
import threading

import numpy as np
import pytest

from tinyrps.devices import open_device
from tinyrps.infra.errors import UserError
from tinyrps.firmware import link_protocol
from tinyrps.firmware.link import DeviceLink
from tinyrps.firmware.link_protocol import FrameDecoder, encode_frame
from tinyrps.firmware.tensors import description_layout

INPUT = dict(DTYPE=6, RANK=4, NUMEL=784, NBYTES=3136, SIZES=[1, 1, 28, 28], DIM_ORDER=bytes([0, 2, 1, 3]))
OUTPUT = dict(DTYPE=6, RANK=2, FLAGS=1, NUMEL=3, NBYTES=12, SIZES=[1, 3], DIM_ORDER=bytes([0, 1]))


class FakeBoard:
    """A board holding `program` (an image classifier), answering on a loopback socket. `replies` maps a
    command name to a function(payload) -> (frame type, payload) that replaces the good answer."""

    def __init__(self, program: bytes, carry_outputs: bool = True, **replies):
        self.carry_outputs = carry_outputs       # the RUN reply carries the outputs (else the host reads them)
        self.sha = hashlib.sha256(program).digest()
        self.length = len(program)
        self.replies = replies
        self.logits = np.float32([0.5, -1.0, 2.0])
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(1)
        self.url = f"socket://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        decoder = FrameDecoder()
        with conn:
            while True:
                data = conn.recv(4096)
                if not data:
                    return
                for frame in decoder.feed(data):
                    kind, payload = self.answer(frame)
                    conn.sendall(encode_frame(kind, frame.seq, payload))

    def answer(self, frame) -> tuple:
        name = {v: k for k, v in link_protocol.COMMANDS.items()}[frame.type]
        if name in self.replies:
            return self.replies[name](frame.payload)
        reply = frame.type | link_protocol.REPLY
        if name == "info":
            return reply, link_protocol.INFO_LAYOUT.pack(PROTOCOL=link_protocol.PROTOCOL_VERSION, SIZE=link_protocol.INFO_LAYOUT.size,
                                                FIRMWARE="0.3.0", BOARD="fake", SHA256=self.sha,
                                                MODEL_BYTES=self.length, MODEL_SOURCE=2, ARENA_CAPACITY=65536,
                                                ARENA_NEEDED=42048, STACK_SIZE=8192, STACK_USED=900, INPUTS=1,
                                                OUTPUTS=1)
        if name == "tensor":
            kind = link_protocol.TENSOR_REQUEST.unpack(frame.payload)["KIND"]
            return reply, description_layout().pack(**(INPUT if kind == link_protocol.TENSOR_INPUT else OUTPUT))
        if name == "write":
            head = link_protocol.WRITE_HEADER.unpack(frame.payload)
            count = len(frame.payload) - link_protocol.WRITE_HEADER.size
            count //= 1 if head["ENCODING"] == link_protocol.ENCODING_IMAGE else 4
            return reply, link_protocol.WRITE_REPLY.pack(FIRST=head["FIRST"], COUNT=count)
        if name == "run":
            if not self.carry_outputs:
                return reply, link_protocol.RUN_REPLY.pack(INSTRUCTIONS=1000)
            return reply, link_protocol.RUN_REPLY.pack(OUTPUTS=1, INSTRUCTIONS=1000) + self.logits.tobytes() \
                + np.int8([1, -2, 3]).tobytes()
        if name == "read":
            head = link_protocol.READ_REQUEST.unpack(frame.payload)
            data = self.logits.tobytes() if head["PART"] == link_protocol.PART_VALUES else np.int8([1, -2, 3]).tobytes()
            elem = 4 if head["PART"] == link_protocol.PART_VALUES else 1
            return reply, link_protocol.READ_REPLY.pack(FIRST=head["FIRST"], TOTAL=3) + data[head["FIRST"] * elem:]
        if name == "infer":
            return reply, link_protocol.INFER_HEADER.pack(OUTPUTS=3, INSTRUCTIONS=1000) + np.int8([1, -2, 3]).tobytes() \
                + self.logits.tobytes()
        return reply, frame.payload

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def program(tmp_path):
    pte = tmp_path / "board.pte"
    pte.write_bytes(b"\0\0\0\0ET12 the program the fake board holds")     # its identifier, for the device
    return pte


def invalid(call) -> str:
    with pytest.raises(UserError) as raised:
        call()
    message = str(raised.value)
    assert isinstance(raised.value, link_protocol.BoardReplyError), message
    assert message.startswith("the board's reply is invalid: ") and "\n" not in message
    return message


def error(code: int, value: int):
    return lambda payload: (link_protocol.ERROR, link_protocol.ERROR_HEADER.pack(CODE=code, VALUE=value) + b"refused")


def with_link(board: FakeBoard, action):
    device = DeviceLink.open(board.url, timeout=3)
    try:
        return action(device)
    finally:
        device.close()
        board.close()


def run_once(device: DeviceLink):
    """One inference of an input that is no image: three WRITEs, the last piece in the RUN."""
    info = device.info()
    return device.run_tensors([np.full((1, 1, 28, 28), 0.3, np.float32)], info.inputs, info.outputs)


def info_with(**fields):
    def reply(_payload):
        base = dict(PROTOCOL=link_protocol.PROTOCOL_VERSION, SIZE=link_protocol.INFO_LAYOUT.size, INPUTS=1, OUTPUTS=1)
        return link_protocol.CMD_INFO | link_protocol.REPLY, link_protocol.INFO_LAYOUT.pack(**{**base, **fields})
    return reply


@pytest.mark.parametrize("carry_outputs", [True, False], ids=["run-carries-outputs", "outputs-read"])
def test_the_fake_board_itself_is_valid(program, carry_outputs):
    result = with_link(FakeBoard(program.read_bytes(), carry_outputs), run_once)
    assert result.outputs[0].tolist() == [[0.5, -1.0, 2.0]] and result.int8[0].tolist() == [[1, -2, 3]]


@pytest.mark.slow
@pytest.mark.parametrize("replies,message", [
    ({"info": info_with(LOAD_STATUS=-42)}, "the program's load is status -42, which the runtime never returns"),
    ({"info": info_with(SIZE=100)}, "the info reply says it is 100 bytes"),
    ({"info": lambda p: (link_protocol.CMD_INFO | link_protocol.REPLY, info_with()(p)[1][:100])},
     f"the info reply is 100 bytes, not {link_protocol.INFO_LAYOUT.size}"),
    ({"info": info_with(LOAD_STATUS=-4, INPUTS=1)}, "a program that did not load has 1 inputs"),
    ({"tensor": lambda p: (link_protocol.CMD_TENSOR | link_protocol.REPLY, description_layout().pack(**{**INPUT, "NUMEL": 785}))},
     "the description of input 0 does not add up"),
    ({"tensor": lambda p: (link_protocol.CMD_TENSOR | link_protocol.REPLY, bytes(43))}, "does not add up"),
    ({"write": lambda p: (link_protocol.CMD_WRITE | link_protocol.REPLY, link_protocol.WRITE_REPLY.pack(FIRST=0, COUNT=5))},
     "input 0: wrote 5 elements from 0; 254 were sent from 0"),
    ({"run": lambda p: (link_protocol.CMD_RUN | link_protocol.REPLY, link_protocol.RUN_REPLY.pack(STATUS=-3))}, "the run reply carries status -3"),
    ({"run": lambda p: (link_protocol.CMD_RUN | link_protocol.REPLY, link_protocol.RUN_REPLY.pack(STATUS=17))},
     "the run reply is status 17, which the runtime never returns"),
    ({"run": lambda p: (link_protocol.CMD_RUN | link_protocol.REPLY, bytes(8))}, "the run reply is 8 bytes, too short for its header"),
    ({"run": lambda p: (link_protocol.CMD_RUN | link_protocol.REPLY, link_protocol.RUN_REPLY.pack(OUTPUTS=3))},
     "the run reply carries 3 outputs; the program has 1"),
    ({"run": lambda p: (link_protocol.CMD_RUN | link_protocol.REPLY, link_protocol.RUN_REPLY.pack(OUTPUTS=1) + bytes(12))},
     "the run reply is 28 bytes; its header and the 1 outputs it says it carries take 31"),
    ({"run": lambda p: (link_protocol.CMD_RUN | link_protocol.REPLY, link_protocol.RUN_REPLY.pack() + bytes(4))},
     "the run reply is 20 bytes; its header and the 0 outputs it says it carries take 16"),
    ({"read": lambda p: (link_protocol.CMD_READ | link_protocol.REPLY, link_protocol.READ_REPLY.pack(TOTAL=4) + bytes(16))},
     "output 0 has 4 elements in the read reply, 3 in its description"),
    ({"read": lambda p: (link_protocol.CMD_READ | link_protocol.REPLY, link_protocol.READ_REPLY.pack(TOTAL=3))}, "holds 0 bytes"),
    ({"read": lambda p: (link_protocol.CMD_READ | link_protocol.REPLY, link_protocol.READ_REPLY.pack(TOTAL=3) + bytes(14))}, "holds 14 bytes"),
    ({"read": lambda p: (link_protocol.CMD_READ | link_protocol.REPLY, link_protocol.READ_REPLY.pack(TOTAL=3) + bytes(40))}, "holds 40 bytes"),
    ({"run": error(8, -50)}, "the error to 'run' is status -50, which the runtime never returns"),
    ({"run": error(99, 0)}, "error code 99 to 'run' is not one the firmware sends"),
], ids=["load-status", "info-size-field", "info-short", "unloaded-with-tensors", "tensor-numel", "tensor-short",
        "write-count", "run-status", "run-impossible-status", "run-short", "run-outputs-count", "run-outputs-short",
        "run-extra-bytes", "read-total", "read-empty", "read-partial", "read-too-long", "error-status", "error-code"])
def test_an_invalid_reply_is_one_line(program, replies, message):
    # the outputs are read (not carried by the RUN reply), so that the READ replies are checked too
    board = FakeBoard(program.read_bytes(), carry_outputs=False, **replies)
    assert message in invalid(lambda: with_link(board, run_once))


@pytest.mark.parametrize("reply,message", [
    (link_protocol.INFER_HEADER.pack(OUTPUTS=3) + bytes(12), "the infer reply is 28 bytes for 3 outputs (expected 31)"),
    (link_protocol.INFER_HEADER.pack(STATUS=-6, OUTPUTS=3) + bytes(15), "the infer reply carries status -6"),
    (bytes(10), "the infer reply is 10 bytes, too short for its header"),
], ids=["infer-size", "infer-status", "infer-short"])
def test_an_invalid_infer_reply_is_one_line(program, reply, message):
    board = FakeBoard(program.read_bytes(), infer=lambda p: (link_protocol.CMD_INFER | link_protocol.REPLY, reply))
    assert message in invalid(lambda: with_link(board, lambda d: d.infer(np.zeros((28, 28), np.uint8))))


def test_a_board_that_holds_the_program_classifies(program):
    board = FakeBoard(program.read_bytes())
    try:
        with open_device("mcu", program, port=board.url) as device:
            logits = device.classify(np.zeros((2, 28, 28), np.uint8))
            assert logits.tolist() == [[0.5, -1.0, 2.0]] * 2 and device.last_int8.tolist() == [[1, -2, 3]] * 2
            assert device.last_stats()["transport"] == "serial"
    finally:
        board.close()


@pytest.mark.parametrize("logits", [[0.5, np.nan, 2.0], [np.inf, 0, 0]], ids=["nan", "inf"])
def test_non_finite_logits_are_an_invalid_reply(program, logits):
    board = FakeBoard(program.read_bytes())
    board.logits = np.float32(logits)
    try:
        with open_device("mcu", program, port=board.url) as device:
            message = invalid(lambda: device.classify(np.zeros((1, 28, 28), np.uint8)))
        assert "the logits of image 0 are not finite" in message
    finally:
        board.close()


def test_a_board_program_that_is_no_classifier_is_refused_by_classify(program):
    """A board whose program takes another input: classify says so in one line (run() would take it)."""
    board = FakeBoard(program.read_bytes(), tensor=lambda p: (
        link_protocol.CMD_TENSOR | link_protocol.REPLY,
        description_layout().pack(**(dict(DTYPE=6, RANK=2, NUMEL=640, NBYTES=2560, SIZES=[1, 640],
                                           DIM_ORDER=bytes([0, 1]))
                                      if link_protocol.TENSOR_REQUEST.unpack(p)["KIND"] == link_protocol.TENSOR_INPUT else OUTPUT))))
    try:
        with open_device("mcu", program, port=board.url) as device:
            with pytest.raises(UserError, match=r"not an image classifier \(it takes float32 \[1, 640\]"):
                device.classify(np.zeros((1, 28, 28), np.uint8))
            result = device.run([np.linspace(0, 1, 640, dtype=np.float32).reshape(1, 640)])
            assert result.outputs[0].shape == (1, 3)
    finally:
        board.close()
