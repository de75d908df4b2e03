import json

import pytest
import torch

from tinyrps.train import TrainConfig, train

EPOCHS = 8    # the session run's (tests/conftest.py)


def test_run_writes_checkpoint_metrics_and_plots(trained_run):
    state = torch.load(trained_run / "model.pt", weights_only=True)
    assert set(k.split(".")[0] for k in state) == {"body", "head"}
    metrics = json.loads((trained_run / "metrics.json").read_text())
    assert len(metrics["epochs"]) == EPOCHS and metrics["test_accuracy"] > 0.8
    for name in ("curves.png", "confusion.png", "config.json"):
        assert (trained_run / name).stat().st_size > 0
    assert not list(trained_run.glob("*.tmp*")) and not list(trained_run.glob(".*tmp"))


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
        train(TrainConfig(data=str(data_dir), epochs=1, seed=5), tmp_path / "run", quiet=True)
        assert not torch.are_deterministic_algorithms_enabled()
        assert torch.get_num_threads() == 1
        assert torch.equal(torch.random.get_rng_state(), generator_state)
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic)
