"""Ethos-U export: one NPU delegate, the descriptor, Vela's estimate in the measurement, clear failures."""
import csv
import hashlib
import json
import shutil

import numpy as np
import pytest

from tinyrps.hardware import descriptor, vela as vela_module
from tinyrps import measure
from tinyrps.infra.errors import UserError
from tinyrps.evaluate import EvalContext, family_check
from tinyrps.export import ethos_u, export_target
from tinyrps.hardware.families import ACCELERATORS, get_family, get_target, targets
from tinyrps.network.model import count_macs
from tinyrps.reference import ethos_u as reference

NPU_TARGETS = ("ethos-u85-128", "ethos-u55-128")
# Exports through Vela, or PT2E quantization: outside `make test-fast`.
slow = pytest.mark.slow
BOUNDARY = {"quantized_decomposed::quantize_per_tensor.out", "quantized_decomposed::dequantize_per_tensor.out"}


def described(pte):
    return descriptor.read(pte, pte.read_bytes())


def vela_of(pte) -> dict:
    """The measure stage's Vela figures of the program (measured here if not yet)."""
    return (measure.read(pte) or measure.measure(pte))["vela"]


def test_every_accelerator_configuration_of_vela_is_a_target():
    from ethosu.vela.architecture_features import Accelerator
    assert ACCELERATORS == tuple(Accelerator.member_list())
    for name in ACCELERATORS:
        target = targets()[name]
        assert target.family == "ethos-u" and get_family("ethos-u").default_device == "npu"
        assert set(target.options) == {"system_config", "memory_mode"} and family_check(name) is reference.evaluate
    assert get_family("ethos-u").available() is None


def test_unknown_target_lists_the_valid_ones():
    with pytest.raises(UserError) as e:
        get_target("ethos-u99-64")
    assert "ethos-u85-128" in str(e.value) and "ethos-u55-32" in str(e.value) and "int8-xnnpack" in str(e.value)


@pytest.mark.parametrize("option,value,listed", [("system_config", "Ethos_U85_Nowhere", "Ethos_U85_SYS_DRAM_Mid"),
                                                  ("memory_mode", "Dram_Everywhere", "Dedicated_Sram")])
def test_unknown_vela_setting_lists_the_valid_ones(trained_run, option, value, listed):
    with pytest.raises(UserError) as e:
        export_target(trained_run, "ethos-u85-128", **{option: value})
    assert value in str(e.value) and listed in str(e.value)


@slow
@pytest.mark.parametrize("target", NPU_TARGETS)
def test_the_whole_network_is_one_ethos_u_delegate(target, exported):
    from executorch.exir._serialize._program import deserialize_pte_binary
    pte = exported(target)
    plan = deserialize_pte_binary(pte.read_bytes()).program.execution_plan[0]
    assert [d.id for d in plan.delegates] == ["EthosUBackend"]
    assert {f"{op.name}.{op.overload}" for op in plan.operators} == BOUNDARY
    delegation = described(pte).info.delegation
    assert delegation["subgraphs"] == 1 and set(delegation["cpu_ops"]) == BOUNDARY
    assert pte.stat().st_size <= 440_000


@slow
@pytest.mark.parametrize("target,clock_hz,system_config,memory_mode", [
    ("ethos-u85-128", 1_000_000_000, "Ethos_U85_SYS_DRAM_Mid", "Dedicated_Sram"),
    ("ethos-u55-128", 500_000_000, "Ethos_U55_High_End_Embedded", "Shared_Sram")])
