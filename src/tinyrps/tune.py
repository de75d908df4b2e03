"""Architecture search for an Ethos-U target, built on Optuna: `tinyrps tune`.

Each candidate is an architecture spec (tinyrps.model) drawn from a small space:
channel widths of three convolutions, whether the second and third halve the
feature map by a stride or by a max-pool, what the classifier reads (the whole map, flattened, or
the map pooled down to one pixel: each channel's largest value wherever the letter is), and the
width of the hidden fully connected layer. A candidate is trained
briefly (CANDIDATE_EPOCHS; the last epoch's weights are kept; the test split is never
read), exported for the NPU target, and measured:

    val_accuracy       int8, the target program's TOSA graph on the validation split (npu-ref)
    npu_ms, sram_bytes Vela's estimate for the target (the measure stage's)
    program_bytes      size of the target's .pte

The Cortex-M55's instructions per inference (an export and a run on the emulated board) are
counted for the pick only: they are no objective, and they took half of a candidate's time
outside training (measured at a load average of about 9: NPU export 23 CPU seconds, npu-ref on
the validation split 5, Cortex-M55 export 11, its count in QEMU 24).

Optuna's multi-objective TPE sampler proposes candidates for three objectives
(accuracy up, NPU latency down, program size down); `--max-npu-ms` and
`--max-program-bytes` are Optuna constraints, so `study.best_trials` is the
Pareto front of the candidates that meet them. The study lives in an Optuna
storage: SQLite in the output folder by default (an interrupted tune resumes
where it stopped), or any storage URL several workers share (`--storage`; PostgreSQL
across machines). Only a storage of the study's own is written: a database with other
tables, or a file that is neither SQLite nor Optuna's journal, is refused before anything
is made. In a database, a worker's trial carries Optuna's heartbeat, and the trial of a
worker that has stopped is run again by another (HEARTBEAT_SECONDS).

The budget is `--minutes` of an idle machine, the final retraining included. Each
candidate is charged the lesser of its wall time and its CPU time (this process's and its
finished children's: QEMU runs as a subprocess, waited for). On an idle machine training keeps
both cores busy, so CPU time is the larger and a tune keeps to its wall minutes; under load
the wall clock stretches much more than a candidate's CPU time (measured at a load average
of about 8 on 2 cores: 323 s of wall time, 88 s of CPU time for one candidate), so the load
no longer cuts the search short; the tune takes longer by the wall clock. CPU time alone is not
enough on a busy machine: torch's two worker threads spin while they wait for each other, and with
every core taken the spinning is most of their CPU time (measured at a load average of about 4.5
with three busy loops: a 2-epoch candidate training took 66 CPU seconds against 17 on the idle
machine, and the default tune stopped after one candidate, its retraining estimated past the
budget). So torch's threads wait passively (OMP_WAIT_POLICY=PASSIVE, set before torch loads: the
same arithmetic, the same bits), whatever the load: a load that comes after the tune has started
(the load average lags by a minute) is as dear as one that was there before. Measured on the AMD
EPYC with three busy loops started with the tune: a 3-epoch training of c16-c48s2-c32s2-p-f32 took
118 CPU seconds spinning and 29.5 waiting passively, against 32.5 on the idle machine, where
passive waiting costs 3 % of its wall time (19.2 s against 18.7; on the Intel Xeon measured
earlier, 1.7x). When the 1-minute load average is at least the core count as the tune starts
(BUSY), the CPU seconds of training are also charged divided by its thread count, what its
threads would take side by side on idle cores (export, Vela and QEMU, one thread each, whole):
measured under that load on the Xeon, 22.7 CPU seconds for a training (11.4 charged), against
the idle machine's 11.2 s of wall time. A load that comes after the start is followed the same way
from the next candidate on, once the load average, less the tune's own training threads, is at
least the core count (Clock.follow_load; the 1-minute average finds it a minute or two late). The
search leaves room for the final stage (retraining_estimate): the current front's pick's seeds and
its other finalists, each at its own cost, and never more than RESERVE_SHARE of the budget, so that a
dear first candidate, the pick for a while, leaves the search room all the same (uncapped, such a
pick once left room for two more candidates on a loaded machine).
The pick is then made among the candidates whose own retraining fits what is left, as long as that
costs no more than ACCURACY_MARGIN of validation accuracy; else the retraining passes the budget.

The search starts from ANCHOR (`fast`, the hand-picked network), enqueued as the study's first trial.
Once it is measured, each new candidate is first estimated by Vela on its untrained network
(probe_candidate, about 3 s); one over LATENCY_SLACK times the current pick's latency, or over
--max-npu-ms, is not trained (probe_limit): an Optuna pruned trial, its estimate and why in tune.json.

When the time budget is spent, the front's pick (the lowest NPU latency among the front's candidates
whose validation accuracy reaches PICK_ACCURACY, or, when none does, is within ACCURACY_MARGIN
of the front's best; then the smallest program) and the front candidates faster than it with the
best validation accuracy, FINALISTS (--finalists) in all, are the finalists: each is trained for
TUNED_EPOCHS (or --epochs) with the tune's seed and read on the selection split (as large as the
benchmark split, rendered by the tune on a stream of its own), and the pick is the fastest finalist
that reads SELECT_ACCURACY of it (none: the most accurate). The search leaves room for that too: the
retraining estimate counts every finalist's training. The pick is then trained with each other of
--pick-seeds seeds (default 3); each seed is exported and scored on the NPU reference on the test
split and on the benchmark split, five times larger, where its accuracy is judged (correct and
images counted per seed); its Cortex-M55 program is exported and counted.
With --teacher RUN, candidates and pick alike are trained by knowledge distillation from RUN
(tinyrps.train).

Writes OUT/tune.json ({"candidates", "pareto", "finalists", "best", "final", ...}), OUT/tune.png,
OUT/candidates/NNNN/ (one run per candidate), OUT/finalists/NNNN/ (each finalist trained with the
tune's seed: the pick's run for that seed) and, with --pick-seeds N, OUT/best-seedS/ (the pick
trained with the other seeds).
"""
from __future__ import annotations

