"""`tinyrps deploy library`: a Cortex-M program as a C library for the integrator's own firmware.

    write_library(pte, out_dir, name="tinyrps_model") -> manifest (dict)

The folder holds the program and the part of the tinyrps runtime it needs, with an API of
the program's own (include/NAME.h), CMake and Make build files, an example and a README
(the C and text are written by tinyrps.deploy.library_files). What goes in:

- the runtime's loader and reader, and only the operators the program uses, each with
  the ISA kernel variant of the program's core (Helium on the Cortex-M55/M85, the DSP
  extension on the M4/M33) and the portable C one, so the same folder builds and gives
  the same bits with any C99 compiler, on the core and on a PC. Which operators, variants
  and files: tinyrps.deploy.selection, from the firmware's sources; the runtime's files
  are copied as they are, and the library's own ops/operator_selection.h says what of
  them is compiled;
- the runtime's tables sized for this program (TRT_MAX_*), and the load's reasons left
  out (TRT_LOAD_DETAIL=0): NAME_init returns a status only;
- every external name of the runtime renamed NAME_<name> by a generated header
  (src/NAME_build.h) that each of the library's translation units (src/units/, one per
  runtime source) includes before its source, so two libraries link into one application;
- the program as a const, 16-byte aligned array in a section of its own.

What the generator needs to know, and from where:
- the program's core and labels: its descriptor (program_facts; the one place to switch
  to tinyrps.hardware.descriptor);
- its inputs, outputs, tables and the plain-C arena: the runtime itself, through the
  native build's `tinyrps-native info` and `dump`;
- the arena with the core's ISA kernels, the kernels each layer binds there and the
  instructions per inference: the firmware's measurement on the core's emulated board
  (the export's, or taken here with tinyrps.measure.firmware);
- the code size: the library and its example built with arm-none-eabi-gcc for the core.
"""
from __future__ import annotations

import json
import keyword
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..hardware.cores import CORES, core_names, find_core, get_core
from ..infra.errors import UserError
from . import library_files, library_readme, selection
from .code_size import code_sizes
from .library_files import MANIFEST, MANIFEST_KIND

DEFAULT_NAME = "tinyrps_model"

# Every external name of the runtime starts with one of these (checked with nm by the tests).
RUNTIME_PREFIXES = ("trt", "pte", "fb")

# The NPU driver the application links for an Ethos-U program (tinyrps_runtime.h): one per system, under the
# names Arm-shaped drivers are written to, so never renamed.
NPU_DRIVER_NAMES = ("trt_npu_driver", "trt_npu_reserve", "trt_npu_invoke", "trt_npu_release")

# C keywords of C99 (and C11's) that Python's keyword list lacks: not a library name.
C_KEYWORDS = frozenset("""auto break case char const continue default do double else enum extern float for goto
    if inline int long register restrict return short signed sizeof static struct switch typedef union unsigned
    void volatile while _Bool _Complex _Imaginary _Alignas _Alignof _Atomic _Generic _Noreturn _Static_assert
    _Thread_local""".split())
MAX_NAME = 40


# --- the name -------------------------------------------------------------------------------------

def check_name(name: str) -> str:
    """NAME as a C identifier the library's names can start with; a UserError says what is wrong."""
    shown = name.replace("\n", "\\n")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise UserError(f"--name '{shown}' is not a C identifier: use letters, digits and '_', not starting with "
                        f"a digit (e.g. {DEFAULT_NAME})")
    if name.startswith("__") or re.match(r"_[A-Z]", name):
        raise UserError(f"--name {name} is reserved in C (it starts with '__' or '_' and a capital): choose another")
    if name in C_KEYWORDS or keyword.iskeyword(name):
        raise UserError(f"--name {name} is a keyword: choose another, e.g. {name}_model")
    if len(name) > MAX_NAME:
        raise UserError(f"--name is {len(name)} characters long: at most {MAX_NAME}")
    lower = name.lower()
    if any(lower == p or lower.startswith(p + "_") for p in RUNTIME_PREFIXES):
        raise UserError(f"--name {name} begins like the runtime's own names ({', '.join(RUNTIME_PREFIXES)}): "
                        "choose another")
    return name


