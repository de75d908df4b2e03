"""What a build for one program keeps of the runtime (a deploy library, a program's firmware image).

Everything is read from the firmware's sources; nothing here lists an operator or a file:
- the operators: the program's rows of ops/operators.def, with every other operator their ops/ files
  define (a legacy form and its _nhwc one) and those the runtime's own sources refer to;
- the kernel variants: the rows of each kept ops/ file's variant list (tinyrps.firmware.operators)
  that the program's calls bind, from the firmware's measured layers;
- the .c files: those a linker would take, by name: the runtime's own (src/*.c) and the kept ops/
  files, then every file of ops/ and kernels/ (the shared folders, plain C and the ISA's) that
  defines a name a file already taken uses (source_closure).

The C compiles what is kept by ops/operator_selection.h alone (operator_table.h): a build for one
program has its own copy of that file, written by selection_header, and the runtime's other sources
as they are. Variants are named by their run function (TRT_USES_<run>); lists that share one
(transpose and permute_copy: trt_transpose_c) keep it together.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..infra.errors import UserError

SELECTION_HEADER = "ops/operator_selection.h"   # relative to firmware/src
LOADER = "runtime.c"                              # the runtime's API (tinyrps_runtime.h), the start of every build
IMAGE_HELPER = "image.c"                          # trt_infer (tinyrps_image.h): a classifier's library adds it
PUBLIC_HEADERS = ("tinyrps_runtime.h", "tinyrps_image.h")   # firmware/include, beside the sources in a library

# The variant ISAs a firmware build of the ISA kernels compiles (src/kernels/isa.h: every core with Helium
# has the DSP extension too), in the order of the operators' lists.
FIRMWARE_ISAS = {"mve": ("mve", "dsp", "c"), "dsp": ("dsp", "c"), "c": ("c",)}


# --- operators ----------------------------------------------------------------------------------------

def runtime_rows(src: Path) -> list:
    """The rows of the runtime's operator list (ops/operators.def: symbol, name, overload, parameters)."""
    from ..firmware.operators import runtime_operators as rows
    return rows(src.parent)


def runtime_operators(src: Path) -> dict:
    """{operator name ("cortex_m::quantized_conv2d"): symbol ("quantized_conv2d")} of operators.def."""
    return {row.name: row.symbol for row in runtime_rows(src)}


def operator_files(src: Path) -> dict:
    """{symbol: its ops/ file (relative to src)}: the file whose TRT_DEFINE_OPERATOR defines it."""
    from ..firmware.operators import DEFINE
    found = {}
    for path in sorted((src / "ops").glob("*.c")):
        for symbol, _ in DEFINE.findall(path.read_text()):
            found[symbol] = f"ops/{path.name}"
    missing = [row.symbol for row in runtime_rows(src) if row.symbol not in found]
    if missing:
        raise RuntimeError(f"no ops/ file defines {missing} (TRT_DEFINE_OPERATOR): the firmware's sources disagree")
    return found


def fusing_operators(src: Path) -> set:
    """The symbols of the operators that may take on the next call's work (TRT_DEFINE_FUSING_OPERATOR: their
    fuse_next, operator_table.h)."""
    fusing = re.compile(r"^TRT_DEFINE_FUSING_OPERATOR\(\s*(\w+)\s*,", re.M)
    return {s for path in sorted((src / "ops").glob("*.c")) for s in fusing.findall(path.read_text())}


def select_operators(program_operators: list, src: Path, isa: str) -> list:
    """The symbols of the operators a build for this program keeps, in operators.def's order: the
    program's, and every other one the files they need define (source_closure)."""
    rows = runtime_rows(src)
    known = {row.qualified: row.symbol for row in rows}
    unknown = [full for full in program_operators if full not in known]
    if unknown:
        raise UserError(f"the runtime has no operator {unknown[0]}: this program cannot be made into a library")
    files = operator_files(src)
    needed = set(source_closure(src, {files[known[full]]: 1 for full in program_operators}, isa))
    return [row.symbol for row in rows if files[row.symbol] in needed]


# --- variants -----------------------------------------------------------------------------------------

def variant_rows(ops_source: str, symbol: str, path: str) -> list:
    """[(isa, name)] of operator `symbol`'s variant list in its ops/ file (tinyrps.firmware.operators)."""
    from ..firmware.operators import variant_rows as rows
    try:
        return rows(ops_source, symbol, path)
    except ValueError as e:
        raise RuntimeError(f"{e}: the firmware's sources disagree with tinyrps.firmware.operators") from None


