"""Shared fixtures: one small data set, one briefly trained run, programs exported once.

Each is built once and kept across test runs in the user's cache, keyed by the sources
it depends on (tests/fixture_cache.py); every session works on its own copy in a
temporary folder. The model is trained for accuracy enough to make agreement
meaningful, not for the 99.5 % of the default settings (that is the main job's claim).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

# Compiled modules are written beside the sources (in __pycache__, which git ignores) even where
# PYTHONDONTWRITEBYTECODE is set: each test process then reads pytest's rewritten tests and the
# package compiled once, not again per worker and per command the tests start (collecting the
# fast tier takes 2 s a worker with them, 4 s without).
sys.dont_write_bytecode = False
# The suite keeps both cores busy (two workers, each starting commands, emulators and compilers), the
# load under which torch's spinning threads waste most of their time (tinyrps.tune's docstring): they
# wait passively in this process and every command it starts, set before torch loads. The same
# arithmetic, the same bits; a crash test's 208 trainings took 60 s spinning and 27 s passive.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
sys.path.insert(0, str(Path(__file__).resolve().parent))
import fixture_cache  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
PER_CLASS = 400        # 1,200 training images, 120 val, 78 test
EPOCHS = 8             # the letters vary widely (7-26 px, anywhere, both polarities): 2 epochs stay near chance
SEED = 0
FAST_EPOCHS = 16          # the fast network learns the wide letter range more slowly than the default one:
# with the last epoch's weights kept (arch.CHECKPOINT_RULE), 12 epochs on these 1,200 images left it at
# 87 % of the test images and its int8 program agreeing with eager on 75 of 78; 16 epochs: 92 %, 78 of 78


@pytest.fixture(scope="session")
def data_key() -> str:
    return fixture_cache.fixture_key("data", SEED, PER_CLASS, modules=["tinyrps.data"])


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory, data_key) -> Path:
    def build(out: Path) -> None:
        from tinyrps.data import make_data
        make_data(out, seed=SEED, per_class=PER_CLASS, quiet=True)
    return fixture_cache.cached_folder("data", data_key, build, tmp_path_factory.mktemp("data"))


@pytest.fixture(scope="session")
def run_key(data_key) -> str:
    return fixture_cache.fixture_key("run", data_key, EPOCHS, SEED, modules=["tinyrps.train"])


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory, data_dir, run_key) -> Path:
    def build(run: Path) -> None:
        from tinyrps.train import TrainConfig, train
        train(TrainConfig(data=str(data_dir), epochs=EPOCHS, seed=SEED), run, quiet=True)
    run = fixture_cache.cached_folder("run", run_key, build, tmp_path_factory.mktemp("run"))
    point_run_at_data(run, data_dir)
    return run


def point_run_at_data(run: Path, data_dir: Path) -> None:
    """A stored run names the data folder of the session that trained it: name this session's copy
    (the same bytes, so the run's record of its data still holds) and record the change in the
    run's manifest."""
    from tinyrps.infra.artifacts.manifest import refresh_manifest
    config = json.loads((run / "config.json").read_text())
    if config["data"] != str(data_dir):
        config["data"] = str(data_dir)
        (run / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        metrics = json.loads((run / "metrics.json").read_text())
        metrics["config"]["data"] = str(data_dir)
        (run / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
        refresh_manifest(run)


@pytest.fixture(scope="session")
def exported(trained_run, run_key, tmp_path_factory):
    """exported(target) -> Path of RUN/export/target.pte, built once (and kept across runs)."""
    return exporter(trained_run, run_key, "", tmp_path_factory)


def exporter(run: Path, run_key: str, name: str, tmp_path_factory):
    """get(target) -> the run's exported target.pte, from the fixture cache (built there once).

    The export is ahead of time only: its key is the run's and the export's own sources, never the
    firmware's, so a firmware change rebuilds no program."""
    from tinyrps.export import export_target
    key = fixture_cache.fixture_key("export", run_key, modules=fixture_cache.package_modules("tinyrps.export"))
    prefix = f"export-{name}-" if name else "export-"
    cache = {}

    def get(target: str) -> Path:
        if target not in cache:
            def build(out: Path) -> None:
                pte = export_target(run, target)
                for item in (pte.name, pte.with_suffix(".json").name, target):   # program, descriptor, kept files
                    made = pte.parent / item
                    if made.is_dir():
                        shutil.copytree(made, out / item)
                    elif made.is_file():
                        shutil.copy2(made, out / item)
            files = fixture_cache.cached_folder(f"{prefix}{target}", key, build,
                                                tmp_path_factory.mktemp(f"{prefix}{target}"))
            shutil.copytree(files, run / "export", dirs_exist_ok=True)
            cache[target] = run / "export" / f"{target}.pte"
        return cache[target]
    return get


@pytest.fixture(scope="session")
def fast_run_key(data_key) -> str:
    return fixture_cache.fixture_key("fast-run", data_key, FAST_EPOCHS, SEED, modules=["tinyrps.train"])


@pytest.fixture(scope="session")
def fast_run(tmp_path_factory, data_dir, fast_run_key) -> Path:
    """The `fast` architecture on the same data. A network this small learns more slowly from 1,200
    images: it gets more epochs, so that agreement between its programs is measured on a model
    that has learned the task."""
    def build(run: Path) -> None:
        from tinyrps.train import TrainConfig, train
        train(TrainConfig(data=str(data_dir), epochs=FAST_EPOCHS, seed=SEED, arch="fast"), run, quiet=True)
    run = fixture_cache.cached_folder("fast-run", fast_run_key, build, tmp_path_factory.mktemp("fast-run"))
    point_run_at_data(run, data_dir)
    return run


@pytest.fixture(scope="session")
def exported_fast(fast_run, fast_run_key, tmp_path_factory):
    """exported_fast(target) -> Path of the fast run's target.pte, built once (and kept across runs)."""
    return exporter(fast_run, fast_run_key, "fast", tmp_path_factory)


def run_cli(*args, input=None, timeout=300, cwd=None) -> subprocess.CompletedProcess:
    """Run `python -m tinyrps ARGS` as a user would; returns the completed process."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "120"}
    return subprocess.run([sys.executable, "-m", "tinyrps", *map(str, args)], input=input, capture_output=True,
                          text=True, timeout=timeout, cwd=cwd, env=env)


@pytest.fixture(scope="session")
def cli_forked(tmp_path_factory):
    """run_cli's twin: each command a child of one process that imported torch once (tests/cli_fork.py).
    TINYRPS_TEST_CLI=process gives every command its own interpreter instead."""
    if os.environ.get("TINYRPS_TEST_CLI") == "process":
        yield run_cli
        return
    import cli_fork
    server = cli_fork.CliServer(tmp_path_factory.mktemp("cli"), {**os.environ, **cli_fork.CliServer.env_overrides()})
    yield server.run
    server.close()


@pytest.fixture
def cli(cli_forked):
    return cli_forked


@pytest.fixture(scope="session")
def cli_session():
    """`cli` for module- and session-scoped fixtures that run a command once."""
    return run_cli


# ── the Arm firmware (QEMU, cross toolchain) ──────────────────────────────────
def require_arm_tools() -> None:
    """A missing tool fails the test with the command that installs it (never a skip)."""
    from tinyrps.firmware.build import APT_ARM
    missing = [t for t in ("qemu-system-arm", "arm-none-eabi-gcc", "cmake") if shutil.which(t) is None]
    if missing:
        pytest.fail(f"{', '.join(missing)} not installed; the firmware tests need them: {APT_ARM}", pytrace=False)


@pytest.fixture(scope="session")
def cortex_m_pte(exported):
    require_arm_tools()
    return exported("cortex-m55")


@pytest.fixture(scope="session")
def firmware_elf_path():
    require_arm_tools()
    from tinyrps.firmware.qemu import firmware_elf
    return firmware_elf()


@pytest.fixture(scope="session")
def test_images(trained_run):
    """The first 12 images (and labels) of the run's test split."""
    from tinyrps.data import load_split
    from tinyrps.infra.artifacts.records import run_config
    images, labels = load_split(run_config(trained_run)["data"], "test")
    return images[:12], labels[:12]


# ── Markdown ──────────────────────────────────────────────────────────────────
def parse_markdown_tables(text: str, check: bool = False) -> list:
    """Each table as a list of rows, each row the list of its cells ('\\|' stays inside a cell).
    With check, assert that each table renders: a separator row, and as many cells in every
    row as in the header."""
    tables, current = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            current.append([c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
        elif current:
            tables.append(current)
            current = []
    if check:
        assert tables, "no table"
        for header, separator, *rows in tables:
            assert len(separator) == len(header) and all(re.fullmatch(r":?-{3,}:?", c) for c in separator), header
            for row in rows:
                assert len(row) == len(header), (header, row)
    return tables


@pytest.fixture
def markdown_tables():
    return parse_markdown_tables


@pytest.fixture
def descriptor_like():
    """descriptor_like(program, like): give `program` the descriptor of the program `like`, made to
    describe `program`'s bytes (a program of one family dressed as another)."""
    import hashlib

    def write(program: Path, like: Path) -> Path:
        raw = json.loads(like.with_suffix(".json").read_text())
        raw["sha256"] = hashlib.sha256(program.read_bytes()).hexdigest()
        raw["size_bytes"] = program.stat().st_size
        program.with_suffix(".json").write_text(json.dumps(raw))
        return program
    return write


@pytest.fixture(scope="session")
def measured(tmp_path_factory):
    """measured(pte) -> the measure stage's figures of a program (T.measure.json beside it), taken once
    per program and firmware (kept across runs, keyed by the program's bytes and the firmware's sources)."""
    from tinyrps import measure
    from tinyrps.infra.artifacts.files import sha256_file
    from tinyrps.firmware import firmware_dir
    from tinyrps.firmware.sources import source_files
    firmware_key = fixture_cache.fixture_key("firmware", modules=fixture_cache.package_modules("tinyrps.firmware")
                                             + ["tinyrps.measure", "tinyrps.measure.npu_system", "tinyrps.hardware.vela",
                                                "tinyrps.deploy.firmware_image", "tinyrps.deploy.library",
                                                "tinyrps.deploy.selection"],
                                             files=source_files(firmware_dir()))
    done = {}

    def get(pte: Path) -> dict:
        pte = Path(pte)
        if pte not in done:
            require_arm_tools()

            def build(out: Path) -> None:
                measure.measure(pte)
                shutil.copy2(measure.path_of(pte), out / "measure.json")
            # the core (so the board) comes from the descriptor: identical bytes exported for the
            # M33 and the M4 are measured on different boards
            key = fixture_cache.fixture_key("measure", sha256_file(pte), sha256_file(pte.with_suffix(".json")),
                                            firmware_key)
            stored = fixture_cache.cached_folder("measure", key, build, tmp_path_factory.mktemp("measure"))
            shutil.copy2(stored / "measure.json", measure.path_of(pte))
            done[pte] = measure.read(pte)
            assert done[pte] is not None, f"the stored measurement is not of {pte}"
        return done[pte]
    return get


# Fixtures that need the Arm cross toolchain or QEMU: a test that uses one is slow tier, so that
# `make test-fast` runs without an emulator or a cross compiler.
# `libraries` (tests/deploy/test_library.py): `deploy library` measures its program on the board and
# sizes its code with the cross compiler.
EMULATOR_FIXTURES = {"firmware_elf_path", "cortex_m_pte", "measured", "libraries"}


# A test whose every case is also a case of another: run only when the other is not. The stops of a
# stage at 24 changes spread over its run are all among its stops at every change
# (tests/test_crash_consistency.py), with the same checks after each.
COVERED_BY = {
    "test_data_stopped_anywhere_leaves_the_old_data_set_or_the_new_one": "test_data_stopped_at_every_change",
    "test_train_stopped_anywhere_leaves_the_old_run_or_the_new_one": "test_train_stopped_at_every_change",
}


# Run first: the module holding the suite's longest test (the main job stopped again and again, about
# two minutes in one process). Started last, it would leave one worker alone with it at the end.
FIRST = "test_crash_consistency.py"


def pytest_collection_modifyitems(config, items):
    for item in items:
        if EMULATOR_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    items.sort(key=lambda item: item.path.name != FIRST)       # stable: every other test keeps its place


class DeselectCovered:
    """After -k and -m have chosen the tests: a test covered by another chosen one is deselected (and
    counted as such in the summary)."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        names = {item.name for item in items}
        covered = [item for item in items if COVERED_BY.get(item.name) in names]
        if covered:
            config.hook.pytest_deselected(items=covered)
            items[:] = [item for item in items if item not in covered]


def pytest_configure(config):
    config.pluginmanager.register(DeselectCovered(), "tinyrps-deselect-covered")
    # Ctrl-C as in a terminal, for every command the tests start and stop with SIGINT: a shell that starts
    # the tests in the background (`make test &`, a CI runner) hands them SIGINT ignored, which every child
    # would keep, and a command "stopped" by Ctrl-C would carry on as if never stopped
    signal.signal(signal.SIGINT, signal.default_int_handler)
