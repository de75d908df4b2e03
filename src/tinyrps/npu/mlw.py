"""Decoding a compressed weight stream (Arm's MLW format) with the codec Vela ships.

The wheel's `ethosu.mlw_codec.decode` is the only decoder at hand, and it was written for
streams its encoder made: on a damaged stream it may print and exit the process, assert or
read out of bounds. So each stream is decoded once in a forked child that sends the values
back over a pipe; whatever happens to the child, the model gives one line. Decoded streams
are kept by their bytes, so a program's weights are decoded once per process.
"""
from __future__ import annotations

import os
import select
import struct
import time

import numpy as np

from . import NpuCorrupt

DECODE_SECONDS = 10.0       # a stream of a few MB decodes in well under a second
_decoded: dict = {}


def decode(stream: bytes, what: str) -> np.ndarray:
    """The int16 values of one weight stream (zero-point corrected, as the MAC array takes them)."""
    found = _decoded.get(stream)
    if found is None:
        found = _decoded[stream] = _decode_in_child(stream, what)
    return found


def _decode_in_child(stream: bytes, what: str) -> np.ndarray:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:                                          # the child: decode, send, leave at once
        status = 1
        try:
            os.close(read_end)
            os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # the codec prints on a bad stream
            from ethosu import mlw_codec
            values = np.asarray(mlw_codec.decode(bytearray(stream)), dtype=np.int16).tobytes()
            _write_all(write_end, struct.pack("<Q", len(values)) + values)
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    try:
        data = _read_all(read_end, time.monotonic() + DECODE_SECONDS, pid)
    finally:
        os.close(read_end)
        _, status = os.waitpid(pid, 0)
    if data is None or len(data) < 8 or status != 0 or struct.unpack_from("<Q", data)[0] != len(data) - 8:
        raise NpuCorrupt(f"{what}: the weight stream ({len(stream)} bytes) does not decode")
    return np.frombuffer(data, dtype=np.int16, offset=8)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _read_all(fd: int, deadline: float, pid: int):
    chunks = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            os.kill(pid, 9)
            return None
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