import contextlib
import logging
import os
import socket
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from .arch import (CANDIDATE_EPOCHS, CHECKPOINT_RULE, FINALISTS, PICK_ACCURACY, SELECT_ACCURACY, TUNED_EPOCHS, Layer,
                   feature_shape, parse_arch, pooled)
from .artifacts import atomic_write_json
from .errors import UserError, one_line
from .progress import console, progress_bar, say
from .torch_settings import TRAINING_THREADS     # torch-free: read before torch loads

STUDY_NAME = "tinyrps-tune"
STUDY_DB = "study.db"
TUNE_JSON = "tune.json"
TUNE_PLOT = "tune.png"
MCU_TARGET = "cortex-m55"
# The pick is the fastest candidate of the front whose validation accuracy (int8, on the NPU reference,
# after the candidates' short training) reaches PICK_ACCURACY (tinyrps.arch, `--pick-accuracy`): a bar,
# not a ranking, because the short training favours the large networks, which learn faster, over the
# small ones the full training brings as far. When no candidate reaches the bar, the candidates within
# ACCURACY_MARGIN (a few images of the validation split) of the front's best count as equally accurate.
ACCURACY_MARGIN = 0.005
# The most of the budget the search leaves for the final retraining, whatever its estimate: a first
# candidate that trains slowly (a large network, a loaded machine) would otherwise leave room for no
# other. The pick is then made among the candidates whose own retraining fits, as long as that costs no
# accuracy beyond ACCURACY_MARGIN (pick_within). Half: the default final stage is four trainings (two
# finalists, the pick's two other seeds) of 50-60 s each on a quiet 2-core machine.
RESERVE_SHARE = 0.5
# Consecutive proposals of already measured architectures after which the search stops.
MAX_REPEATS = 20
# The search's first candidate: the project's hand-picked fast network (a point of SPACE), a reference
# the rest of the search is measured against (probe_limit).
ANCHOR = "fast"
# A candidate whose NPU estimate, taken on its untrained network (probe_candidate), is more than
# LATENCY_SLACK times the current pick's is not trained: to become the pick it would have to read more
# than ACCURACY_MARGIN above every faster candidate after the short training. In the tunes measured
# before this rule (10 tunes, 162 candidates), no candidate slower than the pick of its time became the
# pick after the sampler's random start, and those of the random start were at most 1.93 times slower
# than a pick of a few random networks; the slowest networks of the space (no first pool, wide layers:
# 0.08-0.30 ms) are also the dearest to train. The probe's estimate is 0.99-1.11 times the trained
# network's (52 architectures: untrained weights compress less), so a candidate not trained is at least
# 1.35 times slower than the pick.
LATENCY_SLACK = 1.5
# Training images that calibrate a probe's quantization: its weights are untrained, only its shape counts.
PROBE_IMAGES = 16
PROBE_FIELDS = ("npu_ms", "sram_bytes", "program_bytes")
# The most the probe's estimate was above the trained network's (1.11, c8-c32s2-c64s2-f128), with room:
# a candidate whose probe is over --max-npu-ms times this could not meet the limit trained.
PROBE_ERROR = 1.15
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
    "head": ("flatten", "one-pixel"),
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
    candidate_epochs: int = CANDIDATE_EPOCHS   # short training of each candidate
    epochs: int = TUNED_EPOCHS     # the final retraining
    pick_seeds: int = 3            # the pick is trained with this many seeds: seed, seed + 1, ...
    seed: int = 0
    trials: Optional[int] = None   # at most this many candidates in this process (default: the budget decides)
    retrain: bool = True
    teacher: Optional[Path] = None     # distil candidates and pick from this run (tinyrps.train)
    distill_alpha: Optional[float] = None
    distill_temperature: Optional[float] = None
    pick_accuracy: float = PICK_ACCURACY   # the pick: the fastest candidate whose val accuracy reaches this
    finalists: int = FINALISTS     # trained like the pick and read on the selection split, the pick among them

    def train_config(self, arch: str, epochs: int, seed: int):
        from .train import TrainConfig
        return TrainConfig(data=str(self.data), epochs=epochs, seed=seed, arch=arch,
                           teacher=str(self.teacher) if self.teacher else None, distill_alpha=self.distill_alpha,
                           distill_temperature=self.distill_temperature)


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


