"""Training: Adam + cross-entropy on the synthetic train split, best checkpoint by val accuracy.

Writes RUN/model.pt (a plain state_dict), RUN/config.json (how the run was made: the
settings, the identity of the data it was trained on, the checkpoint's sha256),
RUN/metrics.json (per epoch), RUN/curves.png and RUN/confusion.png (test split). The run
folder is built beside RUN and swapped in whole when training is done
(tinyrps.artifacts.staged_folder): a failed or interrupted training leaves RUN as it was.
Deterministic for a seed on a given machine: seeded init and shuffling, deterministic
kernels, a fixed thread count.
"""
from __future__ import annotations

import io
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional

import numpy as np
import torch
from torch import nn

from .artifacts import atomic_write_bytes, atomic_write_json, data_identity, data_info, sha256_file, staged_folder
from .data import load_split
from .errors import UserError
from .arch import default_epochs, describe_arch, parse_arch
from .model import TinyRPS, images_to_tensor
from .progress import progress_bar, say
from .torch_settings import deterministic

THREADS = 2


@dataclass
class TrainConfig:
    data: str
    epochs: Optional[int] = None     # None: the architecture's (tinyrps.arch.default_epochs)
    batch_size: int = 64
    lr: float = 2e-3
    seed: int = 0
    arch: str = "tinyrps"     # a name or spec of tinyrps.model (recorded, so later stages rebuild it)
    warmup_epochs: float = 0.25     # the learning rate ramps up over this much of the first epoch


def init_weights(model: nn.Module) -> None:
    """He (Kaiming) normal weights for the ReLU layers, zero biases: without batch norm, PyTorch's
    default initialisation shrinks the signal layer by layer and training stalls at first."""
    for layer in model.modules():
        if isinstance(layer, (nn.Conv2d, nn.Linear)):
            nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")
            nn.init.zeros_(layer.bias)


def lr_schedule(optimizer, config: TrainConfig, batches_per_epoch: int):
    """Linear warm-up, then a cosine down to zero, batch by batch."""
    total = config.epochs * batches_per_epoch
    warmup = max(1.0, config.warmup_epochs * batches_per_epoch)

    def factor(step: int) -> float:
        return min(1.0, (step + 1) / warmup) * 0.5 * (1.0 + math.cos(math.pi * step / total))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def predict(model: nn.Module, images: np.ndarray, batch: int = 512) -> np.ndarray:
    """Logits of the float model on uint8 images (no grad)."""
    model.eval()
    with torch.no_grad():
        return np.concatenate([model(images_to_tensor(images[i:i + batch])).numpy()
                               for i in range(0, len(images), batch)])


def train_epoch(model, optimizer, scheduler, x, y, batch_size, generator, on_batch) -> float:
    model.train()
    order = torch.randperm(len(x), generator=generator)
    total, loss_fn = 0.0, nn.CrossEntropyLoss()
    for start in range(0, len(x), batch_size):
        idx = order[start:start + batch_size]
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x[idx]), y[idx])
        loss.backward()
        optimizer.step()
        scheduler.step()
        total += loss.item() * len(idx)
        on_batch(len(idx))
    return total / len(x)


def evaluate_split(model, images, labels) -> tuple:
    logits = predict(model, images)
    loss = nn.functional.cross_entropy(torch.from_numpy(logits), torch.from_numpy(labels)).item()
    return loss, float((logits.argmax(1) == labels).mean()), logits


def train(config: TrainConfig, out_dir, quiet: bool = False, test_split: bool = True) -> dict:
    """Train, keep the best checkpoint by validation accuracy, and score it on the test split
    (test_split=False leaves the test split untouched: for candidates of a search, whose
    pick must not see it)."""
    arch = parse_arch(config.arch)
    config.arch = arch.name   # canonical: a registered name, or the normalised spec
    config.epochs = default_epochs(arch.name) if config.epochs is None else config.epochs
    if config.epochs < 1:
        raise UserError(f"--epochs must be at least 1, got {config.epochs}")
    out = Path(out_dir)
    with staged_folder(out, "run") as folder:
        info, info_sha256 = data_info(config.data)
        splits = {name: load_split(config.data, name, info) for name in (("train", "val", "test") if test_split
                                                                         else ("train", "val"))}
        # torch's global settings are changed for the training only, not for what runs after it
        with deterministic(config.seed, THREADS):
            history, best_acc, model = fit(config, arch, splits["train"], splits["val"], folder, quiet)
            identity = data_identity(info, info_sha256)
            metrics = {"config": asdict(config), "arch": describe_arch(arch), "data": identity, "epochs": history,
                       "best_val_accuracy": best_acc}
            if test_split:
                test_x, test_y = splits["test"]
                test_loss, test_acc, test_logits = evaluate_split(model, test_x, test_y)
                metrics.update(test_loss=test_loss, test_accuracy=test_acc)
        atomic_write_json(folder / "config.json", {**asdict(config), "data_identity": identity,
                                                   "checkpoint_sha256": sha256_file(folder / "model.pt")})
        atomic_write_json(folder / "metrics.json", metrics)
        from .plots import plot_confusion, plot_curves
        plot_curves(history, folder / "curves.png")
        if test_split:
            plot_confusion(test_y, test_logits.argmax(1), folder / "confusion.png",
                           title=f"test split, accuracy {test_acc:.2%}")
    say(f"best val accuracy {best_acc:.2%}" + (f", test accuracy {metrics['test_accuracy']:.2%}" if test_split else "")
        + f" -> {out / 'model.pt'}", quiet)
    return metrics


def fit(config: TrainConfig, arch, train_split, val_split, out: Path, quiet: bool) -> tuple:
    """Train for config.epochs; save the best checkpoint by val accuracy to OUT/model.pt.
    Returns (per-epoch history, best val accuracy, the model with the best weights)."""
    (train_x, train_y), (val_x, val_y) = train_split, val_split
    model = TinyRPS(arch)
    init_weights(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    scheduler = lr_schedule(optimizer, config, -(-len(train_x) // config.batch_size))
    generator = torch.Generator().manual_seed(config.seed)
    x, y = images_to_tensor(train_x), torch.from_numpy(train_y)
    history, best_acc, best_state = [], -1.0, None
    with progress_bar(quiet) as bar:
        for epoch in range(1, config.epochs + 1):
            task = bar.add_task(f"epoch {epoch}/{config.epochs}", total=len(x), status="")
            train_loss = train_epoch(model, optimizer, scheduler, x, y, config.batch_size, generator,
                                     lambda n: bar.advance(task, n))
            val_loss, val_acc, _ = evaluate_split(model, val_x, val_y)
            history.append({"epoch": epoch, "train_loss": train_loss, "val_loss": val_loss, "val_accuracy": val_acc})
            bar.update(task, status=f"loss {train_loss:.4f}  val acc {val_acc:.2%}")
            if val_acc > best_acc:
                best_acc, best_state = val_acc, {k: v.clone() for k, v in model.state_dict().items()}
                save_checkpoint(best_state, out / "model.pt")
    model.load_state_dict(best_state)
    return history, best_acc, model


def save_checkpoint(state_dict, path: Path) -> None:
    buffer = io.BytesIO()
    torch.save(state_dict, buffer)
    atomic_write_bytes(path, buffer.getvalue())
