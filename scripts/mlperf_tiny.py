#!/usr/bin/env python3
"""MLPerf Tiny's four reference networks on the three emulated boards: export, measure, keep the figures.

Also the deployed networks of tinyrps.devtools.zoo.DEPLOYED (MobileNetV2, MobileNetV3-small), when named with
--network (with --core cortex-m55: docs/cortex-m-networks.md quotes their Cortex-M55 figures).

Each network of tinyrps.devtools.zoo is exported for the Cortex-M55, M33 and M4 (`zoo.export_network`, the
export driver with its replay check) and measured by the measure stage on its core's emulated board
(flash, arena, instructions per inference and per kernel call, with the fastest kernels the core
allows and with plain C; QEMU counts instructions, not cycles). The descriptors and measurements
are kept in docs/figures/mlperf/, from which scripts/doc_figures.py writes the tables of the README
and docs/benchmarks.md:

    .venv/bin/python scripts/mlperf_tiny.py            # export and measure all twelve, keep the files
    .venv/bin/python scripts/mlperf_tiny.py --network resnet8 --core cortex-m55
    .venv/bin/python scripts/mlperf_tiny.py --network mobilenet-v2 --network mobilenet-v3-small --core cortex-m55
    .venv/bin/python scripts/mlperf_tiny.py --io int8 --quick --core cortex-m55   # integer inputs and outputs

--io int8 exports the programs with integer inputs and outputs (NAME-CORE-int8.pte); --quick measures only
the arena and the instructions per inference, from one run of the generic firmware image (no files kept).
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIGURES = REPO / "docs" / "figures" / "mlperf"
CORES = ("cortex-m55", "cortex-m33", "cortex-m4")


def main(argv=None) -> int:
    from tinyrps import measure
    from tinyrps.devtools import zoo
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--network", action="append", choices=[*zoo.NETWORKS, *zoo.DEPLOYED],
                        help="only this network (the deployed ones only when named)")
    parser.add_argument("--core", action="append", choices=CORES, help="only this core")
    parser.add_argument("--io", choices=("float", "int8"), default="float", help="the programs' inputs and outputs")
    parser.add_argument("--quick", action="store_true", help="the arena and instructions only; keep no files")
    args = parser.parse_args(argv)
    FIGURES.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tinyrps-mlperf.") as work:
        for name in args.network or list(zoo.NETWORKS):
            for core in args.core or CORES:
                start = time.perf_counter()
                pte = zoo.export_network(name, core, Path(work), io=args.io)
                measured = measure.measure(pte, quick=args.quick)
                if args.quick:
                    fw = measured["firmware"]
                    print(f"{pte.stem}: {fw['instructions_per_inference']:,} instructions on {fw['board']} "
                          f"(QEMU's count), arena {fw['arena_bytes']:,} B", file=sys.stderr)
                    continue
                fw = measured["firmware"]
                for path in (pte.with_suffix(".json"), measure.path_of(pte)):
                    shutil.copyfile(path, FIGURES / path.name)
                print(f"{name} {core}: {fw['instructions_per_inference']:,} instructions "
                      f"({fw['instructions_per_mac']} per MAC, {fw['kernels']}) on {fw['board']}, arena "
                      f"{fw['arena_bytes']:,} B, flash {fw['flash_bytes']:,} B in {time.perf_counter() - start:.0f} s",
                      file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
