"""Per-layer profiles as ExecuTorch ETDump files, and ETRecords of Cortex-M programs, for
ExecuTorch's own Inspector (`executorch.devtools.Inspector`).

    write_etdump(path, runs, program=None, counter="instructions", totals=None)
    write_etrecord(edge_manager, et_manager, path)
    to_executorch_with_etrecord(edge_manager, path) -> ExecutorchProgramManager
    open_inspector(etdump_path, etrecord=None) -> Inspector (counts unscaled, Cortex-M operators known)

What the official runtime writes, and so what Inspector expects (read from an ETDump that
ExecuTorch's own runtime wrote with `load_program(..., enable_etdump=True)`):

- one RunData named "Execute" per `Method::execute`;
- per kernel call, a ProfileEvent named "native_call_<operator>.<overload>" (the operator
  without its namespace: "native_call_quantized_conv2d.out"), with `chain_index` and
  `instruction_id` the call's chain and its index in that chain; around it an "OPERATOR_CALL"
  event with the same ids (the call plus the runtime's dispatch), which Inspector leaves out of
  its printed tables;
- a "Method::execute" ProfileEvent around the whole inference (chain index -1).

Inspector merges the runs whose events have the same names and ids into one EventBlock:
N inferences of one program are one block "Execute" with one row per kernel call, each row
holding the N values (`event.perf_data.raw`). The ETRecord maps an event's `instruction_id` to
the edge graph's nodes (`debug_handle`), which gives each row its source operators
(`op_types`), stack traces and module hierarchy.

What is written here: the same run and event names and ids, one event per kernel call of
tinyrps's runtime (it runs one chain of kernel calls: call i is at index i of chain 0),
and a Method::execute event per run. No OPERATOR_CALL events: the runtime's counter measures
the kernels only, so such an event would only repeat the kernel's figure. The kernel variant
the runtime bound for a call ("mve", "dsp", "c") is the event's `delegate_debug_metadata`
(ASCII bytes; `inspector.to_dataframe(include_delegate_debug_data=True)` shows it): the
schema has no other free field, and a name with the variant in it would make the same
operator two rows when an ISA build is compared with a plain-C one.

The time unit is the counter's. On QEMU (-icount shift=0) it is executed instructions, not
cycles; on a real board whatever the integrator's counter counts. A call's start is the sum of
the calls before it in its run (the runtime measures each call's advance, not where it starts;
the runtime's own work between calls is not counted), and runs follow one another on one
time line. To read the counts as they are, open the file with

    Inspector(etdump_path=PATH, source_time_scale=TimeScale.CYCLES, target_time_scale=TimeScale.CYCLES)

(`executorch.devtools.inspector.TimeScale`): no scaling; Inspector labels the unit "cycles"
although QEMU's counts are instructions. With Inspector's defaults (source ns, target ms) the
counts are divided by 10^6: under -icount shift=0 one instruction is one nanosecond of QEMU's
virtual clock, so that shows QEMU's virtual milliseconds, which are not a time on silicon.

This module imports neither torch nor ExecuTorch: the ETDump is built with the `flatbuffers`
package against executorch/devtools/etdump/etdump_schema_flatcc.fbs (the field slots below),
and each event's chain and index come from the program through tinyrps.hardware.pte's reader. The
ETRecord functions import ExecuTorch when called.
"""
from __future__ import annotations

import operator
from numbers import Integral
from pathlib import Path
from typing import Optional, Sequence

from ..infra.artifacts.files import atomic_write_bytes, check_replaceable_file
from ..infra.errors import UserError

