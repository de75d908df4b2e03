"""Architecture search for an Ethos-U target, built on Optuna: `tinyrps tune`.

    settings    the search's constants and TuneSettings (torch-free)
    space       the search space: Optuna parameters <-> architecture specs
    study       the Optuna study and its storage (SQLite, a journal, PostgreSQL across machines)
    trials      what the study holds: each trial as a candidate, the front, the lines a person reads
    candidates  one candidate: probe, train briefly, export, measure
    budget      the clocks: what a candidate is charged, and the room left for the final stage
    selection   the pick of the front, and the finalists
    final       the finalists trained and read on the selection split; the pick's seeds

The search (here): each candidate is drawn by multi-objective TPE (accuracy up, NPU latency down,
program size down; --max-npu-ms and --max-program-bytes are constraints), starting from the
hand-picked ANCHOR. A candidate whose untrained network Vela estimates over LATENCY_SLACK times the
current pick's latency is not trained (an Optuna pruned trial). The others are trained for
--candidate-epochs, exported for the target and measured (int8 validation accuracy on the TOSA
reference, Vela's latency and SRAM, the program's size). The search runs while the next candidate and
the final stage fit the --minutes budget (tinyrps.tune.budget). Then the pick of the front and the
faster candidates with the best validation accuracy are the finalists: each trained like the pick and
read on the selection split; the pick is the fastest finalist at SELECT_ACCURACY, and it is trained
with --pick-seeds seeds, each scored on the test and benchmark splits, and exported for the
Cortex-M55 too. With --teacher RUN every training distils from RUN (tinyrps.train).

Writes OUT/tune.json ({"candidates", "pareto", "finalists", "best", "final", "budget", "study"}),
OUT/tune.png, OUT/candidates/NNNN/ (one run per candidate), OUT/finalists/NNNN/ and, with
--pick-seeds N, OUT/best-seedS/. The measurements behind the rules and constants (the searches, their
budgets under load, the probe's error) are in docs/benchmarks.md.
"""
from __future__ import annotations

import os
import statistics
from pathlib import Path
from typing import Optional

from ..infra.artifacts.files import atomic_write_json
from ..infra.errors import UserError
from ..infra.progress import progress_bar, say
from ..infra.torch_settings import TRAINING_THREADS
from .budget import Clock, Meter, clock_for_this_machine, measured_costs, next_trial_fits, say_machine, trial_costs
from .candidates import benchmark_images, evaluate_candidate, objective, probe_candidate
from .final import retrain_best, run_finalists
from .selection import choose_finalist, finalists_of, retraining_estimate
from .settings import GRACE_SECONDS, MAX_REPEATS, MCU_TARGET, RESERVE_SHARE, TUNE_JSON, TUNE_PLOT, TuneSettings
from .study import open_study
from .trials import candidate_line, front_of, quiet_optuna_errors, summarize, taken_over


def tune(settings: TuneSettings, quiet: bool = False) -> dict:
    """Search, write OUT/tune.json and OUT/tune.png, retrain the pick; returns what tune.json holds."""
    settings.data, settings.out = Path(settings.data).resolve(), Path(settings.out).resolve()
    if settings.teacher is not None:
        settings.teacher = Path(settings.teacher).resolve()
    clock, machine = clock_for_this_machine()      # before anything loads torch
    check_settings(settings)
    # a storage of its own is opened, or refused, before anything is made in --out
    study = open_study(settings) if settings.storage else None
    settings.out.mkdir(parents=True, exist_ok=True)
    if study is None:
        study = open_study(settings)
    say_machine(machine, quiet)
    spent = search(study, settings, quiet, clock=clock)
    left = settings.minutes * 60.0 - spent["charged_seconds"]
    result = {**summarize(study, settings, left), "budget": {**spent, "machine": machine}}
    if not result["candidates"] or not any(c["state"] == "COMPLETE" for c in result["candidates"]):
        raise UserError(f"no candidate finished within {settings.minutes:g} minutes: give the search more "
                        "--minutes")
    if settings.retrain and result["best"]:
        meter = Meter(clock)
        result["finalists"] = run_finalists(finalists_of(result["pareto"], result["best"], settings, left),
                                            settings, quiet, clock)
        pick = choose_finalist(result["finalists"])
        result["best"] = next(c for c in result["pareto"] if c["number"] == pick["number"])
        result["final"] = retrain_best(pick["arch"], pick, settings, quiet, clock)
        result["final"].update(seconds=round(meter.wall(), 1), cost=round(meter.charged(), 1))
    write_outputs(result, settings.out)
    return result


def check_settings(settings: TuneSettings) -> None:
    from ..hardware.families import family_of_target
    from ..measure import measurements_for
    if not family_of_target(settings.target).tunable:
        raise UserError(f"--target must be an Ethos-U target (e.g. ethos-u85-128), not {settings.target}")
    mcu_family = family_of_target(MCU_TARGET)
    missing = family_of_target(settings.target).available() or mcu_family.available() or \
        next(filter(None, (m.missing() for m in measurements_for(mcu_family.name))), None)
    if missing:
        raise UserError(f"cannot tune: {missing}")
    if not (settings.data / "train.npz").is_file():
        raise UserError(f"no data set in {settings.data}: create it with `tinyrps data --out {settings.data}`")
    if settings.retrain:        # the pick is checked on it: say so now, not after the search
        benchmark_images(settings.data)
    if settings.minutes <= 0:
        raise UserError(f"--minutes must be positive, got {settings.minutes:g}")
    for name, value in (("--max-npu-ms", settings.max_npu_ms), ("--max-program-bytes", settings.max_program_bytes)):
        if value is not None and value <= 0:
            raise UserError(f"{name} must be positive, got {value}")
    if settings.pick_seeds < 1:
        raise UserError(f"--pick-seeds must be at least 1, got {settings.pick_seeds}")
    if settings.finalists < 1:
        raise UserError(f"--finalists must be at least 1, got {settings.finalists}")
    if settings.trials is not None and settings.trials < 1:
        raise UserError(f"--trials must be at least 1, got {settings.trials}")
    check_teacher(settings)