def check_out(out_dir) -> Path:
    """The output folder: missing, empty, or a library this command wrote (replaced whole)."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file: give a folder (it is created if missing)")
    if out.is_dir() and any(out.iterdir()) and not _is_library(out):
        raise UserError(f"--out {out} is a folder with other files in it: give a new or empty folder "
                        f"(a library written here before is replaced)")
    if out.is_dir() and _is_library(out) and _written(out) is None:
        raise UserError(f"--out {out} holds a library of an older tinyrps, which recorded no list of the files it "
                        "wrote, so files added since cannot be told from its own: move it away or give a new folder")
    return out


def _written(folder: Path) -> Optional[set]:
    """The files this command wrote into a library folder, as its manifest records them (None: no record)."""
    try:
        files = json.loads((folder / MANIFEST).read_text()).get("files")
    except (OSError, ValueError, AttributeError):
        return None
    return set(files) if isinstance(files, list) else None


def _is_library(folder: Path) -> bool:
    try:
        return json.loads((folder / MANIFEST).read_text()).get("kind") == MANIFEST_KIND
    except (OSError, ValueError, AttributeError):
        return False


# --- what the program is ----------------------------------------------------------------------------

@dataclass(frozen=True)
class ProgramFacts:
    family: str
    core: str
    labels: Optional[tuple]     # the classes of an RPS classifier's output, else None
    sha256: str
    description: str
    # (scale, zero_point) per input and per output: (None, None) for a float one, a pair for an int8 one of a
    # program exported with `--io int8` (the descriptor's)
    input_quantization: tuple = ()
    output_quantization: tuple = ()
    accelerator: Optional[str] = None    # an Ethos-U program's NPU ("ethos-u55-128"), else None

    @property
    def ethos_u(self) -> bool:
        return self.family == "ethos-u"


# The CPU beside the NPU of an Ethos-U program's library: the Cortex-M55 the emulated system has
# (tinyrps.measure.npu_system), whose code also runs on the M85 of a Corstone-320.
ETHOS_U_CPU = "cortex-m55"


def program_facts(pte: Path, program: bytes) -> ProgramFacts:
    """Family, core and labels from the program's descriptor (T.json, tinyrps.hardware.descriptor)."""
    from ..hardware import descriptor
    from ..hardware.pte import family_of_program
    described = descriptor.read(pte, program)
    if described is None:
        family = family_of_program(program, pte)
        if family != "cortex-m":
            raise UserError(_not_cortex_m(pte, family))
        raise UserError(f"{pte} has no descriptor {descriptor.path_of(pte).name} saying which core it was made for: "
                        "export it again with `tinyrps export`")
    if described.family == "ethos-u":
        return ProgramFacts(described.family, ETHOS_U_CPU, described.labels, described.sha256,
                            described.description, accelerator=described.info.accelerator)
    if described.family != "cortex-m":
        raise UserError(_not_cortex_m(pte, described.family))
    core = described.info.core
    if find_core(core) is None:
        raise UserError(f"{pte} was made for core '{core}', which the runtime has no kernels for "
                        f"(cores: {', '.join(core_names())}): export it again with `tinyrps export`")
    if get_core(core).isa == "c":
        with_isa = ", ".join(c.name for c in CORES if c.isa != "c")
        raise UserError(f"a library carries its core's DSP or Helium kernels beside plain C, and the {core} has plain C "
                        f"only: run {pte.name} on the firmware (`tinyrps run --device mcu`), or export for one of "
                        f"{with_isa} to make a library")
    return ProgramFacts(described.family, core, described.labels, described.sha256, described.description,
                        tuple((t.scale, t.zero_point) for t in described.inputs),
                        tuple((t.scale, t.zero_point) for t in described.outputs))


def _not_cortex_m(pte: Path, family) -> str:
    return (f"{pte} is not a Cortex-M program (its family: {family}), nor an Ethos-U one; a library is made of "
            "one of those: export it with `tinyrps export --target cortex-m55` (or cortex-m33, cortex-m4, "
            "ethos-u85-128)")


