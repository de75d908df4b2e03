import json

import pytest


@pytest.mark.slow     # evaluates programs on the test split
def test_eval_json_contract(cli, trained_run, exported):
    for target in ("fp32", "int8-xnnpack"):
        exported(target)
    res = cli("eval", "--run", trained_run, "--json", "--program", "fp32", "--program", "int8-xnnpack")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    programs = out["programs"]
    assert list(programs) == ["eager", "fp32", "int8-xnnpack"]
    assert 0.8 < programs["eager"]["accuracy"] <= 1
    for name in ("fp32", "int8-xnnpack"):
        v = programs[name]
        assert v["device"] == "executorch"
        assert 0 <= v["accuracy"] <= 1 and 0.95 <= v["agreement"] <= 1
    assert programs["fp32"]["agreement"] == 1.0
    assert programs["fp32"]["accuracy"] == programs["eager"]["accuracy"]
    assert programs["fp32"]["max_abs_logit_diff"] < 1e-3


@pytest.mark.slow     # evaluates programs on the test split
def test_eval_table_on_screen(cli, trained_run, exported):
    exported("fp32-xnnpack")
    res = cli("eval", "--run", trained_run, "--program", "fp32-xnnpack", "--limit", "20")
    assert res.returncode == 0, res.stderr
    assert "fp32-xnnpack" in res.stdout and "accuracy" in res.stdout and "agreement" in res.stdout


def test_eval_of_a_target_not_exported(cli, trained_run):
    res = cli("eval", "--run", trained_run, "--program", "ethos-u65-512")
    assert res.returncode == 2 and "tinyrps export --run" in res.stderr


def test_a_program_of_another_checkpoint_is_refused(trained_run, exported, tmp_path):
    """After a retrain, the old programs are not the run's: eval and bench say which and how to fix it."""
    import shutil

    from tinyrps.infra.errors import UserError
    from tinyrps.programs import selected
    run = tmp_path / "run"
    shutil.copytree(trained_run, run, ignore=shutil.ignore_patterns("export"))
    (run / "export").mkdir()
    shutil.copy(exported("int8-xnnpack"), run / "export")
    shutil.copy(exported("int8-xnnpack").with_suffix(".json"), run / "export")
    assert list(selected(run)) == ["int8-xnnpack"]
    (run / "model.pt").write_bytes((run / "model.pt").read_bytes() + b"\0")   # a retrain
    with pytest.raises(UserError, match=r"exported from another checkpoint.*tinyrps export --run .* --target int8-xnnpack"):
        selected(run)
    with pytest.raises(UserError, match="another checkpoint"):
        selected(run, ["int8-xnnpack"])


@pytest.mark.slow     # evaluates programs on the test and benchmark splits
def test_eval_records_the_counts_and_the_split(cli, trained_run, exported, data_dir):
    from tinyrps.infra.artifacts.files import sha256_file
    exported("int8-xnnpack")
    res = cli("eval", "--run", trained_run, "--json", "--program", "int8-xnnpack")
    assert res.returncode == 0, res.stderr
    test = json.loads(res.stdout)
    assert test["split"] == "test" and test["images"] == test["test_images"] == 78
    assert test["split_sha256"] == test["test_split_sha256"] == sha256_file(data_dir / "test.npz")
    for v in test["programs"].values():
        assert v["images"] == 78 and v["accuracy"] == v["correct"] / v["images"]
    res = cli("eval", "--run", trained_run, "--json", "--program", "int8-xnnpack", "--split", "benchmark")
    assert res.returncode == 0, res.stderr
    bench = json.loads(res.stdout)
    assert bench["split"] == "benchmark" and bench["images"] == 3 * 66
    assert bench["split_sha256"] == sha256_file(data_dir / "benchmark.npz") != test["split_sha256"]
    assert "test_split_sha256" not in bench and "test_images" not in bench     # not mistaken for a test result
    for v in bench["programs"].values():
        assert v["images"] == 198 and v["accuracy"] == v["correct"] / 198
    res = cli("eval", "--run", trained_run, "--program", "int8-xnnpack", "--split", "benchmark", "--limit", "30")
    assert res.returncode == 0, res.stderr
    assert "on 30 benchmark images" in res.stdout and "/30" in res.stdout and "–" in res.stdout


def test_the_benchmark_split_is_not_run_on_the_emulated_boards(cli, trained_run, exported):
    """Refused before any work (no board is started), in one line that says what to do instead."""
    exported("cortex-m55")
    res = cli("eval", "--run", trained_run, "--program", "cortex-m55", "--split", "benchmark")
    assert res.returncode == 2 and res.stdout == ""
    line = res.stderr.strip()
    assert "\n" not in line and "--split benchmark" in line and "--device native" in line and "cortex-m55 on mcu" \
        in line


def test_eval_of_data_made_before_the_benchmark_split(cli, trained_run, exported, data_dir, tmp_path):
    """Such data still evaluates on test; --split benchmark says in one line how to make it."""
    import shutil

    from tinyrps.infra.artifacts.manifest import write_manifest
    old = tmp_path / "old-data"
    shutil.copytree(data_dir, old)
    info = json.loads((old / "data.json").read_text())
    del info["splits"]["benchmark"], info["per_class"]["benchmark"]
    (old / "data.json").write_text(json.dumps(info))
    (old / "benchmark.npz").unlink()
    write_manifest(old, "data")
    exported("int8-xnnpack")
    res = cli("eval", "--run", trained_run, "--data", old, "--program", "int8-xnnpack", "--limit", "10")
    assert res.returncode == 0, res.stderr
    res = cli("eval", "--run", trained_run, "--data", old, "--program", "int8-xnnpack", "--split", "benchmark")
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and f"tinyrps data --out {old} --per-class 400" in res.stderr


@pytest.mark.slow     # evaluates programs in the TOSA reference model
def test_programs_computing_the_same_function_are_computed_once(trained_run, exported, data_dir):
    """The U55 and U85 programs of one model run one TOSA graph in the reference model: the second
    takes the first's logits, which are what its own device gives bit for bit, and says so."""
    import numpy as np

    from tinyrps.data import load_split
    from tinyrps.devices import open_device
    from tinyrps.evaluate import evaluate
    u55, u85 = exported("ethos-u55-128"), exported("ethos-u85-128")
    images = load_split(data_dir, "test")[0][:20]
    with open_device("npu-ref", u55) as first, open_device("npu-ref", u85) as second:
        assert first.computation() == second.computation()
        np.testing.assert_array_equal(first.classify(images), second.classify(images))
    with open_device("executorch", exported("int8-xnnpack")) as host:
        assert host.computation() is None       # not known to be shared: always computed
    result = evaluate(trained_run, only=["ethos-u55-128", "ethos-u85-128"], limit=20, quiet=True,
                      device_override="npu-ref")
    from tinyrps.interfaces.report.accuracy import eval_notes
    assert "ethos-u85-128 has ethos-u55-128's outputs" in eval_notes(result)
    shared, computed = dict(result["programs"]["ethos-u85-128"]), dict(result["programs"]["ethos-u55-128"])
    assert shared.pop("outputs_of") == "ethos-u55-128" and "outputs_of" not in computed
    assert shared.pop("program_sha256") != computed.pop("program_sha256")
    assert shared == computed and shared["images"] == 20
    # on their default device, the NPU model, each runs its own command stream: both computed
    result = evaluate(trained_run, only=["ethos-u55-128", "ethos-u85-128", "int8-xnnpack"], limit=20, quiet=True)
    assert not any("outputs_of" in entry for entry in result["programs"].values())