def arch_of(params: dict) -> str:
    """Optuna parameters -> an architecture spec that `--arch` accepts."""
    layers = [f"c{params['conv1']}"] + (["p"] if params["reduce1"] == "pool" else [])
    for conv, reduce in (("conv2", "reduce2"), ("conv3", "reduce3")):
        how = params[reduce]
        layers.append(f"c{params[conv]}" + ("s2" if how == "stride" else ""))
        if how != "stride":
            layers.append({"pool": "p", "pool3": "p3"}[how])
    if params["head"] == "one-pixel":       # pooled down to one pixel: the largest of each channel anywhere
        size = feature_shape(parse_arch("-".join(layers)))[1]
        while size > 1:
            pool = Layer("pool", kernel=3 if size == 3 else 2)     # a 3x3 map in one step
            layers.append("p3" if pool.kernel == 3 else "p")
            size = pooled(size, pool)
    if params["fc"]:
        layers.append(f"f{params['fc']}")
    return "-".join(layers)


def suggest(trial) -> str:
    return arch_of({name: trial.suggest_categorical(name, list(choices)) for name, choices in SPACE.items()})


def params_of(spec: str) -> Optional[dict]:
    """The point of SPACE whose architecture is `spec` (the first, in the space's order), or None."""
    import itertools
    for values in itertools.product(*SPACE.values()):
        params = dict(zip(SPACE, values))
        if arch_of(params) == spec:
            return params
    return None


def enqueue_anchor(study, made: bool = True) -> None:
    """The search's first candidate is ANCHOR. The process that made the study enqueues it; one that opens a
    study enqueues it again when the study has trials but none of ANCHOR waiting, running or done (a first
    trial stopped by Ctrl-C has failed: a resumed tune measures it). A worker that opens a study with no trial
    yet leaves it to the study's maker, which enqueues it a moment later: two workers started together
    enqueue it once. Each point of SPACE is one architecture."""
    from optuna.trial import TrialState

    from .arch import ARCHITECTURES
    params = params_of(ARCHITECTURES[ANCHOR])
    if params is None:
        return
    trials = study.get_trials(deepcopy=False)
    live = any(t.system_attrs.get("fixed_params", t.params) == params and t.state != TrialState.FAIL for t in trials)
    if made or (trials and not live):
        study.enqueue_trial(params)


# --- the study ------------------------------------------------------------------------------------

# A worker's trial whose heartbeat (a write to an RDB storage every HEARTBEAT_SECONDS) has stopped for
# GRACE_SECONDS is taken as lost (its process killed, its machine gone): the next worker to start a trial
# marks it failed and runs it again (STALE_RETRIES times at most: a candidate that kills its worker each
# time is not tried for ever). Heartbeats are rows of Optuna's own table; a minute of silence is far
# longer than a busy machine holds a thread back.
HEARTBEAT_SECONDS = 10
GRACE_SECONDS = 60
STALE_RETRIES = 2
# Optuna's record of its schema's version, made with its tables: a database with tables of Optuna's names but
# not this one was not made by Optuna (an application's own `studies`).
OPTUNA_VERSION_TABLE = "version_info"


def storage_for(settings: TuneSettings):
    """The Optuna storage: `--storage` (an RDB URL such as sqlite:///path.db or postgresql://..., or
    journal:PATH for Optuna's journal file), else SQLite in the output folder. A file or database that
    holds anything but a study is refused before anything is written to it (check_database,
    journal_storage)."""
    import warnings

    import optuna
    url = settings.storage or f"sqlite:///{(settings.out / STUDY_DB).resolve()}"
    if url.startswith("journal:"):
        return journal_storage(Path(url.removeprefix("journal:")))
    if "://" not in url:
        raise UserError(f"--storage '{url}' is not a storage URL: use sqlite:///PATH.db, another database URL "
                        "(postgresql://..., mysql://...) or journal:PATH")
    for attempt in (1, 2):
        try:
            check_database(url)
            with warnings.catch_warnings():     # heartbeats are experimental in Optuna: said once, here
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                return optuna.storages.RDBStorage(
                    url, heartbeat_interval=HEARTBEAT_SECONDS, grace_period=GRACE_SECONDS,
                    heartbeat_stale_trial_callback=optuna.storages.RetryHeartbeatStaleTrialCallback(STALE_RETRIES))
        except UserError:
            raise
        except Exception as e:  # noqa: BLE001 - a bad URL, a missing driver, an unreachable server
            if attempt == 2:
                raise UserError(f"cannot open the study storage {shown_url(url)}: {one_line(e, 200)}") from None
        # workers started together on a new database: the one whose making of Optuna's tables collided with
        # another's finds them made a moment later
        time.sleep(1.0)


