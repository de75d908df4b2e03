"""The text of a deploy library's files: C sources and header, build files, example, README, manifest.

tinyrps.deploy.library decides what goes in (LibrarySpec); this module only writes it, each file
from its template (templates/: the text with @key@ where a value goes, filled by `fill`).
Macros use NAME upper-cased (TINYRPS_MODEL_ARENA_BYTES), functions NAME as given
(tinyrps_model_init).
"""
from __future__ import annotations

import contextlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

# The C type of a dtype that is not its name with _t (uint8 -> uint8_t).
C_TYPE_OF = {"float32": "float", "float64": "double", "bool": "uint8_t"}
IMAGE_SIDE = 28
EXAMPLE_SEED = 7   # the example's picture: tinyrps.network.letters.render with this seed
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
    call_lists: bool           # an argument of a call is an int[] or a Tensor[] (else TRT_CALL_LISTS=0)
    operators: list            # the program's operators ("cortex_m::quantized_conv2d.out")
    symbols: list              # the runtime operators in the library
    arena: dict                # kernel set -> arena bytes
    version: str
    renamed: list = field(default_factory=list)
    sources: list = field(default_factory=list)
    code: dict = field(default_factory=dict)
    example: Optional[dict] = None
    isa_only: list = field(default_factory=list)   # operators without plain C on the core
    fusions: bool = True       # an operator of the library may fuse the next call (else TRT_FUSIONS=0)
    int8_copies: bool = True   # the loader may copy an output's raw int8 values (else TRT_INT8_COPIES=0)
    unbound: dict = field(default_factory=dict)     # symbol -> the ISA variants left out (no call binds them)

    @property
    def macro(self) -> str:
        return self.name.upper()

    @property
    def classifier(self) -> bool:
        """An RPS classifier: labels, one 28x28 input, one output of one value per label, each float32 or int8
        of known quantization (exported with `--io int8`: the runtime's image helper runs both)."""
        ins, outs = self.info["inputs"], self.info["outputs"]
        return bool(self.facts.labels) and len(ins) == 1 and len(outs) == 1 and \
            self._takes(ins[0], self.facts.input_quantization) and ins[0]["shape"] == [1, 1, IMAGE_SIDE, IMAGE_SIDE] \
            and self._takes(outs[0], self.facts.output_quantization) and \
            _numel(outs[0]["shape"]) == len(self.facts.labels)

    @staticmethod
    def _takes(tensor: dict, quantization: tuple) -> bool:
        return tensor["dtype"] == "float32" or (tensor["dtype"] == "int8" and bool(quantization) and
                                                quantization[0][0] is not None)

    @property
    def image_int8(self) -> bool:
        """A classifier whose input or output is int8: the image helper's integer path is compiled."""
        return self.classifier and any(t["dtype"] == "int8" for t in (*self.info["inputs"], *self.info["outputs"]))

    @property
    def integer_io(self) -> bool:
        """Every input and output is an int8 tensor of known quantization (a program exported with --io int8)."""
        pairs = tuple(self.facts.input_quantization) + tuple(self.facts.output_quantization)
        return bool(pairs) and all(scale is not None for scale, _ in pairs)

    @property
    def layers(self) -> list:
        return self.figures["layers"]

    @property
    def board(self) -> str:
        return self.figures["board"]


def c_type(dtype: str) -> tuple:
    """(ExecuTorch ScalarType code, C type) of a dtype of the runtime (tinyrps_runtime.h, TRT_DTYPE_LIST)."""
    from ..firmware.c_facts import dtypes
    code = next(code for code, (name, _) in dtypes().items() if name == dtype)
    return code, C_TYPE_OF.get(dtype, f"{dtype}_t")


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def c_list(items) -> str:
    return "{" + ", ".join(str(i) for i in items) + "}"


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
        **({"npu/npu_link_qemu.c": npu_link_source(spec)} if spec.facts.ethos_u else {}),
    }
    for rel, text in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
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
        # "int8": the program takes and gives the quantized tensors (export --io int8), "float": it does not
        "io": "int8" if spec.integer_io else "float",
        "quantization": {"inputs": [list(q) for q in spec.facts.input_quantization],
                         "outputs": [list(q) for q in spec.facts.output_quantization]},
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


# --- templates -------------------------------------------------------------------------------------------

TEMPLATES = Path(__file__).parent / "templates"
_PLACEHOLDER = re.compile(r"@(\w+)@")


