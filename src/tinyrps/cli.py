"""Command line: one subcommand per pipeline stage. Thin: parse, check, call the stage, print.

Every number and every path named on the command line is checked before any work
starts. A user error (tinyrps.errors.UserError, a bad argument, a file or disk
problem the user can fix) prints one line on stderr and exits with code 2; any other
failure is a bug and prints its traceback (TINYRPS_DEBUG=1 shows the traceback of
every error). stdout carries only results (tables, or JSON with --json).

Heavy modules (torch, ExecuTorch, matplotlib) are imported inside the commands that
need them, so `tinyrps --help` and a mistyped option answer at once.
"""
from __future__ import annotations

import argparse
import errno
import json
import os
import sys
import traceback
from pathlib import Path

from . import ctrl_c
from .errors import UserError, require_file
from .library_noise import quiet_libraries

# Seeds go to numpy's SeedSequence and torch.manual_seed; this range suits both.
MAX_SEED = 2**32 - 1
DEBUG_ENV = "TINYRPS_DEBUG"
EXIT_USER_ERROR = 2
EXIT_BUG = 1
EXIT_INTERRUPTED = 130      # 128 + SIGINT: what a shell reports for a command stopped by Ctrl-C

EXPORT_HINT = "create one with `tinyrps export --run RUN --target T`"


# ── argument types: numbers are checked while parsing, before any work ──────
def whole_number(minimum: int, maximum: int = None):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got '{text}'") from None
        if value < minimum or (maximum is not None and value > maximum):
            upper = f" and at most {maximum}" if maximum is not None else ""
            raise argparse.ArgumentTypeError(f"must be at least {minimum}{upper}, got {value}")
        return value
    parse.__name__ = "whole number"
    return parse


seed_number = whole_number(0, MAX_SEED)
count = whole_number(1)


def positive_number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got '{text}'") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


positive_number.__name__ = "number"


def fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got '{text}'") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


fraction.__name__ = "number"


def architecture(text: str) -> str:
    """--arch: a name or a spec, parsed here so that a bad one is refused before any stage starts."""
    from .arch import parse_arch
    try:
        parse_arch(text)
    except UserError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


architecture.__name__ = "architecture"


class Parser(argparse.ArgumentParser):
    def error(self, message):
        print(f"{self.prog}: error: {message} (see `{self.prog} --help`)", file=sys.stderr)
        raise SystemExit(EXIT_USER_ERROR)


class HelpWithDefaults(argparse.HelpFormatter):
    """Adds '(default: X)' to an option's help where the default is a value; options whose
    default is decided at run time say it in their own help text."""

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if ("default" not in text and action.option_strings and action.nargs != 0
                and default not in (None, argparse.SUPPRESS)):
            text += " (default: %(default)s)"
        return text


def emit_json(obj) -> None:
    print(json.dumps(obj, indent=2))


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as package_version
    try:
        return package_version("tinyrps")
    except PackageNotFoundError:   # run from a source tree that was never installed
        return "unknown (not installed)"


