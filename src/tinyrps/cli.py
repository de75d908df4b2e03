"""Command line: one subcommand per pipeline stage. Thin: parse, call the stage, print.

User errors (tinyrps.errors.UserError, bad arguments) print one line on stderr and
exit with code 2; stdout carries only results (tables, or JSON with --json).
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import warnings
from pathlib import Path

from .errors import UserError


def _quiet_libraries() -> None:
    # torchao and torch log import-time warnings that say nothing about this program.
    for name in ("torchao", "torch.utils._pytree", "torch._export", "executorch"):
        logging.getLogger(name).setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")


class Parser(argparse.ArgumentParser):
    def error(self, message):
        print(f"{self.prog}: error: {message} (see `{self.prog} --help`)", file=sys.stderr)
        raise SystemExit(2)


def emit_json(obj) -> None:
    print(json.dumps(obj, indent=2))


# ── stages ──────────────────────────────────────────────────────────────────
def cmd_data(a):
    from .pipeline import make_data
    make_data(a.out, seed=a.seed, per_class=a.per_class, quiet=a.quiet)


def cmd_train(a):
    from .train import TrainConfig, train
    data = Path(a.data)
    if not (data / "train.npz").is_file():
        raise UserError(f"no data set in {data}: create it with `tinyrps data --out {data}`")
    train(TrainConfig(data=str(data.resolve()), epochs=a.epochs, seed=a.seed), a.out, quiet=a.quiet)


def cmd_export(a):
    from .export import export_target, targets
    if a.list:
        from .report import targets_table
        targets_table(targets())
        return
    if not a.run or not a.target:
        raise UserError("export needs --run RUN and --target T (see `tinyrps export --list` for targets)")
    from .export import get_target
    get_target(a.target)
    from .progress import console
    with console.status(f"exporting {a.target}"):
        pte = export_target(a.run, a.target, system_config=a.system_config, memory_mode=a.memory_mode)
    print(pte)


def cmd_eval(a):
    from .evaluate import evaluate
    result = evaluate(a.run, a.data, only=a.variant, device_override=a.device, limit=a.limit, quiet=a.quiet or a.json)
    if a.json:
        emit_json(result)
    else:
        from .report import eval_table
        eval_table(result)


def cmd_classify(a):
    from .classify import classify_files
    report = classify_files(a.model, a.images, a.device)
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
    from .bench import bench
    result = bench(a.run, runs=a.runs, only=a.variant, device_override=a.device, quiet=a.quiet or a.json)
    if a.json:
        emit_json(result)
    else:
        from .report import bench_table
        bench_table(result)


def cmd_play(a):
    from .devices import default_device, open_device
    from .game import Game, parse_moves, play_interactive, play_scripted
    moves = parse_moves(a.moves) if a.moves is not None else None
    device_name = a.device or default_device(a.model)
    with open_device(device_name, a.model) as device:
        game = Game(device, seed=a.seed)
        if moves:
            play_scripted(game, moves, a.json)
        else:
            play_interactive(game, a.json)


def cmd_all(a):
    from .pipeline import run_all
    run_all(a.out, seed=a.seed, epochs=a.epochs, per_class=a.per_class, quiet=a.quiet)


def cmd_deploy_fvp(a):
    from .deploy.fvp import deploy_fvp
    result = deploy_fvp(a.model, a.executorch_root, fvp=a.fvp, toolchain=a.toolchain)
    emit_json(result)


# ── parser ──────────────────────────────────────────────────────────────────
def build_parser() -> argparse.ArgumentParser:
    from .devices import device_names
    p = Parser(prog="tinyrps", description="A tiny rock-paper-scissors classifier, from PyTorch to Arm microcontrollers.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)

    def add(name, func, help_):
        s = sub.add_parser(name, help=help_, description=help_)
        s.set_defaults(func=func)
        s.add_argument("--quiet", action="store_true", help="no progress bars")
        return s

    s = add("data", cmd_data, "render the synthetic train/val/test splits")
    s.add_argument("--out", required=True, type=Path)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--per-class", type=int, default=None, help="training images per class (val and test scale with it)")

    s = add("train", cmd_train, "train the CNN; writes RUN/model.pt and RUN/metrics.json")
    s.add_argument("--data", required=True, type=Path)
    s.add_argument("--out", required=True, type=Path)
    s.add_argument("--epochs", type=int, default=4)
    s.add_argument("--seed", type=int, default=0)

    s = add("export", cmd_export, "export RUN/model.pt to an ExecuTorch program RUN/export/T.pte")
    s.add_argument("--run", type=Path)
    s.add_argument("--target", help="see --list")
    s.add_argument("--list", action="store_true", help="list the targets and exit")
    s.add_argument("--system-config", help="Ethos-U: Vela system configuration")
    s.add_argument("--memory-mode", help="Ethos-U: Vela memory mode")

    s = add("eval", cmd_eval, "accuracy of eager and every exported program on the test split")
    s.add_argument("--run", required=True, type=Path)
    s.add_argument("--data", type=Path, help="data folder (default: the one the run was trained on)")
    s.add_argument("--variant", action="append", help="only this exported target (repeatable)")
    s.add_argument("--device", choices=device_names(), help="run every program on this device")
    s.add_argument("--limit", type=int, help="only the first N test images")
    s.add_argument("--json", action="store_true")

    s = add("classify", cmd_classify, "read letters in pictures (files, or every picture in a folder) with a program")
    s.add_argument("--model", required=True, type=Path, help="the program (.pte) or checkpoint (model.pt)")
    s.add_argument("--device", choices=device_names(), help="where it runs (default: the program's own device)")
    s.add_argument("images", nargs="+", type=Path, metavar="IMAGE_OR_FOLDER",
                   help="PNG, JPEG, WebP, TIFF, GIF or BMP files, or folders of them")
    s.add_argument("--show", action="store_true", help="print the 28x28 image the model saw, as ASCII art")
    s.add_argument("--json", action="store_true", help="one JSON object: model, device and a result per picture")

    s = add("bench", cmd_bench, "median latency of one inference per variant, side by side")
    s.add_argument("--run", required=True, type=Path)
    s.add_argument("--runs", type=int, default=200)
    s.add_argument("--variant", action="append")
    s.add_argument("--device", choices=device_names())
    s.add_argument("--json", action="store_true")

    s = add("play", cmd_play, "play rock-paper-scissors; the model reads both moves")
    s.add_argument("--model", required=True, type=Path)
    s.add_argument("--device", choices=device_names())
    s.add_argument("--moves", help="scripted: comma-separated moves, e.g. rock,paper,s")
    s.add_argument("--seed", type=int)
    s.add_argument("--json", action="store_true")

    s = add("all", cmd_all, "the whole pipeline: data, train, export, eval, bench, game, report")
    s.add_argument("--out", type=Path, default=Path("out"))
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--epochs", type=int, default=4)
    s.add_argument("--per-class", type=int, default=None)

    s = sub.add_parser("deploy", help="deploy a program to real or simulated hardware")
    dsub = s.add_subparsers(dest="where", required=True, parser_class=Parser)
    f = dsub.add_parser("fvp", help="build ExecuTorch's Arm runner with an Ethos-U .pte and run it on the Corstone-320 FVP")
    f.set_defaults(func=cmd_deploy_fvp)
    f.add_argument("--model", required=True, type=Path)
    f.add_argument("--executorch-root", required=True, type=Path)
    f.add_argument("--fvp", type=Path, help="FVP_Corstone_SSE-320 binary (default: on PATH)")
    f.add_argument("--toolchain", type=Path, help="Arm GNU toolchain folder (default: on PATH or the checkout's)")
    return p


def main(argv=None) -> int:
    _quiet_libraries()
    args = build_parser().parse_args(argv)
    try:
        status = args.func(args)
    except BrokenPipeError:   # output piped into `head` and the like
        return 0
    except UserError as e:
        print(f"tinyrps: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tinyrps: interrupted", file=sys.stderr)
        return 130
    except OSError as e:  # a folder that cannot be written, a full disk: the user's to fix
        where = f": {e.filename}" if e.filename else ""
        print(f"tinyrps: error: {e.strerror or e}{where}", file=sys.stderr)
        return 2
    return status or 0   # a stage may finish its work and still report a problem (classify: a bad picture)
