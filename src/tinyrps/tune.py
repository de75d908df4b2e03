"""Architecture search for an Ethos-U target, built on Optuna: `tinyrps tune`.

Each candidate is an architecture spec (tinyrps.model) drawn from a small space:
channel widths of three convolutions, whether the second and third halve the
feature map by a stride or by a max-pool, one more pool (2x2 or 3x3) before the
classifier or none, and the width of the hidden fully connected layer. A candidate is trained
briefly (the validation split picks its checkpoint; the test split is never
read), exported for the NPU target and for the Cortex-M55, and measured:

    val_accuracy       int8, the target program's TOSA graph on the validation split (npu-ref)
    npu_ms, sram_bytes Vela's estimate for the target (the measure stage's)
    program_bytes      size of the target's .pte
    mcu_instructions   Cortex-M55 instructions per inference, on the emulated board

Optuna's multi-objective TPE sampler proposes candidates for three objectives
(accuracy up, NPU latency down, program size down); `--max-npu-ms` and
`--max-program-bytes` are Optuna constraints, so `study.best_trials` is the
Pareto front of the candidates that meet them. The study lives in an Optuna
storage: SQLite in the output folder by default (an interrupted tune resumes
where it stopped), or any storage URL several workers share (`--storage`).

When the time budget is spent (it covers the final retraining too), the best
candidate (the lowest NPU latency among the front's candidates whose validation
accuracy is within ACCURACY_MARGIN of the front's best, then the smallest program)
is trained again for TUNED_EPOCHS (or --epochs), exported and scored on the test
split on the NPU reference.

Writes OUT/tune.json ({"candidates", "pareto", "best", ...}), OUT/tune.png,
OUT/candidates/NNNN/ (one run per candidate), OUT/best/ (the retrained pick) and, with
--pick-seeds N, OUT/best-seedS/ (the pick trained with the other seeds).
"""
from __future__ import annotations

import contextlib
import logging
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from .arch import TUNED_EPOCHS
from .artifacts import atomic_write_json
from .errors import UserError, one_line
from .progress import console, progress_bar, say

STUDY_NAME = "tinyrps-tune"
STUDY_DB = "study.db"
TUNE_JSON = "tune.json"
TUNE_PLOT = "tune.png"
MCU_TARGET = "cortex-m55"
# Candidates whose validation accuracy is this close to the front's best count as equally accurate
# (a few images of the validation split); the fastest of them is the pick.
ACCURACY_MARGIN = 0.005
# Consecutive proposals of already measured architectures after which the search stops.
MAX_REPEATS = 20
OBJECTIVES = ("val_accuracy", "npu_ms", "program_bytes")
DIRECTIONS = ("maximize", "minimize", "minimize")

# The search space: Optuna categorical parameters.
SPACE = {
    "conv1": (8, 16, 24),
    "reduce1": ("none", "pool"),
    "conv2": (16, 32, 48),
    "reduce2": ("stride", "pool"),
    "conv3": (32, 48, 64),
    "reduce3": ("stride", "pool", "pool3"),
    "final_pool": ("none", "p", "p3"),
    "fc": (0, 32, 64, 80, 128),
}


@dataclass
class TuneSettings:
    data: Path
    out: Path
    target: str = "ethos-u85-128"
    minutes: float = 10.0
    max_npu_ms: Optional[float] = None
    max_program_bytes: Optional[int] = None
    storage: Optional[str] = None
    candidate_epochs: int = 2      # short training of each candidate
    epochs: int = TUNED_EPOCHS     # the final retraining
    pick_seeds: int = 1            # the pick is trained with this many seeds: seed, seed + 1, ...
    seed: int = 0
    trials: Optional[int] = None   # at most this many candidates in this process (default: the budget decides)
    retrain: bool = True


def arch_of(params: dict) -> str:
    """Optuna parameters -> an architecture spec that `--arch` accepts."""
    layers = [f"c{params['conv1']}"] + (["p"] if params["reduce1"] == "pool" else [])
    for conv, reduce in (("conv2", "reduce2"), ("conv3", "reduce3")):
        how = params[reduce]
        layers.append(f"c{params[conv]}" + ("s2" if how == "stride" else ""))
        if how != "stride":
            layers.append({"pool": "p", "pool3": "p3"}[how])
    if params["final_pool"] != "none":
        layers.append(params["final_pool"])
    if params["fc"]:
        layers.append(f"f{params['fc']}")
    return "-".join(layers)


