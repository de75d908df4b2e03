"""Every file a stage reads, broken in every way the stage could meet it: one line on stderr that
names the file, says what is wrong with it and what to do; exit code 2; no traceback.

Each file is checked in one place: a split by tinyrps.data.load_split, a data set's record by
tinyrps.infra.artifacts.records.data_info, a run's config.json by tinyrps.infra.artifacts.records.run_config, a checkpoint
by tinyrps.network.model.load_model. A file changed after tinyrps wrote it does not match the checksum
recorded for it (data.json, config.json, the manifest): that is the first thing said. To
reach the checks of the contents, most cases here also record the broken file's checksum,
as a hand-made or buggy folder would.
"""
from __future__ import annotations

import hashlib
import io
import json
import shutil

import numpy as np
import pytest
import torch

from tinyrps.infra.artifacts.manifest import refresh_manifest
from tinyrps.infra.artifacts.files import sha256_file

BAD_LINE = "tinyrps: error: "


@pytest.fixture
def main(capsys):
    """tinyrps.interfaces.cli.main in this process: (exit code, stderr)."""
    from tinyrps.interfaces.cli import main as cli_main

    def run(*args):
        code = cli_main([str(a) for a in args])
        return code, capsys.readouterr().err
    return run


def assert_one_line(result, *needles):
    code, err = result
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith(BAD_LINE) and "Traceback" not in err, err
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def npz(**arrays) -> bytes:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    return buffer.getvalue()


def good_arrays(n=6):
    images = np.zeros((n, 28, 28), np.uint8)
    labels = np.arange(n, dtype=np.int64) % 3
    return images, labels


def npy(array) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


