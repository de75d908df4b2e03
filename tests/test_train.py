import json

import pytest
import torch

from tinyrps.train import TrainConfig, train

EPOCHS = 8    # the session run's (tests/conftest.py)
TINY = "c8s2-c8s2-f16"     # a network that trains in a fraction of a second, where the architecture does not matter


def test_run_writes_checkpoint_metrics_and_plots(trained_run):
    state = torch.load(trained_run / "model.pt", weights_only=True)
    assert set(k.split(".")[0] for k in state) == {"body", "head"}
    metrics = json.loads((trained_run / "metrics.json").read_text())
    assert len(metrics["epochs"]) == EPOCHS and metrics["test_accuracy"] > 0.8
    # what decides the bits besides the seed: this machine's CPU and torch's kernels for it
    from tinyrps.infra.machine import cpu_model
    from tinyrps.infra.torch_settings import TRAINING_THREADS
    assert metrics["machine"] == {"cpu": cpu_model(), "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
                                  "torch": torch.__version__, "threads": TRAINING_THREADS}
    assert metrics["machine"]["cpu"] and metrics["machine"]["torch_cpu_capability"]
    for name in ("curves.png", "confusion.png", "config.json"):
        assert (trained_run / name).stat().st_size > 0
    assert not list(trained_run.glob("*.tmp*")) and not list(trained_run.glob(".*tmp"))


def test_the_last_epochs_weights_are_kept(trained_run, data_dir):
    """model.pt holds the last epoch's weights (arch.CHECKPOINT_RULE), recorded in the run's config:
    its validation loss is the last epoch's, not that of the epoch with the best accuracy."""
    from tinyrps.data import load_split
    from tinyrps.network.model import load_model
    from tinyrps.train import evaluate_split
    config = json.loads((trained_run / "config.json").read_text())
    assert config["checkpoint_rule"] == "last-epoch"
    epochs = json.loads((trained_run / "metrics.json").read_text())["epochs"]
    loss, accuracy, _ = evaluate_split(load_model(trained_run / "model.pt"), *load_split(data_dir, "val"))
    gaps = [abs(loss - e["val_loss"]) for e in epochs]
    assert gaps.index(min(gaps)) == len(epochs) - 1 and gaps[-1] < 1e-5 * loss, gaps
    assert accuracy == epochs[-1]["val_accuracy"]


@pytest.mark.slow     # trains twice
def test_same_seed_same_model(tmp_path, data_dir):
    a = train(TrainConfig(data=str(data_dir), epochs=1, seed=3), tmp_path / "a", quiet=True)
    b = train(TrainConfig(data=str(data_dir), epochs=1, seed=3), tmp_path / "b", quiet=True)
    assert (tmp_path / "a" / "model.pt").read_bytes() == (tmp_path / "b" / "model.pt").read_bytes()
    assert a["epochs"] == b["epochs"]


def test_training_leaves_torch_settings_as_it_found_them(tmp_path, data_dir):
    """Training sets a seed, deterministic algorithms and its thread count for itself only:
    whatever runs after it in the same process (the rest of `tinyrps all`) sees torch as before."""
    threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(1)                     # not the count training uses
    torch.use_deterministic_algorithms(False)
    try:
        generator_state = torch.random.get_rng_state()
        # a tiny network: what training sets and restores does not depend on the architecture
        train(TrainConfig(data=str(data_dir), epochs=1, seed=5, arch=TINY), tmp_path / "run", quiet=True)
        assert not torch.are_deterministic_algorithms_enabled()
        assert torch.get_num_threads() == 1
        assert torch.equal(torch.random.get_rng_state(), generator_state)
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic)


@pytest.fixture(scope="module")
def distilled(tmp_path_factory, data_dir, trained_run):
    """One epoch of a tiny student on the small data, plain and taught by the session's default-network run."""
    out = tmp_path_factory.mktemp("distill")
    plain = train(TrainConfig(data=str(data_dir), epochs=1, seed=0, arch=TINY), out / "plain", quiet=True)
    taught = train(TrainConfig(data=str(data_dir), epochs=1, seed=0, arch=TINY, teacher=str(trained_run)),
                   out / "taught", quiet=True)
    return out, plain, taught


