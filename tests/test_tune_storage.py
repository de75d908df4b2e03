"""tinyrps tune's study storage: only a database or file of its own is written, a refused --storage makes
nothing, a stopped first trial is measured on resuming, and workers share a study on a real PostgreSQL
server (a throw-away cluster of Debian's `postgresql` package) where a killed worker's trial is run again."""
import importlib.util
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tinyrps.infra.errors import UserError
from tinyrps.network.model import ARCHITECTURES
from tinyrps.tune import search
from tinyrps.tune.budget import Clock
from tinyrps.tune.settings import GRACE_SECONDS, STUDY_NAME, TuneSettings
from tinyrps.tune.space import params_of
from tinyrps.tune.study import open_study, shown_url, storage_for

TINY = ("--candidate-epochs", "1", "--epochs", "1", "--minutes", "30")
ANCHOR = ARCHITECTURES["fast"]


def optuna_tables(db: Path) -> list:
    return sorted(row[0] for row in sqlite3.connect(db).execute("SELECT name FROM sqlite_master WHERE type='table'"))


def test_a_study_database_is_opened_again_and_a_new_file_is_made(tmp_path):
    """What the rule lets through: a SQLite file not there yet, and one that holds a study."""
    settings = TuneSettings(data=tmp_path, out=tmp_path, storage=f"sqlite:///{tmp_path / 'new.db'}")
    open_study(settings)
    assert "trials" in optuna_tables(tmp_path / "new.db") and "version_info" in optuna_tables(tmp_path / "new.db")
    assert [t.state.name for t in open_study(settings).trials] == ["WAITING"]     # joined, the anchor once
    empty = tmp_path / "empty.db"      # an empty file is what SQLite makes of a new database
    empty.touch()
    storage_for(TuneSettings(data=tmp_path, out=tmp_path, storage=f"sqlite:///{empty}"))


def test_a_database_of_something_else_is_refused_before_anything_is_written(tmp_path):
    """An application's SQLite database, even one whose table is named like Optuna's, is left as it was."""
    app = tmp_path / "app.db"
    with sqlite3.connect(app) as db:
        db.execute("CREATE TABLE studies (id INTEGER, owner TEXT)")
        db.execute("INSERT INTO studies VALUES (1, 'mine')")
    before = app.read_bytes()
    with pytest.raises(UserError, match=r"holds tables Optuna did not make \(studies\)"):
        storage_for(TuneSettings(data=tmp_path, out=tmp_path, storage=f"sqlite:///{app}"))
    assert app.read_bytes() == before and optuna_tables(app) == ["studies"]


def test_no_password_is_shown(tmp_path):
    """A storage URL's password is kept out of messages and tune.json."""
    assert shown_url("postgresql://tuner:secret@db-host/tune") == "postgresql://tuner:***@db-host/tune"
    assert shown_url("postgresql://tuner@/tune?host=/tmp/pg") == "postgresql://tuner@/tune?host=/tmp/pg"
    with pytest.raises(UserError, match="cannot open the study storage") as refused:     # nothing listens there
        storage_for(TuneSettings(data=tmp_path, out=tmp_path, storage="postgresql://tuner:secret@127.0.0.1:9/tune"))
    assert "secret" not in str(refused.value)


def test_a_stopped_first_trial_is_measured_when_the_tune_resumes(tmp_path):
    """Ctrl-C in the anchor's trial fails it; the resumed tune enqueues the anchor again and measures it."""
    settings = TuneSettings(data=tmp_path, out=tmp_path, minutes=60.0, trials=1, retrain=False)
    measured = []

    def stopped(arch, run_dir, settings, status, meter):
        raise KeyboardInterrupt

    def evaluate(arch, run_dir, settings, status, meter):
        measured.append(arch)
        return {"arch": arch, "val_accuracy": 0.99, "npu_ms": 0.02, "sram_bytes": 1, "program_bytes": 20_000,
                "training_cost": 1.0}

    with pytest.raises(KeyboardInterrupt):
        search(open_study(settings), settings, quiet=True, clock=Clock(), evaluate=stopped)
    study = open_study(settings)      # resumed
    assert [t.state.name for t in study.trials] == ["FAIL", "WAITING"]
    search(study, settings, quiet=True, clock=Clock(), evaluate=evaluate)
    assert measured == [ANCHOR]
    assert [(t.state.name, t.user_attrs["arch"]) for t in study.trials] == [("FAIL", ANCHOR), ("COMPLETE", ANCHOR)]
    open_study(settings)      # measured: not enqueued again
    assert len(study.trials) == 2