def shown_url(url: str) -> str:
    """A storage URL as messages and tune.json show it: without its password."""
    try:
        from sqlalchemy.engine import make_url
        parsed = make_url(url)
    except Exception:  # noqa: BLE001 - not a database URL (journal:PATH, or a typo): nothing to hide
        return url
    return url if parsed.password is None else parsed.render_as_string(hide_password=True)


def check_database(url: str) -> None:
    """Refuse a database that holds tables of something else: Optuna would make its own tables beside them
    (and fail half-way on one of the same name, its `studies`). An empty database, a SQLite file not there
    yet, or Optuna's tables with their version record are a study storage."""
    import sqlalchemy
    from optuna.storages._rdb.models import BaseModel
    from sqlalchemy.engine import make_url
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        path = Path(parsed.database)
        if not path.exists():
            return
        if not path.is_file():
            raise UserError(f"--storage {url}: {path} is not a file: give a SQLite file's path (it is created if "
                            "missing)")
        with open(path, "rb") as f:
            head = f.read(16)
        if head not in (b"", b"SQLite format 3\x00"):      # empty: what SQLite makes of a new file
            raise UserError(f"--storage {url}: {path} is not a SQLite database: give a new file (it is created) "
                            "or a study's database")
    engine = sqlalchemy.create_engine(url)
    try:
        inspector = sqlalchemy.inspect(engine)
        tables = set(inspector.get_table_names())
        columns = {c["name"] for c in inspector.get_columns(OPTUNA_VERSION_TABLE)} \
            if OPTUNA_VERSION_TABLE in tables else set()
    finally:
        engine.dispose()
    foreign = sorted(tables - set(BaseModel.metadata.tables) - {"alembic_version"})
    if not tables or (not foreign and {"schema_version", "library_version"} <= columns):
        return
    names = ", ".join(foreign or sorted(tables))    # Optuna's names alone, but not its version record: not its own
    raise UserError(f"--storage {shown_url(url)} holds tables Optuna did not make ({names}): the study is written "
                    "only into a database of its own: give a new SQLite file or an empty database "
                    "(CREATE DATABASE ...)")


def journal_storage(path: Path):
    """Optuna's journal file at `path` (its folder made when missing): refused when it is a folder, when its
    parent is a file, or when the file holds anything but Optuna's journal lines."""
    import json

    import optuna
    from optuna.storages.journal import JournalFileBackend
    where = f"--storage journal:{path}"
    for parent in path.parents:
        if parent.exists() and not parent.is_dir():
            raise UserError(f"{where}: {parent} is a file, not a folder: give a journal path in a folder")
    if path.exists():
        if not path.is_file():
            raise UserError(f"{where} is not a file: give a journal file's path (it is created if missing)")
        with open(path, "rb") as f:
            first = f.readline()
        try:
            line = json.loads(first) if first else {"op_code": None}     # an empty file: a new journal
            ours = isinstance(line, dict) and "op_code" in line
        except ValueError:
            ours = False
        if not ours:
            raise UserError(f"{where}: {path} is not an Optuna journal: give a new file (it is created) or a "
                            "study's journal")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return optuna.storages.JournalStorage(JournalFileBackend(str(path)))
    except OSError as e:
        raise UserError(f"cannot open {where}: {one_line(e, 200)}") from None


def open_study(settings: TuneSettings):
    """The study in the settings' storage, made or joined, checked against the settings, with the anchor
    enqueued where it is due (enqueue_anchor)."""
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = storage_for(settings)
    try:
        try:
            study, made = optuna.create_study(study_name=STUDY_NAME, storage=storage, directions=list(DIRECTIONS)), True
        except optuna.exceptions.DuplicatedStudyError:    # another worker's, or an earlier tune's
            study, made = optuna.create_study(study_name=STUDY_NAME, storage=storage, directions=list(DIRECTIONS),
                                              load_if_exists=True), False
    except ValueError as e:   # the stored study has other directions
        raise UserError(f"the study in {where_stored(settings)} is not a tinyrps tune "
                        f"study ({e}): use another --out or --storage") from None
    stored = study.user_attrs.get("settings")
    mine = study_settings(settings)
    if stored is None:
        study.set_user_attr("settings", mine)
    elif stored != mine:    # a key on one side only differs too (a teacher there and none here)
        raise UserError(f"the study in {where_stored(settings)} was made with other settings "
                        f"({describe_difference(stored, mine)}): use another --out or --storage, or the same settings")
    study.sampler = sampler_for(settings, len(study.trials))
    enqueue_anchor(study, made)
    return study