# Names the official runtime gives its events and runs.
RUN_NAME = "Execute"
RUN_EVENT = "Method::execute"
KERNEL_EVENT_PREFIX = "native_call_"
# The overload of every kernel call of an ExecuTorch program (they are all `.out` overloads),
# used when no program is given to read it from.
DEFAULT_OVERLOAD = "out"
# ExecuTorch's ETDump schema: file identifier, the version its runtime writes, field slots.
ETDUMP_IDENTIFIER = b"ED00"
ETDUMP_VERSION = 0
ETDUMP_VERSION_SLOT, ETDUMP_RUN_DATA_SLOT = 0, 1
RUN_NAME_SLOT, RUN_BUNDLED_INPUT_SLOT, RUN_ALLOCATORS_SLOT, RUN_EVENTS_SLOT = 0, 1, 2, 3
EVENT_PROFILE_SLOT = 0
(PROFILE_NAME_SLOT, PROFILE_CHAIN_SLOT, PROFILE_INSTRUCTION_SLOT, PROFILE_DELEGATE_INT_SLOT,
 PROFILE_DELEGATE_STR_SLOT, PROFILE_METADATA_SLOT, PROFILE_START_SLOT, PROFILE_END_SLOT) = range(8)
UNSET = -1          # the schema's default for ids and for bundled_input_index


# ---------------------------------------------------------------------------------------------
# The events
# ---------------------------------------------------------------------------------------------

def kernel_event_name(op: str, overload: str = DEFAULT_OVERLOAD) -> str:
    """The official runtime's event name of a kernel call: "cortex_m::quantized_conv2d" ->
    "native_call_quantized_conv2d.out"."""
    return f"{KERNEL_EVENT_PREFIX}{op.split('::')[-1]}.{overload}"


def etdump_runs(runs, program=None, counter: str = "instructions", totals: Optional[Sequence] = None) -> list:
    """The runs as they go into the file: [{"name", "events": [{"name", "chain", "index",
    "start", "end", "metadata"}]}]; see write_etdump for the arguments."""
    profiles = _as_profiles(runs)
    if totals is not None and len(totals) != len(profiles):
        raise UserError(f"{len(totals)} whole-inference counts for {len(profiles)} profiled runs: give one per run")
    calls = program_kernel_calls(program) if program is not None else None
    out, clock = [], 0
    for r, profile in enumerate(profiles):
        total = None if totals is None else _whole(totals[r], f"the whole-inference count of run {r}")
        events = _run_events(r, profile, calls, counter, total, clock)
        clock = events[-1]["end"]
        out.append({"name": RUN_NAME, "events": events})
    return out


def _run_events(r: int, profile: list, calls: Optional[list], counter: str, total: Optional[int],
                start: int) -> list:
    """The kernel calls of run r laid end to end from `start`, then the run's Method::execute."""
    if calls is not None and len(profile) != len(calls):
        raise UserError(f"run {r} profiles {len(profile)} kernel calls, the program has {len(calls)}: "
                        "the profile is of another program")
    events, clock = [], start
    for i, call in enumerate(profile):
        chain, index, overload = _call_place(r, i, call, calls)
        count = _whole(call.get(counter), f"run {r}, kernel call {i} ({call['op']})", counter)
        events.append({"name": kernel_event_name(call["op"], overload), "chain": chain, "index": index,
                       "start": clock, "end": clock + count,
                       "metadata": str(call.get("kernels") or "").encode("ascii", "replace")})
        clock += count
    if total is not None:
        if total < clock - start:
            raise UserError(f"run {r}: the whole inference counts {total}, less than its kernel calls "
                            f"({clock - start}): the counts are not of the same run")
        clock = start + total
    events.append({"name": RUN_EVENT, "chain": UNSET, "index": UNSET, "start": start, "end": clock,
                   "metadata": b""})
    return events


def _as_profiles(runs) -> list:
    """One profile (a list of per-call dicts) or a list of them -> a list of profiles."""
    runs = list(runs)
    if not runs:
        raise UserError("no profile to write: the run recorded no kernel calls")
    profiles = [runs] if isinstance(runs[0], dict) else [list(p) for p in runs]
    for r, profile in enumerate(profiles):
        if not profile:
            raise UserError(f"run {r} of the profile has no kernel calls")
        for i, call in enumerate(profile):
            if not isinstance(call, dict) or not isinstance(call.get("op"), str) or not call["op"]:
                raise UserError(f"run {r}, kernel call {i} of the profile names no operator "
                                "(each call is a dict with at least 'op' and its count)")
    return profiles


