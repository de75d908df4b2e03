"""A stage's results written by an earlier tinyrps: `all` takes them up only in today's format."""
import json

from tinyrps.pipeline import current_result

CHECKPOINT, PROGRAM = "c" * 64, "p" * 64


def write(path, key):
    path.write_text(json.dumps({"checkpoint_sha256": CHECKPOINT,
                                key: {"eager": {"accuracy": 1.0}, "fp32": {"program_sha256": PROGRAM}}}))
    return path


def test_a_result_that_lists_its_programs_is_current(tmp_path):
    result = current_result(write(tmp_path / "eval.json", "programs"), CHECKPOINT, {"fp32": PROGRAM})
    assert result is not None and set(result["programs"]) == {"eager", "fp32"}


def test_a_result_of_tinyrps_0_1_0_is_stale(tmp_path):
    # 0.1.0 listed a run's programs under "variants": the stage runs again and writes "programs"
    assert current_result(write(tmp_path / "eval.json", "variants"), CHECKPOINT, {"fp32": PROGRAM}) is None
    assert current_result(write(tmp_path / "bench.json", "variants"), CHECKPOINT, {"fp32": PROGRAM}) is None
