"""Evaluation: accuracy of eager and every exported program on the test split (or the
larger benchmark split, `--split benchmark`).

Each program runs on its own device (host runtime, NPU reference, MCU), never on
the eager model. Reports accuracy, agreement of predictions with eager, max |logit
difference| from eager, and whatever the target family adds (bit-exactness for the
Cortex-M firmware, agreement with the int8 CPU model for Ethos-U).
"""
from __future__ import annotations

import concurrent.futures
import importlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .infra.artifacts.records import check_run_data
from .infra.artifacts.files import sha256_file
from .data import load_split
from .devices import check_program_devices, default_device, device_class, device_row, open_device
from .infra.errors import UserError
from .hardware.families import get_family, targets
from .network.labels import EVAL_SPLITS, LABELS
from .infra.progress import progress_bar
from .hardware.pte import program_family
from .infra.torch_settings import torch_threads

CHUNK = 50
OUT_OF_PROCESS_WORKERS = 3
# benchmark (3,000 images by default) is for the devices that compute on this machine's CPU; an
# emulated board would take minutes over it (see check_split_devices).


@dataclass
class EvalContext:
    """What a family's check (its reference module's `evaluate`) sees of one program."""
    target: str
    pte: object                 # Path of the .pte
    images: np.ndarray          # uint8 test images
    labels: np.ndarray
    logits: np.ndarray          # this program's logits on its device
    device: object              # the open Device that produced them
    predictions: dict           # program name -> predicted labels of the programs evaluated before


def family_check(target_name: str):
    """The `evaluate` function of the target's family's reference module, or None."""
    target = targets().get(target_name)
    reference = get_family(target.family).reference if target else None
    return importlib.import_module(f"tinyrps.reference.{reference}").evaluate if reference else None


def classify_with_progress(device, images, bar, description) -> np.ndarray:
    task = bar.add_task(description, total=len(images), status="")
    out = []
    for i in range(0, len(images), CHUNK):
        out.append(device.classify(images[i:i + CHUNK]))
        bar.advance(task, len(images[i:i + CHUNK]))
    return np.concatenate(out) if out else np.zeros((0, len(LABELS)), np.float32)


def evaluate(run_dir, data_dir=None, only=None, device_override=None, limit=None, quiet=False, board=None,
             device_options=None, etdump=None, split: str = "test") -> dict:
    """Evaluate eager and the exported programs (all, or those named in `only`) on the first
    `limit` images of `split` (all when None). `board` overrides the emulated board of Cortex-M
    programs on device mcu; `device_options`: device name -> more options to open it with.

    Each program's entry holds its accuracy and the counts behind it (`correct` of `images`), so
    that a reader can give its interval (tinyrps.infra.stats); the result names the split and its sha256.

    etdump: a path to write the per-layer profile of the evaluation to, as an ETDump file for
    ExecuTorch's Inspector (one Cortex-M program on mcu or native; see profiled_program): one run
    of the file per batch the device ran, each the mean per image of that batch."""
    if limit is not None and limit < 1:
        raise UserError(f"--limit must be at least 1, got {limit}")
    if split not in EVAL_SPLITS:
        raise UserError(f"--split must be one of {', '.join(EVAL_SPLITS)}, got {split}")
    from .programs import checkpoint, selected
    ckpt = checkpoint(run_dir)
    programs = selected(run_dir, only)
    device_options = dict(device_options or {})
    profiled = None
    if etdump is not None:      # first: its own line says what --etdump needs
        profiled = profiled_program(programs, device_override, device_options)
        if profiled[1] == "mcu":     # the batch file carries the per-layer profile; the serial link none
            device_options["mcu"] = {**device_options.get("mcu", {}), "transport": "batch"}
    check_program_devices(programs, device_override, board)
    check_split_devices(split, programs, device_override)
    # the run's own test split must be the one of the data it was trained on; another --data is the user's
    # choice. The benchmark split is checked against the data's own record (a run made before the data had
    # one records none).
    data_dir = data_dir or check_run_data(run_dir, ["test"], data_option=True)
    images, labels = load_split(data_dir, split)
    if limit is not None:
        images, labels = images[:limit], labels[:limit]
    split_sha256 = sha256_file(Path(data_dir) / f"{split}.npz")
    result = {"split": split, "images": int(len(images)), "split_sha256": split_sha256,
              "programs": {}, "data": str(data_dir), "checkpoint_sha256": sha256_file(ckpt)}
    if split == "test":     # the keys of results written before there was a choice of split
        result.update(test_images=int(len(images)), test_split_sha256=split_sha256)
    from .reference.cortex_m import replays_in_background
    cortex_m = [pte for pte in programs.values() if program_family(pte) == "cortex-m"]
    with replays_in_background(cortex_m, images), progress_bar(quiet) as bar:
        with open_device("eager", ckpt) as eager:
            eager_logits = classify_with_progress(eager, images, bar, "eager")
        predictions = {"eager": eager_logits.argmax(1)}
        result["programs"]["eager"] = {**scored(eager_logits, labels), "device": "eager"}
        entries = evaluate_programs(programs, device_override, images, labels, eager_logits, predictions, bar, board,
                                    device_options, profiled is not None)
        for name in programs:
            entry = entries[name].result() if isinstance(entries[name], concurrent.futures.Future) else entries[name]
            entry.pop("_predictions", None)
            profiles = entry.pop("_profiles", None)
            if profiled is not None and name == profiled[0]:
                result["etdump"] = write_eval_profile(etdump, programs[name], name, entry["device"], profiles)
            result["programs"][name] = entry
    return result