def test_the_measurement_holds_vela_s_estimate(target, clock_hz, system_config, memory_mode, exported):
    vela = vela_of(exported(target))
    assert set(vela_module.VELA_FIELDS) <= set(vela)
    assert (vela["accelerator"], vela["system_config"], vela["memory_mode"], vela["clock_hz"]) == \
        (target, system_config, memory_mode, clock_hz)
    assert 0 < vela["npu_cycles"] <= vela["total_cycles"]
    assert vela["inference_ms"] == pytest.approx(vela["total_cycles"] / clock_hz * 1000)
    assert vela["inferences_per_s"] == pytest.approx(1000 / vela["inference_ms"])
    assert vela["macs"] == pytest.approx(count_macs(), rel=0.01)
    assert vela["utilisation"] == pytest.approx(vela["macs"] / (vela["npu_cycles"] * 128))
    assert 0 < vela["utilisation"] <= 1
    assert 0 < vela["sram_bytes"] < 512 * 1024
    # the weights live off-chip: DRAM in Dedicated_Sram mode, flash in Shared_Sram mode
    weights = vela["dram_bytes"] if memory_mode == "Dedicated_Sram" else vela["flash_bytes"]
    assert weights > 300_000


@slow
@pytest.mark.parametrize("target", NPU_TARGETS)
def test_vela_figures_come_from_its_summary_and_kept_files_belong_to_the_program(target, exported):
    pte = exported(target)
    d = described(pte)
    kept = {name: pte.parent / rel for name, rel in d.files.items()}
    assert set(kept) == {"out.tosa", "vela_per_layer.csv", "vela_summary.csv", "vela.log"}
    with open(kept["vela_summary.csv"], newline="") as f:
        row = next(csv.DictReader(f))
    assert int(float(row["cycles_npu"])) == vela_of(pte)["npu_cycles"]
    assert int(float(row["nn_macs"])) == vela_of(pte)["macs"]
    with open(kept["vela_per_layer.csv"], newline="") as f:
        assert {r["Target"] for r in csv.DictReader(f)} == {"NPU"}
    assert hashlib.sha256(kept["out.tosa"].read_bytes()).hexdigest() == d.info.tosa_sha256


@slow
def test_program_records_its_io_quantization_and_no_build_paths(exported, trained_run):
    pte = exported("ethos-u85-128")
    program = pte.read_bytes()
    quantization = described(pte).info.quantization
    assert {k: quantization[k] for k in ("input", "output")} == reference.io_quantization(program)
    # input: [0, 1] onto the full int8 range
    assert quantization["input"]["zero_point"] == -128
    assert quantization["input"]["scale"] == pytest.approx(1 / 255, rel=0.02)
    # the compiler's scratch folder must not leak into the program (it would make exports irreproducible)
    assert str(trained_run).encode() not in program and b"debug_artifact_path" not in program


@slow
def test_vela_failure_is_one_line_and_keeps_the_intermediates(trained_run):
    # the U55 cannot use a DRAM arena: Vela rejects this configuration
    with pytest.raises(UserError) as e:
        export_target(trained_run, "ethos-u55-64", memory_mode="Dedicated_Sram")
    message = str(e.value)
    failed = trained_run / "export" / "ethos-u55-64.failed"
    assert "\n" not in message and "Vela" in message and str(failed) in message
    assert (failed / "ethos-u" / "out.tosa").is_file() and "Traceback" in (failed / "vela.log").read_text()
    assert not (trained_run / "export" / "ethos-u55-64.pte").exists()
    shutil.rmtree(failed)


def test_operators_that_fell_back_to_the_cpu_are_named():
    split = {"subgraphs": 2, "backends": ["EthosUBackend", "EthosUBackend"],
             "cpu_ops": sorted(BOUNDARY | {"aten::sigmoid.out"})}
    with pytest.raises(UserError) as e:
        ethos_u.check_one_delegate(split, [("Conv2D", "NPU")])
    assert "aten::sigmoid.out" in str(e.value) and "2 delegated subgraphs" in str(e.value)
    whole = {"subgraphs": 1, "backends": ["EthosUBackend"], "cpu_ops": sorted(BOUNDARY)}
    with pytest.raises(UserError) as e:
        ethos_u.check_one_delegate(whole, [("Conv2D", "NPU"), ("Softmax", "CPU")])
    assert "Softmax (Vela)" in str(e.value)
    assert ethos_u.check_one_delegate(whole, [("Conv2D", "NPU")]) == whole