def _call_place(run: int, i: int, call: dict, calls: Optional[list]) -> tuple:
    """(chain index, index in the chain, overload) of kernel call i, checked against the program."""
    given = call.get("index")
    if calls is None:
        return 0, i if given is None else _index(given, run, i), DEFAULT_OVERLOAD
    if i >= len(calls):
        raise UserError(f"run {run} profiles more kernel calls than the program has ({len(calls)}): "
                        "the profile is of another program")
    chain, index, op, overload = calls[i]
    if call["op"] != op:
        raise UserError(f"run {run}, kernel call {i} of the profile is {call['op']}, the program's is {op}: "
                        "the profile is of another program")
    if given is not None and _index(given, run, i) != index:
        raise UserError(f"run {run}, kernel call {i} says it is call {given} of the chain, the program's is "
                        f"{index}")
    return chain, index, overload


def _index(value, run: int, i: int) -> int:
    try:
        index = operator.index(value)
    except TypeError:
        index = -1
    if index < 0:
        raise UserError(f"run {run}, kernel call {i}: its index {value!r} is not an index in the chain")
    return index


def _whole(value, what: str, key: str = "") -> int:
    """A count: a whole number >= 0 (ints of any kind, or a float without a fraction)."""
    if value is None:
        raise UserError(f"{what} has no '{key}' count")
    if isinstance(value, bool) or not isinstance(value, Integral):
        if not (isinstance(value, float) and value.is_integer()):
            raise UserError(f"{what}: its count {value!r} is not a whole number")
    count = int(value)
    if count < 0:
        raise UserError(f"{what}: its count {count} is negative")
    return count


# ---------------------------------------------------------------------------------------------
# The program's kernel calls
# ---------------------------------------------------------------------------------------------

def program_kernel_calls(program) -> list:
    """[(chain index, index in the chain, operator name, overload)] of the first execution plan's
    kernel calls, in order; `program` is a .pte path or its bytes."""
    from .pte import kernel_calls, read_program
    if isinstance(program, (bytes, bytearray)):
        data, shown = bytes(program), "the program"
    else:
        data, shown = read_program(program), str(program)
    return [(call.chain, call.index, call.name, call.overload) for call in kernel_calls(data, shown)]


# ---------------------------------------------------------------------------------------------
# The file
# ---------------------------------------------------------------------------------------------

def etdump_bytes(runs: list) -> bytes:
    """The runs of etdump_runs as an ETDump flatbuffer, size-prefixed as the runtime writes it."""
    import flatbuffers

    builder = flatbuffers.Builder(1024)
    run_offsets = [_run_data(builder, run) for run in runs]
    run_vector = _offset_vector(builder, run_offsets)
    builder.StartObject(2)
    builder.PrependUint32Slot(ETDUMP_VERSION_SLOT, ETDUMP_VERSION, 0)
    builder.PrependUOffsetTRelativeSlot(ETDUMP_RUN_DATA_SLOT, run_vector, 0)
    builder.FinishSizePrefixed(builder.EndObject(), file_identifier=ETDUMP_IDENTIFIER)
    return bytes(builder.Output())


def _run_data(builder, run: dict) -> int:
    events = _offset_vector(builder, [_event(builder, e) for e in run["events"]])
    name = builder.CreateString(run["name"])
    builder.StartObject(4)
    builder.PrependUOffsetTRelativeSlot(RUN_NAME_SLOT, name, 0)
    builder.PrependInt32Slot(RUN_BUNDLED_INPUT_SLOT, UNSET, UNSET)
    builder.PrependUOffsetTRelativeSlot(RUN_EVENTS_SLOT, events, 0)
    return builder.EndObject()


