"""After the search: the finalists trained like the pick and read on the selection split, and the
pick trained with each of --pick-seeds seeds, scored on the test and benchmark splits (the benchmark
split, five times larger, is where its accuracy is judged) and exported for the Cortex-M55.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from ..infra.progress import console, say
from .budget import Clock, Meter
from .candidates import candidate_figures, export_program, npu_accuracy, npu_counts, read_right
from .settings import MCU_TARGET, TuneSettings


def run_finalists(finalists: list, settings: TuneSettings, quiet: bool, clock: Optional[Clock] = None) -> list:
    """Each finalist trained like the pick (--epochs, the tune's seed) into OUT/finalists/NNNN, exported
    for the target and read on the selection split on the NPU reference: its candidate figures, with
    select_correct, select_images, select_accuracy, its run, its program and seconds."""
    from ..data import select_split
    from ..infra.stats import entry_accuracy
    clock = clock or Clock()
    images, labels = select_split(settings.data)
    taught = f", taught by {settings.teacher}" if settings.teacher else ""
    entries = []
    for i, candidate in enumerate(finalists, 1):
        say(f"[bold cyan]── finalist {i} of {len(finalists)}: #{candidate['number']} {candidate['arch']}, "
            f"{settings.epochs} epochs{taught}[/]", quiet)
        meter = Meter(clock)
        run_dir = settings.out / "finalists" / f"{candidate['number']:04d}"
        _, npu_pte = train_and_export(candidate["arch"], settings, settings.seed, run_dir, quiet, clock)
        with console.status(f"reading the selection split on {settings.target}"):
            counts = read_right(npu_pte, images, labels)
        entry = {**{key: candidate[key] for key in ("number", "arch", "val_accuracy", "val_correct", "val_images",
                                                    "npu_ms", "program_bytes") if key in candidate},
                 "select_correct": counts["correct"], "select_images": counts["images"],
                 "select_accuracy": counts["correct"] / counts["images"], "run": str(run_dir), "program": str(npu_pte),
                 "seconds": round(meter.wall(), 1), "cost": round(meter.charged(), 1)}
        say(f"  selection split: {entry_accuracy(entry, key='select_accuracy', prefix='select_')}", quiet)
        entries.append(entry)
    return entries


def retrain_best(arch: str, finalist: dict, settings: TuneSettings, quiet: bool,
                 clock: Optional[Clock] = None) -> dict:
    """The pick's run with the tune's seed (its `finalist`'s run and program), exported for the
    Cortex-M55 too, and scored on the test and benchmark splits; with --pick-seeds N, the pick trained
    with the next N-1 seeds too (OUT/best-seedS) and scored alike."""
    clock = clock or Clock()
    first_run = Path(finalist["run"])
    first, npu_pte = train_pick(arch, settings, settings.seed, first_run, quiet, clock,
                                program=Path(finalist["program"]))
    with console.status(f"exporting {MCU_TARGET}"):
        mcu_pte = export_program(first_run, MCU_TARGET)
    figures = candidate_figures(arch, npu_pte, mcu_pte, npu_accuracy(npu_pte, settings.data, "val"))
    seeds = [first]
    for seed in range(settings.seed + 1, settings.seed + settings.pick_seeds):
        say(f"[bold cyan]── {arch} with seed {seed}[/]", quiet)
        seeds.append(train_pick(arch, settings, seed, settings.out / f"best-seed{seed}", quiet, clock)[0])
    final = {**figures, "test_accuracy": first["test_accuracy"], "test_correct": first["test_correct"],
             "test_images": first["test_images"], "test_accuracy_eager": first["test_accuracy_eager"],
             "epochs": settings.epochs, "programs": {settings.target: str(npu_pte), MCU_TARGET: str(mcu_pte)},
             "seeds": seeds, "test_accuracy_worst": min(entry["test_accuracy"] for entry in seeds),
             "benchmark_accuracy_worst": min(entry["benchmark_accuracy"] for entry in seeds)}
    if settings.teacher:
        final["teacher"] = json_of_teacher(Path(first["run"]))
    return final


def json_of_teacher(run_dir: Path) -> dict:
    """The teacher as the pick's run recorded it: path, checkpoint sha256, a and T."""
    import json
    return json.loads((run_dir / "metrics.json").read_text())["teacher"]


def train_and_export(arch: str, settings: TuneSettings, seed: int, run_dir: Path, quiet: bool,
                     clock: Clock) -> tuple:
    """`arch` trained with the full settings and `seed` into run_dir, and exported for the NPU target:
    (the training's metrics, the program's path)."""
    from ..train import train
    with clock.training():
        metrics = train(settings.train_config(arch, settings.epochs, seed), run_dir, quiet=quiet)
    with console.status(f"exporting {settings.target}"):
        return metrics, export_program(run_dir, settings.target)


def train_pick(arch: str, settings: TuneSettings, seed: int, run_dir: Path, quiet: bool,
               clock: Optional[Clock] = None, program: Optional[Path] = None) -> tuple:
    """Train the pick with one seed, export it for the NPU target (`program`: that training and its
    program are already in run_dir, a finalist's, and are not made again) and score it on the test and
    benchmark splits on the NPU reference: ({seed, test_accuracy, test_correct, test_images,
    test_accuracy_eager, benchmark_accuracy, benchmark_correct, benchmark_images, run}, the program's
    path). The counts are kept so that an interval can be given for each seed; the benchmark split,
    five times test, is the one the pick's accuracy is judged on."""
    if program is None:
        metrics, npu_pte = train_and_export(arch, settings, seed, run_dir, quiet, clock or Clock())
    else:
        import json
        metrics, npu_pte = json.loads((run_dir / "metrics.json").read_text()), program
    with console.status(f"checking {settings.target} on the test split"):
        test = npu_counts(npu_pte, settings.data, "test")
    with console.status(f"checking {settings.target} on the benchmark split"):
        benchmark = npu_counts(npu_pte, settings.data, "benchmark")
    return {"seed": seed, "test_accuracy": test["correct"] / test["images"], "test_correct": test["correct"],
            "test_images": test["images"], "test_accuracy_eager": metrics["test_accuracy"],
            "benchmark_accuracy": benchmark["correct"] / benchmark["images"],
            "benchmark_correct": benchmark["correct"], "benchmark_images": benchmark["images"],
            "run": str(run_dir)}, npu_pte
