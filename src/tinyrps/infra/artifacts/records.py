"""A data set's record (data.json) and a run's configuration (config.json): read, checked against their
manifests and against each other, so a run whose data was made again since training is refused.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Optional

from .files import sha256_bytes
from .manifest import read_manifest, remake_hint, verified_bytes
from .staging import recover_for_reading
from ..errors import UserError


# The keys a run's config.json must hold (written by tinyrps.train).
RUN_CONFIG_KEYS = {"data": str, "arch": str, "epochs": int, "seed": int, "checkpoint_sha256": str,
                   "data_identity": dict}


# ── a data set's record ──────────────────────────────────────────────────────
def data_info(data_dir) -> tuple:
    """(DATA/data.json as a dict, its SHA-256): checked against the folder's manifest, with a
    sha256 recorded for each split. Every split a reader loads is checked against it."""
    data_dir = Path(data_dir)
    recover_for_reading(data_dir)
    hint = remake_hint(data_dir, "data")
    path = data_dir / "data.json"
    if not data_dir.is_dir():
        raise UserError(f"no data set at {data_dir}: create it with {hint}")
    read_manifest(data_dir, "data")      # another kind of folder is named as such
    if not path.is_file():
        raise UserError(f"{data_dir} has no data.json, so its splits cannot be checked (not made by this version "
                        f"of tinyrps, or not finished): make it again with {hint}")
    raw = verified_bytes(data_dir, "data.json", "data")
    info = _json_object(raw, path, hint)
    splits = info.get("splits")
    if not isinstance(splits, dict) or not all(isinstance(s, dict) and isinstance(s.get("sha256"), str)
                                               for s in splits.values()):
        raise UserError(f"{path} records no checksum of the splits (made by an older tinyrps, or edited): "
                        f"make the data again with {hint}")
    return info, sha256_bytes(raw)


def _json_object(raw: bytes, path: Path, hint: str) -> dict:
    if not raw.strip():
        raise UserError(f"{path} is empty: make it again with {hint}")
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        where = f" (line {e.lineno})" if isinstance(e, json.JSONDecodeError) else ""
        raise UserError(f"{path} is not valid JSON{where}: make it again with {hint}") from None
    if not isinstance(obj, dict):
        raise UserError(f"{path} holds a JSON {type(obj).__name__}, not an object: make it again with {hint}")
    return obj


def data_identity(info: dict, info_sha256: str) -> dict:
    """What a run records of the data it was trained on: enough to tell the same data from
    other data, and to make it again."""
    train_count = info.get("per_class", {}).get("train") if isinstance(info.get("per_class"), dict) else None
    return {"data_json_sha256": info_sha256, "seed": info.get("seed"), "per_class": train_count,
            "splits": {name: split["sha256"] for name, split in info["splits"].items()}}


# ── a run's record ───────────────────────────────────────────────────────────
def run_config(run_dir) -> dict:
    """RUN/config.json, checked: against the run's manifest when it has one, and for the keys
    every later stage reads. Any problem is one line naming the file."""
    run_dir = Path(run_dir)
    recover_for_reading(run_dir)
    path = run_dir / "config.json"
    hint = remake_hint(run_dir, "run")
    if not path.is_file():
        raise UserError(f"{run_dir} is not a training run (no config.json): create one with {hint}")
    config = _json_object(verified_bytes(run_dir, "config.json", "run"), path, hint)
    for key, kind in RUN_CONFIG_KEYS.items():
        if key not in config:
            raise UserError(f"{path} has no '{key}' (made by an older tinyrps, or edited): train again with {hint}")
        if not isinstance(config[key], kind) or isinstance(config[key], bool):
            raise UserError(f"{path}: '{key}' is {json.dumps(config[key])[:40]}, not a {kind.__name__}: "
                            f"train again with {hint}")
    return config


def check_run_data(run_dir, splits: Optional[Iterable[str]] = None, data_option: bool = False) -> Path:
    """The data folder a run was trained on, if it still holds that data: each of `splits`
    (default: every split the run recorded) has the checksum it had at training. Otherwise one
    line saying which split changed and how to get the run's data back (or, for a command
    that takes --data, `data_option`, to give another folder)."""
    run_dir = Path(run_dir)
    config = run_config(run_dir)
    data_dir = Path(config["data"])
    recorded = config["data_identity"].get("splits", {})
    seed, per_class = config["data_identity"].get("seed"), config["data_identity"].get("per_class")
    again = (f"`tinyrps data --out {data_dir}" + (f" --seed {seed}" if seed is not None else "")
             + (f" --per-class {per_class}" if per_class is not None else "") + "`")
    if not (data_dir / "data.json").is_file():
        raise UserError(f"the data {run_dir} was trained on is gone from {data_dir}: make it again with {again}"
                        + (", or give --data" if data_option else ""))
    info, _ = data_info(data_dir)
    for split in (list(splits) if splits is not None else list(recorded)):
        if split not in recorded:
            raise UserError(f"{run_dir / 'config.json'} records no {split} split: train again with "
                            f"{remake_hint(run_dir, 'run')}")
        if info["splits"].get(split, {}).get("sha256") != recorded[split]:
            raise UserError(f"the {split} split in {data_dir} is not the one {run_dir} was trained with (the data "
                            f"was made again since): make it again with {again}, or train again")
    return data_dir
