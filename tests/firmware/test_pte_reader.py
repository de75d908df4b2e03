"""The C reader of the .pte format: every parsed field against ExecuTorch's own deserializer,
and rejection (never a crash) of truncated, bit-flipped and foreign programs."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tinyrps.devices import open_device
from tinyrps.infra.errors import UserError

REJECTED = 3


def fnv1a64(data: bytes) -> str:
    h = 14695981039346656037
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def python_view(value) -> dict:
    """One EValue as deserialize_pte_binary gives it, in the dump's JSON shape."""
    val = value.val
    kind = type(val).__name__
    if kind == "Tensor":
        alloc = val.allocation_info
        return {"kind": "tensor", "scalar_type": int(val.scalar_type), "sizes": list(val.sizes),
                "dim_order": list(val.dim_order), "data_buffer_idx": val.data_buffer_idx,
                "allocation": None if alloc is None else
                [alloc.memory_id, alloc.memory_offset_low + (alloc.memory_offset_high << 32)]}
    if kind == "Int":
        return {"kind": "int", "value": val.int_val}
    if kind == "Bool":
        return {"kind": "bool", "value": val.bool_val}
    if kind == "Double":
        return {"kind": "double", "value": val.double_val}
    if kind == "IntList":
        return {"kind": "int_list", "items": list(val.items)}
    if kind == "TensorList":
        return {"kind": "tensor_list", "items": list(val.items)}
    if kind == "Null":
        return {"kind": "null"}
    raise AssertionError(f"unexpected value kind {kind} in a Cortex-M program")


@pytest.mark.parametrize("target", ["cortex-m55", "cortex-m4"])
def test_every_parsed_field_matches_executorchs_deserializer(target, exported, native, native_tool):
    from executorch.exir._serialize._program import deserialize_pte_binary
    pte = exported(target)
    data = pte.read_bytes()
    dump = json.loads(native.tool(native_tool, "dump", pte).stdout)
    program = deserialize_pte_binary(data).program
    (plan,) = program.execution_plan
    (parsed,) = dump["plans"]

    assert dump["segment_base"] > 0, "constants are expected in a segment after the flatbuffer"
    assert parsed["name"] == plan.name == "forward"
    assert parsed["values"] == [python_view(v) for v in plan.values]
    assert parsed["inputs"] == list(plan.inputs) and parsed["outputs"] == list(plan.outputs)
    assert parsed["operators"] == [[op.name, op.overload] for op in plan.operators]
    assert parsed["memory_sizes"] == list(plan.non_const_buffer_sizes)
    assert parsed["chains"] == [[{"kind": 1, "op_index": i.instr_args.op_index, "args": list(i.instr_args.args)}
                                 for i in chain.instructions] for chain in plan.chains]
    # the deserializer moves the constant segment back into constant_buffer: same slicing, same bytes
    assert dump["constant_buffers"] == [{"len": len(b.storage), "fnv1a64": fnv1a64(bytes(b.storage))}
                                        for b in program.constant_buffer]


def test_a_tensor_list_is_parsed_like_executorchs_deserializer(native, native_tool):
    """aten::cat's Tensor[] argument, in the elementwise seed program of the fuzz corpus."""
    from executorch.exir._serialize._program import deserialize_pte_binary
    pte = Path(__file__).resolve().parents[2] / "firmware" / "fuzz" / "seeds" / "pte" / "elementwise-cortex-m55.pte"
    (plan,) = deserialize_pte_binary(pte.read_bytes()).program.execution_plan
    (parsed,) = json.loads(native.tool(native_tool, "dump", pte).stdout)["plans"]
    assert parsed["values"] == [python_view(v) for v in plan.values]
    assert any(v["kind"] == "tensor_list" for v in parsed["values"])


