"""Plots written as PNG (atomically): training curves, confusion matrices, latency bars."""
from __future__ import annotations

import io
import math
import os
from pathlib import Path
from typing import Optional

from ..infra.tempdirs import missing_home, temporary_cache

if missing_home() and not os.environ.get("MPLCONFIGDIR"):     # matplotlib would make the home folder
    os.environ["MPLCONFIGDIR"] = os.path.join(temporary_cache(), "matplotlib")
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogFormatter  # noqa: E402
import numpy as np  # noqa: E402

from ..infra.artifacts.files import atomic_write_bytes  # noqa: E402
from ..network.labels import LABELS  # noqa: E402


def _save(fig, path: Path) -> None:
    """Rendered in memory, then written whole under a unique temporary name (two writers of one
    folder never share a temporary file)."""
    try:
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=110)
    finally:
        plt.close(fig)
    atomic_write_bytes(Path(path), buffer.getvalue())


def plot_curves(history: list, path: Path) -> None:
    epochs = [h["epoch"] for h in history]
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.4))
    a.plot(epochs, [h["train_loss"] for h in history], "o-", label="train")
    a.plot(epochs, [h["val_loss"] for h in history], "o-", label="val")
    a.set(xlabel="epoch", ylabel="cross-entropy", title="loss", yscale="log")
    # plain tick labels ("0.1", "0.3"): the log axis's default ones are TeX-like maths, whose
    # parsing took most of the figure's 0.25 s (it is drawn at the end of every training)
    a.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    a.yaxis.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(1, 0.4)))
    a.legend()
    b.plot(epochs, [100 * h["val_accuracy"] for h in history], "o-", color="C2")
    b.set(xlabel="epoch", ylabel="%", title="validation accuracy")
    for ax in (a, b):
        ax.grid(alpha=0.3)
        ax.set_xticks(epochs)
    fig.tight_layout()
    _save(fig, path)


def confusion_matrix(labels: np.ndarray, predictions: np.ndarray) -> np.ndarray:
    n = len(LABELS)
    return np.bincount(labels * n + predictions, minlength=n * n).reshape(n, n)


def plot_confusion(labels, predictions, path: Path, title: str = "") -> None:
    cm = confusion_matrix(np.asarray(labels), np.asarray(predictions))
    fig, ax = plt.subplots(figsize=(4, 3.6))
    ax.imshow(cm, cmap="Blues")
    for i in range(len(LABELS)):
        for j in range(len(LABELS)):
            ax.text(j, i, str(cm[i, j]), ha="center", va="center",
                    color="white" if cm[i, j] > cm.max() / 2 else "black")
    ax.set(xticks=range(len(LABELS)), yticks=range(len(LABELS)), xticklabels=LABELS, yticklabels=LABELS,
           xlabel="predicted", ylabel="true", title=title)
    fig.tight_layout()
    _save(fig, path)


def plot_latency(rows: list, path: Path) -> None:
    """Horizontal bars of each program's time of one inference on its own hardware (log scale): measured
    on this CPU, or estimated (Vela for the NPU, the cycle estimate for a Cortex-M core, with its error
    band), annotated with the ratio to eager where measured."""
    _save(latency_figure(rows), path)


def latency_figure(rows: list):
    """rows: {name, latency_ms, [band: relative error band], [what: how the time was had],
    [ratio_to_eager]}."""
    names = [r["name"] for r in rows]
    ms = [r["latency_ms"] for r in rows]
    bands = [r.get("band", 0.0) * r["latency_ms"] for r in rows]
    fig, ax = plt.subplots(figsize=(7.5, 0.45 * len(rows) + 1.2))
    ax.barh(names, ms, color=[f"C{i}" for i in range(len(rows))])
    banded = [i for i, b in enumerate(bands) if b]
    if banded:      # the error band of an estimate, on its bar only
        ax.errorbar([ms[i] for i in banded], banded, xerr=[bands[i] for i in banded], fmt="none", ecolor="black",
                    capsize=3, elinewidth=1)
    for i, r in enumerate(rows):
        ratio = r.get("ratio_to_eager")
        note = f" ({_figure(ratio)}x eager)" if ratio is not None else ""
        if r.get("what") and r["what"] != "measured":
            note = f" ±{r['band']:.0%}, {r['what']}" if r.get("band") else f", {r['what']}"
        ax.text(ms[i] + bands[i], i, f"  {_figure(ms[i])} ms{note}", va="center", fontsize=8)
    ax.set(xscale="log", xlabel="ms per inference on its hardware (log scale)")
    ax.invert_yaxis()
    ends = [m + b for m, b in zip(ms, bands)]
    for _ in range(2):   # the layout and the room the labels need depend on each other
        fig.tight_layout()
        _make_room_for_labels(fig, ax, ends)
    return fig


