"""Recipes for Arm Ethos-U NPUs: int8 PTQ, lowered to TOSA, compiled by Vela into one delegate.

One target per accelerator configuration that Vela knows (`ethos-u55-128`,
`ethos-u85-256`, ...; tinyrps.hardware.families.ACCELERATORS). The recipe quantizes with Arm's
Ethos-U quantizer, lowers the whole graph to TOSA, lets Vela compile it into an NPU
command stream and embeds that stream in the .pte. Only the input quantize and the output
dequantize are left to the CPU; anything else falling back is an error.

The descriptor's `ethos_u` record (tinyrps.hardware.families.EthosUInfo) holds the compiler
settings, the delegation, the program's input/output quantization and the sha256 of the
TOSA graph Vela compiled. The graph is kept as T/out.tosa (the `npu-ref` device runs it
through the TOSA reference model), with Vela's summary and per-layer tables and its log,
which the measure stage reads for Vela's estimate.
"""
from __future__ import annotations

import csv
import hashlib
import os
import shutil
import traceback
from pathlib import Path

import numpy as np

from ..infra.errors import UserError, one_line
from ..hardware.families import NPU_DEFAULT_CONFIG, EthosUInfo, macs_per_cycle, npu_family
from ..infra.library_noise import output_to
from ..network.quantization import pt2e_quantize
from ..reference.ethos_u import io_quantization
from ..hardware.vela import (LOG_NAME, PER_LAYER_NAME, SUMMARY_NAME, TOSA_NAME, VELA_EXTRA_FLAGS, vela_config_names,
                             vela_version)
from . import BuildContext, BuildResult

# Operators that may stay on the CPU: the float<->int8 conversion at the program's boundary.
BOUNDARY_OPS = {"quantized_decomposed::quantize_per_tensor", "quantized_decomposed::dequantize_per_tensor"}


# --- configuration ------------------------------------------------------------------------------

def resolve_config(accelerator: str, options: dict) -> tuple:
    """The (system_config, memory_mode) to compile for: the user's, else Arm's default; validated by name."""
    default_system, default_mode = NPU_DEFAULT_CONFIG[npu_family(accelerator)]
    system_config = options.get("system_config") or default_system
    memory_mode = options.get("memory_mode") or default_mode
    systems, modes = vela_config_names()
    if system_config not in systems:
        raise UserError(f"unknown Vela system config '{system_config}'; valid: {', '.join(systems)}")
    if memory_mode not in modes:
        raise UserError(f"unknown Vela memory mode '{memory_mode}'; valid: {', '.join(modes)}")
    return system_config, memory_mode


def compile_spec(accelerator: str, system_config: str, memory_mode: str, intermediates: Path):
    from executorch.backends.arm.ethosu import EthosUCompileSpec
    spec = EthosUCompileSpec(accelerator, system_config=system_config, memory_mode=memory_mode,
                             extra_flags=list(VELA_EXTRA_FLAGS))
    spec.dump_intermediate_artifacts_to(str(intermediates))
    return spec


# --- the build ----------------------------------------------------------------------------------

class LoweringFailed(Exception):
    """A stage of the Ethos-U flow failed; `stage` names it for the user."""

    def __init__(self, stage: str, cause: BaseException):
        super().__init__(f"{stage}: {type(cause).__name__}: {cause}")
        self.stage = stage
        self.cause = cause


def build(accelerator: str, ctx: BuildContext) -> BuildResult:
    """Compile for `accelerator` (a target name) at the command line's or Arm's default configuration."""
    system_config, memory_mode = resolve_config(accelerator, ctx.options)
    intermediates = ctx.workdir / "ethos-u"
    intermediates.mkdir()
    log = ctx.workdir / LOG_NAME
    spec = compile_spec(accelerator, system_config, memory_mode, intermediates)
    try:
        with output_to(log):
            program = lower(ctx.model, ctx.example_inputs, ctx.calibration, spec)
    except LoweringFailed as e:
        with open(log, "a") as f:
            f.write("".join(traceback.format_exception(e.cause)))
        kept = keep_failed(ctx.workdir, accelerator)
        raise UserError(f"Ethos-U export for {accelerator} failed in {e.stage} ({one_line(e.cause)}); "
                        f"intermediate files and the compiler log are in {kept}") from None
    scratch_names(log, ctx.workdir)
    vela_out = intermediates / "output"
    summary_csv = vela_out / f"out_summary_{system_config}.csv"
    per_layer_csv = vela_out / "out_per-layer.csv"
    tosa = intermediates / TOSA_NAME
    delegation_info = check_one_delegate(delegation_of(program), per_layer_targets(per_layer_csv))
    check_stream_in_program(program, vela_out / "out_vela.npz", tosa)
    info = EthosUInfo(
        accelerator=accelerator, system_config=system_config, memory_mode=memory_mode,
        macs_per_cycle=macs_per_cycle(accelerator), vela_version=vela_version(),
        compile_flags=delegate_compile_flags(program), tosa=TOSA_NAME,
        tosa_sha256=hashlib.sha256(tosa.read_bytes()).hexdigest(), delegation=delegation_info,
        quantization={"scheme": "int8, symmetric per-channel weights (EthosUQuantizer), PT2E post-training",
                      "calibration": ctx.calibration_note, **io_quantization(program)})
    keep = {TOSA_NAME: tosa, PER_LAYER_NAME: per_layer_csv, SUMMARY_NAME: summary_csv, LOG_NAME: log}
    # intermediates of an earlier failed attempt no longer describe anything
    shutil.rmtree(ctx.workdir.parent / f"{accelerator}.failed", ignore_errors=True)
    return BuildResult(program, info, keep)


