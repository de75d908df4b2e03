"""What the commands share: argument types (checked while parsing, before any work), checks of the
paths a command is given (cheap: before the stages are imported), the options several commands take
(written once here), and the Command record every command is."""
from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from ...infra.errors import UserError, require_file

# Seeds go to numpy's SeedSequence and torch.manual_seed; this range suits both.
MAX_SEED = 2**32 - 1
EXPORT_HINT = "create one with `tinyrps export --run RUN --target T`"
# An option renamed after 0.1.0: its old spelling stays, hidden, for one release.
OLD_PROGRAM_OPTION = "--variant T (tinyrps 0.1.0) is an old spelling of --program T, kept for one release."


@dataclass(frozen=True)
class Command:
    """One command: its name ("data", or "deploy fvp" below a group), what it does, the function that
    adds its options to its parser, and the one that runs it (its return value, where not None, is the
    exit code). Each command module lists its records in COMMANDS, next to their functions."""
    name: str
    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], Optional[int]]
    quiet: bool = True       # it takes --quiet (no progress bars)
    description: Optional[str] = None    # its --help's first paragraph, where longer than `help`


# ── argument types ──────────────────────────────────────────────────────────
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
    from ...network.arch import parse_arch
    try:
        parse_arch(text)
    except UserError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


architecture.__name__ = "architecture"


def emit_json(obj) -> None:
    print(json.dumps(obj, indent=2))


# ── checks of paths given on the command line ───────────────────────────────
def check_model(path) -> Path:
    return require_file(path, "model file", EXPORT_HINT)


def check_run(run) -> Path:
    from ...infra.artifacts.staging import recover_for_reading
    run = Path(run)
    recover_for_reading(run)     # a run an interrupted `tinyrps train` left beside its name is put back
    require_file(run / "model.pt", "checkpoint", f"create it with `tinyrps train --data DATA --out {run}`")
    return run


def check_data(data, split: str) -> Path:
    """A data folder holding the split a command reads (put back first if an interrupted
    `tinyrps data` left it beside its name)."""
    from ...infra.artifacts.manifest import read_manifest
    from ...infra.artifacts.staging import recover_for_reading
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


def check_out_file(out) -> Path:
    out = Path(out)
    if out.is_dir():
        raise UserError(f"--out {out} is a folder: give a file name, e.g. {out / 'outputs.npz'}")
    from ...infra.artifacts.files import check_replaceable_file
    return check_replaceable_file(out, "--out")


def check_written_apart(read: dict, written: dict) -> None:
    """Each file a command writes (option -> path, None where not given) is none of the files it reads
    and none of the others it writes: one would overwrite the other."""
    seen = dict(read)
    for option, path in written.items():
        if path is None:
            continue
        for other, known in seen.items():
            if known is not None and _same_file(path, known):
                raise UserError(f"{option} {path} is the file of {other}: give another file name for {option}")
        seen[option] = path


def _same_file(a, b) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:         # one of them is not there yet: the same path written twice is still the same file
        return os.path.realpath(a) == os.path.realpath(b)


# ── the device options ──────────────────────────────────────────────────────
def add_device(s, what: str) -> None:
    from ...devices import device_name, device_names
    # type= maps an old name (--device host) to its new one before choices= checks it: the help lists only
    # today's names
    s.add_argument("--device", type=device_name, choices=device_names(), help=f"run {what} on this device "
                   "(default: the device of the program's family: executorch, npu or mcu)")
    s.add_argument("--port", metavar="DEV", help="for the mcu device: a board running the tinyrps firmware on "
                   "this serial port, e.g. /dev/ttyACM0 (default: the firmware in QEMU)")


def add_board(s) -> None:
    from ...firmware.boards import BOARDS
    s.add_argument("--board", choices=list(BOARDS),
                   help="--device mcu: the emulated board (default: the program's, from its descriptor)")


def chosen_device(a) -> str:
    """The device one program runs on: --device, else the board on --port, else its family's default."""
    from ...devices import default_device
    return a.device or ("mcu" if a.port else default_device(a.model))


def device_options(a, device_name: str = None) -> dict:
    """Options per device name from the command line: --port goes to the mcu device."""
    if not getattr(a, "port", None):
        return {}
    if (device_name or a.device or "mcu") != "mcu":
        raise UserError(f"--port is for --device mcu (a board running the tinyrps firmware), "
                        f"not --device {device_name or a.device}")
    return {"mcu": {"port": a.port}}


def add_program(s) -> None:
    s.add_argument("--program", action="append", metavar="T",
                   help="only this exported program; repeatable (default: every exported program)")
    # 0.1.0's spelling, hidden; the epilog says so, for one release
    s.add_argument("--variant", action="append", dest="program", help=argparse.SUPPRESS)
    s.epilog = OLD_PROGRAM_OPTION


# ── training options ────────────────────────────────────────────────────────
def add_teacher_options(s, tune: bool = False) -> None:
    from ...network.arch import DISTILL_ALPHA, DISTILL_TEMPERATURE
    s.add_argument("--teacher", type=Path, metavar="RUN",
                   help=("retrain the pick (and train the candidates) " if tune else "train ")
                   + "by knowledge distillation from RUN, a run of any architecture trained on the same data "
                   "(default: none, plain cross-entropy)")
    s.add_argument("--distill-alpha", type=fraction, metavar="A", help="with --teacher: weight of the teacher's "
                   f"soft targets in the loss, 0 to 1 (default: {DISTILL_ALPHA:g})")
    s.add_argument("--distill-temperature", type=positive_number, metavar="T", help="with --teacher: the "
                   f"softmax temperature of the soft targets (default: {DISTILL_TEMPERATURE:g})")


def arch_help() -> str:
    from ...network.arch import ARCHITECTURES, count_macs, count_params
    named = "; ".join(f"{name} = {spec} ({count_macs(spec) / 1e6:.2f} M MACs, {count_params(spec):,} parameters)"
                      for name, spec in ARCHITECTURES.items())
    return ("network architecture: a name or a spec of layers joined by '-' (cN conv 3x3 to N channels, "
            f"cNs2 the same with stride 2, p 2x2 max-pool, p3 3x3 max-pool with stride 2, fN fully connected); "
            f"{named} (default: tinyrps)")


def per_class_help() -> str:
    from ...network.labels import DEFAULT_PER_CLASS as d
    return (f"training images per class; val, test and benchmark scale with it "
            f"(default: {d['train']}, with {d['val']} val, {d['test']} test and {d['benchmark']} benchmark)")
