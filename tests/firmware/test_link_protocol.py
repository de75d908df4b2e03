"""The device link: the frame codec on the host, and the firmware in QEMU answering good
and bad frames (garbage, cut frames, bad CRC, wrong lengths, wrong image sizes, tensor
requests outside the program's tensors) while it keeps serving."""
from __future__ import annotations

import hashlib
import socket
import struct
import threading
import time
import zlib

import numpy as np
import pytest

from tinyrps.firmware import link_protocol
from tinyrps.firmware.link import DeviceLink
from tinyrps.firmware.link_protocol import DeviceError, FrameDecoder, LinkError, encode_frame

# ---- host codec (no QEMU) ----

def test_frame_layout_matches_the_wire_format():
    frame = encode_frame(link_protocol.CMD_INFER, 7, b"\x01\x02\x03")
    assert frame[:2] == b"\xa5\x5a"
    assert frame[2:6] == bytes([link_protocol.CMD_INFER, 7]) + struct.pack("<H", 3)
    assert frame[6:9] == b"\x01\x02\x03"
    assert struct.unpack("<I", frame[9:])[0] == zlib.crc32(frame[2:9])


def test_decoder_skips_noise_and_corrupted_frames():
    good = encode_frame(0x81, 3, b"payload with \xa5\x5a inside")
    corrupted = bytearray(encode_frame(0x82, 4, b"x" * 40))
    corrupted[20] ^= 0x10
    decoder = FrameDecoder()
    frames = decoder.feed(b"noise\xa5" + bytes(corrupted) + b"\x00\xa5" + good)
    assert [(f.type, f.seq, f.payload) for f in frames] == [(0x81, 3, b"payload with \xa5\x5a inside")]
    assert decoder.skipped > 0


def test_decoder_assembles_frames_split_anywhere():
    stream = encode_frame(0x81, 1, b"abc") + encode_frame(0x83, 2, bytes(range(200)))
    decoder = FrameDecoder()
    frames = []
    for i in range(len(stream)):
        assert decoder.bytes_wanted() >= 1
        frames += decoder.feed(stream[i:i + 1])
    assert [(f.seq, len(f.payload)) for f in frames] == [(1, 3), (2, 200)]


def test_oversized_payload_is_refused_before_sending():
    with pytest.raises(ValueError):
        encode_frame(link_protocol.CMD_ECHO, 1, bytes(link_protocol.MAX_PAYLOAD + 1))