def suggest(trial) -> str:
    return arch_of({name: trial.suggest_categorical(name, list(choices)) for name, choices in SPACE.items()})


# --- the study ------------------------------------------------------------------------------------

def storage_for(settings: TuneSettings):
    """The Optuna storage: `--storage` (an RDB URL such as sqlite:///path.db, or journal:PATH for
    Optuna's journal file), else SQLite in the output folder."""
    import optuna
    url = settings.storage or f"sqlite:///{(settings.out / STUDY_DB).resolve()}"
    if url.startswith("journal:"):
        from optuna.storages.journal import JournalFileBackend
        path = Path(url.removeprefix("journal:"))
        path.parent.mkdir(parents=True, exist_ok=True)
        return optuna.storages.JournalStorage(JournalFileBackend(str(path)))
    if "://" not in url:
        raise UserError(f"--storage '{url}' is not a storage URL: use sqlite:///PATH.db, another database URL "
                        "(postgresql://..., mysql://...) or journal:PATH")
    try:
        return optuna.storages.RDBStorage(url)
    except Exception as e:  # noqa: BLE001 - a bad URL, a missing driver, an unreachable server
        raise UserError(f"cannot open the study storage {url}: {one_line(e, 200)}") from None


def open_study(settings: TuneSettings):
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        study = optuna.create_study(study_name=STUDY_NAME, storage=storage_for(settings),
                                    directions=list(DIRECTIONS), load_if_exists=True)
    except ValueError as e:   # the stored study has other directions
        raise UserError(f"the study in {settings.storage or settings.out / STUDY_DB} is not a tinyrps tune "
                        f"study ({e}): use another --out or --storage") from None
    stored = study.user_attrs.get("settings")
    mine = study_settings(settings)
    if stored is None:
        study.set_user_attr("settings", mine)
    elif stored != mine:
        raise UserError(f"the study in {settings.storage or settings.out / STUDY_DB} was made with other settings "
                        f"({describe_difference(stored, mine)}): use another --out or --storage, or the same settings")
    study.sampler = sampler_for(settings, len(study.trials))
    return study


def sampler_for(settings: TuneSettings, trials_so_far: int):
    """Multi-objective TPE. Its random start is seeded by the seed and the trials already in the
    study, so a resumed search draws new candidates (the same seed alone would repeat the first
    ones) and one worker's search is reproducible. Workers sharing a storage also mix in their
    process id: started together, they would otherwise draw the same candidates."""
    import os

    import optuna
    seed = settings.seed + trials_so_far + (os.getpid() << 16 if settings.storage else 0)
    return optuna.samplers.TPESampler(seed=seed % 2**32, multivariate=True, n_startup_trials=6)


def study_settings(settings: TuneSettings) -> dict:
    """What makes trials of one study comparable: the same target, data, constraints and training."""
    return {"target": settings.target, "data": str(settings.data.resolve()), "max_npu_ms": settings.max_npu_ms,
            "max_program_bytes": settings.max_program_bytes, "candidate_epochs": settings.candidate_epochs,
            "seed": settings.seed}


def describe_difference(stored: dict, mine: dict) -> str:
    return ", ".join(f"{k} {stored.get(k)!r} there, {mine.get(k)!r} here" for k in mine if stored.get(k) != mine.get(k))


# --- one candidate --------------------------------------------------------------------------------

def evaluate_candidate(arch: str, run_dir: Path, settings: TuneSettings, status) -> dict:
    """Train briefly, export for the target and the Cortex-M55, and measure; see the module docstring."""
    from .export import export_target
    from .train import TrainConfig, train
    status("training")
    train(TrainConfig(data=str(settings.data), epochs=settings.candidate_epochs, seed=settings.seed, arch=arch),
          run_dir, quiet=True, test_split=False)
    status(f"export {settings.target}")
    npu_pte = export_target(run_dir, settings.target)
    status("int8 accuracy on npu-ref")
    val = npu_counts(npu_pte, settings.data, "val")
    status(f"export {MCU_TARGET} and count its instructions")
    mcu_pte = export_target(run_dir, MCU_TARGET)
    return {**candidate_figures(arch, npu_pte, mcu_pte, val["correct"] / val["images"]),
            "val_correct": val["correct"], "val_images": val["images"]}


def npu_counts(pte: Path, data_dir: Path, split: str) -> dict:
    """How many images of a split an Ethos-U program reads right on the NPU reference (its TOSA
    graph): {"correct", "images"}, the counts an accuracy's interval needs (tinyrps.stats)."""
    from .data import load_split
    from .devices import open_device
    images, labels = load_split(data_dir, split)
    with open_device("npu-ref", pte) as device:
        return {"correct": int((device.classify(images).argmax(1) == labels).sum()), "images": int(len(labels))}


