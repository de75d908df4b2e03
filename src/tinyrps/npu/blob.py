"""The Ethos-U delegate's bytes in a .pte, and the blocks of its `vela_bin_stream`.

ExecuTorch keeps each delegate's processed bytes in the program's flatbuffer (inline data,
indexed by the delegate's `processed` reference). The Arm backend writes them as a sequence
of blocks: a 16-byte NUL-padded name, a u32 length, a u8 `external` flag, 11 reserved bytes,
then the data padded to 16 bytes. Every length and offset is checked before it is used.
"""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass

import numpy as np

from . import NpuCorrupt, NpuUnsupported

ETHOS_U_BACKEND = "EthosUBackend"
# Field slots of executorch/exir/_serialize/program.fbs.
PROGRAM_EXECUTION_PLAN, PROGRAM_DELEGATE_DATA = 1, 3
PLAN_DELEGATES = 7
DELEGATE_ID, DELEGATE_PROCESSED = 0, 1
REFERENCE_LOCATION, REFERENCE_INDEX = 0, 1
INLINE_DATA = 0
LOCATION_INLINE = 0

BLOCK_HEADER = 32
BLOCK_ORDER = ("vela_bin_stream", "cmd_data", "weight_data", "scratch_size", "inputs", "outputs", "vela_end_stream")
# an IO record: i32 shape[6], element size, offset, region
IO_RECORD = struct.Struct("<6iiii")


@dataclass(frozen=True)
class TensorPlace:
    shape: tuple        # the tensor's shape (leading 1s of the 6 slots dropped, at least one dimension)
    element_size: int   # bytes per element
    offset: int         # byte offset in the scratch (region 1), where the driver copies it

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape)) * self.element_size


@dataclass(frozen=True)
class Delegate:
    cmd_data: bytes
    weight_data: bytes
    scratch_size: int
    inputs: tuple       # TensorPlace per delegate input
    outputs: tuple      # TensorPlace per delegate output


def ethos_u_blobs(program: bytes, name: str) -> list:
    """The processed bytes of every Ethos-U delegate of the first execution plan, in plan order."""
    from ..hardware.pte import _Flatbuffer, _read_whole
    with _read_whole(name):
        fb = _Flatbuffer(program)
        root = fb.root()
        plan = fb.tables(root, PROGRAM_EXECUTION_PLAN)[0]
        inline = fb.tables(root, PROGRAM_DELEGATE_DATA)
        blobs = []
        for delegate in fb.tables(plan, PLAN_DELEGATES):
            if fb.string(delegate, DELEGATE_ID) != ETHOS_U_BACKEND:
                continue
            reference = fb.table(delegate, DELEGATE_PROCESSED)
            if fb.scalar(reference, REFERENCE_LOCATION, "<b") != LOCATION_INLINE:
                raise NpuUnsupported(f"{name}: the Ethos-U delegate's data is in a separate segment; "
                                     f"export it with the delegate inline (as `tinyrps export` does)")
            index = fb.scalar(reference, REFERENCE_INDEX, "<I")
            if index >= len(inline):
                raise NpuCorrupt(f"{name}: the Ethos-U delegate names inline data {index} of {len(inline)}")
            blobs.append(bytes(fb.scalars(inline[index], INLINE_DATA, "<B")))
    if not blobs:
        raise NpuCorrupt(f"{name} has no Ethos-U delegate")
    return blobs


def read_blocks(blob: bytes, name: str) -> dict:
    """name -> data of each block, in the order the Arm backend writes them."""
    blocks, at = {}, 0
    while at < len(blob):
        if at + BLOCK_HEADER > len(blob):
            raise NpuCorrupt(f"{name}: the Ethos-U delegate ends inside a block header at byte {at}")
        raw_name, length = blob[at:at + 16], struct.unpack_from("<I", blob, at + 16)[0]
        block = raw_name.rstrip(b"\0")
        if not re.fullmatch(rb"[A-Za-z0-9_]+", block):
            raise NpuCorrupt(f"{name}: the Ethos-U delegate has a block without a readable name at byte {at}")
        block = block.decode()
        padded = (length + 15) // 16 * 16
        if at + BLOCK_HEADER + padded > len(blob):
            raise NpuCorrupt(f"{name}: the Ethos-U delegate's block '{block}' ({length} bytes) runs past its end")
        blocks[block] = blob[at + BLOCK_HEADER:at + BLOCK_HEADER + length]
        at += BLOCK_HEADER + padded
        if block == "vela_end_stream":
            break
    if tuple(blocks) != BLOCK_ORDER:
        raise NpuCorrupt(f"{name}: the Ethos-U delegate's blocks are {', '.join(blocks) or 'none'}, "
                         f"not {', '.join(BLOCK_ORDER)}")
    return blocks


def parse_delegate(blob: bytes, name: str) -> Delegate:
    blocks = read_blocks(blob, name)
    if len(blocks["scratch_size"]) != 4:
        raise NpuCorrupt(f"{name}: the Ethos-U delegate's scratch_size block is {len(blocks['scratch_size'])} "
                         f"bytes, not 4")
    scratch = struct.unpack("<I", blocks["scratch_size"])[0]
    inputs, outputs = (_tensor_places(blocks[b], b, scratch, name) for b in ("inputs", "outputs"))
    return Delegate(blocks["cmd_data"], blocks["weight_data"], scratch, inputs, outputs)


def _tensor_places(data: bytes, block: str, scratch: int, name: str) -> tuple:
    if len(data) < 4:
        raise NpuCorrupt(f"{name}: the Ethos-U delegate's {block} block is {len(data)} bytes")
    count = struct.unpack_from("<i", data)[0]
    if count < 0 or 4 + count * IO_RECORD.size != len(data):
        raise NpuCorrupt(f"{name}: the Ethos-U delegate's {block} block counts {count} tensors "
                         f"in {len(data)} bytes")
    places = []
    for i in range(count):
        *shape, size, offset, _region = IO_RECORD.unpack_from(data, 4 + i * IO_RECORD.size)
        if any(d < 1 or d > 1 << 24 for d in shape) or size not in (1, 2, 4) or offset < 0:
            raise NpuCorrupt(f"{name}: the Ethos-U delegate's {block} tensor {i} has shape {shape}, "
                             f"element size {size}, offset {offset}")
        while len(shape) > 1 and shape[0] == 1:
            shape.pop(0)
        place = TensorPlace(tuple(shape), size, offset)
        if offset + place.nbytes > scratch:
            raise NpuCorrupt(f"{name}: the Ethos-U delegate's {block} tensor {i} ({place.nbytes} bytes at "
                             f"{offset}) lies outside its scratch of {scratch} bytes")
        places.append(place)
    return tuple(places)