def test_runtime_reports_the_memory_plan_and_every_kernel_call(m55_pte, native, native_tool):
    from tinyrps.network.model import count_macs
    info = json.loads(native.tool(native_tool, "info", m55_pte).stdout)
    dump = json.loads(native.tool(native_tool, "dump", m55_pte).stdout)
    planned = sum(-(-size // 16) * 16 for size in dump["plans"][0]["memory_sizes"])
    assert planned <= info["arena_bytes"] < planned + 8 * 1024   # plan + weight sums for offset folding
    assert info["macs"] == count_macs()
    assert info["calls"] == ["cortex_m::quantize_per_tensor", "cortex_m::quantized_depthwise_conv2d",
                             "cortex_m::quantized_conv2d", "cortex_m::quantized_max_pool2d",
                             "cortex_m::quantized_conv2d", "cortex_m::quantized_max_pool2d",
                             "dim_order_ops::_clone_dim_order", "cortex_m::quantized_linear",
                             "cortex_m::quantized_linear", "cortex_m::dequantize_per_tensor"]


def rejection(tool, path) -> str:
    result = subprocess.run([str(tool), "info", str(path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == REJECTED, f"expected a rejection, got {result.returncode}: {result.stdout}{result.stderr}"
    (line,) = result.stderr.strip().splitlines()
    return line


def test_bad_file_identifier_is_rejected_as_not_an_executorch_program(m55_pte, asan_build, tmp_path):
    data = bytearray(m55_pte.read_bytes())
    data[4:8] = b"XX12"
    (tmp_path / "bad.pte").write_bytes(data)
    line = rejection(asan_build.tool("tinyrps-native"), tmp_path / "bad.pte")
    assert line.startswith("error: bad magic:") and "ET12" in line


def test_truncated_programs_are_rejected_at_every_cut(m55_pte, asan_build, tmp_path):
    data = m55_pte.read_bytes()
    dump_tool = asan_build.tool("tinyrps-native")
    program_size = int.from_bytes(data[16:24], "little")
    cuts = sorted({0, 4, 8, 12, 31, 32, 100, 1000, program_size // 2, program_size - 1, program_size,
                   program_size + 64, len(data) // 2, len(data) - 4096, len(data) - 1})
    for cut in cuts:
        path = tmp_path / f"cut{cut}.pte"
        path.write_bytes(data[:cut])
        line = rejection(dump_tool, path)
        assert line.split(":")[1].strip() in {"truncated", "bad magic", "malformed", "bad tensor"}, (cut, line)


def test_bit_flips_in_the_structure_never_crash(m55_pte, asan_build, tmp_path):
    """Single flips at the header, root table, vtables and value tables: accepted or rejected, never UB."""
    data = m55_pte.read_bytes()
    tool = asan_build.tool("tinyrps-native")
    outcomes = set()
    for i, pos in enumerate(list(range(0, 64, 3)) + list(range(64, 8000, 397))):
        flipped = bytearray(data)
        flipped[pos] ^= 1 << (i % 8)
        path = tmp_path / f"flip{pos}.pte"
        path.write_bytes(flipped)
        result = subprocess.run([str(tool), "info", str(path)], capture_output=True, text=True, timeout=60)
        assert result.returncode in (0, REJECTED), f"flip at {pos}: exit {result.returncode}\n{result.stderr}"
        outcomes.add(result.returncode)
    assert REJECTED in outcomes


def test_a_program_for_another_backend_names_what_is_unsupported(exported, native_tool):
    line = rejection(native_tool, exported("fp32"))
    assert line.startswith("error: unsupported operator: unsupported operator aten::"), line


def test_native_device_refuses_corrupted_and_foreign_programs(m55_pte, exported, tmp_path):
    truncated = tmp_path / "cut.pte"
    truncated.write_bytes(m55_pte.read_bytes()[:5000])
    with pytest.raises(UserError, match=r"cut.pte cannot run on the firmware runtime \(truncated: .*\): export"):
        open_device("native", truncated)
    with pytest.raises(UserError, match=r"fp32.pte is a cpu program.*--device executorch"):
        open_device("native", exported("fp32"))
    not_pte = tmp_path / "noise.pte"
    not_pte.write_bytes(b"\0" * 100)
    with pytest.raises(UserError, match="not an ExecuTorch program"):
        open_device("native", not_pte)


def test_runtime_api_contract(m55_pte, asan_build):
    """Argument checks, alignment, arena sizing, reloads and repeatability, under the sanitizers."""
    result = subprocess.run([str(asan_build.tool("tinyrps-api-checks")), str(m55_pte)], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("ok  ") >= 18