def test_a_network_of_which_nothing_lands_on_the_npu_is_one_line(tmp_path):
    # the partitioner took nothing, so Vela never ran and wrote no per-layer table
    layers = ethos_u.per_layer_targets(tmp_path / "output" / "out_per-layer.csv")
    nothing = {"subgraphs": 0, "backends": [], "cpu_ops": sorted(BOUNDARY | {"aten::atan2.out"})}
    with pytest.raises(UserError) as e:
        ethos_u.check_one_delegate(nothing, layers)
    assert "no part of the network lands on the Ethos-U NPU" in str(e.value)
    assert "aten::atan2.out" in str(e.value) and "Cortex-M" in str(e.value)


@slow
def test_the_check_uses_the_int8_cpu_predictions_it_is_given(exported):
    pte = exported("ethos-u85-128")
    logits = np.eye(3, dtype=np.float32)[[0, 1, 2, 2]]
    ctx = EvalContext("ethos-u85-128", pte, np.zeros((4, 28, 28), np.uint8), np.zeros(4, np.int64), logits, None,
                      {"int8-xnnpack": np.array([0, 1, 2, 0])})
    result = reference.evaluate(ctx)
    assert result == {"agreement": 0.75, "agreement_with": "int8-xnnpack"}


def test_a_stale_measurement_is_never_read(exported, tmp_path):
    """The measurement records the program it measured: for other bytes it is no measurement."""
    pte = tmp_path / "u85.pte"
    shutil.copy(exported("ethos-u85-128"), pte)
    shutil.copy(exported("ethos-u85-128").with_suffix(".json"), pte.with_suffix(".json"))
    shutil.copytree(exported("ethos-u85-128").with_suffix(""), tmp_path / "u85")
    raw = json.loads(pte.with_suffix(".json").read_text())
    raw["files"] = {name: path.replace("ethos-u85-128/", "u85/") for name, path in raw["files"].items()}
    pte.with_suffix(".json").write_text(json.dumps(raw))
    measured = measure.measure(pte)
    assert measure.read(pte) == measured and measured["program_sha256"] == hashlib.sha256(pte.read_bytes()).hexdigest()
    pte.write_bytes(pte.read_bytes() + b"\0")
    assert measure.read(pte) is None


def test_measuring_a_run_says_each_program_as_it_goes(cli, trained_run, exported):
    """A measurement takes seconds (the Cortex-M ones a firmware build and QEMU): each program is
    named as it starts and as it ends, on stderr even where stderr is no terminal (a log)."""
    pte = exported("ethos-u85-128")
    measure.path_of(pte).unlink(missing_ok=True)
    res = cli("measure", "--run", trained_run, "--target", "ethos-u85-128")
    assert res.returncode == 0, res.stderr
    lines = [line.strip() for line in res.stderr.splitlines()]
    assert "measuring ethos-u85-128 (1/1)" in lines, res.stderr
    done = [line for line in lines if line.startswith("ethos-u85-128 measured in ")]
    assert len(done) == 1 and "Vela:" in done[0], res.stderr
    assert "ethos-u85-128: Vela:" in res.stdout
    quiet = cli("measure", "--run", trained_run, "--target", "ethos-u85-128", "--quiet")
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr


# ── per-layer profile and memory placement ───────────────────────────────────
@slow
@pytest.mark.parametrize("target", NPU_TARGETS)
def test_vela_s_per_layer_profile_adds_up(target, exported):
    vela = vela_of(exported(target))
    layers = vela["layers"]
    assert layers and all(set(layer) == set(vela_module.LAYER_FIELDS) for layer in layers)
    assert sum(layer["total_cycles"] for layer in layers) == pytest.approx(vela["total_cycles"], rel=0.05)
    assert sum(layer["macs"] for layer in layers) == pytest.approx(vela["macs"], rel=0.01)
    for layer in layers:
        assert 0 <= layer["npu_cycles"] <= layer["total_cycles"]
        assert 0 <= layer["utilisation"] <= 1
        if layer["total_cycles"]:
            assert layer["utilisation"] == pytest.approx(layer["macs"] / (layer["total_cycles"] * 128))
    assert vela["utilisation_total"] == pytest.approx(vela["macs"] / (vela["total_cycles"] * 128))
    assert vela["utilisation_total"] <= vela["utilisation"]