def npu_accuracy(pte: Path, data_dir: Path, split: str) -> float:
    """Accuracy of an Ethos-U program on a split, on the NPU reference."""
    counts = npu_counts(pte, data_dir, split)
    return counts["correct"] / counts["images"]


def candidate_figures(arch: str, npu_pte: Path, mcu_pte: Path, val_accuracy: float) -> dict:
    """A candidate's figures from the measure stage: Vela's estimate of the NPU program, and the
    Cortex-M55 program's instructions per inference (one QEMU run, the quick measurement)."""
    from .arch import describe_arch
    from .measure import measure
    vela = measure(npu_pte)["vela"]
    firmware = measure(mcu_pte, quick=True)["firmware"]
    described = describe_arch(arch)
    return {"arch": described["spec"], "val_accuracy": val_accuracy, "npu_ms": vela["inference_ms"],
            "sram_bytes": vela["sram_bytes"], "program_bytes": npu_pte.stat().st_size,
            "mcu_instructions": firmware["instructions_per_inference"],
            "macs": described["macs"], "params": described["params"],
            "utilisation_total": vela["utilisation_total"], "run": str(npu_pte.parent.parent)}


def objective(settings: TuneSettings, status_line):
    def run(trial) -> tuple:
        arch = suggest(trial)
        trial.set_user_attr("arch", arch)
        figures = measured_before(trial.study, arch)   # the sampler may propose a measured architecture again
        if figures is None:
            run_dir = settings.out / "candidates" / f"{trial.number:04d}"
            start = time.perf_counter()
            try:
                figures = evaluate_candidate(arch, run_dir, settings,
                                             lambda what: status_line(f"#{trial.number} {arch}: {what}"))
            except UserError as e:
                trial.set_user_attr("error", str(e))
                raise
            figures["seconds"] = round(time.perf_counter() - start, 1)
        for key, value in figures.items():
            trial.set_user_attr(key, value)
        if settings.max_npu_ms is not None:
            trial.set_constraint("npu_ms", figures["npu_ms"] - settings.max_npu_ms)
        if settings.max_program_bytes is not None:
            trial.set_constraint("program_bytes", figures["program_bytes"] - settings.max_program_bytes)
        return tuple(figures[name] for name in OBJECTIVES)
    return run


def measured_before(study, arch: str) -> Optional[dict]:
    """The figures of a finished trial of the same architecture (same settings, same seed: the
    same model), marked as a repeat; None when it is new."""
    from optuna.trial import TrialState
    for trial in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        if trial.user_attrs.get("arch") == arch and "val_accuracy" in trial.user_attrs:
            figures = {k: trial.user_attrs[k] for k in CANDIDATE_FIELDS if k in trial.user_attrs}
            return {**figures, "seconds": 0.0, "repeat_of": trial.number}
    return None


# --- the search -----------------------------------------------------------------------------------

def tune(settings: TuneSettings, quiet: bool = False) -> dict:
    """Search, write OUT/tune.json and OUT/tune.png, retrain the pick; returns what tune.json holds."""
    settings.data, settings.out = Path(settings.data).resolve(), Path(settings.out).resolve()
    check_settings(settings)
    settings.out.mkdir(parents=True, exist_ok=True)
    study = open_study(settings)
    search(study, settings, quiet)
    result = summarize(study, settings)
    if not result["candidates"] or not any(c["state"] == "COMPLETE" for c in result["candidates"]):
        raise UserError(f"no candidate finished within {settings.minutes:g} minutes: give the search more "
                        "--minutes")
    if settings.retrain and result["best"]:
        result["final"] = retrain_best(result["best"]["arch"], settings, quiet)
    write_outputs(result, settings.out)
    return result


