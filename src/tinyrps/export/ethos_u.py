"""Programs for Arm Ethos-U NPUs: int8 PTQ, lowered to TOSA, compiled by Vela into one delegate.

One target per accelerator configuration that Vela knows (`ethos-u55-128`,
`ethos-u85-256`, ...). The recipe quantizes with Arm's Ethos-U quantizer,
lowers the whole graph to TOSA, lets Vela compile it into an NPU command stream
and embeds that stream in the .pte. Only the input quantize and the output
dequantize are left to the CPU; anything else falling back is an error.

What the sidecar gets besides the common fields:
- "vela": Vela's performance estimate, read from Vela's summary CSV;
- "delegation": delegated subgraphs and the operators left on the CPU;
- "quantization": the scheme and the program's input/output (de)quantization;
- "ethos_u": the compiler settings and the sha256 of the TOSA graph Vela compiled
  (kept as RUN/export/T/out.tosa with Vela's per-layer table), which the
  `npu-ref` device runs through the TOSA reference model.
"""
from __future__ import annotations

import configparser
import contextlib
import ctypes
import csv
import hashlib
import importlib.util
import json
import os
import shutil
import sys
import traceback
from functools import lru_cache, partial
from pathlib import Path
from typing import Optional

import numpy as np

from ..artifacts import read_sidecar, run_config, sha256_file
from ..errors import UserError
from . import BuildContext, BuildResult, EvalContext, Target, register

# Every accelerator configuration of Vela 5.1 (ethosu.vela.architecture_features.Accelerator);
# the test suite checks that this list matches the installed Vela.
ACCELERATORS = (
    "ethos-u55-32", "ethos-u55-64", "ethos-u55-128", "ethos-u55-256",
    "ethos-u65-256", "ethos-u65-512",
    "ethos-u85-128", "ethos-u85-256", "ethos-u85-512", "ethos-u85-1024", "ethos-u85-2048",
)

# Arm's defaults per NPU family (ExecuTorch's Arm examples and build scripts).
DEFAULT_CONFIG = {
    "ethos-u55": ("Ethos_U55_High_End_Embedded", "Shared_Sram"),
    "ethos-u65": ("Ethos_U65_High_End", "Dedicated_Sram_384KB"),
    "ethos-u85": ("Ethos_U85_SYS_DRAM_Mid", "Dedicated_Sram"),
}

# Flags that make Vela print its per-layer and cycle estimates (kept in vela.log).
VELA_EXTRA_FLAGS = ["--verbose-performance", "--verbose-cycle-estimate"]

# Operators that may stay on the CPU: the float<->int8 conversion at the program's boundary.
BOUNDARY_OPS = {"quantized_decomposed::quantize_per_tensor", "quantized_decomposed::dequantize_per_tensor"}

TOSA_NAME = "out.tosa"
PER_LAYER_NAME = "vela_per_layer.csv"
SUMMARY_NAME = "vela_summary.csv"
LOG_NAME = "vela.log"

VELA_FIELDS = ("accelerator", "system_config", "memory_mode", "clock_hz", "npu_cycles", "total_cycles",
               "inference_ms", "inferences_per_s", "sram_bytes", "dram_bytes", "flash_bytes", "macs",
               "utilisation", "utilisation_total", "weights_in", "layers")
LAYER_FIELDS = ("name", "op", "npu_cycles", "total_cycles", "macs", "utilisation")


# --- configuration ------------------------------------------------------------------------------

def npu_family(accelerator: str) -> str:
    """'ethos-u55-128' -> 'ethos-u55'."""
    return accelerator.rsplit("-", 1)[0]


def macs_per_cycle(accelerator: str) -> int:
    """MACs per cycle of the whole configuration: the number in its name (for the two-core
    ethos-u65-512 that is both cores together, as in Vela)."""
    return int(accelerator.rsplit("-", 1)[1])


def vela_ini_path() -> Path:
    spec = importlib.util.find_spec("ethosu")
    return Path(next(iter(spec.submodule_search_locations))) / "config_files" / "Arm" / "vela.ini"


@lru_cache(maxsize=1)
def vela_config_names() -> tuple:
    """(system configs, memory modes) defined in the vela.ini that the Ethos-U compile spec uses."""
    ini = configparser.ConfigParser()
    ini.read(vela_ini_path())
    systems = tuple(s.split(".", 1)[1] for s in ini.sections() if s.startswith("System_Config."))
    modes = tuple(s.split(".", 1)[1] for s in ini.sections() if s.startswith("Memory_Mode."))
    return systems, modes


