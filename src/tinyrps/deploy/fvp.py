"""Run an Ethos-U program on Arm's Corstone FVP with ExecuTorch's bare-metal `arm_executor_runner`.

The FVP (Corstone-320: Cortex-M85 + Ethos-U85; Corstone-300: Cortex-M55 +
Ethos-U55) is a free download from Arm under an EULA, and the runner is built
from an ExecuTorch source checkout of the release that made the program, with
the Arm GNU toolchain (prerequisites.py says which of these are missing and how
to get each). Two ways to run:

- without images, the runner is built with the program baked in; it feeds the
  program an input of ones (an all-white image), prints the output tensor and its
  cycle counts, and the result is compared with the npu-ref device on that image;
- with images, a semihosting runner is built once; for each image the FVP runs it
  on the program and the image's input tensor (host files in a short temporary
  folder), and each result is reported as `classify --json` reports it, with the
  NPU and CPU cycle counts.

docs/fvp.md has the same steps by hand.
"""
from __future__ import annotations

import dataclasses
import shutil
import sys
from collections import namedtuple
from pathlib import Path

import numpy as np

from ..infra.errors import UserError
from ..network.labels import IMAGE_SIZE, LABELS
from ..hardware.families import npu_family
from ..infra.tempdirs import temp_dir
from .prerequisites import FVPS, check_all, find_fvp, find_toolchain, missing_prerequisites_message
from .runner_build import build_environment, build_runner, flatc_path, refuse_paths_with_spaces
from .runner_output import cycle_counts, output_file, parse_runner_output, problems, read_output_tensor
from .simulate import fvp_command, refuse_unsafe_folder, run_fvp, semihosting_cmd_line, semihosting_parameters

# The runner reserves this much of the NPU's dedicated SRAM for its fast scratch area in
# the Dedicated_Sram memory modes (384 KB: the size for plain Dedicated_Sram and for the
# build script's default, Dedicated_Sram_384KB). Vela's plain Dedicated_Sram has no cap.
RUNNER_FAST_SCRATCH_BYTES = 384 * 1024

# Short names in the semihosting folder keep the runner's command line far from its limit.
PROGRAM_NAME, INPUT_NAME, OUTPUT_BASE = "m.pte", "x.bin", "out"

# One deployment: its program, ExecuTorch checkout, settings, FVP binary, work folder, environment.
FvpSetup = namedtuple("FvpSetup", "model root settings fvp workdir env")


# --- the program --------------------------------------------------------------------------------

def program_settings(model) -> dict:
    """Accelerator, system config and memory mode of an Ethos-U program, from its descriptor, and
    the SRAM Vela plans for it (the measure stage's figure, taken here if it was not yet)."""
    from ..hardware import descriptor
    from ..hardware.pte import family_of_program, read_program
    model = Path(model)
    program = read_program(model)
    family = family_of_program(program, model)
    if family != "ethos-u":
        raise UserError(f"{model.name} is a {family} program: the FVP flow runs Ethos-U programs; "
                        f"export one with `tinyrps export --target ethos-u85-128`")
    described = descriptor.read(model, program)
    if described is None:
        raise UserError(f"{descriptor.path_of(model)} (the program's descriptor) is missing: export the program again")
    settings = dataclasses.asdict(described.info)
    if npu_family(settings["accelerator"]) not in FVPS:
        raise UserError(f"there is no Corstone FVP flow for {settings['accelerator']} in ExecuTorch's runner; "
                        f"export an ethos-u85-* (Corstone-320) or ethos-u55-* (Corstone-300) target")
    return {**settings, "sram_bytes": vela_figures(model)["sram_bytes"]}


def vela_figures(model: Path) -> dict:
    """Vela's estimate of the program: its measurement, taken now if there is none for these bytes."""
    from .. import measure
    measured = measure.read(model, needs=("vela",)) or measure.measure(model, only=("vela",))
    return measured["vela"]


def check_memory_fits(model: Path, settings: dict) -> None:
    """In the Dedicated_Sram modes the program's NPU scratch must fit the runner's fast scratch area."""
    mode, needed = settings["memory_mode"], settings["sram_bytes"]
    if mode.startswith("Dedicated_Sram") and needed > RUNNER_FAST_SCRATCH_BYTES:
        raise UserError(f"{Path(model).name} needs {needed:,} bytes of NPU SRAM ({mode}), more than the "
                        f"{RUNNER_FAST_SCRATCH_BYTES:,} bytes ExecuTorch's runner reserves for it: export with "
                        f"`tinyrps export --target {settings['accelerator']} --memory-mode Dedicated_Sram_384KB`")


