"""Running programs on the command line: eval (accuracy), classify (pictures), bench (latency) and run
(any program's tensors)."""
from __future__ import annotations

import sys
from pathlib import Path

from ...infra.errors import UserError, require_file
from .options import (Command, add_board, add_device, add_program, check_data, check_model, check_out_file,
                      check_run, check_written_apart, chosen_device, count, device_options, emit_json)


def eval_arguments(s) -> None:
    from ...network.labels import EVAL_SPLITS
    s.add_argument("--run", required=True, type=Path, metavar="RUN", help="a run folder made by `tinyrps train`")
    s.add_argument("--data", type=Path, metavar="DIR", help="data folder (default: the one the run was trained on)")
    s.add_argument("--split", choices=EVAL_SPLITS, default="test", help="the held-out split to read: test, or "
                   "benchmark (larger; on eager, executorch, npu-ref and native, not on the emulated boards)")
    add_program(s)
    add_device(s, "every program")
    add_board(s)
    s.add_argument("--limit", type=count, metavar="N", help="only the first N images of the split (default: all)")
    s.add_argument("--etdump", type=Path, metavar="PATH", help="with one Cortex-M --program on --device mcu or "
                   "native: write its per-layer profile as an ExecuTorch ETDump file, one run per batch the device "
                   "ran (instructions on the emulated board, not cycles; host nanoseconds on native) (default: none)")
    s.add_argument("--json", action="store_true", help="JSON on stdout instead of a table")


def cmd_eval(a):
    check_run(a.run)
    if a.data is not None:
        check_data(a.data, "test")
    options = device_options(a)
    if a.etdump is not None:
        from ...hardware.etdump import check_path
        check_path(a.etdump)
    from ...evaluate import evaluate
    result = evaluate(a.run, a.data, only=a.program, device_override=a.device, limit=a.limit,
                      quiet=a.quiet or a.json, board=a.board, device_options=options, etdump=a.etdump, split=a.split)
    if a.json:
        emit_json(result)
    else:
        from ..report.accuracy import eval_table
        eval_table(result)
    if "etdump" in result:
        from ...hardware.etdump import written_message
        print(written_message(result["etdump"]["path"], result["etdump"]["counter"]), file=sys.stderr)


def classify_arguments(s) -> None:
    s.add_argument("--model", required=True, type=Path, metavar="X.pte",
                   help="a program made by `tinyrps export` (or a checkpoint model.pt, for --device eager)")
    add_device(s, "the program")
    add_board(s)
    s.add_argument("images", nargs="+", type=Path, metavar="IMAGE_OR_FOLDER",
                   help="PNG, JPEG, WebP, TIFF, GIF or BMP files, or folders of them")
    s.add_argument("--show", action="store_true", help="print the 28x28 image the model saw, as ASCII art")
    s.add_argument("--json", action="store_true", help="one JSON object: model, device and a result per picture")


def cmd_classify(a):
    check_model(a.model)
    from ..classify import classify_files
    device_name = chosen_device(a)
    report = classify_files(a.model, a.images, device_name, board=a.board,
                            options=device_options(a, device_name).get(device_name, {}))
    errors = [r["error"] for r in report["results"] if "error" in r]
    for message in errors:
        print(f"tinyrps: error: {message}", file=sys.stderr)
    if a.json:
        emit_json(classify_json(report, a.show))
    else:
        print_classification(report, a.show)
    return 2 if errors else 0


def classify_json(report: dict, show: bool) -> dict:
    """The report as JSON: the image the model saw only with --show (as ASCII art lines)."""
    from ..ascii_art import image_to_ascii
    results = []
    for r in report["results"]:
        entry = {k: v for k, v in r.items() if k != "image"}
        if show and "image" in r:
            entry["seen"] = image_to_ascii(r["image"])
        results.append(entry)
    return {**report, "results": results}


def print_classification(report: dict, show: bool) -> None:
    from ..ascii_art import image_to_ascii
    for r in report["results"]:
        if "error" in r:
            continue
        probs = "  ".join(f"{k} {v:6.1%}" for k, v in r["probabilities"].items())
        verdict = f"{r['label']} ({r['confidence']:.1%})" if r["label"] else "no letter found"
        print(f"{r['path']}: {verdict}   {probs}")
        if show:
            print("\n".join("    " + line for line in image_to_ascii(r["image"])))


def bench_arguments(s) -> None:
    s.add_argument("--run", type=Path, metavar="RUN", help="a run folder made by `tinyrps train` "
                   "(required, except with --model)")
    s.add_argument("--model", type=Path, metavar="X.pte", help="instead of --run: one program of any kind "
                   "(default: none)")
    s.add_argument("--etdump", type=Path, metavar="PATH", help="with --model: write the per-layer profile as an "
                   "ExecuTorch ETDump file: the emulated board's instructions per kernel call (not cycles), or on "
                   "--device native each timed run's host nanoseconds (default: none)")
    s.add_argument("--runs", type=count, default=200, metavar="N", help="timed single-image calls per program "
                   "(at least; the mcu takes at most 20, npu-ref at most 50)")
    s.add_argument("--target", metavar="CORE", help="with --model: the core of a Cortex-M program that has no "
                   "descriptor (one ExecuTorch's own flow wrote), e.g. cortex-m55 (default: none)")
    add_program(s)
    add_device(s, "every program")
    add_board(s)
    s.add_argument("--json", action="store_true", help="JSON on stdout instead of tables")


