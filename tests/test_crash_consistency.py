"""`tinyrps data`, `tinyrps train` and `tinyrps export` stopped at any instant: by Ctrl-C (SIGINT) or killed (SIGKILL,
as a crash or a power loss would stop them), just before each of their changes to the file
system in turn (tests/crash_driver.py counts them with an audit hook) or at a moment in
time. Afterwards every folder is byte for byte as it was before, or as a clean run
leaves it: never a mix, never a half-written file.

- Ctrl-C: the whole folder around the target (hidden names included) is exactly as before
  or exactly as after a clean run: nothing is left behind, and a new --out whose stage was
  stopped leaves no folder.
- SIGKILL: the process cannot tidy up. The target is as before, as after a clean run, or
  (cut between the two renames of a swap, on a file system without renameat2's exchange)
  missing; a reader then gets the old or the new result whole (or, for a new --out, "no
  data set"), never a mix, and after the next writer's recovery the folder is as before or
  as after a clean run (a new --out may keep the empty parent folders it made).
- Two writers into one folder: one result and one clear message, or both succeed one
  after the other; never a temporary-file error.
- A full disk (a file-size limit): one line, the old run as it was, no new folder.
- An export (a program, its descriptor and the intermediates kept in T/, committed in turn):
  Ctrl-C leaves the run exactly as before or as after a clean export. A kill leaves the old
  program, the new one, or (between two of the commit's renames) one the readers refuse with
  "export the program again"; everything else in the run is untouched, and the next export
  removes what the killed one left and leaves the run exactly as a clean export does.

The short version (not slow) stops each stage at 24 points spread over its run; the long
one at every change, with both signals, for a new and an existing --out, with and
without renameat2, and at moments spread over the run's time.
"""
from __future__ import annotations

import concurrent.futures
import hashlib
import itertools
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

DRIVER = Path(__file__).with_name("crash_driver.py")
PER_CLASS = "4"
WORKERS = 2           # trials run two at a time, each in its own folder
BUSY = re.compile(r"^tinyrps: error: .+ is being written by tinyrps \(pid \d+\) since \d\d:\d\d; "
                  r"wait or choose another folder$")


