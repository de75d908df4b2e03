"""The main job end to end, on a small data set and one epoch."""
import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow     # the whole pipeline: data, training, every export, eval, bench


def test_all_writes_summary_report_and_every_main_artifact(cli, tmp_path, markdown_tables):
    out = tmp_path / "all"
    res = cli("all", "--out", out, "--per-class", "300", "--epochs", "1", "--quiet", timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    from tinyrps.pipeline import MAIN_TARGETS
    assert set(summary["artifacts"]) == {"model", *MAIN_TARGETS}, summary.get("skipped")
    for path in summary["artifacts"].values():      # relative to the output folder
        assert not Path(path).is_absolute() and (out / path).is_file(), path
    for target in MAIN_TARGETS:
        assert (out / "run" / "export" / f"{target}.pte").is_file()
        assert 0 <= summary["test_accuracy"][target] <= 1
    assert (out / "data" / "train.npz").is_file() and (out / "run" / "model.pt").is_file()
    report = (out / "report.md").read_text()
    markdown_tables(report, check=True)
    assert "not hardware time" in report and "int8 bit-exact: the device's int8 outputs equal" in report
    assert summary["arch"]["name"] == "tinyrps" and summary["arch"]["spec"] == "c16-c32-p-c64-p-f128"
    for image in ("preview.png", "curves.png", "confusion.png", "latency.png", "npu_layers.png"):
        assert image in report
        assert list(out.rglob(image))
    for target in ("cortex-m55", "cortex-m33", "cortex-m4"):       # each on its own board, the whole test split
        assert summary["eval"]["variants"][target]["bit_exact"] is True, summary["eval"]["variants"][target]
    for board in ("mps3-an547", "mps2-an505", "mps2-an386"):
        assert board in report
    assert "not cycles" in report
    assert len(summary["game"]) >= 3
    assert {g["outcome"] for g in summary["game"]} <= {"win", "lose", "tie"}
