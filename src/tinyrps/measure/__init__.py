"""The measure stage: what tools measure or estimate of an exported program, in a file of its own.

The export says what a program is (its descriptor, T.json); this stage says what it costs,
in T.measure.json beside it, recording the sha256 of the program it measured, so a figure is
never shown for another program than the one it was taken of:

    {"measurement_version": 1, "program": "T.pte", "program_sha256": "...", "target": "T",
     "<measurement>": {...}, ...}

Each measurement is one row of MEASUREMENTS: the families it applies to, what it
needs on this machine (a cheap check that says what to install) and the function that
takes it. Today:

    firmware  (cortex-m) the program on the tinyrps firmware of its core's emulated board in
              QEMU: flash and RAM (of the program's own firmware image: only its operators and
              the kernel variants its calls bind; the generic image's beside them), arena,
              instructions per inference and per kernel call, boot (tinyrps.measure.firmware);
              QEMU counts instructions, not cycles
    cycles    (cortex-m) an estimate of the cycles per inference and per kernel call on the real
              core, from one traced inference's executed instructions and a per-core timing
              model (tinyrps.measure.cycles): an estimate, never a measurement
    vela      (ethos-u)  Vela's performance estimate, read from the summary and per-layer
              tables the export kept beside the program (tinyrps.hardware.vela)
    cpu_part  (ethos-u)  the program's CPU part (the operators outside the delegate, and the
              delegate call's own copies and driver call) on the Cortex-M55 board in QEMU, the
              NPU's part on the NPU model over the NPU link (tinyrps.measure.npu_system);
              QEMU counts instructions, not cycles

Adding a measurement is one row and its function, here.
"""
from __future__ import annotations

import hashlib
import importlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from ..hardware import descriptor as descriptors
from ..infra.artifacts.files import atomic_write_json
from ..infra.errors import UserError

MEASUREMENT_VERSION = 1
VERSION_KEY = "measurement_version"
SUFFIX = ".measure.json"
FIRMWARE_TOOLS = ("arm-none-eabi-gcc", "qemu-system-arm", "cmake")


def _firmware_tools_missing() -> Optional[str]:
    from ..firmware.build import APT_ARM
    missing = [tool for tool in FIRMWARE_TOOLS if shutil.which(tool) is None]
    if missing:
        return (f"measuring a Cortex-M program needs {', '.join(missing)}, which "
                f"{'is' if len(missing) == 1 else 'are'} not installed: {APT_ARM} cmake")
    return None


OBJDUMP_MISSING = ("the cycle estimate needs arm-none-eabi-objdump, which is not installed: "
                   "apt-get install binutils-arm-none-eabi")


def _trace_tools_missing() -> Optional[str]:
    if shutil.which("arm-none-eabi-objdump") is None:
        return OBJDUMP_MISSING
    return _firmware_tools_missing()


@dataclass(frozen=True)
class Measurement:
    name: str                                   # its key in the measurement file
    families: tuple                             # the families whose programs it measures
    what: str
    function: str                               # "module:function" (pte, descriptor, quick) -> dict
    missing: Callable[[], Optional[str]] = lambda: None
    # what else the figures depend on besides the program's bytes ("module:function" -> str), recorded
    # with them: figures taken with another firmware are not the firmware's of today
    fingerprint: Optional[str] = None
    # "module:function" (target) -> bool: whether it is taken of that target's programs (default: all)
    applies: Optional[str] = None


MEASUREMENTS = (
    Measurement("firmware", ("cortex-m",), "the program on the firmware of its core's emulated board (QEMU)",
                "tinyrps.measure.firmware:measure_program", _firmware_tools_missing,
                fingerprint="tinyrps.measure.firmware:fingerprint"),
    Measurement("cycles", ("cortex-m",), "an estimate of the cycles on the real core (QEMU's trace, a timing model)",
                "tinyrps.measure.cycles:measure_program", _trace_tools_missing,
                fingerprint="tinyrps.measure.cycles:fingerprint", applies="tinyrps.measure.cycles:models"),
    Measurement("vela", ("ethos-u",), "Vela's estimate of the NPU's time and memory",
                "tinyrps.hardware.vela:measure_program"),
    Measurement("cpu_part", ("ethos-u",), "the CPU part on the Cortex-M55 board (QEMU), the NPU part on the NPU model",
                "tinyrps.measure.npu_system:measure_program", _firmware_tools_missing,
                fingerprint="tinyrps.measure.npu_system:fingerprint"),
)


