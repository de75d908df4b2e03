"""The pipeline's stages on the command line: data, train, export, measure, and all of them at once."""
from __future__ import annotations

from pathlib import Path

from ...infra.errors import UserError, require_file
from .options import (Command, add_teacher_options, arch_help, architecture, check_data, check_model,
                      check_out_folder, check_run, count, emit_json, per_class_help, seed_number)


def data_arguments(s) -> None:
    s.add_argument("--out", required=True, type=Path, metavar="DIR", help="folder to write (created if missing)")
    s.add_argument("--seed", type=seed_number, default=0, metavar="S",
                   help="random seed; the same seed gives the same images")
    s.add_argument("--per-class", type=count, metavar="N", help=per_class_help())


def cmd_data(a):
    from ...data import make_data
    make_data(check_out_folder(a.out), seed=a.seed, per_class=a.per_class, quiet=a.quiet)


def train_arguments(s) -> None:
    from ...network.arch import epochs_help
    s.add_argument("--data", required=True, type=Path, metavar="DIR", help="a folder made by `tinyrps data`")
    s.add_argument("--out", required=True, type=Path, metavar="RUN", help="run folder to write")
    s.add_argument("--epochs", type=count, metavar="E", help=epochs_help())
    s.add_argument("--seed", type=seed_number, default=0, metavar="S",
                   help="random seed of initialisation and shuffling")
    s.add_argument("--arch", default="tinyrps", type=architecture, metavar="ARCH", help=arch_help())
    add_teacher_options(s)


def cmd_train(a):
    data = check_data(a.data, "train")
    check_out_folder(a.out)
    from ...train import TrainConfig, train
    train(TrainConfig(data=str(data.resolve()), epochs=a.epochs, seed=a.seed, arch=a.arch, teacher=a.teacher,
                      distill_alpha=a.distill_alpha, distill_temperature=a.distill_temperature),
          a.out, quiet=a.quiet)


def export_arguments(s) -> None:
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
                   "quantization (arrays input0, input1, ... of N examples), or `random` (32 seeded examples; "
                   "required with --module)")
    s.add_argument("--out", type=Path, metavar="DIR", help="--module: folder to write NAME.pte and NAME.json "
                   "(default: the current folder)")
    s.add_argument("--name", metavar="NAME", help="--module: the program's file name (default: the target's)")
    s.add_argument("--system-config", metavar="C", help="Ethos-U: Vela system configuration "
                   "(default: Arm's for the accelerator, e.g. Ethos_U85_SYS_DRAM_Mid)")
    s.add_argument("--memory-mode", metavar="M", help="Ethos-U: Vela memory mode "
                   "(default: Arm's for the accelerator, e.g. Dedicated_Sram)")
    s.add_argument("--io", choices=("float", "int8"), help="Cortex-M: the program's inputs and outputs; int8: the "
                   "quantized tensors (scale and zero point in the descriptor), no float input in the arena "
                   "(default float: what tinyrps's evaluation runs)")


def cmd_export(a):
    from ...hardware.families import get_target, targets
    if a.list:
        from ..report.targets import targets_table
        targets_table(targets())
        return
    if not a.target or not (a.run or a.module) or (a.run and a.module):
        raise UserError("export needs --target T and either --run RUN or --module FILE.py:NAME "
                        "(see `tinyrps export --list` for targets)")
    options = {"system_config": a.system_config, "memory_mode": a.memory_mode, "io": a.io}
    from ...export import check_options
    check_options(get_target(a.target), options)     # before a stage loads torch
    if a.module:
        pte = export_user_module(a, options)
    else:
        check_run(a.run)
        for flag in ("input_shape", "input_dtype", "calibration", "out", "name"):
            if getattr(a, flag):
                raise UserError(f"--{flag.replace('_', '-')} is for --module; a run's program takes its shape, "
                                "calibration and place from the run")
        from ...export import export_target
        from ...infra.progress import console
        with console.status(f"exporting {a.target}"):
            pte = export_target(a.run, a.target, **options)
    print(pte)


