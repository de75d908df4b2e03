"""The package as a user installs it: a wheel, outside any checkout.

The wheel is built from a copy of the checkout's packaging files (so the test leaves no
build folders in the tree), installed with --no-deps into a folder that is not a checkout,
and run from yet another working directory with this interpreter's dependencies. It must
build the firmware from the sources it carries into the user's cache -- never into the
installed package -- and run the `native` and `mcu` devices."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from PIL import Image

REPO = Path(__file__).resolve().parents[1]
PACKAGING = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "src", "firmware")

pytestmark = pytest.mark.slow     # builds a wheel, and the firmware in a fresh cache


def build_outputs(folder, names) -> list:
    """What a build left in a checkout (caches, build folders, egg-info): not sources."""
    return [n for n in names if n == "__pycache__" or n.endswith(".egg-info") or
            (n.startswith("build") and Path(folder, n).is_dir())]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    tree = tmp_path_factory.mktemp("checkout-copy")
    for name in PACKAGING:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, tree / name, ignore=build_outputs)
        else:
            shutil.copy2(source, tree / name)
    dist = tmp_path_factory.mktemp("dist")
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                             "--quiet", "--wheel-dir", str(dist), f"{tree}/"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    (wheel,) = dist.glob("tinyrps-*.whl")
    return wheel


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("site")
    result = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--quiet",
                             "--target", str(target), str(wheel)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    return target


def files_under(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.stat().st_size for p in folder.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


def run_installed(installed: Path, cwd: Path, *args, cache: Path = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(installed)}
    if cache is not None:
        env["XDG_CACHE_HOME"] = str(cache)
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=900)


def test_the_wheel_carries_the_firmware_sources(wheel):
    from tinyrps.firmware import firmware_dir
    from tinyrps.firmware.sources import source_files
    names = set(zipfile.ZipFile(wheel).namelist())
    checkout = {f"tinyrps/firmware/sources/{p.relative_to(firmware_dir())}" for p in source_files(firmware_dir())}
    assert "tinyrps/firmware/sources/CMakeLists.txt" in checkout
    assert {n for n in names if n.startswith("tinyrps/firmware/sources/")} == checkout


def test_the_wheel_carries_the_page_of_serve(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    web = REPO / "src" / "tinyrps" / "web"
    assert {f"tinyrps/web/{p.name}" for p in web.iterdir() if p.is_file()} <= names
    assert {"tinyrps/web/index.html", "tinyrps/web/app.js", "tinyrps/web/style.css"} <= names


def test_the_wheel_carries_the_templates_of_deploy_library(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    templates = REPO / "src" / "tinyrps" / "deploy" / "templates"
    assert {f"tinyrps/deploy/templates/{p.name}" for p in templates.iterdir()} <= names
    assert "tinyrps/deploy/templates/operator_selection.h" in names


def test_installed_package_runs_the_firmware_devices_from_anywhere(installed, exported, tmp_path):
    elsewhere, cache = tmp_path / "elsewhere", tmp_path / "cache"
    elsewhere.mkdir()
    where = run_installed(installed, elsewhere, "-c", "import tinyrps.firmware as f; print(f.firmware_dir())")
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()) == installed / "tinyrps" / "firmware" / "sources"

    from tinyrps.data import make_split
    image = tmp_path / "letter.png"
    Image.fromarray(make_split("test", 1, seed=5)[0][0]).save(image)
    before = files_under(installed)
    results = {}
    for device, device_cache in (("native", cache), ("mcu", None)):   # native builds in a cache of its own
        res = run_installed(installed, elsewhere, "-m", "tinyrps", "classify", "--model", exported("cortex-m55"),
                            "--device", device, image, "--json", cache=device_cache)
        assert res.returncode == 0, res.stderr[-3000:]
        results[device] = json.loads(res.stdout)["results"][0]
    assert results["native"]["probabilities"] == results["mcu"]["probabilities"]
    assert list((cache / "tinyrps" / "firmware").glob("native-*/**/tinyrps-native")), "not built in the user's cache"
    assert files_under(installed) == before, "the run wrote into the installed package"
    assert not list(elsewhere.iterdir()), "the run wrote into the working directory"