def evaluate_programs(programs: dict, device_override, images, labels, eager_logits, predictions: dict, bar, board,
                      device_options: dict, profile: bool) -> dict:
    """Each program's entry (evaluate_program), or the Future of it for a program whose device computes
    in another process. `predictions` gains the predictions of the programs evaluated in this thread."""
    entries, computed = {}, {}      # computed: for the in-process devices, in this thread only
    in_worker = {name for name, pte in programs.items()
                 if device_class(device_override or default_device(pte)).out_of_process}
    if in_worker:
        import_shared_modules_first()
    # Devices that compute in another process (the emulated boards) run in worker threads
    # while the in-process ones use this one; the main job's three at once: two at a time, the
    # Cortex-M55's QEMU (the slowest: Helium is emulated instruction by instruction) ran last
    # and alone, and the evaluation took 59 s instead of 51 on two cores. Every thread may run
    # torch (the Cortex-M reference, the int8 CPU model), so torch's process-wide pool gets
    # one thread each, set here in the main thread for the whole concurrent part.
    with torch_threads(1), concurrent.futures.ThreadPoolExecutor(max_workers=OUT_OF_PROCESS_WORKERS) as pool:
        for name, pte in programs.items():
            device_name = device_override or default_device(pte)
            if name in in_worker:
                entries[name] = pool.submit(evaluate_program, name, pte, device_name, images, labels,
                                            eager_logits, dict(predictions), bar, board,
                                            device_options.get(device_name, {}), profile)
        for name, pte in programs.items():
            if name not in entries:
                device_name = device_override or default_device(pte)
                entries[name] = evaluate_program(name, pte, device_name, images, labels, eager_logits,
                                                 predictions, bar, board, device_options.get(device_name, {}),
                                                 profile, computed)
                predictions[name] = entries[name].pop("_predictions")
    return entries


def shared_or_classified(device, images, bar, description, name, computed) -> tuple:
    """(the device's logits of the images, None), or, where a program evaluated before on these
    images had a device computing the same function (Device.computation: the Ethos-U55 and U85
    programs of one model run one TOSA graph in the reference model), (its logits, its name): bit
    for bit what this device would give, without computing them twice."""
    key = device.computation() if computed is not None else None
    if key is not None and key in computed:
        source, logits = computed[key]
        bar.add_task(f"{description}: the outputs of {source} (same computation)", total=len(images),
                     completed=len(images), status="")
        return logits, source
    logits = classify_with_progress(device, images, bar, description)
    if key is not None:
        computed[key] = (name, logits)
    return logits, None


