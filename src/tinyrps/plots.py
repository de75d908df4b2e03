"""Plots written as PNG (atomically): training curves, confusion matrices, latency bars."""
from __future__ import annotations

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
    names = [r["name"] for r in rows]
    ms = [r["latency_ms"] for r in rows]
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(rows) + 1.2))
    ax.barh(names, ms, color=[f"C{i}" for i in range(len(rows))])
    for i, r in enumerate(rows):
        ratio = r.get("ratio_to_eager", 1.0)
        ax.text(ms[i], i, f"  {ms[i]:.3g} ms ({ratio:.0f}x eager)" if ratio >= 10 else
                f"  {ms[i]:.3g} ms ({ratio:.2g}x eager)", va="center", fontsize=8)
    ax.set(xscale="log", xlabel="median latency of one inference (ms, log scale)")
    ax.invert_yaxis()
    ax.set_xlim(right=max(ms) * 12)
    fig.tight_layout()
    _save(fig, path)
