"""Which devices run a program of each family (host, ethos-u, cortex-m), and what a family needs.

The first device of a family is the one a program of that family runs on by default.
Kept apart from the devices themselves so that choosing a device imports none of them.
"""
from __future__ import annotations

# family -> the devices that can run its programs, the default first
FAMILY_DEVICES = {"host": ("host",), "ethos-u": ("npu-ref",), "cortex-m": ("mcu", "native")}

# What a program of each family needs, for the message to a user who picked the wrong device.
FAMILY_NEEDS = {"host": "the ExecuTorch runtime on a CPU", "ethos-u": "the Arm Ethos-U NPU",
                "cortex-m": "a Cortex-M core with the CMSIS-NN operators"}


def family_default_device(family: str) -> str:
    """The device a program of `family` runs on when none is named."""
    return FAMILY_DEVICES[family][0]