def _event(builder, event: dict) -> int:
    name = builder.CreateString(event["name"])
    metadata = builder.CreateByteVector(event["metadata"]) if event["metadata"] else None
    builder.StartObject(8)
    builder.PrependUOffsetTRelativeSlot(PROFILE_NAME_SLOT, name, 0)
    builder.PrependInt32Slot(PROFILE_CHAIN_SLOT, event["chain"], 0)
    builder.PrependInt32Slot(PROFILE_INSTRUCTION_SLOT, event["index"], UNSET)
    builder.PrependInt32Slot(PROFILE_DELEGATE_INT_SLOT, UNSET, UNSET)
    if metadata is not None:
        builder.PrependUOffsetTRelativeSlot(PROFILE_METADATA_SLOT, metadata, 0)
    builder.PrependUint64Slot(PROFILE_START_SLOT, event["start"], 0)
    builder.PrependUint64Slot(PROFILE_END_SLOT, event["end"], 0)
    profile = builder.EndObject()
    builder.StartObject(3)
    builder.PrependUOffsetTRelativeSlot(EVENT_PROFILE_SLOT, profile, 0)
    return builder.EndObject()


def _offset_vector(builder, offsets: list) -> int:
    builder.StartVector(4, len(offsets), 4)
    for offset in reversed(offsets):
        builder.PrependUOffsetTRelative(offset)
    return builder.EndVector()


# What each counter of a per-layer profile counts (the devices that take one: tinyrps.devices, `profiles`).
COUNTER_UNITS = {"instructions": "instructions under QEMU, not cycles",
                 "nanoseconds": "this host's nanoseconds of the native build, noisy, not a board's time"}


def check_path(path) -> Path:
    """An ETDump goes to a file: a folder is refused (before any work, by the commands that write one)."""
    path = Path(path)
    if path.is_dir():
        raise UserError(f"ETDump path {path} is a folder: give a file name, e.g. {path / 'profile.etdp'}")
    return check_replaceable_file(path, "ETDump path")


def written_message(path, counter: str) -> str:
    """The line that says where the ETDump went and what its times are."""
    return (f"ETDump: {path} (open it with executorch.devtools.Inspector; times are "
            f"{COUNTER_UNITS.get(counter, counter)})")


def mean_total(result) -> Optional[int]:
    """A device run's whole-inference count for the file: the mean over its samples, or None without one."""
    if result.profile_totals is None:
        return None
    return int(round(sum(float(t) for t in result.profile_totals) / len(result.profile_totals)))


def write_etdump(path, runs, program=None, counter: str = "instructions",
                 totals: Optional[Sequence] = None) -> Path:
    """Write a per-layer profile as an ETDump file for ExecuTorch's Inspector; returns the path.

    runs: one profile -- a list of per-kernel-call dicts in chain order, as measure.py's and
      run_batch's `layers` ({"op": "cortex_m::quantized_conv2d", "kernels": "mve",
      "instructions": 12345, ...}) -- or a list of such profiles, one per inference. Each
      profile is one run ("Execute") of the file. A mean profile (run_batch's `layers` are the
      mean per image of a batch) is one run holding those means.
    program: the .pte (path or bytes) that was profiled. Given, each profile must be its kernel
      calls in order (else UserError), and the events take their chain, index in the chain and
      overload from it; without it, call i is at index i of chain 0 and every overload
      "out" (what tinyrps's runtime runs: one chain of `.out` kernel calls).
    counter: the key of each call's count ("instructions"; "instructions_plain_c" for
      measure.py's plain-C figures). A call may carry "index", its index in the chain.
    totals: one whole-inference count per run (e.g. run_batch's `instructions`), the
      Method::execute event's span; by default the sum of the run's kernel calls.

    The unit is the counter's (instructions on QEMU); see the module docstring for the time
    scales to open the file with. The file is written whole or not at all."""
    data = etdump_bytes(etdump_runs(runs, program, counter, totals))
    path = check_path(path)
    atomic_write_bytes(path, data)
    return path


