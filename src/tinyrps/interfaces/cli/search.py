"""The searches on the command line: npu-sweep (every Ethos-U configuration) and tune (architectures)."""
from __future__ import annotations

from pathlib import Path

from ...infra.errors import UserError
from .options import (Command, add_teacher_options, check_data, check_out_folder, check_run, count, emit_json,
                      fraction, positive_number, seed_number)


def npu_sweep_arguments(s) -> None:
    s.add_argument("--run", required=True, type=Path, metavar="RUN", help="a run folder made by `tinyrps train`")
    s.add_argument("--accelerator", action="append", metavar="A", help="only this accelerator configuration, "
                   "e.g. ethos-u85-256; repeatable (default: all of them)")
    s.add_argument("--json", action="store_true", help="JSON on stdout instead of a table")


def cmd_npu_sweep(a):
    check_run(a.run)
    from ...hardware.families import ACCELERATORS
    unknown = [x for x in a.accelerator or () if x not in ACCELERATORS]
    if unknown:
        raise UserError(f"unknown accelerator {', '.join(unknown)}; valid: {', '.join(ACCELERATORS)}")
    from ...measure.npu_sweep import sweep, write_outputs
    result = sweep(a.run, quiet=a.quiet or a.json, accelerators=a.accelerator)
    written = write_outputs(result, a.run)
    if a.json:
        emit_json(result)
    else:
        from ..report.search import npu_sweep_table
        npu_sweep_table(result, written)


def tune_arguments(s) -> None:
    from ...tune.settings import CANDIDATE_EPOCHS, FINALISTS, PICK_ACCURACY, SELECT_ACCURACY, TUNED_EPOCHS
    s.add_argument("--data", required=True, type=Path, metavar="DIR", help="a folder made by `tinyrps data`")
    s.add_argument("--out", required=True, type=Path, metavar="DIR", help="folder to write")
    s.add_argument("--minutes", type=positive_number, default=10.0, metavar="M",
                   help="time budget of the whole tune, the final retraining included, in minutes of an idle "
                   "machine: under load, candidates are charged their CPU time when it is less than their wall "
                   "time, so the tune takes longer instead of measuring less (default: 10)")
    s.add_argument("--target", default="ethos-u85-128", metavar="T", help="Ethos-U target whose latency counts")
    s.add_argument("--max-npu-ms", type=positive_number, metavar="MS",
                   help="only candidates at most this slow on the target (default: no limit)")
    s.add_argument("--max-program-bytes", type=count, metavar="B",
                   help="only candidates whose program is at most this big (default: no limit)")
    s.add_argument("--storage", metavar="URL", help="Optuna storage shared by several workers: a database URL "
                   "(sqlite:///PATH.db, postgresql://...) or journal:PATH (default: sqlite in OUT)")
    s.add_argument("--candidate-epochs", type=count, default=CANDIDATE_EPOCHS, metavar="E",
                   help="training epochs of each candidate")
    s.add_argument("--epochs", type=count, default=TUNED_EPOCHS, metavar="E", help="training epochs of the pick")
    s.add_argument("--pick-seeds", type=count, default=3, metavar="N",
                   help="train the pick with N seeds (S, S+1, ...) and report the worst accuracy on the benchmark split")
    s.add_argument("--pick-accuracy", type=fraction, default=PICK_ACCURACY, metavar="A",
                   help="the pick is the fastest candidate whose validation accuracy after its short training "
                   "reaches A (when none does: the fastest within 0.5 points of the best)")
    s.add_argument("--finalists", type=count, default=FINALISTS, metavar="N",
                   help="train the pick and up to N-1 faster front candidates like the pick, and take the fastest "
                   f"that reads {SELECT_ACCURACY * 100:g} %% of the selection split (none: the most accurate)")
    s.add_argument("--seed", type=seed_number, default=0, metavar="S", help="random seed of the search and training")
    s.add_argument("--trials", type=count, metavar="N", help="at most this many candidates in this run "
                   "(default: as many as the budget allows)")
    s.add_argument("--no-retrain", action="store_true", help="search only: do not retrain the pick")
    add_teacher_options(s, tune=True)
    s.add_argument("--json", action="store_true", help="JSON on stdout instead of a table")


def cmd_tune(a):
    check_data(a.data, "train")
    check_out_folder(a.out)
    from ...hardware.families import family_of_target
    if not family_of_target(a.target).tunable:
        raise UserError(f"--target {a.target} is not an Ethos-U target: the tuner measures NPU latency "
                        "(e.g. --target ethos-u85-128)")
    from ...tune import TuneSettings, tune
    settings = TuneSettings(data=a.data, out=a.out, target=a.target, minutes=a.minutes, max_npu_ms=a.max_npu_ms,
                            max_program_bytes=a.max_program_bytes, storage=a.storage,
                            candidate_epochs=a.candidate_epochs, epochs=a.epochs, seed=a.seed, trials=a.trials,
                            retrain=not a.no_retrain, pick_seeds=a.pick_seeds, pick_accuracy=a.pick_accuracy,
                            finalists=a.finalists,
                            teacher=a.teacher,
                            distill_alpha=a.distill_alpha, distill_temperature=a.distill_temperature)
    result = tune(settings, quiet=a.quiet or a.json)
    if a.json:
        emit_json(result)
    else:
        from ..report.search import tune_table
        tune_table(result, a.out)


COMMANDS = (
    Command("npu-sweep", "Vela's estimate of the run's network for every Ethos-U accelerator, system config and "
            "memory mode; writes RUN/npu_sweep.json and RUN/npu_sweep.png", npu_sweep_arguments, cmd_npu_sweep),
    Command("tune", "search architectures for an Ethos-U target with Optuna (accuracy, NPU latency, program size); "
            "writes OUT/tune.json, OUT/tune.png and retrains the pick", tune_arguments, cmd_tune),
)
