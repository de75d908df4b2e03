"""The machinery of whole-folder stages (tinyrps.infra.artifacts): staging and swapping, recovery of
what an interrupted swap left, the lock per output folder, manifests, and a run's record of
its data."""
from __future__ import annotations

import ast
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tinyrps.infra.artifacts import files as single_files, locks, staging
from tinyrps.infra.artifacts.locks import FolderBusy, folder_lock
from tinyrps.infra.artifacts.manifest import check_manifest, read_manifest, write_manifest
from tinyrps.infra.artifacts.records import check_run_data
from tinyrps.infra.artifacts.staging import recover, recover_for_reading, staged_folder
from tinyrps.infra.errors import UserError


def files(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def write_stage(target, kind="data", **contents):
    with staged_folder(target, kind) as stage:
        for name, text in contents.items():
            (stage / name).parent.mkdir(parents=True, exist_ok=True)
            (stage / name).write_text(text)
    return target


class Boom(Exception):
    pass


# ── staging and swapping ─────────────────────────────────────────────────────
def test_a_stage_appears_whole_with_its_manifest_written_last(tmp_path):
    target = write_stage(tmp_path / "out", **{"data.json": "{}", "sub/a.bin": "a"})
    manifest = check_manifest(target, "data")
    assert sorted(manifest["files"]) == ["data.json", "sub/a.bin"]
    assert os.listdir(tmp_path) == ["out"]          # no staged folder, no lock file


def test_a_failed_stage_leaves_the_old_folder_exactly_as_it_was(tmp_path):
    target = write_stage(tmp_path / "out", **{"data.json": "old"})
    before = files(target)
    with pytest.raises(Boom):
        with staged_folder(target, "data") as stage:
            (stage / "data.json").write_text("new")
            raise Boom
    assert files(target) == before and os.listdir(tmp_path) == ["out"]


def test_a_failed_stage_into_a_new_folder_leaves_nothing(tmp_path):
    with pytest.raises(Boom):
        with staged_folder(tmp_path / "a" / "b" / "out", "data") as stage:
            (stage / "data.json").write_text("new")
            raise Boom
    assert os.listdir(tmp_path) == []               # the parents made for it are gone too


def test_files_the_stage_does_not_own_are_carried_over(tmp_path):
    target = write_stage(tmp_path / "run", "run", **{"config.json": "1", "confusion.png": "old plot"})
    (target / "export").mkdir()
    (target / "export" / "t.pte").write_text("program")
    (target / "notes.txt").write_text("mine")
    write_stage(target, "run", **{"config.json": "2"})
    assert files(target) == {"config.json": b"2", "export/t.pte": b"program", "notes.txt": b"mine",
                             "manifest.json": (target / "manifest.json").read_bytes()}
    # the old run's own file that the new one does not write (confusion.png) is not carried over
    assert sorted(read_manifest(target)["files"]) == ["config.json"]


def test_the_swap_without_renameat2_gives_the_same_folder(tmp_path, monkeypatch):
    a = write_stage(tmp_path / "a", **{"data.json": "old", "x": "1"})
    write_stage(a, **{"data.json": "new"})
    monkeypatch.setattr(staging, "exchange", lambda x, y: False)
    b = write_stage(tmp_path / "b", **{"data.json": "old", "x": "1"})
    write_stage(b, **{"data.json": "new"})
    assert files(a) == files(b) and sorted(os.listdir(tmp_path)) == ["a", "b"]


def test_renameat2_swaps_two_folders(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "in-a").touch()
    (tmp_path / "b").mkdir()
    assert staging.exchange(tmp_path / "a", tmp_path / "b")      # ext4, xfs, btrfs, tmpfs all can
    assert os.listdir(tmp_path / "b") == ["in-a"] and os.listdir(tmp_path / "a") == []


def test_a_folder_of_someone_elses_files_is_not_replaced(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.tex").write_text("years of work")
    with pytest.raises(UserError, match=r"is not empty and is not a data set .*thesis.tex"):
        write_stage(tmp_path / "mine", **{"data.json": "{}"})
    assert files(tmp_path / "mine") == {"thesis.tex": b"years of work"}


def test_an_empty_folder_and_an_older_tinyrps_folder_are_replaced(tmp_path):
    (tmp_path / "empty").mkdir()
    write_stage(tmp_path / "empty", **{"data.json": "{}"})
    older = tmp_path / "older"          # what tinyrps wrote before manifests: replaced, its other files kept
    older.mkdir()
    for name in ("train.npz", "data.json", "preview.png", "notes.txt"):
        (older / name).write_text("old")
    write_stage(older, **{"data.json": "new", "train.npz": "new"})
    assert files(older)["data.json"] == b"new" and files(older)["notes.txt"] == b"old"


def test_another_kind_of_folder_is_not_replaced(tmp_path):
    data = write_stage(tmp_path / "data", "data", **{"data.json": "{}"})
    with pytest.raises(UserError, match="holds a data set .made by `tinyrps data`., not a training run"):
        write_stage(data, "run", **{"config.json": "{}"})


def test_a_file_given_as_the_folder_is_refused(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(UserError, match="is a file"):
        write_stage(tmp_path / "f")


# ── recovery ─────────────────────────────────────────────────────────────────
def leftover(target: Path, kind: str, complete: bool, text: str) -> Path:
    folder = target.parent / f".{target.name}.{kind}-1-ab"
    folder.mkdir()
    (folder / "data.json").write_text(text)
    if complete:
        write_manifest(folder, "data")
    return folder


def test_recovery_rolls_forward_to_a_complete_new_folder(tmp_path):
    target = tmp_path / "out"
    leftover(target, "old", True, "old")
    leftover(target, "stage", True, "new")
    with folder_lock(target):
        recover(target)
    assert files(target)["data.json"] == b"new" and os.listdir(tmp_path) == ["out"]


def test_recovery_rolls_back_when_the_new_folder_is_not_complete(tmp_path):
    target = tmp_path / "out"
    leftover(target, "old", True, "old")
    leftover(target, "stage", False, "half")
    with folder_lock(target):
        recover(target)
    assert files(target)["data.json"] == b"old" and os.listdir(tmp_path) == ["out"]


def test_recovery_keeps_an_existing_folder_and_removes_leftovers(tmp_path):
    target = write_stage(tmp_path / "out", **{"data.json": "current"})
    leftover(target, "stage", True, "finished but never swapped in")
    leftover(target, "old", False, "half removed")
    with folder_lock(target):
        recover(target)
    assert files(target)["data.json"] == b"current" and os.listdir(tmp_path) == ["out"]


def test_a_reader_puts_back_a_folder_an_interrupted_swap_left_aside(tmp_path):
    target = tmp_path / "out"
    leftover(target, "old", True, "old")
    recover_for_reading(target)
    assert files(target)["data.json"] == b"old"
    assert os.listdir(tmp_path) == ["out"]


# ── the lock ─────────────────────────────────────────────────────────────────
HOLD = textwrap.dedent("""
    import sys, time
    from tinyrps.infra.artifacts.locks import folder_lock
    with folder_lock(sys.argv[1]):
        print("locked", flush=True)
        time.sleep(60)
""")


def test_a_second_writer_is_refused_with_the_holders_pid_and_time(tmp_path):
    target = tmp_path / "out"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(target)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "locked\n"
        with pytest.raises(FolderBusy) as e:
            write_stage(target, **{"data.json": "{}"})
        assert re.fullmatch(rf"{re.escape(str(target))} is being written by tinyrps \(pid {holder.pid}\) since "
                            r"\d\d:\d\d; wait or choose another folder", str(e.value)), str(e.value)
        with pytest.raises(FolderBusy):       # a reader that would have to recover waits for the writer too
            leftover(target, "old", True, "old")
            recover_for_reading(target)
    finally:
        holder.kill()
        holder.wait()
    write_stage(target, **{"data.json": "{}"})          # the dead holder's lock is taken over
    assert os.listdir(tmp_path) == ["out"]


def test_a_lock_file_left_by_a_killed_process_is_taken_over(tmp_path):
    target = tmp_path / "out"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(target)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline() == "locked\n"
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    assert json.loads((tmp_path / ".out.lock").read_text())["pid"] == holder.pid     # left behind
    write_stage(target, **{"data.json": "{}"})
    assert os.listdir(tmp_path) == ["out"]


def test_the_lock_is_reentrant_within_a_process(tmp_path):
    with folder_lock(tmp_path / "out"):
        with folder_lock(tmp_path / "out"):
            write_stage(tmp_path / "out", **{"data.json": "{}"})
        assert (tmp_path / ".out.lock").exists()
    assert os.listdir(tmp_path) == ["out"]


def test_interrupts_are_held_until_the_block_ends():
    done = []
    with pytest.raises(KeyboardInterrupt):
        with locks.interrupts_deferred():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
            done.append("the block ran to its end")
    assert done == ["the block ran to its end"]


# ── manifests ────────────────────────────────────────────────────────────────
def test_a_changed_or_missing_file_does_not_match_the_manifest(tmp_path):
    target = write_stage(tmp_path / "out", **{"data.json": "{}", "a": "1"})
    (target / "a").write_text("2")
    with pytest.raises(UserError, match=r"out/a is not the file .*manifest.json records"):
        check_manifest(target)
    (target / "a").unlink()
    with pytest.raises(UserError, match="is not the file"):
        check_manifest(target)


@pytest.mark.parametrize("content", [b"", b"{", b"[]", b'{"format": 1, "kind": "data"}'])
def test_a_corrupt_manifest_is_one_line(tmp_path, content):
    target = write_stage(tmp_path / "out", **{"data.json": "{}"})
    (target / "manifest.json").write_bytes(content)
    with pytest.raises(UserError) as e:
        read_manifest(target)
    assert "manifest.json is corrupt" in str(e.value) and "\n" not in str(e.value)


def test_artifacts_imports_only_the_standard_library():
    imported = set()
    for path in Path(single_files.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                imported.add("." * node.level + (node.module or "") if node.level else node.module.split(".")[0])
    assert imported - set(sys.stdlib_module_names) - {"__future__"} == \
        {"..errors", ".files", ".locks", ".manifest", ".staging"}
    out = subprocess.run([sys.executable, "-c", "import sys, tinyrps.infra.artifacts; "
                          "print(sorted(m for m in ('numpy', 'torch', 'PIL', 'matplotlib') if m in sys.modules))"],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# ── a run's record of its data ───────────────────────────────────────────────
def test_a_run_records_the_data_it_was_trained_on(trained_run, data_dir):
    config = json.loads((trained_run / "config.json").read_text())
    info = json.loads((data_dir / "data.json").read_text())
    assert config["data_identity"]["splits"] == {name: s["sha256"] for name, s in info["splits"].items()}
    assert config["data_identity"]["data_json_sha256"] == single_files.sha256_file(data_dir / "data.json")
    assert config["checkpoint_sha256"] == single_files.sha256_file(trained_run / "model.pt")
    assert check_run_data(trained_run) == Path(config["data"])
    metrics = json.loads((trained_run / "metrics.json").read_text())
    assert metrics["data"] == config["data_identity"]


def test_a_run_whose_data_was_made_again_is_refused(trained_run, tmp_path):
    from tinyrps.data import make_data
    run, data = tmp_path / "run", tmp_path / "data"
    config = json.loads((trained_run / "config.json").read_text())
    identity = config["data_identity"]
    make_data(data, seed=identity["seed"] + 1, per_class=4, quiet=True)
    run.mkdir()
    for name in ("model.pt", "config.json"):
        (run / name).write_bytes((trained_run / name).read_bytes())
    config["data"] = str(data)
    (run / "config.json").write_text(json.dumps(config))
    with pytest.raises(UserError) as e:
        check_run_data(run, splits=["test"])
    assert str(e.value) == (f"the test split in {data} is not the one {run} was trained with (the data was made again "
                            f"since): make it again with `tinyrps data --out {data} --seed {identity['seed']} "
                            f"--per-class {identity['per_class']}`, or train again")
    import shutil
    shutil.rmtree(data)
    with pytest.raises(UserError, match="is gone from"):
        check_run_data(run)


def test_the_same_seed_makes_the_same_data_again(tmp_path):
    """What check_run_data's advice relies on: `tinyrps data` with the recorded seed and size
    gives the same bytes, so a run's record of its data holds again."""
    from tinyrps.data import make_data
    a = make_data(tmp_path / "a", seed=5, per_class=4, quiet=True)
    b = make_data(tmp_path / "b", seed=5, per_class=4, quiet=True)
    assert a["splits"] == b["splits"] and files(tmp_path / "a") == files(tmp_path / "b")


def test_a_folder_whose_parent_is_not_writable_is_refused_in_one_line(tmp_path, monkeypatch):
    """The lock and the new folder sit beside the target, so its parent must be writable. (Faked with a
    failing os.open: as root, which the tests may run as, no folder is unwritable.)"""
    (tmp_path / "out").mkdir()
    real_open = os.open

    def refusing_open(path, *args, **kwargs):
        if str(path).endswith(".out.lock"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)
    monkeypatch.setattr(os, "open", refusing_open)
    with pytest.raises(UserError, match=f"{tmp_path} is not writable"):
        write_stage(tmp_path / "out", **{"data.json": "{}"})
    assert os.listdir(tmp_path) == ["out"]


def test_a_reader_inside_a_stage_of_the_same_folder_leaves_the_stage_alone(tmp_path):
    """A stage under way is not a leftover, even for a reader in the same process (which holds the lock)."""
    target = tmp_path / "out"
    with staged_folder(target, "data") as stage:
        (stage / "data.json").write_text("{}")
        recover_for_reading(target)
        with folder_lock(target):
            recover(target)
        assert stage.is_dir()
    assert files(target)["data.json"] == b"{}"


def test_a_users_hidden_files_are_carried_over_but_not_a_stages_leftovers(tmp_path):
    target = write_stage(tmp_path / "run", "run", **{"config.json": "1"})
    (target / ".git.lock").write_text("a user's file")
    (target / ".export.lock").write_text(json.dumps({"pid": 1, "since": 0.0}))
    (target / ".export.stage-12-0123abcd").mkdir()
    write_stage(target, "run", **{"config.json": "2"})
    assert sorted(os.listdir(target)) == [".git.lock", "config.json", "manifest.json"]