# ---------------------------------------------------------------------------------------------
# ETRecord: the graph behind the events
# ---------------------------------------------------------------------------------------------

def write_etrecord(edge_manager, et_manager, path) -> Path:
    """Write the ETRecord of a Cortex-M program: its edge program and the map from each
    call of the chain to the edge graph's nodes (`debug_handle`), with which Inspector gives every
    event of write_etdump's files its operators, stack traces and module hierarchy.

    edge_manager: the EdgeProgramManager as it was before `to_executorch()` (which rewrites its
      graph in place into `.out` overloads): a `copy.deepcopy` taken before, or use
      to_executorch_with_etrecord. For tinyrps's Cortex-M exports it is lower_to_edge's manager,
      whose program the Cortex-M passes replaced.
    et_manager: what `to_executorch()` returned; its `.buffer` is the .pte the ETRecord describes.

    Reading the ETRecord back needs the Cortex-M operators registered (open_inspector does it;
    with Inspector itself, import executorch.backends.cortex_m.passes and then
    executorch.backends.cortex_m.ops.operators first); without them ExecuTorch's deserializer
    puts placeholder operators in the graph and the Cortex-M events map to no node.
    The map is the exporter's: in the TinyRPS programs the last linear layer and the final
    dequantize share one debug handle, so both of their events name both nodes.
    Written whole or not at all."""
    import io

    from executorch.devtools import generate_etrecord

    rewritten = [n.name for n in edge_manager.exported_program().graph.nodes
                 if n.op == "call_function" and getattr(n.target, "_overloadname", None) == "out"]
    if rewritten:
        raise UserError(f"the edge program was already lowered by to_executorch() (it runs {rewritten[0]}, an "
                        ".out overload): give a copy taken before, or use to_executorch_with_etrecord")
    handles = et_manager.debug_handle_map.get("forward") or {}
    calls = program_kernel_calls(et_manager.buffer)
    missing = [i for _, i, _, _ in calls if i not in handles]
    if missing:
        raise UserError(f"the program's calls {missing} have no debug handle: the events of those kernel "
                        "calls would map to no node of the graph")
    buffer = io.BytesIO()
    generate_etrecord(buffer, edge_manager, et_manager)
    path = Path(path)
    atomic_write_bytes(path, buffer.getvalue())
    return path


def to_executorch_with_etrecord(edge_manager, path, **options):
    """`edge_manager.to_executorch(**options)` (the same program, byte for byte) that also writes
    the program's ETRecord to path."""
    import copy
    before = copy.deepcopy(edge_manager)
    et_manager = edge_manager.to_executorch(**options)
    write_etrecord(before, et_manager, path)
    return et_manager


def open_inspector(etdump_path, etrecord=None):
    """ExecuTorch's Inspector on an ETDump of write_etdump, counts unscaled (TimeScale.CYCLES:
    Inspector's label for "as counted"; on QEMU the counts are instructions), with the
    Cortex-M operators registered so that an ETRecord's graph deserializes with them."""
    import warnings

    from executorch.devtools import Inspector
    from executorch.devtools.inspector import TimeScale
    if etrecord is not None:
        from ..reference.cortex_m import register_operators
        register_operators()
        etrecord = str(etrecord)
    with warnings.catch_warnings():
        # the files hold no tensors (no debug buffer goes with them), which Inspector warns about
        warnings.filterwarnings("ignore", message="Output Buffer not found")
        # its graph view has no place for _clone_dim_order's dim_order argument, and says so
        warnings.filterwarnings("ignore", message="Unsupported kwarg encountered")
        return Inspector(etdump_path=str(etdump_path), etrecord=etrecord,
                         source_time_scale=TimeScale.CYCLES, target_time_scale=TimeScale.CYCLES)