def check_settings(settings: TuneSettings) -> None:
    from .families import family_of_target, get_target
    from .measure import measurements_for
    target = get_target(settings.target)
    if target.family != "ethos-u":
        raise UserError(f"--target must be an Ethos-U target (e.g. ethos-u85-128), not {settings.target}")
    mcu_family = family_of_target(MCU_TARGET)
    missing = family_of_target(settings.target).available() or mcu_family.available() or \
        next(filter(None, (m.missing() for m in measurements_for(mcu_family.name))), None)
    if missing:
        raise UserError(f"cannot tune: {missing}")
    if not (settings.data / "train.npz").is_file():
        raise UserError(f"no data set in {settings.data}: create it with `tinyrps data --out {settings.data}`")
    if settings.minutes <= 0:
        raise UserError(f"--minutes must be positive, got {settings.minutes:g}")
    for name, value in (("--max-npu-ms", settings.max_npu_ms), ("--max-program-bytes", settings.max_program_bytes)):
        if value is not None and value <= 0:
            raise UserError(f"{name} must be positive, got {value}")
    if settings.pick_seeds < 1:
        raise UserError(f"--pick-seeds must be at least 1, got {settings.pick_seeds}")
    if settings.trials is not None and settings.trials < 1:
        raise UserError(f"--trials must be at least 1, got {settings.trials}")


def search(study, settings: TuneSettings, quiet: bool) -> None:
    """Run trials one at a time while the next one is expected to end within the budget, leaving
    room in it for the final retraining: a candidate's time, scaled by epochs / candidate epochs,
    for each of the --pick-seeds."""
    budget = settings.minutes * 60.0
    retrain_share = settings.pick_seeds * settings.epochs / settings.candidate_epochs if settings.retrain else 0.0
    start = time.perf_counter()
    durations, done, repeats = [], 0, 0
    with progress_bar(quiet) as bar:
        task = bar.add_task("tune", total=round(budget), status="")

        def status_line(text: str) -> None:
            bar.update(task, completed=min(time.perf_counter() - start, budget), status=text)

        while True:
            elapsed = time.perf_counter() - start
            expected = statistics.median(durations) if durations else 0.0
            if (settings.trials is not None and done >= settings.trials) or \
                    not next_trial_fits(elapsed, expected, budget, retrain_share):
                break
            if repeats >= MAX_REPEATS:
                say(f"  the sampler proposed only measured architectures {MAX_REPEATS} times in a row: "
                    "the search has converged", quiet)
                break
            began, finished = time.perf_counter(), []
            with quiet_optuna_errors():
                # the callback hands over this process's trial (with a shared storage, others add theirs)
                study.optimize(objective(settings, status_line), n_trials=1, catch=(UserError,),
                               callbacks=[lambda _study, trial: finished.append(trial)])
            done += 1
            for trial in finished:
                say(candidate_line(trial), quiet)
                repeats = repeats + 1 if "repeat_of" in trial.user_attrs else 0
                if "repeat_of" not in trial.user_attrs:   # a repeat costs nothing: not a measure of the next one
                    durations.append(time.perf_counter() - began)
        bar.update(task, completed=round(budget), status=f"{done} candidates")


def next_trial_fits(elapsed: float, expected: float, budget: float, retrain_share: float) -> bool:
    """Whether one more candidate of `expected` seconds, and after it the final retraining
    (`retrain_share` candidates' worth), still end within `budget` seconds."""
    return elapsed + expected * (1.0 + retrain_share) <= budget


@contextlib.contextmanager
def quiet_optuna_errors():
    """Optuna logs a caught trial failure with its traceback; the candidate line says it in one line."""
    logger = logging.getLogger("optuna")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def candidate_line(trial) -> str:
    attrs = trial.user_attrs
    if "error" in attrs:
        return f"  #{trial.number} {attrs.get('arch', '?')}: failed: {attrs['error']}"
    if "val_accuracy" not in attrs:
        return f"  #{trial.number} {attrs.get('arch', '?')}: {trial.state.name.lower()}"
    from .stats import entry_accuracy
    repeat = f", as #{attrs['repeat_of']}" if "repeat_of" in attrs else ""
    val = entry_accuracy(attrs, key="val_accuracy", prefix="val_")
    return (f"  #{trial.number} {attrs['arch']}: val {val}, NPU {attrs['npu_ms']:.4f} ms, "
            f"{attrs['program_bytes']:,} B, M55 {attrs['mcu_instructions'] / 1e6:.2f} M instr. "
            f"({attrs['seconds']:.0f} s{repeat})")


# --- results --------------------------------------------------------------------------------------

CANDIDATE_FIELDS = ("arch", "val_accuracy", "val_correct", "val_images", "npu_ms", "sram_bytes", "program_bytes",
                    "mcu_instructions", "macs", "params", "utilisation_total", "seconds", "run", "repeat_of")