# What a split file may hold, and what the one line must say about it.
BROKEN_SPLITS = {
    "truncated": (lambda good: good[: len(good) // 2], "is not a readable .npz archive"),
    "garbage": (lambda good: bytes(range(256)) * 40, "is not a readable .npz archive"),
    "empty": (lambda good: b"", "is empty"),
    "a single array": (lambda good: npy(good_arrays()[0]), "is a single array"),
    "pickled objects": (lambda good: npz(images=np.array([{"a": 1}], dtype=object), labels=np.zeros(1, np.int64)),
                        "is not a readable .npz archive"),
    "no labels": (lambda good: npz(images=good_arrays()[0]), "has no 'labels' array"),
    "float images": (lambda good: npz(images=good_arrays()[0].astype(np.float32), labels=good_arrays()[1]),
                     "holds images of float32"),
    "32x32 images": (lambda good: npz(images=np.zeros((6, 32, 32), np.uint8), labels=good_arrays()[1]),
                     "not uint8 [N,28,28]"),
    "float labels": (lambda good: npz(images=good_arrays()[0], labels=good_arrays()[1].astype(np.float32)),
                     "holds labels of float32"),
    "2-D labels": (lambda good: npz(images=good_arrays()[0], labels=good_arrays()[1].reshape(2, 3)),
                   "not integers [N]"),
    "label 3": (lambda good: npz(images=good_arrays()[0], labels=np.array([0, 1, 2, 3, 0, 1])), "has label 3"),
    "label -1": (lambda good: npz(images=good_arrays()[0], labels=np.array([0, 1, 2, -1, 0, 1])), "has label -1"),
    "no images": (lambda good: npz(images=np.zeros((0, 28, 28), np.uint8), labels=np.zeros(0, np.int64)),
                  "holds no images"),
    "lengths differ": (lambda good: npz(images=good_arrays(6)[0], labels=good_arrays(5)[1]),
                       "holds 6 images but 5 labels"),
}


@pytest.fixture(scope="module")
def small_data(tmp_path_factory):
    from tinyrps.data import make_data
    folder = tmp_path_factory.mktemp("small") / "data"
    make_data(folder, seed=0, per_class=4, quiet=True)
    return folder


def broken_data(small_data, tmp_path, split: str, content: bytes, record: bool = True):
    """A copy of the small data set whose `split` holds `content`; with `record`, data.json (and
    the manifest) record its checksum, as a folder made by hand or by a bug would."""
    folder = tmp_path / "data"
    shutil.copytree(small_data, folder)
    (folder / f"{split}.npz").write_bytes(content)
    if record:
        info = json.loads((folder / "data.json").read_text())
        info["splits"][split]["sha256"] = hashlib.sha256(content).hexdigest()
        (folder / "data.json").write_text(json.dumps(info))
        refresh_manifest(folder)
    return folder


# ── splits: train and eval ───────────────────────────────────────────────────
@pytest.mark.parametrize("case", BROKEN_SPLITS)
def test_train_refuses_a_broken_train_split(main, small_data, tmp_path, case):
    make, words = BROKEN_SPLITS[case]
    data = broken_data(small_data, tmp_path, "train", make((small_data / "train.npz").read_bytes()))
    line = assert_one_line(main("train", "--data", data, "--out", tmp_path / "run", "--epochs", "1", "--quiet"),
                           str(data / "train.npz"), words, "tinyrps data --out")
    assert "\n" not in line
    assert not (tmp_path / "run").exists() and sorted(p.name for p in tmp_path.iterdir()) == ["data"]


@pytest.mark.parametrize("case", BROKEN_SPLITS)
def test_eval_refuses_a_broken_test_split(main, small_data, trained_run, tmp_path, case):
    """Labels out of range or an empty split were 0.00 % and exit 0: now they are refused."""
    make, words = BROKEN_SPLITS[case]
    data = broken_data(small_data, tmp_path, "test", make((small_data / "test.npz").read_bytes()))
    assert_one_line(main("eval", "--run", trained_run, "--data", data, "--program", "eager", "--quiet"),
                    str(data / "test.npz"), words)


def test_a_split_changed_after_it_was_written_is_refused(main, small_data, tmp_path, trained_run):
    good = (small_data / "train.npz").read_bytes()
    data = broken_data(small_data, tmp_path, "train", good[:-100], record=False)
    assert_one_line(main("train", "--data", data, "--out", tmp_path / "run", "--epochs", "1", "--quiet"),
                    str(data / "train.npz"), f"is not the file {data / 'data.json'} records")
    shutil.copy(small_data / "val.npz", data / "test.npz")          # a split of the same set, in the wrong place
    assert_one_line(main("eval", "--run", trained_run, "--data", data, "--program", "eager", "--quiet"),
                    str(data / "test.npz"), "is not the file")


def test_a_mix_of_two_data_sets_is_refused(main, tmp_path):
    """The finding: new train split beside the old val and test (an interrupted write of old)."""
    from tinyrps.data import make_data
    make_data(tmp_path / "a", seed=0, per_class=4, quiet=True)
    make_data(tmp_path / "b", seed=9, per_class=4, quiet=True)
    shutil.copy(tmp_path / "b" / "train.npz", tmp_path / "a" / "train.npz")
    assert_one_line(main("train", "--data", tmp_path / "a", "--out", tmp_path / "run", "--epochs", "1", "--quiet"),
                    "train.npz is not the file", "data.json records")


# ── data.json ────────────────────────────────────────────────────────────────
BROKEN_DATA_JSON = {
    "invalid JSON": (b"{not json", "is not valid JSON"),
    "empty": (b"", "is empty"),
    "a list": (b"[1, 2]", "holds a JSON list, not an object"),
    "no checksums": (json.dumps({"seed": 0}).encode(), "records no checksum of the splits"),
}


@pytest.mark.parametrize("case", BROKEN_DATA_JSON)
def test_train_refuses_a_broken_data_json(main, small_data, tmp_path, case):
    content, words = BROKEN_DATA_JSON[case]
    data = tmp_path / "data"
    shutil.copytree(small_data, data)
    (data / "data.json").write_bytes(content)
    assert_one_line(main("train", "--data", data, "--out", tmp_path / "run", "--quiet"),
                    "data.json is not the file", "manifest.json records")     # changed since it was written
    refresh_manifest(data)
    assert_one_line(main("train", "--data", data, "--out", tmp_path / "run", "--quiet"), str(data / "data.json"), words)


def test_a_data_folder_without_data_json_is_refused(main, small_data, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(small_data, data)
    for name in ("data.json", "manifest.json"):
        (data / name).unlink()
    assert_one_line(main("train", "--data", data, "--out", tmp_path / "run", "--quiet"), "has no data.json",
                    "tinyrps data --out")


def test_a_run_folder_given_as_data_is_named_as_such(main, trained_run, tmp_path):
    assert_one_line(main("train", "--data", trained_run, "--out", tmp_path / "run", "--quiet"),
                    "holds a training run", "not a data set")


# ── config.json: eval, export, classify ──────────────────────────────────────
BROKEN_CONFIGS = {
    "invalid JSON": (b'{"data": ', "is not valid JSON"),
    "empty": (b"", "is empty"),
    "a list": (b"[]", "holds a JSON list, not an object"),
    "no data": (None, "has no 'data'"),
    "arch a number": ({"arch": 7}, "'arch' is 7, not a str"),
}


def run_copy(trained_run, tmp_path):
    """The training stage's files of the session's run (not the programs other tests export into it)."""
    run = tmp_path / "run"
    run.mkdir()
    for name in [*json.loads((trained_run / "manifest.json").read_text())["files"], "manifest.json"]:
        shutil.copy(trained_run / name, run / name)
    return run


def broken_config(trained_run, tmp_path, case, record=True):
    run = run_copy(trained_run, tmp_path)
    content, _ = BROKEN_CONFIGS[case]
    if content is None or isinstance(content, dict):
        config = json.loads((run / "config.json").read_text())
        config.pop("data") if content is None else config.update(content)
        content = json.dumps(config).encode()
    (run / "config.json").write_bytes(content)
    if record:
        refresh_manifest(run)
    return run


def png(tmp_path):
    from PIL import Image
    path = tmp_path / "r.png"
    Image.new("L", (28, 28), 0).save(path)
    return path


@pytest.mark.parametrize("case", BROKEN_CONFIGS)
def test_eval_export_and_classify_refuse_a_broken_config(main, trained_run, tmp_path, case):
    run = broken_config(trained_run, tmp_path, case)
    words = BROKEN_CONFIGS[case][1]
    config = str(run / "config.json")
    assert_one_line(main("eval", "--run", run, "--program", "eager", "--quiet"), config, words, "tinyrps train")
    assert_one_line(main("export", "--run", run, "--target", "fp32", "--quiet"), config, words, "tinyrps train")
    assert_one_line(main("classify", "--model", run / "model.pt", "--device", "eager", png(tmp_path)), config, words)
    assert not (run / "export").exists()


def test_a_config_changed_after_training_is_refused(main, trained_run, tmp_path):
    run = broken_config(trained_run, tmp_path, "no data", record=False)
    assert_one_line(main("eval", "--run", run, "--program", "eager", "--quiet"),
                    "config.json is not the file", "manifest.json records")


def test_a_config_copied_without_its_manifest_is_checked_by_itself(main, trained_run, tmp_path):
    run = broken_config(trained_run, tmp_path, "a list", record=False)
    (run / "manifest.json").unlink()
    assert_one_line(main("eval", "--run", run, "--program", "eager", "--quiet"), "holds a JSON list")


# ── model.pt: eval, export, classify ─────────────────────────────────────────
def saved(obj) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


class NotWeights:
    pass


BROKEN_CHECKPOINTS = {
    "truncated": (lambda good: good[: len(good) // 3], "is not a PyTorch checkpoint tinyrps can read"),
    "garbage": (lambda good: b"PK\x03\x04" + bytes(range(256)) * 8, "is not a PyTorch checkpoint tinyrps can read"),
    "empty": (lambda good: b"", "is empty"),
    "a list": (lambda good: saved([1, 2, 3]), "holds a list, not a network's weights"),
    "not tensors": (lambda good: saved({"body.0.weight": 1.5}), "holds a dict, not a network's weights"),
    "an object": (lambda good: saved(NotWeights()), "is not a PyTorch checkpoint tinyrps can read"),
    "another network": (lambda good: saved(__import__("tinyrps.network.model").network.model.TinyRPS("fast").state_dict()),
                        "does not hold a 'tinyrps' network (its weights have other names or shapes): check `arch` in"),
}


def broken_checkpoint(trained_run, tmp_path, content: bytes, record=True):
    run = run_copy(trained_run, tmp_path)
    (run / "model.pt").write_bytes(content)
    if record:
        config = json.loads((run / "config.json").read_text())
        config["checkpoint_sha256"] = sha256_file(run / "model.pt")
        (run / "config.json").write_text(json.dumps(config))
        refresh_manifest(run)
    return run


@pytest.mark.parametrize("case", BROKEN_CHECKPOINTS)
def test_eval_export_and_classify_refuse_a_broken_checkpoint(main, trained_run, tmp_path, case):
    make, words = BROKEN_CHECKPOINTS[case]
    run = broken_checkpoint(trained_run, tmp_path, make((trained_run / "model.pt").read_bytes()))
    checkpoint = str(run / "model.pt")
    lines = {assert_one_line(main("eval", "--run", run, "--program", "eager", "--quiet"), checkpoint, words),
             assert_one_line(main("export", "--run", run, "--target", "fp32", "--quiet"), checkpoint, words),
             assert_one_line(main("classify", "--model", run / "model.pt", "--device", "eager", png(tmp_path)),
                             checkpoint, words)}
    assert len(lines) == 1         # the same line from every command
    assert not (run / "export" / "fp32.pte").exists()


def test_a_checkpoint_changed_after_training_is_refused(main, trained_run, tmp_path):
    """The finding: an old model.pt beside a new config.json (or the reverse)."""
    run = broken_checkpoint(trained_run, tmp_path, saved(__import__("tinyrps.network.model").network.model.TinyRPS().state_dict()),
                            record=False)
    assert_one_line(main("eval", "--run", run, "--program", "eager", "--quiet"),
                    str(run / "model.pt"), "is not the checkpoint", "config.json was written with")


# ── resources ────────────────────────────────────────────────────────────────
@pytest.mark.parametrize("command", ["data", "all"])
def test_a_data_set_larger_than_memory_is_refused_before_any_work(main, tmp_path, command):
    out = tmp_path / "out"
    line = assert_one_line(main(command, "--out", out, "--per-class", "1000000000000", "--quiet"),
                           "--per-class 1000000000000 needs about", "of memory", "is available",
                           "use a smaller --per-class")
    assert " PB " in line
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_a_data_set_larger_than_the_free_disk_is_refused_before_any_work(main, tmp_path, monkeypatch):
    import tinyrps.data
    monkeypatch.setattr(tinyrps.data, "free_disk", lambda folder: 5_000_000)
    out = tmp_path / "out"
    assert_one_line(main("data", "--out", out, "--per-class", "3000", "--quiet"),
                    "--per-class 3000 writes up to", "5.0 MB is free there", "free some space")
    assert not out.exists()


def test_the_resource_estimate_covers_what_rendering_takes():
    """The memory the check expects for a split is at least what rendering it takes (tracemalloc)."""
    import tracemalloc

    from tinyrps import data
    from tinyrps.network import letters
    letters.font_glyphs()
    tracemalloc.start()
    try:
        data.make_split("train", 1000, seed=0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    memory, disk = data.needed({"train": 1000, "val": 100, "test": 66})
    assert peak <= memory
    assert 3 * 1000 * data.RENDER_BYTES_PER_IMAGE >= peak - 24 * 2**20     # the per-image share, past a chunk's
