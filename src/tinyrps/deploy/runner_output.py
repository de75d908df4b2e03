"""What `arm_executor_runner` leaves behind: its log (cycle counts, problems, printed outputs)
and, for the semihosting runner, its output tensor files.

The runner logs `<level> [executorch:<file>:<line> <function>()] <message>` with level
D/I/E/F, prints its performance report through the same log, prints each output
element as `Output[i][j]: (float) v` (the runner with the program baked in), and the
semihosting runner writes output tensor i as raw bytes to `<base>-<i>.bin`.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..infra.errors import UserError

_NUMBER = r"([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf))"
_CYCLES = {
    "npu_cycles": r"ethosu_pmu_cycle_cntr\s*:\s*(\d+)",
    "ethos_u_delegate_cpu_cycles": r"ethos-u\s*:\s*cycle_cnt\s*:\s*(\d+)",
    "cpu_cycles": r"Inference runtime:\s*(\d+)\s*CPU cycles",
    "inferences": r"NPU Inferences\s*:\s*(\d+)",
}
# A line is a problem when it is an Error/Fatal log line, a critical message of the FVP,
# a hard fault or failed assertion, the time limit, or the failed method load that the
# runner logs at Info level before carrying on.
_PROBLEM = re.compile(r"^(?:[EF][: ]|\[critical\])"
                      r"|Hard fault"
                      r"|[Aa]ssertion"
                      r"|Loading of method \S+ failed"
                      r"|CPU time has been exceeded")


def problems(text: str) -> list:
    """The log's lines that say the run went wrong, in order."""
    lines = (line.rstrip("\r").strip() for line in text.splitlines())
    return [line for line in lines if _PROBLEM.search(line)]


def cycle_counts(text: str) -> dict:
    """The runner's Ethos-U PMU count and CPU cycle counts (None where not printed)."""
    counts = {}
    for key, pattern in _CYCLES.items():
        match = re.search(pattern, text)
        counts[key] = int(match[1]) if match else None
    return counts


def printed_outputs(text: str) -> list:
    """Elements of output 0 as printed by the runner with the program baked in ([] if incomplete)."""
    values = {int(j): float(v) for j, v in re.findall(rf"Output\[0\]\[(\d+)\]:\s*\(float\)\s*{_NUMBER}", text)}
    return [values[j] for j in sorted(values)] if sorted(values) == list(range(len(values))) else []


def parse_runner_output(text: str) -> dict:
    """Printed logits, problem lines and cycle counts from one run's log."""
    return {"logits": printed_outputs(text), "errors": problems(text), **cycle_counts(text)}


def output_file(folder: Path, base: str, index: int = 0) -> Path:
    return Path(folder) / f"{base}-{index}.bin"


def read_output_tensor(path: Path, count: int, log: Path) -> np.ndarray:
    """A float32 output tensor of `count` elements written by the semihosting runner."""
    if not path.is_file():
        raise UserError(f"the runner wrote no {path.name}; see {log}")
    data = path.read_bytes()
    if len(data) != count * 4:
        raise UserError(f"{path.name} holds {len(data)} bytes, expected {count} float32 values "
                        f"({count * 4} bytes); see {log}")
    return np.frombuffer(data, dtype="<f4").copy()