def where_stored(settings: TuneSettings) -> str:
    return shown_url(settings.storage) if settings.storage else str(settings.out / STUDY_DB)


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
    # the checkpoint rule: a study whose candidates kept another epoch's weights scored them otherwise
    mine = {"target": settings.target, "data": str(settings.data.resolve()), "max_npu_ms": settings.max_npu_ms,
            "max_program_bytes": settings.max_program_bytes, "candidate_epochs": settings.candidate_epochs,
            "seed": settings.seed, "checkpoint_rule": CHECKPOINT_RULE}
    if settings.teacher:    # a study made before distillation existed names none, and matches a plain one
        mine.update(teacher=str(settings.teacher), distill_alpha=settings.distill_alpha,
                    distill_temperature=settings.distill_temperature)
    return mine


def describe_difference(stored: dict, mine: dict) -> str:
    return ", ".join(f"{k} {stored.get(k)!r} there, {mine.get(k)!r} here" for k in {**stored, **mine}
                     if stored.get(k) != mine.get(k))


# --- one candidate --------------------------------------------------------------------------------

def export_program(run_dir: Path, target: str) -> Path:
    """A run's program for `target`, exported with torch on one thread: the export runs the network
    one calibration image at a time, and torch's second thread only adds its waiting to each small
    operation (the same bytes; measured for c24-p-c48-p-c48-p-p3 at a load average of 2.6-3.6 on
    2 cores: 9.5-9.9 s of wall and CPU time on one thread against 22-37 s on two)."""
    from .export import export_target
    from .torch_settings import torch_threads
    with torch_threads(1):
        return export_target(run_dir, target)


def evaluate_candidate(arch: str, run_dir: Path, settings: TuneSettings, status, meter: Meter) -> dict:
    """Train briefly, export for the target, and measure; see the module docstring.
    The figures include `training_cost`, the seconds the training was charged on `meter`."""
    from .train import train
    status("training")
    began = meter.charged()
    with meter.clock.training():
        train(settings.train_config(arch, settings.candidate_epochs, settings.seed), run_dir, quiet=True,
              test_split=False)
    training_cost = meter.charged() - began
    status(f"export {settings.target}")
    npu_pte = export_program(run_dir, settings.target)
    status("int8 accuracy on npu-ref")
    began = meter.charged()
    val = npu_counts(npu_pte, settings.data, "val")
    scoring_cost = meter.charged() - began
    return {**candidate_figures(arch, npu_pte, None, val["correct"] / val["images"]),
            "val_correct": val["correct"], "val_images": val["images"], "training_cost": round(training_cost, 2),
            "check_cost": round(scoring_cost * benchmark_images(settings.data) / val["images"], 2)}


def benchmark_images(data_dir: Path) -> int:
    """How many images the benchmark split holds, on which each seed of the pick is checked."""
    from .data import split_entry
    return split_entry(data_dir, "benchmark")["images"]


def npu_counts(pte: Path, data_dir: Path, split: str) -> dict:
    """How many images of a split an Ethos-U program reads right on the NPU reference (its TOSA
    graph): {"correct", "images"}, the counts an accuracy's interval needs (tinyrps.stats)."""
    from .data import load_split
    return read_right(pte, *load_split(data_dir, split))


def read_right(pte: Path, images, labels) -> dict:
    """How many of `images` an Ethos-U program reads as `labels` say on the NPU reference."""
    from .devices import open_device
    with open_device("npu-ref", pte) as device:
        return {"correct": int((device.classify(images).argmax(1) == labels).sum()), "images": int(len(labels))}


def npu_accuracy(pte: Path, data_dir: Path, split: str) -> float:
    """Accuracy of an Ethos-U program on a split, on the NPU reference."""
    counts = npu_counts(pte, data_dir, split)
    return counts["correct"] / counts["images"]


def candidate_figures(arch: str, npu_pte: Path, mcu_pte: Optional[Path], val_accuracy: float) -> dict:
    """A candidate's figures from the measure stage: Vela's estimate of the NPU program, and, with
    a Cortex-M55 program (the pick's), its instructions per inference (one QEMU run, the quick
    measurement)."""
    from .arch import describe_arch
    from .measure import measure
    vela = measure(npu_pte)["vela"]
    described = describe_arch(arch)
    figures = {"arch": described["spec"], "val_accuracy": val_accuracy, "npu_ms": vela["inference_ms"],
               "sram_bytes": vela["sram_bytes"], "program_bytes": npu_pte.stat().st_size,
               "macs": described["macs"], "params": described["params"],
               "utilisation_total": vela["utilisation_total"], "run": str(npu_pte.parent.parent)}
    if mcu_pte is not None:
        figures["mcu_instructions"] = measure(mcu_pte, quick=True)["firmware"]["instructions_per_inference"]
    return figures