def profiled_program(programs: dict, device_override, device_options: dict) -> tuple:
    """(name, device) of the one program eval --etdump profiles; one line when it cannot."""
    from .hardware.families import get_family
    if len(programs) != 1:
        raise UserError(f"--etdump profiles one program and {len(programs)} are selected "
                        f"({', '.join(programs) or 'none'}): name one Cortex-M program with --program T")
    (name, pte), = programs.items()
    device_name = device_override or default_device(pte)
    if not device_row(device_name).profiles or device_name not in get_family(program_family(pte)).devices:
        raise UserError(f"--etdump needs a Cortex-M program on --device mcu or native (the runtimes that profile "
                        f"each kernel call), not {name} on {device_name}")
    if device_options.get(device_name, {}).get("port"):
        raise UserError("--etdump needs the emulated board: a board on a serial port sends no per-layer profile")
    return name, device_name


def write_eval_profile(path, pte, name: str, device_name: str, profiles: list) -> dict:
    """The ETDump of eval --etdump: one run per batch the device ran (its mean per image)."""
    from .hardware.etdump import mean_total, write_etdump
    if not profiles:
        raise UserError(f"{name} on {device_name} took no per-layer profile: the device sent none")
    counter = profiles[0].counter
    totals = [mean_total(r) for r in profiles]
    totals = None if None in totals else totals
    write_etdump(path, [r.layers for r in profiles], program=pte, counter=counter, totals=totals)
    return {"path": str(path), "program": name, "counter": counter, "runs": len(profiles),
            "images": int(sum(len(r.outputs[0]) for r in profiles))}


def import_shared_modules_first() -> None:
    """The families' checks import ExecuTorch's exir (and torchao through it), in the
    worker threads and in this one. Two threads importing one package with circular imports
    for the first time can deadlock (importlib raises _DeadlockError), so this thread
    imports it before the workers start."""
    import executorch.exir  # noqa: F401


def evaluate_program(name, pte, device_name, images, labels, eager_logits, predictions, bar, board=None,
                     options=None, profile: bool = False, computed: dict = None) -> dict:
    """One program on its device: accuracy, agreement with eager, and the family's own checks; with
    `profile`, the device's RunResults that took a per-layer profile under "_profiles". `computed`:
    the logits of the programs evaluated before, by what their devices compute (shared_or_classified)."""
    with open_device(device_name, pte, bulk=True, board=board, **(options or {})) as device:
        if profile:
            device.profiles = []
        logits, outputs_of = shared_or_classified(device, images, bar, f"{name} on {device_name}", name, computed)
        agreement_eager = float((logits.argmax(1) == predictions["eager"]).mean()) if len(images) else 0.0
        # "agreement" is with eager unless the family compares with a closer reference
        # (Ethos-U: the int8 CPU model) and says so in "agreement_with".
        entry = {**scored(logits, labels), "device": device_name, "program_sha256": sha256_file(pte),
                 "agreement": agreement_eager, "agreement_with": "eager", "agreement_eager": agreement_eager,
                 "max_abs_logit_diff": float(np.abs(logits - eager_logits).max()) if len(images) else 0.0}
        if outputs_of:
            entry["outputs_of"] = outputs_of
        check = family_check(name)
        if check:
            entry.update(check(EvalContext(name, pte, images, labels, logits, device, dict(predictions))))
    entry["_predictions"] = logits.argmax(1)
    if profile:
        entry["_profiles"] = device.profiles
    return entry


def accuracy(logits: np.ndarray, labels: np.ndarray) -> float:
    return float((logits.argmax(1) == labels).mean()) if len(labels) else 0.0


def scored(logits: np.ndarray, labels: np.ndarray) -> dict:
    """accuracy, and the counts it is made of (an interval needs them: tinyrps.infra.stats)."""
    return {"accuracy": accuracy(logits, labels), "correct": int((logits.argmax(1) == labels).sum()),
            "images": int(len(labels))}


def check_split_devices(split: str, programs: dict, device_override) -> None:
    """Before any work: the benchmark split only on the devices that compute on this machine's CPU.
    Each emulated board runs its firmware in QEMU, one image after another; over the benchmark's
    thousands of images that is minutes a board, so they stay on the test split, and the Cortex-M
    programs read the benchmark on --device native (the same C runtime built for this machine, whose
    outputs the board's equal bit for bit)."""
    if split == "test":
        return
    slow = [name for name, pte in programs.items() if device_row(device_override or default_device(pte)).slow]
    if slow:
        raise UserError(f"--split {split} is for eager, executorch, npu-ref and native, not the emulated boards "
                        f"({', '.join(slow)} on mcu): give --device native for the Cortex-M programs, or "
                        f"leave them out with --program T")
