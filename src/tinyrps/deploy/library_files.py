"""The text of a deploy library's files: C sources and header, build files, example, README, manifest.

tinyrps.deploy.library decides what goes in (LibrarySpec); this module only writes it.
Macros use NAME upper-cased (TINYRPS_MODEL_ARENA_BYTES), functions NAME as given
(tinyrps_model_init).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

# The dtypes of the runtime (tinyrps_runtime.h, TRT_DTYPE_LIST): name -> (ScalarType code, C type).
C_TYPES = {"uint8": (0, "uint8_t"), "int8": (1, "int8_t"), "int16": (2, "int16_t"), "int32": (3, "int32_t"),
           "int64": (4, "int64_t"), "float32": (6, "float"), "float64": (7, "double"), "bool": (11, "uint8_t")}
IMAGE_SIDE = 28
EXAMPLE_SEED = 7   # the example's picture: tinyrps.data.render with this seed
MANIFEST = "manifest.json"
MANIFEST_KIND = "tinyrps deploy library"   # what marks a folder this command wrote (and may replace)


@dataclass
class LibrarySpec:
    name: str
    facts: object              # library.ProgramFacts
    program: bytes
    program_name: str
    isa_kernels: str                  # "mve" or "dsp"
    info: dict                 # tinyrps-native info
    figures: dict              # the firmware's measurement on the core's board
    limits: dict               # TRT_MAX_* -> value
    operators: list            # the program's operators ("cortex_m::quantized_conv2d.out")
    symbols: list              # the runtime operators in the library
    arena: dict                # kernel set -> arena bytes
    version: str
    renamed: list = field(default_factory=list)
    sources: list = field(default_factory=list)
    code: dict = field(default_factory=dict)
    example: Optional[dict] = None
    isa_only: list = field(default_factory=list)   # operators without plain C on the core
    unbound: dict = field(default_factory=dict)     # symbol -> the ISA variants left out (no call binds them)

    @property
    def macro(self) -> str:
        return self.name.upper()

    @property
    def classifier(self) -> bool:
        """An RPS classifier: labels, one 28x28 float32 input, one float32 output of one value per label."""
        ins, outs = self.info["inputs"], self.info["outputs"]
        return bool(self.facts.labels) and len(ins) == 1 and len(outs) == 1 and \
            ins[0]["dtype"] == "float32" and ins[0]["shape"] == [1, 1, IMAGE_SIDE, IMAGE_SIDE] and \
            outs[0]["dtype"] == "float32" and _numel(outs[0]["shape"]) == len(self.facts.labels)

    @property
    def layers(self) -> list:
        return self.figures["layers"]

    @property
    def board(self) -> str:
        return self.figures["board"]


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def c_list(items) -> str:
    return "{" + ", ".join(str(i) for i in items) + "}"


# --- small pieces the copy of the runtime takes ---------------------------------------------------------

def build_header_include(name: str, depth: int) -> str:
    """The first line of every runtime source in the library: its names and limits."""
    return f'#include "{"../" * depth}{name}_build.h"  /* the library\'s names and limits (generated) */\n'


def isa_choice(isa_kernels: str) -> str:
    """What follows the runtime's isa.h in the library: the core's ISA variant and plain C, nothing else."""
    other = {"mve": "DSP", "dsp": "MVE"}[isa_kernels]
    return (f"\n/* This library carries the {isa_kernels.upper()} and plain-C kernels only (tinyrps deploy library): */\n"
            f"#undef TRT_HAVE_{other}\n#define TRT_HAVE_{other} 0\n")


def isa_feature_test(isa_kernels: str) -> str:
    """The preprocessor test isa.h makes for the variant (kernels/isa.h: TRT_HAVE_MVE, TRT_HAVE_DSP)."""
    return {"mve": "defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)",
            "dsp": "defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP"}[isa_kernels]


def runtime_statuses(runtime_header: str) -> list:
    """(name, value, text) of the runtime's TRT_STATUS_LIST."""
    return [(n, int(v), t) for n, v, t in
            re.findall(r"X\((TRT_[A-Z_]+),\s*(-?\d+),\s*\"([^\"]*)\"\)", runtime_header)]


# --- writing -------------------------------------------------------------------------------------------------

def write_all(folder: Path, spec: LibrarySpec) -> None:
    """Every file but the README (which quotes the code size measured on these files)."""
    from ..firmware import firmware_dir
    runtime_header = (firmware_dir() / "include" / "tinyrps_runtime.h").read_text()
    if spec.classifier:
        spec.example = example_picture(spec)
    files = {
        f"src/{spec.name}_build.h": build_header(spec),
        f"include/{spec.name}.h": public_header(spec, runtime_statuses(runtime_header)),
        f"src/{spec.name}.c": api_source(spec),
        f"src/{spec.name}_program.c": program_source(spec),
        "CMakeLists.txt": cmake_lists(spec),
        f"{spec.name}.mk": make_fragment(spec),
        "example/main.c": example_source(spec),
    }
    for rel, text in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    write_manifest(folder, spec)


def write_documents(folder: Path, spec: LibrarySpec) -> None:
    (folder / "README.md").write_text(readme(spec))
    write_manifest(folder, spec)


LIBRARY_CFLAGS = ("-ffp-contract=off",)