def input_tensor_bytes(image: np.ndarray) -> bytes:
    """The program's input tensor for one uint8 [28,28] image: float32 [1,1,28,28] = image / 255,
    the same conversion as every other device."""
    from ..network.model import images_to_tensor
    return images_to_tensor(np.asarray(image)[None]).numpy().tobytes()


def prepare_images(paths) -> list:
    """[(path, uint8 [28,28])] through the project's image loader (a bad file fails here, before any build)."""
    from ..network.images import read_image
    return [(Path(p), read_image(p).image) for p in paths]


def check_prerequisites(model, executorch_root, fvp=None, toolchain=None) -> list:
    """[Check(name, ok, detail)] for everything running `model` on the FVP needs."""
    settings = program_settings(model)
    return check_all(settings["accelerator"], Path(executorch_root).expanduser(), fvp, toolchain)


# --- the flows ----------------------------------------------------------------------------------

def deploy_fvp(model, executorch_root, fvp=None, toolchain=None, workdir=None, images=None,
               timeout_s: int = 600, build_timeout_s: int = 3600):
    """Build arm_executor_runner and run the program on the Corstone FVP.

    Without `images`: the runner with the program baked in, on its input of ones; returns
    one report (dict). With `images`: the semihosting runner, once per image; returns a
    list of `classify --json` entries with `"device": "fvp"` and the cycle counts.
    Build and FVP logs go to `workdir` (default: RUN/export/T.fvp/ next to RUN/export/T.pte).
    """
    if timeout_s <= 0 or build_timeout_s <= 0:
        raise UserError(f"the time limit must be a positive number of seconds, not {min(timeout_s, build_timeout_s)}")
    model = Path(model).resolve()
    settings = program_settings(model)
    check_memory_fits(model, settings)
    prepared = prepare_images(images) if images else []
    setup = prepare_setup(model, executorch_root, settings, fvp, toolchain, workdir)
    if prepared:
        return classify_on_fvp(setup, prepared, timeout_s, build_timeout_s)
    return run_with_ones(setup, timeout_s, build_timeout_s)


def prepare_setup(model: Path, executorch_root, settings: dict, fvp, toolchain, workdir) -> FvpSetup:
    root = Path(executorch_root).expanduser().resolve()
    checks = check_all(settings["accelerator"], root, fvp, toolchain)
    if not all(c.ok for c in checks):
        raise UserError(missing_prerequisites_message(checks))
    workdir = Path(workdir).expanduser().resolve() if workdir else model.parent / f"{model.stem}.fvp"
    refuse_paths_with_spaces({"the ExecuTorch checkout": root, "the work folder": workdir,
                              "this Python": sys.executable, "the executorch package's flatc": flatc_path()})
    workdir.mkdir(parents=True, exist_ok=True)
    env = build_environment(find_toolchain(root, toolchain))
    return FvpSetup(model, root, settings, find_fvp(settings["accelerator"], root, fvp), workdir, env)


def run_with_ones(t: FvpSetup, timeout_s: int, build_timeout_s: int) -> dict:
    """The runner with the program baked in, on its built-in input of ones."""
    refuse_paths_with_spaces({"the program": t.model})
    elf = build_runner(t.root, t.settings, t.workdir / "build", t.workdir / "build.log", t.env,
                       build_timeout_s, pte=t.model)
    cmd = fvp_command(t.fvp, t.settings["accelerator"], elf, timeout_s)
    log = run_fvp(cmd, t.workdir, t.env, t.workdir / "fvp.log", timeout_s)
    parsed = parse_runner_output(log.read_text(errors="replace"))
    if parsed["errors"] or not parsed["logits"]:
        problem = parsed["errors"][0] if parsed["errors"] else "no output tensor printed"
        raise UserError(f"the runner did not complete on the FVP ({problem}); see {log}")
    return ones_report(t, elf, log, parsed)


def classify_on_fvp(t: FvpSetup, prepared: list, timeout_s: int, build_timeout_s: int) -> list:
    """The semihosting runner, built once, run on the FVP once per image."""
    elf = build_runner(t.root, t.settings, t.workdir / "build-semihosting", t.workdir / "build-semihosting.log",
                       t.env, build_timeout_s)
    expected = npu_ref_logits(t.model, np.stack([image for _, image in prepared]))
    step = output_step(t.model)
    entries = []
    for i, (path, image) in enumerate(prepared):
        log = t.workdir / f"fvp-image{i}.log"
        logits, counts = classify_one(t, elf, path, image, log, timeout_s)
        entries.append(image_entry(path, logits, counts, log, expected[i], step))
    return entries