def _figure(x: float) -> str:
    """Three significant digits, without an exponent: 0.052, 14.8, 216, 1,970."""
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def _make_room_for_labels(fig, ax, values: list, fill: float = 0.97) -> None:
    """Extend the log-scaled x axis so that every bar's label ends inside the axes.

    A label of L pixels anchored at value a ends inside when
    (log a - log lo) / (log hi - log lo) <= (fill * W - L) / W, W the axes' width."""
    renderer = fig.canvas.get_renderer()
    width = ax.get_window_extent(renderer).width
    lo = math.log10(ax.get_xlim()[0])
    needed = math.log10(max(values)) + 1e-9
    for value, text in zip(values, ax.texts):
        room = fill * width - text.get_window_extent(renderer).width
        if room <= 0:
            raise ValueError(f"the label '{text.get_text()}' is wider than the plot")
        needed = max(needed, lo + (math.log10(value) - lo) * width / room)
    ax.set_xlim(10 ** lo, 10 ** needed)


def layer_label(index: int, layer: dict) -> str:
    return f"{index + 1}. {layer['op']}"


def plot_npu_layers(profiles: dict, path: Path) -> None:
    """Per target, Vela's cycles per NPU operation: compute (NPU cycles) and memory waits
    (the rest of the operation's cycles), as stacked horizontal bars in microseconds."""
    names = [n for n, v in profiles.items() if v.get("layers")]
    if not names:
        return
    height = sum(0.32 * len(profiles[n]["layers"]) + 1.0 for n in names)
    fig, axes = plt.subplots(len(names), 1, figsize=(7.5, height), squeeze=False)
    for ax, name in zip(axes[:, 0], names):
        vela = profiles[name]
        layers, us = vela["layers"], 1e6 / vela["clock_hz"]
        labels = [layer_label(i, layer) for i, layer in enumerate(layers)]
        compute = np.array([layer["npu_cycles"] for layer in layers]) * us
        waits = np.array([max(layer["total_cycles"] - layer["npu_cycles"], 0) for layer in layers]) * us
        ax.barh(labels, compute, color="C0", label="compute (NPU cycles)")
        ax.barh(labels, waits, left=compute, color="C3", label="waiting on memory")
        total = vela["total_cycles"]
        for i, layer in enumerate(layers):
            share = layer["total_cycles"] / total if total else 0.0
            ax.text(compute[i] + waits[i], i, f"  {share:.0%}, util. {layer['utilisation']:.0%}", va="center",
                    fontsize=7)
        ax.invert_yaxis()
        ax.set_xlim(right=max((compute + waits).max(), 1e-9) * 1.35)
        ax.set(xlabel="µs per inference", title=f"{name}: {vela['inference_ms']:.3f} ms "
               f"({vela['system_config']}, {vela['memory_mode']})")
        ax.title.set_fontsize(9)
        ax.legend(fontsize=7, loc="lower right")
        ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    _save(fig, path)


WEIGHT_MARKERS = {"SRAM": "o", "DRAM": "s", "flash": "^"}