class VersionAction(argparse.Action):
    """--version: looked up only when asked for (the package metadata costs a few ms)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"tinyrps {version()}")
        parser.exit()


# ── checks of paths given on the command line (cheap: before importing the stages) ──
def check_model(path) -> Path:
    return require_file(path, "model file", EXPORT_HINT)


def check_run(run) -> Path:
    from .artifacts import recover_for_reading
    run = Path(run)
    recover_for_reading(run)     # a run an interrupted `tinyrps train` left beside its name is put back
    require_file(run / "model.pt", "checkpoint", f"create it with `tinyrps train --data DATA --out {run}`")
    return run


def check_data(data, split: str) -> Path:
    """A data folder holding the split a command reads (put back first if an interrupted
    `tinyrps data` left it beside its name)."""
    from .artifacts import read_manifest, recover_for_reading
    data = Path(data)
    recover_for_reading(data)
    if data.is_file():
        raise UserError(f"--data {data} is a file: give the folder made by `tinyrps data --out DIR`")
    if data.is_dir():
        read_manifest(data, "data")        # a run folder given as data is named as such
    if not (data / f"{split}.npz").is_file():
        raise UserError(f"no {split} split in {data}: create the data set with `tinyrps data --out {data}`")
    return data


def check_out_folder(out) -> Path:
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file: give a folder (it is created if missing)")
    return out


def device_options(a, device_name: str = None) -> dict:
    """Options per device name from the command line: --port goes to the mcu device."""
    if not getattr(a, "port", None):
        return {}
    if (device_name or a.device or "mcu") != "mcu":
        raise UserError(f"--port is for --device mcu (a board running the tinyrps firmware), "
                        f"not --device {device_name or a.device}")
    return {"mcu": {"port": a.port}}


# ── stages ──────────────────────────────────────────────────────────────────
def cmd_data(a):
    from .data import make_data
    make_data(check_out_folder(a.out), seed=a.seed, per_class=a.per_class, quiet=a.quiet)


def cmd_train(a):
    data = check_data(a.data, "train")
    check_out_folder(a.out)
    from .train import TrainConfig, train
    train(TrainConfig(data=str(data.resolve()), epochs=a.epochs, seed=a.seed, arch=a.arch, teacher=a.teacher,
                      distill_alpha=a.distill_alpha, distill_temperature=a.distill_temperature),
          a.out, quiet=a.quiet)


def cmd_export(a):
    from .families import get_target, targets
    if a.list:
        from .report import targets_table
        targets_table(targets())
        return
    if not a.target or not (a.run or a.module) or (a.run and a.module):
        raise UserError("export needs --target T and either --run RUN or --module FILE.py:NAME "
                        "(see `tinyrps export --list` for targets)")
    options = {"system_config": a.system_config, "memory_mode": a.memory_mode}
    from .export import check_options
    check_options(get_target(a.target), options)     # before a stage loads torch
    if a.module:
        pte = export_user_module(a, options)
    else:
        check_run(a.run)
        for flag in ("input_shape", "input_dtype", "calibration", "out", "name"):
            if getattr(a, flag):
                raise UserError(f"--{flag.replace('_', '-')} is for --module; a run's program takes its shape, "
                                "calibration and place from the run")
        from .export import export_target
        from .progress import console
        with console.status(f"exporting {a.target}"):
            pte = export_target(a.run, a.target, **options)
    print(pte)


def export_user_module(a, options: dict) -> Path:
    """`export --module FILE.py:NAME`: the user's model, checked argument by argument before torch loads."""
    from . import user_model
    path, name = user_model.parse_module_spec(a.module)
    inputs = user_model.parse_inputs(a.input_shape, a.input_dtype)
    if not a.calibration:
        raise UserError("--module needs --calibration FILE.npz (examples of the inputs) or --calibration random")
    if a.calibration != "random":
        require_file(a.calibration, "calibration file", "give a .npz of examples, or --calibration random")
    if a.name is not None and not a.name.replace("-", "_").isidentifier():
        raise UserError(f"--name {a.name} is not a file name of letters, digits, '-' and '_'")
    out = check_out_folder(a.out or Path("."))
    model = user_model.load_model(path, name)
    examples = user_model.example_inputs(inputs)
    user_model.check_model_takes(model, examples, path, name)
    calibration = (user_model.random_calibration(inputs) if a.calibration == "random"
                   else user_model.file_calibration(Path(a.calibration), inputs))
    note = (f"{len(calibration)} random examples (seed {user_model.RANDOM_SEED})" if a.calibration == "random"
            else f"{len(calibration)} examples of {Path(a.calibration).name}")
    from .descriptor import Origin
    from .export import export_model
    from .progress import console
    with console.status(f"exporting {a.target}"):
        return export_model(model, examples, calibration, a.target, out, Origin(module=f"{path.name}:{name}",
                            calibration=note), name=a.name, **options)


def cmd_measure(a):
    if bool(a.run) == bool(a.model):
        raise UserError("measure needs --run RUN (every exported program of the run) or --model X.pte")
    from . import measure
    if a.model:
        check_model(a.model)
        from .progress import console
        with console.status(f"measuring {Path(a.model).name}"):
            results = {Path(a.model).stem: measure.measure(a.model, quick=a.quick)}
    else:
        check_run(a.run)
        if a.target:
            from .programs import selected
            selected(a.run, a.target)
        results = measure.measure_run(a.run, quiet=True, only_targets=a.target)
        if not results:
            raise UserError(f"{a.run} has no exported program with something to measure (Ethos-U or Cortex-M): "
                            f"export one with `tinyrps export --run {a.run} --target cortex-m55`")
    if a.json:
        emit_json(results)
    else:
        for name, m in results.items():
            print(f"{name}: {measure.summary_line(m) or 'nothing to measure'}")


def cmd_eval(a):
    check_run(a.run)
    if a.data is not None:
        check_data(a.data, "test")
    options = device_options(a)
    if a.etdump is not None:
        from .etdump import check_path
        check_path(a.etdump)
    from .evaluate import evaluate
    result = evaluate(a.run, a.data, only=a.program, device_override=a.device, limit=a.limit,
                      quiet=a.quiet or a.json, board=a.board, device_options=options, etdump=a.etdump, split=a.split)
    if a.json:
        emit_json(result)
    else:
        from .report import eval_table
        eval_table(result)
    if "etdump" in result:
        from .etdump import written_message
        print(written_message(result["etdump"]["path"], result["etdump"]["counter"]), file=sys.stderr)