def native_facts(pte: Path, ethos_u: bool = False) -> tuple:
    """(info, dump) of the program from the runtime built for this host: its inputs, outputs, kernel calls
    and plain-C arena, and the flatbuffer as the reader parses it. A program the runtime refuses is a
    UserError with the runtime's reason. An Ethos-U program is read by the tool that links an NPU driver
    (the NPU link: it loads without the NPU, which only a run needs)."""
    from ..firmware import build_firmware
    tool = build_firmware("native").tool("tinyrps-native-npu" if ethos_u else "tinyrps-native")
    outputs = []
    for command in ("info", "dump"):
        result = subprocess.run([str(tool), command, str(pte)], capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            reason = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else f"exit {result.returncode}"
            raise UserError(f"the runtime refuses {pte.name} ({reason.removeprefix('error: ')}): export the program "
                            "again with `tinyrps export`")
        outputs.append(json.loads(result.stdout))
    return tuple(outputs)


def board_figures(pte: Path, core: str) -> dict:
    """The program on the tinyrps firmware of its core's emulated board: arena, kernels and instructions per
    layer (QEMU counts instructions, not cycles): the measure stage's figures, taken now if the program has
    no current full measurement (a quick one has no layers)."""
    from .. import measure
    measured = measure.read(pte)
    key = "cpu_part" if measured and "cpu_part" in measured else "firmware"
    if not measured or "layers" not in measured.get(key, {}):
        measured = measure.measure(pte)
    return measured["cpu_part" if "cpu_part" in measured else "firmware"]


# --- the tables -------------------------------------------------------------------------------------

def table_limits(dump: dict) -> dict:
    """The runtime's TRT_MAX_* limits set to what this program has (at least 1 each)."""
    plan = dump["plans"][0]
    values = plan["values"]
    calls = [call for chain in plan["chains"] for call in chain]
    tensor_lists = ("tensor_list", "optional_tensor_list")

    def list_items(call, kinds=("int_list",) + tensor_lists):
        return sum(len(values[a]["items"]) for a in call["args"]
                   if 0 <= a < len(values) and values[a]["kind"] in kinds)

    def chain_calls(call):
        """The runtime binds a call whose out (its argument before the return) is a Tensor[] once per item."""
        out = call["args"][-2] if len(call["args"]) >= 2 else -1
        return len(values[out]["items"]) if 0 <= out < len(values) and values[out]["kind"] == "tensor_list" else 1
    counts = {
        "TRT_MAX_VALUES": len(values),
        "TRT_MAX_OPERATORS": len(plan["operators"]),
        "TRT_MAX_KERNEL_CALLS": sum(chain_calls(c) for c in calls),
        # a Tensor[]'s (and a Tensor?[]'s) tensors take kernel-argument slots after the call's own arguments
        "TRT_MAX_KERNEL_ARGS": max((len(c["args"]) + list_items(c, tensor_lists) for c in calls), default=1),
        "TRT_MAX_CALL_LIST_ITEMS": max((list_items(c) for c in calls), default=1),
        "TRT_MAX_MEMORY_IDS": len(plan["memory_sizes"]),
        "TRT_MAX_INPUTS": len(plan["inputs"]),
        "TRT_MAX_OUTPUTS": len(plan["outputs"]),
    }
    return {k: max(1, v) for k, v in counts.items()}


def has_call_lists(dump: dict) -> bool:
    """Whether an argument of one of the program's calls is an int[] or a Tensor[]: without any, the library
    leaves out the loader's code that resolves them (TRT_CALL_LISTS=0, runtime.c) and refuses a call with one."""
    plan = dump["plans"][0]
    values = plan["values"]
    return any(0 <= a < len(values) and values[a]["kind"] in ("int_list", "tensor_list")
               for chain in plan["chains"] for call in chain for a in call["args"])


def may_copy_int8(dump: dict) -> bool:
    """Whether the loader may copy an output's raw int8 values aside (runtime.c, keep_raw_int8: when a call after
    the one writing the output writes over them). Not when every output is named by the program's last call
    alone, as an argument of its own: no call comes after the one writing it. Without copies, the library
    leaves out their code (TRT_INT8_COPIES=0) and refuses a program that would need one."""
    plan = dump["plans"][0]
    values = plan["values"]
    calls = [call for chain in plan["chains"] for call in chain]

    def named(call) -> set:
        """The values a call names: its arguments, and the items of its list arguments."""
        return set(call["args"]).union(*(values[a].get("items", ()) for a in call["args"] if 0 <= a < len(values)))
    if not calls:
        return True
    return any(v in named(call) for call in calls[:-1] for v in plan["outputs"]) or \
        not all(v in calls[-1]["args"] for v in plan["outputs"])


# --- renaming ------------------------------------------------------------------------------------------

_COMMENTS_AND_LITERALS = re.compile(r"""//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'""", re.S)


def runtime_names(texts: list) -> list:
    """Every identifier of these C sources that starts with a runtime prefix and is not a macro: the names
    the library renames (external functions and objects, and with them types and statics, which is harmless)."""
    names, macros = set(), set()
    pattern = re.compile(r"\b(?:%s)_[A-Za-z0-9_]*\b" % "|".join(RUNTIME_PREFIXES))
    for text in texts:
        code = _COMMENTS_AND_LITERALS.sub(" ", text)
        macros.update(re.findall(r"^\s*#\s*define\s+(\w+)", code, re.M))
        names.update(pattern.findall(code))
    return sorted(names - macros)


# --- the folder ------------------------------------------------------------------------------------------

def tinyrps_version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("tinyrps")
    except PackageNotFoundError:
        return "unknown (not installed)"


def write_library(pte, out_dir, name: str = DEFAULT_NAME) -> dict:
    """Write the library of a Cortex-M program to out_dir (see the module docstring); returns its manifest."""
    from ..firmware import firmware_dir
    from ..hardware.pte import read_program
    name = check_name(name)
    out = check_out(out_dir)
    pte = Path(pte)
    program = read_program(pte)
    facts = program_facts(pte, program)
    info, dump = native_facts(pte, facts.ethos_u)
    figures = board_figures(pte, facts.core)
    isa_kernels = get_core(facts.core).isa     # the ISA kernel variant the library carries beside plain C
    if figures.get("kernels") != isa_kernels:
        raise UserError(f"the firmware of {figures.get('board')} ran {pte.name} with the '{figures.get('kernels')}' "
                        f"kernels, not '{isa_kernels}': rebuild the firmware")
    fw = firmware_dir()
    src = fw / "src"
    operators = program_operators(dump, figures, src)
    symbols = selection.select_operators(operators, src, isa_kernels)
    chosen = selection.library_selection(figures["layers"], symbols, src, isa_kernels)
    files = selection.operator_files(src)
    spec = library_files.LibrarySpec(
        name=name, facts=facts, program=program, program_name=pte.name, isa_kernels=isa_kernels, info=info,
        figures=figures, limits=table_limits(dump), call_lists=has_call_lists(dump), operators=operators,
        symbols=symbols, fusions=bool(set(symbols) & selection.fusing_operators(src)),
        int8_copies=may_copy_int8(dump),
        arena={isa_kernels: figures["arena_bytes"], "c": info["arena_bytes"]}, version=tinyrps_version(),
        isa_only=without_portable_on_core(chosen, src), unbound=chosen.left_out(src))
    roots = {files[s]: 1 for s in symbols}                                                  # operators.def order
    if spec.classifier:
        roots[selection.IMAGE_HELPER] = 1                                                   # its classify calls trt_infer
    sources = selection.source_closure(src, roots, isa_kernels, chosen.variants + chosen.portable_off_core,
                                       options_off=tuple(o for o, on in (("TRT_ETHOS_U", facts.ethos_u),
                                                                        ("TRT_IMAGE_INT8", spec.image_int8)) if not on))
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        _copy_runtime(fw, staging / "src", sources, chosen, name)
        texts = [p.read_text() for p in sorted((staging / "src" / "runtime").rglob("*")) if p.suffix in (".c", ".h")]
        spec.renamed = [n for n in runtime_names(texts + [pasted_names(symbols)]) if n not in NPU_DRIVER_NAMES]
        units = [f"src/{library_files.unit_path(s)}" for s in sources]
        spec.sources = [f"src/{name}.c", f"src/{name}_program.c", *units]
        library_files.write_all(staging, spec)
        spec.code = code_sizes(staging, spec)
        library_readme.write_documents(staging, spec)
        _record_written(staging)
        kept = _keep_others(out, staging)
        _replace(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return {**json.loads((out / MANIFEST).read_text()), "kept": kept}


def program_operators(dump: dict, figures: dict, src: Path) -> list:
    """The runtime's operators the program's kernel calls use ("cortex_m::quantized_conv2d.out"). An
    Ethos-U program names its CPU operators by their portable names (quantized_decomposed::...), which the
    runtime runs with its own rows: those are the ones the board's calls ran, outside the delegate."""
    named = [f"{n}.{o}" if o else n for n, o in dump["plans"][0]["operators"]]
    if not any(layer.get("kernels") == "npu" for layer in figures["layers"]):
        return named
    rows = {row.name: row.qualified for row in selection.runtime_rows(src)}
    return list(dict.fromkeys(rows[layer["op"]] for layer in figures["layers"] if layer["kernels"] != "npu"))


def _record_written(folder: Path) -> None:
    """The manifest lists every file the command wrote, itself included: what a later write may replace."""
    path = folder / MANIFEST
    manifest = json.loads(path.read_text())
    manifest["files"] = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    path.write_text(json.dumps(manifest, indent=2) + "\n")


def _keep_others(out: Path, staging: Path) -> list:
    """Bring every entry of the old library folder that this command did not write (a user's notes, a build
    folder) into the new one, linked or copied; returns their names. One where the new library writes a
    file of its own is refused: it would be lost."""
    if not out.is_dir():
        return []
    written, kept = _written(out) or set(), []
    for root, dirs, files in os.walk(out):
        here = Path(root).relative_to(out)
        links = [d for d in dirs if os.path.islink(os.path.join(root, d))]
        dirs[:] = sorted(d for d in dirs if d not in links)
        entries = [(here / name).as_posix() for name in sorted(files + links)]
        if not dirs and not entries and root != str(out):
            entries = [here.as_posix() + "/"]           # an empty folder of the user's
        for rel in entries:
            if rel in written:
                continue
            dst = staging / rel
            if os.path.lexists(dst) and not rel.endswith("/"):
                raise UserError(f"{out / rel} was not written by tinyrps, and the new library writes a file of that "
                                "name: move it out of the folder first")
            dst.parent.mkdir(parents=True, exist_ok=True)
            source = out / rel
            if rel.endswith("/"):
                dst.mkdir(exist_ok=True)
            elif source.is_symlink():
                os.symlink(os.readlink(source), dst)
            else:
                try:
                    os.link(source, dst)
                except OSError:
                    shutil.copy2(source, dst)
            kept.append(rel)
    return kept


def without_portable_on_core(chosen, src: Path) -> list:
    """The kept operators whose plain-C variant the library compiles only off the core."""
    rows = selection.file_rows(src, list(chosen.symbols))
    files = selection.operator_files(src)
    return [s for s in chosen.symbols if any(n in chosen.portable_off_core for i, n in rows[files[s]] if i == "c")]


def pasted_names(symbols: list) -> str:
    """The runtime's names of these operators that the preprocessor pastes together from their rows
    (operator_table.h): no source spells them, so runtime_names is given them to rename too."""
    return " ".join(f"trt_op_{s} trt_op_name_{s} trt_op_overload_{s}" for s in symbols)


def _copy_runtime(fw: Path, dest: Path, sources: list, chosen, name: str) -> None:
    """The runtime as tinyrps has it under dest/runtime: its headers (all of them: the ops files include
    every variant's header), its operator list and the selected sources, with the library's own
    operator_selection.h; and under dest/units one translation unit per source, which compiles it after
    the library's build header."""
    src = fw / "src"
    runtime = dest / "runtime"
    for header in sorted(p for p in src.rglob("*") if p.suffix in (".h", ".def")):
        target = runtime / header.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(header, target)
    for header in selection.PUBLIC_HEADERS:
        shutil.copyfile(fw / "include" / header, runtime / header)
    (runtime / selection.SELECTION_HEADER).write_text(selection.selection_header(chosen))
    for rel in sources:
        shutil.copyfile(src / rel, runtime / rel)
        unit = dest / library_files.unit_path(rel)
        unit.parent.mkdir(parents=True, exist_ok=True)
        unit.write_text(library_files.unit_source(name, rel))


def _replace(staging: Path, out: Path) -> None:
    """Put the new folder in place of the old one whole: the old one stays until the new one is complete."""
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
        os.replace(out, old / "library")
        os.replace(staging, out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(staging, out)


def summary_lines(manifest: dict, out) -> list:
    """What the command prints: where the library is and its headline figures."""
    name, board = manifest["name"], manifest["board"]
    isa_kernels = manifest["kernels"]["isa"]
    lines = [f"{out}: library {name} of {manifest['program']['file']} ({manifest['program']['core']}, "
             f"sha256 {manifest['program']['sha256'][:12]})",
             f"  arena {manifest['arena_bytes'][isa_kernels]:,} B with the {isa_kernels} kernels, "
             f"{manifest['arena_bytes']['c']:,} B with portable C; program {manifest['program']['bytes']:,} B"]
    code = manifest["code"]
    if "missing" in code:
        lines.append(f"  code size not measured: {code['missing']}")
    else:
        lines.append("  code " + ", ".join(f"{c['library_and_libc_bytes']:,} B at {opt}" for opt, c in code.items())
                     + f" ({manifest['program']['core']}, without the program)")
    lines.append(f"  {board['instructions_per_inference']:,} instructions per inference on {board['name']} "
                 "(QEMU -icount shift=0: instructions, not cycles)")
    if manifest["io"] == "int8":
        lines.append("  inputs and outputs: int8, the quantized tensors (the library's default; scale and zero point "
                     f"in include/{name}.h)")
    else:
        lines.append("  inputs and outputs: float32; a library's default is int8: export the program with --io int8 "
                     "for the quantized tensors in and out, and no float input in the arena")
    lines.append(f"  add it with CMake (add_subdirectory) or Make ({name}.mk): see {Path(out) / 'README.md'}")
    kept = manifest.get("kept") or []
    if kept:
        lines.append(f"  kept {len(kept)} file{'s' if len(kept) != 1 else ''} not written by tinyrps: "
                     + ", ".join(kept[:5]) + (", ..." if len(kept) > 5 else ""))
    return lines
