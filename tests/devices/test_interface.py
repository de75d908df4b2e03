"""What every device offers: the Device interface's defaults, and the family -> device map."""
from __future__ import annotations

import numpy as np
import pytest

from tinyrps.devices import DEVICES, device_class
from tinyrps.devices.base import Device
from tinyrps.infra.errors import UserError
from tinyrps.hardware.families import FAMILIES


class Plain(Device):
    """A device that reports nothing beyond its logits."""
    name = "plain"

    def _classify_batch(self, images):
        return np.zeros((len(images), 3), np.float32)


def test_a_device_reports_nothing_by_default():
    device = Plain()
    device.classify(np.zeros((2, 28, 28), np.uint8))
    assert device.bench_runs is None and device.computation() is None
    assert device.int8_outputs is None and device.last_int8 is None
    assert device.last_stats() == {}
    assert device.inputs is None and device.outputs is None


def test_a_device_without_tensors_says_which_devices_run_them():
    with pytest.raises(UserError, match="runs image classifiers only .*--device native or --device mcu"):
        Plain().run([np.zeros((1, 1, 28, 28), np.float32)])
    with pytest.raises(UserError, match="--device native or --device mcu"):
        Plain().run_batch([np.zeros((2, 1, 1, 28, 28), np.float32)])


def test_the_firmware_devices_run_any_programs_tensors():
    for name in ("mcu", "native"):
        assert device_class(name)._run_batch is not Device._run_batch, name


@pytest.mark.parametrize("name", list(DEVICES))
def test_every_device_has_the_reporting_members(name):
    cls = device_class(name)
    assert issubclass(cls, Device)
    assert cls.bench_runs is None or cls.bench_runs >= 1
    assert callable(cls.last_stats)


def test_the_firmware_devices_report_their_int8_outputs_and_few_bench_runs():
    assert device_class("mcu").bench_runs == 20
    assert device_class("npu-ref").bench_runs == 50     # a model of the NPU: its time is not the NPU's
    for name in ("mcu", "native"):
        assert device_class(name).int8_outputs is not Device.int8_outputs


def test_every_family_has_devices_that_exist():
    for family in FAMILIES:
        assert family.devices and set(family.devices) <= set(DEVICES), family.name
        assert family.default_device == family.devices[0]
