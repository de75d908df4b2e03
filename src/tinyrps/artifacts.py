"""The files the pipeline writes and reads back: atomic writes, checksums and a run's
configuration (a program's descriptor is tinyrps.descriptor's).

Every stage uses these, so this module imports only the standard library: reading a
sidecar or writing a JSON result must not cost a torch or ExecuTorch import.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from .errors import UserError


def sha256_file(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the file normal permissions
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_json(path: Path, obj) -> None:
    atomic_write_bytes(path, (json.dumps(obj, indent=2) + "\n").encode())


def run_config(run_dir: Path) -> dict:
    path = Path(run_dir) / "config.json"
    if not path.is_file():
        raise UserError(f"{run_dir} is not a training run (no config.json): create one with `tinyrps train --data DATA --out {run_dir}`")
    return json.loads(path.read_text())
