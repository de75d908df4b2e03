"""The libFuzzer targets of firmware/fuzz/ (scripts/fuzz.py): every committed seed and
regression input replays cleanly, and a short campaign of each target, seeded with a
real exported program, finds nothing. `make fuzz` runs the long campaigns."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FUZZ = REPO / "scripts" / "fuzz.py"
TARGETS = ("pte", "ethos-u", "link-frame", "link-tensor-io", "batch-input")
SMOKE_SECONDS = 5


def fuzz(*args, timeout=600) -> subprocess.CompletedProcess:
    if shutil.which("clang-16") is None:
        pytest.fail("clang-16 is not installed; the fuzz targets need it: "
                    "apt-get install --no-install-recommends clang-16 libclang-rt-16-dev", pytrace=False)
    return subprocess.run([sys.executable, str(FUZZ), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def test_seeds_and_regression_inputs_replay_cleanly(tmp_path):
    result = fuzz("replay", "--work", tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    for target in TARGETS:
        assert f"{target}: " in result.stdout and "FAILED" not in result.stdout
    regressions = REPO / "firmware" / "fuzz" / "regressions"
    assert any(regressions.rglob("*")), "the regression inputs of past findings are missing"


def test_the_ethos_u_seeds_reach_the_npu_not_only_the_loader(tmp_path):
    """Each committed Ethos-U seed loads and runs one NPU job through the target's checking driver, so
    the campaign mutates programs that get past the delegate's parser."""
    jobs = tmp_path / "jobs"
    seeds = sorted((REPO / "firmware" / "fuzz" / "seeds" / "ethos-u").iterdir())
    assert len(seeds) >= 2
    fuzz("replay", "--target", "ethos-u", "--work", tmp_path)         # builds the targets, or says what to install
    from tinyrps.firmware import build_firmware
    binary = build_firmware("fuzz").tool("fuzz-ethos-u")
    result = subprocess.run([str(binary), *map(str, seeds)], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "FUZZ_NPU_JOBS": str(jobs)})
    assert result.returncode == 0, result.stderr[-3000:]
    assert int(jobs.read_text()) == len(seeds)


@pytest.mark.slow
def test_a_short_campaign_of_every_target_finds_nothing(tmp_path, m55_pte):
    result = fuzz("run", "--seconds", SMOKE_SECONDS, "--work", tmp_path, "--program", m55_pte)
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    summary = {entry["target"]: entry for entry in json.loads((tmp_path / "summary.json").read_text())}
    assert set(summary) == set(TARGETS)
    for target, entry in summary.items():
        assert entry["finding"] == "" and entry["executions"] > 100, entry
        assert entry["coverage_edges"] > 20, entry

