"""One candidate: its NPU estimate before training (the probe), then a short training, the export
for the target and its figures (the measure stage's Vela estimate, the program's size, int8
accuracy on the TOSA reference); and the trial function that ties them to Optuna.
"""
from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Optional

from ..infra.errors import UserError
from .budget import Clock, Meter
from .selection import pick_best
from .settings import ACCURACY_MARGIN, ANCHOR, LATENCY_SLACK, OBJECTIVES, PROBE_ERROR, PROBE_IMAGES, TuneSettings
from .space import suggest
from .trials import front_of, measured_before, probed_before


def export_program(run_dir: Path, target: str) -> Path:
    """A run's program for `target`, exported with torch on one thread: the export runs the network
    one calibration image at a time, and torch's second thread only adds its waiting to each small
    operation (the same bytes; measured for c24-p-c48-p-c48-p-p3 at a load average of 2.6-3.6 on
    2 cores: 9.5-9.9 s of wall and CPU time on one thread against 22-37 s on two)."""
    from ..export import export_target
    from ..infra.torch_settings import torch_threads
    with torch_threads(1):
        return export_target(run_dir, target)


def evaluate_candidate(arch: str, run_dir: Path, settings: TuneSettings, status, meter: Meter) -> dict:
    """Train briefly, export for the target, and measure; see the module docstring.
    The figures include `training_cost`, the seconds the training was charged on `meter`."""
    from ..train import train
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
    from ..data import split_entry
    return split_entry(data_dir, "benchmark")["images"]


def npu_counts(pte: Path, data_dir: Path, split: str) -> dict:
    """How many images of a split an Ethos-U program reads right on the NPU reference (its TOSA
    graph): {"correct", "images"}, the counts an accuracy's interval needs (tinyrps.infra.stats)."""
    from ..data import load_split
    return read_right(pte, *load_split(data_dir, split))


def read_right(pte: Path, images, labels) -> dict:
    """How many of `images` an Ethos-U program reads as `labels` say on the NPU reference."""
    from ..devices import open_device
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
    from ..network.arch import describe_arch
    from ..measure import measure
    vela = measure(npu_pte, only=("vela",))["vela"]      # the CPU part is the same for every candidate
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

    from ..network.arch import describe_arch
    from ..hardware.descriptor import Origin
    from ..export import export_model
    from ..measure import measure
    from ..network.model import INPUT_SHAPE, TinyRPS
    from ..network.quantization import calibration_images, image_examples
    from ..infra.tempdirs import temp_dir
    from ..infra.torch_settings import torch_threads
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
    from ..network.arch import ARCHITECTURES
    pick, anchor = pick_best(front_of(study), settings.pick_accuracy), measured_before(study, ARCHITECTURES[ANCHOR])
    if pick is not None and anchor is not None and \
            pick["val_accuracy"] >= min(settings.pick_accuracy, anchor["val_accuracy"] - ACCURACY_MARGIN) - 1e-12:
        limits.append((LATENCY_SLACK * pick["npu_ms"],
                       f"{LATENCY_SLACK:g} x the pick's {pick['npu_ms']:.4f} ms (#{pick['number']})"))
    return min(limits) if limits else None


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