def file_rows(src: Path, symbols: list) -> dict:
    """{ops/ file: [(isa, name)]} of the kept operators' variant lists (operators of one file share it)."""
    files = operator_files(src)
    rows = {}
    for symbol in symbols:
        rel = files[symbol]
        if rel not in rows:
            rows[rel] = variant_rows((src / rel).read_text(), symbol, rel)
    return rows


def bound_variants(layers: list, symbols: list, src: Path, isa: str) -> dict:
    """{ops/ file: {variant name}} the program's calls bind on the firmware of its core, from the measured
    layers: each names its variant's ISA and place in the operator's list as that firmware compiles it."""
    by_name, files = runtime_operators(src), operator_files(src)
    rows = file_rows(src, symbols)
    bound = {rel: set() for rel in rows}
    for layer in layers:
        symbol = by_name.get(layer["op"])
        if symbol not in symbols:
            continue
        if "variant" not in layer:
            raise UserError("the measurement of the program names no kernel variant per layer: measure it again "
                            "with `tinyrps measure`")
        compiled = [r for r in rows[files[symbol]] if r[0] in FIRMWARE_ISAS[isa]]
        index = layer["variant"]
        if not 0 <= index < len(compiled) or compiled[index][0] != layer["kernels"]:
            raise UserError(f"the firmware ran {layer['op']} with its variant {index} ('{layer['kernels']}'), which "
                            f"its sources do not list so: measure the program again with `tinyrps measure`")
        bound[files[symbol]].add(compiled[index][1])
    return bound


def kernels_by_file(layers: list, symbols: list, src: Path) -> dict:
    """{ops/ file: {the kernel sets ("mve", "c") its operators' calls ran with}}."""
    by_name, files = runtime_operators(src), operator_files(src)
    kinds = {}
    for layer in layers:
        symbol = by_name.get(layer["op"])
        if symbol in symbols:
            kinds.setdefault(files[symbol], set()).add(layer["kernels"])
    return kinds


@dataclass(frozen=True)
class Selection:
    """What a build keeps: operators (symbols, operators.def order), variants (run function names) and
    the plain-C variants kept only where the ISA's kernels are not compiled (a library on a PC)."""
    symbols: tuple
    variants: tuple
    portable_off_core: tuple = ()
    isa: str = ""

    def left_out(self, src: Path) -> dict:
        """{symbol: [variant]} of the ISA's variants the kept operators list and the build leaves out."""
        files = operator_files(src)
        rows = file_rows(src, list(self.symbols))
        out = {s: sorted(n for i, n in rows[files[s]] if i == self.isa and n not in self.variants)
               for s in self.symbols}
        return {s: names for s, names in out.items() if names}


def library_selection(layers: list, symbols: list, src: Path, isa: str) -> Selection:
    """A library's: of the ISA's variants, those a call binds; plain C for every operator, on the core
    only for those whose calls do not all run on the ISA's kernels."""
    bound = bound_variants(layers, symbols, src, isa)
    kinds = kernels_by_file(layers, symbols, src)
    keep, off_core = [], []
    for rel, rows in file_rows(src, symbols).items():
        for row_isa, name in rows:
            if row_isa == isa and name in bound[rel]:
                keep.append(name)
            elif row_isa == "c":
                (off_core if kinds.get(rel) == {isa} and any(i == isa for i, _ in rows) else keep).append(name)
    return Selection(tuple(symbols), _unique(keep), _unique(off_core), isa)


def image_selection(layers: list, symbols: list, src: Path, isa: str) -> Selection:
    """A program's firmware image's: per kept list, the rows its calls bind (of every ISA the build
    compiles, plain C included); a list no call binds (a sibling, dequantize) is kept whole."""
    bound = bound_variants(layers, symbols, src, isa)
    keep = []
    for rel, rows in file_rows(src, symbols).items():
        keep += [name for _, name in rows if name in bound[rel] or not bound[rel]]
    return Selection(tuple(symbols), _unique(keep), (), isa)


def _unique(names: list) -> tuple:
    return tuple(dict.fromkeys(names))


