"""The hardware families a program can be built for: one `Family` record each, in one table.

A record says everything the stages need to know about a family, and nothing here
imports torch or ExecuTorch: listing targets, choosing a device, reading a program's
descriptor and refusing a bad command all stay fast.

    name        "cpu", "ethos-u" or "cortex-m": what descriptors and messages call it
    targets     the export targets of the family (name, description, options)
    devices     the devices that run its programs, the default first (tinyrps.devices)
    needs       what hardware its programs need, for the message to a user who picked
                the wrong device
    recipes     the module of tinyrps.export whose `build(target, ctx)` makes its programs
    reference   the module of tinyrps.reference whose `evaluate(ctx)` adds the family's
                checks to an evaluation (None: the family has none)
    info        the dataclass of what its program descriptors record beyond the common
                fields (tinyrps.hardware.descriptor writes and reads it)
    delegate    the ExecuTorch backend whose delegate marks its programs ("EthosUBackend"), or None
    operators   the operator namespace that marks its programs ("cortex_m::"), or None; a program
                marked by neither is the family's with no mark (cpu)
    tunable     the tuner can search networks for its targets: a program's latency has an
                estimate without hardware (Vela's, for the NPU)
    available   a cheap check: None when its targets can be built here, else the line
                that says what to install (looks for packages, imports none)

Adding a family is one record below, its `info` dataclass, and a recipes module
(plus a reference module if it has checks of its own). Measurements of a family's
programs belong to the measure stage (tinyrps.measure), not to its record.
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from .cores import CORES
from ..infra.errors import UserError

# --- what each family's descriptor records ------------------------------------------------------


@dataclass(frozen=True)
class CpuInfo:
    """A program for an application CPU in the ExecuTorch runtime: its delegates and the operators left outside them."""
    delegation: dict                       # {"subgraphs", "backends", "cpu_ops"}
    quantization: Optional[dict] = None    # {"scheme", "calibration"} for int8 programs


@dataclass(frozen=True)
class EthosUInfo:
    """A program whose network is one Ethos-U delegate, compiled by Vela from a TOSA graph."""
    accelerator: str
    system_config: str
    memory_mode: str
    macs_per_cycle: int
    vela_version: str
    compile_flags: str
    tosa: str              # the TOSA graph Vela compiled, kept in RUN/export/T/ (npu-ref runs it)
    tosa_sha256: str
    delegation: dict
    quantization: dict     # {"scheme", "calibration", "input": qparams, "output": qparams}


@dataclass(frozen=True)
class CortexMInfo:
    """A program of ExecuTorch's Cortex-M (CMSIS-NN) operators for the bare-metal runtime."""
    core: str              # the -mcpu the program's operators were lowered for, e.g. "cortex-m55"
    operators: tuple       # "cortex_m::quantized_conv2d.out", ... as the program names them
    quantization: dict     # {"scheme", "calibration", "io": "float" | "int8" (export --io)}
    reference: dict        # what the export checked the .pte replay against


# --- the records ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    name: str
    family: str
    description: str
    options: tuple = ()    # names of the command-line options this target takes


@dataclass(frozen=True)
class Family:
    name: str
    targets: tuple
    devices: tuple
    needs: str
    recipes: str
    info: type
    available: Callable[[], Optional[str]] = field(default=lambda: None, compare=False)
    reference: Optional[str] = None
    delegate: Optional[str] = None
    operators: Optional[str] = None
    tunable: bool = False

    @property
    def default_device(self) -> str:
        return self.devices[0]

    def marks(self, delegates, operators) -> bool:
        """Whether a program with these delegates (backend ids) and operators (names) carries this family's mark."""
        return (self.delegate is not None and self.delegate in delegates) or \
            (self.operators is not None and any(op.startswith(self.operators) for op in operators))


def _executorch_has(*parts: str) -> bool:
    """Whether the installed executorch package has this subpackage, without importing any of it
    (importlib.util.find_spec of a dotted name imports the parents: seconds for executorch)."""
    spec = importlib.util.find_spec("executorch")
    if spec is None or not spec.submodule_search_locations:
        return False
    return any(Path(root, *parts).is_dir() for root in spec.submodule_search_locations)


EXECUTORCH_INSTALL = "pip install 'executorch[ethos-u]==1.5.1'"


def _cpu_available() -> Optional[str]:
    return None if _executorch_has("exir") else f"ExecuTorch is not installed: {EXECUTORCH_INSTALL}"


def _ethos_u_available() -> Optional[str]:
    if importlib.util.find_spec("ethosu") is None or not _executorch_has("backends", "arm", "ethosu"):
        return f"Arm's Ethos-U tools are not installed: {EXECUTORCH_INSTALL}"
    return None


