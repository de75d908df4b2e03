"""The runtime's Ethos-U delegate loader (firmware/src/ethos_u_delegate.c) on the native build, which
links no NPU driver: a whole program is refused in one line for the missing driver, a damaged delegate
blob for what is wrong with it, and no damage to the blob's headers makes the loader read out of bounds."""
from __future__ import annotations

import struct
import subprocess

import pytest

BLOCK_HEADER = 32
NO_DRIVER = "Ethos-U delegate: no NPU driver linked (trt_npu_invoke)"


def blocks(data: bytes) -> list:
    """(name, header offset, data length) of each block of the program's vela_bin_stream."""
    at, found = data.index(b"vela_bin_stream\0"), []
    while True:
        name = data[at:at + 16].rstrip(b"\0").decode()
        length = struct.unpack_from("<I", data, at + 16)[0]
        found.append((name, at, length))
        if name == "vela_end_stream":
            return found
        at += BLOCK_HEADER + (length + 15) // 16 * 16


def load_line(tool, pte) -> tuple:
    result = subprocess.run([str(tool), "info", str(pte)], capture_output=True, text=True, timeout=60)
    return result.returncode, result.stderr.strip()


@pytest.mark.parametrize("target", ["ethos-u55-128", "ethos-u85-128"])
def test_a_program_with_a_delegate_and_no_driver_is_refused_at_load(native_tool, exported, target):
    code, said = load_line(native_tool, exported(target))
    assert code != 0 and said.endswith(NO_DRIVER) and "\n" not in said


@pytest.mark.parametrize("damage, reason", [
    ("name", "Ethos-U blob lacks block cmd_data"),
    ("length", "Ethos-U blob block runs past its end: weight_data"),
    ("scratch", "Ethos-U blob tensor outside its scratch"),
    ("io count", "Ethos-U blob IO count does not match the call"),
    ("cop1", "Ethos-U command data is not a COP1 payload"),
])
def test_a_damaged_delegate_blob_is_refused_in_one_line(native_tool, exported, tmp_path, damage, reason):
    data = bytearray(exported("ethos-u55-128").read_bytes())
    at = {name: (offset, length) for name, offset, length in blocks(bytes(data))}
    if damage == "name":
        data[at["cmd_data"][0] + 2] ^= 0x20
    elif damage == "length":
        struct.pack_into("<I", data, at["weight_data"][0] + 16, 1 << 28)
    elif damage == "scratch":
        struct.pack_into("<I", data, at["scratch_size"][0] + BLOCK_HEADER, 16)
    elif damage == "io count":
        struct.pack_into("<i", data, at["inputs"][0] + BLOCK_HEADER, 2)
    else:
        data[at["cmd_data"][0] + BLOCK_HEADER] ^= 0xFF
    bad = tmp_path / "damaged.pte"
    bad.write_bytes(bytes(data))
    code, said = load_line(native_tool, bad)
    assert code != 0 and reason in said and "\n" not in said, said


def test_no_damage_to_the_blob_headers_reads_out_of_bounds(asan_build, exported, tmp_path):
    """Every byte of every block header and of the IO blocks, set to 0x00, 0x7F and 0xFF, under
    AddressSanitizer: each program is refused in one line (or, harmless, left as the driver check's)."""
    tool = asan_build.tool("tinyrps-native")
    data = exported("ethos-u55-128").read_bytes()
    places = []
    for name, offset, length in blocks(data):
        places += range(offset + 16, offset + 24)                    # length and flag
        if name in ("scratch_size", "inputs", "outputs"):
            places += range(offset + BLOCK_HEADER, offset + BLOCK_HEADER + length)
    bad = tmp_path / "mutated.pte"
    for place in places:
        for value in (0x00, 0x7F, 0xFF):
            mutated = bytearray(data)
            mutated[place] = value
            bad.write_bytes(bytes(mutated))
            code, said = load_line(tool, bad)
            assert code != 0 and "\n" not in said and "ERROR: AddressSanitizer" not in said, (place, value, said)
            assert "Ethos-U" in said or "bad" in said or "malformed" in said, (place, value, said)
