"""`tinyrps deploy library`: a Cortex-M program as a C library for the integrator's own firmware.

    write_library(pte, out_dir, name="tinyrps_model") -> manifest (dict)

The folder holds the program and the part of the tinyrps runtime it needs, with an API of
the program's own (include/NAME.h), CMake and Make build files, an example and a README
(the C and text are written by tinyrps.deploy.library_files). What goes in:

- the runtime's loader and reader, and only the operators the program uses, each with
  the ISA kernel variant of the program's core (Helium on the Cortex-M55/M85, the DSP
  extension on the M4/M33) and the portable C one, so the same folder builds and gives
  the same bits with any C99 compiler, on the core and on a PC (OPERATOR_SOURCES says
  which files an operator needs);
- the runtime's tables sized for this program (TRT_MAX_*), and the load's reasons left
  out (TRT_LOAD_DETAIL=0): NAME_init returns a status only;
- every external name of the runtime renamed NAME_<name> by a generated header that
  every library source includes first (src/NAME_build.h), so two libraries link into
  one application;
- the program as a const, 16-byte aligned array in a section of its own.

What the generator needs to know, and from where:
- the program's core and labels: its descriptor (program_facts; the one place to switch
  to tinyrps.descriptor);
- its inputs, outputs, tables and the plain-C arena: the runtime itself, through the
  native build's `tinyrps-native info` and `dump`;
- the arena with the core's ISA kernels, the kernels each layer binds there and the
  instructions per inference: the firmware's measurement on the core's emulated board
  (the export's, or taken here with tinyrps.measure.firmware);
- the code size: the library and its example built with arm-none-eabi-gcc for the core.
"""
from __future__ import annotations

import concurrent.futures
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

from ..cores import core_names, find_core, get_core
from ..errors import UserError
from ..tempdirs import temp_dir
from . import library_files
from .library_files import MANIFEST, MANIFEST_KIND, build_header_include, isa_choice

DEFAULT_NAME = "tinyrps_model"

# Every external name of the runtime starts with one of these (checked with nm by the tests).
RUNTIME_PREFIXES = ("trt", "pte", "fb")

# The runtime's own sources (relative to firmware/src), in every library.
RUNTIME_SOURCES = ("pte_reader.c", "load_detail.c", "runtime.c", "ops/operator_table.c", "ops/bind_args.c")
# The runtime's list of operators (relative to firmware/src): the library's has the selected rows only.
OPERATOR_LIST = "ops/operators.def"