def cmd_bench(a):
    if bool(a.run) == bool(a.model):
        raise UserError("bench needs --run RUN (every program of a run, side by side) or --model X.pte (one program)")
    if a.etdump is not None and not a.model:
        raise UserError("--etdump is for --model X.pte (one Cortex-M program's per-layer profile)")
    options = device_options(a)
    if a.model:
        check_model(a.model)
        if a.program:
            raise UserError("--program is for --run; --model names the one program")
        if a.etdump is not None:
            from ...hardware.etdump import check_path
            check_path(a.etdump)
            check_written_apart({"--model": a.model}, {"--etdump": a.etdump})
        from ...bench import bench_program
        result = bench_program(a.model, runs=a.runs, device_name=a.device, quiet=a.quiet or a.json, board=a.board,
                               options=options.get(a.device or "mcu", {}), profile=a.etdump is not None,
                               core=a.target)
        profile = result.pop("profile", None)
        if a.etdump is not None:
            write_profile(a.model, result, a.etdump, profile)
    else:
        check_run(a.run)
        if a.target:
            raise UserError("--target is for --model X.pte (the core of a program without a descriptor); "
                            "--program picks the programs of a run")
        from ...bench import bench
        result = bench(a.run, runs=a.runs, only=a.program, device_override=a.device, quiet=a.quiet or a.json,
                       board=a.board, device_options=options)
    if a.json:
        emit_json(result)
    else:
        from ..report.speed import bench_table
        bench_table(result)
        for name, entry in result["programs"].items():
            if "note" in entry:
                print(f"{name}: {entry['note']}")


def write_profile(model, result: dict, path, profile=None) -> None:
    """--etdump: the per-layer profile as an ETDump file for ExecuTorch's Inspector: the timed runs'
    own where the device took them (the native build: host nanoseconds, one run of the file per timed
    call), else the measure stage's (the emulated board's instructions per kernel call)."""
    from ...hardware.etdump import write_etdump, written_message
    if profile is not None:
        write_etdump(path, profile["runs"], program=model, counter=profile["counter"], totals=profile["totals"])
        print(written_message(path, profile["counter"]), file=sys.stderr)
        return
    (entry,) = result["programs"].values()
    firmware = entry.get("firmware")
    if not firmware or not firmware.get("layers"):
        raise UserError(f"{Path(model).name} has no per-layer profile (only Cortex-M programs are profiled: on "
                        "their emulated board, or on --device native): --etdump needs one")
    write_etdump(path, firmware["layers"], program=model)
    print(written_message(path, "instructions"), file=sys.stderr)


def require_profiling_device(device_name: str, port) -> None:
    """--etdump: a device that takes a per-layer profile (the emulated board, the native build)."""
    from ...devices import device_row
    if not device_row(device_name).profiles or port:
        raise UserError("--etdump needs --device mcu on an emulated board (instructions per kernel call, not "
                        "cycles) or --device native (host nanoseconds); a serial port or another device "
                        "sends no profile")


def run_arguments(s) -> None:
    s.add_argument("--model", required=True, type=Path, metavar="X.pte", help="a program made by `tinyrps export`")
    s.add_argument("--inputs", required=True, type=Path, metavar="IN.npz",
                   help="one array per input: input0, input1, ... (one sample, or N samples [N, *shape])")
    s.add_argument("--out", required=True, type=Path, metavar="OUT.npz",
                   help="the outputs: output0, ..., their raw int8 values (output0_int8) and instructions where the "
                   "device reports them")
    add_device(s, "the program")
    add_board(s)
    s.add_argument("--etdump", type=Path, metavar="PATH", help="with --device mcu or native: write the run's "
                   "per-layer profile (the mean over the samples per kernel call: instructions on the emulated "
                   "board, not cycles; host nanoseconds on native) as an ExecuTorch ETDump file (default: none)")
    s.add_argument("--json", action="store_true", help="a JSON summary on stdout instead of a line")


def cmd_run(a):
    check_model(a.model)
    require_file(a.inputs, "inputs file", "save the inputs with numpy.savez(path, input0=...)")
    check_out_file(a.out)
    check_written_apart({"--model": a.model, "--inputs": a.inputs}, {"--out": a.out, "--etdump": a.etdump})
    from ...devices import require_board_device
    device_name = chosen_device(a)
    require_board_device(device_name, a.board)
    options = device_options(a, device_name).get(device_name, {})
    if a.etdump is not None:
        require_profiling_device(device_name, a.port)
        from ...hardware.etdump import check_path
        check_path(a.etdump)
        if device_name == "mcu":
            options = {**options, "transport": "batch"}      # the batch file carries the per-layer profile
    from ..run_program import run_file
    summary = run_file(a.model, a.inputs, a.out, device_name, board=a.board, options=options, etdump=a.etdump)
    if a.json:
        emit_json(summary)
    else:
        shapes = ", ".join(f"{name} {o['dtype']} {o['shape']}" for name, o in summary["outputs"].items())
        print(f"{summary['samples']} sample(s) of {Path(a.model).name} on {summary['runs_on']}: {shapes} -> {a.out}")
    if "etdump" in summary:
        from ...hardware.etdump import written_message
        print(written_message(summary["etdump"], summary["etdump_counter"]), file=sys.stderr)


COMMANDS = (
    Command("eval", "accuracy of eager and every exported program on the test split, with the count behind it "
            "and its 95 percent (Wilson) interval", eval_arguments, cmd_eval),
    Command("classify", "read letters in pictures (files, or every picture in a folder) with a program",
            classify_arguments, cmd_classify),
    Command("bench", "median latency of one inference per program, side by side; or one program's latency and "
            "per-layer instructions", bench_arguments, cmd_bench),
    Command("run", "any program's raw outputs for inputs from a .npz file (native, mcu or executorch)", run_arguments,
            cmd_run),
)
