"""A program's input and output tensors as the firmware describes them, and their bytes.

The firmware's runtime keeps each input and output in its own memory order (its dim_order:
the logical dimensions from outermost to innermost in memory); the device link, the batch
files and `tinyrps-native` move those bytes as they are. `TensorLayout` turns a numpy array
of the logical shape into them and back. The description's layout and the dtype codes come
from the firmware's headers (c_facts).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..infra.errors import UserError
from . import c_facts


@dataclass(frozen=True)
class TensorLayout:
    dtype: np.dtype            # little-endian
    shape: tuple               # logical
    dim_order: tuple           # logical dims from outermost to innermost in memory
    has_int8: bool = False     # an output with raw int8 values (the int8 tensor its dequantize read)

    @property
    def numel(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.numel * self.dtype.itemsize

    def describe(self) -> str:
        return f"{dtype_text(self.dtype)} [{', '.join(map(str, self.shape))}]"

    def to_bytes(self, array: np.ndarray) -> bytes:
        """The bytes of an array of this spec's shape (and dtype), in memory order."""
        return np.ascontiguousarray(np.asarray(array).astype(self.dtype, copy=False).transpose(self.dim_order)).tobytes()

    def from_bytes(self, data: bytes, dtype: Optional[np.dtype] = None, count: int = 1) -> np.ndarray:
        """`count` tensors of this spec (of `dtype`: the raw int8 values are int8) from their bytes in
        memory order, as an array [count, *shape] in logical order."""
        dtype = np.dtype(dtype or self.dtype)
        stored = [self.shape[d] for d in self.dim_order]
        a = np.frombuffer(data, dtype, count * self.numel).reshape([count, *stored])
        return np.ascontiguousarray(a.transpose([0, *(1 + int(d) for d in np.argsort(self.dim_order))]))

    def to_batch_bytes(self, arrays: np.ndarray) -> np.ndarray:
        """[N, *shape] -> [N, nbytes] uint8, each row one tensor in memory order."""
        a = np.asarray(arrays).astype(self.dtype, copy=False)
        stored = np.ascontiguousarray(a.transpose([0, *(1 + d for d in self.dim_order)]))
        return stored.reshape(len(a), -1).view(np.uint8)


def numpy_dtype(code: int) -> np.dtype:
    """The numpy dtype of a ScalarType code the runtime takes (c_facts.dtypes), little-endian."""
    known = c_facts.dtypes()
    if code not in known:
        raise KeyError(code)
    return np.dtype(known[code][0]).newbyteorder("<")


def parse_description(raw: bytes) -> TensorLayout:
    """A tensor description (firmware/protocol/tensor_desc.h). ValueError if it is not a consistent one."""
    layout = description_layout()
    if len(raw) != layout.size:
        raise ValueError(f"a tensor description is {layout.size} bytes, not {len(raw)}")
    d = layout.unpack(raw)
    try:
        dtype = numpy_dtype(d["DTYPE"])
    except KeyError:
        raise ValueError(f"unknown dtype code {d['DTYPE']}") from None
    rank = d["RANK"]
    if rank > len(d["SIZES"]):
        raise ValueError(f"rank {rank} above {len(d['SIZES'])}")
    shape, order = tuple(d["SIZES"][:rank]), tuple(d["DIM_ORDER"][:rank])
    if any(s < 0 for s in shape) or sorted(order) != list(range(rank)):
        raise ValueError(f"shape {list(shape)} with dim order {list(order)}")
    spec = TensorLayout(dtype, shape, order, bool(d["FLAGS"] & c_facts.define("TENSOR_DESC_HAS_INT8")))
    if d["NUMEL"] != spec.numel or d["NBYTES"] != spec.nbytes:
        raise ValueError(f"{d['NUMEL']} elements in {d['NBYTES']} bytes for {spec.describe()}")
    return spec


def spec_from_json(entry: dict) -> TensorLayout:
    """A tensor of `tinyrps-native info`."""
    return TensorLayout(np.dtype(entry["dtype"]).newbyteorder("<"), tuple(entry["shape"]), tuple(entry["dim_order"]),
                      bool(entry.get("int8", False)))