def lower(model, example_inputs: tuple, calibration: list, spec) -> bytes:
    """Quantize, lower to TOSA, compile with Vela and serialize; a failing stage raises LoweringFailed."""
    import torch
    from executorch.backends.arm.ethosu import EthosUPartitioner
    from executorch.backends.arm.quantizer import EthosUQuantizer, get_symmetric_quantization_config
    from executorch.exir import EdgeCompileConfig, ExecutorchBackendConfig, to_edge_transform_and_lower
    try:
        quantizer = EthosUQuantizer(spec).set_global(get_symmetric_quantization_config(is_per_channel=True))
        quantized = pt2e_quantize(model, quantizer, calibration, example_inputs)
        exported = torch.export.export(quantized, example_inputs)
    except Exception as e:
        raise LoweringFailed("quantization", e) from e
    try:
        edge = to_edge_transform_and_lower(exported, partitioner=[EthosUPartitioner(spec)],
                                           compile_config=EdgeCompileConfig(_check_ir_validity=False))
    except (Exception, SystemExit) as e:
        raise LoweringFailed("Vela" if raised_in_vela(e) else "the TOSA lowering", e) from e
    drop_intermediates_path(edge)
    return edge.to_executorch(ExecutorchBackendConfig(extract_delegate_segments=False)).buffer


def raised_in_vela(error: BaseException) -> bool:
    from ethosu.vela.errors import VelaError
    if isinstance(error, (VelaError, SystemExit)):  # Vela's CLI exits on bad arguments
        return True
    vela_source = f"{os.sep}ethosu{os.sep}vela{os.sep}"
    return any(vela_source in frame.filename for frame in traceback.extract_tb(error.__traceback__))


def drop_intermediates_path(edge) -> None:
    """Remove the scratch folder's path from the delegates' compile specs.

    The Arm backend records where it dumped its intermediates in the compile spec,
    which is serialized into the program. It only matters while compiling; left in,
    it would put a temporary path into every .pte and make exports irreproducible.
    """
    from executorch.backends.arm.common.arm_compile_spec import ArmCompileSpec
    from executorch.exir.lowered_backend_module import LoweredBackendModule
    graph_module = edge.exported_program().graph_module
    for module in graph_module.modules():
        if isinstance(module, LoweredBackendModule):
            module._compile_specs = [s for s in module.compile_specs
                                     if s.key != ArmCompileSpec._DEBUG_ARTIFACT_KEY]


def scratch_names(log: Path, workdir: Path) -> None:
    """Vela's log names files by their path in the scratch folder, whose name is new each time:
    write them relative to it, so that the kept log, like the program, is the same on every export."""
    text = log.read_text(errors="replace")
    for prefix in {str(workdir.resolve()), str(workdir)}:
        text = text.replace(prefix + "/", "")
    log.write_text(text)


def keep_failed(workdir: Path, accelerator: str) -> Path:
    """Copy a failed build's intermediates to RUN/export/T.failed/ (the workdir is deleted afterwards)."""
    failed = workdir.parent / f"{accelerator}.failed"
    shutil.rmtree(failed, ignore_errors=True)
    shutil.copytree(workdir, failed)
    return failed


# --- reading what the build produced ------------------------------------------------------------

def plan_of(program: bytes):
    from executorch.exir._serialize._program import deserialize_pte_binary
    return deserialize_pte_binary(program).program


def delegation_of(program: bytes) -> dict:
    from .cpu import delegation
    return delegation(program)


def per_layer_targets(per_layer_csv: Path) -> list:
    """(operator, target) of each layer in Vela's per-layer table; target is NPU or CPU; none when Vela
    never ran (nothing was delegated)."""
    if not per_layer_csv.is_file():
        return []
    with open(per_layer_csv, newline="") as f:
        return [(row["Original Operator"], row["Target"]) for row in csv.DictReader(f)]


def check_one_delegate(delegation: dict, layers: list) -> dict:
    """The whole network must be one Ethos-U delegate; raise naming what runs on the CPU otherwise."""
    on_cpu = sorted(op for op in delegation["cpu_ops"] if op.rsplit(".", 1)[0] not in BOUNDARY_OPS)
    on_cpu += sorted({f"{op} (Vela)" for op, target in layers if target != "NPU"})
    if delegation["subgraphs"] == 0:
        raise UserError("no part of the network lands on the Ethos-U NPU (the partitioner took no operator); "
                        f"it runs on the CPU: {', '.join(on_cpu) or 'nothing'}. Export it for a Cortex-M target")
    if on_cpu or delegation["subgraphs"] != 1 or set(delegation["backends"]) != {"EthosUBackend"}:
        raise UserError(f"the network is not one Ethos-U delegate ({delegation['subgraphs']} delegated "
                        f"subgraphs); operators that fell back to the CPU: {', '.join(on_cpu) or 'none'}")
    return delegation


def check_stream_in_program(program: bytes, vela_npz: Path, tosa: Path) -> None:
    """Make sure the kept TOSA graph is the one compiled into this program: Vela's command
    stream and weights for it (written next to it) must be inside the program's delegate."""
    plan = plan_of(program)
    blob = plan.backend_delegate_data[plan.execution_plan[0].delegates[0].processed.index].data
    with np.load(vela_npz, allow_pickle=False) as compiled:
        parts = [compiled["cmd_data"].tobytes(), compiled["weight_data"].tobytes()]
    if not tosa.is_file() or not all(part in blob for part in parts):
        raise UserError(f"Vela's output for {tosa} is not the command stream in the program; export again")


def delegate_compile_flags(program: bytes) -> str:
    specs = plan_of(program).execution_plan[0].delegates[0].compile_specs
    return next((s.value.decode() for s in specs if s.key == "compile_flags"), "")