def test_the_big_classifier_layer_waits_on_dram(exported):
    """Default model, U85 with weights in DRAM: the 3136x128 layer's weights stream from DRAM, so
    most of its cycles are memory waits, and it is the slowest layer."""
    vela = vela_of(exported("ethos-u85-128"))
    slowest = max(vela["layers"], key=lambda layer: layer["total_cycles"])
    assert slowest["macs"] == 64 * 7 * 7 * 128
    assert slowest["npu_cycles"] < slowest["total_cycles"] / 2
    assert vela["weights_in"] == "DRAM"


@slow
def test_sram_only_counts_the_weights_as_sram(trained_run, tmp_path):
    """Vela books the weights of Sram_Only as on-chip flash; they sit in SRAM, and the measurement says so."""
    run = tmp_path / "run"
    run.mkdir()
    for name in ("model.pt", "config.json"):
        shutil.copy(trained_run / name, run / name)
    pte = export_target(run, "ethos-u85-128", memory_mode="Sram_Only")
    vela = vela_of(pte)
    with open(pte.parent / described(pte).files["vela_summary.csv"], newline="") as f:
        row = next(csv.DictReader(f))
    on_chip_flash = float(row["on_chip_flash_memory_used"]) * 1024
    assert on_chip_flash > 300_000   # Vela's own booking
    assert (vela["memory_mode"], vela["weights_in"], vela["flash_bytes"], vela["dram_bytes"]) == \
        ("Sram_Only", "SRAM", 0, 0)
    assert vela["sram_bytes"] == round(float(row["sram_memory_used"]) * 1024) + round(on_chip_flash)
    assert vela["npu_cycles"] == vela["total_cycles"]   # nothing to wait for off-chip


@pytest.mark.parametrize("system_config,memory_mode,where", [
    ("Ethos_U85_SYS_DRAM_Mid", "Sram_Only", "Sram"), ("Ethos_U85_SYS_DRAM_Mid", "Dedicated_Sram_384KB", "Dram"),
    ("Ethos_U55_High_End_Embedded", "Shared_Sram", "OffChipFlash"), ("Ethos_U85_SYS_Flash_Low", "Sram_Only", "Sram")])
def test_weights_memory_follows_vela_ini(system_config, memory_mode, where):
    assert vela_module.weights_memory(system_config, memory_mode) == where


# ── the fast architecture on the NPU ─────────────────────────────────────────
@slow
def test_fast_architecture_is_one_delegate_and_much_faster(exported, exported_fast):
    from executorch.exir._serialize._program import deserialize_pte_binary
    pte = exported_fast("ethos-u85-128")
    plan = deserialize_pte_binary(pte.read_bytes()).program.execution_plan[0]
    assert [d.id for d in plan.delegates] == ["EthosUBackend"]
    fast, default = described(pte), described(exported("ethos-u85-128"))
    assert fast.origin.arch["name"] == "fast" and default.origin.arch["name"] == "tinyrps"
    vela = vela_of(pte)
    # Vela does not count the taps that fall on the strided convolutions' padding
    assert vela["macs"] == pytest.approx(count_macs("fast"), rel=0.05)
    # the targets for fast on U85-128 (Vela 5.1, default configuration)
    assert vela["inference_ms"] <= 0.045 and vela["sram_bytes"] <= 48 * 1024 and pte.stat().st_size <= 110_000
    assert vela["inference_ms"] * 4 < vela_of(exported("ethos-u85-128"))["inference_ms"]
