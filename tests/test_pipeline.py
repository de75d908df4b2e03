"""The main job end to end, on a small data set and one epoch."""
import json


def test_all_writes_summary_report_and_every_main_artifact(cli, tmp_path):
    out = tmp_path / "all"
    res = cli("all", "--out", out, "--per-class", "300", "--epochs", "1", "--quiet", timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    from tinyrps.pipeline import MAIN_TARGETS
    assert set(summary["artifacts"]) == {"model", *MAIN_TARGETS}, summary.get("skipped")
    for target in MAIN_TARGETS:
        assert (out / "run" / "export" / f"{target}.pte").is_file()
        assert 0 <= summary["test_accuracy"][target] <= 1
    assert (out / "data" / "train.npz").is_file() and (out / "run" / "model.pt").is_file()
    report = (out / "report.md").read_text()
    assert summary["arch"]["name"] == "tinyrps" and summary["arch"]["spec"] == "c16-c32-p-c64-p-f128"
    for image in ("preview.png", "curves.png", "confusion.png", "latency.png", "npu_layers.png"):
        assert image in report
        assert list(out.rglob(image))
    assert len(summary["game"]) >= 3
    assert {g["outcome"] for g in summary["game"]} <= {"win", "lose", "tie"}
