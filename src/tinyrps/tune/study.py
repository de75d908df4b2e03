"""The Optuna study: made or joined in its storage, checked against the settings, the anchor enqueued.

The storage is SQLite in the output folder by default, or any storage several workers share
(`--storage`: a database URL, PostgreSQL across machines, or journal:PATH). Only a storage of the
study's own is written: a database with other tables, or a file that is neither SQLite nor Optuna's
journal, is refused before anything is made. In a database, a worker's trial carries Optuna's
heartbeat, and the trial of a worker that has stopped is run again by another (HEARTBEAT_SECONDS).
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from ..network.arch import CHECKPOINT_RULE
from ..infra.errors import UserError, one_line
from .settings import (ANCHOR, DIRECTIONS, GRACE_SECONDS, HEARTBEAT_SECONDS, STALE_RETRIES, STUDY_DB, STUDY_NAME,
                       TuneSettings)
from .space import params_of


# Optuna's record of its schema's version, made with its tables: a database with tables of Optuna's names but
# not this one was not made by Optuna (an application's own `studies`).
OPTUNA_VERSION_TABLE = "version_info"


def storage_for(settings: TuneSettings):
    """The Optuna storage: `--storage` (an RDB URL such as sqlite:///path.db or postgresql://..., or
    journal:PATH for Optuna's journal file), else SQLite in the output folder. A file or database that
    holds anything but a study is refused before anything is written to it (check_database,
    journal_storage)."""
    import warnings

    import optuna
    url = settings.storage or f"sqlite:///{(settings.out / STUDY_DB).resolve()}"
    if url.startswith("journal:"):
        return journal_storage(Path(url.removeprefix("journal:")))
    if "://" not in url:
        raise UserError(f"--storage '{url}' is not a storage URL: use sqlite:///PATH.db, another database URL "
                        "(postgresql://..., mysql://...) or journal:PATH")
    for attempt in (1, 2):
        try:
            check_database(url)
            with warnings.catch_warnings():     # heartbeats are experimental in Optuna: said once, here
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                return optuna.storages.RDBStorage(
                    url, heartbeat_interval=HEARTBEAT_SECONDS, grace_period=GRACE_SECONDS,
                    heartbeat_stale_trial_callback=optuna.storages.RetryHeartbeatStaleTrialCallback(STALE_RETRIES))
        except UserError:
            raise
        except Exception as e:  # noqa: BLE001 - a bad URL, a missing driver, an unreachable server
            if attempt == 2:
                raise UserError(f"cannot open the study storage {shown_url(url)}: {one_line(e, 200)}") from None
        # workers started together on a new database: the one whose making of Optuna's tables collided with
        # another's finds them made a moment later
        time.sleep(1.0)


def shown_url(url: str) -> str:
    """A storage URL as messages and tune.json show it: without its password."""
    try:
        from sqlalchemy.engine import make_url
        parsed = make_url(url)
    except Exception:  # noqa: BLE001 - not a database URL (journal:PATH, or a typo): nothing to hide
        return url
    return url if parsed.password is None else parsed.render_as_string(hide_password=True)


def check_database(url: str) -> None:
    """Refuse a database that holds tables of something else: Optuna would make its own tables beside them
    (and fail half-way on one of the same name, its `studies`). An empty database, a SQLite file not there
    yet, or Optuna's tables with their version record are a study storage."""
    import sqlalchemy
    from optuna.storages._rdb.models import BaseModel
    from sqlalchemy.engine import make_url
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        path = Path(parsed.database)
        if not path.exists():
            return
        if not path.is_file():
            raise UserError(f"--storage {url}: {path} is not a file: give a SQLite file's path (it is created if "
                            "missing)")
        with open(path, "rb") as f:
            head = f.read(16)
        if head not in (b"", b"SQLite format 3\x00"):      # empty: what SQLite makes of a new file
            raise UserError(f"--storage {url}: {path} is not a SQLite database: give a new file (it is created) "
                            "or a study's database")
    engine = sqlalchemy.create_engine(url)
    try:
        inspector = sqlalchemy.inspect(engine)
        tables = set(inspector.get_table_names())
        columns = {c["name"] for c in inspector.get_columns(OPTUNA_VERSION_TABLE)} \
            if OPTUNA_VERSION_TABLE in tables else set()
    finally:
        engine.dispose()
    foreign = sorted(tables - set(BaseModel.metadata.tables) - {"alembic_version"})
    if not tables or (not foreign and {"schema_version", "library_version"} <= columns):
        return
    names = ", ".join(foreign or sorted(tables))    # Optuna's names alone, but not its version record: not its own
    raise UserError(f"--storage {shown_url(url)} holds tables Optuna did not make ({names}): the study is written "
                    "only into a database of its own: give a new SQLite file or an empty database "
                    "(CREATE DATABASE ...)")


def journal_storage(path: Path):
    """Optuna's journal file at `path` (its folder made when missing): refused when it is a folder, when its
    parent is a file, or when the file holds anything but Optuna's journal lines."""
    import json

    import optuna
    from optuna.storages.journal import JournalFileBackend
    where = f"--storage journal:{path}"
    for parent in path.parents:
        if parent.exists() and not parent.is_dir():
            raise UserError(f"{where}: {parent} is a file, not a folder: give a journal path in a folder")
    if path.exists():
        if not path.is_file():
            raise UserError(f"{where} is not a file: give a journal file's path (it is created if missing)")
        with open(path, "rb") as f:
            first = f.readline()
        try:
            line = json.loads(first) if first else {"op_code": None}     # an empty file: a new journal
            ours = isinstance(line, dict) and "op_code" in line
        except ValueError:
            ours = False
        if not ours:
            raise UserError(f"{where}: {path} is not an Optuna journal: give a new file (it is created) or a "
                            "study's journal")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return optuna.storages.JournalStorage(JournalFileBackend(str(path)))
    except OSError as e:
        raise UserError(f"cannot open {where}: {one_line(e, 200)}") from None


def open_study(settings: TuneSettings):
    """The study in the settings' storage, made or joined, checked against the settings, with the anchor
    enqueued where it is due (enqueue_anchor)."""
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = storage_for(settings)
    try:
        try:
            study, made = optuna.create_study(study_name=STUDY_NAME, storage=storage, directions=list(DIRECTIONS)), True
        except optuna.exceptions.DuplicatedStudyError:    # another worker's, or an earlier tune's
            study, made = optuna.create_study(study_name=STUDY_NAME, storage=storage, directions=list(DIRECTIONS),
                                              load_if_exists=True), False
    except ValueError as e:   # the stored study has other directions
        raise UserError(f"the study in {where_stored(settings)} is not a tinyrps tune "
                        f"study ({e}): use another --out or --storage") from None
    stored = study.user_attrs.get("settings")
    mine = study_settings(settings)
    if stored is None:
        study.set_user_attr("settings", mine)
    elif stored != mine:    # a key on one side only differs too (a teacher there and none here)
        raise UserError(f"the study in {where_stored(settings)} was made with other settings "
                        f"({describe_difference(stored, mine)}): use another --out or --storage, or the same settings")
    study.sampler = sampler_for(settings, len(study.trials))
    enqueue_anchor(study, made)
    return study


def where_stored(settings: TuneSettings) -> str:
    return shown_url(settings.storage) if settings.storage else str(settings.out / STUDY_DB)


def sampler_for(settings: TuneSettings, trials_so_far: int):
    """Multi-objective TPE. Its random start is seeded by the seed and the trials already in the
    study, so a resumed search draws new candidates (the same seed alone would repeat the first
    ones) and one worker's search is reproducible. Workers sharing a storage also mix in their
    process id: started together, they would otherwise draw the same candidates."""
    import optuna
    seed = settings.seed + trials_so_far + (os.getpid() << 16 if settings.storage else 0)
    return optuna.samplers.TPESampler(seed=seed % 2**32, multivariate=True, n_startup_trials=6)


def study_settings(settings: TuneSettings) -> dict:
    """What makes trials of one study comparable: the same target, data, constraints and training."""
    # the checkpoint rule: a study whose candidates kept another epoch's weights scored them otherwise
    mine = {"target": settings.target, "data": str(settings.data.resolve()), "max_npu_ms": settings.max_npu_ms,
            "max_program_bytes": settings.max_program_bytes, "candidate_epochs": settings.candidate_epochs,
            "seed": settings.seed, "checkpoint_rule": CHECKPOINT_RULE}
    if settings.teacher:    # a study made before distillation existed names none, and matches a plain one
        mine.update(teacher=str(settings.teacher), distill_alpha=settings.distill_alpha,
                    distill_temperature=settings.distill_temperature)
    return mine


def describe_difference(stored: dict, mine: dict) -> str:
    return ", ".join(f"{k} {stored.get(k)!r} there, {mine.get(k)!r} here" for k in {**stored, **mine}
                     if stored.get(k) != mine.get(k))


def enqueue_anchor(study, made: bool = True) -> None:
    """The search's first candidate is ANCHOR. The process that made the study enqueues it; one that opens a
    study enqueues it again when the study has trials but none of ANCHOR waiting, running or done (a first
    trial stopped by Ctrl-C has failed: a resumed tune measures it). A worker that opens a study with no trial
    yet leaves it to the study's maker, which enqueues it a moment later: two workers started together
    enqueue it once. Each point of SPACE is one architecture."""
    from optuna.trial import TrialState

    from ..network.arch import ARCHITECTURES
    params = params_of(ARCHITECTURES[ANCHOR])
    if params is None:
        return
    trials = study.get_trials(deepcopy=False)
    live = any(t.system_attrs.get("fixed_params", t.params) == params and t.state != TrialState.FAIL for t in trials)
    if made or (trials and not live):
        study.enqueue_trial(params)
