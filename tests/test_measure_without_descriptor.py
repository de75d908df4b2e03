"""A Cortex-M program that has no descriptor (one ExecuTorch's own flow wrote: the same bytes as tinyrps's
export, without the .json beside it) is measured and benchmarked with the core --target names, and the
output says the core was taken from --target; without --target it is one line naming the option."""
from __future__ import annotations

import json
import shutil

import pytest


@pytest.fixture
def bare_program(exported, tmp_path):
    pte = tmp_path / "theirs.pte"
    shutil.copyfile(exported("cortex-m55"), pte)
    assert not pte.with_suffix(".json").exists()
    return pte


def test_without_target_it_is_one_line(cli, bare_program):
    for command in ("measure", "bench"):
        res = cli(command, "--model", bare_program)
        lines = res.stderr.strip().splitlines()
        assert res.returncode == 2 and len(lines) == 1, res.stderr
        assert "theirs.pte has no descriptor (theirs.json): give the core" in lines[0] and "--target" in lines[0]


def test_a_target_that_is_not_a_cortex_m_core_is_one_line(cli, bare_program):
    res = cli("measure", "--model", bare_program, "--target", "ethos-u55-128")
    assert res.returncode == 2 and "--target ethos-u55-128 is not a Cortex-M core" in res.stderr.strip()


@pytest.mark.slow     # the measure stage on the emulated board
def test_measure_and_bench_take_the_core_from_target(cli, bare_program, exported, measured, firmware_elf_path):
    res = cli("measure", "--model", bare_program, "--target", "cortex-m55", "--json", timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    figures = json.loads(res.stdout)["theirs"]
    assert figures["note"] == "no descriptor: measured as a cortex-m55 program, the core --target names"
    own = measured(exported("cortex-m55"))["firmware"]
    firmware = figures["firmware"]
    assert firmware["board"] == "mps3-an547" and firmware["kernels"] == "mve"
    assert firmware["instructions_per_inference"] > 0 and len(firmware["layers"]) == len(own["layers"])
    assert firmware["arena_bytes"] == own["arena_bytes"]
    res = cli("bench", "--model", bare_program, "--target", "cortex-m55", "--runs", "2", "--json", timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    (entry,) = json.loads(res.stdout)["programs"].values()
    assert entry["note"] == figures["note"]
    assert entry["firmware"]["instructions_per_inference"] == firmware["instructions_per_inference"]
    assert [layer["instructions"] for layer in entry["firmware"]["layers"]] == \
        [layer["instructions"] for layer in firmware["layers"]]
