"""tinyrps tune: an Optuna search on a tiny budget, resumable, shareable between workers; and
scripts/tune_ranking.py, the check of how its short training ranks candidates."""
import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from script_module import load_script

from tinyrps.network.arch import feature_shape
from tinyrps.network.model import ARCHITECTURES, parse_arch
from tinyrps.tune import search
from tinyrps.tune.budget import next_trial_fits, own_retraining
from tinyrps.tune.selection import choose_finalist, finalists_of, pick_best, pick_within, retraining_estimate
from tinyrps.tune.settings import (ACCURACY_MARGIN, DIRECTIONS, LATENCY_SLACK, PICK_ACCURACY, PROBE_ERROR,
                                   RESERVE_SHARE, SELECT_ACCURACY, SPACE, TuneSettings)
from tinyrps.tune.space import arch_of, params_of
from tinyrps.tune.study import enqueue_anchor

TINY = ("--candidate-epochs", "1", "--epochs", "1", "--minutes", "30")


def test_every_point_of_the_space_is_an_architecture_and_both_named_ones_are_in_it():
    specs = {arch_of(dict(zip(SPACE, values))) for values in itertools.product(*SPACE.values())}
    assert len(specs) == len(list(itertools.product(*SPACE.values())))
    for spec in specs:
        parse_arch(spec)
    assert {ARCHITECTURES["tinyrps"], ARCHITECTURES["fast"]} <= specs


def test_the_search_starts_from_the_fast_network_once(tmp_path):
    """The anchor is the study's first trial, enqueued once: not again when the study is opened again."""
    from tinyrps.tune.study import open_study
    assert arch_of(params_of(ARCHITECTURES["fast"])) == ARCHITECTURES["fast"]
    assert params_of("c16-c32-c64") is None     # not a point of the space
    settings = TuneSettings(data=tmp_path, out=tmp_path)
    for _ in range(2):
        study = open_study(settings)
    assert [(t.state.name, arch_of(t.system_attrs["fixed_params"])) for t in study.trials] == \
        [("WAITING", ARCHITECTURES["fast"])]


def test_the_head_is_the_whole_map_or_one_pixel():
    """A one-pixel head pools whatever map the convolutions leave down to 1x1 (each channel's largest value);
    a flattened one keeps the map, which the reductions never bring to one pixel themselves."""
    for values in itertools.product(*SPACE.values()):
        params = dict(zip(SPACE, values))
        size = feature_shape(parse_arch(arch_of(params)))[1]
        assert (size == 1) == (params["head"] == "one-pixel"), arch_of(params)


def test_the_budget_keeps_room_for_the_final_retraining():
    # 10 minutes, 15 s candidates, a retraining worth two candidates (30 s)
    assert next_trial_fits(elapsed=550.0, expected=15.0, budget=600.0, retraining=30.0)
    assert not next_trial_fits(elapsed=560.0, expected=15.0, budget=600.0, retraining=30.0)
    assert next_trial_fits(elapsed=580.0, expected=15.0, budget=600.0, retraining=0.0)   # --no-retrain


def test_the_retraining_is_estimated_from_the_cost_per_epoch(tmp_path):
    """Not from a whole candidate's time scaled by epochs: most of a candidate is export and measurement.
    The final stage trains each finalist once and the pick with each other seed: with two finalists and
    three seeds, four trainings; with the pick alone, three."""
    settings = TuneSettings(data=tmp_path, out=tmp_path, candidate_epochs=2, epochs=10, pick_seeds=3, finalists=2)
    costs = [{"cost": 30.0, "epoch": 5.0, "rest": 20.0}, {"cost": 40.0, "epoch": 6.0, "rest": 28.0},
             {"cost": 20.0, "epoch": 3.0, "rest": 14.0}]
    assert retraining_estimate(costs, settings) == pytest.approx(4 * (10 * 5.0 + 20.0))
    assert retraining_estimate([], settings) == 0.0
    settings.finalists = 1
    assert retraining_estimate(costs, settings) == pytest.approx(3 * (10 * 5.0 + 20.0))
    dear = {"cost": 60.0, "training_cost": 20.0}      # 10 s an epoch, 40 s outside training: as the pick, 3 seeds
    assert own_retraining(dear, settings) == pytest.approx(3 * (10 * 10.0 + 40.0))
    checked = {**dear, "check_cost": 15.0}      # and each seed's check on the benchmark split
    assert own_retraining(checked, settings) == pytest.approx(3 * (10 * 10.0 + 40.0 + 15.0))
    settings.retrain = False
    assert retraining_estimate(costs, settings) == 0.0