def ini_value(ini: configparser.ConfigParser, section: str, key: str) -> Optional[str]:
    """A key of a vela.ini section, following its `inherit=` chain as Vela does."""
    seen = set()
    while section and section not in seen and ini.has_section(section):
        seen.add(section)
        if ini.has_option(section, key):
            return ini.get(section, key)
        section = ini.get(section, "inherit", fallback=None)
    return None


@lru_cache(maxsize=None)
def weights_memory(system_config: str, memory_mode: str) -> str:
    """Where Vela places the weights: the memory ("Sram", "Dram", "OnChipFlash", "OffChipFlash")
    on the AXI port that the memory mode's const_mem_area names in the system config."""
    ini = configparser.ConfigParser()
    ini.read(vela_ini_path())
    port = ini_value(ini, f"Memory_Mode.{memory_mode}", "const_mem_area") or "Axi1"
    return ini_value(ini, f"System_Config.{system_config}", f"{port.lower()}_port") or "?"


def resolve_config(accelerator: str, options: dict) -> tuple:
    """The (system_config, memory_mode) to compile for: the user's, else Arm's default; validated by name."""
    default_system, default_mode = DEFAULT_CONFIG[npu_family(accelerator)]
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


def unavailable() -> Optional[str]:
    for module in ("ethosu.vela", "executorch.backends.arm.ethosu"):
        if importlib.util.find_spec(module.split(".")[0]) is None or importlib.util.find_spec(module) is None:
            return "Arm's Ethos-U tools are not installed: pip install 'executorch[ethos-u]==1.5.1'"
    return None


# --- the build ----------------------------------------------------------------------------------

class LoweringFailed(Exception):
    """A stage of the Ethos-U flow failed; `stage` names it for the user."""

    def __init__(self, stage: str, cause: BaseException):
        super().__init__(f"{stage}: {type(cause).__name__}: {cause}")
        self.stage = stage
        self.cause = cause


def build(accelerator: str, ctx: BuildContext) -> BuildResult:
    system_config, memory_mode = resolve_config(accelerator, ctx.options)
    intermediates = ctx.workdir / "ethos-u"
    intermediates.mkdir()
    log = ctx.workdir / LOG_NAME
    spec = compile_spec(accelerator, system_config, memory_mode, intermediates)
    try:
        with output_to(log):
            program = lower(ctx.model, ctx.calibration, spec)
    except LoweringFailed as e:
        with open(log, "a") as f:
            f.write("".join(traceback.format_exception(e.cause)))
        kept = keep_failed(ctx.workdir, accelerator)
        raise UserError(f"Ethos-U export for {accelerator} failed in {e.stage} ({one_line(e.cause)}); "
                        f"intermediate files and the compiler log are in {kept}") from None
    vela_out = intermediates / "output"
    summary_csv = vela_out / f"out_summary_{system_config}.csv"
    per_layer_csv = vela_out / "out_per-layer.csv"
    tosa = intermediates / TOSA_NAME
    delegation_info = check_one_delegate(delegation_of(program), per_layer_targets(per_layer_csv))
    check_stream_in_program(program, vela_out / "out_vela.npz", tosa)
    info = {
        "delegation": delegation_info,
        "vela": vela_summary(summary_csv, accelerator, per_layer_csv),
        "quantization": {"scheme": "int8, symmetric per-channel weights (EthosUQuantizer), PT2E post-training",
                         "calibration_images": int(len(ctx.calibration)),
                         **io_quantization(program)},
        "ethos_u": {"accelerator": accelerator, "system_config": system_config, "memory_mode": memory_mode,
                    "macs_per_cycle": macs_per_cycle(accelerator), "vela_version": vela_version(),
                    "compile_flags": delegate_compile_flags(program),
                    "tosa": TOSA_NAME, "tosa_sha256": hashlib.sha256(tosa.read_bytes()).hexdigest()},
    }
    keep = {TOSA_NAME: tosa, PER_LAYER_NAME: per_layer_csv, SUMMARY_NAME: summary_csv, LOG_NAME: log}
    # intermediates of an earlier failed attempt no longer describe anything
    shutil.rmtree(ctx.workdir.parent / f"{accelerator}.failed", ignore_errors=True)
    return BuildResult(program, info, keep)


