"""The largest live set of a Cortex-M program's memory plan: the floor of any arena that keeps each
kernel call's tensors whole, read from the serialized program (no emulator).

A planned tensor is live from the first kernel call that names it to the last one (an input from
before the first call, an output until after the last). At each call the live bytes are the union of
the byte ranges of the tensors live then (two values ExecuTorch placed over the same bytes count once),
summed over the plan's buffers. The largest of them is what a plan by lifetime needs at least; what the
runtime's arena holds above it (the plan's own fragmentation, the kernels' workspace and working memory
that find no room in the plan's free bytes while they are live) is the gap that `measure` reports:

    largest_live_set(program) -> {"bytes": B, "call": k, "calls": n}
"""
from __future__ import annotations

import numpy as np

# ExecuTorch ScalarType code -> bytes per element (executorch/exir/_serialize/scalar_type.fbs)
ELEMENT_BYTES = {0: 1, 1: 1, 2: 2, 3: 4, 4: 8, 5: 2, 6: 4, 7: 8, 11: 1, 15: 2}


def largest_live_set(program: bytes) -> dict:
    """{"bytes": the largest live set, "call": the kernel call where it is (0-based), "calls": kernel calls}."""
    from executorch.exir._serialize._program import deserialize_pte_binary
    plan = deserialize_pte_binary(program).program.execution_plan[0]
    calls = [c.instr_args for c in plan.chains[0].instructions if hasattr(c.instr_args, "op_index")]
    first, last = {}, {}
    for k, call in enumerate(calls):
        for index in _tensors_of(plan, call.args):
            first.setdefault(index, k)
            last[index] = k
    for index in plan.inputs:
        first[index] = -1
        last.setdefault(index, -1)
    for index in plan.outputs:
        first.setdefault(index, len(calls))
        last[index] = len(calls)
    best = {"bytes": 0, "call": 0, "calls": len(calls)}
    for k in range(len(calls)):
        ranges = {}
        for index in first:
            if first[index] <= k <= last[index] and _planned(plan, index):
                memory_id, start, end = _range(plan, index)
                ranges.setdefault(memory_id, []).append((start, end))
        live = sum(_union_bytes(r) for r in ranges.values())
        if live > best["bytes"]:
            best = {"bytes": live, "call": k, "calls": len(calls)}
    return best


def _tensors_of(plan, args) -> list:
    """The value indices of the tensors among a call's arguments (a tensor list's items too)."""
    found = []
    for index in args:
        val = plan.values[index].val
        tag = type(val).__name__
        if tag == "Tensor":
            found.append(index)
        elif tag == "TensorList":
            found.extend(int(i) for i in val.items)
    return found


def _planned(plan, index: int) -> bool:
    t = plan.values[index].val
    return type(t).__name__ == "Tensor" and t.allocation_info is not None


def _range(plan, index: int) -> tuple:
    t = plan.values[index].val
    info = t.allocation_info
    start = info.memory_offset_low + (info.memory_offset_high << 32)
    nbytes = int(np.prod(t.sizes, dtype=np.int64)) * ELEMENT_BYTES[int(t.scalar_type)]
    return info.memory_id, start, start + nbytes


def _union_bytes(ranges: list) -> int:
    total, end = 0, None
    for start, stop in sorted(ranges):
        if end is None or start >= end:
            total += stop - start
            end = stop
        elif stop > end:
            total += stop - end
            end = stop
    return total