def test_the_final_stage_is_estimated_from_what_the_current_front_would_train(tmp_path):
    """The pick's seeds and the other finalist of the front as it stands, each at its own cost: the dear,
    slow networks of the random start do not make the room, nor do cheap, poor ones keep it too small
    for the most accurate faster candidate."""
    settings = TuneSettings(data=tmp_path, out=tmp_path, candidate_epochs=2, epochs=10, pick_seeds=3, finalists=2)
    costs = [{"cost": 60.0, "epoch": 12.0, "rest": 36.0}, {"cost": 50.0, "epoch": 10.0, "rest": 30.0},
             {"cost": 20.0, "epoch": 3.0, "rest": 14.0}, {"cost": 22.0, "epoch": 4.0, "rest": 14.0},
             {"cost": 18.0, "epoch": 3.0, "rest": 12.0}]
    assert retraining_estimate(costs, settings) == pytest.approx(4 * (10 * 4.0 + 14.0))     # no front yet

    def candidate(number, accuracy, ms, epoch_seconds, rest):       # 2 epochs of training
        return {"number": number, "val_accuracy": accuracy, "npu_ms": ms, "program_bytes": 20_000,
                "cost": 2 * epoch_seconds + rest, "training_cost": 2 * epoch_seconds}
    pick = candidate(0, 0.990, 0.04, 4.0, 14.0)          # one training: 10 x 4 + 14 = 54 s
    best_faster = candidate(1, 0.985, 0.03, 5.0, 12.0)   # 62 s
    cheap = candidate(2, 0.950, 0.01, 2.0, 8.0)          # 28 s
    slow = candidate(3, 0.995, 0.20, 12.0, 36.0)
    front = [pick, best_faster, cheap, slow]
    assert retraining_estimate(costs, settings, front) == pytest.approx(3 * 54.0 + 62.0)
    settings.finalists = 1
    assert retraining_estimate(costs, settings, front) == pytest.approx(3 * 54.0)


def test_the_pick_is_made_among_the_candidates_whose_retraining_fits_what_is_left(tmp_path):
    """A dear candidate does not hold back room for itself while the search runs; at the end a cheaper
    one is picked instead when its retraining fits and it is as accurate within the margin, and the
    dear one all the same (past the budget) when none is: time is not bought with accuracy."""
    settings = TuneSettings(data=tmp_path, out=tmp_path, candidate_epochs=2, epochs=10, pick_seeds=3, finalists=1)
    cheap = {"number": 0, "val_accuracy": 0.991, "npu_ms": 0.04, "program_bytes": 30_000, "cost": 20.0,
             "training_cost": 6.0}                          # retraining 3 x (10 x 3 + 14) = 132 s
    dear = {"number": 1, "val_accuracy": 0.992, "npu_ms": 0.03, "program_bytes": 30_000, "cost": 60.0,
            "training_cost": 20.0}                          # retraining 3 x (10 x 10 + 40) = 420 s
    poor = {"number": 2, "val_accuracy": 0.95, "npu_ms": 0.02, "program_bytes": 20_000, "cost": 15.0,
            "training_cost": 3.0}                           # retraining 3 x (10 x 1.5 + 12) = 81 s
    front = [cheap, dear, poor]
    assert pick_within(front, settings, left=500.0)["number"] == 1
    assert pick_within(front, settings, left=None)["number"] == 1
    assert pick_within(front, settings, left=200.0)["number"] == 0
    assert pick_within([dear, poor], settings, left=200.0)["number"] == 1     # poor is far less accurate
    settings.retrain = False
    assert pick_within(front, settings, left=0.0)["number"] == 1


def test_the_finalists_are_the_pick_and_the_most_accurate_faster_candidates_that_fit(tmp_path):
    """The pick, then front candidates faster than it, the most accurate first, while their trainings fit
    beside the pick's three seeds: a poorer one is not taken instead of one that does not fit."""
    settings = TuneSettings(data=tmp_path, out=tmp_path, candidate_epochs=2, epochs=10, pick_seeds=3, finalists=3)

    def candidate(number, accuracy, ms, epoch_seconds):    # 2 epochs of training, 10 s outside it
        return {"number": number, "val_accuracy": accuracy, "npu_ms": ms, "program_bytes": 20_000,
                "cost": 2 * epoch_seconds + 10.0, "training_cost": 2 * epoch_seconds}
    pick = candidate(0, 0.990, 0.040, 3.0)          # one training: 10 x 3 + 10 = 40 s
    slower = candidate(1, 0.995, 0.050, 3.0)
    good = candidate(2, 0.985, 0.030, 3.0)
    dear = candidate(3, 0.980, 0.020, 9.0)          # 100 s
    poor = candidate(4, 0.950, 0.010, 2.0)          # 30 s
    front = [pick, slower, good, dear, poor]
    numbers = lambda chosen: [c["number"] for c in chosen]     # noqa: E731
    assert numbers(finalists_of(front, pick, settings, left=None)) == [0, 2, 3]
    assert numbers(finalists_of(front, pick, settings, left=3 * 40 + 40 + 100)) == [0, 2, 3]
    assert numbers(finalists_of(front, pick, settings, left=3 * 40 + 40 + 99)) == [0, 2]
    assert numbers(finalists_of(front, pick, settings, left=3 * 40)) == [0]
    settings.finalists = 1
    assert numbers(finalists_of(front, pick, settings, left=None)) == [0]


