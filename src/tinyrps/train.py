"""Training: Adam + cross-entropy on the synthetic train split; the weights kept are the last
epoch's, where the cosine schedule ends (arch.CHECKPOINT_RULE).

With a teacher (`--teacher RUN`, a trained run of any architecture on the same data), the
loss is knowledge distillation: (1 - a) * CE(student, labels) + a * T^2 * KL(softmax(teacher
/ T) || softmax(student / T)). The teacher's logits on the train split are computed once,
before the first epoch (no grad, with the training's seeded settings), and the teacher's
path, checkpoint sha256, a and T are recorded in config.json and metrics.json.

Writes RUN/model.pt (a plain state_dict), RUN/config.json (how the run was made: the
settings, the identity of the data it was trained on, the checkpoint's sha256),
RUN/metrics.json (per epoch), RUN/curves.png and RUN/confusion.png (test split). The run
folder is built beside RUN and swapped in whole when training is done
(tinyrps.infra.artifacts.staging.staged_folder): a failed or interrupted training leaves RUN as it was.
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

from .infra.artifacts.files import atomic_write_bytes, atomic_write_json, sha256_file
from .infra.artifacts.records import data_identity, data_info
from .infra.artifacts.staging import staged_folder
from .data import load_split
from .infra.errors import UserError
from .network.arch import (CHECKPOINT_RULE, DISTILL_ALPHA, DISTILL_TEMPERATURE, default_epochs, describe_arch,
                           parse_arch)
from .network.model import TinyRPS, images_to_tensor
from .infra.machine import torch_record
from .infra.progress import progress_bar, say
from .infra.torch_settings import TRAINING_THREADS, deterministic


@dataclass
class TrainConfig:
    data: str
    epochs: Optional[int] = None     # None: the architecture's (tinyrps.network.arch.default_epochs)
    batch_size: int = 64
    lr: float = 2e-3
    seed: int = 0
    arch: str = "tinyrps"     # a name or spec of tinyrps.network.model (recorded, so later stages rebuild it)
    warmup_epochs: float = 0.25     # the learning rate ramps up over this much of the first epoch
    teacher: Optional[str] = None   # a run folder to distil from (None: plain cross-entropy)
    distill_alpha: Optional[float] = None        # weight a of the distillation term (None: DISTILL_ALPHA)
    distill_temperature: Optional[float] = None  # temperature T (None: DISTILL_TEMPERATURE)
    checkpoint_rule: str = CHECKPOINT_RULE   # which epoch's weights are kept (recorded)


@dataclass
class Teacher:
    """A checked teacher: where it is, what it is, and its logits on the train split."""
    run: str
    arch: str
    checkpoint_sha256: str
    model: nn.Module
    logits: Optional[np.ndarray] = None

    def record(self, config: TrainConfig) -> dict:
        return {"run": self.run, "arch": self.arch, "checkpoint_sha256": self.checkpoint_sha256,
                "alpha": config.distill_alpha, "temperature": config.distill_temperature}


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


def distillation_loss(student: torch.Tensor, labels: torch.Tensor, teacher: torch.Tensor, alpha: float,
                      temperature: float) -> torch.Tensor:
    """(1 - a) CE + a T^2 KL(teacher_T || student_T). The T^2 keeps the soft term's gradients
    at the scale of the hard one's whatever T is (they shrink as 1/T^2 otherwise)."""
    hard = nn.functional.cross_entropy(student, labels)
    soft = nn.functional.kl_div(nn.functional.log_softmax(student / temperature, dim=1),
                                nn.functional.log_softmax(teacher / temperature, dim=1),
                                reduction="batchmean", log_target=True)
    return (1.0 - alpha) * hard + alpha * temperature ** 2 * soft


