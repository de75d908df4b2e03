#!/usr/bin/env python3
"""Start-up benchmark: wall time of whole `tinyrps` processes, as a user starts them.

Each case runs REPEAT times as a fresh process (`python -m tinyrps ...`); the best
time is the one least disturbed by other work on the machine, the median shows the
spread, and the CPU time (user + system, best run) what the process itself costs when the
cores are shared. Cases: `tinyrps --help`, one `classify` of one image with RUN's
int8-xnnpack program, `export --list`, one user error of every command (`user_errors`)
and the user errors that need RUN's programs (`run_user_errors`: RUN holds int8-xnnpack,
fp32 and cortex-m55); tests/test_startup.py checks that each is one line, exit 2, and
imports nothing heavy. For scale: an empty Python process and `import torch`.

    .venv/bin/python scripts/bench_startup.py --run out/run [--repeat 7] [--json]
"""
from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Budgets the project holds itself to (seconds, best of the runs); every user error: USER_ERROR_S.
TARGETS = {"tinyrps --help": 0.5, "tinyrps export --list": 0.5, "tinyrps classify (int8-xnnpack, one image)": 1.5}
USER_ERROR_S = 0.5


def user_errors(missing: Path, a_file: Path) -> dict:
    """One user error of every command: command -> its arguments. `missing` does not exist,
    `a_file` is a file where a folder belongs. Each must be one line on stderr, exit code 2
    (and run_user_errors those that need a run)."""
    return {
        "data": ["data", "--out", str(a_file)],
        "train": ["train", "--data", str(missing), "--out", str(missing)],
        "export": ["export", "--run", str(missing), "--target", "fp32"],
        "export --module": ["export", "--module", f"{missing}.py:Net", "--input-shape", "1,3,8,8",
                            "--calibration", "random", "--target", "cortex-m55"],
        "measure": ["measure", "--model", str(missing)],
        "eval": ["eval", "--run", str(missing)],
        "classify": ["classify", "--model", str(missing), str(a_file)],
        "bench": ["bench", "--run", str(missing)],
        "play": ["play", "--model", str(missing)],
        "run": ["run", "--model", str(missing), "--inputs", str(a_file), "--out", str(missing)],
        "all": ["all", "--out", str(a_file)],
        "serve": ["serve", "--run", str(missing)],
        "npu-sweep": ["npu-sweep", "--run", str(missing)],
        "tune": ["tune", "--data", str(missing), "--out", str(missing)],
        "deploy fvp": ["deploy", "fvp", "--model", str(missing), "--executorch-root", str(missing)],
        "deploy library": ["deploy", "library", "--model", str(missing), "--out", str(missing)],
        "a bad number": ["eval", "--run", str(missing), "--limit", "0"],
    }


def run_user_errors(run: Path, scratch: Path) -> dict:
    """User errors that need a run with its programs (fp32 and cortex-m55 exported): a device of
    another family, a --board no selected program boots, an option the target does not take, a bad
    --arch. Each is refused before any stage starts. `scratch`: a folder for outputs never written."""
    fp32, m55 = run / "export" / "fp32.pte", run / "export" / "cortex-m55.pte"
    return {
        "eval, a Cortex-M program on npu-ref": ["eval", "--run", str(run), "--program", "cortex-m55",
                                                "--device", "npu-ref"],
        "eval, --board for a cpu program": ["eval", "--run", str(run), "--program", "fp32", "--board", "mps2-an505"],
        "bench, a Cortex-M program on executorch": ["bench", "--run", str(run), "--program", "cortex-m55", "--device", "executorch"],
        "bench --model, --board for a cpu program": ["bench", "--model", str(fp32), "--board", "mps2-an505"],
        "bench --model, a Cortex-M program on npu-ref": ["bench", "--model", str(m55), "--device", "npu-ref"],
        "export, an option of another family": ["export", "--run", str(run), "--target", "cortex-m55",
                                                "--system-config", "Ethos_U85_SYS_DRAM_Mid"],
        "train, a bad architecture": ["train", "--data", str(run), "--out", str(scratch / "t"), "--arch", "c16-q"],
        "all, a bad architecture": ["all", "--out", str(scratch / "a"), "--arch", "c16-q"],
    }