def selection_header(selection: Selection) -> str:
    """ops/operator_selection.h of a build for one program (the firmware's own keeps everything)."""
    from .library_files import fill
    return fill("operator_selection.h", {
        "operators": "\n".join(f"#define TRT_WITH_{s} 1" for s in selection.symbols),
        "variants": "\n".join(f"#define TRT_USES_{v} 1" for v in selection.variants),
        "portable": "\n".join(f"#define TRT_USES_{v} 1" for v in selection.portable_off_core) or "/* none */",
        "isa_test": f"!TRT_HAVE_{selection.isa.upper()}" if selection.isa not in ("", "c") else "1",
    })


# --- files ----------------------------------------------------------------------------------------------

_COMMENTS_AND_LITERALS = re.compile(r"""//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'""", re.S)
_DIRECTIVE = re.compile(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.M)
_IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*\b")
_ATTRIBUTE = re.compile(r"__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)")


# The firmware's build options a build for one program is made without (firmware/CMakeLists.txt): the
# code under `#if` of one is not compiled there.
OPTIONS_OFF = ("TRT_ETHOS_U", "TRT_IMAGE_INT8")


def code_of(text: str, options_off: tuple = OPTIONS_OFF) -> str:
    """C text without comments, literals, preprocessor lines and the code under `#if` of options_off."""
    return _DIRECTIVE.sub(" ", _without_options_off(_COMMENTS_AND_LITERALS.sub(" ", text), options_off))


def _without_options_off(text: str, options_off: tuple) -> str:
    kept, depth, off = [], 0, None       # off: the depth of the #if being left out
    for line in text.split("\n"):
        directive = re.match(r"\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b\s*(\w*)", line)
        if directive and directive.group(1).startswith("if"):
            depth += 1
            if off is None and directive.group(1) in ("if", "ifdef") and directive.group(2) in options_off:
                off = depth
        elif directive and directive.group(1) in ("elif", "else") and off == depth:
            off = None
        elif directive and directive.group(1) == "endif":
            off = None if off == depth else off
            depth -= 1
        kept.append(line if off is None else "")
    return "\n".join(kept)


def external_definitions(text: str, options_off: tuple = OPTIONS_OFF) -> set:
    """The names a C file defines with external linkage: its file-scope definitions (a body or an
    initializer, or storage: `int x;`) that are not static, typedef or extern, and the trt_op_<symbol>
    objects of its TRT_DEFINE_OPERATOR lines."""
    from ..firmware.operators import DEFINE
    code = _ATTRIBUTE.sub(" ", code_of(text, options_off))
    names = {f"trt_op_{symbol}" for symbol, _ in DEFINE.findall(text)}
    depth, start, function = 0, 0, False
    for i, char in enumerate(code):
        if depth == 0 and char in "{;":
            statement = code[start:i].strip()
            names |= _defined(statement, body=char == "{")
            function = char == "{" and "(" in statement.split("=")[0] and "=" not in statement
        if char in "{(":
            depth += 1
        elif char in "})":
            depth -= 1
        # the end of a function's body or of a declaration, or a macro's use at file scope (TRT_RUN(...));
        # a struct's or an initializer's braces go on to the declaration's `;`
        if depth == 0 and (char == ";" or char == "}" and function or
                           char == ")" and re.match(r"\s*[A-Za-z_]", code[i + 1:i + 40])):
            start = i + 1
    return names


_NOT_EXTERNAL = ("static", "typedef", "extern", "struct", "union", "enum", "TRT_ADAPTER")


def _defined(statement: str, body: bool) -> set:
    """The name one file-scope declaration defines for the linker (see external_definitions)."""
    if not statement or statement.split()[0] in _NOT_EXTERNAL:
        return set()
    head = statement.split("=")[0]
    if "=" not in statement and "(" in head:
        match = re.search(r"(\w+)\s*\(", head) if body else None     # a function's definition, or a prototype
    else:
        match = re.search(r"(\w+)\s*(?:\[[^\]]*\]\s*)*$", head.strip())
    return {match.group(1)} if match else set()


def candidate_files(src: Path, isa: str) -> list:
    """The .c files a build for `isa` may take (relative to src): the runtime's, ops/, kernels/ and
    its plain-C and ISA kernel folders."""
    folders = [src, src / "ops", src / "kernels", src / "kernels" / "c", src / "kernels" / isa]
    return [p.relative_to(src).as_posix() for folder in folders for p in sorted(folder.glob("*.c"))]


