"""Configuration advisor: a run's int8 network through Vela for every Ethos-U configuration.

The run's checkpoint is quantized and lowered to TOSA once (the graph the Ethos-U
export compiles; an up-to-date export's kept `out.tosa` is used as it is). Vela then
compiles that graph for every accelerator configuration x system config x memory
mode of its vela.ini, in a pool of two worker processes. Each accepted combination
gives Vela's estimate, read exactly as the measure stage reads an export's
(`tinyrps.hardware.vela.vela_summary`); each refused one is kept with Vela's reason.

    sweep(run_dir) -> {"tosa": {...}, "configs": [{accelerator, system_config, memory_mode,
                       inference_ms, inferences_per_s, sram_bytes, flash_bytes, dram_bytes,
                       utilisation, utilisation_total, ...}, ...],
                       "refused": [{accelerator, system_config, memory_mode, reason}, ...]}
"""
from __future__ import annotations

import concurrent.futures
import hashlib
import os
import shutil
from pathlib import Path

from ..hardware import descriptor
from ..infra.artifacts.files import atomic_write_json, sha256_file
from ..infra.artifacts.records import run_config
from ..infra.errors import UserError
from ..hardware.families import ACCELERATORS, get_family, macs_per_cycle
from ..infra.progress import progress_bar
from ..infra.tempdirs import temp_dir

# The configuration whose TOSA graph the sweep compiles (Vela takes it for every accelerator).
LOWERING_TARGET = "ethos-u85-128"
WORKERS = 2
SWEEP_JSON = "npu_sweep.json"
SWEEP_PLOT = "npu_sweep.png"
CONFIG_FIELDS = ("accelerator", "system_config", "memory_mode", "inference_ms", "inferences_per_s", "sram_bytes",
                 "flash_bytes", "dram_bytes", "utilisation", "utilisation_total")


def combinations(accelerators=None) -> list:
    """(accelerator, system config, memory mode) for each accelerator (default: all) and every
    pair that vela.ini defines."""
    from ..hardware.vela import vela_config_names
    unknown = [a for a in accelerators or () if a not in ACCELERATORS]
    if unknown:
        raise UserError(f"unknown accelerator {', '.join(unknown)}; valid: {', '.join(ACCELERATORS)}")
    systems, modes = vela_config_names()
    chosen = [a for a in ACCELERATORS if not accelerators or a in accelerators]
    return [(a, s, m) for a in chosen for s in systems for m in modes]


def run_tosa(run_dir: Path, work: Path) -> Path:
    """The run's int8 TOSA graph: the Ethos-U export's kept graph when it was made from the
    checkpoint as it is now, else lowered here (quantization and TOSA lowering, once)."""
    import torch

    from ..export.ethos_u import compile_spec, lower, resolve_config
    from ..infra.library_noise import output_to
    from ..network.model import INPUT_SHAPE, load_model
    from ..network.quantization import calibration_images, image_examples
    from ..hardware.vela import TOSA_NAME
    checkpoint = run_dir / "model.pt"
    if not checkpoint.is_file():
        raise UserError(f"no checkpoint at {checkpoint}: create it with `tinyrps train --data DATA --out {run_dir}`")
    pte = run_dir / "export" / f"{LOWERING_TARGET}.pte"
    described = descriptor.read(pte) if pte.is_file() else None
    kept = run_dir / "export" / LOWERING_TARGET / TOSA_NAME
    if (described is not None and kept.is_file() and described.origin.checkpoint_sha256 == sha256_file(checkpoint)
            and described.info.tosa_sha256 == sha256_file(kept)):
        return kept
    intermediates = work / "lowering"
    intermediates.mkdir()
    system_config, memory_mode = resolve_config(LOWERING_TARGET, {})
    spec = compile_spec(LOWERING_TARGET, system_config, memory_mode, intermediates)
    with output_to(work / "lowering.log"):
        lower(load_model(checkpoint), (torch.zeros(INPUT_SHAPE),),
              image_examples(calibration_images(run_config(run_dir)["data"])), spec)
    return intermediates / TOSA_NAME


# --- one Vela compilation, in a worker process ----------------------------------------------------