def cmd_classify(a):
    check_model(a.model)
    from .classify import classify_files
    from .devices import default_device
    device_name = a.device or ("mcu" if a.port else default_device(a.model))
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
    from .ascii_art import image_to_ascii
    results = []
    for r in report["results"]:
        entry = {k: v for k, v in r.items() if k != "image"}
        if show and "image" in r:
            entry["seen"] = image_to_ascii(r["image"])
        results.append(entry)
    return {**report, "results": results}


def print_classification(report: dict, show: bool) -> None:
    from .ascii_art import image_to_ascii
    for r in report["results"]:
        if "error" in r:
            continue
        probs = "  ".join(f"{k} {v:6.1%}" for k, v in r["probabilities"].items())
        verdict = f"{r['label']} ({r['confidence']:.1%})" if r["label"] else "no letter found"
        print(f"{r['path']}: {verdict}   {probs}")
        if show:
            print("\n".join("    " + line for line in image_to_ascii(r["image"])))


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
            from .etdump import check_path
            check_path(a.etdump)
        from .bench import bench_program
        result = bench_program(a.model, runs=a.runs, device_name=a.device, quiet=a.quiet or a.json, board=a.board,
                               options=options.get(a.device or "mcu", {}), profile=a.etdump is not None)
        profile = result.pop("profile", None)
        if a.etdump is not None:
            write_profile(a.model, result, a.etdump, profile)
    else:
        check_run(a.run)
        from .bench import bench
        result = bench(a.run, runs=a.runs, only=a.program, device_override=a.device, quiet=a.quiet or a.json,
                       board=a.board, device_options=options)
    if a.json:
        emit_json(result)
    else:
        from .report import bench_table
        bench_table(result)


def write_profile(model, result: dict, path, profile=None) -> None:
    """--etdump: the per-layer profile as an ETDump file for ExecuTorch's Inspector: the timed runs'
    own where the device took them (the native build: host nanoseconds, one run of the file per timed
    call), else the measure stage's (the emulated board's instructions per kernel call)."""
    from .etdump import write_etdump, written_message
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
    from .etdump import PROFILING_DEVICES
    if device_name not in PROFILING_DEVICES or (device_name == "mcu" and port):
        raise UserError("--etdump needs --device mcu on an emulated board (instructions per kernel call, not "
                        "cycles) or --device native (host nanoseconds); a serial port or another device "
                        "sends no profile")


def cmd_run(a):
    check_model(a.model)
    require_file(a.inputs, "inputs file", "save the inputs with numpy.savez(path, input0=...)")
    check_out_file(a.out)
    from .devices import default_device, require_board_device
    device_name = a.device or ("mcu" if a.port else default_device(a.model))
    require_board_device(device_name, a.board)
    options = device_options(a, device_name).get(device_name, {})
    if a.etdump is not None:
        require_profiling_device(device_name, a.port)
        from .etdump import check_path
        check_path(a.etdump)
        if device_name == "mcu":
            options = {**options, "transport": "batch"}      # the batch file carries the per-layer profile
    from .run_program import run_file
    summary = run_file(a.model, a.inputs, a.out, device_name, board=a.board, options=options, etdump=a.etdump)
    if a.json:
        emit_json(summary)
    else:
        shapes = ", ".join(f"{name} {o['dtype']} {o['shape']}" for name, o in summary["outputs"].items())
        print(f"{summary['samples']} sample(s) of {Path(a.model).name} on {summary['runs_on']}: {shapes} -> {a.out}")
    if "etdump" in summary:
        from .etdump import written_message
        print(written_message(summary["etdump"], summary["etdump_counter"]), file=sys.stderr)


def check_out_file(out) -> Path:
    out = Path(out)
    if out.is_dir():
        raise UserError(f"--out {out} is a folder: give a file name, e.g. {out / 'outputs.npz'}")
    return out


def cmd_play(a):
    check_model(a.model)
    from .game import parse_moves
    moves = parse_moves(a.moves) if a.moves is not None else None
    from .devices import default_device, open_device, require_board_device
    device_name = a.device or ("mcu" if a.port else default_device(a.model))
    require_board_device(device_name, a.board)
    options = device_options(a, device_name).get(device_name, {})
    from .game import Game, play_interactive, play_scripted
    # stdout carries only the rounds (JSON Lines with --json); prompts, messages and the score go to stderr
    with open_device(device_name, a.model, board=a.board, **options) as device:
        game = Game(device, seed=a.seed, opponent=a.opponent)
        if moves:
            play_scripted(game, moves, a.json, talk=sys.stderr, keep=False)
        else:
            play_interactive(game, a.json, talk=sys.stderr)


def cmd_serve(a):
    if not a.run and not a.model:
        raise UserError("serve needs --run RUN (every program of the run) or --model X.pte; both repeatable")
    runs = [check_run(run) for run in a.run or ()]
    models = [check_model(model) for model in a.model or ()]
    if a.device == "eager":
        raise UserError("--device eager runs a checkpoint; serve runs exported programs: choose another device")
    from .serve import serve
    serve(runs, models, device=a.device, board=a.board, port=a.port, host=a.host, http_port=a.http_port,
          open_browser=a.open)


