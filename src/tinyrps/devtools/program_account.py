"""An exact account of a serialized (non-delegated) ExecuTorch program: what a C runtime must hold.

`account(program)` reads the .pte with ExecuTorch's own deserializer and returns, as plain
JSON-ready data: the file's layout, the inputs and outputs, the operator table, every kernel
call of the chain in order with each argument named after the operator's schema and
described (a tensor's dtype, sizes, dim_order and where it lives; a scalar's or a list's
value; a constant integer tensor's value range), the memory plan and the sizes of the tables
a static runtime needs. `argument_forms(accounts)` folds the calls of many programs into the
forms each argument of each operator takes, which is what a kernel implementer must cover.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from ..firmware.c_facts import dtypes

# An argument that lists more distinct values than this is summarised by its range.
MAX_LISTED_VALUES = 8


def account(program: bytes) -> dict:
    from executorch.exir._serialize._program import deserialize_pte_binary
    prog = deserialize_pte_binary(program).program
    (plan,) = prog.execution_plan
    constants = [bytes(b.storage) for b in prog.constant_buffer]
    operators = [_op_name(op) for op in plan.operators]
    calls, others = [], Counter()
    for chain in plan.chains:
        for entry in chain.instructions:        # the schema's word for the chain's calls
            kind = type(entry.instr_args).__name__
            if kind == "KernelCall":
                calls.append(_call(entry.instr_args, plan, operators, constants))
            else:
                others[kind] += 1
    values = [type(v.val).__name__ for v in plan.values]
    tensors = [v.val for v in plan.values if type(v.val).__name__ == "Tensor"]
    dead = _unreferenced(plan)
    return {
        "file_bytes": len(program),
        "layout": _layout(program),
        "inputs": [_tensor(plan.values[i].val, constants) for i in plan.inputs],
        "outputs": [_tensor(plan.values[i].val, constants) for i in plan.outputs],
        "operators": operators,
        "kernel_calls_per_operator": dict(Counter(c["operator"] for c in calls)),
        "last_call": calls[-1]["operator"] if calls else None,
        "ends_with_dequantize": bool(calls) and calls[-1]["operator"].split(".")[0].endswith("dequantize_per_tensor"),
        "non_const_buffer_sizes": [int(n) for n in plan.non_const_buffer_sizes],
        "counts": {
            "values": len(plan.values),
            **{f"{kind.lower()}_values": n for kind, n in sorted(Counter(values).items())},
            "int_list_items": sum(len(v.val.items) for v in plan.values if type(v.val).__name__ == "IntList"),
            "constant_tensors": sum(1 for t in tensors if t.data_buffer_idx > 0),
            "planned_tensors": sum(1 for t in tensors if t.allocation_info is not None),
            "kernel_calls": len(calls),
            "other_calls": dict(others),
            "chains": len(plan.chains),
            "operators": len(operators),
            "delegates": len(plan.delegates),
            "constant_buffers": len(constants),
            "unreferenced_values": len(dead),
        },
        "constant_bytes": sum(len(c) for c in constants),
        # constant buffers that only unreferenced values use (serialized all the same)
        "unreferenced_constant_bytes": sum(len(constants[b]) for b in _dead_buffers(plan, dead)),
        "calls": calls,
    }


def _unreferenced(plan) -> list:
    """Indices of the values that no call's argument, int list, input or output refers to."""
    used = set(plan.inputs) | set(plan.outputs)
    for chain in plan.chains:
        for entry in chain.instructions:
            used.update(getattr(entry.instr_args, "args", []))
    for v in plan.values:
        if type(v.val).__name__ in ("IntList", "TensorList", "OptionalTensorList"):
            used.update(i for i in v.val.items if i >= 0)
    return [i for i in range(len(plan.values)) if i not in used]


def _dead_buffers(plan, dead: list) -> set:
    def buffers(indices):
        return {plan.values[i].val.data_buffer_idx for i in indices
                if type(plan.values[i].val).__name__ == "Tensor" and plan.values[i].val.data_buffer_idx > 0}
    dead_set = set(dead)
    return buffers(dead) - buffers(i for i in range(len(plan.values)) if i not in dead_set)


def _op_name(op) -> str:
    return op.name + (f".{op.overload}" if op.overload else "")


def _layout(program: bytes) -> dict:
    """The file's header fields (bytes 4..8 the identifier, 8.. the extended header)."""
    from executorch.exir._serialize._program import _ExtendedHeader
    header = _ExtendedHeader.from_bytes(program[8:])
    return {"identifier": program[4:8].decode("ascii", "replace"), "flatbuffer_bytes": header.program_size,
            "segment_base_offset": header.segment_base_offset, "segment_data_bytes": header.segment_data_size}


