"""The session fixtures' cache (tests/fixture_cache.py): keys follow the sources, tests get
copies, and a stored folder changed behind the cache's back is built again."""
from __future__ import annotations

import shutil

import pytest

import fixture_cache


def test_a_fixture_depends_on_the_modules_its_code_imports():
    files = {p.relative_to(fixture_cache.PACKAGE).as_posix() for p in fixture_cache.module_closure(["tinyrps.train"])}
    # train imports data, model, the atomic writes of artifacts.py, torch_settings, progress and, inside a
    # function, plots; not the export driver
    assert {"__init__.py", "train.py", "data.py", "network/model.py", "infra/torch_settings.py", "infra/progress.py",
            "interfaces/plots.py", "infra/artifacts/files.py", "infra/artifacts/records.py", "infra/errors.py"} <= files
    assert "interfaces/cli/__init__.py" not in files and "interfaces/game.py" not in files and \
        "export/__init__.py" not in files


@pytest.fixture
def package_copy(tmp_path, monkeypatch):
    """fixture_cache working on a copy of the repository's package, which the test may edit."""
    repo = tmp_path / "repo"
    shutil.copytree(fixture_cache.PACKAGE, repo / "src" / "tinyrps", ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(fixture_cache, "REPO", repo)
    monkeypatch.setattr(fixture_cache, "PACKAGE", repo / "src" / "tinyrps")
    return repo / "src" / "tinyrps"


def test_a_changed_source_gives_a_new_key(package_copy):
    key = fixture_cache.fixture_key("run", 2, modules=["tinyrps.train"])
    assert fixture_cache.fixture_key("run", 2, modules=["tinyrps.train"]) == key
    assert fixture_cache.fixture_key("run", 3, modules=["tinyrps.train"]) != key      # a parameter
    game = package_copy / "interfaces" / "game.py"
    game.write_text(game.read_text() + "\n# edited\n")                              # not a dependency
    assert fixture_cache.fixture_key("run", 2, modules=["tinyrps.train"]) == key
    model = package_copy / "network" / "model.py"
    model.write_text(model.read_text() + "\n# edited\n")                            # a dependency
    assert fixture_cache.fixture_key("run", 2, modules=["tinyrps.train"]) != key


def test_a_changed_source_file_gives_a_new_key(tmp_path):
    kernel = tmp_path / "firmware" / "kernel.c"
    kernel.parent.mkdir()
    kernel.write_text("int f(void) { return 1; }\n")
    key = fixture_cache.fixture_key("export", files=[kernel])
    kernel.write_text("int f(void) { return 2; }\n")
    assert fixture_cache.fixture_key("export", files=[kernel]) != key


def test_sessions_get_copies_and_a_tampered_store_is_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    builds = []

    def build(out):
        builds.append(out)
        (out / "result.txt").write_text("built")

    first = fixture_cache.cached_folder("thing", "k1", build, tmp_path / "a")
    second = fixture_cache.cached_folder("thing", "k1", build, tmp_path / "b")
    assert len(builds) == 1 and (second / "result.txt").read_text() == "built"
    (second / "result.txt").write_text("changed by a test")          # a copy: the store is untouched
    assert (fixture_cache.cached_folder("thing", "k1", build, tmp_path / "c") / "result.txt").read_text() == "built"
    assert len(builds) == 1

    stored = fixture_cache.cache_root() / "thing-k1" / "result.txt"
    assert not stored.stat().st_mode & 0o222, "stored files are read-only"
    stored.chmod(0o644)
    stored.write_text("changed in the store")
    again = fixture_cache.cached_folder("thing", "k1", build, tmp_path / "d")
    assert len(builds) == 2 and (again / "result.txt").read_text() == "built"
    assert first != second