def test_the_pick_is_the_fastest_finalist_at_the_selection_bar_else_the_most_accurate():
    def finalist(number, ms, correct):
        return {"number": number, "npu_ms": ms, "program_bytes": 20_000, "select_correct": correct,
                "select_images": 3000, "select_accuracy": correct / 3000}
    slow, fast, faster = finalist(0, 0.05, 2994), finalist(1, 0.03, 2989), finalist(2, 0.02, 2987)
    assert SELECT_ACCURACY == 0.996
    assert choose_finalist([slow, fast, faster])["number"] == 1          # 2,988 of 3,000 is the bar
    assert choose_finalist([slow, faster])["number"] == 0
    assert choose_finalist([finalist(0, 0.05, 2980), finalist(1, 0.03, 2984), finalist(2, 0.02, 2984)])["number"] == 2
    assert choose_finalist([finalist(0, 0.05, 2980)])["number"] == 0


def test_a_dear_early_pick_does_not_stop_the_search(tmp_path):
    """The room the search leaves for the final stage is capped at RESERVE_SHARE of the budget, whatever
    the current pick costs: one dear, accurate candidate first (as a loaded machine's search found), the
    pick throughout, and cheap ones after. Its own three seeds are estimated at 3 x (10 x 30 + 6) s, past
    the cap; the cheap candidates still fill the rest of the budget."""
    measured, spent = run_search(tmp_path, stretch=4.0, minutes=10.0, dear_first=True)
    assert spent["retraining_estimate_seconds"] == pytest.approx(RESERVE_SHARE * 600)
    assert len(measured) == 1 + int((600 - RESERVE_SHARE * 600 - 66) // 12)


class SlowClock:
    """A machine under load: its wall clock runs `stretch` times faster than the CPU time spent; the
    load average is not read (the search's clock, as a test sets it)."""
    threads = 1

    def __init__(self, stretch: float) -> None:
        self.stretch, self.wall_s, self.cpu_s = stretch, 1000.0, 50.0

    def follow_load(self):
        return None

    def wall(self) -> float:
        return self.wall_s

    def cpu(self) -> float:
        return self.cpu_s

    def spend(self, cpu_seconds: float) -> None:
        self.cpu_s += cpu_seconds
        self.wall_s += cpu_seconds * self.stretch


def run_search(tmp_path, stretch: float, minutes: float, dear_first: bool = False, clock=None) -> tuple:
    """The real search and stopping rule on an in-memory study, with candidates that only spend
    time on `SlowClock`: 6 s of CPU training 2 epochs, 6 s exporting and measuring (with
    `dear_first`, the first candidate trains for 60 s, and is the most accurate)."""
    import optuna

    from tinyrps.network.arch import describe_arch
    clock, measured = clock or SlowClock(stretch), []

    def evaluate(arch, run_dir, settings, status, meter):
        first = dear_first and not measured
        began = meter.charged()
        clock.spend(60.0 if first else 6.0)
        training = meter.charged() - began
        clock.spend(6.0)
        measured.append(arch)
        macs = describe_arch(arch)["macs"]
        return {"arch": arch, "val_accuracy": 0.999 if first else 0.9 + (macs % 97) / 1000, "npu_ms": macs / 1e7,
                "sram_bytes": 1, "program_bytes": 10_000 + macs // 100, "training_cost": training}

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(directions=list(DIRECTIONS), sampler=optuna.samplers.TPESampler(seed=0))
    # one finalist, the pick itself: the final stage is the pick's three seeds
    settings = TuneSettings(data=tmp_path, out=tmp_path, minutes=minutes, candidate_epochs=2, epochs=10, pick_seeds=3,
                            finalists=1)
    spent = search(study, settings, quiet=True, clock=clock, evaluate=evaluate)
    return measured, spent


def run_probed_search(tmp_path, anchor: bool = True, max_npu_ms=None, trials: int = 40) -> tuple:
    """The real search and its probe limit on an in-memory study: candidates that spend 12 s of
    SlowClock's time, probes that spend 3 s; a candidate's NPU estimate is its MACs / 1e7 ms before
    training and after it; the anchor reads 99 %, the others 90-99.6 %. Returns (the study, the
    architectures probed, what the search spent)."""
    import optuna

    from tinyrps.network.arch import describe_arch
    clock, probed = SlowClock(1.0), []

    def evaluate(arch, run_dir, settings, status, meter):
        clock.spend(12.0)
        macs = describe_arch(arch)["macs"]
        accuracy = 0.99 if arch == ARCHITECTURES["fast"] else 0.9 + (macs % 97) / 1000
        return {"arch": arch, "val_accuracy": accuracy, "npu_ms": macs / 1e7, "sram_bytes": 1,
                "program_bytes": 10_000 + macs // 100, "training_cost": 6.0}

    def probe(arch, settings, status):
        clock.spend(3.0)
        probed.append(arch)
        macs = describe_arch(arch)["macs"]
        return {"npu_ms": macs / 1e7, "sram_bytes": 1, "program_bytes": 10_000 + macs // 100}

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(directions=list(DIRECTIONS), sampler=optuna.samplers.TPESampler(seed=0))
    if anchor:
        enqueue_anchor(study)
    settings = TuneSettings(data=tmp_path, out=tmp_path, minutes=60.0, trials=trials, retrain=False,
                            max_npu_ms=max_npu_ms)
    spent = search(study, settings, quiet=True, clock=clock, evaluate=evaluate, probe=probe)
    return study, probed, spent


def picks_in_turn(study) -> list:
    """(each trial, the pick of the candidates trained before it)."""
    from tinyrps.tune.trials import candidate_of
    done, out = [], []
    for trial in study.trials:
        out.append((trial, pick_best(done) if done else None))
        if trial.state.name == "COMPLETE":
            done.append(candidate_of(trial))
    return out


def test_a_candidate_far_slower_than_the_pick_is_not_trained(tmp_path):
    """Once the anchor is measured, a candidate whose NPU estimate before training is over LATENCY_SLACK
    times the pick of its time is not trained: pruned for the sampler, its estimate and why recorded, its
    probe charged but no measure of a candidate's cost; a repeat of it is judged on its figures, at no cost;
    every candidate trained was within the limit of its time."""
    study, probed, spent = run_probed_search(tmp_path)
    assert study.trials[0].user_attrs["arch"] == ARCHITECTURES["fast"] and study.trials[0].state.name == "COMPLETE"
    skipped = [t for t in study.trials if t.state.name == "PRUNED"]
    trained = [t for t in study.trials if t.state.name == "COMPLETE" and "repeat_of" not in t.user_attrs]
    assert skipped and len(trained) > 5
    for trial, pick in picks_in_turn(study)[1:]:
        limit = LATENCY_SLACK * pick["npu_ms"]
        if trial.state.name == "PRUNED":
            assert trial.user_attrs["npu_ms"] > limit and "over 1.5 x the pick's" in trial.user_attrs["pruned"]
        elif "repeat_of" not in trial.user_attrs:
            assert trial.user_attrs["npu_ms"] <= limit
    assert len(probed) == len(set(probed))      # a repeat is not probed again
    first_probes = [t for t in skipped if "repeat_of" not in t.user_attrs]
    assert all(t.user_attrs["cost"] == 3.0 for t in first_probes)
    assert all(t.user_attrs["cost"] == 0.0 for t in skipped if "repeat_of" in t.user_attrs)
    assert spent["measured"] == len(trained) and spent["not_trained"] == len(skipped)
    # every second charged: the candidates' 12 s (and the probe of each after the anchor), the probes' 3 s
    assert spent["charged_seconds"] == pytest.approx(12.0 * len(trained) + 3.0 * len(probed))


def test_without_the_anchor_measured_every_candidate_is_trained(tmp_path):
    """No anchor, no pick to measure candidates against: nothing is probed, nothing is skipped."""
    study, probed, spent = run_probed_search(tmp_path, anchor=False, trials=10)
    assert probed == [] and spent["not_trained"] == 0
    assert all(t.state.name == "COMPLETE" for t in study.trials)


def test_a_candidate_over_the_npu_limit_is_not_trained(tmp_path):
    """With --max-npu-ms, a candidate whose estimate before training is over the limit (with the probe's
    error on top) is not trained, anchor or none."""
    study, probed, spent = run_probed_search(tmp_path, anchor=False, max_npu_ms=0.02, trials=15)
    assert probed and spent["not_trained"] > 0
    for trial in study.trials:
        if trial.state.name == "PRUNED":
            assert trial.user_attrs["npu_ms"] > 0.02 * PROBE_ERROR and "--max-npu-ms 0.02" in trial.user_attrs["pruned"]
        else:
            assert trial.user_attrs["npu_ms"] <= 0.02 * PROBE_ERROR


def test_a_slow_wall_clock_does_not_stop_the_search(tmp_path):
    """Under load (wall time 4x the CPU time), candidates are charged their CPU time: a 5-minute budget,
    12 s candidates and a retraining of 3 x (10 epochs x 3 s + 6 s) = 108 s leave room for 16 of them,
    where charging the wall time would leave room for none after the first."""
    measured, spent = run_search(tmp_path, stretch=4.0, minutes=5.0)
    assert len(measured) >= 10 and spent["measured"] == len(measured)
    assert spent["retraining_estimate_seconds"] == pytest.approx(108.0)
    assert spent["charged_seconds"] + spent["retraining_estimate_seconds"] <= 300.0
    assert spent["wall_seconds"] == pytest.approx(4 * spent["charged_seconds"])


def test_the_budget_still_holds_when_wall_and_cpu_time_agree(tmp_path):
    """Charged time is never more than the wall time, nor less when the CPU keeps up: 12 s candidates
    on a quiet machine fit the same 5 minutes as on the slow one, and no more."""
    measured, spent = run_search(tmp_path, stretch=1.0, minutes=5.0)
    assert len(measured) == (300 - 108) // 12
    assert spent["wall_seconds"] == spent["charged_seconds"] <= 300.0 - 108.0


def test_a_busy_machines_clock_charges_training_per_thread(monkeypatch):
    from tinyrps.tune import budget
    from tinyrps.infra.torch_settings import TRAINING_THREADS
    now = {"times": os.times_result((30.0, 10.0, 5.0, 1.0, 0.0))}     # user, system, children's user and system
    monkeypatch.setattr(budget.os, "times", lambda: now["times"])
    idle, busy = budget.Clock(), budget.Clock(threads=2)
    assert idle.cpu() == busy.cpu() == 46.0
    for clock in (idle, busy):
        now["times"] = os.times_result((30.0, 10.0, 5.0, 1.0, 0.0))
        with clock.training():      # 24 CPU seconds of training, then 6 of export and 3 of QEMU
            now["times"] = os.times_result((52.0, 12.0, 5.0, 1.0, 0.0))
        now["times"] = os.times_result((58.0, 12.0, 8.0, 1.0, 0.0))
    assert idle.cpu() == 46.0 + 24 + 6 + 3
    assert busy.cpu() == 46.0 + 24 / 2 + 6 + 3        # only training runs on both threads
    monkeypatch.setattr(budget.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(budget.os, "getloadavg", lambda: (1.9, 1.0, 1.0))
    clock, machine = budget.clock_for_this_machine()
    assert clock.threads == 1 and machine == {"busy": False, "passive_wait": False}     # torch is loaded here
    monkeypatch.setattr(budget.os, "getloadavg", lambda: (4.5, 4.0, 3.0))
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    clock, machine = budget.clock_for_this_machine()
    assert clock.threads == TRAINING_THREADS
    # torch is loaded in this process already: too late to change how its threads wait
    assert machine == {"busy": True, "load_average": 4.5, "passive_wait": False}
    assert "OMP_WAIT_POLICY" not in os.environ


def test_a_load_that_comes_after_the_start_is_followed_from_the_next_candidate(tmp_path, monkeypatch):
    """The 1-minute load average finds a load a minute or two after it came: from then on candidates are
    charged as on a busy machine. The tune's own training threads are counted out of it."""
    from tinyrps.tune import budget
    from tinyrps.infra.torch_settings import TRAINING_THREADS

    class FollowingClock(SlowClock):
        follow_load = budget.Clock.follow_load
    clock = FollowingClock(stretch=3.0)
    monkeypatch.setattr(budget.os, "cpu_count", lambda: 2)
    # the tune's own two threads alone (2.0), then three other busy threads beside them
    monkeypatch.setattr(budget.os, "getloadavg", lambda: (2.0 if clock.cpu_s < 50.0 + 3 * 12 else 5.0, 0.0, 0.0))
    measured, spent = run_search(tmp_path, stretch=3.0, minutes=5.0, clock=clock)
    assert spent["busy_from_candidate"] == 3 and clock.threads == TRAINING_THREADS and len(measured) > 3
    monkeypatch.setattr(budget.os, "getloadavg", lambda: (3.9, 0.0, 0.0))
    assert budget.machine_is_busy() == 3.9 and budget.machine_is_busy(own=TRAINING_THREADS) is None
    assert clock.follow_load() is None and clock.threads == 1      # and back when the load has gone


@pytest.mark.parametrize("load", ["busy", "idle"])
def test_torchs_threads_are_set_to_wait_passively_before_torch_loads(load):
    """Busy or idle as the tune starts: a load that comes later must not find torch's threads spinning."""
    probe = """
import os, sys
from tinyrps.tune import budget
budget.os.getloadavg = lambda: (float(os.cpu_count()) + 0.5 if sys.argv[1] == "busy" else 0.0, 0.0, 0.0)
clock, machine = budget.clock_for_this_machine()
print(machine["passive_wait"], os.environ.get("OMP_WAIT_POLICY"), "torch" in sys.modules, clock.threads)
"""
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    res = subprocess.run([sys.executable, "-c", probe, load], capture_output=True, text=True, env=env, timeout=300)
    threads = "2" if load == "busy" else "1"
    assert res.stdout.split() == ["True", "PASSIVE", "False", threads], res.stderr[-2000:]


def test_the_pick_is_the_fastest_of_the_nearly_most_accurate():
    front = [{"number": 0, "val_accuracy": 0.995, "npu_ms": 0.2, "program_bytes": 400_000},
             {"number": 1, "val_accuracy": 0.995 - ACCURACY_MARGIN / 2, "npu_ms": 0.05, "program_bytes": 100_000},
             {"number": 2, "val_accuracy": 0.95, "npu_ms": 0.01, "program_bytes": 20_000}]
    assert pick_best(front)["number"] == 1
    assert pick_best([]) is None


def test_the_pick_is_the_fastest_that_reaches_the_bar_however_far_the_best_is_above_it():
    """A short training favours the large networks: one far above the bar does not push the bar up."""
    assert PICK_ACCURACY + ACCURACY_MARGIN <= 1.0
    front = [{"number": 0, "val_accuracy": 1.0, "npu_ms": 0.2, "program_bytes": 400_000},
             {"number": 1, "val_accuracy": PICK_ACCURACY, "npu_ms": 0.04, "program_bytes": 30_000},
             {"number": 2, "val_accuracy": PICK_ACCURACY - 0.002, "npu_ms": 0.02, "program_bytes": 20_000}]
    assert pick_best(front)["number"] == 1
    assert pick_best(front, bar=0.9)["number"] == 2
    # none reaches the bar: the fastest within the margin of the best
    assert pick_best(front[1:], bar=1.0)["number"] == 2
    assert pick_best(front[1:] + [{**front[2], "number": 3, "val_accuracy": 0.9, "npu_ms": 0.01}], bar=1.0)["number"] == 2


@pytest.fixture(scope="module")
def tuned(cli_session, data_dir, trained_run, tmp_path_factory):
    """Two candidates and a pick with two seeds, all taught by the session's default-network run."""
    out = tmp_path_factory.mktemp("tune")
    teacher = trained_run
    res = cli_session("tune", "--data", data_dir, "--out", out, "--trials", "2", "--pick-seeds", "2", "--json",
                      "--teacher", teacher, *TINY, timeout=1800)
    assert res.returncode == 0, res.stderr[-3000:]
    return out, json.loads(res.stdout)


@pytest.mark.slow
def test_tune_writes_candidates_front_and_the_retrained_pick(tuned):
    out, result = tuned
    candidates = result["candidates"]
    assert [c["number"] for c in candidates] == [0, 1]
    assert candidates[0]["arch"] == ARCHITECTURES["fast"] and candidates[0]["state"] == "COMPLETE"   # the anchor
    for c in candidates:
        assert parse_arch(c["arch"]).spec == c["arch"]
        if c["state"] == "PRUNED":      # estimated before training, far slower than the anchor: not trained
            assert c["npu_ms"] > LATENCY_SLACK * candidates[0]["npu_ms"] and c["program_bytes"] > 10_000
            assert not (out / "candidates" / f"{c['number']:04d}").exists()
            continue
        assert c["state"] == "COMPLETE", c
        assert 0 <= c["val_accuracy"] <= 1 and c["npu_ms"] > 0 and c["sram_bytes"] > 0
        assert c["val_images"] == 120 and c["val_accuracy"] == c["val_correct"] / 120     # the interval's counts
        assert c["check_cost"] > 0      # its scoring of val, scaled to the benchmark split the pick is checked on
        assert c["program_bytes"] > 10_000
        assert "mcu_instructions" not in c      # counted for the pick only (below): not an objective
        run = json.loads((out / "candidates" / f"{c['number']:04d}" / "metrics.json").read_text())
        assert "test_accuracy" not in run   # the test split is kept for the pick
    numbers = {c["number"] for c in candidates if c["state"] == "COMPLETE"}
    assert result["pareto"] and {c["number"] for c in result["pareto"]} <= numbers
    assert result["best"] in result["pareto"]
    final = result["final"]
    assert final["arch"] == result["best"]["arch"] and 0 <= final["test_accuracy"] <= 1
    assert final["npu_ms"] == pytest.approx(result["best"]["npu_ms"], rel=0.2)
    assert final["mcu_instructions"] > 100_000
    assert json.loads((out / "tune.json").read_text()) == result
    assert (out / "tune.png").stat().st_size > 10_000 and (out / "study.db").is_file()
    assert Path(final["seeds"][0]["run"]).parent == out / "finalists"
    assert (Path(final["seeds"][0]["run"]) / "export" / "ethos-u85-128.pte").is_file()


@pytest.mark.slow
def test_the_finalists_are_trained_like_the_pick_and_read_on_the_selection_split(tuned, data_dir):
    out, result = tuned
    finalists = result["finalists"]
    assert finalists[0]["number"] == pick_within(result["pareto"], TuneSettings(data=data_dir, out=out), None)["number"]
    benchmark = json.loads((data_dir / "data.json").read_text())["splits"]["benchmark"]["images"]
    for finalist in finalists:
        assert finalist["number"] in {c["number"] for c in result["pareto"]}
        assert finalist["select_images"] == benchmark      # rendered as large as the benchmark split
        assert finalist["select_accuracy"] == finalist["select_correct"] / benchmark
        run = Path(finalist["run"])
        assert run == out / "finalists" / f"{finalist['number']:04d}"
        config = json.loads((run / "config.json").read_text())
        assert (config["arch"], config["epochs"], config["seed"]) == (finalist["arch"], 1, 0)    # as the pick's
    assert result["best"]["number"] == choose_finalist(finalists)["number"]
    chosen = next(f for f in finalists if f["number"] == result["best"]["number"])
    assert result["final"]["seeds"][0]["run"] == chosen["run"]     # the pick's own seed is its finalist's run
    assert result["final"]["programs"]["ethos-u85-128"] == chosen["program"]     # and its program, not made again


@pytest.mark.slow
def test_the_pick_is_trained_with_each_seed_asked_for(tuned, data_dir):
    out, result = tuned
    final = result["final"]
    assert [entry["seed"] for entry in final["seeds"]] == [0, 1]
    assert final["seeds"][0]["test_accuracy"] == final["test_accuracy"]
    assert final["test_accuracy_worst"] == min(entry["test_accuracy"] for entry in final["seeds"])
    assert final["benchmark_accuracy_worst"] == min(entry["benchmark_accuracy"] for entry in final["seeds"])
    images = json.loads((data_dir / "data.json").read_text())["splits"]["benchmark"]["images"]
    for entry in final["seeds"]:     # the counts behind each accuracy, for its interval
        assert entry["test_images"] == 78 and entry["test_accuracy"] == entry["test_correct"] / 78
        assert entry["benchmark_images"] == images > 78      # the split the pick is judged on
        assert entry["benchmark_accuracy"] == entry["benchmark_correct"] / images
    assert (final["test_correct"], final["test_images"]) == (final["seeds"][0]["test_correct"], 78)
    second = out / "best-seed1"
    config = json.loads((second / "config.json").read_text())
    assert config["seed"] == 1 and config["arch"] == final["arch"]
    assert (second / "export" / "ethos-u85-128.pte").is_file()
    assert (second / "model.pt").read_bytes() != (Path(final["seeds"][0]["run"]) / "model.pt").read_bytes()


@pytest.mark.slow
def test_candidates_and_pick_are_taught_by_the_teacher(tuned, trained_run):
    out, result = tuned
    teacher = str(trained_run.resolve())
    sha = json.loads((trained_run / "config.json").read_text())["checkpoint_sha256"]
    assert result["final"]["teacher"]["run"] == teacher and result["final"]["teacher"]["checkpoint_sha256"] == sha
    assert result["study"]["teacher"] == teacher
    for run in [out / "best-seed1", *(out / "finalists").iterdir(), *(out / "candidates").iterdir()]:
        config = json.loads((run / "config.json").read_text())
        assert config["teacher"] == teacher and config["teacher_checkpoint_sha256"] == sha, run


def ranking_script():
    return load_script("tune_ranking")


def test_the_ranking_checks_arithmetic_by_hand_counts():
    r = ranking_script()
    assert r.ranks([3, 1, 2, 2]) == [4, 1, 2.5, 2.5]
    assert r.spearman([1, 2, 3, 4], [10, 20, 30, 45]) == pytest.approx(1)
    assert r.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1)
    # two neighbours swapped twice: d = (-1, 1, -1, 1, 0), rho = 1 - 6 * 4 / (5 * 24) = 0.8
    assert r.spearman([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]) == pytest.approx(0.8)
    # 10 pairs, 2 of them discordant: tau = (8 - 2) / 10
    assert r.kendall([1, 2, 3, 4, 5], [2, 1, 4, 3, 5]) == pytest.approx(0.6)
    assert r.kendall([1, 1, 2], [1, 2, 3]) == pytest.approx(2 / (2 * 3) ** 0.5)     # tau-b with a tie


def test_the_ranking_sample_spans_the_scores_once_per_architecture():
    r = ranking_script()
    candidates = [{"arch": f"a{i}", "val_accuracy": i / 10} for i in range(10)]
    candidates.append({"arch": "a9", "val_accuracy": 0.95})      # measured again: counted once, at its best
    assert [c["arch"] for c in r.evenly_spread(candidates, 4)] == ["a9", "a6", "a3", "a0"]
    assert len(r.evenly_spread(candidates, 20)) == 10


@pytest.mark.slow
def test_the_ranking_check_trains_its_sample_as_the_tune_did(tuned, tmp_path):
    """With the tune's own schedule (its candidate epochs, seed and teacher) each sampled
    candidate reads on the validation split exactly what the tune recorded; a second run
    measures nothing again."""
    out, result = tuned
    r = ranking_script()
    args = ["--tune", str(out), "--sample", "2", "--epochs", "1", "--seeds", "0", "--split", "val",
            "--out", str(tmp_path)]
    assert r.main(args) == 0
    stored = json.loads((tmp_path / "ranking.json").read_text())
    recorded = {c["arch"]: c for c in result["candidates"]}
    assert sorted(stored["sample"]) == sorted(recorded)
    assert len(stored["results"]) == len(recorded)
    for entry in stored["results"]:
        assert (entry["correct"], entry["images"]) == (recorded[entry["arch"]]["val_correct"],
                                                       recorded[entry["arch"]]["val_images"]), entry
    checkpoints = sorted(tmp_path.glob("ranking/*/seed0/model.pt"))
    assert len(checkpoints) == len(recorded)
    before = [c.stat().st_mtime_ns for c in checkpoints]
    assert r.main(args) == 0
    assert [c.stat().st_mtime_ns for c in checkpoints] == before
    assert json.loads((tmp_path / "ranking.json").read_text())["results"] == stored["results"]


def test_the_ranking_check_without_a_tune_is_one_line(tmp_path, capsys):
    assert ranking_script().main(["--tune", str(tmp_path)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_three_pick_seeds_by_default():
    from tinyrps.interfaces.cli import build_parser
    assert build_parser().parse_args(["tune", "--data", "d", "--out", "o"]).pick_seeds == 3
    assert TuneSettings(data="d", out="o").pick_seeds == 3


@pytest.mark.slow
def test_an_interrupted_tune_resumes_from_its_study(cli, tuned, data_dir, trained_run):
    out, first = tuned
    res = cli("tune", "--data", data_dir, "--out", out, "--trials", "1", "--no-retrain", "--teacher", trained_run,
              *TINY, timeout=1800)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "#2 " in res.stderr and "candidates (3" in res.stdout
    result = json.loads((out / "tune.json").read_text())
    assert [c["number"] for c in result["candidates"]] == [0, 1, 2]
    assert result["candidates"][:2] == first["candidates"]


@pytest.mark.slow
def test_other_settings_do_not_join_a_stored_study(cli, tuned, data_dir):
    out, _ = tuned
    res = cli("tune", "--data", data_dir, "--out", out, "--candidate-epochs", "3")
    assert res.returncode == 2 and "other settings" in res.stderr and "candidate_epochs" in res.stderr
    assert "teacher" in res.stderr      # the stored study distils, this one would not
    assert len(res.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_two_workers_share_one_study_through_a_journal_file(data_dir, tmp_path):
    """Two processes on one journal storage: each runs its own candidate, both land in the study.
    Their program-size limit is impossible, so no candidate is feasible and the front is empty (an
    impossible NPU limit would leave every candidate untrained: test_a_candidate_over_the_npu_limit_...)."""
    journal = tmp_path / "study.journal"
    command = lambda out: [sys.executable, "-m", "tinyrps", "tune", "--data", str(data_dir), "--out",  # noqa: E731
                           str(out), "--storage", f"journal:{journal}", "--trials", "1", "--no-retrain",
                           "--max-program-bytes", "1", "--json", "--quiet", *TINY]
    workers = [subprocess.Popen(command(tmp_path / f"worker{i}"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True) for i in range(2)]
    outputs = [w.communicate(timeout=1800) for w in workers]
    for worker, (stdout, stderr) in zip(workers, outputs):
        assert worker.returncode == 0, stderr[-3000:]
    import optuna
    from optuna.storages.journal import JournalFileBackend
    study = optuna.load_study(study_name="tinyrps-tune",
                              storage=optuna.storages.JournalStorage(JournalFileBackend(str(journal))))
    done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert sorted(t.number for t in done) == [0, 1]
    assert {t.user_attrs["run"].split("/worker")[1][0] for t in done} == {"0", "1"}
    assert all(t.constraints["program_bytes"] > 0 for t in done)
    last = json.loads(max(outputs, key=lambda o: len(json.loads(o[0])["candidates"]))[0])
    assert last["pareto"] == [] and last["best"] is None
    assert all(c["feasible"] is False for c in last["candidates"])


@pytest.mark.slow
def test_bad_settings_are_one_line(cli, data_dir, tmp_path):
    for args, words in ((("--target", "int8-xnnpack"), "Ethos-U target"), (("--minutes", "0"), "--minutes"),
                        (("--storage", "nowhere"), "not a storage URL"), (("--max-npu-ms", "-1"), "--max-npu-ms"),
                        (("--teacher", tmp_path / "none"), "--teacher"), (("--teacher", data_dir), "--teacher"),
                        (("--distill-temperature", "2"), "--teacher")):
        res = cli("tune", "--data", data_dir, "--out", tmp_path / "t", *args)
        assert res.returncode == 2 and words in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    res = cli("tune", "--data", tmp_path / "none", "--out", tmp_path / "t")
    assert res.returncode == 2 and "tinyrps data" in res.stderr
    partial = tmp_path / "partial"        # the pick is checked on the benchmark split: said before the search
    shutil.copytree(data_dir, partial)
    (partial / "benchmark.npz").unlink()
    res = cli("tune", "--data", partial, "--out", tmp_path / "t")
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert f"no benchmark split at {partial / 'benchmark.npz'}: create it with `tinyrps data" in res.stderr


@pytest.mark.slow
def test_bad_settings_are_one_line_on_a_busy_machine_too(data_dir, tmp_path):
    """The busy machine's line comes after the checks: a refused setting is still its one line."""
    probe = f"""
import os, sys
from tinyrps.tune import budget
from tinyrps.interfaces.cli import main
budget.os.getloadavg = lambda: (float(os.cpu_count()) + 1.0, 0.0, 0.0)
sys.exit(main(["tune", "--data", {str(data_dir)!r}, "--out", {str(tmp_path / "t")!r}, "--storage", "nowhere"]))
"""
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert res.returncode == 2 and "not a storage URL" in res.stderr, res.stderr[-2000:]
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