def dtype_text(dtype: np.dtype) -> str:
    """A dtype's name, with its byte order where it is not this machine's: two arrays told apart by
    their byte order alone are described differently."""
    dtype = np.dtype(dtype)
    if dtype.byteorder in ("=", "|") or dtype.byteorder == ("<" if sys.byteorder == "little" else ">"):
        return dtype.name
    return f"{dtype.name} {'big' if dtype.byteorder == '>' else 'little'}-endian"


def description_layout() -> c_facts.Layout:
    return c_facts.layout("TENSOR_DESC_FIELDS", "TENSOR_DESC_BYTES")


def check_inputs(specs: list, arrays, program: str, batched: bool) -> list:
    """The arrays given for a program's inputs, checked against them: as many, each of the input's dtype
    and shape ([N, *shape] when batched, the same N for all). One-line UserError otherwise."""
    if isinstance(arrays, np.ndarray):
        arrays = [arrays]
    arrays = list(arrays)
    expected = ", ".join(s.describe() for s in specs)
    if len(arrays) != len(specs):
        raise UserError(f"{program} takes {len(specs)} input{'s' if len(specs) != 1 else ''} ({expected}); "
                        f"{len(arrays)} {'were' if len(arrays) != 1 else 'was'} given")
    checked, count = [], None
    for i, (spec, array) in enumerate(zip(specs, arrays)):
        a = np.asarray(array)
        shape = tuple(a.shape[1:]) if batched else tuple(a.shape)
        if a.dtype != spec.dtype or shape != spec.shape or (batched and a.ndim == 0):
            got = f"{dtype_text(a.dtype)} [{', '.join(map(str, a.shape))}]"
            want = f"{dtype_text(spec.dtype)} [N, {', '.join(map(str, spec.shape))}]" if batched else spec.describe()
            raise UserError(f"input {i} of {program} is {want}; the array given is {got}")
        if batched:
            if count is not None and len(a) != count:
                raise UserError(f"the inputs given for {program} hold {count} and {len(a)} samples: give each "
                                "input the same number")
            count = len(a)
        checked.append(a)
    return checked


def is_image_classifier(inputs: list, outputs: list) -> bool:
    """The programs `classify` runs: one float32 input of one 28x28 channel, float32 output 0."""
    return (len(inputs) == 1 and inputs[0].dtype == np.float32 and inputs[0].shape == (1, 1, 28, 28)
            and len(outputs) >= 1 and outputs[0].dtype == np.float32)


def images_as_input(images: np.ndarray) -> np.ndarray:
    """uint8 images [N, 28, 28] as N samples of an image classifier's float32 input [1, 1, 28, 28]: x / 255
    in float32, the rounding of the firmware's own (float)x / 255.0f."""
    images = np.ascontiguousarray(images, dtype=np.uint8)
    return (images.astype(np.float32) / np.float32(255)).reshape(len(images), 1, 1, *images.shape[1:])


def samples_file_bytes(specs: list, arrays: list) -> bytes:
    """The samples file of docs/firmware.md ("Tensor files"): per sample, every input's bytes in order."""
    if not arrays or not len(arrays[0]):
        return b""
    return np.concatenate([spec.to_batch_bytes(a) for spec, a in zip(specs, arrays)], axis=1).tobytes()


def result_bytes(specs: list) -> int:
    """Bytes of one sample's results: every output, each followed by its raw int8 values when it has them."""
    return sum(spec.nbytes + (spec.numel if spec.has_int8 else 0) for spec in specs)


def split_results(records: np.ndarray, specs: list) -> tuple:
    """Results rows [N, result_bytes] -> (outputs, raw int8 values): per output [N, *shape], or None where it has
    no raw int8 values."""
    count, values, int8, at = len(records), [], [], 0
    for spec in specs:
        values.append(spec.from_bytes(records[:, at:at + spec.nbytes].tobytes(), count=count))
        at += spec.nbytes
        if spec.has_int8:
            int8.append(spec.from_bytes(records[:, at:at + spec.numel].tobytes(), np.int8, count))
            at += spec.numel
        else:
            int8.append(None)
    return values, int8
