"""The machine a result was made on, in one place for the run and the report.

A training's float sums depend on the CPU beyond the seed: torch picks its kernels for what the
CPU offers (AVX2, AVX-512, ...), and two CPUs sold under one name may offer different sets. So a
run records the CPU's model and torch's kernel set beside its seed, and "the same seed gives the
same bits" is a claim about runs whose records agree."""
from __future__ import annotations

import os
import platform


def cpu_model() -> str:
    """The CPU's model name (Linux's /proc/cpuinfo), else what the platform module knows."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def torch_record(threads: int) -> dict:
    """What decides a training's bits besides its seed and data: recorded in the run's metrics.json.
    For a process that has loaded torch (the caller trains)."""
    import torch
    return {"cpu": cpu_model(), "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "torch": torch.__version__, "threads": threads}


def line() -> str:
    """One line naming this machine (the report's)."""
    return (f"{cpu_model()} ({platform.machine()}), {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"{platform.platform(terse=True)}")
