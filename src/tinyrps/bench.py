"""Benchmarks: latency of one inference per variant, measured side by side in one process.

Each variant runs on its device with batch 1: a warm-up, then `runs` timed calls;
the median is reported with its ratio to eager (measured in the same run, so the
ratio survives a noisy shared machine better than absolute times). Also the data
renderer's throughput, and the Ethos-U / firmware figures recorded at export.
"""
from __future__ import annotations

import statistics
import time

import numpy as np

from . import variants
from .data import make_split
from .devices import default_device, open_device
from .progress import progress_bar

WARMUP = 10
RUNS = 200


def time_device(device, image: np.ndarray, runs: int, warmup: int = WARMUP, on_run=None) -> list:
    for _ in range(warmup):
        device.classify(image)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        device.classify(image)
        times.append((time.perf_counter() - start) * 1000)
        if on_run:
            on_run()
    return times


def render_throughput(count: int = 3000, seed: int = 0) -> float:
    make_split("train", 30, seed)  # warm the glyph cache
    start = time.perf_counter()
    make_split("train", count // 3, seed)
    return count / (time.perf_counter() - start)


def bench(run_dir, runs: int = RUNS, only=None, device_override=None, quiet=False) -> dict:
    ckpt = variants.checkpoint(run_dir)
    programs = variants.exported(run_dir)
    if only:
        programs = {t: p for t, p in programs.items() if t in only}
    image = make_split("test", 1, 1234)[0][:1]
    result = {"runs": runs, "warmup": WARMUP, "variants": {}}
    with progress_bar(quiet) as bar:
        entries = [("eager", "eager", ckpt)] + [(n, device_override or default_device(p), p) for n, p in programs.items()]
        for name, device_name, path in entries:
            with open_device(device_name, path) as device:
                n = min(runs, getattr(device, "bench_runs", runs))
                task = bar.add_task(f"{name} on {device_name}", total=n, status="")
                times = time_device(device, image, n, on_run=lambda: bar.advance(task))
            entry = {"device": device_name, "latency_ms": statistics.median(times), "runs": n,
                     "p90_ms": float(np.percentile(times, 90))}
            if name != "eager":
                sidecar = variants.sidecar(path)
                entry["size_bytes"] = path.stat().st_size
                for key in ("vela", "firmware"):
                    if key in sidecar:
                        entry[key] = sidecar[key]
            result["variants"][name] = entry
        eager_ms = result["variants"]["eager"]["latency_ms"]
        for name, entry in result["variants"].items():
            if name != "eager":
                entry["ratio_to_eager"] = entry["latency_ms"] / eager_ms
        result["eager_size_bytes"] = ckpt.stat().st_size
        result["render_images_per_s"] = render_throughput()
    return result
