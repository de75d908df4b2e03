"""Plots written as PNG (atomically): training curves, confusion matrices, latency bars."""
from __future__ import annotations

import math
import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from .model import LABELS  # noqa: E402


def _save(fig, path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp.png")
    try:
        fig.savefig(tmp, dpi=110)
        os.replace(tmp, path)
    except BaseException:   # a full disk, Ctrl-C: leave no half-written file behind
        tmp.unlink(missing_ok=True)
        raise
    finally:
        plt.close(fig)


def plot_curves(history: list, path: Path) -> None:
    epochs = [h["epoch"] for h in history]
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.4))
    a.plot(epochs, [h["train_loss"] for h in history], "o-", label="train")
    a.plot(epochs, [h["val_loss"] for h in history], "o-", label="val")
    a.set(xlabel="epoch", ylabel="cross-entropy", title="loss", yscale="log")
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
    """Horizontal bars of median latency per variant (log scale), annotated with the ratio to eager."""
    _save(latency_figure(rows), path)


def latency_figure(rows: list):
    names = [r["name"] for r in rows]
    ms = [r["latency_ms"] for r in rows]
    fig, ax = plt.subplots(figsize=(7.5, 0.45 * len(rows) + 1.2))
    ax.barh(names, ms, color=[f"C{i}" for i in range(len(rows))])
    for i, r in enumerate(rows):
        ratio = r.get("ratio_to_eager", 1.0)
        ax.text(ms[i], i, f"  {_figure(ms[i])} ms ({_figure(ratio)}x eager)", va="center", fontsize=8)
    ax.set(xscale="log", xlabel="median latency of one inference (ms, log scale)")
    ax.invert_yaxis()
    for _ in range(2):   # the layout and the room the labels need depend on each other
        fig.tight_layout()
        _make_room_for_labels(fig, ax, ms)
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
