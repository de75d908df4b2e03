"""Benchmarks: latency of one inference per program, measured side by side in one process.

Torch runs on one thread for the whole benchmark: on a machine of two cores, torch's
intra-op pool and the ExecuTorch runtime's own thread pool (whose workers spin a while
after each call) take the cores from each other, and eager calls then stalled for
up to 160 ms (medians from 0.2 to 160 ms over runs of the same command). One image of
these networks gains little from a second thread; a stable baseline gains everything.

Every program's device stays open; each runs single-image calls in ROUNDS warmed-up
blocks, the programs taking turns block by block. The median is reported with its
ratio to eager (measured side by side, so the ratio survives a noisy shared machine
better than absolute times). Also the data renderer's throughput, and the Ethos-U /
firmware figures recorded at export.
"""
from __future__ import annotations

import contextlib
import statistics
import time

import numpy as np

from . import measure
from .data import make_split
from .devices import check_program_devices, default_device, open_device
from .infra.errors import UserError
from .infra.progress import progress_bar

# Untimed, once per device: each block warms up again before it is timed. 0.2 s is thousands of calls
# of a cpu program and five of an emulated board; with 0.5 s the medians were the same (eager 0.0702
# and 0.0710 ms against 0.0708 and 0.0710, two runs each) and the benchmark 2.6 s longer.
FIRST_WARMUP_SECONDS = 0.2
WARMUP_SECONDS = 0.03        # before each block: caches and thread pools after the other programs
BLOCK_SECONDS = 0.1          # each block runs at least this long ...
RUNS = 200                   # ... and all blocks of a program at least this many calls in all
ROUNDS = 10                  # blocks per program, taking turns: bursts of load on the shared
                             # machine (sub-second) then hit every program alike


def time_block(device, image: np.ndarray, runs: int, seconds: float = 0.0, warmup: float = WARMUP_SECONDS) -> list:
    """Warm up for `warmup` s, then time single-image calls (ms): at least `runs`, for at least `seconds`."""
    start = time.perf_counter()
    while time.perf_counter() - start < warmup:
        device.classify(image)
    times, start = [], time.perf_counter()
    while len(times) < runs or time.perf_counter() - start < seconds:
        t = time.perf_counter()
        device.classify(image)
        times.append((time.perf_counter() - t) * 1000)
    return times


def spread(times: list) -> dict:
    """Median and spread of one program's timed calls (ms): the interquartile range beside the median."""
    q1, median, q3 = (float(v) for v in np.percentile(times, [25, 50, 75]))
    return {"latency_ms": statistics.median(times), "runs": len(times), "q1_ms": q1, "q3_ms": q3,
            "iqr_ms": q3 - q1, "p90_ms": float(np.percentile(times, 90))}


def ratio_to(entry: dict, baseline: dict) -> dict:
    """The program's median over the baseline's, unless the baseline spreads too much to carry it:
    a baseline whose interquartile range, relative to its median, is larger than the ratio would
    show says nothing about that ratio (`ratio_refused` says why instead)."""
    ratio = entry["latency_ms"] / baseline["latency_ms"]
    relative_spread = baseline["iqr_ms"] / baseline["latency_ms"]
    if relative_spread > ratio:
        return {"ratio_to_eager": None,
                "ratio_refused": f"eager's spread (IQR {relative_spread:.0%} of its median) is larger than the ratio "
                                 f"({ratio:.3f}): run the benchmark again on a quieter machine"}
    return {"ratio_to_eager": ratio}


def runs_for(device, runs: int) -> int:
    """The timed runs to ask of `device`: `runs`, or fewer where the device asks for fewer."""
    return runs if device.bench_runs is None else min(runs, device.bench_runs)


# The measurements a benchmark shows beside its latencies (tinyrps.measure.MEASUREMENTS).
SHOWN_MEASUREMENTS = ("vela", "firmware", "cycles", "cpu_part")


def measured_figures(pte) -> dict:
    """The measure stage's figures of a program that a benchmark shows beside its latency."""
    measured = measure.read(pte) or {}
    return {key: measured[key] for key in SHOWN_MEASUREMENTS if key in measured}


