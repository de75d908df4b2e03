#!/usr/bin/env python3
"""How many programs of tinyrps.devtools.coverage_programs the Cortex-M flow exports and the runtime runs.

Each program goes through `tinyrps export --module coverage_programs.py:NAME --target cortex-m55
--calibration random` (the command's own code, in this process), then runs on the `native` device on
eight seeded float32 inputs, and its outputs are compared with ExecuTorch's replay of the same .pte
(tinyrps.reference.cortex_m.replay). Each program ends in one of:

    exact      exported, ran, every output equal to the replay's, bit for bit
    differs    exported, ran, some output not equal (the largest difference is listed)
    refused    export or run said no in one line (the line is listed)
    traceback  the command reported a bug in tinyrps

    PYTHONPATH=src .venv/bin/python scripts/operator_coverage.py [--only NAME ...] [--json FILE]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

CHECK_INPUTS = 8
SEED = 7


def export(name: str, shapes, out: Path) -> tuple:
    """(exit status, the command's last line of error output) of `tinyrps export --module` on one program."""
    from tinyrps.devtools import coverage_programs
    from tinyrps.interfaces.cli import main
    args = ["export", "--module", f"{coverage_programs.__file__}:{name}", "--target", "cortex-m55",
            "--calibration", "random", "--out", str(out), "--name", name, "--quiet"]
    for shape in shapes:
        args += ["--input-shape", ",".join(map(str, shape))]
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = main(args)
    lines = [line for line in err.getvalue().splitlines() if line.strip()]
    return status, (lines[-1] if lines else "")


def run(pte: Path, shapes) -> tuple:
    """("exact" | "differs" | "refused", detail) of the program on the native device against the replay."""
    from tinyrps.devices.native import NativeDevice
    from tinyrps.infra.errors import UserError
    from tinyrps.reference.cortex_m import replay
    rng = np.random.default_rng(SEED)
    batch = [rng.standard_normal((CHECK_INPUTS, *s)).astype(np.float32) for s in shapes]
    try:
        with NativeDevice(pte) as device:
            got = device.run_batch(batch).outputs
    except UserError as e:
        return "refused", str(e)
    worst = 0.0
    for i in range(CHECK_INPUTS):
        want = replay(pte.read_bytes(), [x[i] for x in batch])
        for g, w in zip(got, want):
            g = np.asarray(g[i]).reshape(w.shape)
            if not np.array_equal(g, w, equal_nan=True):
                worst = max(worst, float(np.nanmax(np.abs(g.astype(np.float64) - w.astype(np.float64)))))
    return ("exact", "") if worst == 0 else ("differs", f"largest difference {worst:.3g}")


def main(argv=None) -> int:
    from tinyrps.devtools.coverage_programs import PROGRAMS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", help="only this program (repeatable)")
    parser.add_argument("--json", type=Path, help="write every program's outcome here")
    args = parser.parse_args(argv)
    names = args.only or list(PROGRAMS)
    outcomes = {}
    with tempfile.TemporaryDirectory(prefix="coverage-") as work:
        for name in names:
            start = time.monotonic()
            factory, shapes = PROGRAMS[name]
            status, line = export(name, shapes, Path(work))
            if status == 0:
                outcome, detail = run(Path(work) / f"{name}.pte", shapes)
            elif status == 2:
                outcome, detail = "refused", line
            else:
                outcome, detail = "traceback", line
            outcomes[name] = {"outcome": outcome, "detail": detail}
            print(f"{name:32s} {outcome:9s} {time.monotonic() - start:5.1f} s  {detail[:160]}", flush=True)
    counts = Counter(o["outcome"] for o in outcomes.values())
    total = len(outcomes)
    print(f"\n{total} programs: " + ", ".join(f"{counts[k]} {k}" for k in ("exact", "differs", "refused", "traceback"))
          + f"; {100 * (counts['exact'] + counts['differs']) / max(total, 1):.1f} % run")
    if args.json:
        args.json.write_text(json.dumps(outcomes, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