# Per operator of the runtime's list (its symbol: the row's TRT_OPERATOR(symbol, ...) in
# ops/operators.def), the files it needs: "ops" for every build, then per kernel variant. This table
# is the selection's one source; the operator list itself is read from operators.def
# (runtime_operators), and a test checks that the two agree.
OPERATOR_SOURCES = {
    "quantize_per_tensor": {
        "ops": ("ops/quantize.c",),
        "c": ("kernels/c/quantize_per_tensor.c",), "dsp": ("kernels/dsp/quantize_per_tensor.c",),
        "mve": ("kernels/mve/quantize.c",)},
    "dequantize_per_tensor": {
        "ops": ("ops/dequantize.c",),
        "c": ("kernels/c/dequantize_per_tensor.c",), "mve": ("kernels/mve/dequantize.c",)},
    "quantized_conv2d": {
        "ops": ("ops/conv2d.c", "ops/conv_common.c", "kernels/weight_sums.c"),
        "c": ("kernels/c/conv2d.c", "kernels/c/dot_s8.c"), "dsp": ("kernels/dsp/conv2d.c",),
        "mve": ("kernels/mve/conv2d.c", "kernels/mve/conv2d_pooled.c")},
    "quantized_depthwise_conv2d": {
        "ops": ("ops/depthwise_conv2d.c", "ops/conv_common.c", "kernels/weight_sums.c"),
        "c": ("kernels/c/depthwise_conv2d.c",),
        "dsp": ("kernels/dsp/depthwise_conv2d.c", "kernels/dsp/depthwise_channels.c",
                "kernels/dsp/depthwise_long_window.c"),
        "mve": ("kernels/mve/depthwise_conv2d.c", "kernels/mve/depthwise_one_channel.c",
                "kernels/mve/depthwise_channels.c", "kernels/mve/conv2d.c")},
    "quantized_transpose_conv2d": {
        "ops": ("ops/transpose_conv2d.c", "ops/conv_common.c", "kernels/weight_sums.c"),
        "c": ("kernels/c/transpose_conv2d.c", "kernels/c/dot_s8.c"),
        "dsp": ("kernels/dsp/transpose_conv2d.c", "kernels/dsp/conv2d.c"),
        "mve": ("kernels/mve/transpose_conv2d.c", "kernels/mve/conv2d.c")},
    "quantized_max_pool2d": {
        "ops": ("ops/max_pool2d.c",),
        "c": ("kernels/c/max_pool2d.c",), "dsp": ("kernels/dsp/max_pool2d.c",),
        "mve": ("kernels/mve/max_pool2d.c",)},
    "quantized_linear": {
        "ops": ("ops/linear.c", "kernels/weight_sums.c"),
        "c": ("kernels/c/linear.c", "kernels/c/dot_s8.c"), "dsp": ("kernels/dsp/linear.c",),
        "mve": ("kernels/mve/linear.c",)},
    "quantized_avg_pool2d": {
        "ops": ("ops/avg_pool2d.c",),
        "c": ("kernels/c/avg_pool2d.c",), "mve": ("kernels/mve/avg_pool2d.c",)},
    "quantized_batch_matmul": {
        "ops": ("ops/batch_matmul.c", "kernels/weight_sums.c"),
        "c": ("kernels/c/linear.c", "kernels/c/dot_s8.c"), "dsp": ("kernels/dsp/linear.c",),
        "mve": ("kernels/mve/linear.c",)},
    "clone_dim_order": {
        "ops": ("ops/clone_dim_order.c",),
        "c": ("kernels/c/clone_dim_order.c",), "mve": ("kernels/mve/clone_dim_order.c",)},
    "quantized_add": {
        "ops": ("ops/quantized_add.c", "ops/broadcast.c", "kernels/broadcast_walk.c"),
        "c": ("kernels/c/quantized_add.c",), "dsp": ("kernels/dsp/quantized_add.c",),
        "mve": ("kernels/mve/quantized_add.c", "kernels/mve/quantized_add_table.c")},
    "quantized_mul": {
        "ops": ("ops/quantized_mul.c", "ops/broadcast.c", "kernels/broadcast_walk.c"),
        "c": ("kernels/c/quantized_mul.c",), "dsp": ("kernels/dsp/quantized_mul.c",),
        "mve": ("kernels/mve/quantized_mul.c",)},
    "quantized_div": {
        "ops": ("ops/quantized_div.c", "ops/broadcast.c", "kernels/broadcast_walk.c"),
        "c": ("kernels/c/quantized_div.c",)},
    "quantized_activation": {
        "ops": ("ops/quantized_activation.c",),
        "c": ("kernels/c/quantized_activation.c",), "mve": ("kernels/mve/quantized_activation.c",)},
    "minimum": {
        "ops": ("ops/minimum.c", "ops/broadcast.c", "kernels/broadcast_walk.c"),
        "c": ("kernels/c/minimum.c",), "mve": ("kernels/mve/minimum.c", "kernels/mve/minmax_accepts.c")},
    "maximum": {
        "ops": ("ops/maximum.c", "ops/broadcast.c", "kernels/broadcast_walk.c"),
        "c": ("kernels/c/maximum.c",), "mve": ("kernels/mve/maximum.c", "kernels/mve/minmax_accepts.c")},
    "softmax": {
        "ops": ("ops/softmax.c",),
        "c": ("kernels/c/softmax.c",)},
    "transpose": {
        "ops": ("ops/transpose.c", "ops/permutation.c"),
        "c": ("kernels/c/transpose.c",)},
    "permute_copy": {
        "ops": ("ops/permute_copy.c", "ops/permutation.c"),
        "c": ("kernels/c/transpose.c",)},
    "pad": {
        "ops": ("ops/pad.c", "ops/broadcast.c"),
        "c": ("kernels/c/pad.c",)},
    "cat": {
        "ops": ("ops/cat.c",),
        "c": ("kernels/c/cat.c",)},
    "clamp": {
        "ops": ("ops/clamp.c",),
        "c": ("kernels/c/clamp.c",), "mve": ("kernels/mve/clamp.c",)},
    "squeeze_copy": {
        "ops": ("ops/squeeze_copy.c", "ops/reshape.c"),
        "c": ("kernels/c/reshape_copy.c",)},
    "unsqueeze_copy": {
        "ops": ("ops/unsqueeze_copy.c", "ops/reshape.c"),
        "c": ("kernels/c/reshape_copy.c",)},
}
# Of an operator with several variants of one ISA, the files only one of them needs (by the variant's name in
# its ops/ file's list: its kernel's run function, variant_rows): a library leaves them out when no call of its
# program binds that variant (the others' files stay).
VARIANT_SOURCES = {
    "quantized_depthwise_conv2d": {
        "trt_depthwise_conv2d_mve": ("kernels/mve/depthwise_conv2d.c", "kernels/mve/conv2d.c"),   # trt_mve_fuse_pool
        "trt_depthwise_one_channel_mve": ("kernels/mve/depthwise_one_channel.c", "kernels/mve/conv2d.c"),
        "trt_depthwise_channels_mve": ("kernels/mve/depthwise_channels.c",),
        "trt_depthwise_conv2d_dsp": ("kernels/dsp/depthwise_conv2d.c",),
        "trt_depthwise_channels_dsp": ("kernels/dsp/depthwise_channels.c",),
        "trt_depthwise_long_window_dsp": ("kernels/dsp/depthwise_long_window.c",)},
    "quantized_add": {
        "trt_quantized_add_table_mve": ("kernels/mve/quantized_add_table.c",)},
}

