"""The README of a deploy library: what the program is, its inputs and outputs, its code and arena, its
layers, and for an Ethos-U program how to link Arm's driver (tinyrps.deploy.library_files writes the
other files; the text is in templates/readme*.md)."""
from __future__ import annotations

from pathlib import Path

from .library_files import LIBRARY_CFLAGS, LibrarySpec, _names, fill, write_manifest


def write_documents(folder: Path, spec: LibrarySpec) -> None:
    """The README, which quotes the code size measured on the other files, and the manifest again."""
    (folder / "README.md").write_text(readme(spec))
    write_manifest(folder, spec)

IO_NOTES = {
    True: "The program takes and gives the quantized int8 tensors (exported with `--io int8`, the default for a "
          "library): no float input or output takes arena, and each one's scale and zero point are in the header "
          "(`..._SCALE`, `..._ZERO_POINT`: value = scale * (q - zero point)).",
    False: "The program takes and gives float32 (exported without `--io int8`). A library's default is integer "
           "inputs and outputs: export the program with `tinyrps export ... --io int8` for int8 tensors in and out, "
           "with no float input or output in the arena.",
}


def _quantization_text(quantization: tuple, i: int) -> str:
    scale, zero_point = quantization[i] if i < len(quantization) else (None, None)
    return "—" if scale is None else f"scale {scale!r}, zero point {zero_point}"


def readme(spec: LibrarySpec) -> str:
    facts, f, isa = spec.facts, spec.figures, spec.isa_kernels
    code = spec.code
    if "missing" in code:
        code_text = f"Not measured when this folder was written: {code['missing']}."
    else:
        rows = "\n".join(
            f"| `{c['flags']}` | {c['library_bytes']:,} | {c['libc_bytes']:,} | "
            f"**{c['library_and_libc_bytes']:,}** | {c['example_bytes']:,} |"
            for c in code.values())
        code_text = fill("readme_code.md", {"core": facts.core, "compiler": next(iter(code.values()))["compiler"],
                                            "program_bytes_text": f"{len(spec.program):,}", "rows": rows})
    classify_api = ""
    if spec.classifier:
        classify_api = fill("readme_classify.md", {"name": spec.name, "label_count": len(facts.labels),
                                                   "labels_quoted": ", ".join(f'"{x}"' for x in facts.labels)})
    notes = []
    if spec.isa_only:
        notes.append(f"On the {facts.core}, the plain-C kernels of the operators whose every call runs on the "
                     f"{isa} ones are left out ({', '.join(spec.isa_only)}).")
    if spec.unbound:
        left_out = "; ".join(f"{s}: {', '.join(v)}" for s, v in spec.unbound.items())
        notes.append(f"Of the {isa} variants, those no call of the program binds on the {facts.core} are left "
                     f"out ({left_out}).")
    measured = [c for c in code.values() if isinstance(c, dict)]
    return fill("readme.md", {
        **_names(spec), "version": spec.version, "program_file": spec.program_name, "description": facts.description,
        "program_bytes_text": f"{len(spec.program):,}", "sha256": facts.sha256, "core": facts.core, "isa": isa,
        "isa_name": {"mve": "Helium (MVE)", "dsp": "DSP extension"}[isa], "portable_note": " ".join(notes),
        "classify_api": classify_api, "cflags": " ".join(LIBRARY_CFLAGS),
        "io_rows": "\n".join(f"| {direction} {i} | {t['dtype']} | {t['shape']} | {t['dim_order']} | {t['nbytes']:,} | "
                             f"{_quantization_text(quantization, i)} |"
                             for direction, tensors, quantization in (
                                 ("input", spec.info["inputs"], spec.facts.input_quantization),
                                 ("output", spec.info["outputs"], spec.facts.output_quantization))
                             for i, t in enumerate(tensors)),
        "io_note": IO_NOTES[spec.integer_io],
        "arena_isa_text": f"{spec.arena[isa]:,}", "arena_c_text": f"{spec.arena['c']:,}",
        "what_example": "it classifies a picture" if spec.classifier else "it runs one inference on zeros",
        "example_note": (f"\nOn its picture of \"{spec.example['label']}\" it prints `the picture shows "
                         f"{spec.example['answer']} (scores ...)`.") if spec.example else "",
        "ram_note": (f" ({measured[0]['library_static_ram_bytes']:,} B of `.bss` on the {facts.core})"
                     if measured else ""),
        "code_text": code_text, "board": f["board"], "instructions_text": f"{f['instructions_per_inference']:,}",
        "instructions_c_text": (f"{f['instructions_per_inference_plain_c']:,}"
                                if "instructions_per_inference_plain_c" in f else "not measured"),
        "ethos_u_section": ethos_u_section(spec) if facts.ethos_u else "",
        "layer_rows": "\n".join(
            f"| {i} | `{layer['op']}` | {layer['kernels']} | {layer['macs']:,} | {layer['instructions']:,} |"
            for i, layer in enumerate(spec.layers))})


def _delegate(spec: LibrarySpec):
    """The program's Ethos-U delegate as the NPU model reads it (its command stream, weights and regions)."""
    from ..npu import load
    programs = load(spec.program, spec.program_name)
    if len(programs) != 1:
        raise RuntimeError(f"{spec.program_name} has {len(programs)} Ethos-U delegates; a library takes one")
    return programs[0]


def ethos_u_section(spec: LibrarySpec) -> str:
    delegate = _delegate(spec)
    cpu_ops = sorted({layer["op"].split("::")[-1] for layer in spec.layers if layer["kernels"] != "npu"})
    return fill("readme_ethos_u.md", {
        **_names(spec), "accelerator": spec.facts.accelerator, "cpu_ops": " and ".join(cpu_ops) or "nothing else",
        "cmd_bytes_text": f"{len(delegate.delegate.cmd_data):,}", "weight_bytes_text": f"{len(delegate.weights):,}",
        "scratch_bytes_text": f"{delegate.delegate.scratch_size:,}", "fast_bytes_text": f"{delegate.region_sizes[2]:,}",
        "regions": 3, "program_file": spec.program_name})
