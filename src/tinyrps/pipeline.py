"""The main job, `tinyrps all`: data -> train -> export -> measure -> eval -> bench -> game -> report.

The job holds OUT's lock from start to end (a second `all` into OUT is refused), and takes
each stage's previous result where it is still current, so that `all` after an interruption
(Ctrl-C, a kill, a full disk) redoes exactly what is stale:

    data     current if OUT/data holds the data set of this seed and size, whole
    train    current if OUT/run was trained with these settings on that data, and its
             model.pt is the checkpoint its config.json records
    export   per target: current if the program's descriptor names that checkpoint and the
             installed torch and executorch
    measure  per program: current if its measurement is of its bytes (tinyrps.measure)
    eval     current if OUT/run/eval.json is of that checkpoint, these programs' bytes and
             that test split
    bench    current if OUT/run/bench.json is of that checkpoint and these programs' bytes
             (the measure stage's figures in it are taken again)
    game     always played (a few rounds)

The summary and report of an earlier job are removed before anything else changes, so
neither ever shows the figures of another checkpoint than the one beside it. Each stage first
removes what a killed job left of it (a lock, a staged or scratch folder, a temporary file),
even when its result is current, so a job that ends leaves nothing behind.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from .infra.artifacts.files import atomic_write_json, sha256_file
from .infra.artifacts.records import data_info, run_config
from .infra.artifacts.locks import folder_lock, real_target
from .infra.artifacts.staging import parents_made, remove_dead_temporaries, tidy
from .data import check_seed, make_data, split_sizes
from .infra.errors import UserError
from .export import export_target, remove_leftovers
from .hardware.families import family_of_target, targets
from .infra.progress import console, say

# The targets the main job exports (every other Ethos-U configuration and Cortex-M
# core is one `tinyrps export --target T` away).
MAIN_TARGETS = ("fp32", "fp32-xnnpack", "int8-xnnpack", "ethos-u55-128", "ethos-u85-128",
                "cortex-m55", "cortex-m33", "cortex-m4")
# Which program plays the demo rounds on each device, in order of preference.
GAME_PROGRAMS = (("int8-xnnpack", "executorch"), ("ethos-u85-128", "npu"), ("cortex-m55", "mcu"))
GAME_MOVES = ("rock", "paper", "scissors")


@contextlib.contextmanager
def stage(name: str, timings: dict, quiet: bool):
    """Announce a stage of the main job and record its wall time in `timings`."""
    start = time.perf_counter()
    say(f"[bold cyan]── {name}[/]", quiet)
    try:
        yield
    finally:
        timings[name] = round(time.perf_counter() - start, 2)


def export_all(run_dir: Path, checkpoint: str, quiet: bool) -> tuple:
    """Every main target, exported again where its program is not current: (programs, skipped, exported)."""
    artifacts, skipped, exported = {}, {}, []
    available = targets()
    for name in MAIN_TARGETS:
        target = available.get(name)
        reason = "this target is not part of this installation" if target is None else \
            family_of_target(name).available()
        if reason:
            skipped[name] = reason
            say(f"  [yellow]skipped {name}: {reason}[/]", quiet)
            continue
        pte = run_dir / "export" / f"{name}.pte"
        if pte.parent.is_dir():
            remove_leftovers(pte.parent, name)      # a killed export's, even where the program is current
        if current_program(pte, checkpoint):
            artifacts[name] = pte
            continue
        with console.status(f"exporting {name}"):
            t = time.perf_counter()
            artifacts[name] = export_target(run_dir, name)
            exported.append(name)
        say(f"  {name}: {artifacts[name].stat().st_size:,} bytes in {time.perf_counter() - t:.1f} s", quiet)
    if not exported:
        say("  every program is current", quiet)
    return artifacts, skipped, exported


def play_demo(artifacts: dict, seed: int, quiet: bool) -> list:
    from .devices import open_device
    from .interfaces.game import Game, play_scripted
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
    command += [arg for name in names for arg in ("--program", name)]
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise UserError(f"the benchmark failed (exit code {done.returncode}); run `{' '.join(command[2:])}` to see why")
    return json.loads(done.stdout)


def check_epochs(epochs) -> None:
    if epochs is not None and epochs < 1:
        raise UserError(f"--epochs must be at least 1, got {epochs}")


def run_all(out, seed: int = 0, epochs=None, per_class=None, quiet: bool = False, arch: str = "tinyrps") -> dict:
    from .network.arch import parse_arch
    parse_arch(arch)   # a bad spec is refused before any work
    out = Path(out)
    check_seed(seed)
    check_epochs(epochs)
    split_sizes(per_class)
    # the lock beside OUT (and the new folders up to it): a job that fails on a new OUT leaves nothing behind
    with parents_made(real_target(out)), folder_lock(out):
        retire_results(out)
        return _run_all(out, seed, epochs, per_class, quiet, arch)


def retire_results(out: Path) -> None:
    """An earlier job's summary and report go first: whatever happens next, none is left
    beside data or a checkpoint it does not describe."""
    for name in ("summary.json", "report.md"):
        (out / name).unlink(missing_ok=True)


def _run_all(out: Path, seed: int, epochs, per_class, quiet: bool, arch: str) -> dict:
    # the stages' modules are loaded before the first stage's clock starts: no stage's time holds an import
    from . import evaluate, measure, train  # noqa: F401
    from .interfaces.report.markdown import write_report
    data_dir, run_dir = out / "data", out / "run"
    timings, reused, start = {}, [], time.perf_counter()
    with stage("data", timings, quiet):
        info = _data_stage(data_dir, seed, per_class, reused, quiet)
    with stage("train", timings, quiet):
        metrics = _train_stage(run_dir, data_dir, epochs, seed, arch, reused, quiet)
    checkpoint = sha256_file(run_dir / "model.pt")
    with stage("export", timings, quiet):
        artifacts, skipped, fresh = export_all(run_dir, checkpoint, quiet)
        if not fresh:
            reused.append("export")
    with stage("measure", timings, quiet):
        measurements = _measure_stage(run_dir, artifacts, reused, quiet)
    programs = {name: sha256_file(path) for name, path in artifacts.items()}
    with stage("eval", timings, quiet):
        evaluation = _eval_stage(run_dir, data_dir, checkpoint, programs, list(artifacts), reused, quiet)
    with stage("bench", timings, quiet):
        benchmark = _bench_stage(run_dir, checkpoint, programs, artifacts, reused, quiet)
    with stage("game", timings, quiet):
        rounds = play_demo(artifacts, seed, quiet)
    timings["total"] = round(time.perf_counter() - start, 2)
    summary = {
        "test_accuracy": {name: v["accuracy"] for name, v in evaluation["programs"].items()},
        # relative to OUT, so the folder can be moved or shared
        "artifacts": {name: Path(os.path.relpath(path, out)).as_posix()
                      for name, path in {"model": run_dir / "model.pt", **artifacts}.items()},
        "checkpoint_sha256": checkpoint,
        "programs_sha256": programs,
        "skipped": skipped,
        "reused": reused,
        "data": info,
        "arch": metrics["arch"],
        "training": {"epochs": metrics["epochs"], "val_accuracy": metrics["val_accuracy"],
                     **({"machine": metrics["machine"]} if "machine" in metrics else {})},
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


# --- the stages: each reuses its result where it is current (and says so in `reused`) --------------

def _data_stage(data_dir: Path, seed: int, per_class, reused: list, quiet: bool) -> dict:
    tidy(data_dir)          # what a killed job left, even where the stage's result is current
    info = current_data(data_dir, seed, split_sizes(per_class))
    if info is None:
        return make_data(data_dir, seed=seed, per_class=per_class, quiet=quiet)
    reused.append("data")
    say(f"  {data_dir} holds this data set already", quiet)
    return info


def _train_stage(run_dir: Path, data_dir: Path, epochs, seed: int, arch: str, reused: list, quiet: bool) -> dict:
    from .train import TrainConfig, train
    tidy(run_dir)
    config = TrainConfig(data=str(data_dir.resolve()), epochs=epochs, seed=seed, arch=arch)
    metrics = current_run(run_dir, config)
    if metrics is None:
        return train(config, run_dir, quiet=quiet)
    reused.append("train")
    say(f"  {run_dir} was trained with these settings on this data already", quiet)
    return metrics


def _measure_stage(run_dir: Path, artifacts: dict, reused: list, quiet: bool) -> dict:
    from .measure import measure_programs, read as read_measurement
    remove_dead_temporaries(run_dir / "export")
    current = {name: read_measurement(pte) for name, pte in artifacts.items()}
    due = {name: pte for name, pte in artifacts.items() if current[name] is None and measure_kinds(pte)}
    taken = measure_programs(due, quiet)
    if not taken:
        reused.append("measure")
    return {name: current[name] or taken[name] for name in artifacts if current[name] or name in taken}


def _eval_stage(run_dir: Path, data_dir: Path, checkpoint: str, programs: dict, names: list, reused: list,
                quiet: bool) -> dict:
    from .evaluate import evaluate
    from .interfaces.report.accuracy import eval_table
    evaluation = current_result(run_dir / "eval.json", checkpoint, programs,
                                test_split_sha256=sha256_file(data_dir / "test.npz"))
    if evaluation is None:
        evaluation = evaluate(run_dir, only=names, quiet=quiet)
        atomic_write_json(run_dir / "eval.json", evaluation)
    else:
        reused.append("eval")
    if not quiet:
        eval_table(evaluation)
    return evaluation


def _bench_stage(run_dir: Path, checkpoint: str, programs: dict, artifacts: dict, reused: list, quiet: bool) -> dict:
    from .interfaces.report.speed import bench_table
    benchmark = current_result(run_dir / "bench.json", checkpoint, programs)
    if benchmark is None:
        benchmark = bench_in_fresh_process(run_dir, list(artifacts), quiet)
    else:
        reused.append("bench")
        refresh_measured_figures(benchmark, artifacts)
    atomic_write_json(run_dir / "bench.json", benchmark)
    if not quiet:
        bench_table(benchmark)
    return benchmark


# --- what is current ---------------------------------------------------------------------------

def current_data(data_dir: Path, seed: int, sizes: dict):
    """The data set's record if DATA holds, whole, the data set of this seed and these sizes; else None."""
    if not (data_dir / "data.json").is_file():
        return None
    try:
        info, _ = data_info(data_dir)
    except UserError:          # damaged, mixed or of an older tinyrps: made again
        return None
    return info if info.get("seed") == seed and info.get("per_class") == sizes else None