def cmd_all(a):
    check_out_folder(a.out)
    from .pipeline import run_all
    run_all(a.out, seed=a.seed, epochs=a.epochs, per_class=a.per_class, quiet=a.quiet, arch=a.arch)


def cmd_npu_sweep(a):
    check_run(a.run)
    from .families import ACCELERATORS
    unknown = [x for x in a.accelerator or () if x not in ACCELERATORS]
    if unknown:
        raise UserError(f"unknown accelerator {', '.join(unknown)}; valid: {', '.join(ACCELERATORS)}")
    from .npu_sweep import sweep, write_outputs
    result = sweep(a.run, quiet=a.quiet or a.json, accelerators=a.accelerator)
    written = write_outputs(result, a.run)
    if a.json:
        emit_json(result)
    else:
        from .report import npu_sweep_table
        npu_sweep_table(result, written)


def cmd_tune(a):
    check_data(a.data, "train")
    check_out_folder(a.out)
    from .families import get_target
    if get_target(a.target).family != "ethos-u":
        raise UserError(f"--target {a.target} is not an Ethos-U target: the tuner measures NPU latency "
                        "(e.g. --target ethos-u85-128)")
    from .tune import TuneSettings, tune
    settings = TuneSettings(data=a.data, out=a.out, target=a.target, minutes=a.minutes, max_npu_ms=a.max_npu_ms,
                            max_program_bytes=a.max_program_bytes, storage=a.storage,
                            candidate_epochs=a.candidate_epochs, epochs=a.epochs, seed=a.seed, trials=a.trials,
                            retrain=not a.no_retrain, pick_seeds=a.pick_seeds, pick_accuracy=a.pick_accuracy,
                            finalists=a.finalists,
                            teacher=a.teacher,
                            distill_alpha=a.distill_alpha, distill_temperature=a.distill_temperature)
    result = tune(settings, quiet=a.quiet or a.json)
    if a.json:
        emit_json(result)
    else:
        from .report import tune_table
        tune_table(result, a.out)


def cmd_deploy_fvp(a):
    check_model(a.model)
    from .deploy.fvp import deploy_fvp
    result = deploy_fvp(a.model, a.executorch_root, fvp=a.fvp, toolchain=a.toolchain, workdir=a.workdir,
                        images=a.image, timeout_s=a.timeout)
    emit_json(result)


def cmd_deploy_library(a):
    check_model(a.model)
    from .deploy.library import check_name, check_out, summary_lines, write_library
    check_name(a.name)
    check_out(a.out)
    manifest = write_library(a.model, a.out, a.name)
    print("\n".join(summary_lines(manifest, a.out)))


# ── parser ──────────────────────────────────────────────────────────────────
def arch_help() -> str:
    from .arch import ARCHITECTURES, count_macs, count_params
    named = "; ".join(f"{name} = {spec} ({count_macs(spec) / 1e6:.2f} M MACs, {count_params(spec):,} parameters)"
                      for name, spec in ARCHITECTURES.items())
    return ("network architecture: a name or a spec of layers joined by '-' (cN conv 3x3 to N channels, "
            f"cNs2 the same with stride 2, p 2x2 max-pool, p3 3x3 max-pool with stride 2, fN fully connected); "
            f"{named} (default: tinyrps)")


def per_class_help() -> str:
    from .labels import DEFAULT_PER_CLASS as d
    return (f"training images per class; val, test and benchmark scale with it "
            f"(default: {d['train']}, with {d['val']} val, {d['test']} test and {d['benchmark']} benchmark)")


# An option renamed after 0.1.0: its old spelling stays, hidden, for one release.
OLD_PROGRAM_OPTION = "--variant T (tinyrps 0.1.0) is an old spelling of --program T, kept for one release."


def add_teacher_options(s, tune: bool = False) -> None:
    from .arch import DISTILL_ALPHA, DISTILL_TEMPERATURE
    s.add_argument("--teacher", type=Path, metavar="RUN",
                   help=("retrain the pick (and train the candidates) " if tune else "train ")
                   + "by knowledge distillation from RUN, a run of any architecture trained on the same data "
                   "(default: none, plain cross-entropy)")
    s.add_argument("--distill-alpha", type=fraction, metavar="A", help="with --teacher: weight of the teacher's "
                   f"soft targets in the loss, 0 to 1 (default: {DISTILL_ALPHA:g})")
    s.add_argument("--distill-temperature", type=positive_number, metavar="T", help="with --teacher: the "
                   f"softmax temperature of the soft targets (default: {DISTILL_TEMPERATURE:g})")