# The _nhwc forms (ExecuTorch's explicit-layout flow) are defined in their legacy operator's ops/ file,
# with its bind step and variants: the same files.
for _legacy in ("quantized_conv2d", "quantized_depthwise_conv2d", "quantized_transpose_conv2d", "quantized_max_pool2d",
                "quantized_avg_pool2d"):
    OPERATOR_SOURCES[_legacy + "_nhwc"] = OPERATOR_SOURCES[_legacy]
VARIANT_SOURCES["quantized_depthwise_conv2d_nhwc"] = VARIANT_SOURCES["quantized_depthwise_conv2d"]
# Operators the runtime itself refers to (runtime.c keeps the raw int8 values a dequantize read).
RUNTIME_OPERATORS = ("dequantize_per_tensor",)

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


def program_facts(pte: Path, program: bytes) -> ProgramFacts:
    """Family, core and labels from the program's descriptor (T.json, tinyrps.descriptor)."""
    from .. import descriptor
    from ..pte import family_of_program
    described = descriptor.read(pte, program)
    if described is None:
        family = family_of_program(program, pte)
        if family != "cortex-m":
            raise UserError(_not_cortex_m(pte, family))
        raise UserError(f"{pte} has no descriptor {descriptor.path_of(pte).name} saying which core it was made for: "
                        "export it again with `tinyrps export`")
    if described.family != "cortex-m":
        raise UserError(_not_cortex_m(pte, described.family))
    core = described.info.core
    if find_core(core) is None:
        raise UserError(f"{pte} was made for core '{core}', which the runtime has no kernels for "
                        f"(cores: {', '.join(core_names())}): export it again with `tinyrps export`")
    return ProgramFacts(described.family, core, described.labels, described.sha256, described.description)