# ── the driver ───────────────────────────────────────────────────────────────
class Driver:
    """One crash_driver.py process: runs a tinyrps command in a forked child, maybe stopping it."""

    def __init__(self, folder: Path):
        self.folder, self.count = folder, 0
        self.proc = subprocess.Popen([sys.executable, str(DRIVER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env={**os.environ, "COLUMNS": "120"})
        assert json.loads(self.proc.stdout.readline())["ready"]

    def run(self, argv, **options) -> dict:
        self.count += 1
        out, err = self.folder / f"{self.count}.out", self.folder / f"{self.count}.err"
        self.proc.stdin.write(json.dumps({"argv": [str(a) for a in argv], "stdout": str(out), "stderr": str(err),
                                          **options}) + "\n")
        self.proc.stdin.flush()
        result = json.loads(self.proc.stdout.readline())
        result["stderr"] = err.read_text()
        return result

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


@pytest.fixture(scope="module")
def drivers(tmp_path_factory):
    started = [Driver(tmp_path_factory.mktemp(f"driver{i}")) for i in range(WORKERS)]
    yield started
    for driver in started:
        driver.close()


# ── snapshots ────────────────────────────────────────────────────────────────
def tree(folder: Path) -> dict:
    """Every file (with its sha256) and folder under `folder`, hidden ones included."""
    found = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs:
            found[os.path.relpath(os.path.join(root, name), folder) + "/"] = None
        for name in files:
            path = os.path.join(root, name)
            found[os.path.relpath(path, folder)] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return found


def target_tree(area: Path, target: str):
    return tree(area / target) if (area / target).is_dir() else None


# ── scenarios ────────────────────────────────────────────────────────────────
@dataclass
class Scenario:
    """A stage run into `target` (relative to an area folder) from the area's `pristine` state."""
    stage: str
    target: str
    argv: list                      # "{target}" stands for the target's path
    pristine: Path
    before: dict = field(default_factory=dict)      # the whole area before
    clean: dict = field(default_factory=dict)       # the whole area after a clean run
    events: int = 0
    events_without_exchange: int = 0
    swap: int = 0                   # the change that swaps the folders (renameat2's exchange, or a rename)
    swap_without_exchange: int = 0  # the second rename, the stage's to the target's name
    commits: tuple = ()             # export: the renames of the program and of its descriptor
    seconds: float = 0.0

    def command(self, area: Path) -> list:
        return [str(a).replace("{target}", str(area / self.target)) for a in self.argv]

    def area(self, work: Path, name: str) -> Path:
        area = work / name
        shutil.rmtree(area, ignore_errors=True)
        shutil.copytree(self.pristine, area, symlinks=True)
        return area

    def part(self, snapshot: dict, prefix: str = None) -> dict:
        prefix = (prefix or self.target).rstrip("/") + "/"
        return {k[len(prefix):]: v for k, v in snapshot.items() if k.startswith(prefix) and k != prefix}


def swap_change(log: list, target: Path, no_exchange: bool = False) -> int:
    """The number of the change that puts the staged folder at the target's name."""
    stage = f"{target.parent}/.{target.name}.stage-"
    for number, (event, path) in enumerate(log, 1):
        renames_stage = event == "os.rename" and path.startswith(stage) and "/" not in path[len(stage):]
        if renames_stage or (event == "tinyrps.exchange" and not no_exchange):
            return number
    raise AssertionError(f"no swap among the changes: {log}")


def export_changes(log: list, target: str) -> tuple:
    """(the change that swaps T/ in, the renames of T.pte and of T.json): the export's commit."""
    kept = [n for n, (event, path) in enumerate(log, 1)
            if event == "tinyrps.exchange" or (event == "os.rename" and path.endswith("/.kept"))]
    renames = [n for n, (event, path) in enumerate(log, 1)
               if event == "os.rename" and path.endswith(("/program.pte", f"/{target}.json")) and ".export-" in path]
    assert kept and len(renames) == 2, log
    return kept[0], tuple(renames)


def prepare(scenario: Scenario, driver: Driver, work: Path) -> Scenario:
    scenario.before = tree(scenario.pristine)
    area = scenario.area(work, f"clean-{scenario.stage}-{scenario.pristine.name}")
    start = time.perf_counter()
    result = driver.run(scenario.command(area), log=True)
    scenario.seconds = time.perf_counter() - start
    assert result["rc"] == 0, result["stderr"]
    scenario.events, scenario.clean = result["events"], tree(area)
    if scenario.stage == "export":
        scenario.swap, scenario.commits = export_changes(result["log"], EXPORT_TARGET)
    else:
        scenario.swap = swap_change(result["log"], area / scenario.target)
    area = scenario.area(work, f"clean-nx-{scenario.stage}-{scenario.pristine.name}")
    result = driver.run(scenario.command(area), no_exchange=True, log=True)
    assert result["rc"] == 0 and tree(area) == scenario.clean, result["stderr"]
    scenario.events_without_exchange = result["events"]
    if scenario.stage == "export":
        scenario.swap_without_exchange = export_changes(result["log"], EXPORT_TARGET)[0]
    else:
        scenario.swap_without_exchange = swap_change(result["log"], area / scenario.target, no_exchange=True)
    assert scenario.clean != scenario.before
    return scenario


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("crash")


@pytest.fixture(scope="module")
def shared_data(drivers, work):
    """The data set every training scenario reads (and must leave untouched)."""
    folder = work / "shared-data"
    result = drivers[0].run(["data", "--out", folder, "--per-class", PER_CLASS, "--seed", "1", "--quiet"])
    assert result["rc"] == 0, result["stderr"]
    return folder


@pytest.fixture(scope="module")
def data_scenarios(drivers, work) -> dict:
    new = work / "pristine-data-new"
    new.mkdir()
    existing = work / "pristine-data-existing"
    existing.mkdir()
    result = drivers[0].run(["data", "--out", existing / "out", "--per-class", PER_CLASS, "--seed", "2", "--quiet"])
    assert result["rc"] == 0, result["stderr"]
    (existing / "out" / "notes.txt").write_text("a file of the user's, kept across runs\n")
    argv = ["data", "--out", "{target}", "--per-class", PER_CLASS, "--seed", "1", "--quiet"]
    return {"new": prepare(Scenario("data", "new/sub/out", argv, new), drivers[0], work),
            "existing": prepare(Scenario("data", "out", argv, existing), drivers[0], work)}


@pytest.fixture(scope="module")
def train_scenarios(drivers, work, shared_data) -> dict:
    new = work / "pristine-train-new"
    new.mkdir()
    existing = work / "pristine-train-existing"
    existing.mkdir()
    result = drivers[0].run(["train", "--data", shared_data, "--out", existing / "out", "--epochs", "1",
                             "--seed", "2", "--quiet"])
    assert result["rc"] == 0, result["stderr"]
    (existing / "out" / "export").mkdir()
    (existing / "out" / "export" / "fp32.pte").write_bytes(b"a program exported from the previous model")
    (existing / "out" / "notes.txt").write_text("a file of the user's, kept across runs\n")
    argv = ["train", "--data", shared_data, "--out", "{target}", "--epochs", "1", "--seed", "1", "--quiet"]
    return {"new": prepare(Scenario("train", "new/sub/out", argv, new), drivers[0], work),
            "existing": prepare(Scenario("train", "out", argv, existing), drivers[0], work)}


EXPORT_TARGET = "ethos-u55-128"     # a program, its descriptor and kept intermediates: all an export commits


@pytest.fixture(scope="module")
def export_scenarios(drivers, work, shared_data) -> dict:
    """A run with no programs yet, and the same run holding this target's program exported from
    another checkpoint (a stale one, which the export replaces)."""
    new = work / "pristine-export-new"
    new.mkdir()
    # the smallest network: the commit is the subject, and each of some 30 exports is 2 s shorter
    train = ["train", "--data", shared_data, "--epochs", "1", "--arch", "c4-p-f8", "--quiet", "--out"]
    for seed, folder in ((1, new / "run"), (2, work / "export-other-run")):
        result = drivers[0].run([*train, folder, "--seed", str(seed)])
        assert result["rc"] == 0, result["stderr"]
    result = drivers[0].run(["export", "--run", work / "export-other-run", "--target", EXPORT_TARGET, "--quiet"])
    assert result["rc"] == 0, result["stderr"]
    existing = work / "pristine-export-existing"
    shutil.copytree(new, existing, symlinks=True)
    shutil.copytree(work / "export-other-run" / "export", existing / "run" / "export")
    argv = ["export", "--run", "{target}", "--target", EXPORT_TARGET, "--quiet"]
    return {"new": prepare(Scenario("export", "run", argv, new), drivers[0], work),
            "existing": prepare(Scenario("export", "run", argv, existing), drivers[0], work)}


# ── one stopped run and what must hold after it ──────────────────────────────
def read_result(stage: str, target: Path) -> None:
    """Read the target through the readers the later stages use: everything, checked."""
    from tinyrps.infra.artifacts.records import check_run_data, data_info, run_config
    from tinyrps.data import PROBES, SPLITS, load_split, probe_dir
    from tinyrps.network.model import load_model
    if stage == "data":
        info, _ = data_info(target)
        for split in SPLITS:
            load_split(target, split, info)
        for name in PROBES:
            load_split(probe_dir(target, name), "test")
    else:
        run_config(target)
        load_model(target / "model.pt")
        check_run_data(target)


def program_part(snapshot: dict) -> dict:
    """The export's own files in a snapshot of the run: T.pte, T.json and T/."""
    own = (f"export/{EXPORT_TARGET}.pte", f"export/{EXPORT_TARGET}.json", f"export/{EXPORT_TARGET}/")
    return {k: v for k, v in snapshot.items() if k.startswith(own)}


def read_program(run: Path, target: str = EXPORT_TARGET) -> bool:
    """Read the run's program as every later stage does (its descriptor, checked against the
    program and each kept file): True if it is whole, False if it is refused for export again."""
    from tinyrps.hardware import descriptor
    from tinyrps.infra.errors import UserError
    pte = run / "export" / f"{target}.pte"
    try:
        described = descriptor.read(pte, pte.read_bytes())
        assert described is not None
        for name in described.files:
            descriptor.kept_file(pte, described, name)
    except UserError as e:
        assert descriptor.EXPORT_AGAIN in str(e) or "export it again" in str(e), str(e)
        return False
    return True


def stopped_export(scenario: Scenario, driver: Driver, area: Path, where: str) -> str:
    """After a killed export: the old program, the new one, or a refused one, all else untouched;
    the next export leaves the run as a clean one does."""
    from tinyrps.export import remove_leftovers
    from tinyrps.infra.artifacts.locks import folder_lock
    run = area / scenario.target
    before, clean = scenario.part(scenario.before), scenario.part(scenario.clean)
    found = tree(run)
    rest = {k: v for k, v in found.items() if k not in program_part(found) and not k.startswith("export/.")}
    assert rest in ({k: v for k, v in state.items() if k not in program_part(state)} for state in (before, clean)), where
    whole = read_program(run) if (run / "export" / f"{EXPORT_TARGET}.json").is_file() else None
    if whole:
        assert program_part(found) in (program_part(before), program_part(clean)), where
    with folder_lock(run):                      # what the next export does first
        if (run / "export").is_dir():
            remove_leftovers(run / "export", EXPORT_TARGET)
    assert not [k for k in tree(run) if k.startswith("export/.")], (where, tree(run))
    if tree(area) not in (scenario.before, scenario.clean):       # a refused or half-committed program
        result = driver.run(scenario.command(area))
        assert result["rc"] == 0, (where, result["stderr"])
        assert tree(area) == scenario.clean, where
    return "clean" if found == clean else "before" if found == before else "refused" if whole is False else "mixed"


def stopped_run(scenario: Scenario, driver: Driver, work: Path, name: str, sig: str, kill_at=None,
                after_s=None, no_exchange=False) -> str:
    from tinyrps.infra.artifacts.locks import folder_lock
    from tinyrps.infra.artifacts.staging import recover
    from tinyrps.infra.errors import UserError
    area = scenario.area(work, name)
    result = driver.run(scenario.command(area), signal=sig, kill_at=kill_at, after_s=after_s, no_exchange=no_exchange)
    where = f"{scenario.stage} {name} ({sig} {'at change ' + str(kill_at) if kill_at else f'after {after_s} s'})"
    assert "Traceback" not in result["stderr"], where + result["stderr"]
    states = (scenario.part(scenario.before), scenario.part(scenario.clean))
    if sig == "SIGINT":
        assert result["rc"] in (0, 130), (where, result)
        if result["rc"] == 130:
            assert result["stderr"].strip().splitlines()[-1] == "tinyrps: interrupted", (where, result["stderr"])
        assert tree(area) in (scenario.before, scenario.clean), where     # nothing mixed, nothing left behind
        return "clean" if tree(area) == scenario.clean else "before"
    assert result["rc"] in (0, -9), (where, result)
    if scenario.stage == "export":
        return stopped_export(scenario, driver, area, where)
    found = target_tree(area, scenario.target)
    before_empty = not states[0]
    assert found in states or found is None, where
    try:
        read_result(scenario.stage, area / scenario.target)
    except UserError as e:      # only a new --out that never got its result has nothing to read
        assert before_empty and "no " in str(e), (where, str(e))
    after_reading = target_tree(area, scenario.target)
    assert after_reading in states or (after_reading is None and before_empty), where
    if (area / scenario.target).parent.is_dir():
        with folder_lock(area / scenario.target):      # what the next writer does first
            recover(area / scenario.target)
    final = tree(area)
    if final != scenario.clean:     # a killed stage cannot remove the empty parent folders it made for a new --out
        final = {k: v for k, v in final.items() if k not in ("new/", "new/sub/") or k in scenario.before}
    assert final in (scenario.before, scenario.clean), (where, sorted(set(final) ^ set(scenario.before)))
    return "clean" if final == scenario.clean else "before"


def spread(count: int, events: int) -> list:
    """`count` change numbers spread evenly over 1..events, the last change (the swap's end) included."""
    if count >= events:
        return list(range(1, events + 1))
    return sorted({round(1 + i * (events - 1) / (count - 1)) for i in range(count)})


def run_trials(scenarios: dict, drivers, work: Path, trials: list) -> dict:
    """trials: (scenario key, name, options); run two at a time; returns the outcome of each."""
    idle = queue.Queue()
    for driver in drivers:
        idle.put(driver)

    def one(trial):
        key, name, options = trial
        driver = idle.get()
        try:
            return stopped_run(scenarios[key], driver, work, name, **options)
        finally:
            idle.put(driver)
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(drivers)) as pool:
        futures = {trial[1]: pool.submit(one, trial) for trial in trials}
        return {name: future.result() for name, future in futures.items()}


def short_trials(scenario: dict) -> list:
    """24 stops: at changes spread over the run of an existing folder (12 SIGKILL, 8 SIGINT), the
    swap itself among them, with renameat2's exchange and without it (cut between its two
    renames); two of each signal for a new --out."""
    existing, new = scenario["existing"], scenario["new"]
    trials = [("existing", f"kill-{k}", dict(sig="SIGKILL", kill_at=k)) for k in spread(10, existing.events)]
    trials += [("existing", f"kill-swap-{existing.swap}", dict(sig="SIGKILL", kill_at=existing.swap)),
               ("existing", f"kill-nx-{existing.swap_without_exchange}",
                dict(sig="SIGKILL", kill_at=existing.swap_without_exchange, no_exchange=True))]
    trials += [("existing", f"int-{k}", dict(sig="SIGINT", kill_at=k)) for k in spread(8, existing.events)]
    trials += [("new", f"new-kill-{k}", dict(sig="SIGKILL", kill_at=k)) for k in (new.events // 2, new.swap)]
    trials += [("new", f"new-int-{k}", dict(sig="SIGINT", kill_at=k)) for k in (2, new.events - 1)]
    assert len({name for _, name, _ in trials}) == len(trials)
    return trials


def export_trials(scenario: dict) -> list:
    """20 stops of an export into a run holding a stale program: kills at changes spread over the
    run and at each change of the commit (T/ swapped in with and without renameat2, the program
    renamed, its descriptor renamed), Ctrl-C spread and at the descriptor's rename; a kill and a
    Ctrl-C mid-way, and a kill before the program's rename, for a run with no programs yet."""
    existing, new = scenario["existing"], scenario["new"]
    kills = sorted({*spread(8, existing.events), existing.swap, *existing.commits})
    trials = [("existing", f"kill-{k}", dict(sig="SIGKILL", kill_at=k)) for k in kills]
    trials += [("existing", f"kill-nx-{existing.swap_without_exchange}",
                dict(sig="SIGKILL", kill_at=existing.swap_without_exchange, no_exchange=True))]
    trials += [("existing", f"int-{k}", dict(sig="SIGINT", kill_at=k))
               for k in sorted({*spread(4, existing.events), existing.commits[1]})]
    trials += [("new", f"new-kill-{k}", dict(sig="SIGKILL", kill_at=k)) for k in (new.events // 2, new.commits[0])]
    trials += [("new", f"new-int-{new.events // 2}", dict(sig="SIGINT", kill_at=new.events // 2))]
    assert len({name for _, name, _ in trials}) == len(trials)
    return trials


def long_trials(scenario: dict) -> list:
    trials = []
    for key, s in scenario.items():
        for sig in ("SIGKILL", "SIGINT"):
            trials += [(key, f"{key}-{sig}-{k}", dict(sig=sig, kill_at=k)) for k in range(1, s.events + 1)]
            trials += [(key, f"{key}-{sig}-nx-{k}", dict(sig=sig, kill_at=k, no_exchange=True))
                       for k in range(max(1, s.swap_without_exchange - 4), s.events_without_exchange + 1)]
            trials += [(key, f"{key}-{sig}-t{i}", dict(sig=sig, after_s=round(s.seconds * i / 10, 3)))
                       for i in range(1, 10)]
    return trials


def assert_both_outcomes_seen(outcomes: dict) -> None:
    """Stops early keep the old result, stops after the swap have the new one: both must occur,
    or the stops did not span the run."""
    assert set(outcomes.values()) == {"before", "clean"}, outcomes


# ── the tests ────────────────────────────────────────────────────────────────
@pytest.mark.slow
def test_data_stopped_anywhere_leaves_the_old_data_set_or_the_new_one(drivers, work, data_scenarios):
    trials = short_trials(data_scenarios)
    assert len(trials) >= 20
    assert_both_outcomes_seen(run_trials(data_scenarios, drivers, work, trials))


@pytest.mark.slow
def test_train_stopped_anywhere_leaves_the_old_run_or_the_new_one(drivers, work, train_scenarios, shared_data):
    data_before = tree(shared_data)
    trials = short_trials(train_scenarios)
    assert len(trials) >= 20
    assert_both_outcomes_seen(run_trials(train_scenarios, drivers, work, trials))
    assert tree(shared_data) == data_before       # training only reads its data


@pytest.mark.slow     # every change, both signals, both kinds of --out, both swaps: some 250 stopped runs
def test_data_stopped_at_every_change(drivers, work, data_scenarios):
    assert_both_outcomes_seen(run_trials(data_scenarios, drivers, work, long_trials(data_scenarios)))


@pytest.mark.slow
def test_train_stopped_at_every_change(drivers, work, train_scenarios, shared_data):
    data_before = tree(shared_data)
    assert_both_outcomes_seen(run_trials(train_scenarios, drivers, work, long_trials(train_scenarios)))
    assert tree(shared_data) == data_before


@pytest.mark.slow
def test_export_stopped_anywhere_leaves_the_old_program_the_new_one_or_a_refused_one(drivers, work,
                                                                                      export_scenarios):
    run = export_scenarios["existing"]
    assert program_part(run.part(run.before)) != program_part(run.part(run.clean))       # the stale program
    trials = export_trials(export_scenarios)
    assert len(trials) >= 20
    outcomes = run_trials(export_scenarios, drivers, work, trials)
    assert {"before", "clean"} <= set(outcomes.values()), outcomes
    # a kill between the program's rename and its descriptor's leaves a pair the readers refuse
    assert outcomes[f"kill-{run.commits[1]}"] == "refused", outcomes


@pytest.mark.slow
def test_a_kept_file_of_the_old_folder_is_in_the_new_one(data_scenarios, train_scenarios):
    """What the stage does not own (a user's file, a run's exported programs) survives a new run."""
    for scenario in (data_scenarios["existing"], train_scenarios["existing"]):
        assert scenario.clean["out/notes.txt"] == scenario.before["out/notes.txt"]
    run = train_scenarios["existing"]
    assert run.clean["out/export/fp32.pte"] == run.before["out/export/fp32.pte"]
    assert run.clean["out/model.pt"] != run.before["out/model.pt"]


# ── two writers at once ──────────────────────────────────────────────────────
def start(*args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tinyrps", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "COLUMNS": "120"})


def two_at_once(first: list, second: list, delay: float) -> list:
    a = start(*first)
    time.sleep(delay)
    b = start(*second)
    return [(p.wait(timeout=600), p.communicate()[1]) for p in (a, b)]


def check_two_writers(results: list) -> None:
    codes = sorted(rc for rc, _ in results)
    for rc, err in results:
        assert ".tmp" not in err and "No such file" not in err and "Traceback" not in err, err
        if rc == 2:
            assert len(err.strip().splitlines()) == 1 and BUSY.match(err.strip()), err
    assert codes in ([0, 0], [0, 2]), results


@pytest.mark.parametrize("delay", [0.0, 1.5])
def test_two_data_runs_into_one_folder(tmp_path, delay):
    out = tmp_path / "data"
    seeds = (3, 4)
    results = two_at_once(["data", "--out", out, "--per-class", "30", "--seed", seeds[0], "--quiet"],
                          ["data", "--out", out, "--per-class", "30", "--seed", seeds[1], "--quiet"], delay)
    check_two_writers(results)
    from tinyrps.infra.artifacts.manifest import check_manifest
    from tinyrps.infra.artifacts.records import data_info
    check_manifest(out, "data")
    info, _ = data_info(out)
    winners = [seed for seed, (rc, _) in zip(seeds, results) if rc == 0]
    assert info["seed"] == winners[-1] if len(winners) == 1 else info["seed"] in seeds
    assert sorted(os.listdir(tmp_path)) == ["data"]          # no lock, no staged folder left


@pytest.mark.slow
def test_two_trainings_into_one_folder(tmp_path, data_dir):
    run = tmp_path / "run"
    results = two_at_once(["train", "--data", data_dir, "--out", run, "--epochs", "1", "--seed", "1", "--quiet"],
                          ["train", "--data", data_dir, "--out", run, "--epochs", "1", "--seed", "2", "--quiet"], 0.5)
    check_two_writers(results)
    from tinyrps.infra.artifacts.manifest import check_manifest
    from tinyrps.infra.artifacts.records import run_config
    from tinyrps.network.model import load_model
    check_manifest(run, "run")
    assert run_config(run)["seed"] in (1, 2)
    load_model(run / "model.pt")
    assert sorted(os.listdir(tmp_path)) == ["run"]


def test_a_writer_that_was_killed_leaves_a_lock_the_next_one_takes_over(tmp_path):
    out = tmp_path / "data"
    proc = start("data", "--out", out, "--per-class", "3000", "--quiet")
    lock = tmp_path / ".data.lock"
    deadline = time.time() + 60
    while not (lock.is_file() and lock.read_text()) and time.time() < deadline:
        time.sleep(0.05)
    assert json.loads(lock.read_text())["pid"] == proc.pid
    proc.kill()
    proc.wait()
    assert lock.exists() and any(".data.stage-" in n for n in os.listdir(tmp_path))    # what a kill leaves
    done = subprocess.run([sys.executable, "-m", "tinyrps", "data", "--out", out, "--per-class", "4", "--quiet"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert sorted(os.listdir(tmp_path)) == ["data"]


def test_a_second_writer_is_told_who_holds_the_folder(tmp_path, cli):
    from tinyrps.infra.artifacts.locks import folder_lock
    out = tmp_path / "data"
    with folder_lock(out):
        res = cli("data", "--out", out, "--per-class", "4")
    assert res.returncode == 2 and BUSY.match(res.stderr.strip()), res.stderr
    assert f"(pid {os.getpid()})" in res.stderr and time.strftime("%H:") in res.stderr
    assert not out.exists() and os.listdir(tmp_path) == []


# ── a full disk ──────────────────────────────────────────────────────────────
def small_files():
    """Writes past 64 KB fail with EFBIG, as writes to a full disk fail with ENOSPC."""
    import resource
    import signal
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)      # a failed write, not a killed process
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))


def on_a_full_disk(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tinyrps", *map(str, args)], capture_output=True, text=True,
                          preexec_fn=small_files, env=os.environ)


def assert_full_disk_line(res) -> None:
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "File too large" in res.stderr and "free some space" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.slow
def test_a_full_disk_during_training_leaves_the_old_run_as_it_was(tmp_path, trained_run):
    """The finding: the old model.pt with a new config.json, or a run folder with only config.json."""
    from tinyrps.data import make_data
    data_dir = tmp_path / "data"
    make_data(data_dir, seed=0, per_class=4, quiet=True)
    run = tmp_path / "run"
    shutil.copytree(trained_run, run, ignore=shutil.ignore_patterns("export"))
    before = tree(tmp_path)
    assert_full_disk_line(on_a_full_disk("train", "--data", data_dir, "--out", run, "--epochs", "1", "--seed", "7",
                                         "--quiet"))
    assert tree(tmp_path) == before
    assert_full_disk_line(on_a_full_disk("train", "--data", data_dir, "--out", tmp_path / "new", "--epochs", "1",
                                         "--quiet"))
    assert tree(tmp_path) == before                 # no folder holding only config.json


def test_a_full_disk_during_the_main_job_leaves_no_empty_out_folder(tmp_path):
    """Nor the folders it made on the way to a new OUT."""
    assert_full_disk_line(on_a_full_disk("all", "--out", tmp_path / "new" / "sub" / "out", "--per-class", "200",
                                         "--epochs", "1", "--quiet"))
    assert os.listdir(tmp_path) == []


# ── the main job, stopped again and again ────────────────────────────────────
# Every stage of `all` in about 80 s: a network of two layers on 4 images per class.
JOB = ["all", "--per-class", PER_CLASS, "--epochs", "1", "--arch", "c4-p-f8"]
JOB_REUSABLE = ("data", "train", "export", "measure", "eval", "bench")     # the stages `all` takes as they are
REPORT_FILES = ("summary.json", "report.md", "run/latency.png", "run/npu_layers.png")


def job_owner(rel: str) -> str:
    """The part of the main job's area (OUT = out/ and what lies beside it) that `rel` belongs to:
    the stage that writes it, "leftovers" for a hidden name (a lock, a scratch folder), else "other"."""
    parts = rel.split("/")
    if any(p.startswith(".") for p in parts):
        return "leftovers"
    if parts[0] != "out" or len(parts) < 2:
        return "other"
    rel, parts = "/".join(parts[1:]), parts[1:]
    if parts[0] == "data":
        return "data"
    if rel in REPORT_FILES:
        return "report"
    if parts[0] != "run":
        return "other"
    if len(parts) == 2:
        return {"eval.json": "eval", "bench.json": "bench"}.get(parts[1], "train")
    if parts[1] == "export" and len(parts) >= 3:
        name = parts[2]
        if name.endswith(".measure.json"):
            return "measure " + name[:-len(".measure.json")]
        return "export " + name.split(".")[0]
    return "other"


def job_digest(path: Path, area: Path) -> str:
    """What a file of the main job holds, comparable between two areas: its sha256 with the area's own
    path read as {area} (a run records where its data is; a manifest is read as the digests of what it
    lists); for the results that carry timings, what they describe (the checkpoint and the programs)."""
    name = path.name
    if name in ("report.md", "latency.png"):
        return "present"
    if name in ("bench.json", "summary.json"):
        result = json.loads(path.read_text())
        programs = result.get("programs_sha256") or {k: v.get("program_sha256")
                                                     for k, v in result.get("programs", {}).items()}
        return json.dumps([result.get("checkpoint_sha256"), programs], sort_keys=True)
    if name == "manifest.json":
        listed = json.loads(path.read_text())["files"]
        return json.dumps({k: job_digest(path.parent / k, area) for k in sorted(listed)})
    data = path.read_bytes()
    if path.suffix in (".json", ".md"):
        data = data.replace(str(area).encode(), b"{area}")
    return hashlib.sha256(data).hexdigest()


def job_parts(area: Path) -> dict:
    """The main job's area, file by file, in its parts (job_owner)."""
    parts = {}
    for root, dirs, files in os.walk(area):
        for name in dirs + files:
            path = Path(root) / name
            rel = path.relative_to(area).as_posix()
            if name in dirs:        # folders are read through their files, but for a hidden one
                if name.startswith("."):
                    parts.setdefault("leftovers", {})[rel + "/"] = None
                continue
            owner = job_owner(rel)
            parts.setdefault(owner, {})[rel] = None if owner == "leftovers" else job_digest(path, area)
    return parts


@dataclass
class MainJob:
    pristine: Path          # an earlier job's whole area (seed 1)
    clean: dict             # the parts an uninterrupted job (seed 0) leaves in it

    def argv(self, area: Path) -> list:
        return [*JOB, "--out", area / "out", "--seed", "0"]


@pytest.fixture(scope="module")
def main_job_areas(drivers, work) -> MainJob:
    """An area holding the job of seed 1, and the parts the job of seed 0 leaves in it when nothing
    stops it (kept across sessions: the parts read the area's own path as {area})."""
    import fixture_cache
    from tinyrps.firmware.sources import firmware_dir, source_files
    key = fixture_cache.fixture_key("crash-job", *JOB, modules=fixture_cache.package_modules("tinyrps"),
                                    files=source_files(firmware_dir()))

    def build(folder: Path) -> None:
        result = drivers[0].run([*JOB, "--out", folder / "pristine" / "out", "--seed", "1", "--quiet"])
        assert result["rc"] == 0, result["stderr"][-3000:]
        area = work / "clean-main-job"
        shutil.copytree(folder / "pristine", area, symlinks=True)
        result = drivers[0].run([*JOB, "--out", area / "out", "--seed", "0", "--quiet"])
        assert result["rc"] == 0, result["stderr"][-3000:]
        (folder / "clean.json").write_text(json.dumps(job_parts(area), indent=0, sort_keys=True))
    stored = fixture_cache.cached_folder("crash-job", key, build, work / "main-job")
    job = MainJob(stored / "pristine", json.loads((stored / "clean.json").read_text()))
    assert not job.clean.get("leftovers") and not job.clean.get("other"), job.clean
    assert job.clean["train"] != job_parts(job.pristine)["train"]
    return job


def last_stage(stderr: str) -> str:
    """The stage the job had announced when it stopped ("start" if none yet)."""
    stages = [line[3:].strip() for line in stderr.splitlines() if line.startswith("── ")
              and line[3:].strip() in (*JOB_REUSABLE, "game")]
    return stages[-1] if stages else "start"


def check_report_part(now: dict, old: dict, new: dict, where: str) -> None:
    """An earlier job's summary and report go first; the new ones come last, after the plots."""
    for rel, digest in now.items():
        assert digest == new[rel] or (rel.endswith(".png") and digest == old.get(rel)), (where, rel)
    if "out/report.md" in now:
        assert now == new, where


def check_stopped_job(job: MainJob, area: Path, before: dict, after: dict, sig: str, result: dict,
                      where: str) -> None:
    """After a stop: each part as before the stop or as the clean job leaves it (a program between two of
    its commit's renames refused), nothing else, and after Ctrl-C nothing left behind."""
    if sig == "SIGINT":
        lines = result["stderr"].strip().splitlines()
        assert result["rc"] == 130 and lines[-1] == "tinyrps: interrupted", (where, result["stderr"][-3000:])
        assert set(after.get("leftovers", {})) <= set(before.get("leftovers", {})), where
    else:
        assert result["rc"] == -9, (where, result["rc"], result["stderr"][-3000:])
    assert not after.get("other"), (where, after.get("other"))
    for name in sorted((set(before) | set(after) | set(job.clean)) - {"leftovers", "other"}):
        now, old, new = after.get(name, {}), before.get(name, {}), job.clean.get(name, {})
        if name == "report":
            check_report_part(now, old, new, where)
        elif now not in (old, new):
            refused = name.startswith("export ") and sig == "SIGKILL" and \
                not read_program(area / "out" / "run", name.split()[1])
            assert refused, (where, name, sorted(set(now.items()) ^ set(new.items())))


def stage_is_current(stage: str, parts: dict, clean: dict) -> bool:
    names = [n for n in clean if n == stage or n.startswith(stage + " ")]
    return all(parts.get(n) == clean[n] for n in names)


def check_stale_programs_refused(driver: Driver, area: Path, parts: dict, job: MainJob) -> list:
    """With the new checkpoint beside a program of the old one, evaluating that program is refused with
    one line saying how to export it again."""
    pristine = job_parts(job.pristine)
    stale = [n.split()[1] for n in parts if n.startswith("export ") and parts[n] != job.clean.get(n)
             and parts[n] == pristine.get(n)]
    if parts.get("train") != job.clean["train"] or not stale:
        return []
    result = driver.run(["eval", "--run", area / "out" / "run", "--program", stale[0], "--quiet"])
    err = result["stderr"].strip()
    assert result["rc"] == 2 and len(err.splitlines()) == 1, err[-3000:]
    assert f"export it again: tinyrps export --run {area / 'out' / 'run'} --target {stale[0]}" in err, err
    return stale[:1]


# The first file each later stage writes: its temporary file (atomic_write_bytes).
COMMIT_OF = {"measure": r"\.measure\.json\.\d+-\w+\.tmp$", "eval": r"/\.eval\.json\.\d+-\w+\.tmp$",
             "bench": r"/\.bench\.json\.\d+-\w+\.tmp$"}


def next_commit(stage: str | None) -> str | None:
    """The first stage after `stage` whose first result the chain can stop just before."""
    later = JOB_REUSABLE[JOB_REUSABLE.index(stage) + 1:] if stage in JOB_REUSABLE else ()
    return next((s for s in later if s in COMMIT_OF), None)


def job_stops():
    """The chain's stops in turn: changes in the data and training stages while they are stale, then
    moments in time (grown when a stop came before anything changed, so that the chain moves on, and
    short again once a new stage is the first stale one, and never past the first result of the stage
    after, so that each stage is stopped in), every
    other one a change early in the job (the lock, the retired report, the checks of what is
    current), and for the measure, eval and bench stages a stop just before their first result is
    written; SIGKILL and SIGINT in turn. Sent whether the last stop changed anything and the first
    stale stage, answers the next stop."""
    wait, stage, in_stage = 1.5, None, 0
    for i in itertools.count():
        sig = ("SIGKILL", "SIGINT")[i % 2 if i < 4 else i // 2 % 2]     # each kind of stop with both
        if i < 4:
            how = {"kill_at": (10, 46, 90, 124)[i]}
        elif i % 2:
            how = {"kill_at": 3 + i % 9}
        elif stage == "export" and in_stage == 6:     # measure is quick once its images are built: stop in it
            how = {"kill_on": COMMIT_OF["measure"]}
        else:       # and never past the next stage's first result, so that no stage is run through unstopped
            after = next_commit(stage)
            how = {"after_s": round(wait, 2), **({"kill_on": COMMIT_OF[after]} if after else {})}
        moved, first_stale = yield sig, how
        in_stage += 1
        if first_stale != stage:
            wait, stage, in_stage = 1.5, first_stale, 0
            if stage in COMMIT_OF:      # a stop just before the stage's first result is written, wherever that falls
                moved, first_stale = yield sig, {"kill_on": COMMIT_OF[stage]}
                if first_stale != stage:
                    wait, stage = 1.5, first_stale
        elif "after_s" in how and not moved:
            wait *= 1.4 if stage else 2.0       # the game and the report: a few stops are enough


@pytest.mark.slow
def test_the_main_job_stopped_again_and_again_ends_as_one_never_stopped(drivers, work, main_job_areas):
    """`all` into a folder of an earlier job, stopped by SIGKILL and Ctrl-C (to its whole process
    group: the emulators, compilers and helper processes it started too) at changes and moments
    spread over its stages, each time started again on what the last stop left, until one run ends.
    After every stop each stage's files are its old ones or the new ones whole; a program of the old
    checkpoint beside the new one is refused; the run that ends takes as they are exactly the stages
    that were current, and leaves the area as an uninterrupted job does, nothing behind."""
    job = main_job_areas
    area = work / "chain-main-job"
    shutil.copytree(job.pristine, area, symlinks=True)
    driver, stops, landed, refused = drivers[0], job_stops(), [], []
    sig, how = next(stops)
    while True:
        before = job_parts(area)
        result = driver.run(job.argv(area), signal=sig, group=True, **how)
        after = job_parts(area)
        where = f"stop {len(landed) + 1} ({sig} {how}, after {landed})"
        if result["rc"] == 0:
            break
        check_stopped_job(job, area, before, after, sig, result, where)
        landed.append(last_stage(result["stderr"]))
        refused += check_stale_programs_refused(driver, area, after, job)
        assert len(landed) < 80, where
        moved = {k: v for k, v in after.items() if k != "leftovers"} != \
            {k: v for k, v in before.items() if k != "leftovers"}
        stale = [stage for stage in JOB_REUSABLE if not stage_is_current(stage, after, job.clean)]
        sig, how = stops.send((moved, stale[0] if stale else None))
    summary = json.loads((area / "out" / "summary.json").read_text())
    assert summary["reused"] == [s for s in JOB_REUSABLE if stage_is_current(s, before, job.clean)], where
    assert after == job.clean, (where, {k: sorted(set(after.get(k, {}).items()) ^ set(v.items()))
                                             for k, v in job.clean.items() if after.get(k) != v},
                                     after.get("leftovers"))
    print(f"{len(landed)} stops, at {landed}; stale programs refused: {refused}")
    assert len(landed) >= 20 and {"data", "train", "export", "measure", "eval", "bench"} <= set(landed), landed
    assert refused, "no stop left a program of the old checkpoint beside the new one"
