"""What the study's trials say: earlier figures of an architecture, each trial as a candidate of
tune.json, the Pareto front, and the one line a person reads of each trial.
"""
from __future__ import annotations

import contextlib
import logging
from typing import Optional

from .selection import pick_within
from .settings import DIRECTIONS, OBJECTIVES, PROBE_FIELDS, SPACE, STUDY_DB, STUDY_NAME, TuneSettings
from .study import shown_url, study_settings


def earlier_trial(study, arch: str, state: str, key: str):
    """The first trial of `arch` in `state` (a TrialState's name) that recorded `key`, or None."""
    from optuna.trial import TrialState
    for trial in study.get_trials(deepcopy=False, states=(TrialState[state],)):
        if trial.user_attrs.get("arch") == arch and key in trial.user_attrs:
            return trial
    return None


def measured_before(study, arch: str) -> Optional[dict]:
    """The figures of a finished trial of the same architecture (same settings, same seed: the
    same model), marked as a repeat; None when it is new."""
    trial = earlier_trial(study, arch, "COMPLETE", "val_accuracy")
    if trial is None:
        return None
    figures = {k: trial.user_attrs[k] for k in CANDIDATE_FIELDS if k in trial.user_attrs}
    return {**figures, "seconds": 0.0, "cost": 0.0, "repeat_of": trial.number}


def probed_before(study, arch: str) -> Optional[dict]:
    """The probe figures of an earlier trial of `arch` that was not trained, or None."""
    trial = earlier_trial(study, arch, "PRUNED", "npu_ms")
    return None if trial is None else {"probe": {k: trial.user_attrs[k] for k in PROBE_FIELDS},
                                       "number": trial.number}
CANDIDATE_FIELDS = ("arch", "val_accuracy", "val_correct", "val_images", "npu_ms", "sram_bytes", "program_bytes",
                    "mcu_instructions", "macs", "params", "utilisation_total", "seconds", "cost", "training_cost",
                    "check_cost", "run", "repeat_of", "pruned")


def candidate_of(trial) -> dict:
    attrs = trial.user_attrs
    entry = {"number": trial.number, "state": trial.state.name,
             **{key: attrs[key] for key in CANDIDATE_FIELDS if key in attrs}}
    entry.setdefault("arch", attrs.get("arch"))
    if trial.constraints:
        entry["feasible"] = all(value <= 0 for value in trial.constraints.values())
    if "error" in attrs:
        entry["error"] = attrs["error"]
    if "worker" in attrs:
        entry["worker"] = attrs["worker"]
    if "failed_trial" in trial.system_attrs:    # run again: its first trial's worker stopped (HEARTBEAT_SECONDS)
        entry["retry_of"] = trial.system_attrs["failed_trial"]
    return entry


def front_of(study) -> list:
    """The Pareto front's candidates, fastest first, a repeated architecture once (its first trial, the
    one measured)."""
    front = {}
    for trial in sorted(study.best_trials, key=lambda t: t.number):
        front.setdefault(trial.user_attrs["arch"], candidate_of(trial))
    return sorted(front.values(), key=lambda c: (c["npu_ms"], -c["val_accuracy"]))


def summarize(study, settings: TuneSettings, left: Optional[float] = None) -> dict:
    """What tune.json holds of the search: every candidate, the front, and the pick (pick_within
    the `left` seconds of the budget; None: no limit)."""
    from optuna.trial import TrialState
    trials = [t for t in study.get_trials(deepcopy=False)
              if t.state in (TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED)]
    candidates = [candidate_of(t) for t in trials]
    pareto = front_of(study)
    storage = shown_url(settings.storage or f"sqlite:///{settings.out / STUDY_DB}")
    return {"study": {"name": STUDY_NAME, "storage": storage,
                      "sampler": "optuna TPESampler (multivariate, multi-objective)",
                      "objectives": dict(zip(OBJECTIVES, DIRECTIONS)), "space": {k: list(v) for k, v in SPACE.items()},
                      **study_settings(settings)},
            "candidates": candidates, "pareto": pareto,
            "best": pick_within(pareto, settings, left)}


def candidate_line(trial) -> str:
    attrs = trial.user_attrs
    if "error" in attrs:
        return f"  #{trial.number} {attrs.get('arch', '?')}: failed: {attrs['error']}"
    if "pruned" in attrs:
        return f"  #{trial.number} {attrs['arch']}: not trained: {attrs['pruned']} ({attrs['seconds']:.0f} s)"
    if "val_accuracy" not in attrs:
        return f"  #{trial.number} {attrs.get('arch', '?')}: {trial.state.name.lower()}"
    from ..infra.stats import entry_accuracy
    repeat = f", as #{attrs['repeat_of']}" if "repeat_of" in attrs else ""
    val = entry_accuracy(attrs, key="val_accuracy", prefix="val_")
    return (f"  #{trial.number} {attrs['arch']}: val {val}, NPU {attrs['npu_ms']:.4f} ms, "
            f"{attrs['program_bytes']:,} B ({attrs['seconds']:.0f} s{repeat})")


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


def taken_over(study, number: int, error: ValueError) -> bool:
    """Whether `error` is Optuna refusing to record trial `number` because another worker has failed it: its
    heartbeat had stopped (HEARTBEAT_SECONDS), and the candidate is run again there."""
    return str(error).startswith("Cannot tell a ") and study.trials[number].state.name == "FAIL"