def write_manifest(folder: Path, spec: LibrarySpec) -> None:
    figures = spec.figures
    manifest = {
        "kind": MANIFEST_KIND,
        "tinyrps_version": spec.version,
        "name": spec.name,
        "program": {"file": spec.program_name, "sha256": spec.facts.sha256, "bytes": len(spec.program),
                    "core": spec.facts.core, "description": spec.facts.description},
        "labels": list(spec.facts.labels) if spec.classifier else None,
        "inputs": spec.info["inputs"],
        "outputs": spec.info["outputs"],
        "kernels": {"isa": spec.isa_kernels, "portable": "c",
                    "without_portable_on_core": spec.isa_only, "isa_variants_left_out": spec.unbound},
        "operators": spec.operators,
        "runtime_operators": spec.symbols,
        "layers": [{"op": layer["op"], "kernels_on_core": layer["kernels"], "macs": layer["macs"],
                    "instructions": layer["instructions"]} for layer in spec.layers],
        "arena_bytes": spec.arena,
        "limits": spec.limits,
        "build": {"sources": spec.sources, "include_dirs": ["include"], "cflags": list(LIBRARY_CFLAGS)},
        "code": spec.code,
        "board": {"name": figures["board"], "instructions_per_inference": figures["instructions_per_inference"],
                  "instructions_per_inference_plain_c": figures.get("instructions_per_inference_plain_c"),
                  "macs": figures.get("macs"), "emulator": figures.get("emulator"),
                  "measured": "the tinyrps firmware on QEMU -icount shift=0 (instructions, not cycles)"},
        "example": spec.example,
        "renamed_runtime_names": len(spec.renamed),
    }
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")


# --- src/NAME_build.h -------------------------------------------------------------------------------------

def build_header(spec: LibrarySpec) -> str:
    n, m = spec.name, spec.macro
    limits = "\n".join(f"#define {k} {v}" for k, v in spec.limits.items())
    renames = "\n".join(f"#define {r} {n}_{r}" for r in spec.renamed)
    return f"""/*
 * {n}: what every source of the library sees first (generated by tinyrps deploy library).
 *
 * - the runtime's tables sized for this program: a program with more of anything (a corrupted
 *   one) is refused with TRT_ERR_LIMIT;
 * - no load-time reasons (TRT_LOAD_DETAIL=0): {n}_init returns the status alone;
 * - every name of the runtime renamed {n}_<name>, so that nothing this library defines can meet
 *   another library's names or the application's.
 */
#ifndef {m}_BUILD_H
#define {m}_BUILD_H

{limits}

#ifndef TRT_LOAD_DETAIL
#define TRT_LOAD_DETAIL 0
#endif

{renames}

/* ISO C wants a declaration in every translation unit, and the file of a kernel variant that a
 * build does not compile (Helium code built for a PC) has none of its own. */
typedef int {n}_translation_unit;

#endif
"""


# --- include/NAME.h -----------------------------------------------------------------------------------------

def _tensor_macros(m: str, kind: str, tensors: list) -> str:
    lines = [f"#define {m}_{kind}_COUNT {len(tensors)}"]
    for i, t in enumerate(tensors):
        code, ctype = C_TYPES[t["dtype"]]
        p = f"{m}_{kind}{i}"
        lines += [f"#define {p}_DTYPE {c_string(t['dtype'])}",
                  f"#define {p}_DTYPE_CODE {code}      /* ExecuTorch ScalarType */",
                  f"#define {p}_TYPE {ctype}",
                  f"#define {p}_RANK {len(t['shape'])}",
                  f"#define {p}_SHAPE {c_list(t['shape'])}",
                  f"#define {p}_DIM_ORDER {c_list(t['dim_order'])}",
                  f"#define {p}_NUMEL {_numel(t['shape'])}u",
                  f"#define {p}_BYTES {t['nbytes']}u"]
    p = f"{m}_{kind}0"
    lines += [f"/* {kind.lower()} 0 under short names */"]
    lines += [f"#define {m}_{kind}_{what} {p}_{what}" for what in ("DTYPE", "TYPE", "SHAPE", "NUMEL", "BYTES")]
    return "\n".join(lines)


