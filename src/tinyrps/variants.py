"""The variants of a run: the eager checkpoint and every exported .pte, in registry order."""
from __future__ import annotations

from pathlib import Path

from .errors import UserError
from .export import read_sidecar, targets


def checkpoint(run_dir) -> Path:
    path = Path(run_dir) / "model.pt"
    if not path.is_file():
        raise UserError(f"no checkpoint at {path}: create it with `tinyrps train --data DATA --out {run_dir}`")
    return path


def exported(run_dir) -> dict:
    """target name -> .pte path, for each program exported in RUN/export, host programs first."""
    export_dir = Path(run_dir) / "export"
    found = {p.stem: p for p in sorted(export_dir.glob("*.pte"))} if export_dir.is_dir() else {}
    order = list(targets())
    return dict(sorted(found.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)))


def sidecar(pte: Path) -> dict:
    return read_sidecar(pte) or {}
