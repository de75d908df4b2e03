"""The tuner's constants and settings, each rule's number in one place; nothing here imports torch
(the command line reads the defaults). Where a number was measured, docs/benchmarks.md has the
measurement.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..network.arch import ARCH_EPOCHS

# The tuner retrains its pick this long: the small networks it finds learn like `fast`
# (measured: its default search's pick reads 98.67 % after 4 epochs, 99.33 % after 10).
TUNED_EPOCHS = ARCH_EPOCHS["fast"]
# The tuner's candidates are trained this long (`tune --candidate-epochs`), and its pick is the fastest
# candidate whose validation accuracy after that training reaches PICK_ACCURACY (`--pick-accuracy`;
# see tinyrps.tune).
CANDIDATE_EPOCHS = 3
PICK_ACCURACY = 0.99
# The tuner's finalists (`tune --finalists`; see tinyrps.tune): the pick, and the front candidates faster
# than it with the best validation accuracy, up to FINALISTS in all. Each is trained like the pick
# (--epochs, the tune's seed) and read on the selection split (tinyrps.data.SELECT: as large as the benchmark split, held out like it), which tells
# networks apart where the short training and 900 validation images do not: over three pools of
# candidates trained 10 epochs, the validation count ranked them against the benchmark count with a
# Spearman rho of 0.22-0.84, the 3-epoch count with 0.41-0.64 (docs/benchmarks.md).
FINALISTS = 2
# The pick among the finalists: the fastest whose selection accuracy reaches SELECT_ACCURACY; when none
# does, the most accurate. 99.6 %: the 99.5 % a pick is judged by on the benchmark split, with three images
# of 3,000 to spare for the training seeds the selection does not see.
SELECT_ACCURACY = 0.996

STUDY_NAME = "tinyrps-tune"
STUDY_DB = "study.db"
TUNE_JSON = "tune.json"
TUNE_PLOT = "tune.png"
MCU_TARGET = "cortex-m55"

# The pick is the fastest candidate of the front whose validation accuracy (int8, on the NPU reference,
# after the candidates' short training) reaches PICK_ACCURACY (tinyrps.network.arch, `--pick-accuracy`): a bar,
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

# A worker's trial whose heartbeat (a write to an RDB storage every HEARTBEAT_SECONDS) has stopped for
# GRACE_SECONDS is taken as lost (its process killed, its machine gone): the next worker to start a trial
# marks it failed and runs it again (STALE_RETRIES times at most: a candidate that kills its worker each
# time is not tried for ever). Heartbeats are rows of Optuna's own table; a minute of silence is far
# longer than a busy machine holds a thread back.
HEARTBEAT_SECONDS = 10
GRACE_SECONDS = 60
STALE_RETRIES = 2


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
        from ..train import TrainConfig
        return TrainConfig(data=str(self.data), epochs=epochs, seed=seed, arch=arch,
                           teacher=str(self.teacher) if self.teacher else None, distill_alpha=self.distill_alpha,
                           distill_temperature=self.distill_temperature)
