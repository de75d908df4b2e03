"""The NPU searches' tables: Vela's estimate of every Ethos-U configuration (`tinyrps npu-sweep`) and
the tuner's candidates, finalists and pick (`tinyrps tune`)."""
from __future__ import annotations

from pathlib import Path

from ...infra.stats import entry_accuracy
from .tables import percent, print_line, print_table


SWEEP_HEADER = ["NPU", "system config", "ms", "SRAM", "DRAM", "flash", "util."]
SWEEP_LEGEND = {"NPU": "the Ethos-U and its MAC units", "system config": "Vela's memory system",
                "ms": "Vela's estimate of one inference", "SRAM": "used, KiB", "DRAM": "used, KiB",
                "flash": "used, KiB", "util.": "MACs over (all cycles x MAC units)"}


def _kib(n: int) -> str:
    return f"{n / 1024:,.0f} KiB" if n else "0"


def sweep_rows(configs: list) -> list:
    return [[c["accelerator"].removeprefix("ethos-"), c["system_config"].removeprefix("Ethos_"),
             f"{c['inference_ms']:.3f}", _kib(c["sram_bytes"]), _kib(c["dram_bytes"]), _kib(c["flash_bytes"]),
             percent(c["utilisation_total"])] for c in configs]


def npu_sweep_table(result: dict, written: dict) -> None:
    """The sweep on stdout: a table per memory mode of every accepted configuration, then the
    refusals, grouped by Vela's reason."""
    from ...measure.npu_sweep import refusal_groups
    print_line(f"Vela {result['vela_version']}'s estimate of {result['run']} for every Ethos-U configuration: "
                      f"{len(result['configs'])} of {result['combinations']} combinations accepted. "
                      "ms: one inference; util.: MACs / (all cycles x MAC units)")
    for mode in dict.fromkeys(c["memory_mode"] for c in result["configs"]):
        configs = [c for c in result["configs"] if c["memory_mode"] == mode]
        weights = "/".join(dict.fromkeys(c.get("weights_in", "?") for c in configs))
        print_table(f"memory mode {mode} (weights in {weights})", SWEEP_HEADER, sweep_rows(configs),
                    legend=SWEEP_LEGEND)
    for reason, entries in refusal_groups(result["refused"]).items():
        print_line(f"refused ({sum(len(e['accelerators']) * len(e['memory_modes']) for e in entries)}): "
                          f"{reason}")
        for e in entries:
            accelerators = ("every accelerator" if len(e["accelerators"]) == len(result["accelerators"])
                            else ", ".join(e["accelerators"]))
            print_line(f"  {e['system_config']} with {', '.join(e['memory_modes'])}: {accelerators}")
    print_line(f"plot: {written['plot']}; every figure: {written['json']}")


TUNE_HEADER = ["candidate", "val", "NPU ms", "SRAM", "bytes", "MMAC", "front"]
TUNE_LEGEND = {"candidate": "the trial's number and network", "NPU ms": "Vela's estimate of one inference",
               "front": "pick: the network chosen; final: a finalist; yes: on the Pareto front; the title says the rest"}


def tune_rows(result: dict) -> list:
    from ...network.arch import count_macs
    front = {c["number"] for c in result["pareto"]}
    best = (result.get("best") or {}).get("number")
    finalists = {f["number"] for f in result.get("finalists", [])}
    rows = []
    for c in result["candidates"]:
        name = f"#{c['number']} {c.get('arch') or '?'}"
        if c["state"] == "PRUNED":     # its NPU estimate before training: see tinyrps.tune.settings.LATENCY_SLACK
            rows.append([name, "not trained", f"{c['npu_ms']:.4f}", f"{c['sram_bytes'] / 1024:.0f}",
                         f"{c['program_bytes']:,}", f"{count_macs(c['arch']) / 1e6:.1f}", "slow"])
            continue
        if c["state"] != "COMPLETE":
            rows.append([name, "failed", "", "", "", "", ""])
            continue
        mark = "pick" if c["number"] == best else ("final" if c["number"] in finalists else
                                                   "yes" if c["number"] in front else "")
        if c.get("feasible") is False:
            mark = "over"
        # units live in the title: with the longest spec of the space the table fits 80 columns
        rows.append([name, entry_accuracy(c, key="val_accuracy", prefix="val_", cell=True), f"{c['npu_ms']:.4f}",
                     f"{c['sram_bytes'] / 1024:.0f}", f"{c['program_bytes']:,}", f"{count_macs(c['arch']) / 1e6:.1f}",
                     mark])
    return rows


def finalists_line(finalists: list) -> None:
    """The finalists, each trained like the pick, and what they read of the selection split."""
    from ...tune.settings import SELECT_ACCURACY
    print_line(f"finalists, trained like the pick, on the selection split (npu-ref; the pick: the fastest "
                      f"at {SELECT_ACCURACY * 100:g} %, else the most accurate): "
                      + "; ".join(f"#{f['number']} {f['arch']} ({f['npu_ms']:.4f} ms) "
                                  f"{entry_accuracy(f, key='select_accuracy', prefix='select_')}" for f in finalists))


def tune_table(result: dict, out) -> None:
    """The tuner's candidates on stdout, then the pick, its test accuracy, and each seed's accuracy
    on the benchmark split (results made before the pick was checked there: on the test split)."""
    print_table(f"candidates ({len(result['candidates'])}; Pareto front: {len(result['pareto'])}); val: int8 accuracy "
                "on npu-ref, the images it read right and its 95 % interval; SRAM: KiB on the NPU; bytes: the "
                "program; MMAC: millions of multiply-accumulates per inference; over: beyond a limit; slow: not "
                "trained, its NPU estimate before training over the limit",
                TUNE_HEADER, tune_rows(result), text_columns=1, legend=TUNE_LEGEND)
    final = result.get("final")
    if result.get("finalists"):
        finalists_line(result["finalists"])
    if final:
        epochs = f"{final['epochs']} epoch{'s' if final['epochs'] != 1 else ''}"
        print_line(f"pick: {final['arch']}, retrained for {epochs}: test accuracy "
                          f"{entry_accuracy(final, key='test_accuracy', prefix='test_')} on npu-ref, "
                          f"NPU {final['npu_ms']:.4f} ms, SRAM "
                          f"{final['sram_bytes'] / 1024:.1f} KiB, program {final['program_bytes']:,} B, "
                          f"Cortex-M55 {final['mcu_instructions']:,} instructions")
        seeds = final.get("seeds", [])
        split = "benchmark" if seeds and all("benchmark_accuracy" in entry for entry in seeds) else "test"
        if len(seeds) > 1 or split == "benchmark":
            key = f"{split}_accuracy"
            worst = min(seeds, key=lambda entry: entry[key])
            print_line(f"{split} accuracy on npu-ref by training seed: "
                              + "; ".join(f"{entry['seed']}: {entry_accuracy(entry, key=key, prefix=split + '_')}"
                                          for entry in seeds)
                              + (f"; worst: seed {worst['seed']}" if len(seeds) > 1 else ""))
        if final.get("teacher"):
            teacher = final["teacher"]
            print_line(f"distilled from {teacher['run']} ({teacher['arch']}, a {teacher['alpha']:g}, "
                              f"T {teacher['temperature']:g})")
    elif not result["pareto"]:
        print_line("no candidate meets the limits: relax --max-npu-ms / --max-program-bytes")
    print_line(f"front and candidates: {Path(out) / 'tune.json'}; plot: {Path(out) / 'tune.png'}")
