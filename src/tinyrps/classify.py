"""Classify image files with a program on a device."""
from __future__ import annotations

import numpy as np

from .data import load_image
from .devices import default_device, open_device, require_board_device
from .game import softmax
from .model import LABELS


def classify_files(model, paths, device_name=None, board=None) -> list:
    device_name = device_name or default_device(model)   # checks the model file first
    require_board_device(device_name, board)
    images = np.stack([load_image(p) for p in paths])
    with open_device(device_name, model, board=board) as device:
        probs = softmax(device.classify(images))
    return [{"path": str(p), "label": LABELS[int(pr.argmax())], "confidence": float(pr.max()),
             "probabilities": {label: float(v) for label, v in zip(LABELS, pr)}} for p, pr in zip(paths, probs)]