def public_header(spec: LibrarySpec, statuses: list) -> str:
    n, m, facts = spec.name, spec.macro, spec.facts
    statuses_text = "\n".join(f"#define {m}_{status[4:]} {f'({value})' if value else '0'}    /* {text} */"
                              for status, value, text in statuses)
    layers = spec.layers
    ops = ", ".join(c_string(layer["op"]) for layer in layers)
    kernels = ", ".join(c_string(layer["kernels"]) for layer in layers)
    macs = ", ".join(f"{layer['macs']}u" for layer in layers)
    isa_kernels = spec.isa_kernels
    classify = ""
    if spec.classifier:
        labels = facts.labels
        classify = f"""
/* ---- the rock-paper-scissors classifier -------------------------------------------------------- */

#define {m}_LABEL_COUNT {len(labels)}
#define {m}_LABELS {{{", ".join(c_string(x) for x in labels)}}}
#define {m}_IMAGE_SIDE {IMAGE_SIDE}
#define {m}_IMAGE_BYTES ({m}_IMAGE_SIDE * {m}_IMAGE_SIDE)

/* Classify a 28x28 grayscale picture (row-major, one byte a pixel; the program's input is
 * pixel / 255.0f). logits (may be NULL) receives the {len(labels)} scores; returns the label index of the
 * highest (the first of equal ones) or a negative status. */
int {n}_classify(const uint8_t image[{m}_IMAGE_BYTES], float logits[{m}_LABEL_COUNT]);

/* "{labels[0]}", ... for a label index; NULL outside 0 .. {m}_LABEL_COUNT - 1. */
const char *{n}_label(int index);
"""
    return f"""/*
 * {n}: an int8 Cortex-M program as a C library (generated by tinyrps deploy library, tinyrps {spec.version}).
 *
 * The program: {spec.program_name}, {len(spec.program):,} bytes, sha256 {facts.sha256},
 * made for the {facts.core}: {facts.description}.
 *
 * C99, no heap, no I/O. The application gives the memory: an arena of {m}_ARENA_BYTES bytes,
 * 16-byte aligned, which holds every activation; the library's own static data is its program
 * tables. The program stays in place (const, its own section: src/{n}_program.c).
 *
 *     static uint8_t arena[{m}_ARENA_BYTES] {m}_ALIGN16;
 *     if ({n}_init(arena, sizeof arena) != {m}_OK) ...        (once)
 *     {n}_run(input, output);                                  (each inference)
 *
 * Functions return {m}_OK (0) or a negative status, named by {n}_status_name, except where said.
 * Calls are not reentrant: one inference at a time.
 */
#ifndef {m}_H
#define {m}_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {{
#endif

/* ---- the program ------------------------------------------------------------------------------ */

#define {m}_SHA256 {c_string(facts.sha256)}
#define {m}_CORE {c_string(facts.core)}
#define {m}_PROGRAM_BYTES {len(spec.program)}u
#define {m}_TINYRPS_VERSION {c_string(spec.version)}

/* The program's bytes (src/{n}_program.c), in the section {m}_PROGRAM_SECTION names. */
extern const uint8_t {n}_program[{m}_PROGRAM_BYTES];

/* Its kernel calls ("layers"), in order: operator, the kernel variant each runs with on the
 * {facts.core} ("{isa_kernels}": {"Helium" if isa_kernels == "mve" else "the DSP extension"}; "c": portable C),
 * multiply-accumulates per inference. */
#define {m}_LAYER_COUNT {len(layers)}
#define {m}_LAYER_OPS {{{ops}}}
#define {m}_LAYER_KERNELS_ON_CORE {{{kernels}}}
#define {m}_LAYER_MACS {{{macs}}}

/* ---- memory ------------------------------------------------------------------------------------- */

/* The arena the program needs, exactly: it depends on the kernels the build runs, the core's ISA
 * ones when the compiler targets them (the same test as the library's src/runtime/kernels/isa.h),
 * else portable C (a PC, or the core without them). */
#if {isa_feature_test(isa_kernels)}
#define {m}_KERNELS {c_string(isa_kernels)}
#define {m}_ARENA_BYTES {spec.arena[isa_kernels]}u
#else
#define {m}_KERNELS "c"
#define {m}_ARENA_BYTES {spec.arena["c"]}u
#endif

/* 16-byte alignment for the arena, with GCC and compilers that speak its attributes (clang, Arm
 * Compiler 6, IAR in extended mode); define {m}_ALIGN16 before this header for another compiler. */
#ifndef {m}_ALIGN16
#if defined(__GNUC__)
#define {m}_ALIGN16 __attribute__((aligned(16)))
#else
#define {m}_ALIGN16
#endif
#endif

/* ---- inputs and outputs ---------------------------------------------------------------------------
 * Each tensor's bytes are its elements in the order of its DIM_ORDER (the outermost dimension first;
 * dimensions of size 1 do not matter), little-endian, of its TYPE. */
{_tensor_macros(m, "INPUT", spec.info["inputs"])}
{_tensor_macros(m, "OUTPUT", spec.info["outputs"])}

/* ---- status ------------------------------------------------------------------------------------------- */

{statuses_text}

/* ---- use ---------------------------------------------------------------------------------------------- */

/* Load the program into the arena (arena_bytes >= {m}_ARENA_BYTES, 16-byte aligned): every offset,
 * size and parameter of the program is checked here, once. A smaller arena gives
 * {m}_ERR_ARENA_TOO_SMALL; a damaged program another negative status. May be called again. */
int {n}_init(void *arena, size_t arena_bytes);

/* One inference: input ({m}_INPUT_BYTES bytes) in, output ({m}_OUTPUT_BYTES bytes) out, in the
 * program's own dtypes. For a program of one input and one output; see {n}_run_all. */
int {n}_run(const void *input, void *output);

/* One inference of a program of any number of inputs and outputs: inputs[i] holds
 * {m}_INPUT<i>_BYTES bytes, outputs[i] receives {m}_OUTPUT<i>_BYTES bytes. */
int {n}_run_all(const void *const inputs[{m}_INPUT_COUNT], void *const outputs[{m}_OUTPUT_COUNT]);

/* The int8 values the program's final dequantize read for output `index` in the last inference
 * (what bit-exactness is checked on): *values points into the arena; returns their count, or a
 * negative status (the output has none). */
int {n}_output_int8(int index, const int8_t **values);

/* The text of a status ("arena too small"). */
const char *{n}_status_name(int status);
{classify}
/* ---- profile ------------------------------------------------------------------------------------------ */

/* A per-layer profile with the application's clock: while `now` is set (NULL: off, the default),
 * each inference records how far it advanced across each layer; {n}_profile reads the last
 * inference's counts (0 for layers that did not run). Costs two calls of `now` per layer. */
void {n}_set_counter(uint64_t (*now)(void));
int {n}_profile(uint64_t counts[{m}_LAYER_COUNT]);

/* The kernel variant layer `index` runs with in this build ("{isa_kernels}" or "c"); NULL before {n}_init. */
const char *{n}_layer_kernels(int index);

#ifdef __cplusplus
}}
#endif

#endif
"""