def classify_one(t: FvpSetup, elf: Path, path: Path, image: np.ndarray, log: Path, timeout_s: int) -> tuple:
    """One FVP run of the semihosting runner: program and input tensor in, logits and cycle counts out."""
    accelerator = t.settings["accelerator"]
    with temp_dir("fvp") as tmp:
        folder = Path(tmp)
        refuse_unsafe_folder(folder)
        shutil.copyfile(t.model, folder / PROGRAM_NAME)
        (folder / INPUT_NAME).write_bytes(input_tensor_bytes(image))
        cmd_line = semihosting_cmd_line(PROGRAM_NAME, INPUT_NAME, OUTPUT_BASE)
        cmd = fvp_command(t.fvp, accelerator, elf, timeout_s, semihosting_parameters(accelerator, folder, cmd_line))
        run_fvp(cmd, folder, t.env, log, timeout_s)
        text = log.read_text(errors="replace")
        found = problems(text)
        if found:
            raise UserError(f"the runner failed on the FVP for {path} ({found[0]}); see {log}")
        logits = read_output_tensor(output_file(folder, OUTPUT_BASE), len(LABELS), log)
    return logits, cycle_counts(text)


# --- reports ------------------------------------------------------------------------------------

def npu_ref_logits(model: Path, images: np.ndarray) -> np.ndarray:
    """What the NPU computes for these images, from the TOSA reference model on the host."""
    from ..devices import open_device
    with open_device("npu-ref", model) as device:
        return device.classify(images)


def output_step(model: Path) -> float:
    """One step of the program's output quantization: how far two NPU results may differ."""
    from ..hardware import descriptor
    described = descriptor.read(model)
    return described.info.quantization["output"]["scale"] if described is not None else 0.0


def agreement(logits: np.ndarray, expected: np.ndarray, step: float) -> dict:
    diff = float(np.abs(logits - expected).max()) if logits.shape == expected.shape else None
    return {"npu_ref_logits": expected.tolist(), "max_abs_diff_npu_ref": diff,
            "matches_npu_ref": diff is not None and diff <= step * 1.001}


def image_entry(path: Path, logits: np.ndarray, counts: dict, log: Path, expected: np.ndarray, step: float) -> dict:
    """One image's result in the form `classify --json` uses, with the FVP's cycle counts."""
    from ..network.labels import softmax
    probs = softmax(np.asarray(logits, np.float32))
    return {"path": str(path), "label": LABELS[int(probs.argmax())], "confidence": float(probs.max()),
            "probabilities": {label: float(v) for label, v in zip(LABELS, probs)},
            "logits": [float(v) for v in logits], "device": "fvp",
            "npu_cycles": counts["npu_cycles"], "cpu_cycles": counts["cpu_cycles"],
            "ethos_u_delegate_cpu_cycles": counts["ethos_u_delegate_cpu_cycles"],
            **agreement(np.asarray(logits, np.float32), expected, step), "log": str(log)}


def ones_report(t: FvpSetup, elf: Path, log: Path, parsed: dict) -> dict:
    white = np.full((1, IMAGE_SIZE, IMAGE_SIZE), 255, np.uint8)  # the runner's input of ones
    expected = npu_ref_logits(t.model, white)[0]
    logits = np.array(parsed["logits"], np.float32)
    vela = vela_figures(t.model)
    return {
        "model": str(t.model), "target": t.settings["accelerator"], "fvp": str(t.fvp), "elf": str(elf),
        "log": str(log), "input": "ones (an all-white image), the runner's built-in input",
        "logits": logits.tolist(), "predicted": LABELS[int(logits.argmax())] if len(logits) else None,
        **agreement(logits, expected, output_step(t.model)),
        "npu_cycles": parsed["npu_cycles"], "vela_npu_cycles": vela.get("npu_cycles"),
        "npu_ms_at_vela_clock": (parsed["npu_cycles"] / vela["clock_hz"] * 1000
                                 if parsed["npu_cycles"] and vela.get("clock_hz") else None),
        "cpu_cycles": parsed["cpu_cycles"], "ethos_u_delegate_cpu_cycles": parsed["ethos_u_delegate_cpu_cycles"],
    }
