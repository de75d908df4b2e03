"""The program descriptor: what an exported program is, written beside it as T.json.

One typed record per program, written by the export and read back by every stage through
this module only; the schema version is checked on every read. It says what the program
IS (target, family, inputs and outputs, where it came from, the family's own facts); what
a tool MEASURED of it (footprint, instructions, Vela's estimate) is the measure stage's,
in a file of its own (tinyrps.measure).

A descriptor is trusted only for the program it was written with: `read(pte, program)`
compares its sha256 with the program's bytes and refuses a mismatch, and a descriptor of
another schema version (or an older tinyrps's, which had none) is refused with the command that
writes a current one. Reading a descriptor imports no torch.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..infra.artifacts.files import atomic_write_json, check_replaceable_file, fsync_dir, sha256_file
from ..infra.errors import UserError
from .families import OLD_FAMILY_NAMES, family_names, get_family

DESCRIPTOR_VERSION = 4
# Version 3 is version 4 without integer I/O (no scale or zero point on a tensor, a float program), and names
# the cpu family "host": its programs stay readable without an export, for one release.
READABLE_VERSIONS = (3, DESCRIPTOR_VERSION)
VERSION_KEY = "descriptor_version"
EXPORT_AGAIN = "export the program again with `tinyrps export`"


@dataclass(frozen=True)
class TensorSpec:
    """One input or output of the program's `forward` method, as the program declares it."""
    dtype: str              # "float32", "int8", "uint8", "int32", ...
    shape: tuple            # sizes in logical (NCHW) order
    # how a user's data becomes this input, where the program has a convention ("uint8 image / 255")
    convention: str = ""
    # an integer input or output of a program exported with `--io int8`: the float value it stands for
    # is scale * (q - zero_point); None for a tensor the program takes or gives as it is
    scale: Optional[float] = None
    zero_point: Optional[int] = None

    @property
    def numel(self) -> int:
        n = 1
        for size in self.shape:
            n *= size
        return n


@dataclass(frozen=True)
class Origin:
    """What the program was exported from: a training run's checkpoint, or a user's own module."""
    checkpoint_sha256: Optional[str] = None    # RUN/model.pt
    arch: Optional[dict] = None                # the run's architecture (tinyrps.network.arch.describe_arch)
    module: Optional[str] = None               # "FILE.py:NAME" for `tinyrps export --module`
    calibration: str = ""                      # what calibrated an int8 program's quantization


@dataclass(frozen=True)
class ProgramDescriptor:
    target: str
    family: str
    description: str
    size_bytes: int
    sha256: str
    inputs: tuple           # TensorSpec per input
    outputs: tuple          # TensorSpec per output
    labels: Optional[tuple]  # the classes of a classifier's output (the RPS programs), else None
    origin: Origin
    versions: dict          # {"torch": ..., "executorch": ...}
    files: dict             # kept intermediates: name -> path relative to the program's folder
    files_sha256: dict      # name -> the kept file's sha256, checked by kept_file()
    info: object            # the family's dataclass (tinyrps.hardware.families: CpuInfo, EthosUInfo, CortexMInfo)

    @property
    def is_classifier(self) -> bool:
        return bool(self.labels)


def kept_file(pte, d: ProgramDescriptor, name: str) -> Path:
    """The intermediate `name` the export kept beside T.pte, checked against the descriptor: a file
    missing or not the one exported with this program is refused."""
    pte = Path(pte)
    if name not in d.files:
        raise UserError(f"{pte.name}'s descriptor keeps no {name}: {EXPORT_AGAIN}")
    path = pte.parent / d.files[name]
    if not path.is_file():
        raise UserError(f"{path}, kept by the export of {pte.name}, is missing: {EXPORT_AGAIN}")
    if sha256_file(path) != d.files_sha256.get(name):
        raise UserError(f"{path} is not the {name} exported with {pte.name} (its sha256 differs from the "
                        f"descriptor's): {EXPORT_AGAIN}")
    return path


def path_of(pte) -> Path:
    """T.json beside T.pte."""
    return Path(pte).with_suffix(".json")


def family_key(family: str) -> str:
    """The JSON key of a family's own section: "ethos-u" -> "ethos_u"."""
    return family.replace("-", "_")


def to_json(d: ProgramDescriptor) -> dict:
    common = {f.name: getattr(d, f.name) for f in dataclasses.fields(d) if f.name != "info"}
    common["inputs"] = [dataclasses.asdict(t) for t in d.inputs]
    common["outputs"] = [dataclasses.asdict(t) for t in d.outputs]
    common["origin"] = dataclasses.asdict(d.origin)
    common["labels"] = list(d.labels) if d.labels is not None else None
    return {VERSION_KEY: DESCRIPTOR_VERSION, **common, family_key(d.family): dataclasses.asdict(d.info)}


def write(pte, d: ProgramDescriptor, scratch: Optional[Path] = None) -> Path:
    """Write T.json whole or not at all; with `scratch`, its temporary file is made there (a
    folder on the same file system) instead of beside it."""
    path = check_replaceable_file(path_of(pte))
    if scratch is None:
        atomic_write_json(path, to_json(d))
        return path
    tmp = Path(scratch) / path.name
    with open(tmp, "w") as f:
        f.write(json.dumps(to_json(d), indent=2) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)
    return path