# --- src/NAME.c ------------------------------------------------------------------------------------------

def api_source(spec: LibrarySpec) -> str:
    n, m = spec.name, spec.macro
    ins = ", ".join(f"{{{C_TYPES[t['dtype']][0]}, {t['nbytes']}u}}" for t in spec.info["inputs"])
    outs = ", ".join(f"{{{C_TYPES[t['dtype']][0]}, {t['nbytes']}u}}" for t in spec.info["outputs"])
    test, isa_kernels = isa_feature_test(spec.isa_kernels), spec.isa_kernels.upper()
    classify = ""
    if spec.classifier:
        classify = f"""
static const char *const LABELS[{m}_LABEL_COUNT] = {m}_LABELS;

int {n}_classify(const uint8_t image[{m}_IMAGE_BYTES], float logits[{m}_LABEL_COUNT]) {{
    float scores[{m}_LABEL_COUNT];
    size_t n_out = 0, n_q = 0;
    if (!program || !image) return TRT_ERR_BAD_INPUT;
    trt_status s = trt_infer(program, image, NULL, scores, {m}_LABEL_COUNT, &n_out, &n_q);
    if (s != TRT_OK) return (int)s;
    int best = 0;
    for (int i = 1; i < {m}_LABEL_COUNT; i++)
        if (scores[i] > scores[best]) best = i;
    if (logits) memcpy(logits, scores, sizeof scores);
    return best;
}}

const char *{n}_label(int index) {{ return index >= 0 && index < {m}_LABEL_COUNT ? LABELS[index] : NULL; }}
"""
    return f"""/*
 * {n}: the API of include/{n}.h over the tinyrps runtime (generated by tinyrps deploy library).
 */
#include "{n}_build.h"

#include <string.h>

#include "runtime/kernels/isa.h"
#include "runtime/tinyrps_runtime.h"
#include "../include/{n}.h"

/* The header's arena size is the one of the kernels the runtime compiles. */
#if ({test}) != (TRT_HAVE_{isa_kernels} != 0)
#error "include/{n}.h and src/runtime/kernels/isa.h disagree on the kernels: write the library again"
#endif

typedef struct {{
    int dtype;
    size_t bytes;
}} io_spec;

static const io_spec INPUTS[{m}_INPUT_COUNT] = {{{ins}}};
static const io_spec OUTPUTS[{m}_OUTPUT_COUNT] = {{{outs}}};

static trt_program_storage storage;
static trt_program *program;                /* NULL until {n}_init succeeds */
static uint64_t (*counter)(void);

/* The loaded program has the inputs and outputs this header describes (a damaged one might not:
 * the application's buffers are sized by the header). */
static int matches_header(const trt_program *p) {{
    trt_tensor_info t;
    if (trt_input_count(p) != {m}_INPUT_COUNT || trt_output_count(p) != {m}_OUTPUT_COUNT) return 0;
    for (int i = 0; i < {m}_INPUT_COUNT; i++)
        if (trt_input(p, i, &t) != TRT_OK || t.dtype != INPUTS[i].dtype || t.nbytes != INPUTS[i].bytes) return 0;
    for (int i = 0; i < {m}_OUTPUT_COUNT; i++)
        if (trt_output(p, i, &t) != TRT_OK || t.dtype != OUTPUTS[i].dtype || t.nbytes != OUTPUTS[i].bytes) return 0;
    return trt_call_count(p) == {m}_LAYER_COUNT;
}}

int {n}_init(void *arena, size_t arena_bytes) {{
    program = NULL;
    trt_program *p = trt_program_init(&storage);
    trt_status s = trt_load(p, {n}_program, {m}_PROGRAM_BYTES, (uint8_t *)arena, arena_bytes, NULL, 0);
    if (s != TRT_OK) return (int)s;
    if (!matches_header(p)) return TRT_ERR_BAD_TENSOR;
    trt_set_counter(p, counter);
    program = p;
    return TRT_OK;
}}

int {n}_run_all(const void *const inputs[{m}_INPUT_COUNT], void *const outputs[{m}_OUTPUT_COUNT]) {{
    trt_tensor_info t;
    if (!program || !inputs || !outputs) return TRT_ERR_BAD_INPUT;
    for (int i = 0; i < {m}_INPUT_COUNT; i++) {{
        if (!inputs[i] || trt_input(program, i, &t) != TRT_OK) return TRT_ERR_BAD_INPUT;
        memcpy(t.data, inputs[i], t.nbytes);
    }}
    trt_status s = trt_run(program);
    if (s != TRT_OK) return (int)s;
    for (int i = 0; i < {m}_OUTPUT_COUNT; i++) {{
        if (!outputs[i] || trt_output(program, i, &t) != TRT_OK) return TRT_ERR_BAD_INPUT;
        memcpy(outputs[i], t.data, t.nbytes);
    }}
    return TRT_OK;
}}

int {n}_run(const void *input, void *output) {{
    if ({m}_INPUT_COUNT != 1 || {m}_OUTPUT_COUNT != 1) return TRT_ERR_BAD_INPUT;
    const void *inputs[1];
    void *outputs[1];
    inputs[0] = input;
    outputs[0] = output;
    return {n}_run_all(inputs, outputs);
}}

int {n}_output_int8(int index, const int8_t **values) {{
    size_t count = 0;
    if (!program || !values) return TRT_ERR_BAD_INPUT;
    trt_status s = trt_output_int8(program, index, values, &count);
    return s == TRT_OK ? (int)count : (int)s;
}}

const char *{n}_status_name(int status) {{ return trt_status_name((trt_status)status); }}
{classify}
void {n}_set_counter(uint64_t (*now)(void)) {{
    counter = now;
    if (program) trt_set_counter(program, now);
}}

int {n}_profile(uint64_t counts[{m}_LAYER_COUNT]) {{
    uint64_t macs;
    if (!program || !counts) return TRT_ERR_BAD_INPUT;
    for (int i = 0; i < {m}_LAYER_COUNT; i++)
        if (trt_call_profile(program, i, &counts[i], &macs) != TRT_OK) return TRT_ERR_BAD_INPUT;
    return TRT_OK;
}}

const char *{n}_layer_kernels(int index) {{ return program ? trt_call_variant(program, index) : NULL; }}
"""