def lower(model, calibration, spec) -> bytes:
    """Quantize, lower to TOSA, compile with Vela and serialize; a failing stage raises LoweringFailed."""
    import torch
    from executorch.backends.arm.ethosu import EthosUPartitioner
    from executorch.backends.arm.quantizer import EthosUQuantizer, get_symmetric_quantization_config
    from executorch.exir import EdgeCompileConfig, ExecutorchBackendConfig, to_edge_transform_and_lower

    from .host import example_input, pt2e_quantize
    try:
        quantizer = EthosUQuantizer(spec).set_global(get_symmetric_quantization_config(is_per_channel=True))
        quantized = pt2e_quantize(model, quantizer, calibration)
        exported = torch.export.export(quantized, example_input())
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


def keep_failed(workdir: Path, accelerator: str) -> Path:
    """Copy a failed build's intermediates to RUN/export/T.failed/ (the workdir is deleted afterwards)."""
    failed = workdir.parent / f"{accelerator}.failed"
    shutil.rmtree(failed, ignore_errors=True)
    shutil.copytree(workdir, failed)
    return failed


def one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= 300 else text[:297] + "..."


@contextlib.contextmanager
def output_to(path: Optional[Path]):
    """Send standard output, of Python and of native code, to a file (or to nowhere).

    Vela prints its reports with print(); the TOSA reference model prints a version
    note from C++ on every run. Neither belongs in tinyrps' output (stdout may carry
    --json results). Standard error, where the progress display lives, is left alone.
    """
    flush_stdout()
    saved = os.dup(1)
    with open(path if path else os.devnull, "a") as sink:
        try:
            os.dup2(sink.fileno(), 1)
            with contextlib.redirect_stdout(sink):
                yield
        finally:
            flush_stdout()  # native code's buffered output belongs to the sink, not to what comes back
            os.dup2(saved, 1)
            os.close(saved)


def flush_stdout() -> None:
    sys.stdout.flush()
    ctypes.CDLL(None).fflush(None)  # the C library's buffers, which native printf fills


# --- reading what the build produced ------------------------------------------------------------

def plan_of(program: bytes):
    from executorch.exir._serialize._program import deserialize_pte_binary
    return deserialize_pte_binary(program).program


def delegation_of(program: bytes) -> dict:
    from .host import delegation
    return delegation(program)


def per_layer_targets(per_layer_csv: Path) -> list:
    """(operator, target) of each layer in Vela's per-layer table; target is NPU or CPU."""
    with open(per_layer_csv, newline="") as f:
        return [(row["Original Operator"], row["Target"]) for row in csv.DictReader(f)]


def check_one_delegate(delegation: dict, layers: list) -> dict:
    """The whole network must be one Ethos-U delegate; raise naming what runs on the CPU otherwise."""
    on_cpu = sorted(op for op in delegation["cpu_ops"] if op.rsplit(".", 1)[0] not in BOUNDARY_OPS)
    on_cpu += sorted({f"{op} (Vela)" for op, target in layers if target != "NPU"})
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


def io_quantization(program: bytes) -> dict:
    """The program's input quantization and output dequantization (scale, zero point, range),
    read from the arguments of its quantize/dequantize kernel calls."""
    from executorch.exir.schema import KernelCall
    plan = plan_of(program).execution_plan[0]
    names = [op.name for op in plan.operators]
    sides = {"quantized_decomposed::quantize_per_tensor": "input",
             "quantized_decomposed::dequantize_per_tensor": "output"}
    found = {}
    for chain in plan.chains:
        for instruction in chain.instructions:
            call = instruction.instr_args
            if isinstance(call, KernelCall) and names[call.op_index] in sides:
                _, scale, zero_point, qmin, qmax = (plan.values[i].val for i in call.args[:5])
                found.setdefault(sides[names[call.op_index]], []).append(
                    {"scale": scale.double_val, "zero_point": zero_point.int_val,
                     "qmin": qmin.int_val, "qmax": qmax.int_val, "dtype": "int8"})
    if set(found) != {"input", "output"} or any(len(v) != 1 for v in found.values()):
        raise UserError("the program does not quantize its input and dequantize its output exactly once; "
                        "it is not a tinyrps Ethos-U program: export it again")
    return {side: entries[0] for side, entries in found.items()}