def probe_candidate(arch: str, settings: TuneSettings, status) -> dict:
    """Vela's estimate of `arch` before any training: the network as initialised with the tune's seed,
    calibrated on PROBE_IMAGES training images and exported for the target in a temporary folder
    ({npu_ms, sram_bytes, program_bytes}; see LATENCY_SLACK for how far it is from the trained one's).
    About 3 s on one thread, against 15-70 s for a candidate."""
    import torch

    from .arch import describe_arch
    from .descriptor import Origin
    from .export import export_model
    from .measure import measure
    from .model import INPUT_SHAPE, TinyRPS
    from .quantization import calibration_images, image_examples
    from .tempdirs import temp_dir
    from .torch_settings import torch_threads
    status(f"NPU estimate of the untrained network on {settings.target}")
    torch.manual_seed(settings.seed)
    images = calibration_images(settings.data, PROBE_IMAGES)
    origin = Origin(arch=describe_arch(arch), calibration=f"the first {len(images)} training images (untrained)")
    with temp_dir("probe") as folder, torch_threads(1):
        pte = export_model(TinyRPS(arch), (torch.zeros(INPUT_SHAPE),), image_examples(images), settings.target,
                           folder, origin)
        vela = measure(pte, only=("vela",))["vela"]
        return {"npu_ms": vela["inference_ms"], "sram_bytes": vela["sram_bytes"], "program_bytes": pte.stat().st_size}


def probe_limit(study, settings: TuneSettings) -> Optional[tuple]:
    """(the NPU estimate above which a new candidate is not trained, why), or None while every candidate
    is trained: over --max-npu-ms (with the probe's error on top: it could not meet the limit), or over
    LATENCY_SLACK times the current pick's, once the pick is as accurate as the anchor (less the margin:
    pick_best's bar) and so a pick the rest of the search is worth measuring against."""
    limits = []
    if settings.max_npu_ms is not None:
        limits.append((settings.max_npu_ms * PROBE_ERROR, f"--max-npu-ms {settings.max_npu_ms:g}"))
    from .arch import ARCHITECTURES
    pick, anchor = pick_best(front_of(study), settings.pick_accuracy), measured_before(study, ARCHITECTURES[ANCHOR])
    if pick is not None and anchor is not None and \
            pick["val_accuracy"] >= min(settings.pick_accuracy, anchor["val_accuracy"] - ACCURACY_MARGIN) - 1e-12:
        limits.append((LATENCY_SLACK * pick["npu_ms"],
                       f"{LATENCY_SLACK:g} x the pick's {pick['npu_ms']:.4f} ms (#{pick['number']})"))
    return min(limits) if limits else None


def probed_before(study, arch: str) -> Optional[dict]:
    """The probe figures of an earlier trial of `arch` that was not trained, or None."""
    trial = earlier_trial(study, arch, "PRUNED", "npu_ms")
    return None if trial is None else {"probe": {k: trial.user_attrs[k] for k in PROBE_FIELDS},
                                       "number": trial.number}


def objective(settings: TuneSettings, status_line, clock: Clock, evaluate, probe=probe_candidate,
              started: Optional[list] = None):
    """The trial function; each trial's number is appended to `started` as it begins."""
    def run(trial) -> tuple:
        if started is not None:
            started.append(trial.number)
        arch = suggest(trial)
        trial.set_user_attr("arch", arch)
        trial.set_user_attr("worker", f"{socket.gethostname()} {os.getpid()}")   # for workers sharing a study
        figures = measured_before(trial.study, arch)   # the sampler may propose a measured architecture again
        if figures is None:
            run_dir = settings.out / "candidates" / f"{trial.number:04d}"
            meter = Meter(clock)

            def status(what: str) -> None:
                status_line(f"#{trial.number} {arch}: {what}")
            try:
                skip_if_slow(trial, arch, settings, status, meter, probe)
                figures = evaluate(arch, run_dir, settings, status, meter)
            except UserError as e:
                trial.set_user_attr("error", str(e))
                raise
            figures["seconds"] = round(meter.wall(), 1)
            figures["cost"] = round(meter.charged(), 2)
        for key, value in figures.items():
            trial.set_user_attr(key, value)
        if settings.max_npu_ms is not None:
            trial.set_constraint("npu_ms", figures["npu_ms"] - settings.max_npu_ms)
        if settings.max_program_bytes is not None:
            trial.set_constraint("program_bytes", figures["program_bytes"] - settings.max_program_bytes)
        return tuple(figures[name] for name in OBJECTIVES)
    return run


