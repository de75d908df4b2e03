"""The main job's report, OUT/report.md: what was built, how well it does, how fast, with the plots;
its tables are the sections' own (accuracy, speed)."""
from __future__ import annotations

from pathlib import Path

from ...infra.artifacts.files import atomic_write_bytes
from ...infra.machine import line as machine_line
from ...infra.stats import entry_accuracy
from .accuracy import MARKDOWN_EVAL_HEADER, eval_images, eval_notes, eval_rows, eval_split
from .speed import (BENCH_HEADER, FIRMWARE_HEADER, FIRMWARE_UNITS, LAYER_HEADER, QEMU_COUNTS, SIMULATION_NOTE,
                    VELA_HEADER, bench_rows, device_rows, firmware_rows, layer_tables, vela_rows)
from .tables import markdown_table, sentence


def data_line(data: dict) -> str:
    sizes = data["per_class"]
    per_class = ", ".join(f"{sizes[split]:,} {split}" for split in ("train", "val", "test", "benchmark")
                          if split in sizes)
    return f"{data['images']:,} synthetic images (seed {data['seed']}; per class: {per_class})"


def split_images(data: dict, split: str):
    """A split's image count from what data.json records, or None."""
    return ((data or {}).get("splits") or {}).get(split, {}).get("images")


def trained_on(training: dict) -> str:
    """What the run's training recorded of its machine (its bits depend on it), or nothing for older runs."""
    m = training.get("machine")
    if not m:
        return ""
    return (f" Trained on {m['cpu']}, torch {m['torch']} with its {m['torch_cpu_capability']} kernels on "
            f"{m['threads']} threads: the same seed gives the same bits where these agree.")


def arch_line(arch) -> str:
    if not arch:
        return ""
    return (f"Architecture `{arch['name']}` (`{arch['spec']}`: {arch['macs'] / 1e6:.2f} M MACs, "
            f"{arch['params']:,} parameters). ")


def npu_layers_section(out: Path, bench: dict, rel) -> list:
    """Where each Ethos-U program's time goes, layer by layer (Vela's per-layer estimate)."""
    from ..plots import plot_npu_layers
    profiles = {name: v["vela"] for name, v in bench["programs"].items() if v.get("vela", {}).get("layers")}
    if not profiles:
        return []
    path = out / "run" / "npu_layers.png"
    plot_npu_layers(profiles, path)
    lines = []
    for name, vela in profiles.items():
        slowest = max(vela["layers"], key=lambda layer: layer["total_cycles"])
        waiting = 1 - vela["npu_cycles"] / vela["total_cycles"] if vela["total_cycles"] else 0.0
        lines.append(f"- {name}: {waiting:.0%} of the cycles wait on memory; the slowest operation, "
                     f"{slowest['op']} ({slowest['name']}), takes {slowest['total_cycles'] / vela['total_cycles']:.0%}.")
    return ["Per layer: compute (NPU cycles) and memory waits. Utilisation (NPU) is MACs over the NPU "
            "cycles' capacity; (all) over all cycles, memory waits included.", "\n".join(lines),
            f"![NPU layers]({rel(path)})"]


def write_report(out: Path, summary: dict) -> None:
    """DIR/report.md: what was built, how well it does, how fast, with the plots."""
    rel = lambda p: Path(p).relative_to(out).as_posix()  # noqa: E731
    ev, be = summary["eval"], summary["bench"]
    epochs = len(summary["training"]["epochs"])
    parts = [
        "# TinyRPS report",
        f"Machine: {machine_line()}. Whole pipeline: {summary['seconds']['total']:.0f} s "
        f"({', '.join(f'{k} {v:.0f} s' for k, v in summary['seconds'].items() if k != 'total')}).",
        "## Data",
        f"{data_line(summary['data'])}, rendered at {be['render_images_per_s']:,.0f} images/s.",
        f"![training images]({rel(out / 'data' / 'preview.png')})",
        "## Training",
        arch_line(summary.get("arch")) +
        f"{epochs} epoch{'s' if epochs != 1 else ''}, the last epoch's weights kept: validation accuracy "
        f"{entry_accuracy(summary['training'], split_images(summary['data'], 'val'), key='val_accuracy')}"
        "." + trained_on(summary["training"]),
        f"![training curves]({rel(out / 'run' / 'curves.png')}) ![confusion matrix]({rel(out / 'run' / 'confusion.png')})",
        "## Accuracy",
        f"{sentence(eval_split(ev))} split, {eval_images(ev):,} images. {sentence(eval_notes(ev))}.",
        markdown_table(MARKDOWN_EVAL_HEADER, eval_rows(ev, screen=False)),
        "## Speed and size",
        f"Median latency of single-image inferences, measured in one process: each program runs {be['rounds']} "
        f"warmed-up blocks (at least {be['runs'] // be['rounds']} calls and {be['block_s']} s each), the programs "
        "taking turns block by block so that bursts of load on the machine hit every program alike. The MCU, "
        "over its serial link, takes fewer runs.",
        markdown_table(BENCH_HEADER, bench_rows(be)),
    ]
    if any(v.get("simulated_by") for v in be["programs"].values()):
        parts.append(SIMULATION_NOTE)
    parts.append(f"![latency]({rel(out / 'run' / 'latency.png')})")
    vela, firmware = vela_rows(be), firmware_rows(be)
    if vela:
        parts += ["### Ethos-U (Vela's performance estimate)", markdown_table(VELA_HEADER, vela)]
        parts += npu_layers_section(out, be, rel)
        from .system_layers import markdown_parts
        parts += markdown_parts(be)
    if firmware:
        parts += ["### Cortex-M firmware on emulated boards",
                  f"Each program on its board in QEMU, measured by the measure stage on the same images: {FIRMWARE_UNITS} "
                  f"(one image, `play --device mcu`, median). {QEMU_COUNTS}.",
                  markdown_table(FIRMWARE_HEADER, firmware)]
        for title, rows in layer_tables(be):
            parts += [f"#### {title}", markdown_table(LAYER_HEADER, rows)]
    if summary.get("skipped"):
        parts += ["## Not built", "\n".join(f"- {k}: {v}" for k, v in summary["skipped"].items())]
    if summary.get("game"):
        rows = [[g["target"], g["device"], g["you"], f"{g['you_pred']} ({g['you_conf']:.1%})", g["opponent"],
                 f"{g['opp_pred']} ({g['opp_conf']:.1%})", g["outcome"]] for g in summary["game"]]
        parts += ["## Game rounds", markdown_table(["program", "device", "you", "model reads", "opponent",
                                                    "model reads", "outcome"], rows)]
    from ..plots import plot_latency
    plot_latency(device_rows(be), out / "run" / "latency.png")
    atomic_write_bytes(out / "report.md", ("\n\n".join(parts) + "\n").encode())