def plot_npu_sweep(configs: list, path: Path) -> None:
    """Vela's latency against MAC units, one panel per memory mode and one line per system
    config; the marker says where the weights live, the panel's note what memory it needs."""
    modes = list(dict.fromkeys(c["memory_mode"] for c in configs))
    if not modes:
        return
    columns = min(3, len(modes))
    rows = -(-len(modes) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(5.2 * columns, 4.2 * rows), squeeze=False, sharey=True)
    systems = list(dict.fromkeys(c["system_config"] for c in configs))
    palette = plt.get_cmap("tab20")
    colors = {s: palette(i % 20) for i, s in enumerate(systems)}
    families = list(dict.fromkeys(npu_family_of(c) for c in configs))
    styles = {f: ("-", "--", ":", "-.")[i % 4] for i, f in enumerate(families)}
    for ax, mode in zip(axes.flat, modes):
        in_mode = [c for c in configs if c["memory_mode"] == mode]
        for system in systems:
            for family in families:   # one line per NPU family: U55, U65 and U85 share array sizes
                points = sorted((c for c in in_mode if c["system_config"] == system and npu_family_of(c) == family),
                                key=lambda c: c["mac_units"])
                ax.plot([c["mac_units"] for c in points], [c["inference_ms"] for c in points], styles[family],
                        lw=0.9, color=colors[system], alpha=0.7)
            points = [c for c in in_mode if c["system_config"] == system]
            for where, marker in WEIGHT_MARKERS.items():
                chosen = [c for c in points if c.get("weights_in") == where]
                ax.scatter([c["mac_units"] for c in chosen], [c["inference_ms"] for c in chosen], marker=marker,
                           s=22, color=colors[system])
        ax.set(xscale="log", yscale="log", xlabel="MAC units", title=mode)
        ax.set_xticks([32, 64, 128, 256, 512, 1024, 2048], ["32", "64", "128", "256", "512", "1k", "2k"])
        ax.grid(alpha=0.3, which="both")
        ax.text(0.02, 0.02, memory_note(in_mode), transform=ax.transAxes, fontsize=7, va="bottom",
                bbox={"facecolor": "white", "alpha": 0.8, "lw": 0})
    for ax in axes[:, 0]:
        ax.set_ylabel("inference (ms, Vela estimate)")
    for ax in list(axes.flat)[len(modes):]:
        ax.axis("off")
    handles = [plt.Line2D([], [], color=colors[s], label=s) for s in systems]
    handles += [plt.Line2D([], [], color="grey", ls=styles[f], label=f) for f in families]
    handles += [plt.Line2D([], [], ls="", marker=m, color="grey", label=f"weights in {w}")
                for w, m in WEIGHT_MARKERS.items()]
    fig.legend(handles=handles, loc="lower center", ncol=6, fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0.02 + 0.025 * -(-len(handles) // 6), 1, 1))
    _save(fig, path)


def npu_family_of(config: dict) -> str:
    """'ethos-u85-128' -> 'Ethos-U85'."""
    from ..hardware.families import npu_family
    return npu_family(config["accelerator"]).replace("ethos-u", "Ethos-U")


def memory_note(configs: list) -> str:
    """'SRAM 36-60 KiB, DRAM 0-393 KiB, flash 0 KiB': what the configurations of a panel need."""
    parts = []
    for label, key in (("SRAM", "sram_bytes"), ("DRAM", "dram_bytes"), ("flash", "flash_bytes")):
        values = [c[key] / 1024 for c in configs]
        low, high = min(values), max(values)
        parts.append(f"{label} {low:.0f} KiB" if round(low) == round(high) else f"{label} {low:.0f}-{high:.0f} KiB")
    return ", ".join(parts)


def plot_tune(candidates: list, pareto: list, best, path: Path, finalists: Optional[list] = None) -> None:
    """The tuner's candidates: validation accuracy and program size against NPU latency, the
    Pareto front highlighted and labelled, the finalists ringed, the pick starred, the candidates not
    trained (too slow before training) crossed."""
    done = [c for c in candidates if c.get("state") == "COMPLETE"]
    if not done:
        return
    front = {c["number"] for c in pareto}
    skipped = [c for c in candidates if c.get("state") == "PRUNED" and "repeat_of" not in c]
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.6))
    for ax, key, scale, label in ((a, "val_accuracy", 100, "int8 validation accuracy (%, npu-ref)"),
                                  (b, "program_bytes", 1 / 1024, "program size (KiB)")):
        others = [c for c in done if c["number"] not in front]
        ax.scatter([c["npu_ms"] for c in others], [c[key] * scale for c in others], s=18, color="0.6",
                   label="candidate")
        on_front = sorted((c for c in done if c["number"] in front), key=lambda c: c["npu_ms"])
        ax.scatter([c["npu_ms"] for c in on_front], [c[key] * scale for c in on_front], s=30, color="C0",
                   label="Pareto front")
        for c in on_front:
            ax.annotate(c["arch"], (c["npu_ms"], c[key] * scale), fontsize=6, xytext=(3, 3),
                        textcoords="offset points")
        if skipped and key == "program_bytes":     # estimated before training: no accuracy to show
            crosses = ax.scatter([c["npu_ms"] for c in skipped], [c[key] * scale for c in skipped], marker="x", s=18,
                       color="0.6", label=f"not trained ({len(skipped)}): estimated, too slow")
        if finalists:
            ax.scatter([c["npu_ms"] for c in finalists], [c[key] * scale for c in finalists], s=110,
                       facecolors="none", edgecolors="C1", linewidths=1.5, label="finalist", zorder=3)
        if best:
            ax.scatter([best["npu_ms"]], [best[key] * scale], marker="*", s=160, color="C3", label="pick", zorder=4)
        ax.set(xlabel="NPU inference (ms, Vela estimate)", ylabel=label)
        ax.grid(alpha=0.3)
    a.legend(fontsize=8)
    if skipped:
        b.legend(handles=[crosses], fontsize=8)
    fig.tight_layout()
    _save(fig, path)