def _call(call, plan, operators: list, constants: list) -> dict:
    operator = operators[call.op_index]
    names = _argument_names(operator, len(call.args))
    args = []
    for name, index in zip(names, call.args):
        described = _value(plan, index, constants)
        described["name"] = name
        args.append(described)
    return {"operator": operator, "args": args}


def _argument_names(operator: str, count: int) -> list:
    """The schema's argument names for an "ns::op.overload", as serialized: every argument (the
    out tensor last) and then the returned tensor, which is the out tensor again."""
    import torch
    from ..reference.cortex_m import register_operators
    register_operators()
    name, _, overload = operator.partition(".")
    namespace, op_name = name.split("::")
    try:
        schema = getattr(getattr(getattr(torch.ops, namespace), op_name), overload or "default")._schema
        names = [a.name for a in schema.arguments] + [f"return{'' if i == 0 else i}"
                                                      for i in range(len(schema.returns))]
    except (AttributeError, RuntimeError):
        names = []
    if len(names) != count:
        names = [f"arg{i}" for i in range(count)]
    return names


def _value(plan, index: int, constants: list) -> dict:
    val = plan.values[index].val
    kind = type(val).__name__
    if kind == "Tensor":
        return _tensor(val, constants)
    if kind == "Int":
        return {"kind": "int", "value": int(val.int_val)}
    if kind == "Double":
        return {"kind": "double", "value": float(val.double_val)}
    if kind == "Bool":
        return {"kind": "bool", "value": bool(val.bool_val)}
    if kind == "Null":
        return {"kind": "null"}
    if kind == "IntList":
        return {"kind": "int_list", "value": [int(plan.values[i].val.int_val) for i in val.items]}
    return {"kind": kind}


def _tensor(t, constants: list) -> dict:
    known = dtypes()
    dtype = known[t.scalar_type][0] if t.scalar_type in known else str(t.scalar_type)
    out = {"kind": "tensor", "dtype": dtype, "sizes": [int(s) for s in t.sizes],
           "dim_order": [int(d) for d in t.dim_order]}
    if t.data_buffer_idx > 0:
        out["storage"] = "constant"
        data = np.frombuffer(constants[t.data_buffer_idx], np.dtype(dtype))
        if data.size and np.issubdtype(data.dtype, np.integer):
            out["range"] = [int(data.min()), int(data.max())]
    elif t.allocation_info is not None:
        a = t.allocation_info
        out["storage"] = "planned"
        out["memory"] = [int(a.memory_id), int(a.memory_offset_low + (a.memory_offset_high << 32))]
    else:
        out["storage"] = "none"
    return out


# ---------------------------------------------------------------------------------------------
# Argument forms across programs
# ---------------------------------------------------------------------------------------------

def argument_forms(accounts) -> dict:
    """operator -> argument name -> the forms it takes over every call of every account.

    A tensor's form is dtype, rank, dim_order and storage (with the value range of constant
    integer tensors folded together); an int's is its distinct values or, past
    MAX_LISTED_VALUES of them, its range; an int list's likewise; a bool's its values."""
    seen: dict = {}
    for acc in accounts:
        for call in acc["calls"]:
            per_op = seen.setdefault(call["operator"], {})
            for arg in call["args"]:
                per_op.setdefault(arg["name"], []).append(arg)
    return {op: {name: _fold(args) for name, args in per_op.items()} for op, per_op in seen.items()}


def _fold(args: list) -> dict:
    kinds = sorted({a["kind"] for a in args})
    if kinds in (["tensor"], ["null", "tensor"]):   # an optional tensor is None in some calls
        forms = sorted({f"{a['dtype']} {len(a['sizes'])}-D dim_order {a['dim_order']} {a['storage']}"
                        for a in args if a["kind"] == "tensor"}) + (["None"] if "null" in kinds else [])
        ranges = [a["range"] for a in args if "range" in a]
        folded = {"kind": "tensor", "forms": forms}
        if ranges:
            folded["range"] = [min(r[0] for r in ranges), max(r[1] for r in ranges)]
        return folded
    if kinds in (["int"], ["bool"], ["double"]):
        values = sorted({a["value"] for a in args})
        return _listed(kinds[0], values)
    if kinds == ["int_list"]:
        values = sorted({tuple(a["value"]) for a in args})
        if len(values) <= MAX_LISTED_VALUES:
            return {"kind": "int_list", "values": [list(v) for v in values]}
        items = [x for v in values for x in v]
        return {"kind": "int_list", "lengths": sorted({len(v) for v in values}),
                "range": [min(items), max(items)], "distinct": len(values)}
    if kinds == ["null"]:
        return {"kind": "null"}
    return {"kind": "/".join(kinds)}


def _listed(kind: str, values: list) -> dict:
    if len(values) <= MAX_LISTED_VALUES:
        return {"kind": kind, "values": values}
    return {"kind": kind, "range": [values[0], values[-1]], "distinct": len(values)}