def fill(template: str, values: dict) -> str:
    """The text of templates/<template> with each @key@ replaced by values[key] (every key used, none
    missing)."""
    text = (TEMPLATES / template).read_text()
    wanted = set(_PLACEHOLDER.findall(text))
    if wanted != set(values):
        raise RuntimeError(f"templates/{template} takes {sorted(wanted)}, given {sorted(values)}")
    return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), text)


def _names(spec: LibrarySpec) -> dict:
    return {"name": spec.name, "MACRO": spec.macro}


# --- src/NAME_build.h and src/units/ ------------------------------------------------------------------------

ETHOS_U_OPTION = ("\n/* The loader runs the program's Ethos-U delegate (src/runtime/ethos_u_delegate.c) through the NPU\n"
                  " * driver the application links (README.md). */\n#define TRT_ETHOS_U 1\n")


IMAGE_INT8_OPTION = ("\n/* The image helper takes the program's int8 input or output (image.c). */\n"
                     "#define TRT_IMAGE_INT8 1\n")


NO_CALL_LISTS_OPTION = ("\n/* No call of the program has an int[] or Tensor[] argument: the loader leaves out the code that\n"
                        " * resolves them and refuses a call with one (src/runtime/runtime.c). */\n"
                        "#define TRT_CALL_LISTS 0\n")


NO_FUSIONS_OPTION = ("\n/* No operator of the library takes on the next call's work: the loader leaves out its pass that\n"
                     " * fuses calls (src/runtime/runtime.c). */\n#define TRT_FUSIONS 0\n")


NO_INT8_COPIES_OPTION = ("\n/* Every output is written by the program's last call, so no later call writes over the raw int8\n"
                         " * values of one: the loader leaves out the code that copies them aside, and refuses a program\n"
                         " * that would need it (src/runtime/runtime.c). */\n#define TRT_INT8_COPIES 0\n")


def build_header(spec: LibrarySpec) -> str:
    return fill("build.h", {**_names(spec), "isa": spec.isa_kernels, "ISA": spec.isa_kernels.upper(),
                            "limits": "\n".join(f"#define {k} {v}" for k, v in spec.limits.items())
                            + ("" if spec.call_lists else NO_CALL_LISTS_OPTION)
                            + ("" if spec.fusions else NO_FUSIONS_OPTION)
                            + ("" if spec.int8_copies else NO_INT8_COPIES_OPTION)
                            + (ETHOS_U_OPTION if spec.facts.ethos_u else "")
                            + (IMAGE_INT8_OPTION if spec.image_int8 else ""),
                            "renames": "\n".join(f"#define {r} {spec.name}_{r}" for r in spec.renamed)})


def unit_path(rel: str) -> str:
    """The library's translation unit (under src/) of a runtime source (relative to firmware/src)."""
    return "units/" + rel.replace("/", "_")


def unit_source(name: str, rel: str) -> str:
    """A runtime source compiled after the library's build header; a bind step (ops/) for size."""
    return fill("unit_load_code.c" if rel.startswith("ops/") else "unit.c", {"name": name, "rel": rel})


# --- include/NAME.h -----------------------------------------------------------------------------------------

def _tensor_macros(m: str, direction: str, tensors: list, quantization: tuple = ()) -> str:
    lines = [f"#define {m}_{direction}_COUNT {len(tensors)}"]
    for i, t in enumerate(tensors):
        scale, zero_point = quantization[i] if i < len(quantization) else (None, None)
        code, ctype = c_type(t["dtype"])
        p = f"{m}_{direction}{i}"
        lines += [f"#define {p}_DTYPE {c_string(t['dtype'])}",
                  f"#define {p}_DTYPE_CODE {code}      /* ExecuTorch ScalarType */",
                  f"#define {p}_TYPE {ctype}",
                  f"#define {p}_RANK {len(t['shape'])}",
                  f"#define {p}_SHAPE {c_list(t['shape'])}",
                  f"#define {p}_DIM_ORDER {c_list(t['dim_order'])}",
                  f"#define {p}_NUMEL {_numel(t['shape'])}u",
                  f"#define {p}_BYTES {t['nbytes']}u"]
        if scale is not None:       # an integer input or output: the float value it stands for
            lines += [f"/* {direction.lower()} {i} is quantized: value = {p}_SCALE * (q - {p}_ZERO_POINT) */",
                      f"#define {p}_SCALE {float(scale)!r}",
                      f"#define {p}_ZERO_POINT ({int(zero_point)})"]
    p = f"{m}_{direction}0"
    lines += [f"/* {direction.lower()} 0 under short names */"]
    lines += [f"#define {m}_{direction}_{what} {p}_{what}" for what in ("DTYPE", "TYPE", "SHAPE", "NUMEL", "BYTES")]
    return "\n".join(lines)


