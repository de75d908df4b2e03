#!/usr/bin/env python3
"""The default network on the ten Cortex-M targets: instructions per inference and bit-exactness, as a table.

Takes the programs `tinyrps export --run RUN --target T` wrote for the ten cores (each with its descriptor
beside it) and, for each, on the board its tinyrps.hardware.cores record names, with the firmware that
runs it there (its own build for the M0, M0+ and M23):

- instructions per inference with the fastest kernels the core allows (`tinyrps measure --quick`: the
  median over the measurement images; QEMU counts instructions, not cycles), and the arena;
- whether its int8 outputs on IMAGES fresh images equal ExecuTorch's reference operators replaying the
  same program (tinyrps.reference.cortex_m), bit for bit.

Prints the Markdown table of docs/benchmarks.md ("The ten Cortex-M targets"):

    for t in cortex-m55 cortex-m85 cortex-m33 cortex-m35p cortex-m23 cortex-m7 cortex-m4 cortex-m3 \\
             cortex-m0plus cortex-m0; do .venv/bin/tinyrps export --run out/run --target $t; done
    .venv/bin/python scripts/every_core.py out/run/export/cortex-m*.pte
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

IMAGES = 30          # fresh test images per program for the bit-exactness check
IMAGE_SEED = 11      # as the firmware tests' fresh images


def row(pte: Path, images: np.ndarray) -> list:
    from tinyrps.devices import open_device
    from tinyrps.devices.mcu import program_board, program_core, running_core
    from tinyrps.hardware.cores import get_core
    from tinyrps.measure import measure
    from tinyrps.reference.cortex_m import reference_int8
    core = get_core(program_core(pte))
    board = program_board(pte)
    firmware = measure(pte, quick=True)["firmware"]
    with open_device("mcu", pte, transport="batch") as device:
        device.classify(images)
        exact = np.array_equal(device.last_int8, reference_int8(pte, images))
    return [core.display, f"`{board.name}` ({running_core(board, core.name)})", firmware["kernels"],
            f"{firmware['instructions_per_inference']:,}", f"{firmware['arena_bytes']:,} B",
            f"{'yes' if exact else 'NO'} ({len(images)} images)"]


def main(argv=None) -> int:
    from tinyrps.data import make_split
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("programs", nargs="+", type=Path, help="the exported cortex-m*.pte programs")
    args = parser.parse_args(argv)
    images = make_split("test", IMAGES // 3 + 1, IMAGE_SEED)[0][:IMAGES]
    print("| core | board (the core that runs it) | kernels | instructions per inference | arena | bit-exact |")
    print("|---|---|---|---|---|---|")
    for pte in args.programs:
        print("| " + " | ".join(row(pte, images)) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