def export_user_module(a, options: dict) -> Path:
    """`export --module FILE.py:NAME`: the user's model, checked argument by argument before torch loads."""
    from ...network import user_model
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
    from ...hardware.descriptor import Origin
    from ...export import export_model
    from ...infra.progress import console
    with console.status(f"exporting {a.target}"), user_model.no_exit(f"{path}:{name}"):
        return export_model(model, examples, calibration, a.target, out, Origin(module=f"{path.name}:{name}",
                            calibration=note), name=a.name, **options)


def cmd_measure(a):
    if bool(a.run) == bool(a.model):
        raise UserError("measure needs --run RUN (every exported program of the run) or --model X.pte")
    from ... import measure
    if a.model:
        check_model(a.model)
        from ...infra.progress import console
        if a.target and len(a.target) > 1:
            raise UserError("--target with --model is the one core of a program without a descriptor; give it once")
        with console.status(f"measuring {Path(a.model).name}"):
            results = {Path(a.model).stem: measure.measure(a.model, quick=a.quick, core=(a.target or [None])[0])}
    else:
        check_run(a.run)
        if a.target:
            from ...programs import selected
            selected(a.run, a.target)
        results = measure.measure_run(a.run, quiet=a.quiet, only_targets=a.target)
        if not results:
            raise UserError(f"{a.run} has no exported program with something to measure (Ethos-U or Cortex-M): "
                            f"export one with `tinyrps export --run {a.run} --target cortex-m55`")
    if a.json:
        emit_json(results)
    else:
        for name, m in results.items():
            print(f"{name}: {measure.summary_line(m) or 'nothing to measure'}" + (f" ({m['note']})" if "note" in m else ""))
        from ..report.system_layers import print_system_tables
        print_system_tables(results)


def measure_arguments(s) -> None:
    s.add_argument("--run", type=Path, metavar="RUN", help="every exported program of this run "
                   "(required, except with --model)")
    s.add_argument("--model", type=Path, metavar="X.pte", help="instead of --run: one program (default: none)")
    s.add_argument("--target", action="append", metavar="T", help="with --run: only this program; repeatable "
                   "(default: every program of the run); with --model: the core of a Cortex-M program that has no "
                   "descriptor, e.g. cortex-m55")
    s.add_argument("--quick", action="store_true", help="--model: only the instruction count (one emulator run)")
    s.add_argument("--json", action="store_true", help="JSON on stdout instead of lines")


def all_arguments(s) -> None:
    from ...network.arch import epochs_help
    s.add_argument("--out", type=Path, default=Path("out"), metavar="DIR", help="folder to write")
    s.add_argument("--seed", type=seed_number, default=0, metavar="S", help="random seed of the data and the training")
    s.add_argument("--epochs", type=count, metavar="E", help=epochs_help())
    s.add_argument("--per-class", type=count, metavar="N", help=per_class_help())
    s.add_argument("--arch", default="tinyrps", type=architecture, metavar="ARCH", help=arch_help())


def cmd_all(a):
    check_out_folder(a.out)
    from ...pipeline import run_all
    run_all(a.out, seed=a.seed, epochs=a.epochs, per_class=a.per_class, quiet=a.quiet, arch=a.arch)


COMMANDS = (
    Command("data", "render the synthetic train/val/test/benchmark splits", data_arguments, cmd_data),
    Command("train", "train the CNN; writes RUN/model.pt and RUN/metrics.json", train_arguments, cmd_train),
    Command("export", "export RUN/model.pt, or your own PyTorch model, to an ExecuTorch program "
            "(RUN/export/T.pte and its descriptor T.json); ahead of time only: no firmware, no emulator",
            export_arguments, cmd_export),
    Command("measure", "measure exported programs: a Cortex-M program on the firmware of its "
            "emulated board (flash, RAM, arena, instructions per inference and per layer), an Ethos-U "
            "program's Vela estimate; writes T.measure.json beside each", measure_arguments, cmd_measure),
    Command("all", "the whole pipeline: data, train, export, eval, bench, game, report", all_arguments, cmd_all),
)
