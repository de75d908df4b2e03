"""Per-layer profiles as ETDump files, read back by ExecuTorch's own Inspector, and the
ETRecord that maps their events to the Cortex-M program's graph."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from tinyrps.infra.errors import UserError
from tinyrps.hardware.etdump import (RUN_EVENT, RUN_NAME, etdump_bytes, etdump_runs, kernel_event_name, open_inspector,
                            program_kernel_calls, write_etdump)

# A profile of the shape measure.py and run_batch give (counts made up: the writer's own checks).
PROFILE = [
    {"op": "cortex_m::quantize_per_tensor", "kernels": "mve", "instructions": 3781},
    {"op": "cortex_m::quantized_conv2d", "kernels": "mve", "instructions": 962750},
    {"op": "dim_order_ops::_clone_dim_order", "kernels": "c", "instructions": 6188},
    {"op": "cortex_m::dequantize_per_tensor", "kernels": "c", "instructions": 2000},
]


def rows(inspector) -> list:
    """(name, raw values, index in the chain: ETDump's instruction_id) of every event of the only event block."""
    (block,) = inspector.event_blocks
    assert block.name == RUN_NAME
    return [(e.name, [int(v) for v in e.perf_data.raw], e._instruction_id) for e in block.events]


def test_inspector_shows_one_row_per_kernel_call(tmp_path):
    second = [dict(call, instructions=call["instructions"] + 31) for call in PROFILE]
    path = write_etdump(tmp_path / "profile.etdp", [PROFILE, second], totals=np.array([1_000_000, 1_000_124]))
    inspector = open_inspector(path)
    assert rows(inspector) == [
        ("native_call_quantize_per_tensor.out", [3781, 3812], 0),
        ("native_call_quantized_conv2d.out", [962750, 962781], 1),
        ("native_call__clone_dim_order.out", [6188, 6219], 2),
        ("native_call_dequantize_per_tensor.out", [2000, 2031], 3),
        (RUN_EVENT, [1_000_000, 1_000_124], -1),
    ]
    table = inspector.to_dataframe(include_delegate_debug_data=True)
    assert list(table["event_name"]) == [kernel_event_name(c["op"]) for c in PROFILE] + [RUN_EVENT]
    assert list(table["max (cycles)"])[:4] == [c["instructions"] for c in second]
    # the variant each call ran with, per run
    assert list(table["delegate_debug_metadata"])[:4] == [[c["kernels"].encode()] * 2 for c in PROFILE]
    assert not table["is_delegated_op"].any()
    # the calls follow one another; the runs too, each from where the one before ended
    starts = [e.start_time for e in inspector.event_blocks[0].events]
    assert starts[:3] == [[0, 1_000_000], [3781, 1_003_812], [966_531, 1_966_593]]


@pytest.mark.filterwarnings("ignore:Output Buffer not found")     # no tensors are recorded, by design
def test_the_default_time_scale_is_qemus_virtual_milliseconds(tmp_path):
    """Under -icount shift=0 an instruction is a nanosecond of QEMU's clock: Inspector's default
    scales (ns to ms) divide by a million."""
    from executorch.devtools import Inspector
    path = write_etdump(tmp_path / "profile.etdp", PROFILE)
    block, = Inspector(etdump_path=str(path)).event_blocks
    assert block.events[1].perf_data.raw == [pytest.approx(0.96275)]


def test_the_file_is_what_executorchs_serializer_writes(tmp_path):
    """The same runs through ExecuTorch's own (flatc-based) serializer decode to the same ETDump."""
    from executorch.devtools.etdump import schema_flatcc as schema
    from executorch.devtools.etdump.serialize import deserialize_from_etdump_flatcc, serialize_to_etdump_flatcc

    runs = etdump_runs([PROFILE, PROFILE], totals=[990_000, 990_001])
    ours = deserialize_from_etdump_flatcc(etdump_bytes(runs))       # size-prefixed, as the runtime writes

    def event(e):
        return schema.Event(profile_event=schema.ProfileEvent(
            name=e["name"], chain_index=e["chain"], instruction_id=e["index"], delegate_debug_id_int=-1,
            delegate_debug_id_str=None, delegate_debug_metadata=e["metadata"] or None, start_time=e["start"],
            end_time=e["end"]), allocation_event=None, debug_event=None)
    official = schema.ETDumpFlatCC(version=0, run_data=[
        schema.RunData(name=r["name"], bundled_input_index=-1, allocators=None, events=[event(e) for e in r["events"]])
        for r in runs])
    assert ours == deserialize_from_etdump_flatcc(serialize_to_etdump_flatcc(official), size_prefixed=False)
    assert ours.run_data[0].events[1].profile_event.delegate_debug_metadata == b"mve"


def test_writing_imports_neither_torch_nor_executorch(tmp_path):
    probe = (f"import json, sys\nfrom tinyrps.hardware.etdump import write_etdump\n"
             f"write_etdump({str(tmp_path / 'p.etdp')!r}, {PROFILE!r})\n"
             "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & {'torch', 'executorch'})))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(out.stdout) == []
    assert (tmp_path / "p.etdp").read_bytes()[8:12] == b"ED00"     # after the size prefix and the root offset


@pytest.mark.parametrize("runs, totals, message", [
    ([], None, "no profile to write"),
    ([[]], None, "run 0 of the profile has no kernel calls"),
    ([{"kernels": "mve", "instructions": 3}], None, "kernel call 0 of the profile names no operator"),
    ([{"op": "cortex_m::quantized_conv2d"}], None, "has no 'instructions' count"),
    ([{"op": "cortex_m::quantized_conv2d", "instructions": -4}], None, "is negative"),
    ([{"op": "cortex_m::quantized_conv2d", "instructions": 2.5}], None, "is not a whole number"),
    ([{"op": "cortex_m::quantized_conv2d", "instructions": 4, "index": "one"}], None, "is not an index in the chain"),
    (PROFILE, [1, 2], "2 whole-inference counts for 1 profiled runs"),
    (PROFILE, [1000], "less than its kernel calls"),
])
def test_bad_profiles_are_refused_and_leave_the_previous_file(tmp_path, runs, totals, message):
    path = write_etdump(tmp_path / "profile.etdp", PROFILE)
    before = path.read_bytes()
    with pytest.raises(UserError, match=message):
        write_etdump(path, runs, totals=totals)
    assert path.read_bytes() == before


def test_a_folder_is_not_an_etdump_path(tmp_path):
    with pytest.raises(UserError, match="is a folder"):
        write_etdump(tmp_path, PROFILE)


# ── a real program and its measured profiles ──────────────────────────────────────────────────

@pytest.fixture(scope="module")
def m55_program(exported):
    return exported("cortex-m55")


@pytest.fixture(scope="module")
def measured_layers(m55_program, measured):
    """The measure stage's per-layer instructions of the program (QEMU: the fast and the plain-C build)."""
    return measured(m55_program)["firmware"]["layers"]


def test_the_program_reader_agrees_with_executorch(m55_program):
    from executorch.exir._serialize._program import deserialize_pte_binary
    pte = m55_program
    plan = deserialize_pte_binary(pte.read_bytes()).program.execution_plan[0]
    expected = [(c, n, plan.operators[call.instr_args.op_index].name, plan.operators[call.instr_args.op_index].overload)
                for c, chain in enumerate(plan.chains) for n, call in enumerate(chain.instructions)]
    assert program_kernel_calls(pte) == program_kernel_calls(pte.read_bytes()) == expected
    assert len(expected) == 10


@pytest.mark.slow     # measures on QEMU
def test_the_measured_profile(m55_program, measured_layers, tmp_path):
    """The measure stage's per-layer instructions (QEMU, the fast and the plain-C build) as they are."""
    pte, layers = m55_program, measured_layers
    for counter in ("instructions", "instructions_plain_c"):
        path = write_etdump(tmp_path / f"{counter}.etdp", layers, program=pte, counter=counter)
        assert rows(open_inspector(path)) == [
            *[(kernel_event_name(layer["op"]), [layer[counter]], i) for i, layer in enumerate(layers)],
            (RUN_EVENT, [sum(layer[counter] for layer in layers)], -1)]


def test_a_profile_of_another_program_is_refused(m55_program, tmp_path):
    pte = m55_program
    layers = [{"op": f"{name}", "kernels": "c", "instructions": 100} for _, _, name, _ in program_kernel_calls(pte)]
    with pytest.raises(UserError, match="kernel call 2 of the profile is cortex_m::quantized_linear, the program's "
                                        "is cortex_m::quantized_conv2d"):
        write_etdump(tmp_path / "p.etdp", layers[:2] + [dict(layers[2], op="cortex_m::quantized_linear")] + layers[3:],
                     program=pte)
    with pytest.raises(UserError, match="profiles 9 kernel calls, the program has 10"):
        write_etdump(tmp_path / "p.etdp", layers[:-1], program=pte)
    with pytest.raises(UserError, match="says it is call 7 of the chain"):
        write_etdump(tmp_path / "p.etdp", [dict(layer, index=7) for layer in layers], program=pte)
    assert not (tmp_path / "p.etdp").exists()


@pytest.fixture(scope="module")
def per_image_profiles(cortex_m_pte, test_images):
    """One QEMU batch per image (per-call counts of that one inference), and one batch of all three."""
    from tinyrps.firmware.boards import board_for_core
    from tinyrps.firmware.qemu import run_batch
    images, board = test_images[0][:3], board_for_core("cortex-m55").name
    singles = [run_batch(cortex_m_pte, images[k:k + 1], board=board) for k in range(len(images))]
    return singles, run_batch(cortex_m_pte, images, board=board)


@pytest.mark.slow     # boots QEMU
def test_per_image_profiles_from_qemu(cortex_m_pte, per_image_profiles, tmp_path):
    singles, batch = per_image_profiles
    runs = [single.layers for single in singles]
    totals = [int(single.instructions[0]) for single in singles]
    path = write_etdump(tmp_path / "qemu.etdp", runs, program=cortex_m_pte, totals=totals)
    inspector = open_inspector(path)
    assert len(inspector.event_blocks) == 1          # the three inferences: one block, three values per row
    assert rows(inspector) == [
        *[(kernel_event_name(layer["op"]), [run[i]["instructions"] for run in runs], i)
          for i, layer in enumerate(runs[0])],
        (RUN_EVENT, totals, -1)]
    assert list(batch.instructions) == totals        # each image costs the same inside a batch as alone
    # the batch's profile is the mean of the three
    events = inspector.event_blocks[0].events
    assert [round(sum(e.perf_data.raw) / 3) for e in events[:-1]] == [layer["instructions"] for layer in batch.layers]
    assert [e.delegate_debug_metadatas[0] for e in events[:-1]] == [layer["kernels"].encode() for layer in runs[0]]


@pytest.mark.slow     # lowers the model for the Cortex-M55 again, boots QEMU
def test_the_etrecord_maps_each_event_to_its_graph_node(trained_run, data_dir, cortex_m_pte, per_image_profiles,
                                                        tmp_path):
    from tinyrps.hardware.etdump import to_executorch_with_etrecord, write_etrecord
    import torch

    from tinyrps.export.cortex_m import lower_to_edge
    from tinyrps.network.model import INPUT_SHAPE, load_model
    from tinyrps.network.quantization import calibration_images, image_examples
    from tinyrps.infra.torch_settings import torch_threads

    with torch_threads(1):
        edge = lower_to_edge(load_model(trained_run / "model.pt"), (torch.zeros(INPUT_SHAPE),),
                             image_examples(calibration_images(data_dir)), "cortex-m55")
        program = to_executorch_with_etrecord(edge, tmp_path / "cortex-m55.etrecord")
    assert program.buffer == cortex_m_pte.read_bytes()      # the ETRecord is of the very program profiled
    with pytest.raises(UserError, match="already lowered by to_executorch"):
        write_etrecord(edge, program, tmp_path / "again.etrecord")
    assert not (tmp_path / "again.etrecord").exists()

    singles, _ = per_image_profiles
    path = write_etdump(tmp_path / "qemu.etdp", [s.layers for s in singles], program=cortex_m_pte)
    events = open_inspector(path, tmp_path / "cortex-m55.etrecord").event_blocks[0].events
    layer_types = {"quantized_conv2d": "Conv2d", "quantized_depthwise_conv2d": "Conv2d",
                   "quantized_max_pool2d": "MaxPool2d", "quantized_linear": "Linear", "_clone_dim_order": "Flatten"}
    for event, layer in zip(events, singles[0].layers):
        name = layer["op"].split("::")[-1]
        namespace = layer["op"].split("::")[0]
        assert f"{namespace}.{name}.default" in event.op_types, (event.name, event.op_types)
        if name in layer_types:      # a layer of the model: its source line and module
            node = next(n for n in event.stack_traces if name in n)
            assert "tinyrps/network/model.py" in event.stack_traces[node]
            assert list(event.module_hierarchy[node].values())[-1][1].endswith("." + layer_types[name])
    assert events[-1].name == RUN_EVENT and events[-1].op_types == []


@pytest.mark.slow     # boots QEMU
def test_run_writes_the_boards_profile_for_inspector(cli, cortex_m_pte, test_images, per_image_profiles, tmp_path):
    """`tinyrps run --etdump` on the emulated board: the batch's mean per-call profile, one row per kernel call."""
    images = test_images[0][:3].astype(np.float32)[:, None, None] / 255.0     # [N, 1, 1, 28, 28]
    np.savez(tmp_path / "in.npz", input0=images)
    res = cli("run", "--model", cortex_m_pte, "--inputs", tmp_path / "in.npz", "--out", tmp_path / "out.npz",
              "--device", "mcu", "--etdump", tmp_path / "run.etdp", "--json")
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    assert summary["etdump"] == str(tmp_path / "run.etdp")
    _, batch = per_image_profiles
    inspector = open_inspector(tmp_path / "run.etdp")
    expected = [(kernel_event_name(layer["op"]), [layer["instructions"]], i) for i, layer in enumerate(batch.layers)]
    assert rows(inspector)[:-1] == expected
    assert rows(inspector)[-1] == (RUN_EVENT, [round(float(np.mean(summary["instructions_per_inference"])))], -1)


@pytest.mark.parametrize("extra, message", [
    (("--device", "executorch"), "--etdump needs --device mcu"),
    (("--device", "mcu", "--port", "socket://127.0.0.1:1"), "--etdump needs --device mcu"),
], ids=["executorch", "serial-port"])
def test_run_etdump_without_the_board_is_one_line(cli, exported, tmp_path, extra, message):
    np.savez(tmp_path / "in.npz", input0=np.zeros((1, 1, 28, 28), np.float32))
    res = cli("run", "--model", exported("cortex-m55"), "--inputs", tmp_path / "in.npz", "--out", tmp_path / "out.npz",
              "--etdump", tmp_path / "p.etdp", *extra)
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert message in res.stderr
    assert not (tmp_path / "p.etdp").exists() and not (tmp_path / "out.npz").exists()


# ── the native build: host nanoseconds ────────────────────────────────────────────────────────

def native_rows_are_the_programs_calls(inspector, pte, values: int) -> list:
    """The rows of a native profile: the program's kernel calls in order, then Method::execute, each
    with `values` counts (host nanoseconds: > 0, not fixed); returns the rows."""
    got = rows(inspector)
    calls = program_kernel_calls(pte)
    assert [(name, ids) for name, _, ids in got] == [
        *[(kernel_event_name(op, overload), n) for _, n, op, overload in calls], (RUN_EVENT, -1)]
    for name, raw, _ in got:
        assert len(raw) == values and all(v >= 0 for v in raw), (name, raw)
    # a whole inference (the runtime's work between the calls included) is no shorter than its calls
    for r in range(values):
        assert got[-1][1][r] >= sum(raw[r] for _, raw, _ in got[:-1])
    # the convolutions take time on any host
    assert all(raw[0] > 0 for name, raw, _ in got if "conv2d" in name)
    return got


def test_the_native_device_profiles_with_the_hosts_clock(exported):
    from tinyrps.devices import open_device
    pte = exported("cortex-m55")
    with open_device("native", pte) as device:
        result = device.run_batch([np.zeros((4, 1, 1, 28, 28), np.float32)])
    assert result.counter == "nanoseconds"
    assert [layer["op"] for layer in result.layers] == [op for _, _, op, _ in program_kernel_calls(pte)]
    assert all(layer["kernels"] in ("c", "dsp", "mve") for layer in result.layers)
    assert result.profile_totals.shape == (4,)
    # each layer's figure is its mean over the batch and each total encloses its own calls, so the mean
    # total is no smaller than the layers' sum (give or take one nanosecond of rounding per layer); a
    # bound on the fastest total would be a timing test, which a busy host breaks
    layers = sum(layer["nanoseconds"] for layer in result.layers)
    assert float(result.profile_totals.mean()) >= layers - len(result.layers)


def test_a_damaged_native_profile_is_one_line():
    from tinyrps.devices.native import read_profile
    with pytest.raises(UserError, match="tinyrps-native wrote a profile of 3 bytes .* rebuild it"):
        read_profile(b"abc", 1, 10)


def test_run_on_native_writes_host_nanoseconds(cli, exported, tmp_path):
    pte = exported("cortex-m55")
    np.savez(tmp_path / "in.npz", input0=np.zeros((3, 1, 1, 28, 28), np.float32))
    res = cli("run", "--model", pte, "--inputs", tmp_path / "in.npz", "--out", tmp_path / "out.npz",
              "--device", "native", "--etdump", tmp_path / "run.etdp")
    assert res.returncode == 0, res.stderr
    assert "run.etdp" in res.stderr and "nanoseconds" in res.stderr      # says what the times are
    native_rows_are_the_programs_calls(open_inspector(tmp_path / "run.etdp"), pte, 1)   # one run: the mean


def test_bench_on_native_writes_every_timed_run(cli, exported, measured, tmp_path):
    pte = exported("cortex-m55")
    measured(pte)               # the measure stage's figures bench shows beside the latency
    res = cli("bench", "--model", pte, "--device", "native", "--runs", "4", "--etdump", tmp_path / "b.etdp",
              "--json")
    assert res.returncode == 0, res.stderr
    assert "profile" not in json.loads(res.stdout)
    assert "nanoseconds" in res.stderr
    native_rows_are_the_programs_calls(open_inspector(tmp_path / "b.etdp"), pte, 4)


@pytest.mark.slow
def test_eval_on_native_writes_one_run_per_batch(cli, trained_run, exported, tmp_path):
    pte = exported("cortex-m55")
    res = cli("eval", "--run", trained_run, "--program", "cortex-m55", "--device", "native", "--limit", "60",
              "--etdump", tmp_path / "eval.etdp", "--json")
    assert res.returncode == 0, res.stderr
    result = json.loads(res.stdout)
    assert result["test_images"] == 60
    # the evaluation classifies 50 images at a time: two batches (50 and 10), each one run of the file
    assert result["etdump"] == {"path": str(tmp_path / "eval.etdp"), "program": "cortex-m55",
                                "counter": "nanoseconds", "runs": 2, "images": 60}
    assert result["programs"]["cortex-m55"]["bit_exact"] is True
    native_rows_are_the_programs_calls(open_inspector(tmp_path / "eval.etdp"), pte, 2)


@pytest.mark.parametrize("extra, message", [
    (("--program", "cortex-m55", "--program", "int8-xnnpack"), "--etdump profiles one program and 2 are selected"),
    (("--program", "int8-xnnpack",), "--etdump needs a Cortex-M program on --device mcu or native"),
    (("--program", "cortex-m55", "--device", "executorch"), "not cortex-m55 on executorch"),
    (("--program", "cortex-m55", "--port", "socket://127.0.0.1:1"), "a board on a serial port sends no"),
], ids=["two-programs", "not-cortex-m", "executorch", "serial-port"])
def test_eval_etdump_refusals_are_one_line(cli, trained_run, exported, tmp_path, extra, message):
    exported("cortex-m55"), exported("int8-xnnpack")
    res = cli("eval", "--run", trained_run, "--limit", "5", "--etdump", tmp_path / "p.etdp", *extra)
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert message in res.stderr
    assert not (tmp_path / "p.etdp").exists()


def test_an_etdump_folder_is_refused_before_the_work(cli, trained_run, exported, tmp_path):
    pte = exported("cortex-m55")
    for command in (("eval", "--run", trained_run, "--program", "cortex-m55", "--device", "native"),
                    ("bench", "--model", pte, "--device", "native")):
        res = cli(*command, "--etdump", tmp_path)
        assert res.returncode == 2 and "is a folder" in res.stderr and len(res.stderr.strip().splitlines()) == 1


@pytest.mark.slow     # boots QEMU
def test_eval_on_the_board_writes_its_instructions(cli, trained_run, cortex_m_pte, tmp_path):
    """eval --etdump on the emulated board: the batch transport even for a few images (the serial link
    sends no profile), each run the batch's mean instructions per kernel call."""
    res = cli("eval", "--run", trained_run, "--program", "cortex-m55", "--device", "mcu", "--limit", "5",
              "--etdump", tmp_path / "eval.etdp", "--json")
    assert res.returncode == 0, res.stderr
    result = json.loads(res.stdout)
    assert result["etdump"]["counter"] == "instructions" and result["etdump"]["runs"] == 1
    assert "instructions under QEMU, not cycles" in res.stderr
    got = rows(open_inspector(tmp_path / "eval.etdp"))
    assert [ids for _, _, ids in got] == [n for _, n, _, _ in program_kernel_calls(cortex_m_pte)] + [-1]
    assert got[-1][1][0] >= sum(raw[0] for _, raw, _ in got[:-1]) > 0