def _not_cortex_m(pte: Path, family) -> str:
    return (f"{pte} is not a Cortex-M program (its family: {family}); a library is made of one: export it with "
            "`tinyrps export --target cortex-m55` (or cortex-m33, cortex-m4)")


def native_facts(pte: Path) -> tuple:
    """(info, dump) of the program from the runtime built for this host: its inputs, outputs, kernel calls
    and plain-C arena, and the flatbuffer as the reader parses it. A program the runtime refuses is a
    UserError with the runtime's reason."""
    from ..firmware import build_firmware
    tool = build_firmware("native").tool("tinyrps-native")
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
    no current measurement."""
    from .. import measure
    measured = measure.read(pte) or measure.measure(pte)
    return measured["firmware"]


# --- the selection ---------------------------------------------------------------------------------

def runtime_rows(src: Path) -> list:
    """The rows of the runtime's operator list (ops/operators.def: symbol, name, overload, parameters)."""
    from ..firmware.operators import runtime_operators as rows
    return rows(src.parent)


def runtime_operators(src: Path) -> dict:
    """{operator name ("cortex_m::quantized_conv2d"): symbol ("quantized_conv2d")} of the runtime's operator
    list (ops/operators.def)."""
    return {row.name: row.symbol for row in runtime_rows(src)}


def select_operators(program_operators: list, src: Path) -> list:
    """The symbols of the operators a library needs: the program's, and those the runtime refers to."""
    rows = runtime_rows(src)
    known = {row.qualified: row.symbol for row in rows}
    symbols = []
    for full in program_operators:
        if full not in known:
            raise UserError(f"the runtime has no operator {full}: this program cannot be made into a library")
        symbols.append(known[full])
    for symbol in RUNTIME_OPERATORS:
        symbols.append(symbol)
    unlisted = [s for s in symbols if s not in OPERATOR_SOURCES]
    if unlisted:
        raise RuntimeError(f"OPERATOR_SOURCES has no files for {unlisted}: add them to tinyrps.deploy.library")
    symbols = with_siblings(symbols)
    return [row.symbol for row in rows if row.symbol in symbols]   # in the list's order


def with_siblings(symbols: list) -> list:
    """These operators and every other one their ops/ files define (a legacy form and its _nhwc one):
    the library's list must keep every operator its files define."""
    files = {OPERATOR_SOURCES[s]["ops"][0] for s in symbols}
    return list(dict.fromkeys([*symbols, *(s for s, f in OPERATOR_SOURCES.items() if f["ops"][0] in files)]))


def library_sources(symbols: list, isa_kernels: str, unbound: Optional[dict] = None) -> list:
    """The runtime's .c files (relative to firmware/src) of a library with these operators and kernels;
    without the files of the variants `unbound` names ({symbol: {variant name}}) that nothing kept needs."""
    files = list(RUNTIME_SOURCES)
    for symbol in symbols:
        dropped = set()
        for variant in (unbound or {}).get(symbol, ()):
            dropped.update(VARIANT_SOURCES.get(symbol, {}).get(variant, ()))
        kept = set()
        for variant, needs in VARIANT_SOURCES.get(symbol, {}).items():
            if variant not in (unbound or {}).get(symbol, ()):
                kept.update(needs)
        for kind in ("ops", "c", isa_kernels):
            files += [f for f in OPERATOR_SOURCES[symbol].get(kind, ()) if f not in dropped or f in kept]
    return list(dict.fromkeys(files))


def library_operator_list(list_source: str, symbols: list) -> str:
    """The runtime's ops/operators.def with only these operators' rows (the table, its declarations and
    the kernel parameters are made from it)."""
    def keep(match):
        return match.group(0) if match.group(1) in symbols else ""
    return re.sub(r"^TRT_OPERATOR\(\s*(\w+)\s*,[^\n]*\n", keep, list_source, flags=re.M)


def pasted_names(symbols: list) -> str:
    """The runtime's names of these operators that the preprocessor pastes together from their rows
    (operator_table.h): no source spells them, so runtime_names is given them to rename too."""
    return " ".join(f"trt_op_{s} trt_op_name_{s} trt_op_overload_{s}" for s in symbols)