def skip_if_slow(trial, arch: str, settings: TuneSettings, status, meter: Meter, probe) -> None:
    """Raise optuna.TrialPruned, the probe's figures and why in the trial's attributes, when `arch`'s NPU
    estimate before training is over the probe limit (probe_limit); a repeat of an architecture not
    trained before is judged on its figures, at no cost."""
    import optuna
    limit = probe_limit(trial.study, settings)
    if limit is None:
        return
    before = probed_before(trial.study, arch)
    figures = before["probe"] if before else probe(arch, settings, status)
    if figures["npu_ms"] <= limit[0]:
        return
    for key, value in figures.items():
        trial.set_user_attr(key, value)
    trial.set_user_attr("pruned", f"NPU estimate {figures['npu_ms']:.4f} ms before training, over {limit[1]}")
    if before:
        trial.set_user_attr("repeat_of", before["number"])
    trial.set_user_attr("seconds", round(meter.wall(), 1))
    trial.set_user_attr("cost", round(meter.charged(), 2))
    raise optuna.TrialPruned()


def measured_before(study, arch: str) -> Optional[dict]:
    """The figures of a finished trial of the same architecture (same settings, same seed: the
    same model), marked as a repeat; None when it is new."""
    trial = earlier_trial(study, arch, "COMPLETE", "val_accuracy")
    if trial is None:
        return None
    figures = {k: trial.user_attrs[k] for k in CANDIDATE_FIELDS if k in trial.user_attrs}
    return {**figures, "seconds": 0.0, "cost": 0.0, "repeat_of": trial.number}


def earlier_trial(study, arch: str, state: str, key: str):
    """The first trial of `arch` in `state` (a TrialState's name) that recorded `key`, or None."""
    from optuna.trial import TrialState
    for trial in study.get_trials(deepcopy=False, states=(TrialState[state],)):
        if trial.user_attrs.get("arch") == arch and key in trial.user_attrs:
            return trial
    return None


# --- the search -----------------------------------------------------------------------------------

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
    from .families import family_of_target
    from .measure import measurements_for
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
    from .artifacts import data_info
    from .train import check_distillation, open_teacher
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
            finished, started = [], []
            try:
                with quiet_optuna_errors():
                    # the callback hands over this process's trial (with a shared storage, others add theirs)
                    study.optimize(objective(settings, status_line, meter.clock, evaluate, probe, started),
                                   n_trials=1, catch=(UserError,),
                                   callbacks=[lambda _study, trial: finished.append(trial)])
            except ValueError as e:
                if not (started and taken_over(study, started[-1], e)):
                    raise
                say(f"  #{started[-1]}: failed by another worker, which found this one silent for over "
                    f"{GRACE_SECONDS} s (a paused process?): its candidate is run again", quiet)
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


def taken_over(study, number: int, error: ValueError) -> bool:
    """Whether `error` is Optuna refusing to record trial `number` because another worker has failed it: its
    heartbeat had stopped (HEARTBEAT_SECONDS), and the candidate is run again there."""
    return str(error).startswith("Cannot tell a ") and study.trials[number].state.name == "FAIL"


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


def retraining_estimate(costs: list, settings: TuneSettings, front: Optional[list] = None) -> float:
    """Seconds the final stage is expected to be charged, the room the search leaves for it. With a
    measured pick on the current `front`: what that front's final stage would train, each at its own
    cost (final_stage_seconds). Without one: the final stage's trainings (final_trainings) at the
    candidates' median cost per epoch and outside training. The first seed's Cortex-M55 export and
    count is in either: an overestimate of a few seconds. Nothing measured yet: 0, and the first
    candidate runs. Measured: the median of every candidate, the dear networks of the random start
    among them, reserved 287 s for a final stage that took 196 s; the median of the candidates faster
    than the pick left no room for the most accurate of them, whose training was dearer, and a poorer
    one became the second finalist. The search caps the room at RESERVE_SHARE of the budget, so that a
    dear candidate that is the pick for a while leaves the search room all the same; the pick is then
    made among the candidates whose own retraining fits what the search left, as long as that costs no
    accuracy beyond the margin (pick_within)."""
    if not settings.retrain or not costs:
        return 0.0
    pick = pick_best(front, settings.pick_accuracy) if front else None
    if pick is None or "cost" not in pick:
        return retraining_seconds(statistics.median(c["epoch"] for c in costs),
                                  statistics.median(c["rest"] for c in costs), settings)
    return final_stage_seconds(front, pick, settings)


def final_stage_seconds(front: list, pick: dict, settings: TuneSettings) -> float:
    """The pick's seeds and the other finalists (finalists_of, no limit) of `front`, each at its own cost."""
    others = finalists_of(front, pick, settings, None)[1:]
    return own_retraining(pick, settings) + sum(training_seconds(**own_costs(c, settings), settings=settings)
                                                for c in others)


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


def pick_within(pareto: list, settings: TuneSettings, left: Optional[float]) -> Optional[dict]:
    """The pick when `left` seconds of the budget remain (None: no limit): the pick of the whole front
    (pick_best) when its own retraining fits; else the pick among the candidates whose retraining fits
    and whose validation accuracy is within ACCURACY_MARGIN of that pick's; when none is, the front's
    pick all the same (the retraining then passes the budget: accuracy is not traded for time beyond
    the margin)."""
    best = pick_best(pareto, settings.pick_accuracy)
    if best is None or left is None or not settings.retrain or "cost" not in best \
            or own_retraining(best, settings) <= left:
        return best
    close = [c for c in pareto if "cost" in c and own_retraining(c, settings) <= left
             and c["val_accuracy"] >= best["val_accuracy"] - ACCURACY_MARGIN - 1e-12]
    return pick_best(close, settings.pick_accuracy) if close else best