@pytest.mark.slow
def test_a_refused_storage_is_one_line_and_makes_nothing(cli, data_dir, tmp_path):
    """Each refused --storage: exit 2, one line, --out not made, the file as it was."""
    app = tmp_path / "app.db"
    with sqlite3.connect(app) as db:
        db.execute("CREATE TABLE studies (id INTEGER)")
    text = tmp_path / "notes.txt"
    text.write_text("my notes\n")
    for storage, words in ((f"sqlite:///{app}", "holds tables Optuna did not make (studies)"),
                           (f"sqlite:///{text}", "is not a SQLite database"),
                           (f"sqlite:///{tmp_path}", "is not a file"),
                           (f"journal:{text}/study.log", "is a file, not a folder"),
                           (f"journal:{text}", "is not an Optuna journal"),
                           (f"journal:{tmp_path}", "is not a file"), ("nowhere", "not a storage URL")):
        before = {p: p.read_bytes() for p in (app, text)}
        out = tmp_path / "out"
        res = cli("tune", "--data", data_dir, "--out", out, "--storage", storage)
        assert res.returncode == 2 and words in res.stderr, (storage, res.stderr[-2000:])
        assert len(res.stderr.strip().splitlines()) == 1, res.stderr
        assert not out.exists(), storage
        assert {p: p.read_bytes() for p in (app, text)} == before, storage
    assert optuna_tables(app) == ["studies"]


# --- PostgreSQL ---------------------------------------------------------------------------------------------

INSTALL = "install Debian's postgresql package (scripts/install-system-deps.sh does: apt-get install postgresql)"


