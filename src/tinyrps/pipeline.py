"""The main job, `tinyrps all`: data -> train -> export -> measure -> eval -> bench -> game -> report."""
from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from . import data as data_mod
from .artifacts import atomic_write_json, staged_folder
from .errors import UserError
from .export import export_target
from .families import family_of_target, targets
from .progress import console, say

# The targets the main job exports (every other Ethos-U configuration and Cortex-M
# core is one `tinyrps export --target T` away).
MAIN_TARGETS = ("fp32", "fp32-xnnpack", "int8-xnnpack", "ethos-u55-128", "ethos-u85-128",
                "cortex-m55", "cortex-m33", "cortex-m4")
# Which program plays the demo rounds on each device, in order of preference.
GAME_PROGRAMS = (("int8-xnnpack", "host"), ("ethos-u85-128", "npu-ref"), ("cortex-m55", "mcu"))
GAME_MOVES = ("rock", "paper", "scissors")


def split_sizes(per_class) -> dict:
    if per_class is None:
        return dict(data_mod.DEFAULT_PER_CLASS)
    if per_class < 1:
        raise UserError(f"--per-class must be at least 1, got {per_class}")
    return {"train": per_class, "val": max(per_class // 10, 10), "test": max(per_class // 15, 10)}


def check_seed(seed: int) -> None:
    if seed < 0:
        raise UserError(f"--seed must be at least 0, got {seed}")


def check_epochs(epochs) -> None:
    if epochs is not None and epochs < 1:
        raise UserError(f"--epochs must be at least 1, got {epochs}")


def make_data(out, seed: int = 0, per_class=None, quiet: bool = False) -> dict:
    """Render the data set into OUT, whole: built in a folder of its own and swapped in with
    its manifest (tinyrps.artifacts.staged_folder), so that OUT holds the previous data set or
    this one, never a mix. OUT/data.json records each split's sha256."""
    out = Path(out)
    check_seed(seed)
    sizes = split_sizes(per_class)
    data_mod.check_resources(sizes, out)
    start = time.perf_counter()
    with staged_folder(out, "data") as folder:
        splits = {}
        for split in data_mod.SPLITS:
            images, labels = data_mod.make_split(split, sizes[split], seed)
            splits[split] = data_mod.save_split(folder / f"{split}.npz", images, labels)
            if split == "train":
                data_mod.preview(images, labels, folder / "preview.png")
            del images, labels
        probes = data_mod.save_probe_sets(folder, sizes["test"], seed)
        info = {"seed": seed, "per_class": sizes, "images": sum(s["images"] for s in splits.values()),
                "splits": splits, "probes": probes,
                "fonts": [Path(f).name if f else "Pillow built-in" for f in data_mod.font_files()]}
        atomic_write_json(folder / "data.json", info)
    seconds = time.perf_counter() - start
    say(f"data: {info['images']} images in {seconds:.1f} s -> {out}", quiet)
    return info


@contextlib.contextmanager
def stage(name: str, timings: dict, quiet: bool):
    """Announce a stage of the main job and record its wall time in `timings`."""
    start = time.perf_counter()
    say(f"[bold cyan]── {name}[/]", quiet)
    try:
        yield
    finally:
        timings[name] = round(time.perf_counter() - start, 2)


def export_all(run_dir: Path, quiet: bool) -> tuple:
    artifacts, skipped = {}, {}
    available = targets()
    for name in MAIN_TARGETS:
        target = available.get(name)
        reason = "this target is not part of this installation" if target is None else \
            family_of_target(name).available()
        if reason:
            skipped[name] = reason
            say(f"  [yellow]skipped {name}: {reason}[/]", quiet)
            continue
        with console.status(f"exporting {name}"):
            t = time.perf_counter()
            artifacts[name] = str(export_target(run_dir, name))
        say(f"  {name}: {Path(artifacts[name]).stat().st_size:,} bytes in {time.perf_counter() - t:.1f} s", quiet)
    return artifacts, skipped


def play_demo(artifacts: dict, seed: int, quiet: bool) -> list:
    from .devices import open_device
    from .game import Game, play_scripted
    rounds = []
    for target, device_name in GAME_PROGRAMS:
        if target not in artifacts:
            continue
        with open_device(device_name, artifacts[target]) as device:
            game = Game(device, seed=seed)
            text = io.StringIO()
            records = play_scripted(game, list(GAME_MOVES), as_json=False, out=text)
            if not quiet:
                console.print(text.getvalue(), markup=False, highlight=False)
            rounds += [{"target": target, "device": device_name, **r} for r in records]
    return rounds


def bench_in_fresh_process(run_dir: Path, names: list, quiet: bool) -> dict:
    """`tinyrps bench` in its own process, as a user would run it: timings taken after training
    and export in this process depend on the state those leave behind (thread pools, heap)."""
    command = [sys.executable, "-m", "tinyrps", "bench", "--run", str(run_dir), "--json"] + (["--quiet"] if quiet else [])
    command += [arg for name in names for arg in ("--variant", name)]
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise UserError(f"the benchmark failed (exit code {done.returncode}); run `{' '.join(command[2:])}` to see why")
    return json.loads(done.stdout)


def run_all(out, seed: int = 0, epochs=None, per_class=None, quiet: bool = False, arch: str = "tinyrps") -> dict:
    from .evaluate import evaluate
    from .measure import measure_run
    from .report import bench_table, eval_table, write_report
    from .train import TrainConfig, train
    from .arch import parse_arch
    parse_arch(arch)   # a bad spec is refused before any work
    out = Path(out)
    check_seed(seed)
    check_epochs(epochs)
    split_sizes(per_class)
    data_dir, run_dir = out / "data", out / "run"
    timings, start = {}, time.perf_counter()
    with stage("data", timings, quiet):
        data_info = make_data(data_dir, seed=seed, per_class=per_class, quiet=quiet)
    with stage("train", timings, quiet):
        metrics = train(TrainConfig(data=str(data_dir.resolve()), epochs=epochs, seed=seed, arch=arch), run_dir, quiet=quiet)
    with stage("export", timings, quiet):
        artifacts, skipped = export_all(run_dir, quiet)
    with stage("measure", timings, quiet):
        measurements = measure_run(run_dir, quiet=quiet, only_targets=list(artifacts))
    with stage("eval", timings, quiet):
        evaluation = evaluate(run_dir, only=list(artifacts), quiet=quiet)
        atomic_write_json(run_dir / "eval.json", evaluation)
        if not quiet:
            eval_table(evaluation)
    with stage("bench", timings, quiet):
        benchmark = bench_in_fresh_process(run_dir, list(artifacts), quiet)
        atomic_write_json(run_dir / "bench.json", benchmark)
        if not quiet:
            bench_table(benchmark)
    with stage("game", timings, quiet):
        rounds = play_demo(artifacts, seed, quiet)
    timings["total"] = round(time.perf_counter() - start, 2)
    summary = {
        "test_accuracy": {name: v["accuracy"] for name, v in evaluation["variants"].items()},
        # relative to OUT, so the folder can be moved or shared
        "artifacts": {name: Path(os.path.relpath(path, out)).as_posix()
                      for name, path in {"model": run_dir / "model.pt", **artifacts}.items()},
        "skipped": skipped,
        "data": data_info,
        "arch": metrics["arch"],
        "training": {"epochs": metrics["epochs"], "best_val_accuracy": metrics["best_val_accuracy"]},
        "measure": measurements,
        "eval": evaluation,
        "bench": benchmark,
        "game": rounds,
        "seconds": timings,
    }
    atomic_write_json(out / "summary.json", summary)
    write_report(out, summary)
    say(f"[bold green]done in {timings['total']:.0f} s[/]: {out / 'report.md'}, {out / 'summary.json'}", quiet)
    return summary