def test_distillation_is_recorded_and_changes_the_model(distilled, trained_run):
    from tinyrps.network.arch import DISTILL_ALPHA, DISTILL_TEMPERATURE
    out, plain, taught = distilled
    teacher_sha = json.loads((trained_run / "config.json").read_text())["checkpoint_sha256"]
    config = json.loads((out / "taught" / "config.json").read_text())
    assert config["teacher"] == str(trained_run.resolve()) and config["teacher_checkpoint_sha256"] == teacher_sha
    assert (config["distill_alpha"], config["distill_temperature"]) == (DISTILL_ALPHA, DISTILL_TEMPERATURE)
    assert taught["teacher"] == {"run": str(trained_run.resolve()), "arch": "tinyrps", "checkpoint_sha256": teacher_sha,
                                 "alpha": DISTILL_ALPHA, "temperature": DISTILL_TEMPERATURE}
    assert taught["config"]["teacher"] == config["teacher"]
    # a plain run names no teacher, and the two trainings differ only by the loss
    plain_config = json.loads((out / "plain" / "config.json").read_text())
    assert plain_config["teacher"] is None and "teacher_checkpoint_sha256" not in plain_config and "teacher" not in plain
    assert (out / "taught" / "model.pt").read_bytes() != (out / "plain" / "model.pt").read_bytes()
    assert taught["epochs"][0]["train_loss"] != plain["epochs"][0]["train_loss"]


def test_distillation_is_deterministic(distilled, data_dir, trained_run, tmp_path):
    out, _, taught = distilled
    again = train(TrainConfig(data=str(data_dir), epochs=1, seed=0, arch=TINY, teacher=str(trained_run)),
                  tmp_path / "again", quiet=True)
    assert (tmp_path / "again" / "model.pt").read_bytes() == (out / "taught" / "model.pt").read_bytes()
    assert again["epochs"] == taught["epochs"]


def test_the_loss_is_the_weighted_sum_of_cross_entropy_and_scaled_kl():
    from torch import nn

    from tinyrps.train import distillation_loss
    student = torch.tensor([[2.0, -1.0, 0.5], [0.0, 1.0, -2.0]])
    teacher = torch.tensor([[3.0, 0.0, -1.0], [-1.0, 2.5, 0.0]])
    labels = torch.tensor([0, 1])
    a, t = 0.7, 4.0
    p_teacher = torch.softmax(teacher / t, 1)
    kl = (p_teacher * (p_teacher.log() - torch.log_softmax(student / t, 1))).sum(1).mean()
    expected = (1 - a) * nn.functional.cross_entropy(student, labels) + a * t * t * kl
    assert torch.allclose(distillation_loss(student, labels, teacher, a, t), expected)
    assert torch.allclose(distillation_loss(student, labels, teacher, 0.0, t), nn.functional.cross_entropy(student,
                                                                                                           labels))


def test_a_bad_teacher_is_one_line_before_training(cli, data_dir, trained_run, tmp_path):
    from tinyrps.data import make_data
    other_data = tmp_path / "other-data"
    make_data(other_data, seed=1, per_class=10, quiet=True)
    train(TrainConfig(data=str(other_data), epochs=1, seed=0, arch=TINY), tmp_path / "other-run",
          quiet=True)
    cases = ((tmp_path / "missing", "is not a folder"), (data_dir, "not a training run"),
             (tmp_path / "other-run", "trained on other data"))
    for teacher, words in cases:
        out = tmp_path / "student"
        res = cli("train", "--data", data_dir, "--out", out, "--epochs", "1", "--teacher", teacher)
        assert res.returncode == 2 and words in res.stderr and "--teacher" in res.stderr, res.stderr
        assert len(res.stderr.strip().splitlines()) == 1, res.stderr
        assert not out.exists()      # refused before a run folder was made
    res = cli("train", "--data", data_dir, "--out", tmp_path / "student", "--distill-alpha", "0.5")
    assert res.returncode == 2 and "--teacher" in res.stderr and not (tmp_path / "student").exists()
    res = cli("train", "--data", data_dir, "--out", tmp_path / "same", "--teacher", tmp_path / "same")
    assert res.returncode == 2 and "the run being trained" in res.stderr