def read(pte, program: Optional[bytes] = None) -> Optional[ProgramDescriptor]:
    """The descriptor of T.pte, or None if it has none. With `program` (the .pte's bytes), one
    that does not describe those bytes is refused. A corrupt descriptor, or one of another
    schema version, is a UserError: a program's family and checks come from it, so it is never
    silently ignored."""
    pte = Path(pte)
    path = path_of(pte)
    if not path.is_file():
        return None
    try:
        raw = json.loads(path.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError):
        raw = None
    if not isinstance(raw, dict):
        raise UserError(f"{path} (the descriptor of {pte.name}) is corrupt (not a JSON object): {EXPORT_AGAIN}")
    version = raw.get(VERSION_KEY)
    if version not in READABLE_VERSIONS:
        found = f"version {version}" if version is not None else "an older tinyrps's descriptor"
        raise UserError(f"{path} is {found}; this tinyrps reads program descriptors of versions "
                        f"{' and '.join(map(str, READABLE_VERSIONS))}: {EXPORT_AGAIN}")
    descriptor = from_json(raw, path)
    check_named_for(pte, descriptor)
    if program is not None and descriptor.sha256 != hashlib.sha256(program).hexdigest():
        raise UserError(f"{pte.name} does not match its descriptor {path.name} (the descriptor's sha256 is not "
                        f"the program's: one of them was replaced): {EXPORT_AGAIN}")
    return descriptor


def check_named_for(pte, descriptor: ProgramDescriptor) -> None:
    """A program named after a target (T.pte) is that target's: every result is named by the file, so a
    program and descriptor copied to another target's name are refused, not shown as that target's."""
    from .families import targets
    pte = Path(pte)
    if pte.stem in targets() and pte.stem != descriptor.target:
        raise UserError(f"{pte.name} is named for the target {pte.stem}, but its descriptor records "
                        f"{descriptor.target} (copied or renamed from another target's program): export "
                        f"{pte.stem} with `tinyrps export --target {pte.stem}`, or give it a name that is no target's")


def from_json(raw: dict, path: Path) -> ProgramDescriptor:
    written = raw.get("family")
    family = OLD_FAMILY_NAMES.get(written, written) if isinstance(written, str) else written
    if family not in family_names():
        raise UserError(f"{path} names an unknown family '{written}' (valid: {', '.join(family_names())}): "
                        f"{EXPORT_AGAIN}")
    try:
        info = _record(get_family(family).info, raw[family_key(written)])
        origin = _record(Origin, raw["origin"])
        fields = {f.name: raw[f.name] for f in dataclasses.fields(ProgramDescriptor)
                  if f.name not in ("info", "origin", "inputs", "outputs", "labels")}
        fields["family"] = family
        return ProgramDescriptor(
            **fields, info=info, origin=origin,
            inputs=tuple(_tensor(t) for t in raw["inputs"]), outputs=tuple(_tensor(t) for t in raw["outputs"]),
            labels=tuple(raw["labels"]) if raw["labels"] is not None else None)
    except (KeyError, TypeError, ValueError) as e:
        raise UserError(f"{path} is not a complete program descriptor ({type(e).__name__}: {e}): "
                        f"{EXPORT_AGAIN}") from None


def _tensor(raw: dict) -> TensorSpec:
    spec = _record(TensorSpec, raw)
    return dataclasses.replace(spec, shape=tuple(int(s) for s in spec.shape))


def _record(cls, raw: dict):
    """A dataclass from its JSON object: every field present and nothing else; lists of a tuple
    field back to tuples."""
    if not isinstance(raw, dict):
        raise TypeError(f"{cls.__name__} is not an object")
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = set(raw) - names
    if unknown:
        raise ValueError(f"unknown {cls.__name__} fields {sorted(unknown)}")
    values = {}
    for f in dataclasses.fields(cls):
        if f.name in raw:
            value = raw[f.name]
            values[f.name] = tuple(value) if isinstance(value, list) and "tuple" in str(f.type) else value
    return cls(**values)


def assumed_cortex_m(pte, core: str) -> ProgramDescriptor:
    """The descriptor of a Cortex-M program that has none (written by ExecuTorch's own flow, not by
    `tinyrps export`), for measuring it: its inputs, outputs and operators read from the program, its
    core the one given (`--target`), since nothing in the program names it. Held in memory only."""
    from .families import CortexMInfo, get_target
    from .pte import program_family
    pte = Path(pte)
    target = get_target(core)
    if target.family != "cortex-m":
        raise UserError(f"--target {core} is not a Cortex-M core: give the core {pte.name} was lowered for, "
                        "e.g. --target cortex-m55")
    if program_family(pte) != "cortex-m":
        raise UserError(f"{pte.name} is not a Cortex-M program, and has no descriptor ({path_of(pte).name}): "
                        "export it with `tinyrps export`")
    from ..export import program_io, versions
    program = pte.read_bytes()
    inputs, outputs = program_io(program)
    from ..export.cortex_m import program_operators
    operators = program_operators(program)
    return ProgramDescriptor(
        target=core, family="cortex-m", description=target.description, size_bytes=len(program),
        sha256=hashlib.sha256(program).hexdigest(), inputs=inputs, outputs=outputs, labels=None,
        origin=Origin(calibration="unknown: the program has no descriptor"), versions=versions(), files={},
        files_sha256={}, info=CortexMInfo(core=core, operators=operators, quantization={}, reference={}))


def assumed_note(core: str) -> str:
    return f"no descriptor: measured as a {core} program, the core --target names"