def check_teacher(settings: TuneSettings) -> None:
    """A bad --teacher (or a and T without one) is one line before any candidate trains."""
    from ..infra.artifacts.records import data_info
    from ..train import check_distillation, open_teacher
    config = settings.train_config("tinyrps", 1, settings.seed)
    check_distillation(config, settings.out / "finalists")
    if settings.teacher is not None:
        if settings.out in Path(config.teacher).parents:
            raise UserError(f"--teacher {settings.teacher} is inside --out {settings.out}, which the tune writes: "
                            "give a run outside it")
        info, _ = data_info(settings.data)
        open_teacher(config.teacher, settings.data, info)
        settings.distill_alpha, settings.distill_temperature = config.distill_alpha, config.distill_temperature


def search(study, settings: TuneSettings, quiet: bool, clock: Optional[Clock] = None,
           evaluate=evaluate_candidate, probe=probe_candidate) -> dict:
    """Run trials one at a time while the next one is expected to end within the budget, leaving
    room in it for the final retraining (retraining_estimate). Time is charged as the module
    docstring says, on `clock` (default: the process's own). Returns what the search spent:
    {minutes, charged and wall seconds, candidates measured, those not trained (probe_limit), the last
    retraining estimate}."""
    budget = settings.minutes * 60.0
    meter = Meter(clock or Clock())
    # a resumed study's candidates are measures of the next one too
    costs, done, repeats, slow = measured_costs(study, settings), 0, 0, 0
    busy_from = 0 if meter.clock.threads > 1 else None    # the first candidate charged as on a busy machine
    with progress_bar(quiet) as bar:
        task = bar.add_task("tune", total=round(budget), status="")

        def status_line(text: str) -> None:
            bar.update(task, completed=min(meter.charged(), budget), status=text)

        while True:
            # after the first candidate of this process (before it, the tune's start decided)
            load = meter.clock.follow_load() if done else None
            if load is not None and busy_from is None:
                busy_from = len(costs)
                say(f"  the machine is busy now (load average {load:.1f} on {os.cpu_count()} cores, the tune's own "
                    f"{TRAINING_THREADS} threads counted out): candidates from here on are charged as on a busy "
                    "machine", quiet)
            charged = meter.charged()
            expected = statistics.median(c["cost"] for c in costs) if costs else 0.0
            retraining = min(retraining_estimate(costs, settings, front_of(study) if costs else None),
                             RESERVE_SHARE * budget)
            if settings.trials is not None and done >= settings.trials:
                break
            if not next_trial_fits(charged, expected, budget, retraining):
                say(f"  budget: {charged:.0f} of {budget:.0f} s spent; the next candidate (~{expected:.0f} s) and the "
                    f"retraining (~{retraining:.0f} s) would pass it: {len(costs)} candidates measured", quiet)
                break
            if repeats >= MAX_REPEATS:
                say(f"  the sampler proposed only measured architectures {MAX_REPEATS} times in a row: "
                    "the search has converged", quiet)
                break
            finished = run_trial(study, settings, status_line, meter.clock, evaluate, probe, quiet)
            done += 1
            for trial in finished:
                say(candidate_line(trial), quiet)
                repeats = repeats + 1 if "repeat_of" in trial.user_attrs else 0
                slow += trial.state.name == "PRUNED"
                # a repeat costs nothing; a candidate not trained is no measure of the next one's cost
                attrs = trial.user_attrs
                if trial.state.name == "COMPLETE" and "repeat_of" not in attrs and "cost" in attrs:
                    costs.append(trial_costs(attrs, settings))
        measured = len(costs)
        bar.update(task, completed=round(budget),
                   status=f"{done} trial{'s' * (done != 1)}, {measured} candidate{'s' * (measured != 1)} measured, "
                          f"{slow} not trained")
    return {"minutes": settings.minutes, "charged_seconds": round(meter.charged(), 1),
            "wall_seconds": round(meter.wall(), 1), "measured": len(costs), "not_trained": slow,
            "retraining_estimate_seconds": round(retraining, 1), "busy_from_candidate": busy_from}


def run_trial(study, settings: TuneSettings, status_line, clock: Clock, evaluate, probe, quiet: bool) -> list:
    """One trial of this process's: the trials it finished (none where another worker took it over,
    which a shared storage allows; that candidate is then run again)."""
    finished, started = [], []
    try:
        with quiet_optuna_errors():
            # the callback hands over this process's trial (with a shared storage, others add theirs)
            study.optimize(objective(settings, status_line, clock, evaluate, probe, started),
                           n_trials=1, catch=(UserError,),
                           callbacks=[lambda _study, trial: finished.append(trial)])
    except ValueError as e:
        if not (started and taken_over(study, started[-1], e)):
            raise
        say(f"  #{started[-1]}: failed by another worker, which found this one silent for over "
            f"{GRACE_SECONDS} s (a paused process?): its candidate is run again", quiet)
    return finished


def write_outputs(result: dict, out: Path) -> None:
    from ..interfaces.plots import plot_tune
    atomic_write_json(out / TUNE_JSON, result)
    plot_tune(result["candidates"], result["pareto"], result.get("best"), out / TUNE_PLOT, result.get("finalists"))