def _cortex_m_available() -> Optional[str]:
    if not _executorch_has("backends", "cortex_m"):
        return f"the installed executorch has no Cortex-M backend: {EXECUTORCH_INSTALL}"
    return None


# Ethos-U: every accelerator configuration of Vela 5.1 (ethosu.vela.architecture_features.Accelerator;
# the test suite checks this list against the installed Vela), and Arm's default system config and
# memory mode per NPU (ExecuTorch's Arm examples and build scripts).
ACCELERATORS = (
    "ethos-u55-32", "ethos-u55-64", "ethos-u55-128", "ethos-u55-256",
    "ethos-u65-256", "ethos-u65-512",
    "ethos-u85-128", "ethos-u85-256", "ethos-u85-512", "ethos-u85-1024", "ethos-u85-2048",
)
NPU_DEFAULT_CONFIG = {
    "ethos-u55": ("Ethos_U55_High_End_Embedded", "Shared_Sram"),
    "ethos-u65": ("Ethos_U65_High_End", "Dedicated_Sram_384KB"),
    "ethos-u85": ("Ethos_U85_SYS_DRAM_Mid", "Dedicated_Sram"),
}


def npu_family(accelerator: str) -> str:
    """'ethos-u55-128' -> 'ethos-u55'."""
    return accelerator.rsplit("-", 1)[0]


def macs_per_cycle(accelerator: str) -> int:
    """MACs per cycle of the whole configuration: the number in its name (for the two-core
    ethos-u65-512 that is both cores together, as in Vela)."""
    return int(accelerator.rsplit("-", 1)[1])


def _ethos_u_description(accelerator: str) -> str:
    system_config, memory_mode = NPU_DEFAULT_CONFIG[npu_family(accelerator)]
    name = npu_family(accelerator).replace("ethos-u", "Ethos-U")
    return (f"int8 PTQ, one {name} delegate ({macs_per_cycle(accelerator)} MACs/cycle) via TOSA + Vela; "
            f"default {system_config}, {memory_mode}")


FAMILIES = (
    Family("cpu",
           targets=(Target("fp32", "cpu", "float32, ExecuTorch portable kernels"),
                    Target("fp32-xnnpack", "cpu", "float32, XNNPACK delegate"),
                    Target("int8-xnnpack", "cpu", "int8 PTQ, XNNPACK delegate")),
           devices=("executorch",), needs="the ExecuTorch runtime on an application CPU", recipes="cpu",
           info=CpuInfo, available=_cpu_available),
    Family("ethos-u",
           targets=tuple(Target(a, "ethos-u", _ethos_u_description(a), ("system_config", "memory_mode"))
                         for a in ACCELERATORS),
           devices=("npu", "npu-ref", "mcu"), needs="the Arm Ethos-U NPU", recipes="ethos_u", info=EthosUInfo,
           available=_ethos_u_available, reference="ethos_u", delegate="EthosUBackend",
           tunable=True),
    Family("cortex-m",
           targets=tuple(Target(core.name, "cortex-m", f"int8 CMSIS-NN operators for {core.description}, "
                                "bare-metal runtime", ("io",)) for core in CORES),
           devices=("mcu", "native"), needs="a Cortex-M core with the CMSIS-NN operators", recipes="cortex_m",
           info=CortexMInfo, available=_cortex_m_available, reference="cortex_m", operators="cortex_m::"),
)

_BY_NAME = {f.name: f for f in FAMILIES}
# A family renamed after 0.1.0: descriptors written before name it so, and are read as the new name for one
# release ("host" was also a device, the HTTP address and the machine; the family is an application CPU).
OLD_FAMILY_NAMES = {"host": "cpu"}


def family_names() -> tuple:
    return tuple(_BY_NAME)


def get_family(name: str) -> Family:
    if name not in _BY_NAME:
        raise UserError(f"unknown hardware family '{name}'; valid: {', '.join(_BY_NAME)}")
    return _BY_NAME[name]


def family_marked(delegates, operators) -> str:
    """The family of a program with these delegates and operators: the first whose mark it carries, else
    the one family without a mark."""
    marked = [f for f in FAMILIES if f.marks(delegates, operators)]
    if marked:
        return marked[0].name
    (unmarked,) = [f for f in FAMILIES if f.delegate is None and f.operators is None]
    return unmarked.name


def targets() -> dict:
    """Every target, family by family in table order: target name -> Target."""
    return {t.name: t for f in FAMILIES for t in f.targets}


def get_target(name: str) -> Target:
    all_targets = targets()
    if name not in all_targets:
        raise UserError(f"unknown target '{name}'; valid targets: {', '.join(all_targets)}")
    return all_targets[name]


def family_of_target(name: str) -> Family:
    return get_family(get_target(name).family)