ISA_EXTENSIONS = {"mve": "Helium", "dsp": "the DSP extension"}


def public_header(spec: LibrarySpec, statuses: list) -> str:
    m, facts, layers, isa = spec.macro, spec.facts, spec.layers, spec.isa_kernels
    classify = ""
    if spec.classifier:
        labels = facts.labels
        classify = fill("public_classify.h", {**_names(spec), "label_count": len(labels), "first_label": labels[0],
                                              "labels_c": ", ".join(c_string(x) for x in labels),
                                              "image_side": IMAGE_SIDE})
    return fill("public.h", {
        **_names(spec), "version": spec.version, "version_c": c_string(spec.version),
        "program_file": spec.program_name, "program_bytes": len(spec.program),
        "program_bytes_text": f"{len(spec.program):,}", "sha256": facts.sha256, "sha256_c": c_string(facts.sha256),
        "core": facts.core, "core_c": c_string(facts.core), "description": facts.description,
        "isa": isa, "isa_c": c_string(isa), "isa_extension": ISA_EXTENSIONS[isa], "isa_test": isa_feature_test(isa),
        "layer_count": len(layers), "layer_ops": ", ".join(c_string(layer["op"]) for layer in layers),
        "layer_kernels": ", ".join(c_string(layer["kernels"]) for layer in layers),
        "layer_macs": ", ".join(f"{layer['macs']}u" for layer in layers),
        "arena_isa": spec.arena[isa], "arena_c": spec.arena["c"],
        "input_macros": _tensor_macros(m, "INPUT", spec.info["inputs"], facts.input_quantization),
        "output_macros": _tensor_macros(m, "OUTPUT", spec.info["outputs"], facts.output_quantization),
        "statuses": "\n".join(f"#define {m}_{status[4:]} {f'({value})' if value else '0'}    /* {text} */"
                              for status, value, text in statuses),
        "classify": classify})


# --- src/NAME.c ------------------------------------------------------------------------------------------

def api_source(spec: LibrarySpec) -> str:
    def io_specs(tensors):
        return ", ".join(f"{{{c_type(t['dtype'])[0]}, {t['nbytes']}u}}" for t in tensors)
    return fill("api.c", {**_names(spec), "isa_test": isa_feature_test(spec.isa_kernels),
                          "isa_upper": spec.isa_kernels.upper(), "input_specs": io_specs(spec.info["inputs"]),
                          "output_specs": io_specs(spec.info["outputs"]),
                          "classify": fill("api_classify.c", _names(spec)) if spec.classifier else ""})


# --- src/NAME_program.c ------------------------------------------------------------------------------------

def program_source(spec: LibrarySpec) -> str:
    data = spec.program
    rows = "\n".join("    " + ",".join(str(b) for b in data[i:i + 24]) + "," for i in range(0, len(data), 24))
    return fill("program.c", {**_names(spec), "program_file": spec.program_name, "sha256": spec.facts.sha256,
                              "program_rows": rows})


# --- build files -------------------------------------------------------------------------------------------

def _build_values(spec: LibrarySpec) -> dict:
    return {"name": spec.name, "sha12": spec.facts.sha256[:12], "core": spec.facts.core, "version": spec.version,
            "cflags": " ".join(LIBRARY_CFLAGS)}


def cmake_lists(spec: LibrarySpec) -> str:
    return fill("CMakeLists.txt", {**_build_values(spec), "sources": "\n".join(f"  {s}" for s in spec.sources)})


def make_fragment(spec: LibrarySpec) -> str:
    sources = " \\\n".join(f"  $({spec.macro}_DIR)/{s}" for s in spec.sources)
    return fill("library.mk", {**_build_values(spec), "MACRO": spec.macro, "sources": sources})


# --- example/main.c ------------------------------------------------------------------------------------------

def example_picture(spec: LibrarySpec) -> dict:
    """A picture the program classifies right (one per label, tried in order), with the answer it gives, from
    the runtime on this host."""
    import subprocess
    import numpy as np

    from ..network.letters import render
    from ..firmware import build_firmware
    from ..infra.tempdirs import temp_dir
    tool = build_firmware("native").tool("tinyrps-native-npu" if spec.facts.ethos_u else "tinyrps-native")
    labels = np.arange(len(spec.facts.labels))
    images = render(labels, np.random.default_rng(EXAMPLE_SEED))
    with temp_dir("example") as work:
        pte, images_file, out = Path(work) / "p.pte", Path(work) / "images.u8", Path(work) / "out.bin"
        pte.write_bytes(spec.program)
        np.ascontiguousarray(images, np.uint8).tofile(images_file)
        with _npu_link(spec, pte, Path(work)) as env:
            subprocess.run([str(tool), "infer", str(pte), str(images_file), str(out)], check=True,
                           capture_output=True, timeout=120, env=env)
        raw = out.read_bytes()
    k = len(labels)
    logits = np.frombuffer(raw[len(labels) * k:], np.float32).reshape(len(labels), k)
    answers = logits.argmax(axis=1)
    chosen = next((i for i in range(len(labels)) if answers[i] == labels[i]), 0)
    return {"label": spec.facts.labels[int(labels[chosen])], "answer": spec.facts.labels[int(answers[chosen])],
            "logits": [float(x) for x in logits[chosen]], "image": images[chosen].reshape(-1).tolist(),
            "seed": EXAMPLE_SEED}