def isa_only_operators(layers: list, symbols: list, src: Path, isa_kernels: str) -> list:
    """The operators whose every call of the program binds the core's ISA variant (the firmware's measured
    layers say which): on the core, the library leaves their plain-C kernels out."""
    by_name = runtime_operators(src)
    kernels = {}
    for layer in layers:
        kernels.setdefault(by_name.get(layer["op"]), set()).add(layer["kernels"])
    return [s for s in symbols if isa_kernels in OPERATOR_SOURCES[s] and kernels.get(s) == {isa_kernels}]


# The variant ISAs a firmware build of the ISA kernels compiles (src/kernels/isa.h: every core with
# Helium has the DSP extension too), in the order of the operators' lists.
FIRMWARE_ISAS = {"mve": ("mve", "dsp", "c"), "dsp": ("dsp", "c")}


def variant_rows(ops_source: str, symbol: str, path: str) -> list:
    """[(isa, name)] of operator `symbol`'s variant list in its ops/ file (tinyrps.firmware.operators)."""
    from ..firmware.operators import variant_rows as rows
    try:
        return rows(ops_source, symbol, path)
    except ValueError as e:
        raise RuntimeError(f"{e}: update tinyrps.deploy.library") from None


def bound_variants(layers: list, symbols: list, src: Path, isa_kernels: str) -> dict:
    """{symbol: {variant name}} the program's calls bind on the firmware of its core, from the measured
    layers: each names its variant's ISA and place in the operator's list as that firmware compiles it."""
    by_name = runtime_operators(src)
    bound = {s: set() for s in symbols}
    for layer in layers:
        symbol = by_name.get(layer["op"])
        if symbol not in bound:
            continue
        if "variant" not in layer:
            raise UserError("the measurement of the program names no kernel variant per layer: measure it again "
                            "with `tinyrps measure`")
        rel = OPERATOR_SOURCES[symbol]["ops"][0]
        rows = [r for r in variant_rows((src / rel).read_text(), symbol, rel) if r[0] in FIRMWARE_ISAS[isa_kernels]]
        index = layer["variant"]
        if not 0 <= index < len(rows) or rows[index][0] != layer["kernels"]:
            raise UserError(f"the firmware ran {layer['op']} with its variant {index} ('{layer['kernels']}'), which "
                            f"its sources do not list so: measure the program again with `tinyrps measure`")
        bound[symbol].add(rows[index][1])
    return bound


def unbound_isa_variants(bound: dict, symbols: list, src: Path, isa_kernels: str) -> dict:
    """{symbol: {variant name}} of the core's ISA variants no call of the program binds (an ops/ file's
    operators together: they share their list)."""
    unbound = {}
    for symbol in symbols:
        rel = OPERATOR_SOURCES[symbol]["ops"][0]
        sharing = [s for s in symbols if OPERATOR_SOURCES[s]["ops"][0] == rel]
        used = set().union(*(bound.get(s, set()) for s in sharing))
        names = {name for isa, name in variant_rows((src / rel).read_text(), symbol, rel) if isa == isa_kernels}
        if names - used:
            unbound[symbol] = names - used
    return unbound


def without_unbound_variants(ops_source: str, names: set, path: str) -> str:
    """An operator's ops/ file without the variant rows `names` (their adapters stay, unused: TRT_ADAPTER)."""
    from ..firmware.operators import VARIANT_ROW_OF
    text = ops_source
    for name in sorted(names):
        row = re.compile(VARIANT_ROW_OF.format(re.escape(name)) + r"\n?", re.M)
        text, n = row.subn("", text)
        if n != 1:
            raise RuntimeError(f"{path}: expected one variant row of {name}, found {n}: update tinyrps.deploy.library")
    return text


_PORTABLE_ROW = re.compile(r'^([ \t]*TRT_C_VARIANT\([^\n]*\)[ \t]*)$', re.M)