def train_epoch(model, optimizer, scheduler, x, y, batch_size, generator, on_batch, teacher=None,
                alpha: float = 0.0, temperature: float = 1.0) -> float:
    """One epoch; `teacher` (logits for every row of x, or None) switches the loss to distillation."""
    model.train()
    order = torch.randperm(len(x), generator=generator)
    total, loss_fn = 0.0, nn.CrossEntropyLoss()
    for start in range(0, len(x), batch_size):
        idx = order[start:start + batch_size]
        optimizer.zero_grad(set_to_none=True)
        out = model(x[idx])
        loss = (loss_fn(out, y[idx]) if teacher is None else
                distillation_loss(out, y[idx], teacher[idx], alpha, temperature))
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
    """Train, keep the last epoch's weights, and score them on the test split
    (test_split=False leaves the test split untouched: for candidates of a search, whose
    pick must not see it)."""
    arch = parse_arch(config.arch)
    config.arch = arch.name   # canonical: a registered name, or the normalised spec
    config.epochs = default_epochs(arch.name) if config.epochs is None else config.epochs
    if config.epochs < 1:
        raise UserError(f"--epochs must be at least 1, got {config.epochs}")
    out = Path(out_dir)
    check_distillation(config, out)
    # the data and the teacher are checked before the run folder is staged: a bad one changes nothing
    info, info_sha256 = data_info(config.data)
    teacher = open_teacher(config.teacher, config.data, info) if config.teacher else None
    with staged_folder(out, "run") as folder:
        splits = {name: load_split(config.data, name, info) for name in (("train", "val", "test") if test_split
                                                                         else ("train", "val"))}
        # torch's global settings are changed for the training only, not for what runs after it
        with deterministic(config.seed, TRAINING_THREADS):
            if teacher is not None:
                teacher.logits = teacher_logits(teacher, splits["train"][0], info)
            history, val_acc, model = fit(config, arch, splits["train"], splits["val"], folder, quiet, teacher)
            identity = data_identity(info, info_sha256)
            metrics = {"config": asdict(config), "arch": describe_arch(arch), "data": identity, "epochs": history,
                       "val_accuracy": val_acc, "machine": torch_record(TRAINING_THREADS)}
            if teacher is not None:
                metrics["teacher"] = teacher.record(config)
            if test_split:
                test_x, test_y = splits["test"]
                test_loss, test_acc, test_logits = evaluate_split(model, test_x, test_y)
                metrics.update(test_loss=test_loss, test_accuracy=test_acc)
        recorded = {**asdict(config), "data_identity": identity, "checkpoint_sha256": sha256_file(folder / "model.pt")}
        if teacher is not None:
            recorded["teacher_checkpoint_sha256"] = teacher.checkpoint_sha256
        atomic_write_json(folder / "config.json", recorded)
        atomic_write_json(folder / "metrics.json", metrics)
        from .interfaces.plots import plot_confusion, plot_curves
        plot_curves(history, folder / "curves.png")
        if test_split:
            plot_confusion(test_y, test_logits.argmax(1), folder / "confusion.png",
                           title=f"test split, accuracy {test_acc:.2%}")
    say(f"val accuracy {val_acc:.2%}" + (f", test accuracy {metrics['test_accuracy']:.2%}" if test_split else "")
        + f" -> {out / 'model.pt'}", quiet)
    return metrics


def check_distillation(config: TrainConfig, out: Path) -> None:
    """Settle a and T (the defaults when a teacher is given and they are not; none without one)."""
    if config.teacher is None:
        if config.distill_alpha is not None or config.distill_temperature is not None:
            raise UserError("--distill-alpha and --distill-temperature are for distillation: give --teacher RUN")
        return
    config.teacher = str(Path(config.teacher).resolve())
    if Path(config.teacher) == out.resolve():
        raise UserError(f"--teacher {config.teacher} is the run being trained (--out): give another run")
    config.distill_alpha = DISTILL_ALPHA if config.distill_alpha is None else float(config.distill_alpha)
    config.distill_temperature = (DISTILL_TEMPERATURE if config.distill_temperature is None
                                  else float(config.distill_temperature))
    if not 0.0 <= config.distill_alpha <= 1.0:
        raise UserError(f"--distill-alpha must be between 0 and 1, got {config.distill_alpha:g}")
    if not 0.0 < config.distill_temperature < float("inf"):
        raise UserError(f"--distill-temperature must be positive, got {config.distill_temperature:g}")