def test_no_reply_is_a_timeout_not_a_hang():
    """A peer that accepts the connection and never answers: LinkError after the timeout."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    accepted = []
    threading.Thread(target=lambda: accepted.append(listener.accept()), daemon=True).start()
    device = DeviceLink.open(f"socket://127.0.0.1:{listener.getsockname()[1]}", timeout=0.4)
    start = time.monotonic()
    try:
        with pytest.raises(LinkError, match="no reply .* within 0.4 s"):
            device.info()
    finally:
        device.close()
        listener.close()
    assert time.monotonic() - start < 3


def test_closed_line_is_a_clear_error():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def accept_and_hang_up():
        conn, _ = listener.accept()
        conn.close()
    threading.Thread(target=accept_and_hang_up, daemon=True).start()
    device = DeviceLink.open(f"socket://127.0.0.1:{listener.getsockname()[1]}", timeout=2)
    try:
        with pytest.raises(LinkError, match="broke"):
            device.info()
    finally:
        device.close()
        listener.close()


class ScriptedPort:
    """A serial port whose every read hands over all the bytes it holds (a port may deliver
    more than one frame in one read, e.g. after a damaged frame was skipped)."""

    def __init__(self, incoming: bytes):
        self.incoming = bytearray(incoming)

    def read(self, _size):
        data, self.incoming = bytes(self.incoming), bytearray()
        return data

    def write(self, data):
        return len(data)

    def flush(self):
        pass

    def close(self):
        pass


def info_payload(protocol: int = link_protocol.PROTOCOL_VERSION) -> bytes:
    return link_protocol.INFO_LAYOUT.pack(PROTOCOL=protocol, SIZE=link_protocol.INFO_LAYOUT.size, FIRMWARE="0.1.0", BOARD="mps3-an547",
                                 MODEL_BYTES=1000, MODEL_SOURCE=1, ARENA_CAPACITY=65536, ARENA_NEEDED=42048,
                                 STACK_SIZE=8192, STACK_USED=2000, BOOT_INSTRUCTIONS=123)


def test_frames_decoded_after_the_wanted_one_are_kept():
    """Two replies arrive in one read: the second is the answer to the next request, not lost."""
    stream = encode_frame(link_protocol.CMD_INFO | link_protocol.REPLY, 1, info_payload()) \
        + encode_frame(link_protocol.CMD_ECHO | link_protocol.REPLY, 2, b"second")
    device = DeviceLink(ScriptedPort(stream), timeout=0.3)
    assert device.info().protocol == link_protocol.PROTOCOL_VERSION
    assert device.echo(b"second") == b"second"


def test_info_of_another_protocol_version_is_refused():
    with pytest.raises(LinkError, match=f"protocol version {link_protocol.PROTOCOL_VERSION + 1}.*rebuild"):
        link_protocol.parse_info(info_payload(protocol=link_protocol.PROTOCOL_VERSION + 1))


# ---- the firmware in QEMU ----

@pytest.fixture(scope="module")
def server(cortex_m_pte, firmware_elf_path):
    from tinyrps.firmware.qemu import LinkedFirmware
    with LinkedFirmware(cortex_m_pte, elf=firmware_elf_path, timeout=10) as srv:
        yield srv


def expect_error(device: DeviceLink, seq: int, code: int, timeout: float = 5.0):
    """The error frame for request seq (other frames on the way are skipped)."""
    with pytest.raises(DeviceError) as raised:
        device.wait_reply(link_protocol.CMD_INFO, seq, timeout=timeout)
    assert raised.value.code == code, raised.value
    return raised.value


def unsolicited_error(device: DeviceLink, code: int, timeout: float = 5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        frame = device.next_frame(deadline, "no unsolicited error")
        if frame.type == link_protocol.ERROR and frame.seq == 0:
            got = link_protocol.parse_error(frame.payload)
            if got[0] == code:
                return got
    raise AssertionError(f"no unsolicited error {code}")


def still_serving(device: DeviceLink) -> None:
    assert device.echo(b"still here") == b"still here"


def test_info_describes_the_loaded_program(server, cortex_m_pte):
    from tinyrps.firmware import c_facts
    info = server.link.info()
    assert info.protocol == link_protocol.PROTOCOL_VERSION
    assert info.board == "mps3-an547" and info.firmware
    assert info.model_sha256 == hashlib.sha256(cortex_m_pte.read_bytes()).hexdigest()
    assert info.model_bytes == cortex_m_pte.stat().st_size
    assert info.model_source == "boot descriptor"
    assert info.loaded, info.load_detail
    assert 0 < info.arena_needed <= info.arena_capacity
    assert 0 < info.stack_used < info.stack_size
    # the program's inputs and outputs, and the build's limits (the header's defaults)
    (image,), (logits,) = info.inputs, info.outputs
    assert (image.dtype, image.shape, image.has_int8) == (np.float32, (1, 1, 28, 28), False)
    assert (logits.dtype, logits.shape, logits.has_int8) == (np.float32, (1, 3), True)
    assert info.limits == c_facts.limits()


def test_info_hashes_the_program_once_and_apart_from_the_boot(server, cortex_m_pte):
    """The boot (reset to ready) does not hash the program; the first `info` does, and says what it took.
    The hash is then kept: every later `info` reports the same hash and the same cost."""
    first, again = server.link.info(), server.link.info()
    assert 0 < first.load_instructions < first.boot_instructions <= 2_000_000, first
    assert first.sha256_instructions > 10 * first.boot_instructions, first
    assert again.model_sha256 == first.model_sha256 == hashlib.sha256(cortex_m_pte.read_bytes()).hexdigest()
    assert (again.boot_instructions, again.sha256_instructions) == (first.boot_instructions, first.sha256_instructions)


def test_echo_carries_any_bytes_including_sync_words(server):
    payload = bytes(range(256)) * 3 + b"\xa5\x5a\xa5\x5a"
    assert server.link.echo(payload) == payload


def test_infer_returns_outputs_logits_and_instructions(server, test_images):
    result = server.link.infer(test_images[0][0])
    assert result.int8.dtype == np.int8 and result.int8.shape == (3,)
    assert result.logits.dtype == np.float32 and result.logits.shape == (3,)
    assert result.instructions > 1_000_000
    assert result.link_ms > 0


def test_same_image_same_instruction_count(server, test_images):
    image = test_images[0][1]
    counts = {server.link.infer(image).instructions for _ in range(3)}
    assert len(counts) == 1


@pytest.mark.parametrize("size", [0, 783, 785])
def test_image_of_the_wrong_size_is_an_error_reply(server, size):
    device = server.link
    seq = 201
    device.send_raw(encode_frame(link_protocol.CMD_INFER, seq, bytes(size)))
    error = expect_error(device, seq, 6)
    assert error.value == size
    still_serving(device)


def test_host_refuses_to_send_a_wrong_size_image(server):
    with pytest.raises(LinkError, match="784 bytes"):
        server.link.infer(np.zeros((27, 28), np.uint8))


def test_bad_crc_is_an_error_reply(server, test_images):
    device = server.link
    frame = bytearray(encode_frame(link_protocol.CMD_INFER, 202, test_images[0][0].tobytes()))
    frame[300] ^= 0x01
    device.send_raw(bytes(frame))
    expect_error(device, 202, 1)
    assert device.infer(test_images[0][0]).int8.shape == (3,)


def test_garbage_is_reported_and_skipped(server):
    device = server.link
    device.send_raw(b"this is not a frame at all")
    code, value, _ = unsolicited_error(device, 4)
    assert value == len(b"this is not a frame at all")
    still_serving(device)


def test_garbage_right_before_a_frame(server):
    device = server.link
    device.send_raw(b"\x00\x01\x02\xa5" + encode_frame(link_protocol.CMD_ECHO, 203, b"ok"))
    reply = device.wait_reply(link_protocol.CMD_ECHO, 203)
    assert reply.payload == b"ok"
    assert any(code == 4 for code, _, _ in device.notices)


def test_cut_frame_is_reported_after_the_line_goes_quiet(server, test_images):
    device = server.link
    device.send_raw(encode_frame(link_protocol.CMD_INFER, 204, test_images[0][0].tobytes())[:300])
    error = expect_error(device, 204, 3)
    assert error.value == 300
    still_serving(device)


def test_cut_frame_followed_by_a_good_frame(server, test_images):
    device = server.link
    device.send_raw(encode_frame(link_protocol.CMD_INFER, 205, test_images[0][0].tobytes())[:300]
                    + encode_frame(link_protocol.CMD_ECHO, 206, b"after the cut"))
    expect_error(device, 205, 3)
    assert device.wait_reply(link_protocol.CMD_ECHO, 206).payload == b"after the cut"


def test_length_above_the_maximum_is_an_error_reply(server):
    device = server.link
    header = bytes([link_protocol.CMD_INFER, 207]) + struct.pack("<H", 5000)
    device.send_raw(b"\xa5\x5a" + header + bytes(16))
    error = expect_error(device, 207, 2)
    assert error.value == 5000
    still_serving(device)


def test_unknown_command_and_unexpected_payload(server):
    device = server.link
    device.send_raw(encode_frame(0x42, 208, b""))
    assert expect_error(device, 208, 5).value == 0x42
    device.send_raw(encode_frame(link_protocol.CMD_INFO, 209, b"unexpected"))
    expect_error(device, 209, 6)
    still_serving(device)


def test_random_noise_never_stops_the_firmware(server):
    device = server.link
    noise = np.random.default_rng(4).integers(0, 256, 1500, dtype=np.uint8).tobytes()
    # a few real sync words with plausible headers inside the noise
    noise = noise[:500] + b"\xa5\x5a\x02\x09\x10\x03" + noise[500:1000] + b"\xa5\x5a\x01\x00\x00" + noise[1000:]
    device.send_raw(noise)
    assert device.echo(b"survived", timeout=20) == b"survived"
    assert device.info().loaded


# ---- tensor requests ----

def test_generic_run_gives_what_infer_gives(server, test_images):
    """WRITE the image as the float32 input (image encoding), RUN, READ logits and raw int8 values."""
    info = server.link.info()
    image = test_images[0][2]
    x = (image.astype(np.float32) / np.float32(255)).reshape(1, 1, 28, 28)
    assert link_protocol.image_pixels(info.inputs[0], x) == image.tobytes()
    result = server.link.run_tensors([x], info.inputs, info.outputs)
    served = server.link.infer(image)
    assert np.array_equal(result.int8[0].reshape(-1), served.int8)
    assert np.array_equal(result.outputs[0].reshape(-1).view(np.uint32), served.logits.view(np.uint32))
    # the same input written as raw float32 (four frames) runs the same
    x_raw = x.copy()
    x_raw[0, 0, 0, 0] = np.float32(0.3)          # not a pixel: the raw encoding
    assert link_protocol.image_pixels(info.inputs[0], x_raw) is None
    again = server.link.run_tensors([x_raw], info.inputs, info.outputs)
    assert again.outputs[0].shape == (1, 3) and again.instructions > 1_000_000


def request_error(device: DeviceLink, command: int, payload: bytes, code: int):
    with pytest.raises(DeviceError) as raised:
        device.request(command, payload, timeout=5)
    assert raised.value.code == code, raised.value
    return raised.value


@pytest.mark.parametrize("command,payload,code,value", [
    (link_protocol.CMD_TENSOR, link_protocol.TENSOR_REQUEST.pack(KIND=link_protocol.TENSOR_INPUT, INDEX=1), 11, 1),
    (link_protocol.CMD_TENSOR, link_protocol.TENSOR_REQUEST.pack(KIND=7, INDEX=0), 11, 0),
    (link_protocol.CMD_TENSOR, b"\0", 6, 1),
    (link_protocol.CMD_WRITE, link_protocol.WRITE_HEADER.pack(INDEX=1) + bytes(4), 11, 1),                      # no input 1
    (link_protocol.CMD_WRITE, link_protocol.WRITE_HEADER.pack(FIRST=783) + bytes(8), 11, 783),                  # past the end
    (link_protocol.CMD_WRITE, link_protocol.WRITE_HEADER.pack(FIRST=5000) + bytes(4), 11, 5000),
    (link_protocol.CMD_WRITE, link_protocol.WRITE_HEADER.pack() + bytes(6), 6, 6),                               # 1.5 floats
    (link_protocol.CMD_WRITE, link_protocol.WRITE_HEADER.pack(ENCODING=9) + bytes(4), 11, 9),
    (link_protocol.CMD_WRITE, bytes(3), 6, 3),
    (link_protocol.CMD_RUN, b"x", 6, 1),
    (link_protocol.CMD_READ, link_protocol.READ_REQUEST.pack(INDEX=1), 11, 1),
    (link_protocol.CMD_READ, link_protocol.READ_REQUEST.pack(PART=2), 11, 2),
    (link_protocol.CMD_READ, link_protocol.READ_REQUEST.pack(FIRST=4), 11, 4),
    (link_protocol.CMD_READ, link_protocol.READ_REQUEST.pack()[:5], 6, 5),
], ids=["tensor-index", "tensor-kind", "tensor-size", "write-index", "write-past-end", "write-far", "write-half",
        "write-encoding", "write-short", "run-payload", "read-index", "read-part", "read-past-end", "read-short"])
def test_tensor_requests_outside_the_program_are_refused(server, command, payload, code, value):
    error = request_error(server.link, command, payload, code)
    assert error.value == value
    still_serving(server.link)


def test_a_run_carries_the_last_piece_and_the_outputs_that_fit(server, test_images):
    """An image classifier's inference in one exchange: the pixels in the RUN request, the logits and raw int8
    values in its reply; the same as infer's."""
    image = test_images[0][4]
    piece = link_protocol.WRITE_HEADER.pack(ENCODING=link_protocol.ENCODING_IMAGE) + image.tobytes()
    reply = server.link.request(link_protocol.CMD_RUN, piece).payload
    head = link_protocol.RUN_REPLY.unpack(reply)
    assert head["STATUS"] == 0 and head["OUTPUTS"] == 1 and len(reply) == link_protocol.RUN_REPLY.size + 12 + 3
    served = server.link.infer(image)
    assert reply[link_protocol.RUN_REPLY.size:link_protocol.RUN_REPLY.size + 12] == served.logits.tobytes()
    assert reply[link_protocol.RUN_REPLY.size + 12:] == served.int8.tobytes()
    error = request_error(server.link, link_protocol.CMD_RUN, link_protocol.WRITE_HEADER.pack(FIRST=784) + bytes(4), 11)
    assert error.value == 784


def test_reads_and_writes_at_an_offset(server, test_images):
    """Elements from an offset: a read from the last element, an empty read at the end."""
    info = server.link.info()
    x = (test_images[0][3].astype(np.float32) / np.float32(255)).reshape(1, 1, 28, 28)
    server.link.run_tensors([x], info.inputs, info.outputs)
    reply = server.link.request(link_protocol.CMD_READ, link_protocol.READ_REQUEST.pack(FIRST=2)).payload
    head = link_protocol.READ_REPLY.unpack(reply)
    assert (head["FIRST"], head["TOTAL"], len(reply)) == (2, 3, link_protocol.READ_REPLY.size + 4)
    reply = server.link.request(link_protocol.CMD_READ, link_protocol.READ_REQUEST.pack(PART=link_protocol.PART_INT8, FIRST=3)).payload
    assert len(reply) == link_protocol.READ_REPLY.size
    written = server.link.request(link_protocol.CMD_WRITE, link_protocol.WRITE_HEADER.pack(ENCODING=link_protocol.ENCODING_IMAGE, FIRST=780)
                                  + bytes(4)).payload
    assert link_protocol.WRITE_REPLY.unpack(written) == {"FIRST": 780, "COUNT": 4}