def _quiet_worker() -> None:
    """Vela prints its reports on stdout; a worker's stdout is not the user's."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)


def compile_one(tosa: str, accelerator: str, system_config: str, memory_mode: str) -> dict:
    """Vela on the graph for one combination: its estimate, or the reason it refused."""
    from ethosu.vela import vela

    from ..hardware.vela import vela_summary
    key = {"accelerator": accelerator, "system_config": system_config, "memory_mode": memory_mode}
    with temp_dir("vela") as out:
        args = [f"--accelerator-config={accelerator}", "--config=Arm/vela.ini", "--output-format=raw",
                f"--system-config={system_config}", f"--memory-mode={memory_mode}", f"--output-dir={out}", tosa]
        try:
            vela.main(args)
        except SystemExit as e:       # Vela's argument parser
            return {**key, "reason": f"Vela exited with {e.code}"}
        except Exception as e:        # noqa: BLE001 - every refusal is reported with Vela's words
            return {**key, "reason": refusal_reason(e)}
        # Vela names its outputs after the graph's file: <graph>_summary_<system config>.csv
        summary = vela_summary(Path(out) / f"{Path(tosa).stem}_summary_{system_config}.csv", accelerator)
    return {**key, **{k: v for k, v in summary.items() if k not in key}}


def refusal_reason(error: BaseException) -> str:
    text = " ".join(str(error).split()).strip("'\"") or type(error).__name__
    return text.removeprefix("Error: ")


# --- the sweep ------------------------------------------------------------------------------------

def sweep(run_dir, quiet: bool = False, workers: int = WORKERS, accelerators=None) -> dict:
    """Vela's estimate of the run's network for every Ethos-U configuration (of the given
    accelerators, default all); see the module docstring."""
    from ..hardware.vela import vela_version
    missing = get_family("ethos-u").available()
    if missing:
        raise UserError(f"cannot sweep the Ethos-U configurations: {missing}")
    run_dir = Path(run_dir)
    jobs = combinations(accelerators)
    with temp_dir("sweep") as work:
        tosa = run_tosa(run_dir, Path(work))
        graph = Path(work) / "graph.tosa"   # a private copy: the run's file may be re-exported meanwhile
        shutil.copyfile(tosa, graph)
        results = run_pool(str(graph), jobs, quiet, workers)
        tosa_info = {"source": str(tosa) if not str(tosa).startswith(work) else "lowered for this sweep",
                     "sha256": hashlib.sha256(graph.read_bytes()).hexdigest()}
    configs = [r for r in results if "reason" not in r]
    refused = [r for r in results if "reason" in r]
    for config in configs:
        config["mac_units"] = macs_per_cycle(config["accelerator"])
    return {"run": str(run_dir), "vela_version": vela_version(), "tosa": tosa_info,
            "accelerators": list(dict.fromkeys(job[0] for job in jobs)), "combinations": len(jobs),
            "configs": configs, "refused": refused}


def run_pool(tosa: str, jobs: list, quiet: bool, workers: int) -> list:
    """compile_one for every job on `workers` processes; results in the order of `jobs`."""
    results = [None] * len(jobs)
    with progress_bar(quiet) as bar, concurrent.futures.ProcessPoolExecutor(
            max_workers=workers, initializer=_quiet_worker) as pool:
        task = bar.add_task("Vela, every configuration", total=len(jobs), status="")
        futures = {pool.submit(compile_one, tosa, *job): i for i, job in enumerate(jobs)}
        for future in concurrent.futures.as_completed(futures):
            results[futures[future]] = future.result()
            bar.advance(task)
    return results


def write_outputs(result: dict, run_dir) -> dict:
    """RUN/npu_sweep.json and RUN/npu_sweep.png; returns their paths."""
    from ..interfaces.plots import plot_npu_sweep
    run_dir = Path(run_dir)
    json_path, plot_path = run_dir / SWEEP_JSON, run_dir / SWEEP_PLOT
    atomic_write_json(json_path, result)
    plot_npu_sweep(result["configs"], plot_path)
    return {"json": str(json_path), "plot": str(plot_path)}


def refusal_groups(refused: list) -> dict:
    """Vela's reason -> [{system_config, memory_modes, accelerators}, ...]: a few lines, not hundreds."""
    by_reason = {}
    for r in refused:
        per_system = by_reason.setdefault(r["reason"], {}).setdefault(r["system_config"], ({}, {}))
        per_system[0][r["memory_mode"]] = None
        per_system[1][r["accelerator"]] = None
    return {reason: [{"system_config": system, "memory_modes": list(modes), "accelerators": list(accelerators)}
                     for system, (modes, accelerators) in systems.items()]
            for reason, systems in by_reason.items()}
