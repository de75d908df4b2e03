#!/usr/bin/env python3
"""MLPerf Tiny's four reference networks as Ethos-U programs: the command stream run by tinyrps's NPU model
(`npu`) against the TOSA graph in the TOSA reference model (`npu-ref`), bit for bit; with --mcu, also the
whole system: the emulated Cortex-M55 running the program with its NPU part handed to the NPU model (`mcu`).

Each network of tinyrps.devtools.zoo is exported for each accelerator (the export driver: TOSA, then Vela),
and its 64 check inputs (zoo.bit_exact_inputs) run on both devices. A network the Arm lowering or Vela
refuses, or whose program uses what the NPU model does not implement, is recorded with the reason, in one
line. The figures go to docs/figures/mlperf-npu.json, and a
table to stdout:

    .venv/bin/python scripts/mlperf_npu.py                          # ethos-u55-128 and ethos-u85-256
    .venv/bin/python scripts/mlperf_npu.py --network resnet8 --target ethos-u85-256
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
FIGURES = REPO / "docs" / "figures" / "mlperf-npu.json"
TARGETS = ("ethos-u55-128", "ethos-u85-256")


def run_on(device_name: str, pte: Path, inputs: list) -> tuple:
    """(outputs, int8 outputs, seconds) of the program on one device, for all inputs at once."""
    from tinyrps.devices import open_device
    with open_device(device_name, pte) as device:
        start = time.perf_counter()
        result = device.run_batch(inputs)
        return result.outputs, result.int8, time.perf_counter() - start


def check(name: str, target: str, work: Path, mcu: bool = False) -> dict:
    from tinyrps.devtools import zoo
    from tinyrps.infra.errors import UserError
    entry = {"network": name, "target": target, "inputs": zoo.BIT_EXACT_INPUTS}
    try:
        pte = zoo.export_network(name, target, work)
    except UserError as e:
        return {**entry, "refused": str(e)}
    inputs = zoo.bit_exact_inputs(name)
    try:
        model, model_int8, model_s = run_on("npu", pte, inputs)
    except UserError as e:           # what the NPU model does not implement, named in one line
        return {**entry, "program_bytes": pte.stat().st_size, "unsupported": str(e)}
    ref, ref_int8, ref_s = run_on("npu-ref", pte, inputs)
    entry = {**entry, "program_bytes": pte.stat().st_size, **compared(model, model_int8, ref, ref_int8),
             "npu_s": round(model_s, 2), "npu_ref_s": round(ref_s, 2)}
    if mcu:
        from tinyrps.firmware.link_protocol import DeviceError
        try:
            board, board_int8, board_s = run_on("mcu", pte, inputs)
        except (UserError, DeviceError) as e:     # what the board refused, in its own words
            return {**entry, "mcu_refused": str(e)}
        system = compared(board, board_int8, model, model_int8)
        entry.update(mcu_bit_exact=system["bit_exact"], mcu_inputs_differing=system["inputs_differing"],
                     mcu_s=round(board_s, 2))
    return entry


def compared(outputs, int8, other, other_int8) -> dict:
    """Whether two devices' outputs agree bit for bit, raw int8 where both give it, and on how many inputs not."""
    pairs = [(a, b) for a, b in zip(int8, other_int8) if a is not None and b is not None] or list(zip(outputs, other))
    differing = sum(int(np.any(a.reshape(len(a), -1) != b.reshape(len(b), -1), axis=1).sum()) for a, b in pairs)
    return {"bit_exact": differing == 0, "inputs_differing": differing}


def main(argv=None) -> int:
    from tinyrps.devtools import zoo
    from tinyrps.infra.library_noise import quiet_libraries
    quiet_libraries()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--network", action="append", choices=list(zoo.NETWORKS), help="only this network")
    parser.add_argument("--target", action="append", choices=TARGETS, help="only this accelerator")
    parser.add_argument("--mcu", action="store_true", help="also on the emulated Cortex-M55 with the NPU model")
    args = parser.parse_args(argv)
    kept = {(e["network"], e["target"]): e for e in json.loads(FIGURES.read_text())} if FIGURES.is_file() else {}
    with tempfile.TemporaryDirectory() as work:
        for name in args.network or list(zoo.NETWORKS):
            for target in args.target or TARGETS:
                entry = check(name, target, Path(work), args.mcu)
                kept[(name, target)] = entry
                shown = entry.get("refused") or entry.get("unsupported") or (f"bit-exact on {entry['inputs']} inputs" if entry["bit_exact"] else
                                                 f"{entry['inputs_differing']} of {entry['inputs']} inputs differ")
                print(f"{name:<16} {target:<14} {shown}" + ("" if "bit_exact" not in entry else
                      f"  (npu {entry['npu_s']} s, npu-ref {entry['npu_ref_s']} s)") + (f"; on the M55 with the NPU model: {entry['mcu_refused']}" if "mcu_refused" in entry else "") + ("" if "mcu_s" not in entry else
                      f"; on the M55 with the NPU model: {'bit-exact' if entry['mcu_bit_exact'] else 'differs'} "
                      f"({entry['mcu_s']} s)"), flush=True)
    FIGURES.write_text(json.dumps(sorted(kept.values(), key=lambda e: (e["network"], e["target"])), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