def current_run(run_dir: Path, config):
    """The run's metrics if RUN was trained with `config`'s settings on the data DATA holds now and its
    model.pt is the checkpoint its config.json records; else None."""
    from dataclasses import asdict

    from .network.arch import default_epochs, parse_arch
    if not (run_dir / "config.json").is_file() or not (run_dir / "metrics.json").is_file():
        return None
    try:
        recorded = run_config(run_dir)
        _, data_sha256 = data_info(config.data)
    except UserError:
        return None
    arch = parse_arch(config.arch).name
    wanted = {**asdict(config), "arch": arch,
              "epochs": default_epochs(arch) if config.epochs is None else config.epochs}
    if any(recorded.get(key) != value for key, value in wanted.items()):
        return None
    if recorded.get("data_identity", {}).get("data_json_sha256") != data_sha256:
        return None
    if recorded.get("checkpoint_sha256") != sha256_file(run_dir / "model.pt"):
        return None
    return json.loads((run_dir / "metrics.json").read_text())


def current_program(pte: Path, checkpoint: str) -> bool:
    """Whether RUN/export/T.pte was exported from this checkpoint with the installed libraries."""
    from .hardware import descriptor
    from .export import versions
    if not pte.is_file():
        return False
    try:
        described = descriptor.read(pte, pte.read_bytes())
    except UserError:
        return False
    return described is not None and described.origin.checkpoint_sha256 == checkpoint and \
        described.versions == versions()


def measure_kinds(pte: Path) -> tuple:
    from .hardware import descriptor
    from .measure import measurements_for
    return measurements_for(descriptor.read(pte).family)


def current_result(path: Path, checkpoint: str, programs: dict, **more):
    """A stage's earlier result (eval.json, bench.json) if it is of this checkpoint and these programs'
    bytes (and matches `more`); else None."""
    if not path.is_file():
        return None
    try:
        result = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(result, dict) or result.get("checkpoint_sha256") != checkpoint:
        return None
    if any(result.get(key) != value for key, value in more.items()):
        return None
    entries = result.get("programs", {})
    if set(entries) != {"eager", *programs}:
        return None
    return result if all(entries[name].get("program_sha256") == sha for name, sha in programs.items()) else None


def refresh_measured_figures(benchmark: dict, artifacts: dict) -> None:
    from .bench import measured_figures
    for name, path in artifacts.items():
        entry = benchmark["programs"][name]
        for key in ("vela", "firmware", "cpu_part"):
            entry.pop(key, None)
        entry.update(measured_figures(path))
