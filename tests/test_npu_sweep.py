"""npu-sweep: Vela for every accelerator, system config and memory mode; nothing dropped."""
import json
import shutil

import pytest

from tinyrps.hardware import descriptor
from tinyrps import measure
from tinyrps.measure import npu_sweep
from tinyrps.hardware.families import ACCELERATORS
from tinyrps.hardware.vela import vela_config_names

TWO = ("ethos-u55-128", "ethos-u85-128")


def test_every_accelerator_pairs_with_every_system_config_and_memory_mode():
    systems, modes = vela_config_names()
    jobs = npu_sweep.combinations()
    assert len(jobs) == len(set(jobs)) == len(ACCELERATORS) * len(systems) * len(modes) == 726
    assert npu_sweep.combinations(["ethos-u85-128"]) == [("ethos-u85-128", s, m) for s in systems for m in modes]


@pytest.fixture(scope="module")
def swept(cli_session, trained_run, exported):
    exported("ethos-u85-128")
    res = cli_session("npu-sweep", "--run", trained_run, "--json", *[a for acc in TWO for a in ("--accelerator", acc)],
              timeout=900)
    assert res.returncode == 0, res.stderr[-2000:]
    return json.loads(res.stdout)


@pytest.mark.slow
def test_every_combination_is_either_estimated_or_refused_with_vela_reason(swept, trained_run):
    systems, modes = vela_config_names()
    seen = [(c["accelerator"], c["system_config"], c["memory_mode"]) for c in swept["configs"] + swept["refused"]]
    assert sorted(seen) == sorted((a, s, m) for a in TWO for s in systems for m in modes)
    assert swept["combinations"] == len(seen)
    for config in swept["configs"]:
        assert set(npu_sweep.CONFIG_FIELDS) <= set(config)
        assert config["inference_ms"] > 0 and config["inferences_per_s"] == pytest.approx(1000 / config["inference_ms"])
        assert 0 < config["utilisation_total"] <= config["utilisation"] <= 1
    # a DRAM-less (flash) system cannot hold the Dedicated_Sram arena: Vela says so
    refused = {(r["system_config"], r["memory_mode"]): r["reason"] for r in swept["refused"]}
    assert "arena_mem_area=OffChipFlash" in refused[("Ethos_U55_High_End_Embedded", "Dedicated_Sram")]
    assert all(r["reason"] for r in swept["refused"])
    written = json.loads((trained_run / "npu_sweep.json").read_text())
    assert written["configs"] == swept["configs"] and (trained_run / "npu_sweep.png").stat().st_size > 10_000


@pytest.mark.slow
def test_the_sweep_reproduces_the_export_estimate(swept, exported):
    vela = measure.measure(exported("ethos-u85-128"))["vela"]
    assert swept["tosa"]["sha256"] == descriptor.read(exported("ethos-u85-128")).info.tosa_sha256
    (same,) = [c for c in swept["configs"] if (c["accelerator"], c["system_config"], c["memory_mode"]) ==
               ("ethos-u85-128", vela["system_config"], vela["memory_mode"])]
    for key in ("npu_cycles", "total_cycles", "sram_bytes", "dram_bytes", "flash_bytes", "inference_ms", "macs"):
        assert same[key] == vela[key], key


@pytest.mark.slow
def test_weights_in_sram_are_faster_and_booked_as_sram(swept):
    by_key = {(c["accelerator"], c["system_config"], c["memory_mode"]): c for c in swept["configs"]}
    sram_only = by_key[("ethos-u85-128", "Ethos_U85_SYS_DRAM_Mid", "Sram_Only")]
    dedicated = by_key[("ethos-u85-128", "Ethos_U85_SYS_DRAM_Mid", "Dedicated_Sram")]
    assert sram_only["weights_in"] == "SRAM" and sram_only["flash_bytes"] == sram_only["dram_bytes"] == 0
    assert sram_only["sram_bytes"] > dedicated["sram_bytes"] + 300_000
    assert sram_only["inference_ms"] < dedicated["inference_ms"]


@pytest.mark.slow
def test_a_run_without_an_export_is_lowered_once_to_the_same_graph(cli, trained_run, exported, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    for name in ("model.pt", "config.json"):
        shutil.copy(trained_run / name, run / name)
    res = cli("npu-sweep", "--run", run, "--accelerator", "ethos-u85-256", timeout=900)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "Sram_Only" in res.stdout and "refused" in res.stdout and "u85-256" in res.stdout
    written = json.loads((run / "npu_sweep.json").read_text())
    assert written["tosa"]["source"] == "lowered for this sweep"
    assert written["tosa"]["sha256"] == descriptor.read(exported("ethos-u85-128")).info.tosa_sha256
    assert not (run / "export").exists()


@pytest.mark.slow
def test_bad_input_is_one_line(cli, tmp_path, trained_run):
    res = cli("npu-sweep", "--run", tmp_path / "nothing")
    assert res.returncode == 2 and "tinyrps train" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    res = cli("npu-sweep", "--run", trained_run, "--accelerator", "ethos-u99-1")
    assert res.returncode == 2 and "unknown accelerator ethos-u99-1" in res.stderr
