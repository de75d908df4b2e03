"""What a deploy library says of its program's inputs and outputs: each integer tensor's scale and zero point in
the header, and which I/O the program has (integer I/O being a library's default) in the summary."""
from __future__ import annotations

from tinyrps.deploy import library, library_files

TENSOR = {"dtype": "int8", "shape": [1, 640], "dim_order": [0, 1], "nbytes": 640}


def test_the_header_carries_an_integer_tensors_scale_and_zero_point():
    text = library_files._tensor_macros("M", "INPUT", [TENSOR], ((0.03130553662776947, 6),))
    assert "#define M_INPUT0_SCALE 0.03130553662776947\n" in text
    assert "#define M_INPUT0_ZERO_POINT (6)" in text
    floats = library_files._tensor_macros("M", "OUTPUT", [dict(TENSOR, dtype="float32", nbytes=2560)], ((None, None),))
    assert "SCALE" not in floats and "ZERO_POINT" not in floats


def _manifest(io: str) -> dict:
    return {"name": "m", "board": {"name": "mps3-an547", "instructions_per_inference": 1},
            "kernels": {"isa": "mve"}, "program": {"file": "m.pte", "core": "cortex-m55", "sha256": "0" * 64,
                                                   "bytes": 1},
            "arena_bytes": {"mve": 768, "c": 768}, "code": {"missing": "x"}, "io": io}


def test_the_summary_says_which_io_the_program_has():
    ints = "\n".join(library.summary_lines(_manifest("int8"), "out"))
    floats = "\n".join(library.summary_lines(_manifest("float"), "out"))
    assert "inputs and outputs: int8" in ints and "default" in ints
    assert "inputs and outputs: float32" in floats and "--io int8" in floats
