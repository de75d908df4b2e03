"""Shared fixtures: one small data set, one briefly trained run, programs exported once.

Built once per test session in a temporary folder; tests that need a trained model
share them. The model is trained for accuracy enough to make agreement meaningful,
not for the 99.5 % of the default settings (that is the main job's claim).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PER_CLASS = 400        # 1,200 training images, 120 val, 78 test
EPOCHS = 8             # the letters vary widely (7-26 px, anywhere, both polarities): 2 epochs stay near chance


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory) -> Path:
    from tinyrps.pipeline import make_data
    out = tmp_path_factory.mktemp("data")
    make_data(out, seed=0, per_class=PER_CLASS, quiet=True)
    return out


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory, data_dir) -> Path:
    from tinyrps.train import TrainConfig, train
    run = tmp_path_factory.mktemp("run")
    train(TrainConfig(data=str(data_dir), epochs=EPOCHS, seed=0), run, quiet=True)
    return run


@pytest.fixture(scope="session")
def exported(trained_run):
    """exported(target) -> Path of RUN/export/target.pte, built once per session."""
    from tinyrps.export import export_target
    cache = {}

    def get(target: str) -> Path:
        if target not in cache:
            cache[target] = export_target(trained_run, target)
        return cache[target]
    return get


def run_cli(*args, input=None, timeout=300, cwd=None) -> subprocess.CompletedProcess:
    """Run `python -m tinyrps ARGS` as a user would; returns the completed process."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "120"}
    return subprocess.run([sys.executable, "-m", "tinyrps", *map(str, args)], input=input, capture_output=True,
                          text=True, timeout=timeout, cwd=cwd, env=env)


@pytest.fixture
def cli():
    return run_cli


# ── the Arm firmware (QEMU, cross toolchain) ──────────────────────────────────
ARM_INSTALL = "apt-get install --no-install-recommends gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm"


def require_arm_tools() -> None:
    """A missing tool fails the test with the command that installs it (never a skip)."""
    missing = [t for t in ("qemu-system-arm", "arm-none-eabi-gcc", "cmake") if shutil.which(t) is None]
    if missing:
        pytest.fail(f"{', '.join(missing)} not installed; the firmware tests need them: {ARM_INSTALL}", pytrace=False)


@pytest.fixture(scope="session")
def cortex_m_pte(exported):
    require_arm_tools()
    return exported("cortex-m55")


@pytest.fixture(scope="session")
def firmware_elf_path():
    require_arm_tools()
    from tinyrps.firmware.qemu import firmware_elf
    return firmware_elf()


@pytest.fixture(scope="session")
def test_images(trained_run):
    """The first 12 images (and labels) of the run's test split."""
    from tinyrps.data import load_split
    from tinyrps.export import run_config
    images, labels = load_split(run_config(trained_run)["data"], "test")
    return images[:12], labels[:12]
