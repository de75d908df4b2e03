"""The main job end to end, on a small data set and one epoch."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow     # the whole pipeline: data, training, every export, eval, bench


ALL = ("--per-class", "300", "--epochs", "1", "--quiet")


@pytest.fixture(scope="module")
def main_job(cli_session, tmp_path_factory):
    """The main job's folder, kept across sessions (keyed by every tinyrps module and the firmware's
    sources). A kept one lands in another folder than it was made in, and the run records its data
    folder's path, so the job runs there once more: it trains again (the same bytes, so every later
    stage stays current) and leaves a folder of this session's path, as a job run here does."""
    import fixture_cache
    from tinyrps.firmware.sources import firmware_dir, source_files
    key = fixture_cache.fixture_key("main-job", *ALL, modules=fixture_cache.package_modules("tinyrps"),
                                    files=source_files(firmware_dir()))
    built = []

    def run_all(out: Path) -> None:
        res = cli_session("all", "--out", out, *ALL, timeout=900)
        assert res.returncode == 0, res.stderr[-3000:]

    def build(folder: Path) -> None:
        run_all(folder / "all")
        built.append(folder)
    out = fixture_cache.cached_folder("main-job", key, build, tmp_path_factory.mktemp("main-job")) / "all"
    if not built:
        run_all(out)
        summary = json.loads((out / "summary.json").read_text())
        assert summary["reused"] == ["data", "export", "measure", "eval", "bench"], summary["reused"]
    return out


def test_all_writes_summary_report_and_every_main_artifact(main_job, markdown_tables):
    out = main_job
    summary = json.loads((out / "summary.json").read_text())
    from tinyrps.pipeline import MAIN_TARGETS
    assert set(summary["artifacts"]) == {"model", *MAIN_TARGETS}, summary.get("skipped")
    for path in summary["artifacts"].values():      # relative to the output folder
        assert not Path(path).is_absolute() and (out / path).is_file(), path
    for target in MAIN_TARGETS:
        assert (out / "run" / "export" / f"{target}.pte").is_file()
        assert summary["test_accuracy"][target] == summary["eval"]["programs"][target]["accuracy"]
        assert summary["programs_sha256"][target] == summary["eval"]["programs"][target]["program_sha256"]
    assert (out / "data" / "train.npz").is_file() and (out / "run" / "model.pt").is_file()
    report = (out / "report.md").read_text()
    markdown_tables(report, check=True)
    assert "not hardware time" in report and "int8 bit-exact: the device's int8 outputs equal" in report
    trained = summary["training"]["machine"]           # the run's training names its machine
    assert f"Trained on {trained['cpu']}, torch {trained['torch']} with its {trained['torch_cpu_capability']}" in report
    # each accuracy with its count and interval; the benchmark split rendered beside the others
    images = summary["eval"]["images"]
    assert f"/{images}, 95 % CI " in report and summary["eval"]["programs"]["eager"]["images"] == images
    assert (out / "data" / "benchmark.npz").is_file() and summary["data"]["splits"]["benchmark"]["images"] == 150
    assert summary["arch"]["name"] == "tinyrps" and summary["arch"]["spec"] == "c16-c32-p-c64-p-f128"
    for image in ("preview.png", "curves.png", "confusion.png", "latency.png", "npu_layers.png"):
        assert image in report
        assert list(out.rglob(image))
    for target in ("cortex-m55", "cortex-m33", "cortex-m4"):       # each on its own board, the whole test split
        assert summary["eval"]["programs"][target]["bit_exact"] is True, summary["eval"]["programs"][target]
    for board in ("mps3-an547", "mps2-an505", "mps2-an386"):
        assert board in report
    assert "not cycles" in report
    for target in ("ethos-u55-128", "ethos-u85-128"):       # the CPU part on the M55 and the NPU part, one table
        assert f"#### {target}: per layer, the CPU part on mps3-an547 (cortex-m55) and the NPU part on {target}" \
            in report
    assert "Vela's estimates, not measured" in report
    assert len(summary["game"]) >= 3
    assert {g["outcome"] for g in summary["game"]} <= {"win", "lose", "tie"}


def test_all_again_reuses_every_stage_that_is_current(main_job, cli):
    """Nothing changed: the second job takes every stage's result as it is (the game is replayed)."""
    before = {p: p.read_bytes() for p in (main_job / "run").rglob("*") if p.is_file() and p.name != "bench.json"}
    res = cli("all", "--out", main_job, *ALL, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    summary = json.loads((main_job / "summary.json").read_text())
    assert summary["reused"] == ["data", "train", "export", "measure", "eval", "bench"]
    after = {p: p.read_bytes() for p in before}
    assert after == before


def stop_while_exporting(out: Path, target: str, signum) -> subprocess.CompletedProcess:
    """Start the main job and send `signum` to its process group (as Ctrl-C in a terminal does, or a
    power loss) once it is exporting `target` (its scratch folder is there)."""
    proc = subprocess.Popen([sys.executable, "-m", "tinyrps", "all", "--out", str(out), *ALL],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 600
    while not list((out / "run" / "export").glob(f".{target}.export-*")):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)
    time.sleep(0.5)                      # inside the build, not at its first file
    os.killpg(proc.pid, signum)
    stdout, stderr = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def hidden(folder: Path) -> list:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob(".*"))


def test_all_after_an_interruption_redoes_exactly_what_is_stale(main_job, cli):
    """A program gone and a damaged eval.json; then the main job stopped while it exports that
    program again, by Ctrl-C and then by a kill. Ctrl-C leaves nothing behind; the kill leaves a
    scratch folder and a lock, which the next job removes. That job exports the program again
    (the same bytes: the export is deterministic, so its measurement and the benchmark still
    hold) and makes the evaluation again; the data and the checkpoint stay."""
    (main_job / "run" / "export" / "cortex-m4.pte").unlink()
    (main_job / "run" / "eval.json").write_text('{"checkpoint_sha256": ')
    checkpoint = (main_job / "run" / "model.pt").read_bytes()
    hidden_before = hidden(main_job.parent)
    stopped = stop_while_exporting(main_job, "cortex-m4", signal.SIGINT)
    assert stopped.returncode == 130 and stopped.stderr.strip().splitlines()[-1] == "tinyrps: interrupted", \
        stopped.stderr[-3000:]
    assert hidden(main_job.parent) == hidden_before and not (main_job / "run" / "export" / "cortex-m4.pte").exists()
    killed = stop_while_exporting(main_job, "cortex-m4", signal.SIGKILL)
    assert killed.returncode == -signal.SIGKILL
    assert hidden(main_job.parent) != hidden_before          # what a kill leaves: the scratch folder, the lock
    res = cli("all", "--out", main_job, "--per-class", "300", "--epochs", "1", timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    assert hidden(main_job.parent) == hidden_before
    summary = json.loads((main_job / "summary.json").read_text())
    assert summary["reused"] == ["data", "train", "measure", "bench"]
    exported = [line.split(":")[0].strip() for line in res.stderr.splitlines() if " bytes in " in line]
    assert exported == ["cortex-m4"]
    assert (main_job / "run" / "model.pt").read_bytes() == checkpoint
    assert summary["eval"]["programs"]["cortex-m4"]["bit_exact"] is True


def test_a_second_job_into_the_same_folder_is_refused(main_job, tmp_path):
    from tinyrps.infra.artifacts.locks import folder_lock
    with folder_lock(main_job):
        res = subprocess.run([sys.executable, "-m", "tinyrps", "all", "--out", str(main_job), *ALL],
                             capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "is being written by tinyrps" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
