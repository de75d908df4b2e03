"""What the search is charged, and the room it leaves for the final stage.

A candidate is charged the lesser of its wall time and its CPU time (this process's and its finished
children's: QEMU and Vela run as subprocesses). On an idle machine training keeps both cores busy and
a tune keeps to its wall minutes; under load the wall clock stretches far more than the CPU time, so
the load does not cut the search short. torch's threads wait passively (OMP_WAIT_POLICY=PASSIVE, set
before torch loads: the same bits), since spinning threads on a loaded machine burn most of their CPU
time waiting. On a busy machine (the 1-minute load average, less the tune's own training threads, at
least the core count) training's CPU seconds are charged divided by its thread count: what it would
take on idle cores. The search leaves room for the final stage: the current pick's seeds and the other
finalists, each at its own measured cost, capped at RESERVE_SHARE of the budget.
"""
from __future__ import annotations

import contextlib
import os
import time
from typing import Optional

from ..infra.progress import say
from ..infra.torch_settings import TRAINING_THREADS
from .settings import TuneSettings


class Clock:
    """What the budget is measured with: wall seconds, and CPU seconds of this process and of
    its children that have finished (os.times: the emulator runs as a subprocess, waited
    for); with `threads` > 1 (a busy machine: see the module docstring) this process's CPU
    seconds inside `training()` blocks count divided by it. A test hands the search another clock
    with the same methods and `threads`."""

    def __init__(self, threads: int = 1) -> None:
        self.threads = threads
        self.discount = 0.0       # CPU seconds of training blocks not charged

    def wall(self) -> float:
        return time.perf_counter()

    def cpu(self) -> float:
        t = os.times()
        return t.user + t.system + t.children_user + t.children_system - self.discount

    def follow_load(self) -> Optional[float]:
        """Before each candidate: a load that came after the tune began is charged as one that was there
        before (the 1-minute load average finds it a minute or two late). The tune's own training threads
        are counted out of the load average: only a machine whose other work takes every core is busy.
        Returns the load average when busy, else None."""
        load = machine_is_busy(own=TRAINING_THREADS)
        self.threads = TRAINING_THREADS if load is not None else 1
        return load

    @contextlib.contextmanager
    def training(self):
        """A block in which training's threads run side by side on idle cores, and only there."""
        t = os.times()
        began = t.user + t.system
        try:
            yield
        finally:
            t = os.times()
            self.discount += (t.user + t.system - began) * (1 - 1 / self.threads)


def machine_is_busy(own: int = 0) -> Optional[float]:
    """The 1-minute load average when, less `own` (the tune's own runnable threads), it is at least
    the number of cores (every core has other work than the tune's), else None."""
    try:
        load = os.getloadavg()[0]
    except OSError:        # no load average on this system
        return None
    return load if load - own >= (os.cpu_count() or 1) else None


def clock_for_this_machine() -> tuple:
    """(the Clock, what the budget records of the machine). torch's threads are set to wait
    passively, when torch is not loaded yet and the environment does not say otherwise; on a busy
    machine training is charged its CPU seconds divided by its threads."""
    import sys
    passive = "torch" not in sys.modules and "OMP_WAIT_POLICY" not in os.environ
    if passive:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    load = machine_is_busy()
    if load is None:
        return Clock(), {"busy": False, "passive_wait": passive}
    return Clock(threads=TRAINING_THREADS), {"busy": True, "load_average": round(load, 2), "passive_wait": passive}


def say_machine(machine: dict, quiet: bool) -> None:
    """A busy machine's charge in one line, once the settings have passed their checks (a user
    error stays one line)."""
    if machine["busy"]:
        say(f"  busy machine (load average {machine['load_average']:.1f} on {os.cpu_count()} cores): candidates are "
            f"charged CPU time, their training's divided by its {TRAINING_THREADS} threads" +
            (", which wait passively" if machine["passive_wait"] else ""), quiet)


class Meter:
    """Seconds charged since a start on a Clock: the lesser of wall and CPU seconds (see the
    module docstring), and the wall seconds on their own."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.wall0, self.cpu0 = clock.wall(), clock.cpu()

    def wall(self) -> float:
        return self.clock.wall() - self.wall0

    def charged(self) -> float:
        return min(self.wall(), self.clock.cpu() - self.cpu0)


def measured_costs(study, settings: TuneSettings) -> list:
    from optuna.trial import TrialState
    return [trial_costs(t.user_attrs, settings) for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
            if "cost" in t.user_attrs and "repeat_of" not in t.user_attrs]


def trial_costs(attrs: dict, settings: TuneSettings) -> dict:
    """A measured candidate's charged seconds: in all, per training epoch, and outside training as a
    seed of the pick would be charged (its export and scoring, and the check on the benchmark split
    estimated from its own scoring of the val split)."""
    return {"cost": attrs["cost"], "epoch": attrs.get("training_cost", attrs["cost"]) / settings.candidate_epochs,
            "rest": max(0.0, attrs["cost"] - attrs.get("training_cost", attrs["cost"])) + attrs.get("check_cost", 0.0)}


def own_retraining(candidate: dict, settings: TuneSettings) -> float:
    """A measured candidate's trainings as the pick, one a seed, from its own cost per epoch and outside
    training (the other finalists are trained only while they fit: finalists_of)."""
    return settings.pick_seeds * training_seconds(**own_costs(candidate, settings), settings=settings)


def retraining_seconds(epoch: float, rest: float, settings: TuneSettings) -> float:
    """The final stage's trainings (final_trainings) of --epochs epochs at `epoch` seconds each, plus
    each one's `rest` seconds outside training (export and scoring)."""
    return final_trainings(settings) * training_seconds(epoch, rest, settings)


def training_seconds(epoch: float, rest: float, settings: TuneSettings) -> float:
    """One training of --epochs epochs at `epoch` seconds each, and its export and scoring."""
    return settings.epochs * epoch + rest


def final_trainings(settings: TuneSettings) -> int:
    """Trainings after the search: each finalist with the tune's seed (the pick's among them), and the
    pick with each other seed."""
    return settings.finalists + settings.pick_seeds - 1


def own_costs(candidate: dict, settings: TuneSettings) -> dict:
    costs = trial_costs(candidate, settings)
    return {"epoch": costs["epoch"], "rest": costs["rest"]}


def next_trial_fits(elapsed: float, expected: float, budget: float, retraining: float) -> bool:
    """Whether one more candidate of `expected` seconds, and after it the final retraining
    (`retraining` seconds), still end within `budget` seconds."""
    return elapsed + expected + retraining <= budget