def render_throughput(count: int = 3000, seed: int = 0) -> float:
    make_split("train", 30, seed)  # warm the glyph cache
    start = time.perf_counter()
    make_split("train", count // 3, seed)
    return count / (time.perf_counter() - start)


def bench(run_dir, runs: int = RUNS, only=None, device_override=None, quiet=False, board=None,
          device_options=None) -> dict:
    """Median single-image latency of eager and each exported program (all, or those named in
    `only`) on its device. `board` overrides the emulated board of Cortex-M programs on device
    mcu; `device_options`: device name -> more options to open it with.

    All devices stay open; each gets ROUNDS blocks of at least runs/ROUNDS timed calls
    and BLOCK_SECONDS, the programs taking turns block by block."""
    if runs < 1:
        raise UserError(f"--runs must be at least 1, got {runs}")
    from .programs import checkpoint, selected
    ckpt = checkpoint(run_dir)
    programs = selected(run_dir, only)
    check_program_devices(programs, device_override, board)
    device_options = device_options or {}
    image = make_split("test", 1, 1234)[0][:1]
    entries = [("eager", "eager", ckpt)] + [(n, device_override or default_device(p), p) for n, p in programs.items()]
    from .infra.artifacts.files import sha256_file
    result = {"runs": runs, "rounds": ROUNDS, "block_s": BLOCK_SECONDS, "programs": {},
              "checkpoint_sha256": sha256_file(ckpt)}
    from .infra.torch_settings import torch_threads
    with contextlib.ExitStack() as stack, progress_bar(quiet) as bar, torch_threads(1):
        devices, counts, times, tasks = {}, {}, {}, {}
        for name, device_name, path in entries:
            devices[name] = stack.enter_context(open_device(device_name, path, board=board,
                                                            **device_options.get(device_name, {})))
            counts[name] = runs_for(devices[name], runs)
            times[name] = []
            tasks[name] = bar.add_task(f"{name} on {device_name}", total=ROUNDS, status="blocks")
        for device in devices.values():
            time_block(device, image, 0, warmup=FIRST_WARMUP_SECONDS)
        for r in range(ROUNDS):
            for name, device in devices.items():
                block = counts[name] // ROUNDS + (1 if r < counts[name] % ROUNDS else 0)
                seconds = BLOCK_SECONDS if counts[name] == runs else 0.0  # a device asking for few runs gets few
                times[name] += time_block(device, image, block, seconds)
                bar.advance(tasks[name])
        for name, device_name, path in entries:
            entry = {"device": device_name, **spread(times[name])}
            if devices[name].simulated_by:   # a model of the hardware: its time is not the hardware's
                entry["simulated_by"] = devices[name].simulated_by
            if name != "eager":
                entry["size_bytes"] = path.stat().st_size
                entry["program_sha256"] = sha256_file(path)
                entry.update(measured_figures(path))
            result["programs"][name] = entry
        baseline = result["programs"]["eager"]
        for name, entry in result["programs"].items():
            if name != "eager":
                entry.update(ratio_to(entry, baseline))
        result["eager_size_bytes"] = ckpt.stat().st_size
        result["render_images_per_s"] = render_throughput()
    return result


def bench_program(pte, runs: int = RUNS, device_name=None, quiet=False, board=None, options=None,
                  profile: bool = False, core=None) -> dict:
    """One program of any kind, alone: the median latency of one inference on its device (`run` on
    seeded samples of its declared inputs; the measure stage's samples for a Cortex-M program), and
    the measure stage's figures of it (for a Cortex-M program: instructions per inference and per
    kernel call on its emulated board; taken now if the program has no current measurement).

    profile: also return, under "profile", the per-layer profile of every timed call where the
    device takes one (the native build: host nanoseconds) -- {"counter", "runs": one profile per
    timed call, "totals": each call's whole inference} -- or None where it takes none."""
    from pathlib import Path

    from .hardware import descriptor
    from .measure.firmware import measurement_inputs
    from .measure import measure as take, measurements_for
    from .infra.torch_settings import torch_threads
    if runs < 1:
        raise UserError(f"--runs must be at least 1, got {runs}")
    pte = Path(pte)
    described = descriptor.read(pte, pte.read_bytes())
    if described is None and core:
        described = descriptor.assumed_cortex_m(pte, core)
    if described is None:
        raise UserError(f"{pte.name} has no descriptor ({descriptor.path_of(pte).name}): give the core of a "
                        "Cortex-M program with --target (e.g. --target cortex-m55), or export it with "
                        "`tinyrps export` to benchmark it alone")
    check_program_devices({pte.stem: pte}, device_name, board)
    device_name = device_name or default_device(pte)
    samples = measurement_inputs(described)
    if isinstance(samples, np.ndarray):            # the RPS images, as the program's float input
        from .firmware.tensors import images_as_input
        samples = [images_as_input(samples)]
    with torch_threads(1), open_device(device_name, pte, board=board, **(options or {})) as device:
        if device.inputs is None:
            raise UserError(f"device '{device_name}' runs image classifiers only: benchmark {pte.name} "
                            "with --device native, mcu or executorch")
        count = runs_for(device, runs)
        one = [a[:1] for a in samples]
        device.run_batch(one)                       # warm up
        times, profiled = [], []
        for _ in range(count):
            start = time.perf_counter()
            run = device.run_batch(one)
            times.append((time.perf_counter() - start) * 1000)
            profiled.append(run)
        entry = {"device": device_name, **spread(times), "size_bytes": pte.stat().st_size,
                 "program_sha256": described.sha256}
        if not descriptor.path_of(pte).is_file():
            entry["note"] = descriptor.assumed_note(described.target)
        if device.simulated_by:
            entry["simulated_by"] = device.simulated_by
    if measurements_for(described.family):
        measured = measure.read(pte) or take(pte, core=core)
        entry.update({key: measured[key] for key in SHOWN_MEASUREMENTS if key in measured})
    result = {"runs": count, "rounds": 1, "block_s": 0.0, "programs": {pte.stem: entry}}
    if profile:
        result["profile"] = timed_profile(profiled)
    return result


def timed_profile(runs: list) -> "dict | None":
    """The per-layer profiles of timed one-sample runs (RunResults), one per run, or None where the
    device took none."""
    if not runs or any(r.layers is None for r in runs):
        return None
    totals = None
    if all(r.profile_totals is not None for r in runs):
        totals = [int(r.profile_totals[0]) for r in runs]
    return {"counter": runs[0].counter, "runs": [r.layers for r in runs], "totals": totals}