def open_teacher(run, data, info: dict) -> Teacher:
    """The teacher run, checked: a training run (config.json, model.pt with the checksum it
    records, a network of its recorded architecture) trained on this very data set (the same
    train, val and test splits: a teacher that saw other images could carry the test split's
    letters into the student). Anything else is one line (UserError)."""
    from .infra.artifacts.records import run_config
    from .network.model import load_model
    run = Path(run)
    if not run.is_dir():
        raise UserError(f"--teacher {run} is not a folder: give a run made by `tinyrps train`")
    try:
        config = run_config(run)
        if not (run / "model.pt").is_file():
            raise UserError(f"{run} has no model.pt: train it again with `tinyrps train --data DATA --out {run}`")
        model = load_model(run / "model.pt")    # checks the checksum config.json records, and the architecture
    except UserError as e:
        raise UserError(f"--teacher: {e}") from None
    mine = {name: split["sha256"] for name, split in info["splits"].items()}
    theirs = config["data_identity"].get("splits", {})
    if any(theirs.get(name) != sha for name, sha in mine.items()):
        raise UserError(f"--teacher {run} was trained on other data ({config['data']}): its splits are not those "
                        f"of {data}; give a teacher trained on this --data")
    return Teacher(run=str(run.resolve()), arch=model.arch.name, checkpoint_sha256=config["checkpoint_sha256"],
                   model=model)


# The teacher's logits, kept for the process: a search distils every candidate from the same
# teacher on the same split, and the forward pass over the train split is paid once.
_TEACHER_LOGITS: dict = {}


def teacher_logits(teacher: Teacher, train_x: np.ndarray, info: dict) -> np.ndarray:
    """The teacher's float logits on the train split, by (checkpoint, split) checksum."""
    key = (teacher.checkpoint_sha256, info["splits"]["train"]["sha256"])
    if key not in _TEACHER_LOGITS:
        _TEACHER_LOGITS.clear()        # one teacher at a time: 18,000 x 3 floats
        _TEACHER_LOGITS[key] = predict(teacher.model, train_x)
    return _TEACHER_LOGITS[key]


def fit(config: TrainConfig, arch, train_split, val_split, out: Path, quiet: bool, teacher: Teacher = None) -> tuple:
    """Train for config.epochs; save the last epoch's weights to OUT/model.pt (arch.CHECKPOINT_RULE).
    Returns (per-epoch history, their val accuracy, the model)."""
    (train_x, train_y), (val_x, val_y) = train_split, val_split
    model = TinyRPS(arch)
    init_weights(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    scheduler = lr_schedule(optimizer, config, -(-len(train_x) // config.batch_size))
    generator = torch.Generator().manual_seed(config.seed)
    x, y = images_to_tensor(train_x), torch.from_numpy(train_y)
    soft = torch.from_numpy(teacher.logits) if teacher is not None else None
    history = []
    with progress_bar(quiet) as bar:
        for epoch in range(1, config.epochs + 1):
            task = bar.add_task(f"epoch {epoch}/{config.epochs}", total=len(x), status="")
            train_loss = train_epoch(model, optimizer, scheduler, x, y, config.batch_size, generator,
                                     lambda n: bar.advance(task, n), soft, config.distill_alpha or 0.0,
                                     config.distill_temperature or 1.0)
            val_loss, val_acc, _ = evaluate_split(model, val_x, val_y)
            history.append({"epoch": epoch, "train_loss": train_loss, "val_loss": val_loss, "val_accuracy": val_acc})
            bar.update(task, status=f"loss {train_loss:.4f}  val acc {val_acc:.2%}")
    save_checkpoint(model.state_dict(), out / "model.pt")
    return history, history[-1]["val_accuracy"], model


def save_checkpoint(state_dict, path: Path) -> None:
    buffer = io.BytesIO()
    torch.save(state_dict, buffer)
    atomic_write_bytes(path, buffer.getvalue())