def finalists_of(pareto: list, best: dict, settings: TuneSettings, left: Optional[float]) -> list:
    """The pick, then, up to --finalists in all, the front candidates faster than it, the most accurate
    (then the fastest) first, while their own trainings fit what `left` seconds (None: no limit) leave
    beside the pick's: a poorer candidate is not taken instead of one that does not fit (measured: such
    a second finalist, 855 of 900 after the short training, read 2,967 of the selection split)."""
    chosen = [best]
    room = None if left is None or "cost" not in best else left - own_retraining(best, settings)
    faster = sorted((c for c in pareto if c["npu_ms"] < best["npu_ms"] and "cost" in c),
                    key=lambda c: (-c["val_accuracy"], c["npu_ms"]))
    for candidate in faster:
        if len(chosen) >= settings.finalists:
            break
        cost = training_seconds(**own_costs(candidate, settings), settings=settings)
        if room is not None:
            if cost > room:
                break
            room -= cost
        chosen.append(candidate)
    return chosen


def own_costs(candidate: dict, settings: TuneSettings) -> dict:
    costs = trial_costs(candidate, settings)
    return {"epoch": costs["epoch"], "rest": costs["rest"]}


def choose_finalist(finalists: list, bar: float = SELECT_ACCURACY) -> dict:
    """The fastest finalist whose selection accuracy reaches `bar`, then the smallest program; when none
    does, the most accurate, then the fastest."""
    reaching = [f for f in finalists if f["select_accuracy"] >= bar - 1e-12]
    if reaching:
        return min(reaching, key=lambda f: (f["npu_ms"], f["program_bytes"]))
    return max(finalists, key=lambda f: (f["select_correct"], -f["npu_ms"]))


def next_trial_fits(elapsed: float, expected: float, budget: float, retraining: float) -> bool:
    """Whether one more candidate of `expected` seconds, and after it the final retraining
    (`retraining` seconds), still end within `budget` seconds."""
    return elapsed + expected + retraining <= budget


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
    if "pruned" in attrs:
        return f"  #{trial.number} {attrs['arch']}: not trained: {attrs['pruned']} ({attrs['seconds']:.0f} s)"
    if "val_accuracy" not in attrs:
        return f"  #{trial.number} {attrs.get('arch', '?')}: {trial.state.name.lower()}"
    from .stats import entry_accuracy
    repeat = f", as #{attrs['repeat_of']}" if "repeat_of" in attrs else ""
    val = entry_accuracy(attrs, key="val_accuracy", prefix="val_")
    return (f"  #{trial.number} {attrs['arch']}: val {val}, NPU {attrs['npu_ms']:.4f} ms, "
            f"{attrs['program_bytes']:,} B ({attrs['seconds']:.0f} s{repeat})")


# --- results --------------------------------------------------------------------------------------

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


def front_of(study) -> list:
    """The Pareto front's candidates, fastest first, a repeated architecture once (its first trial, the
    one measured)."""
    front = {}
    for trial in sorted(study.best_trials, key=lambda t: t.number):
        front.setdefault(trial.user_attrs["arch"], candidate_of(trial))
    return sorted(front.values(), key=lambda c: (c["npu_ms"], -c["val_accuracy"]))


def pick_best(pareto: list, bar: float = PICK_ACCURACY) -> Optional[dict]:
    """The fastest front candidate whose validation accuracy reaches `bar`, then the smallest program;
    when none reaches it, the fastest of those within ACCURACY_MARGIN of the most accurate one."""
    if not pareto:
        return None
    top = max(c["val_accuracy"] for c in pareto)
    bar = min(bar, top - ACCURACY_MARGIN)
    close = [c for c in pareto if c["val_accuracy"] >= bar - 1e-12]
    return min(close, key=lambda c: (c["npu_ms"], c["program_bytes"], -c["val_accuracy"]))


def run_finalists(finalists: list, settings: TuneSettings, quiet: bool, clock: Optional[Clock] = None) -> list:
    """Each finalist trained like the pick (--epochs, the tune's seed) into OUT/finalists/NNNN, exported
    for the target and read on the selection split on the NPU reference: its candidate figures, with
    select_correct, select_images, select_accuracy, its run, its program and seconds."""
    from .data import select_split
    from .stats import entry_accuracy
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
    from .train import train
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


def write_outputs(result: dict, out: Path) -> None:
    from .plots import plot_tune
    atomic_write_json(out / TUNE_JSON, result)
    plot_tune(result["candidates"], result["pareto"], result.get("best"), out / TUNE_PLOT, result.get("finalists"))


