"""Another architecture end to end: `fast` on every target and every device, bit-exact on the firmware."""
import json

import pytest

from tinyrps.network.model import ARCHITECTURES, count_macs


@pytest.mark.slow
def test_train_records_the_architecture(fast_run):
    config = json.loads((fast_run / "config.json").read_text())
    metrics = json.loads((fast_run / "metrics.json").read_text())
    assert config["arch"] == "fast"
    assert metrics["arch"] == {"name": "fast", "spec": ARCHITECTURES["fast"], "macs": count_macs("fast"),
                               "params": metrics["arch"]["params"]}
    assert metrics["test_accuracy"] > 0.8


@pytest.mark.slow
def test_host_and_npu_programs_of_fast_agree_with_eager(cli, fast_run, exported_fast):
    for target in ("fp32", "int8-xnnpack", "ethos-u85-128"):
        exported_fast(target)
    res = cli("eval", "--run", fast_run, "--json", "--program", "fp32", "--program", "int8-xnnpack",
              "--program", "ethos-u85-128")
    assert res.returncode == 0, res.stderr
    programs = json.loads(res.stdout)["programs"]
    assert programs["fp32"]["agreement"] == 1.0 and programs["fp32"]["max_abs_logit_diff"] < 1e-3
    assert programs["int8-xnnpack"]["agreement"] >= 0.97
    assert programs["ethos-u85-128"]["device"] == "npu" and programs["ethos-u85-128"]["bit_exact"] is True
    assert programs["ethos-u85-128"]["agreement_with"] == "int8-xnnpack"
    assert programs["ethos-u85-128"]["agreement"] >= 0.98


@pytest.mark.slow
@pytest.mark.parametrize("device", ["mcu", "native"])
def test_fast_runs_bit_exact_on_the_firmware(cli, fast_run, exported_fast, measured, firmware_elf_path, device):
    pte = exported_fast("cortex-m55")
    firmware = measured(pte)["firmware"]
    assert firmware["macs"] == count_macs("fast")
    res = cli("eval", "--run", fast_run, "--json", "--program", "cortex-m55", "--device", device, "--limit", "40")
    assert res.returncode == 0, res.stderr
    program = json.loads(res.stdout)["programs"]["cortex-m55"]
    assert program["device"] == device and program["bit_exact"] is True and program["images"] == 40


@pytest.mark.slow
def test_fast_needs_far_fewer_mcu_instructions(exported, exported_fast, measured, firmware_elf_path):
    fast = measured(exported_fast("cortex-m55"))["firmware"]
    default = measured(exported("cortex-m55"))["firmware"]
    assert fast["instructions_per_inference"] * 3 < default["instructions_per_inference"]
    assert fast["arena_bytes"] < default["arena_bytes"]


@pytest.mark.slow
def test_a_spec_trains_and_a_bad_one_is_refused(cli, data_dir, tmp_path):
    res = cli("train", "--data", data_dir, "--out", tmp_path / "bad", "--arch", "c16-q9")
    assert res.returncode == 2 and "bad layer 'q9'" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "bad").exists()
    res = cli("all", "--out", tmp_path / "all", "--arch", "c16-f8-p")
    assert res.returncode == 2 and "must come after" in res.stderr and not (tmp_path / "all").exists()
    res = cli("train", "--data", data_dir, "--out", tmp_path / "spec", "--arch", "c8s2-c8s2-f16", "--epochs", "1",
              "--quiet")
    assert res.returncode == 0, res.stderr
    assert json.loads((tmp_path / "spec" / "config.json").read_text())["arch"] == "c8s2-c8s2-f16"


def test_help_lists_the_architectures_with_macs_and_parameters(cli):
    res = cli("train", "--help")
    text = " ".join(res.stdout.split())
    for name, spec in ARCHITECTURES.items():
        assert f"{name} = {spec} ({count_macs(spec) / 1e6:.2f} M MACs" in text
    assert "parameters" in text and " ".join(cli("all", "--help").stdout.split()).count("M MACs") == 2