def source_closure(src: Path, roots, isa: str, variants=None, options_off: tuple = OPTIONS_OFF) -> list:
    """The .c files a build needs (relative to src): the runtime's own (runtime.c and the src/*.c it uses,
    by name order) and `roots`, and every
    candidate that defines a name a needed file uses; in the order they are found (each root after
    what the ones before it need), the order the library links them in. An operator's
    ops/ file is taken only when named in roots or used by name (trt_op_<symbol>). With `variants`
    (the kept rows' names), an ops/ file uses only what its kept rows use (ops_references). The code under
    `#if` of options_off is not compiled (a library of an Ethos-U program has TRT_ETHOS_U on)."""
    texts = {rel: (src / rel).read_text() for rel in candidate_files(src, isa)}
    definer = {}
    for rel, text in texts.items():
        for name in external_definitions(text, options_off):
            if name in definer:
                raise RuntimeError(f"{name} is defined in both {definer[name]} and {rel}")
            definer[name] = rel
    defines_operator = set(operator_files(src).values())
    order = list(texts)
    loader = set(_IDENTIFIER.findall(code_of(texts[LOADER], options_off)))
    own = [rel for rel in texts if "/" not in rel and
           (rel == LOADER or external_definitions(texts[rel], options_off) & loader)]
    walk, pending, done = own, [r for r in roots if r in texts], 0
    while done < len(walk) or pending:
        if done == len(walk):
            root = pending.pop(0)
            walk += [root] if root not in walk else []
            continue
        rel = walk[done]
        if variants is not None and rel in defines_operator:
            used = ops_references(texts[rel], set(variants))
        else:
            used = set(_IDENTIFIER.findall(code_of(texts[rel], options_off)))
        # a root found before its turn waits for it: each root comes after what the ones before it need
        walk += sorted({definer[n] for n in used if n in definer} - set(walk) - set(pending), key=order.index)
        done += 1
    return walk


_ROW = re.compile(r"^[ \t]*TRT_(?:MVE|DSP|C)_VARIANT\(\s*(\w+)\s*,([^\n]*)\)[ \t]*$", re.M)
_ADAPTER_USE = re.compile(r"^[ \t]*(TRT_ACCEPTS|TRT_BYTES|TRT_PREPARE|TRT_RUN|TRT_RUN_ALONE|TRT_ALL_ENTRY_POINTS)"
                          r"\(\s*(\w+)\s*,\s*(\w+)[^\n]*$", re.M)
_ADAPTER_FUNCTION = re.compile(r"\bTRT_ADAPTER\b[^;{(]*?\b(\w+)\s*\(")
_ENTRY_POINTS = ("accepts", "scratch_bytes", "prepare", "temp_bytes")


def ops_references(text: str, variants: set) -> set:
    """The names an ops/ file uses when its variant list holds only the rows named in `variants`: its
    code outside the rows and the adapters (operator_table.h), its kept rows, and the adapters they
    use, each adapter with what it adapts."""
    code, pieces, used = code_of(text), [], set()
    for match in _ROW.finditer(code):
        if match.group(1) in variants:
            used |= {match.group(1) + "_p", *_IDENTIFIER.findall(match.group(2))}
            used |= {f"{prefix}_{e}_p" for prefix in re.findall(r"TRT_ENTRY_POINTS_OF\(\s*(\w+)", match.group(2))
                     for e in _ENTRY_POINTS}
    for match in _ADAPTER_USE.finditer(code):
        kind, first, second = match.groups()
        if kind == "TRT_ALL_ENTRY_POINTS":
            pieces.append(({f"{first}_{e}_p" for e in _ENTRY_POINTS} | {second + "_p"},
                           {f"{first}_{e}" for e in _ENTRY_POINTS} | {second}))
        else:
            pieces.append(({first + "_p"}, {first}))
    rest = _ROW.sub(" ", _ADAPTER_USE.sub(" ", code))
    for match in list(_ADAPTER_FUNCTION.finditer(rest))[::-1]:
        end = _body_end(rest, rest.index("{", match.end()))
        pieces.append(({match.group(1)}, set(_IDENTIFIER.findall(rest[match.end():end]))))
        rest = rest[:match.start()] + " " + rest[end:]
    used |= set(_IDENTIFIER.findall(rest))
    grown = True
    while grown:                # adapters that kept adapters use (batch_matmul.c: linear_mve)
        grown = False
        for defines, uses in pieces:
            if defines & used and not uses <= used:
                used |= uses
                grown = True
    return used


def _body_end(code: str, opening: int) -> int:
    depth = 0
    for i in range(opening, len(code)):
        depth += {"{": 1, "}": -1}.get(code[i], 0)
        if depth == 0:
            return i + 1
    raise RuntimeError("unbalanced braces")