# --- src/NAME_program.c ------------------------------------------------------------------------------------

def program_source(spec: LibrarySpec) -> str:
    n, m = spec.name, spec.macro
    rows = []
    data = spec.program
    for i in range(0, len(data), 24):
        rows.append("    " + ",".join(str(b) for b in data[i:i + 24]) + ",")
    body = "\n".join(rows)
    return f"""/*
 * The program {spec.program_name} (sha256 {spec.facts.sha256}), used in place by {n}_init.
 *
 * It must be 16-byte aligned (its constants are read in place as int32 and wider). It goes in
 * the section {m}_PROGRAM_SECTION (default ".rodata.{n}_program", which a linker script's
 * `*(.rodata.*)` already takes), so a linker script may put it anywhere readable, e.g.
 *     .model : {{ KEEP(*(.rodata.{n}_program)) }} > EXTERNAL_FLASH
 * For a compiler without GCC's attributes, define {m}_PROGRAM_PLACEMENT to what aligns it.
 */
#include "../include/{n}.h"

#ifndef {m}_PROGRAM_SECTION
#define {m}_PROGRAM_SECTION ".rodata.{n}_program"
#endif

#ifndef {m}_PROGRAM_PLACEMENT
#if defined(__GNUC__) && defined(__ELF__)
#define {m}_PROGRAM_PLACEMENT __attribute__((section({m}_PROGRAM_SECTION), aligned(16)))
#elif defined(__GNUC__)
#define {m}_PROGRAM_PLACEMENT __attribute__((aligned(16)))
#else
#define {m}_PROGRAM_PLACEMENT
#endif
#endif

const uint8_t {n}_program[{m}_PROGRAM_BYTES] {m}_PROGRAM_PLACEMENT = {{
{body}
}};
"""


# --- build files -------------------------------------------------------------------------------------------

def cmake_lists(spec: LibrarySpec) -> str:
    n = spec.name
    sources = "\n".join(f"  {s}" for s in spec.sources)
    return f"""# {n}: the program {spec.facts.sha256[:12]} ({spec.facts.core}) as a static library, generated by
# tinyrps deploy library {spec.version}. In the application's CMakeLists.txt:
#
#   add_subdirectory(path/to/{n})
#   target_link_libraries(app PRIVATE {n})      # {n}.h on app's include path, the library linked
#
# The application's toolchain decides -mcpu, optimisation and warnings; the library adds only
# what its results depend on.
cmake_minimum_required(VERSION 3.15)
project({n} LANGUAGES C)

add_library({n} STATIC
{sources}
)
target_include_directories({n} PUBLIC ${{CMAKE_CURRENT_SOURCE_DIR}}/include)
target_compile_features({n} PRIVATE c_std_99)
# float32 results round as the reference's do only without fused multiply-adds (GCC fuses by
# default outside the ISO C modes, clang within an expression).
target_compile_options({n} PRIVATE $<$<C_COMPILER_ID:GNU,Clang,AppleClang,ARMClang>:{' '.join(LIBRARY_CFLAGS)}>)
"""