@contextlib.contextmanager
def _npu_link(spec: LibrarySpec, pte: Path, folder: Path):
    """The environment of a native run: for an Ethos-U program, the NPU model on this host serving the NPU
    link in `folder` (tinyrps.firmware.npu_host), which the native tool's driver talks to."""
    if not spec.facts.ethos_u:
        yield None
        return
    from ..firmware.npu_host import NpuHost
    (folder / "npu").mkdir()
    host = NpuHost(pte, folder / "npu")
    try:
        yield {**os.environ, "TINYRPS_NPU_LINK": str(folder / "npu")}
    finally:
        host.close()


def example_source(spec: LibrarySpec) -> str:
    what = "classify one picture" if spec.classifier else "one inference on zeros"
    return fill("example.c", {**_names(spec), "what": what, "main": _example_main(spec)})


def _example_main(spec: LibrarySpec) -> str:
    if spec.classifier:
        ex = spec.example
        picture = "\n".join("    " + ",".join(f"{v:3d}" for v in ex["image"][r * IMAGE_SIDE:(r + 1) * IMAGE_SIDE]) + ","
                            for r in range(IMAGE_SIDE))
        return fill("example_classify.c", {**_names(spec), "example_label": ex["label"], "example_seed": ex["seed"],
                                           "picture": picture})
    m, ins, outs = spec.macro, spec.info["inputs"], spec.info["outputs"]
    ctype = c_type(outs[0]["dtype"])[1]
    floating = ctype in ("float", "double")
    return fill("example_generic.c", {
        **_names(spec), "ctype": ctype, "count": min(8, _numel(outs[0]["shape"])),
        "put": "put_score(out, (double)first[i])" if floating else "put_int(out, (long)first[i])",
        "input_arrays": "\n".join(f"static {m}_INPUT{i}_TYPE input{i}[{m}_INPUT{i}_NUMEL];" for i in range(len(ins))),
        "output_arrays": "\n".join(f"static {m}_OUTPUT{i}_TYPE output{i}[{m}_OUTPUT{i}_NUMEL];"
                                   for i in range(len(outs))),
        "input_list": ", ".join(f"input{i}" for i in range(len(ins))),
        "output_list": ", ".join(f"output{i}" for i in range(len(outs)))})


# --- the NPU of an Ethos-U program --------------------------------------------------------------------------

def npu_link_source(spec: LibrarySpec) -> str:
    """npu/npu_link_qemu.c: the NPU link's driver on QEMU, its constants from firmware/protocol/npu_link.h."""
    from ..firmware import c_facts
    from ..firmware.npu_host import REPLY, REQUEST, STATUS
    return fill("npu_link_qemu.c", {
        "name": spec.name, "request_path": c_facts.define("NPU_LINK_REQUEST_PATH"),
        "reply_path": c_facts.define("NPU_LINK_REPLY_PATH"), "version": c_facts.define("NPU_LINK_VERSION"),
        "request_bytes": REQUEST.size, "reply_bytes": REPLY.size, "status_ok": STATUS["NPU_LINK_OK"],
        "request_id": c_facts.define("NPU_LINK_REQUEST_ID"), "reply_id": c_facts.define("NPU_LINK_REPLY_ID"),
        "sha256_bytes": ", ".join(f"0x{b:02x}" for b in bytes.fromhex(spec.facts.sha256)),
        **{f"q_{f.lower()}": REQUEST.offset(f) for f in ("MAGIC", "VERSION", "SEQUENCE", "CMD_BYTES", "SIZES", "SHA256")},
        **{f"r_{f.lower()}": REPLY.offset(f) for f in ("MAGIC", "VERSION", "SEQUENCE", "STATUS", "SHA256")}})


# --- README.md ----------------------------------------------------------------------------------------------

# What the README says of the program's inputs and outputs: integer ones are what a library is for.