def delegate_compile_flags(program: bytes) -> str:
    specs = plan_of(program).execution_plan[0].delegates[0].compile_specs
    return next((s.value.decode() for s in specs if s.key == "compile_flags"), "")


def vela_version() -> str:
    from ethosu.vela._version import __version__
    return __version__


def vela_summary(summary_csv: Path, accelerator: str, per_layer_csv: Optional[Path] = None) -> dict:
    """Vela's performance estimate from its summary CSV (and per-layer CSV), in the sidecar's units.

    Vela reports memory in KiB and time in seconds. `utilisation` is the fraction of the
    configuration's MAC capacity used over the NPU cycles (Vela's figure); `utilisation_total`
    the same over all cycles, memory waits included (what the inference time reflects).
    Memory: with the weights on the SRAM port (Sram_Only), Vela books them as on-chip flash;
    here they count as SRAM, where they are. `layers`: one entry per NPU operation.
    """
    with open(summary_csv, newline="") as f:
        rows = list(csv.DictReader(f))
    if len(rows) != 1:
        raise UserError(f"Vela's summary {summary_csv} has {len(rows)} rows, expected 1; export again")
    row = rows[0]
    reported = row["accelerator_configuration"].lower().replace("_", "-")
    if reported != accelerator:
        raise UserError(f"Vela compiled for {reported}, not {accelerator}; export again")
    kib = lambda key: int(round(float(row.get(key) or 0.0) * 1024))  # noqa: E731
    npu_cycles = int(float(row["cycles_npu"]))
    total_cycles = int(float(row["cycles_total"]))
    macs = int(float(row["nn_macs"]))
    weights_in = weights_memory(row["system_config"], row["memory_mode"])
    sram, on_chip_flash = kib("sram_memory_used"), kib("on_chip_flash_memory_used")
    if weights_in == "Sram":
        sram, on_chip_flash = sram + on_chip_flash, 0
    result = {
        "accelerator": accelerator,
        "system_config": row["system_config"],
        "memory_mode": row["memory_mode"],
        "clock_hz": int(float(row["core_clock"])),
        "npu_cycles": npu_cycles,
        "total_cycles": total_cycles,
        "inference_ms": float(row["inference_time"]) * 1000.0,
        "inferences_per_s": float(row["inferences_per_second"]),
        "sram_bytes": sram,
        "dram_bytes": kib("dram_memory_used"),
        "flash_bytes": on_chip_flash + kib("off_chip_flash_memory_used"),
        "weights_in": {"Sram": "SRAM", "Dram": "DRAM"}.get(weights_in, "flash"),
        "macs": macs,
        "utilisation": utilisation(macs, npu_cycles, accelerator),
        "utilisation_total": utilisation(macs, total_cycles, accelerator),
    }
    if per_layer_csv is not None:
        result["layers"] = vela_layers(per_layer_csv, accelerator)
    return result


def utilisation(macs: int, cycles: int, accelerator: str) -> float:
    """MACs done / MACs the configuration could do in `cycles`."""
    return macs / (cycles * macs_per_cycle(accelerator)) if cycles else 0.0


def vela_layers(per_layer_csv: Path, accelerator: str) -> list:
    """One entry per operation of Vela's per-layer table: its name, the original operator,
    NPU cycles (compute), total cycles (compute and memory waits), MACs and utilisation
    over its total cycles (Vela's "Util% (MAC)"; 0 for an operation that takes no cycles)."""
    with open(per_layer_csv, newline="") as f:
        rows = list(csv.DictReader(f))
    layers = []
    for row in rows:
        total, macs = int(float(row["Op Cycles"])), int(float(row["MAC Count"]))
        layers.append({"name": row["Name"], "op": row["Original Operator"], "npu_cycles": int(float(row["NPU"])),
                       "total_cycles": total, "macs": macs, "utilisation": utilisation(macs, total, accelerator)})
    return layers


# --- evaluation ---------------------------------------------------------------------------------