def postgres_programs() -> Path:
    """The folder of PostgreSQL's server programs: initdb on PATH, else Debian's newest
    /usr/lib/postgresql/VERSION/bin."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).resolve().parent
    folders = [p for p in Path("/usr/lib/postgresql").glob("*/bin") if (p / "initdb").is_file()]
    if not folders:
        pytest.fail(f"PostgreSQL's initdb and pg_ctl are not installed: {INSTALL}", pytrace=False)
    return max(folders, key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)


class Cluster:
    """A throw-away PostgreSQL cluster in a temporary folder, reached on a unix socket there (no TCP
    port), trusting its one user. The server refuses to run as root: then it runs as the `postgres`
    user the package made."""

    def __init__(self) -> None:
        if importlib.util.find_spec("psycopg") is None:     # SQLAlchemy's driver for postgresql:// URLs
            pytest.fail("psycopg (PostgreSQL's Python driver) is not installed: pip install -e '.[test]'",
                        pytrace=False)
        self.bin = postgres_programs()
        self.folder = Path(tempfile.mkdtemp(prefix="tinyrps-pg-"))    # short: a socket's path is at most 107 bytes
        self.as_owner = []
        if os.geteuid() == 0:
            import pwd
            try:
                owner = pwd.getpwnam("postgres")
            except KeyError:
                pytest.fail(f"no `postgres` user to run the server as (root may not): {INSTALL}", pytrace=False)
            os.chown(self.folder, owner.pw_uid, owner.pw_gid)
            self.as_owner = ["runuser", "-u", "postgres", "--"]
        self.data = self.folder / "data"
        try:
            self.run("initdb", "-D", self.data, "-U", "tinyrps", "--auth=trust", "-E", "UTF8", "--no-sync")
            self.run("pg_ctl", "-D", self.data, "-l", self.folder / "server.log", "-w", "-o",
                     f"-k {self.folder} -c listen_addresses='' -c fsync=off", "start")
        except BaseException:
            log = self.folder / "server.log"
            print(log.read_text()[-3000:] if log.is_file() else "no server log")
            self.stop()
            raise

    def run(self, program: str, *args) -> None:
        res = subprocess.run([*self.as_owner, str(self.bin / program), *map(str, args)], capture_output=True,
                             text=True, cwd=self.folder, timeout=120)
        assert res.returncode == 0, f"{program}: {res.stdout[-2000:]}{res.stderr[-2000:]}"

    def database(self, name: str) -> str:
        """A new database's URL, as a user gives it to --storage."""
        self.sql("postgres", f'CREATE DATABASE "{name}"')
        return f"postgresql://tinyrps@/{name}?host={self.folder}"

    def sql(self, database: str, statement: str) -> list:
        import psycopg
        with psycopg.connect(dbname=database, user="tinyrps", host=str(self.folder), autocommit=True) as db:
            cursor = db.execute(statement)
            return cursor.fetchall() if cursor.description else []

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self.run("pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture(scope="module")
def postgres():
    cluster = Cluster()
    yield cluster
    cluster.stop()


def tune_command(data_dir: Path, out: Path, storage: str, trials: int) -> list:
    return [sys.executable, "-m", "tinyrps", "tune", "--data", str(data_dir), "--out", str(out), "--storage", storage,
            "--trials", str(trials), "--no-retrain", "--json", "--quiet", *TINY]


@pytest.mark.slow
def test_a_postgresql_database_of_something_else_is_refused(cli, postgres, data_dir, tmp_path):
    url = postgres.database("app")
    postgres.sql("app", "CREATE TABLE studies (id INTEGER)")
    res = cli("tune", "--data", data_dir, "--out", tmp_path / "out", "--storage", url)
    assert res.returncode == 2 and "holds tables Optuna did not make (studies)" in res.stderr, res.stderr[-2000:]
    assert len(res.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()
    tables = postgres.sql("app", "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
    assert tables == [("studies",)]


@pytest.mark.slow
def test_two_workers_share_a_study_on_postgresql_and_a_killed_ones_trial_is_run_again(postgres, data_dir, tmp_path):
    """Two tune processes on one PostgreSQL study. The one measuring the anchor is killed (SIGKILL) in that
    trial; once its heartbeat is stale it is started again, fails the lost trial and runs it again. The
    study ends with every trial accounted for: none running or waiting, the killed one failed and run
    again once, the anchor measured once, each worker's trials its own."""
    import optuna
    from optuna.trial import TrialState
    url = postgres.database("tune")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    outs = [tmp_path / "worker0", tmp_path / "worker1"]
    workers = [subprocess.Popen(tune_command(data_dir, out, url, 1), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env) for out in outs]
    try:
        wait_for_study(postgres, workers)
        study = optuna.load_study(study_name=STUDY_NAME, storage=url)
        anchor = params_of(ANCHOR)
        deadline = time.monotonic() + 900
        while True:        # the anchor's trial, running in one of the workers for a few seconds
            assert time.monotonic() < deadline, "no anchor trial ran"
            check_running(workers)
            running = [t for t in study.get_trials(states=(TrialState.RUNNING,))
                       if t.system_attrs.get("fixed_params") == anchor and "worker" in t.user_attrs]
            if running and time.time() - running[0].datetime_start.timestamp() > 5:
                break
            time.sleep(0.5)
        killed_trial, pid = running[0].number, int(running[0].user_attrs["worker"].split()[-1])
        index = next(i for i, w in enumerate(workers) if w.pid == pid)
        workers[index].send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        assert workers[index].wait(timeout=60) == -signal.SIGKILL
        time.sleep(max(0.0, killed_at + GRACE_SECONDS + 2 - time.monotonic()))     # its heartbeat is stale
        workers[index] = subprocess.Popen(tune_command(data_dir, outs[index], url, 2), stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True, env=env)
        outputs = {i: w.communicate(timeout=1800) for i, w in enumerate(workers)}
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
    for i, (stdout, stderr) in outputs.items():
        assert workers[i].returncode == 0, stderr[-3000:]
    trials = optuna.load_study(study_name=STUDY_NAME, storage=url).trials
    states = [t.state for t in trials]
    # 4 trials: the other worker's one, the killed one, and the restarted worker's two (the killed one again)
    assert len(trials) == 4 and sorted(t.number for t in trials) == [0, 1, 2, 3]
    assert TrialState.RUNNING not in states and TrialState.WAITING not in states
    failed = [t for t in trials if t.state == TrialState.FAIL]
    assert [t.number for t in failed] == [killed_trial]
    retries = [t for t in trials if t.system_attrs.get("failed_trial") == killed_trial]
    assert len(retries) == 1 and retries[0].state == TrialState.COMPLETE and retries[0].user_attrs["arch"] == ANCHOR
    measured_anchor = [t for t in trials if t.state == TrialState.COMPLETE and t.user_attrs["arch"] == ANCHOR
                       and "repeat_of" not in t.user_attrs]
    assert [t.number for t in measured_anchor] == [retries[0].number]
    restarted = workers[index].pid
    assert retries[0].user_attrs["worker"].split()[-1] == str(restarted)
    by_worker = {}
    for t in trials:
        if t.number != killed_trial:
            assert t.state in (TrialState.COMPLETE, TrialState.PRUNED) and "cost" in t.user_attrs, t
            by_worker.setdefault(int(t.user_attrs["worker"].split()[-1]), []).append(t.number)
    assert {pid: len(numbers) for pid, numbers in by_worker.items()} == {workers[1 - index].pid: 1, restarted: 2}
    # the restarted worker finished last or not: its tune.json lists each trial it saw once
    last = json.loads(outputs[index][0])
    numbers = [c["number"] for c in last["candidates"]]
    assert len(numbers) == len(set(numbers)) and killed_trial in numbers and retries[0].number in numbers
    assert next(c for c in last["candidates"] if c["number"] == retries[0].number)["retry_of"] == killed_trial
    assert last["study"]["storage"] == url
    print(f"trials: {[(t.number, t.state.name, t.user_attrs.get('arch')) for t in trials]}")


def check_running(workers: list) -> None:
    for w in workers:
        if w.poll() is not None:
            raise AssertionError(f"a worker ended early ({w.returncode}): {w.communicate()[1][-3000:]}")


def wait_for_study(postgres: Cluster, workers: list, seconds: float = 600) -> None:
    """Until the workers have made the study (they import torch first). Read with SQL: an Optuna storage
    opened here would make Optuna's tables itself."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        check_running(workers)
        if postgres.sql("tune", "SELECT tablename FROM pg_tables WHERE tablename = 'studies'") and \
                postgres.sql("tune", f"SELECT 1 FROM studies WHERE study_name = '{STUDY_NAME}'"):
            return
        time.sleep(0.5)
    raise AssertionError(f"no study after {seconds:g} s")


def test_a_worker_whose_trial_another_failed_goes_on(tmp_path, capsys):
    """A worker silent past the grace period (a paused process) finds its trial failed by another worker,
    which runs it again: it says so in one line and goes on with its next trial."""
    from optuna.trial import TrialState
    settings = TuneSettings(data=tmp_path, out=tmp_path, minutes=60.0, trials=2, retrain=False)
    study = open_study(settings)

    def evaluate(arch, run_dir, settings, status, meter):
        if len(study.trials) == 1:      # the first trial: another worker fails it meanwhile
            study._storage.set_trial_state_values(study.trials[0]._trial_id, state=TrialState.FAIL)
        return {"arch": arch, "val_accuracy": 0.9, "npu_ms": 0.02, "sram_bytes": 1, "program_bytes": 20_000,
                "training_cost": 1.0}

    search(study, settings, quiet=False, clock=Clock(), evaluate=evaluate, probe=lambda *a: {"npu_ms": 0.01})
    assert [t.state.name for t in study.trials] == ["FAIL", "COMPLETE"]
    assert "#0: failed by another worker" in capsys.readouterr().err
