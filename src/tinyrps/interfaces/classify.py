"""`tinyrps classify`: people's pictures (files, or every picture in a folder) read by a program on a device.

A picture that cannot be read becomes an entry with an error and the others are
still classified. The device is opened only if there is something to classify.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..infra.errors import UserError
from ..network.images import read_image
from ..network.labels import LABELS, softmax

# What a folder's pictures are recognised by (the formats the reader is tested with, and kin).
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".tif", ".tiff", ".gif", ".bmp",
                  ".ppm", ".pgm", ".pbm", ".pnm")


def expand_paths(paths) -> list:
    """Files as given; a folder -> its pictures, sorted by name (hidden files left out). A folder
    without pictures is kept as it is, so that it gets an error entry."""
    out = []
    for path in map(Path, paths):
        if path.is_dir():
            pictures = sorted(p for p in path.iterdir()
                              if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES and not p.name.startswith("."))
            out.extend(pictures or [path])
        else:
            out.append(path)
    return out


def read_all(paths) -> list:
    """(path, Reading or None, error message or None) per picture, in order."""
    out = []
    for path in paths:
        if path.is_dir():
            out.append((path, None, f"{path} is a folder without pictures ({', '.join(IMAGE_SUFFIXES[:6])}, ...)"))
            continue
        try:
            out.append((path, read_image(path), None))
        except UserError as e:
            out.append((path, None, str(e)))
    return out


def classify_files(model, paths, device_name=None, board=None, options=None) -> dict:
    """Classify pictures with a program. Returns {"model", "device", "runs_on", "results": [...]},
    one result per picture: label (None when no letter was found), probabilities and logits per
    label, the 28x28 image the model saw (uint8, under "image"), or {"path", "error"}."""
    from ..devices import default_device, open_device, require_board_device
    device_name = device_name or default_device(model)   # checks the model file before any picture
    require_board_device(device_name, board)
    readings = read_all(expand_paths(paths))
    images = [r.image for _, r, _ in readings if r is not None]
    runs_on = None
    logits = np.zeros((0, len(LABELS)), np.float32)
    if images:
        with open_device(device_name, model, board=board, **(options or {})) as device:
            logits = device.classify(np.stack(images))
            runs_on = device.describe()
    results, row = [], 0
    for path, reading, error in readings:
        if reading is None:
            results.append({"path": str(path), "error": error})
            continue
        results.append(result_entry(path, reading, logits[row]))
        row += 1
    return {"model": str(model), "device": device_name, "runs_on": runs_on, "results": results}


def result_entry(path, reading, logits: np.ndarray) -> dict:
    probs = softmax(logits.astype(np.float64))
    best = int(probs.argmax())
    found = reading.letter_found
    return {"path": str(path),
            "label": LABELS[best] if found else None,
            "confidence": float(probs[best]) if found else None,
            "letter_found": found,
            "probabilities": {label: float(p) for label, p in zip(LABELS, probs)},
            "logits": {label: float(v) for label, v in zip(LABELS, logits)},
            "image": reading.image}