def make_fragment(spec: LibrarySpec) -> str:
    n, m = spec.name, spec.macro
    sources = " \\\n".join(f"  $({m}_DIR)/{s}" for s in spec.sources)
    return f"""# {n}: the program {spec.facts.sha256[:12]} ({spec.facts.core}) for a plain Makefile, generated by
# tinyrps deploy library {spec.version}. In the application's Makefile:
#
#   include path/to/{n}/{n}.mk
#   SRCS   += $({m}_SRCS)
#   CFLAGS += $(addprefix -I,$({m}_INCS)) $({m}_CFLAGS)
#
# {m}_CFLAGS is what the library's results depend on (GCC and clang spelling): no fused
# multiply-adds. -mcpu, optimisation and warnings are the application's.
{m}_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
{m}_SRCS := \\
{sources}
{m}_INCS := $({m}_DIR)/include
{m}_CFLAGS := {' '.join(LIBRARY_CFLAGS)}
"""


# --- example/main.c ------------------------------------------------------------------------------------------

def example_picture(spec: LibrarySpec) -> dict:
    """A picture the program classifies right (one per label, tried in order), with the answer it gives, from
    the runtime on this host."""
    import subprocess
    import numpy as np

    from ..data import render
    from ..firmware import build_firmware
    from ..tempdirs import temp_dir
    tool = build_firmware("native").tool("tinyrps-native")
    labels = np.arange(len(spec.facts.labels))
    images = render(labels, np.random.default_rng(EXAMPLE_SEED))
    with temp_dir("example") as work:
        pte, images_file, out = Path(work) / "p.pte", Path(work) / "images.u8", Path(work) / "out.bin"
        pte.write_bytes(spec.program)
        np.ascontiguousarray(images, np.uint8).tofile(images_file)
        subprocess.run([str(tool), "infer", str(pte), str(images_file), str(out)], check=True, capture_output=True,
                       timeout=120)
        raw = out.read_bytes()
    k = len(labels)
    logits = np.frombuffer(raw[len(labels) * k:], np.float32).reshape(len(labels), k)
    answers = logits.argmax(axis=1)
    chosen = next((i for i in range(len(labels)) if answers[i] == labels[i]), 0)
    return {"label": spec.facts.labels[int(labels[chosen])], "answer": spec.facts.labels[int(answers[chosen])],
            "logits": [float(x) for x in logits[chosen]], "image": images[chosen].reshape(-1).tolist(),
            "seed": EXAMPLE_SEED}


EXAMPLE_FORMAT = """
/* Text without printf: a decimal integer, and a score in thousandths. */
static char *put_text(char *out, const char *text) {
    while (*text) *out++ = *text++;
    return out;
}

static char *put_int(char *out, long value) {
    char digits[24];
    int n = 0;
    unsigned long u = value < 0 ? 0ul - (unsigned long)value : (unsigned long)value;
    if (value < 0) *out++ = '-';
    do {
        digits[n++] = (char)('0' + u % 10u);
        u /= 10u;
    } while (u);
    while (n) *out++ = digits[--n];
    return out;
}

static char *put_score(char *out, double x) {
    long thousandths = (long)(x * 1000.0 + (x < 0 ? -0.5 : 0.5));
    if (thousandths < 0) {
        *out++ = '-';
        thousandths = -thousandths;
    }
    out = put_int(out, thousandths / 1000);
    *out++ = '.';
    *out++ = (char)('0' + thousandths / 100 % 10);
    *out++ = (char)('0' + thousandths / 10 % 10);
    *out++ = (char)('0' + thousandths % 10);
    return out;
}
"""


