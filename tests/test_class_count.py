"""Arrays with one column per class take their width from LABELS, never from a literal 3:
with a fourth label, even empty results have four columns."""
from __future__ import annotations

import numpy as np
import pytest

FOUR = ("rock", "paper", "scissors", "lizard")


class Empty:
    name = "empty"

    def classify(self, images):
        raise AssertionError("nothing to classify")


def test_a_device_given_no_images(monkeypatch):
    from tinyrps.devices import base
    monkeypatch.setattr(base, "LABELS", FOUR)
    assert base.Device().classify(np.zeros((0, 28, 28), np.uint8)).shape == (0, 4)


def test_evaluation_given_no_images(monkeypatch):
    from tinyrps import evaluate
    from tinyrps.infra.progress import progress_bar
    monkeypatch.setattr(evaluate, "LABELS", FOUR)
    with progress_bar(True) as bar:
        assert evaluate.classify_with_progress(Empty(), np.zeros((0, 28, 28), np.uint8), bar, "x").shape == (0, 4)


def test_the_cortex_m_reference_given_no_images(monkeypatch):
    from tinyrps.reference import cortex_m
    monkeypatch.setattr(cortex_m, "LABELS", FOUR)
    assert cortex_m.replay_int8(None, np.zeros((0, 28, 28), np.uint8)).shape == (0, 4)


@pytest.mark.parametrize("module,cls", [("native", "NativeDevice"), ("mcu", "McuDevice")])
def test_firmware_devices_before_any_image(monkeypatch, module, cls):
    import importlib
    devices = importlib.import_module(f"tinyrps.devices.{module}")
    monkeypatch.setattr(devices, "LABELS", FOUR)
    device = object.__new__(getattr(devices, cls))   # the int8 history alone, without a firmware behind it
    device._int8_chunks = []
    assert device.int8_outputs.shape == (0, 4)