def measurements_for(family: str, target: Optional[str] = None) -> tuple:
    """The kinds of measurement of a family's programs; with `target`, those taken of its programs."""
    return tuple(m for m in MEASUREMENTS if family in m.families
                 and (target is None or m.applies is None or _resolve(m.applies)(target)))


def path_of(pte) -> Path:
    pte = Path(pte)
    return pte.with_name(pte.stem + SUFFIX)


def measure(pte, quick: bool = False, only: Optional[tuple] = None, step: Callable = None,
            core: Optional[str] = None) -> dict:
    """Take every measurement of the program's family (or those named in `only`), write them to
    T.measure.json and return them. `quick`: only what a search needs (the firmware's instruction
    count, one run of the fastest kernels), not the whole profile. `step(name)` is called as each
    measurement starts (progress). `core`: the core of a Cortex-M program that has no
    descriptor (written by ExecuTorch's own flow); the result says it was assumed."""
    from ..hardware.pte import read_program
    pte = Path(pte)
    program = read_program(pte)
    described = descriptors.read(pte, program)
    if described is None and core:
        described = descriptors.assumed_cortex_m(pte, core)
    if described is None:
        raise UserError(f"{pte.name} has no descriptor ({descriptors.path_of(pte).name}): give the core it was "
                        "lowered for with --target (e.g. --target cortex-m55), or export it with `tinyrps export`")
    rows = [m for m in measurements_for(described.family, described.target) if only is None or m.name in only]
    for m in rows:
        missing = m.missing()
        if missing:
            raise UserError(missing)
    result = {VERSION_KEY: MEASUREMENT_VERSION, "program": pte.name,
              "program_sha256": hashlib.sha256(program).hexdigest(), "target": described.target}
    if not descriptors.path_of(pte).is_file():
        result["note"] = descriptors.assumed_note(described.target)
    for m in rows:
        if step is not None:
            step(m.name)
        figures = _resolve(m.function)(pte, described, quick=quick)
        if figures is None:         # nothing to take in this mode (a quick measurement)
            continue
        result[m.name] = figures
        if m.fingerprint:
            result.setdefault("fingerprints", {})[m.name] = _resolve(m.fingerprint)()
    atomic_write_json(path_of(pte), result)
    return result


def _resolve(reference: str):
    module, function = reference.split(":")
    return getattr(importlib.import_module(module), function)


