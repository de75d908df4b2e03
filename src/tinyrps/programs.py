"""The programs of a run: the eager checkpoint and every exported .pte, in the families' target order.

An exported program is one of the run's programs only if it was exported from the run's checkpoint as it
is now: `selected` refuses a program whose descriptor names another checkpoint (a retrain after
the export), so no result of a stage ever comes from another checkpoint than the one it names.
"""
from __future__ import annotations

from pathlib import Path

from .infra.errors import UserError


def checkpoint(run_dir) -> Path:
    path = Path(run_dir) / "model.pt"
    if not path.is_file():
        raise UserError(f"no checkpoint at {path}: create it with `tinyrps train --data DATA --out {run_dir}`")
    return path


def exported(run_dir) -> dict:
    """target name -> .pte path, for each program exported in RUN/export, cpu programs first."""
    from .hardware.families import targets
    export_dir = Path(run_dir) / "export"
    found = {p.stem: p for p in sorted(export_dir.glob("*.pte"))} if export_dir.is_dir() else {}
    order = list(targets())
    return dict(sorted(found.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)))


def selected(run_dir, only=None) -> dict:
    """The exported programs named in `only` (all when None), in registry order, each checked to
    come from the run's checkpoint. "eager" may be named too: it is always part of the
    comparison. An unknown name is an error."""
    programs = exported(run_dir)
    if only:
        programs = named(run_dir, programs, only)
    check_exported_from_checkpoint(run_dir, programs)
    return programs


def check_exported_from_checkpoint(run_dir, programs: dict) -> None:
    """Refuse, in one line, a program exported from another checkpoint than RUN/model.pt."""
    from .hardware import descriptor
    from .infra.artifacts.files import sha256_file
    current = sha256_file(checkpoint(run_dir))
    for name, pte in programs.items():
        described = descriptor.read(pte, pte.read_bytes())
        origin = described.origin.checkpoint_sha256 if described is not None else None
        if origin != current:
            where = "another checkpoint" if origin else "no recorded checkpoint"
            raise UserError(f"{pte} was exported from {where}, not {Path(run_dir) / 'model.pt'} as it is now: "
                            f"export it again: tinyrps export --run {run_dir} --target {name}")


def named(run_dir, programs: dict, only) -> dict:
    unknown = [name for name in only if name != "eager" and name not in programs]
    if unknown:
        from .hardware.families import targets
        name = unknown[0]
        if name in targets():
            raise UserError(f"no exported program for {name} in {Path(run_dir) / 'export'}: "
                            f"create it with `tinyrps export --run {run_dir} --target {name}`")
        raise UserError(f"unknown program '{name}'; this run has: {', '.join(['eager', *programs])}")
    return {name: path for name, path in programs.items() if name in only}