def build_parser() -> argparse.ArgumentParser:
    from .arch import CANDIDATE_EPOCHS, FINALISTS, PICK_ACCURACY, SELECT_ACCURACY, TUNED_EPOCHS, epochs_help
    from .devices import device_names
    from .firmware.boards import BOARDS
    from .labels import EVAL_SPLITS
    from .opponents import OPPONENTS
    p = Parser(prog="tinyrps", formatter_class=HelpWithDefaults,
               description="A tiny rock-paper-scissors classifier, from PyTorch to Arm microcontrollers.",
               epilog=f"Errors: one line on stderr and exit code {EXIT_USER_ERROR} for a user error; "
                      f"{DEBUG_ENV}=1 shows the traceback of any error.")
    p.add_argument("--version", action=VersionAction, help="print the version and exit")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser, metavar="COMMAND")

    def add(name, func, help_):
        s = sub.add_parser(name, help=help_, description=help_, formatter_class=HelpWithDefaults)
        s.set_defaults(func=func)
        s.add_argument("--quiet", action="store_true", help="no progress bars")
        return s

    def add_device(s, what: str):
        s.add_argument("--device", choices=device_names(), help=f"run {what} on this device "
                       "(default: the device of the program's family: host, npu or mcu)")
        s.add_argument("--port", metavar="DEV", help="for the mcu device: a board running the tinyrps firmware on "
                       "this serial port, e.g. /dev/ttyACM0 (default: the firmware in QEMU)")

    def add_program(s):
        s.add_argument("--program", action="append", metavar="T",
                       help="only this exported program; repeatable (default: every exported program)")
        # 0.1.0's spelling, hidden; the epilog says so, for one release
        s.add_argument("--variant", action="append", dest="program", help=argparse.SUPPRESS)
        s.epilog = OLD_PROGRAM_OPTION

    def add_board(s):
        s.add_argument("--board", choices=list(BOARDS),
                       help="--device mcu: the emulated board (default: the program's, from its descriptor)")

    s = add("data", cmd_data, "render the synthetic train/val/test/benchmark splits")
    s.add_argument("--out", required=True, type=Path, metavar="DIR", help="folder to write (created if missing)")
    s.add_argument("--seed", type=seed_number, default=0, metavar="S",
                   help="random seed; the same seed gives the same images")
    s.add_argument("--per-class", type=count, metavar="N", help=per_class_help())

    s = add("train", cmd_train, "train the CNN; writes RUN/model.pt and RUN/metrics.json")
    s.add_argument("--data", required=True, type=Path, metavar="DIR", help="a folder made by `tinyrps data`")
    s.add_argument("--out", required=True, type=Path, metavar="RUN", help="run folder to write")
    s.add_argument("--epochs", type=count, metavar="E", help=epochs_help())
    s.add_argument("--seed", type=seed_number, default=0, metavar="S",
                   help="random seed of initialisation and shuffling")
    s.add_argument("--arch", default="tinyrps", type=architecture, metavar="ARCH", help=arch_help())
    add_teacher_options(s)

    s = add("export", cmd_export, "export RUN/model.pt, or your own PyTorch model, to an ExecuTorch program "
            "(RUN/export/T.pte and its descriptor T.json); ahead of time only: no firmware, no emulator")
    s.add_argument("--run", type=Path, metavar="RUN", help="a run folder made by `tinyrps train` "
                   "(required, except with --module or --list)")
    s.add_argument("--target", metavar="T", help="what to build, see --list (required, except with --list)")
    s.add_argument("--list", action="store_true", help="list the targets and exit")
    s.add_argument("--module", metavar="FILE.py:NAME", help="instead of --run: your own model, NAME an nn.Module "
                   "class, instance or factory in FILE.py (default: none, export --run's checkpoint)")
    s.add_argument("--input-shape", action="append", metavar="SHAPE", help="--module: the shape of an input, "
                   "e.g. 1,3,32,32; once per input (required with --module)")
    s.add_argument("--input-dtype", action="append", metavar="D", help="--module: the dtype of an input "
                   "(float32, int8, uint8, int32); once per input, or once for all (default: float32)")
    s.add_argument("--calibration", metavar="FILE.npz|random", help="--module: examples that calibrate the int8 "
                   "quantization (arrays input0, input1, ... of N examples), or `random` (32 seeded examples; required with "
                   "--module)")
    s.add_argument("--out", type=Path, metavar="DIR", help="--module: folder to write NAME.pte and NAME.json "
                   "(default: the current folder)")
    s.add_argument("--name", metavar="NAME", help="--module: the program's file name (default: the target's)")
    s.add_argument("--system-config", metavar="C", help="Ethos-U: Vela system configuration "
                   "(default: Arm's for the accelerator, e.g. Ethos_U85_SYS_DRAM_Mid)")
    s.add_argument("--memory-mode", metavar="M", help="Ethos-U: Vela memory mode "
                   "(default: Arm's for the accelerator, e.g. Dedicated_Sram)")

    s = add("measure", cmd_measure, "measure exported programs: a Cortex-M program on the firmware of its "
            "emulated board (flash, RAM, arena, instructions per inference and per layer), an Ethos-U "
            "program's Vela estimate; writes T.measure.json beside each")
    s.add_argument("--run", type=Path, metavar="RUN", help="every exported program of this run "
                   "(required, except with --model)")
    s.add_argument("--model", type=Path, metavar="X.pte", help="instead of --run: one program (default: none)")
    s.add_argument("--target", action="append", metavar="T", help="with --run: only this program; repeatable "
                   "(default: every program of the run)")
    s.add_argument("--quick", action="store_true", help="--model: only the instruction count (one emulator run)")
    s.add_argument("--json", action="store_true", help="JSON on stdout instead of lines")

    s = add("eval", cmd_eval, "accuracy of eager and every exported program on the test split, with the count "
            "behind it and its 95 percent (Wilson) interval")
    s.add_argument("--run", required=True, type=Path, metavar="RUN", help="a run folder made by `tinyrps train`")
    s.add_argument("--data", type=Path, metavar="DIR", help="data folder (default: the one the run was trained on)")
    s.add_argument("--split", choices=EVAL_SPLITS, default="test", help="the held-out split to read: test, or "
                   "benchmark (larger; on eager, host, npu-ref and native, not on the emulated boards)")
    add_program(s)
    add_device(s, "every program")
    add_board(s)
    s.add_argument("--limit", type=count, metavar="N", help="only the first N images of the split (default: all)")
    s.add_argument("--etdump", type=Path, metavar="PATH", help="with one Cortex-M --program on --device mcu or "
                   "native: write its per-layer profile as an ExecuTorch ETDump file, one run per batch the device "
                   "ran (instructions on the emulated board, not cycles; host nanoseconds on native) (default: none)")
    s.add_argument("--json", action="store_true", help="JSON on stdout instead of a table")

    s = add("classify", cmd_classify, "read letters in pictures (files, or every picture in a folder) with a program")
    s.add_argument("--model", required=True, type=Path, metavar="X.pte",
                   help="a program made by `tinyrps export` (or a checkpoint model.pt, for --device eager)")
    add_device(s, "the program")
    add_board(s)
    s.add_argument("images", nargs="+", type=Path, metavar="IMAGE_OR_FOLDER",
                   help="PNG, JPEG, WebP, TIFF, GIF or BMP files, or folders of them")
    s.add_argument("--show", action="store_true", help="print the 28x28 image the model saw, as ASCII art")
    s.add_argument("--json", action="store_true", help="one JSON object: model, device and a result per picture")

    s = add("bench", cmd_bench, "median latency of one inference per program, side by side; or one program's "
            "latency and per-layer instructions")
    s.add_argument("--run", type=Path, metavar="RUN", help="a run folder made by `tinyrps train` "
                   "(required, except with --model)")
    s.add_argument("--model", type=Path, metavar="X.pte", help="instead of --run: one program of any kind "
                   "(default: none)")
    s.add_argument("--etdump", type=Path, metavar="PATH", help="with --model: write the per-layer profile as an "
                   "ExecuTorch ETDump file: the emulated board's instructions per kernel call (not cycles), or on "
                   "--device native each timed run's host nanoseconds (default: none)")
    s.add_argument("--runs", type=count, default=200, metavar="N", help="timed single-image calls per program "
                   "(at least; the mcu takes at most 20, npu-ref at most 50)")
    add_program(s)
    add_device(s, "every program")
    add_board(s)
    s.add_argument("--json", action="store_true", help="JSON on stdout instead of tables")

    s = add("run", cmd_run, "any program's raw outputs for inputs from a .npz file (native, mcu or host)")
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

    s = add("play", cmd_play, "play rock-paper-scissors; the model reads both moves")
    s.add_argument("--model", required=True, type=Path, metavar="X.pte", help="a program made by `tinyrps export`")
    add_device(s, "the program")
    add_board(s)
    s.add_argument("--moves", metavar="M,M,...", help="scripted game: comma-separated moves, e.g. rock,paper,s "
                   "(default: ask for each move)")
    s.add_argument("--seed", type=seed_number, metavar="S",
                   help="seed of the opponent's moves and the drawings (default: different every game)")
    s.add_argument("--opponent", choices=OPPONENTS, default="random", help="how the opponent picks its move: at "
                   "random, or adaptive (predicts your next move from your history and plays what beats it)")
    s.add_argument("--json", action="store_true", help="one JSON object per round on stdout (JSON Lines)")

    s = add("serve", cmd_serve, "play in a web browser: draw your move, see what the model sees on each device")
    s.add_argument("--run", type=Path, action="append", metavar="RUN", help="serve every exported program of this "
                   "run; repeatable (required, unless --model)")
    s.add_argument("--model", type=Path, action="append", metavar="X.pte",
                   help="serve this program; repeatable (default: none, only the runs' programs)")
    add_device(s, "the programs of its family")
    add_board(s)
    s.add_argument("--host", default="127.0.0.1", help="address to listen on; another than this machine's "
                   "loopback lets other machines play")
    s.add_argument("--http-port", type=whole_number(0, 65535), default=8000, metavar="N",
                   help="TCP port to listen on; 0 takes any free port")
    s.add_argument("--open", action="store_true", help="open the page in the web browser")

    s = add("all", cmd_all, "the whole pipeline: data, train, export, eval, bench, game, report")
    s.add_argument("--out", type=Path, default=Path("out"), metavar="DIR", help="folder to write")
    s.add_argument("--seed", type=seed_number, default=0, metavar="S", help="random seed of the data and the training")
    s.add_argument("--epochs", type=count, metavar="E", help=epochs_help())
    s.add_argument("--per-class", type=count, metavar="N", help=per_class_help())
    s.add_argument("--arch", default="tinyrps", type=architecture, metavar="ARCH", help=arch_help())

    s = add("npu-sweep", cmd_npu_sweep, "Vela's estimate of the run's network for every Ethos-U accelerator, "
            "system config and memory mode; writes RUN/npu_sweep.json and RUN/npu_sweep.png")
    s.add_argument("--run", required=True, type=Path, metavar="RUN", help="a run folder made by `tinyrps train`")
    s.add_argument("--accelerator", action="append", metavar="A", help="only this accelerator configuration, "
                   "e.g. ethos-u85-256; repeatable (default: all of them)")
    s.add_argument("--json", action="store_true", help="JSON on stdout instead of a table")

    s = add("tune", cmd_tune, "search architectures for an Ethos-U target with Optuna (accuracy, NPU latency, "
            "program size); writes OUT/tune.json, OUT/tune.png and retrains the pick")
    s.add_argument("--data", required=True, type=Path, metavar="DIR", help="a folder made by `tinyrps data`")
    s.add_argument("--out", required=True, type=Path, metavar="DIR", help="folder to write")
    s.add_argument("--minutes", type=positive_number, default=10.0, metavar="M",
                   help="time budget of the whole tune, the final retraining included, in minutes of an idle "
                   "machine: under load, candidates are charged their CPU time when it is less than their wall "
                   "time, so the tune takes longer instead of measuring less (default: 10)")
    s.add_argument("--target", default="ethos-u85-128", metavar="T", help="Ethos-U target whose latency counts")
    s.add_argument("--max-npu-ms", type=positive_number, metavar="MS",
                   help="only candidates at most this slow on the target (default: no limit)")
    s.add_argument("--max-program-bytes", type=count, metavar="B",
                   help="only candidates whose program is at most this big (default: no limit)")
    s.add_argument("--storage", metavar="URL", help="Optuna storage shared by several workers: a database URL "
                   "(sqlite:///PATH.db, postgresql://...) or journal:PATH (default: sqlite in OUT)")
    s.add_argument("--candidate-epochs", type=count, default=CANDIDATE_EPOCHS, metavar="E",
                   help="training epochs of each candidate")
    s.add_argument("--epochs", type=count, default=TUNED_EPOCHS, metavar="E", help="training epochs of the pick")
    s.add_argument("--pick-seeds", type=count, default=3, metavar="N",
                   help="train the pick with N seeds (S, S+1, ...) and report the worst accuracy on the benchmark split")
    s.add_argument("--pick-accuracy", type=fraction, default=PICK_ACCURACY, metavar="A",
                   help="the pick is the fastest candidate whose validation accuracy after its short training "
                   "reaches A (when none does: the fastest within 0.5 points of the best)")
    s.add_argument("--finalists", type=count, default=FINALISTS, metavar="N",
                   help="train the pick and up to N-1 faster front candidates like the pick, and take the fastest "
                   f"that reads {SELECT_ACCURACY * 100:g} %% of the selection split (none: the most accurate)")
    s.add_argument("--seed", type=seed_number, default=0, metavar="S", help="random seed of the search and training")
    s.add_argument("--trials", type=count, metavar="N", help="at most this many candidates in this run "
                   "(default: as many as the budget allows)")
    s.add_argument("--no-retrain", action="store_true", help="search only: do not retrain the pick")
    add_teacher_options(s, tune=True)
    s.add_argument("--json", action="store_true", help="JSON on stdout instead of a table")

    s = sub.add_parser("deploy", help="deploy a program to real or simulated hardware",
                       description="deploy a program to real or simulated hardware")
    dsub = s.add_subparsers(dest="where", required=True, parser_class=Parser, metavar="WHERE")
    f = dsub.add_parser("fvp", formatter_class=HelpWithDefaults,
                        help="build ExecuTorch's Arm runner with an Ethos-U .pte and run it on the Corstone-320 FVP",
                        description="build ExecuTorch's Arm runner with an Ethos-U .pte and run it on the "
                                    "Corstone-320 FVP")
    f.set_defaults(func=cmd_deploy_fvp)
    f.add_argument("--model", required=True, type=Path, metavar="X.pte", help="an Ethos-U program")
    f.add_argument("--executorch-root", required=True, type=Path, metavar="DIR",
                   help="a checkout of ExecuTorch's sources")
    f.add_argument("--fvp", type=Path, help="FVP_Corstone_SSE-320 binary (default: on PATH)")
    f.add_argument("--toolchain", type=Path, help="Arm GNU toolchain folder (default: on PATH or the checkout's)")
    f.add_argument("--image", type=Path, action="append",
                   help="classify this PNG/JPEG on the FVP; repeatable (default: none, the runner's input of ones)")
    f.add_argument("--workdir", type=Path, help="build and log folder (default: next to the .pte, MODEL.fvp/)")
    f.add_argument("--timeout", type=int, default=600, help="FVP time limit per run, seconds (default 600)")
    f = dsub.add_parser("library", formatter_class=HelpWithDefaults,
                        help="write a Cortex-M program as a C library for your own firmware (CMake and Make)",
                        description="write a Cortex-M program as a C99 library for your own firmware: the program, "
                                    "the runtime's part it needs, an API of its own, CMake and Make files, an example")
    f.set_defaults(func=cmd_deploy_library)
    f.add_argument("--model", required=True, type=Path, metavar="X.pte", help="a Cortex-M program")
    f.add_argument("--out", required=True, type=Path, metavar="DIR", help="the library's folder (new, or one written "
                   "by this command before, which is replaced)")
    f.add_argument("--name", default="tinyrps_model", metavar="NAME",
                   help="a C identifier: the prefix of the library's names and its file names")
    return p