def time_process(command: list, expect: int) -> tuple:
    """(wall seconds, CPU seconds) of one run. CPU time (user + system) hardly grows when
    other work competes for the cores; wall time does."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != expect:
        raise SystemExit(f"bench_startup: {' '.join(command)} exited with {done.returncode}, "
                         f"expected {expect}: {done.stderr.strip()[-300:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def cases(run: Path, image: Path) -> dict:
    """name -> (command, expected exit code)."""
    tinyrps = [sys.executable, "-m", "tinyrps"]
    program = run / "export" / "int8-xnnpack.pte"
    for target in ("int8-xnnpack", "fp32", "cortex-m55", "ethos-u85-128"):
        if not (run / "export" / f"{target}.pte").is_file():
            raise SystemExit(f"bench_startup: {run / 'export' / target}.pte not found: export it with "
                             f"`tinyrps export --run {run} --target {target}`")
    return {
        "python (empty process)": ([sys.executable, "-c", "pass"], 0),
        "python -c 'import torch'": ([sys.executable, "-c", "import torch"], 0),
        "tinyrps --help": (tinyrps + ["--help"], 0),
        "tinyrps export --list": (tinyrps + ["export", "--list"], 0),
        "tinyrps classify (int8-xnnpack, one image)": (tinyrps + ["classify", "--model", str(program), str(image)], 0),
        "tinyrps classify (ethos-u85-128 on npu-ref, one image)":
            (tinyrps + ["classify", "--model", str(run / "export" / "ethos-u85-128.pte"), str(image)], 0),
        **{f"user error: {name}": (tinyrps + args, 2) for name, args in user_errors(run / "missing", image).items()},
        **{f"user error: {name}": (tinyrps + args, 2) for name, args in run_user_errors(run, image.parent).items()},
    }


def write_image(folder: Path) -> Path:
    """One rendered letter as a PNG, as a user's picture would come in."""
    from PIL import Image

    from tinyrps.data import make_split
    images, _ = make_split("test", 1, seed=5)
    path = folder / "move.png"
    Image.fromarray(images[0]).resize((112, 112)).save(path)
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, required=True, help="a run folder with export/int8-xnnpack.pte")
    parser.add_argument("--repeat", type=int, default=7, help="whole-process runs per case (default: 7)")
    parser.add_argument("--json", action="store_true", help="JSON on stdout instead of a table")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tinyrps-startup.") as work:
        commands = cases(args.run, write_image(Path(work)))
        walls, cpus = {name: [] for name in commands}, {name: [] for name in commands}
        for _ in range(args.repeat):        # cases take turns, so load bursts hit all of them alike
            for name, (command, expect) in commands.items():
                wall, cpu = time_process(command, expect)
                walls[name].append(wall)
                cpus[name].append(cpu)
    result = {name: {"best_s": round(min(walls[name]), 3), "median_s": round(statistics.median(walls[name]), 3),
                     "best_cpu_s": round(min(cpus[name]), 3), "runs": args.repeat,
                     "target_s": USER_ERROR_S if name.startswith("user error") else TARGETS.get(name)}
              for name in commands}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        width = max(map(len, result)) + 2
        print(f"{'case (whole process)':<{width}}{'best':>8}{'median':>9}{'CPU':>8}{'target':>9}")
        for name, r in result.items():
            target = f"≤ {r['target_s']:.1f}" if r["target_s"] else ""
            print(f"{name:<{width}}{r['best_s']:>7.2f}s{r['median_s']:>8.2f}s{r['best_cpu_s']:>7.2f}s{target:>9}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