def read(pte, needs: Optional[tuple] = None) -> Optional[dict]:
    """The measurements of T.pte, or None when there are none for the program as it is now (none
    taken, taken of other bytes or for another target, or with another firmware: a program exported
    again, or a firmware changed, must be measured again). With `needs` (measurement names), a file
    that has those is enough, whatever else its family measures now."""
    pte = Path(pte)
    path = path_of(pte)
    if not path.is_file() or not pte.is_file():
        return None
    try:
        raw = json.loads(path.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise UserError(f"{path} (the measurements of {pte.name}) is corrupt: measure again with "
                        f"`tinyrps measure --model {pte}`") from None
    if not isinstance(raw, dict) or raw.get(VERSION_KEY) != MEASUREMENT_VERSION:
        raise UserError(f"{path} is not a measurement file of version {MEASUREMENT_VERSION}: measure again with "
                        f"`tinyrps measure --model {pte}`")
    if raw.get("program_sha256") != hashlib.sha256(pte.read_bytes()).hexdigest():
        return None
    described = descriptors.read(pte)
    if described is None or raw.get("target") != described.target:
        return None     # identical bytes exported for another target (the M4's and M33's) run on another board
    for m in MEASUREMENTS:
        if m.name in raw and m.fingerprint and raw.get("fingerprints", {}).get(m.name) != _resolve(m.fingerprint)():
            return None            # taken with another firmware than today's
    if needs is not None:
        return raw if all(name in raw for name in needs) else None
    if not raw.get("firmware", {}).get("quick") and _measurements_missing(raw):
        return None                # taken before a measurement its family has now
    return raw


def _measurements_missing(raw: dict) -> bool:
    from ..hardware.families import family_of_target
    try:
        family = family_of_target(raw.get("target", "")).name
    except UserError:               # a program of no target of today (a user's module): what it has is all
        return False
    return any(m.name not in raw for m in measurements_for(family, raw.get("target")))


def measure_run(run_dir, quiet: bool = False, only_targets=None) -> dict:
    """Measure every exported program of a run whose family has measurements: target -> measurements."""
    from ..programs import exported
    results = {}
    for name, pte in exported(run_dir).items():
        if only_targets and name not in only_targets:
            continue
        described = descriptors.read(pte)
        if described is None or not measurements_for(described.family):
            continue
        results[name] = pte
    return measure_programs(results, quiet)


def measure_programs(programs: dict, quiet: bool = False) -> dict:
    """Measure each program (name -> T.pte) with a progress bar of their measurements (each takes
    seconds: a firmware built, QEMU run), and a line per program as it is done, whether or not
    stderr is a terminal (a log shows the lines): name -> measurements."""
    import time

    from ..infra.progress import progress_bar, say
    counts = {name: len(measurements_for(descriptors.read(pte).family)) for name, pte in programs.items()}
    results = {}
    with progress_bar(quiet) as bar:
        task = bar.add_task("measure", total=sum(counts.values()), status="")
        for n, (name, pte) in enumerate(programs.items(), 1):
            started = time.perf_counter()
            say(f"  measuring {name} ({n}/{len(programs)})", quiet)

            def step(measurement, name=name, first=[True]):
                if not first[0]:
                    bar.advance(task)
                first[0] = False
                bar.update(task, status=f"{name}: {measurement}")
            results[name] = measure(pte, step=step)
            bar.advance(task)
            say(f"  {name} measured in {time.perf_counter() - started:.0f} s: {summary_line(results[name])}", quiet)
    return results


# What the firmware's flash figure is of, by the image measured (tinyrps.measure.firmware.IMAGES).
FLASH_OF = {"program": " (the program's own firmware image)", "generic": " (the generic firmware image)"}


def summary_line(m: dict) -> str:
    """One line of a program's headline figures."""
    parts = []
    if "firmware" in m:
        fw = m["firmware"]
        line = (f"{fw['instructions_per_inference']:,} instructions per inference on {fw['board']} "
                f"({fw['kernels']} kernels; QEMU counts instructions, not cycles), arena {fw['arena_bytes']:,} B")
        if "largest_live_set_bytes" in fw:
            line += (f" (the plan's largest live set {fw['largest_live_set_bytes']:,} B, at call "
                     f"{fw['largest_live_set_call']}; gap {fw['arena_gap_bytes']:,} B)")
        # a quick measurement (--quick) has the instruction count only: no footprint to show
        parts.append(line + (f", flash {fw['flash_bytes']:,} B{FLASH_OF.get(fw.get('image'), '')}"
                             if "flash_bytes" in fw else " (--quick: no footprint)"))
    if "cycles" in m:
        c = m["cycles"]
        parts.append(f"about {c['estimated_cycles_per_inference'] / 1e6:.2f} M cycles per inference on a real {c['core']} "
                     f"(an estimate, +/-{c['uncertainty']:.0%}: {c['estimated_ms']:.1f} ms at "
                     f"{c['clock_hz'] / 1e6:g} MHz)")
    if "vela" in m:
        v = m["vela"]
        parts.append(f"Vela: {v['inference_ms']:.4f} ms, SRAM {v['sram_bytes'] / 1024:.1f} KiB")
    if "cpu_part" in m:
        c = m["cpu_part"]
        parts.append(f"CPU part: {c['instructions_per_inference']:,} instructions per inference on {c['board']} "
                     "(QEMU counts instructions, not cycles)")
    return "; ".join(parts)