# ── errors ──────────────────────────────────────────────────────────────────
# What a user can cause and fix with a file or folder: these OS errors are one line, not a bug.
USER_ERRNOS = {
    errno.EACCES: "choose a place you may write to, or change its permissions",
    errno.EPERM: "choose a place you may write to, or change its permissions",
    errno.EROFS: "choose a place on a writable file system",
    errno.ENOSPC: "free some space, or write somewhere else",
    errno.EDQUOT: "free some space, or write somewhere else",
    errno.EFBIG: "free some space, or write somewhere else",
    errno.ENOENT: "",
    errno.EISDIR: "",
    errno.ENOTDIR: "",
    errno.ENAMETOOLONG: "",
}
# Only the plain file-system exception classes: TimeoutError, ConnectionError or pyserial's
# SerialException (all OSErrors) mean something else went wrong.
USER_OS_ERROR_TYPES = (OSError, PermissionError, FileNotFoundError, IsADirectoryError, NotADirectoryError)


def is_user_os_error(e: BaseException) -> bool:
    return type(e) in USER_OS_ERROR_TYPES and e.errno in USER_ERRNOS


def os_error_line(e: OSError) -> str:
    where = f": {e.filename}" if e.filename else ""
    hint = USER_ERRNOS[e.errno]
    return f"{e.strerror or e}{where}" + (f" ({hint})" if hint else "")