def example_source(spec: LibrarySpec) -> str:
    n, m = spec.name, spec.macro
    head = f"""/*
 * The smallest application of {n}: {"classify one picture" if spec.classifier else "one inference on zeros"}
 * and print the answer. The application around it supplies example_print (a UART, a log,
 * semihosting) and whatever starts main (its startup code, an RTOS task).
 */
#include <stdint.h>

#include "{n}.h"

/* One line of text, without a newline, to wherever the application shows it. */
void example_print(const char *line);

/* The library's only memory besides its tables: static here, anywhere the application likes. */
static uint8_t arena[{m}_ARENA_BYTES] {m}_ALIGN16;
{EXAMPLE_FORMAT}"""
    if spec.classifier:
        ex = spec.example
        rows = []
        for r in range(IMAGE_SIDE):
            rows.append("    " + ",".join(f"{v:3d}" for v in ex["image"][r * IMAGE_SIDE:(r + 1) * IMAGE_SIDE]) + ",")
        picture = "\n".join(rows)
        return head + f"""
/* A picture of "{ex['label']}", 28x28, one byte a pixel (tinyrps.data.render, seed {ex['seed']}). */
static const uint8_t picture[{m}_IMAGE_BYTES] = {{
{picture}
}};

int main(void) {{
    char line[160], *out = line;
    float logits[{m}_LABEL_COUNT];
    int status = {n}_init(arena, sizeof arena);
    if (status != {m}_OK) {{
        out = put_text(put_text(out, "{n}_init: "), {n}_status_name(status));
        *out = '\\0';
        example_print(line);
        return 1;
    }}
    int label = {n}_classify(picture, logits);
    if (label < 0) {{
        out = put_text(put_text(out, "{n}_classify: "), {n}_status_name(label));
        *out = '\\0';
        example_print(line);
        return 1;
    }}
    out = put_text(put_text(out, "the picture shows "), {n}_label(label));
    out = put_text(out, " (scores");
    for (int i = 0; i < {m}_LABEL_COUNT; i++) {{
        out = put_text(put_text(out, " "), {n}_label(i));
        out = put_score(put_text(out, " "), logits[i]);
    }}
    *out++ = ')';
    *out = '\\0';
    example_print(line);
    return 0;
}}
"""
    out0 = spec.info["outputs"][0]
    ctype = C_TYPES[out0["dtype"]][1]
    count = min(8, _numel(out0["shape"]))
    value = "(double)first[i]" if ctype in ("float", "double") else "(long)first[i]"
    put = "put_score(out, " + value + ")" if ctype in ("float", "double") else "put_int(out, " + value + ")"
    ins = "\n".join(f"static {m}_INPUT{i}_TYPE input{i}[{m}_INPUT{i}_NUMEL];"
                    for i in range(len(spec.info["inputs"])))
    outs = "\n".join(f"static {m}_OUTPUT{i}_TYPE output{i}[{m}_OUTPUT{i}_NUMEL];"
                     for i in range(len(spec.info["outputs"])))
    in_list = ", ".join(f"input{i}" for i in range(len(spec.info["inputs"])))
    out_list = ", ".join(f"output{i}" for i in range(len(spec.info["outputs"])))
    return head + f"""
/* The inputs (zeros) and outputs, in the program's own types. */
{ins}
{outs}

int main(void) {{
    char line[200], *out = line;
    const void *inputs[{m}_INPUT_COUNT] = {{{in_list}}};
    void *outputs[{m}_OUTPUT_COUNT] = {{{out_list}}};
    int status = {n}_init(arena, sizeof arena);
    if (status == {m}_OK) status = {n}_run_all(inputs, outputs);
    if (status != {m}_OK) {{
        out = put_text(put_text(out, "{n}: "), {n}_status_name(status));
        *out = '\\0';
        example_print(line);
        return 1;
    }}
    const {ctype} *first = output0;
    out = put_text(out, "output 0 on zeros:");
    for (int i = 0; i < {count}; i++) {{
        *out++ = ' ';
        out = {put};
    }}
    *out = '\\0';
    example_print(line);
    return 0;
}}
"""


# --- README.md ----------------------------------------------------------------------------------------------

def _kib(n: int) -> str:
    return f"{n:,} B ({n / 1024:.1f} KiB)"