def extra_eval(ctx: EvalContext) -> dict:
    """Agreement of this variant's predictions (on npu-ref) with the int8 CPU model's.

    The int8 CPU model is the `int8-xnnpack` program. When it was evaluated before
    this variant, its predictions are used as they are. Otherwise they are computed
    here from the same recipe without building the program: the checkpoint quantized
    by PT2E with the XNNPACK quantizer and the same calibration images as the
    int8-xnnpack export, run in PyTorch. That module computes what the int8-xnnpack
    program computes to within one int8 step of its output, so its predictions
    stand in for the program's.

    Returns {"agreement": fraction of predictions equal to the int8 CPU model's
             (replacing the driver's agreement with eager, which stays as "agreement_eager"),
             "agreement_with": "int8-xnnpack" or "int8-xnnpack recipe in PyTorch (PT2E)",
             "npu_estimate_ms": Vela's estimated inference time}.
    """
    predictions = ctx.logits.argmax(1)
    if "int8-xnnpack" in ctx.predictions:
        reference, source = np.asarray(ctx.predictions["int8-xnnpack"]), "int8-xnnpack"
    else:
        reference, source = int8_cpu_predictions(ctx.pte, ctx.images), "int8-xnnpack recipe in PyTorch (PT2E)"
    sidecar = read_sidecar(ctx.pte) or {}
    agreement = float((predictions == reference).mean()) if len(predictions) else 0.0
    return {"agreement": agreement, "agreement_with": source,
            "npu_estimate_ms": sidecar.get("vela", {}).get("inference_ms")}


def int8_cpu_predictions(pte: Path, images: np.ndarray) -> np.ndarray:
    """Predicted labels of the int8-xnnpack recipe (PT2E, XNNPACK quantizer) for the run that made `pte`."""
    import torch
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer, get_symmetric_quantization_config)

    from ..model import images_to_tensor, load_model
    from . import calibration_images
    from .host import pt2e_quantize
    run_dir = Path(pte).resolve().parent.parent
    checkpoint = run_dir / "model.pt"
    sidecar = read_sidecar(pte) or {}
    if not checkpoint.is_file() or sha256_file(checkpoint) != sidecar.get("checkpoint_sha256"):
        raise UserError(f"{pte} was not exported from {checkpoint} as it is now: export it again, "
                        f"or export and evaluate int8-xnnpack before it")
    quantizer = XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=True))
    module = pt2e_quantize(load_model(checkpoint), quantizer, calibration_images(run_config(run_dir)["data"]))
    with torch.no_grad():
        # the exported graph has a static batch of one
        return np.array([int(module(x.unsqueeze(0)).argmax()) for x in images_to_tensor(images)], dtype=np.int64)


# --- for bench and the report -------------------------------------------------------------------

def vela_table(run_dir) -> list:
    """One row per exported Ethos-U program of a run: size and Vela's estimate, in ACCELERATORS order."""
    rows = []
    for sidecar_path in sorted((Path(run_dir) / "export").glob("*.json")):
        try:
            sidecar = json.loads(sidecar_path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        vela = sidecar.get("vela") if isinstance(sidecar, dict) and sidecar.get("family") == "ethos-u" else None
        if not vela or not sidecar_path.with_suffix(".pte").is_file():
            continue
        rows.append({"target": sidecar["target"], "size_bytes": sidecar["size_bytes"],
                     "inference_ms": vela["inference_ms"], "inferences_per_s": vela["inferences_per_s"],
                     "sram_bytes": vela["sram_bytes"], "utilisation": vela["utilisation"],
                     "utilisation_total": vela.get("utilisation_total"), "layers": vela.get("layers", []),
                     "npu_cycles": vela["npu_cycles"], "system_config": vela["system_config"],
                     "memory_mode": vela["memory_mode"]})
    order = {name: i for i, name in enumerate(ACCELERATORS)}
    return sorted(rows, key=lambda r: (order.get(r["target"], len(order)), r["target"]))


# --- registration -------------------------------------------------------------------------------

def _description(accelerator: str) -> str:
    system_config, memory_mode = DEFAULT_CONFIG[npu_family(accelerator)]
    name = npu_family(accelerator).replace("ethos-u", "Ethos-U")
    return (f"int8 PTQ, one {name} delegate ({macs_per_cycle(accelerator)} MACs/cycle) via TOSA + Vela; "
            f"default {system_config}, {memory_mode}")


for _accelerator in ACCELERATORS:
    register(Target(_accelerator, "ethos-u", _description(_accelerator), partial(build, _accelerator), "npu-ref",
                    options=("system_config", "memory_mode"), extra_eval=extra_eval, unavailable=unavailable))
