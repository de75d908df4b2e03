"""The firmware's frame receiver (firmware/protocol/link_frame.c), built for this host with
AddressSanitizer and UBSan and fed long streams of valid frames mixed with garbage, cut
frames, corrupted frames and false sync words: no sanitizer finding, and every valid
frame comes out, in order."""
from __future__ import annotations

import shutil
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest

from tinyrps.firmware.link_protocol import MAX_PAYLOAD, encode_frame

REPO = Path(__file__).resolve().parents[2]
PROTOCOL = REPO / "firmware" / "protocol"
HARNESS = Path(__file__).with_name("link_frame_harness.c")


@pytest.fixture(scope="module")
def receiver(tmp_path_factory) -> Path:
    if shutil.which("gcc") is None:
        pytest.fail("gcc is not installed: apt-get install --no-install-recommends gcc libc6-dev", pytrace=False)
    out = tmp_path_factory.mktemp("link") / "receiver"
    subprocess.run(["gcc", "-std=c11", "-O1", "-g", "-Wall", "-Wextra", "-Werror",
                    "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
                    f"-I{PROTOCOL}", str(HARNESS), str(PROTOCOL / "link_frame.c"), str(PROTOCOL / "crc32.c"),
                    "-o", str(out)], check=True)
    return out


def run(receiver: Path, tmp_path: Path, stream: bytes, gaps=()) -> list:
    (tmp_path / "stream.bin").write_bytes(stream)
    (tmp_path / "gaps.txt").write_text("".join(f"{g}\n" for g in sorted(gaps)))
    result = subprocess.run([str(receiver), str(tmp_path / "stream.bin"), str(tmp_path / "gaps.txt")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert lines[-1] == "END"
    return lines[:-1]


def frames_of(events: list) -> list:
    return [tuple(line.split()[1:]) for line in events if line.startswith("F ")]


def errors_of(events: list) -> list:
    return [tuple(int(x) for x in line.split()[1:]) for line in events if line.startswith("E ")]


def as_event(frame_type: int, seq: int, payload: bytes) -> tuple:
    return (str(frame_type), str(seq), str(len(payload)), f"{zlib.crc32(payload):08x}")


def test_back_to_back_frames(receiver, tmp_path):
    frames = [(0x02, i, bytes([i]) * (i * 7 % 900)) for i in range(1, 40)]
    events = run(receiver, tmp_path, b"".join(encode_frame(*f) for f in frames))
    assert frames_of(events) == [as_event(*f) for f in frames]
    assert errors_of(events) == []


def test_each_kind_of_damage_is_reported(receiver, tmp_path):
    good = encode_frame(0x01, 9, b"")
    bad_crc = bytearray(encode_frame(0x02, 10, bytes(784)))
    bad_crc[50] ^= 1
    too_long = b"\xa5\x5a\x02\x0b" + (MAX_PAYLOAD + 1).to_bytes(2, "little")
    cut = encode_frame(0x02, 12, bytes(784))[:100]
    stream = b"noise" + good + bytes(bad_crc) + good + too_long + good + cut
    gap_at = len(stream)
    stream += good
    events = run(receiver, tmp_path, stream, gaps=[gap_at])
    codes = [(code, seq) for code, seq, _ in errors_of(events)]
    assert codes == [(4, 0), (1, 10), (2, 11), (3, 12)]
    assert frames_of(events) == [as_event(0x01, 9, b"")] * 4


@pytest.mark.parametrize("seed", range(6))
def test_random_damage_never_loses_a_valid_frame(receiver, tmp_path, seed):
    rng = np.random.default_rng(seed)
    stream, gaps, expected = bytearray(), [], []
    for i in range(150):
        kind = rng.integers(0, 6)
        if kind == 0:                                   # garbage, sometimes with false sync words
            junk = bytearray(rng.integers(0, 256, rng.integers(1, 300), dtype=np.uint8).tobytes())
            for _ in range(rng.integers(0, 3)):
                at = int(rng.integers(0, len(junk)))
                junk[at:at] = b"\xa5\x5a" + bytes(rng.integers(0, 256, 4, dtype=np.uint8))
            stream += junk
        elif kind == 1:                                 # a corrupted frame
            frame = bytearray(encode_frame(2, 1 + i % 255, rng.integers(0, 256, rng.integers(0, 900),
                                                                         dtype=np.uint8).tobytes()))
            frame[int(rng.integers(2, len(frame)))] ^= 1 << int(rng.integers(0, 8))
            stream += frame
        elif kind == 2:                                 # a cut frame, then the line goes quiet
            frame = encode_frame(2, 1 + i % 255, bytes(784))
            stream += frame[:int(rng.integers(1, len(frame)))]
            gaps.append(len(stream))
        else:                                           # a valid frame
            payload = rng.integers(0, 256, rng.integers(0, MAX_PAYLOAD + 1), dtype=np.uint8).tobytes()
            frame_type, seq = int(rng.integers(0, 256)), 1 + i % 255
            stream += encode_frame(frame_type, seq, payload)
            expected.append(as_event(frame_type, seq, payload))
        if rng.random() < 0.2:
            gaps.append(len(stream))
    events = run(receiver, tmp_path, bytes(stream), gaps)
    delivered = frames_of(events)
    # every valid frame arrives, in order; a corrupted frame may by chance contain a valid-looking one
    it = iter(delivered)
    assert all(any(got == want for got in it) for want in expected), "a valid frame was lost"
    assert len(delivered) - len(expected) <= 2