def debugging() -> bool:
    return os.environ.get(DEBUG_ENV, "") not in ("", "0")


def report_error(line: str) -> None:
    if debugging():
        traceback.print_exc()
    print(f"tinyrps: error: {line}", file=sys.stderr)


def report_bug(e: BaseException) -> None:
    traceback.print_exc()
    print(f"tinyrps: internal error ({type(e).__name__}): this is a bug in tinyrps, not something you did; "
          "please report it with the command you ran and the traceback above", file=sys.stderr)


def interrupted() -> int:
    if debugging():
        traceback.print_exc()
    print("tinyrps: interrupted", file=sys.stderr)
    return EXIT_INTERRUPTED


def main(argv=None) -> int:
    ctrl_c.install()      # a Ctrl-C that lands in a weakref callback stops the command all the same
    try:
        return run_command(argv)
    finally:
        ctrl_c.settle()     # the exit status is chosen: no Ctrl-C is sent again into the shutdown


def run_command(argv) -> int:
    try:
        quiet_libraries()
        args = build_parser().parse_args(argv)
    except KeyboardInterrupt:      # Ctrl-C while the command line is still being read
        return interrupted()
    try:
        status = args.func(args)
    except BrokenPipeError:   # output piped into `head` and the like
        return 0
    except UserError as e:
        report_error(str(e))
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        return interrupted()
    except Exception as e:
        if ctrl_c.caused_by_ctrl_c(e) or ctrl_c.received():
            return interrupted()
        if is_user_os_error(e):
            report_error(os_error_line(e))
            return EXIT_USER_ERROR
        report_bug(e)
        return EXIT_BUG
    return status or 0   # a stage may finish its work and still report a problem (classify: a bad picture)