def without_portable_on_core(ops_source: str, isa_kernels: str, path: str) -> str:
    """An operator's ops/ file with its plain-C variant row compiled only where the ISA variant is not."""
    rows = _PORTABLE_ROW.findall(ops_source)
    if len(rows) != 1:
        raise RuntimeError(f"{path}: expected one plain-C variant row (TRT_C_VARIANT(...)), found {len(rows)}: "
                           "update tinyrps.deploy.library")
    have = f"TRT_HAVE_{isa_kernels.upper()}"
    text = _PORTABLE_ROW.sub(lambda m: f"#if !{have}   /* the program runs every call of this operator on the "
                                       f"{isa_kernels} kernels */\n{m.group(1)}\n#endif", ops_source)
    return text


def for_size(ops_source: str, rel: str) -> str:
    """A bind step's file (ops/) compiled for size whatever the integrator's optimisation, as the firmware's
    build compiles src/ops/ (load_code.h): it runs once per program, at load."""
    up = "../" * rel.count("/")
    return f'#include "{up}load_code.h"\nTRT_LOAD_CODE_BEGIN\n\n' + ops_source.rstrip("\n") + "\n\nTRT_LOAD_CODE_END\n"


def table_limits(dump: dict) -> dict:
    """The runtime's TRT_MAX_* limits set to what this program has (at least 1 each)."""
    plan = dump["plans"][0]
    values = plan["values"]
    calls = [call for chain in plan["chains"] for call in chain]

    def list_items(call, kinds=("int_list", "tensor_list")):
        return sum(len(values[a]["items"]) for a in call["args"]
                   if 0 <= a < len(values) and values[a]["kind"] in kinds)
    counts = {
        "TRT_MAX_VALUES": len(values),
        "TRT_MAX_OPERATORS": len(plan["operators"]),
        "TRT_MAX_KERNEL_CALLS": len(calls),
        # a Tensor[]'s tensors take kernel-argument slots after the call's own arguments
        "TRT_MAX_KERNEL_ARGS": max((len(c["args"]) + list_items(c, ("tensor_list",)) for c in calls), default=1),
        "TRT_MAX_CALL_LIST_ITEMS": max((list_items(c) for c in calls), default=1),
        "TRT_MAX_MEMORY_IDS": len(plan["memory_sizes"]),
        "TRT_MAX_INPUTS": len(plan["inputs"]),
        "TRT_MAX_OUTPUTS": len(plan["outputs"]),
    }
    return {k: max(1, v) for k, v in counts.items()}


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
    from ..pte import read_program
    name = check_name(name)
    out = check_out(out_dir)
    pte = Path(pte)
    program = read_program(pte)
    facts = program_facts(pte, program)
    info, dump = native_facts(pte)
    figures = board_figures(pte, facts.core)
    isa_kernels = get_core(facts.core).isa     # the ISA kernel variant the library carries beside plain C
    if figures.get("kernels") != isa_kernels:
        raise UserError(f"the firmware of {figures.get('board')} ran {pte.name} with the '{figures.get('kernels')}' "
                        f"kernels, not '{isa_kernels}': rebuild the firmware")
    fw = firmware_dir()
    src = fw / "src"
    operators = [f"{n}.{o}" if o else n for n, o in dump["plans"][0]["operators"]]
    symbols = select_operators(operators, src)
    isa_only = isa_only_operators(figures["layers"], symbols, src, isa_kernels)
    unbound = unbound_isa_variants(bound_variants(figures["layers"], symbols, src, isa_kernels), symbols, src, isa_kernels)
    sources = library_sources(symbols, isa_kernels, unbound)
    spec = library_files.LibrarySpec(
        name=name, facts=facts, program=program, program_name=pte.name, isa_kernels=isa_kernels, info=info,
        figures=figures, limits=table_limits(dump), operators=operators, symbols=symbols,
        arena={isa_kernels: figures["arena_bytes"], "c": info["arena_bytes"]}, version=tinyrps_version(),
        isa_only=isa_only, unbound={s: sorted(v) for s, v in unbound.items()})
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        runtime = staging / "src" / "runtime"
        _copy_runtime(fw, runtime, sources, symbols, isa_only, unbound, isa_kernels, name)
        texts = [p.read_text() for p in sorted(runtime.rglob("*")) if p.suffix in (".c", ".h")]
        spec.renamed = runtime_names(texts + [pasted_names(symbols)])
        spec.sources = ["src/" + name + ".c", "src/" + name + "_program.c"] + [f"src/runtime/{s}" for s in sources]
        library_files.write_all(staging, spec)
        spec.code = code_sizes(staging, spec)
        library_files.write_documents(staging, spec)
        _record_written(staging)
        kept = _keep_others(out, staging)
        _replace(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return {**json.loads((out / MANIFEST).read_text()), "kept": kept}


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


def _copy_runtime(fw: Path, dest: Path, sources: list, symbols: list, isa_only: list, unbound: dict, isa_kernels: str,
                  name: str) -> None:
    """The runtime's headers (all of them: the ops files include every variant's header) and the selected
    sources, each source with the library's build header first; the library's own operator table, and
    variant lists without the ISA variants no call of the program binds, and without plain C on the core
    where the program never binds it; isa.h with the library's kernel choice after the runtime's."""
    own_files = {OPERATOR_SOURCES[s]["ops"][0]: s for s in isa_only}
    left_out = {}
    for symbol, names in unbound.items():
        left_out.setdefault(OPERATOR_SOURCES[symbol]["ops"][0], set()).update(names)
    src = fw / "src"
    for header in sorted(src.rglob("*.h")):
        target = dest / header.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(header, target)
    shutil.copyfile(fw / "include" / "tinyrps_runtime.h", dest / "tinyrps_runtime.h")
    (dest / OPERATOR_LIST).write_text(library_operator_list((src / OPERATOR_LIST).read_text(), symbols))
    for rel in sources:
        text = (src / rel).read_text()
        if rel in left_out:
            text = without_unbound_variants(text, left_out[rel], rel)
        if rel in own_files:
            text = without_portable_on_core(text, isa_kernels, rel)
        if rel.startswith("ops/"):
            text = for_size(text, rel)
        depth = rel.count("/") + 1      # below src/runtime/
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(build_header_include(name, depth) + text)
    isa = dest / "kernels" / "isa.h"
    isa.write_text(isa.read_text() + isa_choice(isa_kernels))


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
    lines.append(f"  add it with CMake (add_subdirectory) or Make ({name}.mk): see {Path(out) / 'README.md'}")
    kept = manifest.get("kept") or []
    if kept:
        lines.append(f"  kept {len(kept)} file{'s' if len(kept) != 1 else ''} not written by tinyrps: "
                     + ", ".join(kept[:5]) + (", ..." if len(kept) > 5 else ""))
    return lines


# --- code size ------------------------------------------------------------------------------------------

ARM_GCC = "arm-none-eabi-gcc"
SIZE_OPTIMISATIONS = ("-Os", "-O2", "-O3")


def code_sizes(folder: Path, spec) -> dict:
    """{-Os: {...}, -O3: {...}} of the library linked into its example for the core, or {"missing": why}."""
    if shutil.which(ARM_GCC) is None:
        from ..firmware.build import APT_ARM
        return {"missing": f"{ARM_GCC} is not installed ({APT_ARM})"}
    return {opt: example_code_size(folder, spec.name, spec.facts.core, opt) for opt in SIZE_OPTIMISATIONS}


def cpu_flags(core: str) -> list:
    """-mcpu and friends for a core, as the firmware's toolchain file has them."""
    cpu = ["-march=armv8.1-m.main+mve.fp+fp.dp"] if core == "cortex-m85" else [f"-mcpu={core}"]
    return cpu + ["-mthumb", "-mfloat-abi=hard"]


def example_code_size(folder: Path, name: str, core: str, opt: str) -> dict:
    """Bytes of code and read-only data of example/main.c linked with the library for `core` (arm-none-eabi-gcc
    `opt`, -ffunction-sections -fdata-sections, --gc-sections), without the program's bytes: the library's
    objects, the libc and libgcc functions they pull in, and the example's own."""
    manifest = json.loads((folder / MANIFEST).read_text())
    flags = [*cpu_flags(core), opt, "-ffunction-sections", "-fdata-sections", *manifest["build"]["cflags"],
             f"-I{folder / 'include'}"]
    with temp_dir("size") as work:
        work = Path(work)
        stub = work / "print_stub.c"
        stub.write_text("volatile char example_sink;\n"
                        "void example_print(const char *line) { while (*line) example_sink = *line++; }\n")
        objects = {"example": [], "library": []}
        units = [("example", folder / "example" / "main.c"), ("example", stub)]
        units += [("library", folder / s) for s in manifest["build"]["sources"]]
        jobs = []
        for i, (kind, source) in enumerate(units):
            obj = work / kind / f"{i}_{source.stem}.o"
            obj.parent.mkdir(exist_ok=True)
            jobs.append([*flags, "-c", str(source), "-o", str(obj)])
            objects[kind].append(str(obj))
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:   # two cores
            list(pool.map(lambda job: _arm_gcc(job, core), jobs))
        map_file = work / "example.map"
        _arm_gcc([*cpu_flags(core), *objects["example"], *objects["library"], "-nostartfiles", "--specs=nano.specs",
                  "--specs=nosys.specs", "-Wl,--gc-sections", "-Wl,-e,main", f"-Wl,-Map={map_file}",
                  "-o", str(work / "example.elf")], core)
        sizes = map_section_sizes(map_file.read_text(), work, program_section=f".rodata.{name}_program")
    return {"compiler": f"{ARM_GCC} {_compiler_version()}", "flags": " ".join([*cpu_flags(core), opt]), **sizes}


def _arm_gcc(args: list, core: str) -> None:
    result = subprocess.run([ARM_GCC, *args], capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise RuntimeError(f"the library does not build for the {core}: {result.stderr.strip()[-2000:]}")


def _compiler_version() -> str:
    result = subprocess.run([ARM_GCC, "-dumpversion"], capture_output=True, text=True)
    return result.stdout.strip()


_MAP_ENTRY = re.compile(r"^ (\.(?:text|rodata|data|bss)[^\s]*)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(.+)$", re.M)


def map_section_sizes(map_text: str, work: Path, program_section: str) -> dict:
    """Code and read-only data the link kept, by origin (a GNU ld map file): the objects under work/library,
    under work/example, and the C library's and libgcc's archive members; the program's own section apart."""
    memory_map = map_text[map_text.index("Linker script and memory map"):]
    memory_map = re.sub(r"^ (\.\S+)\n\s+", r" \1 ", memory_map, flags=re.M)   # entries split over two lines
    totals = {"library": 0, "libc": 0, "example": 0, "program": 0, "library_text": 0, "library_ram": 0}
    for section, _address, size, origin in _MAP_ENTRY.findall(memory_map):
        size, origin = int(size, 16), origin.strip()
        if section.startswith((".data", ".bss")):
            if origin.startswith(str(work / "library")):
                totals["library_ram"] += size
        elif section == program_section:
            totals["program"] += size
        elif origin.startswith(str(work / "library")):
            totals["library"] += size
            totals["library_text"] += size if section.startswith(".text") else 0
        elif origin.startswith(str(work / "example")):
            totals["example"] += size
        else:
            totals["libc"] += size
    return {"library_bytes": totals["library"], "library_text_bytes": totals["library_text"],
            "library_rodata_bytes": totals["library"] - totals["library_text"], "libc_bytes": totals["libc"],
            "example_bytes": totals["example"], "program_bytes": totals["program"],
            "library_and_libc_bytes": totals["library"] + totals["libc"],
            "library_static_ram_bytes": totals["library_ram"]}
