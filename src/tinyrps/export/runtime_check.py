"""What the firmware's runtime would refuse in a Cortex-M program, found at export, in the runtime's words.

    runtime_refusal(program) -> None, or the reason trt_load gives ("kernel calls above TRT_MAX_KERNEL_CALLS: 135")

The runtime checks its static tables and its operator table while it loads a program
(firmware/src/runtime.c); an export that wrote a program the generic firmware refuses would only be
found out on the board. This walks the serialized program in the order trt_load does -- values,
memory ids, operators (their count, then each against the table of firmware/src/ops/operators.def),
inputs, outputs, kernel calls, then each call's arguments, int[] items and Tensor[] items -- against
the limits its header sets by default (tinyrps.firmware.c_facts), and gives the first refusal with
the runtime's own text. Nothing is compiled: export stays ahead of time. The arguments' values
(ranges, shapes) are each operator's bind step's to check, at load.
"""
from __future__ import annotations


def runtime_refusal(program: bytes):
    """The runtime's reason to refuse `program` over its tables or its operator table, or None."""
    from executorch.exir._serialize._program import deserialize_pte_binary
    from executorch.exir.schema import IntList, OptionalTensorList, TensorList

    from ..firmware import c_facts
    from ..firmware.operators import runtime_operators
    limit = c_facts.limits()
    plan = next((p for p in deserialize_pte_binary(program).program.execution_plan if p.name == "forward"), None)
    if plan is None:
        return "no execution plan named forward"
    table = {op.qualified for op in runtime_operators()}
    counted = (("values above TRT_MAX_VALUES:", len(plan.values), "TRT_MAX_VALUES"),
               ("memory ids above TRT_MAX_MEMORY_IDS:", len(plan.non_const_buffer_sizes), "TRT_MAX_MEMORY_IDS"),
               ("operators above TRT_MAX_OPERATORS:", len(plan.operators), "TRT_MAX_OPERATORS"))
    for reason, count, name in counted:
        if count > limit[name]:
            return f"{reason} {count}"
    for op in plan.operators:
        qualified = f"{op.name}.{op.overload}" if op.overload else op.name
        if qualified not in table:
            return f"unsupported operator {qualified}"
    for reason, count, name in (("inputs above TRT_MAX_INPUTS:", len(plan.inputs), "TRT_MAX_INPUTS"),
                                ("outputs above TRT_MAX_OUTPUTS:", len(plan.outputs), "TRT_MAX_OUTPUTS")):
        if count > limit[name]:
            return f"{reason} {count}"
    calls = [call for chain in plan.chains[:1] for call in chain.instructions]
    if len(calls) > limit["TRT_MAX_KERNEL_CALLS"]:
        return f"kernel calls above TRT_MAX_KERNEL_CALLS: {len(calls)}"
    # a call whose out (its argument before the return) is a Tensor[] is bound once per item: the runtime
    # refuses the first binding past its table
    bound = 0
    for call in calls:
        args = list(getattr(call.instr_args, "args", ()))
        out = plan.values[args[-2]].val if len(args) >= 2 and 0 <= args[-2] < len(plan.values) else None
        bound += len(out.items) if isinstance(out, TensorList) else 1
        if bound > limit["TRT_MAX_KERNEL_CALLS"]:
            return f"kernel calls above TRT_MAX_KERNEL_CALLS: {limit['TRT_MAX_KERNEL_CALLS'] + 1}"
    for call in calls:
        args = list(getattr(call.instr_args, "args", ()))
        if len(args) > limit["TRT_MAX_KERNEL_ARGS"]:
            return f"kernel call arguments above TRT_MAX_KERNEL_ARGS: {len(args)}"
        items, slots = 0, len(args)      # int[] and Tensor[] items of the call; Tensor[] tensors take slots
        for index in args:
            value = plan.values[index].val if 0 <= index < len(plan.values) else None
            if isinstance(value, IntList):
                items += len(value.items)
                if items > limit["TRT_MAX_CALL_LIST_ITEMS"]:
                    return "int[] items of one kernel call above TRT_MAX_CALL_LIST_ITEMS"
            elif isinstance(value, (TensorList, OptionalTensorList)):
                items += len(value.items)
                slots += len(value.items)
                if items > limit["TRT_MAX_CALL_LIST_ITEMS"] or slots > limit["TRT_MAX_KERNEL_ARGS"]:
                    return "Tensor[] items of one kernel call above TRT_MAX_KERNEL_ARGS"
    return None
