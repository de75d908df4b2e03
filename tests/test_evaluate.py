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
        assert v["device"] == "host"
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

    from tinyrps.errors import UserError
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