def candidate_of(trial) -> dict:
    attrs = trial.user_attrs
    entry = {"number": trial.number, "state": trial.state.name,
             **{key: attrs[key] for key in CANDIDATE_FIELDS if key in attrs}}
    entry.setdefault("arch", attrs.get("arch"))
    if trial.constraints:
        entry["feasible"] = all(value <= 0 for value in trial.constraints.values())
    if "error" in attrs:
        entry["error"] = attrs["error"]
    return entry


def summarize(study, settings: TuneSettings) -> dict:
    from optuna.trial import TrialState
    trials = [t for t in study.get_trials(deepcopy=False) if t.state in (TrialState.COMPLETE, TrialState.FAIL)]
    candidates = [candidate_of(t) for t in trials]
    front = {}
    for trial in sorted(study.best_trials, key=lambda t: t.number):   # a repeated architecture once
        front.setdefault(trial.user_attrs["arch"], candidate_of(trial))
    pareto = sorted(front.values(), key=lambda c: (c["npu_ms"], -c["val_accuracy"]))
    return {"study": {"name": STUDY_NAME, "storage": settings.storage or f"sqlite:///{settings.out / STUDY_DB}",
                      "sampler": "optuna TPESampler (multivariate, multi-objective)",
                      "objectives": dict(zip(OBJECTIVES, DIRECTIONS)), "space": {k: list(v) for k, v in SPACE.items()},
                      **study_settings(settings)},
            "candidates": candidates, "pareto": pareto, "best": pick_best(pareto)}


def pick_best(pareto: list) -> Optional[dict]:
    """The fastest front candidate among those within ACCURACY_MARGIN of the most accurate one,
    then the smallest program."""
    if not pareto:
        return None
    top = max(c["val_accuracy"] for c in pareto)
    close = [c for c in pareto if c["val_accuracy"] >= top - ACCURACY_MARGIN - 1e-12]
    return min(close, key=lambda c: (c["npu_ms"], c["program_bytes"], -c["val_accuracy"]))


def retrain_best(arch: str, settings: TuneSettings, quiet: bool) -> dict:
    """The pick, trained with the full settings into OUT/best, exported, and scored on the test
    split; with --pick-seeds N, trained with the next N-1 seeds too (OUT/best-seedS)."""
    from .export import export_target
    say(f"[bold cyan]── retraining {arch} with the full settings ({settings.epochs} epochs)[/]", quiet)
    first, npu_pte = train_pick(arch, settings, settings.seed, settings.out / "best", quiet)
    with console.status(f"exporting {MCU_TARGET}"):
        mcu_pte = export_target(settings.out / "best", MCU_TARGET)
    figures = candidate_figures(arch, npu_pte, mcu_pte, npu_accuracy(npu_pte, settings.data, "val"))
    seeds = [first]
    for seed in range(settings.seed + 1, settings.seed + settings.pick_seeds):
        say(f"[bold cyan]── {arch} with seed {seed}[/]", quiet)
        seeds.append(train_pick(arch, settings, seed, settings.out / f"best-seed{seed}", quiet)[0])
    return {**figures, "test_accuracy": first["test_accuracy"], "test_correct": first["test_correct"],
            "test_images": first["test_images"], "test_accuracy_eager": first["test_accuracy_eager"],
            "epochs": settings.epochs, "programs": {settings.target: str(npu_pte), MCU_TARGET: str(mcu_pte)},
            "seeds": seeds, "test_accuracy_worst": min(entry["test_accuracy"] for entry in seeds)}


def train_pick(arch: str, settings: TuneSettings, seed: int, run_dir: Path, quiet: bool) -> tuple:
    """Train the pick with one seed, export it for the NPU target and score it on the test split
    on the NPU reference: ({seed, test_accuracy, test_accuracy_eager, run}, the program's path)."""
    from .export import export_target
    from .train import TrainConfig, train
    metrics = train(TrainConfig(data=str(settings.data), epochs=settings.epochs, seed=seed, arch=arch),
                    run_dir, quiet=quiet)
    with console.status(f"exporting {settings.target}"):
        npu_pte = export_target(run_dir, settings.target)
        test = npu_counts(npu_pte, settings.data, "test")
    return {"seed": seed, "test_accuracy": test["correct"] / test["images"], "test_correct": test["correct"],
            "test_images": test["images"], "test_accuracy_eager": metrics["test_accuracy"],
            "run": str(run_dir)}, npu_pte


def write_outputs(result: dict, out: Path) -> None:
    from .plots import plot_tune
    atomic_write_json(out / TUNE_JSON, result)
    plot_tune(result["candidates"], result["pareto"], result.get("best"), out / TUNE_PLOT)