def readme(spec: LibrarySpec) -> str:
    n, m, facts, f = spec.name, spec.macro, spec.facts, spec.figures
    isa_name = {"mve": "Helium (MVE)", "dsp": "DSP extension"}[spec.isa_kernels]
    io_rows = "\n".join(
        f"| {kind} {i} | {t['dtype']} | {t['shape']} | {t['dim_order']} | {t['nbytes']:,} |"
        for kind, tensors in (("input", spec.info["inputs"]), ("output", spec.info["outputs"]))
        for i, t in enumerate(tensors))
    layer_rows = "\n".join(
        f"| {i} | `{layer['op']}` | {layer['kernels']} | {layer['macs']:,} | {layer['instructions']:,} |"
        for i, layer in enumerate(spec.layers))
    code = spec.code
    if "missing" in code:
        code_text = f"Not measured when this folder was written: {code['missing']}."
    else:
        rows = "\n".join(
            f"| `{c['flags']}` | {c['library_bytes']:,} | {c['libc_bytes']:,} | "
            f"**{c['library_and_libc_bytes']:,}** | {c['example_bytes']:,} |"
            for c in code.values())
        first = next(iter(code.values()))
        code_text = f"""Code and read-only data of `example/main.c` linked with the library for the {facts.core}
({first['compiler']}, `-ffunction-sections -fdata-sections`, `--gc-sections`), without the
program's {len(spec.program):,} bytes:

| flags | library | libc and libgcc it pulls in | together | example/main.c |
|---|---:|---:|---:|---:|
{rows}"""
    classify_api = ""
    if spec.classifier:
        classify_api = f"""| `int {n}_classify(const uint8_t image[784], float logits[{len(facts.labels)}])` | \
a 28x28 picture (one byte a pixel, row-major) to the label index (or a negative status); `logits` may be NULL |
| `const char *{n}_label(int i)` | {", ".join(f'"{x}"' for x in facts.labels)} |
"""
    what_example = "it classifies a picture" if spec.classifier else "it runs one inference on zeros"
    portable_note = ""
    if spec.isa_only:
        portable_note = (f"On the {facts.core}, the plain-C kernels of the operators whose every call runs on the "
                         f"{spec.isa_kernels} ones are left out ({', '.join(spec.isa_only)}).")
    if spec.unbound:
        left_out = "; ".join(f"{s}: {', '.join(v)}" for s, v in spec.unbound.items())
        portable_note += ((" " if portable_note else "") + f"Of the {spec.isa_kernels} variants, those no call of the "
                          f"program binds on the {facts.core} are left out ({left_out}).")
    measured = [c for c in code.values() if isinstance(c, dict)]
    ram_note = f" ({measured[0]['library_static_ram_bytes']:,} B of `.bss` on the {facts.core})" if measured else ""
    ex = ""
    if spec.example:
        ex = (f"\nOn its picture of \"{spec.example['label']}\" it prints `the picture shows "
              f"{spec.example['answer']} (scores ...)`.")
    return f"""# {n}

`{spec.program_name}` ({facts.description}) as a C library for your own firmware: an RTOS task or a
superloop, your startup code, your drivers, your build. Generated by `tinyrps deploy library`
(tinyrps {spec.version}).

- program: {len(spec.program):,} bytes, sha256 `{facts.sha256}`, made for the **{facts.core}**
- C99, no heap, no `printf` or file I/O; from the C library only `memcpy` and `memset` (and the
  compiler's own helpers). Every external name starts with `{n}_`, so libraries of several programs
  link into one application.
- the runtime's loader, and only this program's operators, each with its {isa_name} kernels and
  portable C ones: the same folder builds and gives the same bits on the {facts.core} and on a PC.
  {portable_note}

## API (`include/{n}.h`)

| call | does |
|---|---|
| `int {n}_init(void *arena, size_t bytes)` | loads and checks the program, once; 0 or a negative status |
| `int {n}_run(const void *input, void *output)` | one inference, in the program's own dtypes |
| `int {n}_run_all(const void *const in[], void *const out[])` | the same for several inputs or outputs |
| `int {n}_output_int8(int i, const int8_t **values)` | the int8 values the final dequantize read (the bit-exact ones) |
{classify_api}| `const char *{n}_status_name(int status)` | `"arena too small"`, ... |
| `void {n}_set_counter(uint64_t (*now)(void))` | a per-layer profile with your clock (NULL: off) |
| `int {n}_profile(uint64_t counts[{m}_LAYER_COUNT])` | each layer's share of the last inference |
| `const char *{n}_layer_kernels(int i)` | the kernels layer `i` runs with in your build |

Macros: `{m}_ARENA_BYTES`, `{m}_INPUT_BYTES`, `{m}_OUTPUT_BYTES` (and per tensor `{m}_INPUT<i>_*`:
`DTYPE`, `TYPE`, `SHAPE`, `DIM_ORDER`, `NUMEL`, `BYTES`), the statuses `{m}_OK`, `{m}_ERR_*`, and the
program's identity: `{m}_SHA256`, `{m}_CORE`, `{m}_PROGRAM_BYTES`, `{m}_LAYER_OPS`,
`{m}_LAYER_KERNELS_ON_CORE`, `{m}_LAYER_MACS`. Calls are not reentrant: one inference at a time.

| tensor | dtype | shape | dim order | bytes |
|---|---|---|---|---:|
{io_rows}

## What your application provides

- **the arena**: `{m}_ARENA_BYTES` bytes, 16-byte aligned (`{m}_ALIGN16`), anywhere in RAM. It is
  {spec.arena[spec.isa_kernels]:,} bytes with the {spec.isa_kernels} kernels (a build for the {facts.core}) and
  {spec.arena['c']:,} with portable C (a PC, or the core without {isa_name}); the macro follows the
  compiler. One byte less and `{n}_init` returns `{m}_ERR_ARENA_TOO_SMALL`.
- **the program's place**: `{n}_program` is `const` and goes in the section
  `.rodata.{n}_program` (any `*(.rodata.*)` rule takes it; name it in your linker script to put it
  elsewhere, e.g. external flash; `{m}_PROGRAM_SECTION` renames it).
- optionally **a clock** for the profile: `{n}_set_counter(now)` with any monotonic 64-bit count.
- the rest of the library's RAM is its static tables (`.bss`).

`{n}_init` checks every offset, size and parameter of the program before anything runs: a damaged
program gives a negative status, never a fault. (It does not detect changed weights: compare the
program with `{m}_SHA256` if your flash needs that.)

## Adding it with CMake

```cmake
add_subdirectory(path/to/{n})
target_link_libraries(your_app PRIVATE {n})
```

## Adding it with Make

```make
include path/to/{n}/{n}.mk
SRCS   += $({m}_SRCS)
CFLAGS += $(addprefix -I,$({m}_INCS)) $({m}_CFLAGS)
```

Neither sets `-mcpu`, optimisation or warnings: your build's flags apply. The library adds only
`{' '.join(LIBRARY_CFLAGS)}` (GCC's and clang's spelling): float results then round as the
reference's do. Build for the {facts.core} with its {isa_name} enabled (`-mcpu={facts.core}`) to get the ISA kernels.

## The example

`example/main.c` is a complete program: {what_example} and prints the answer through
`void example_print(const char *line)`, which your application supplies.{ex}

## Figures

**Flash**: the program's {len(spec.program):,} bytes plus the library's code below.
**RAM**: the arena ({spec.arena[spec.isa_kernels]:,} B with the {spec.isa_kernels} kernels) plus the library's tables{ram_note}.

{code_text}

**Instructions per inference** on the emulated {f['board']} board ({facts.core}), measured with the
tinyrps firmware (the same runtime and kernels, -O3) under QEMU `-icount shift=0`: QEMU counts
instructions, not cycles. {f['instructions_per_inference']:,} with the {spec.isa_kernels} kernels
({f.get('instructions_per_inference_plain_c', 0):,} with portable C); per layer:

| layer | operator | kernels | MACs | instructions |
|---:|---|---|---:|---:|
{layer_rows}

`manifest.json` has these figures as JSON.
"""
