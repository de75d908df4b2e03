"""Vela, Arm's Ethos-U compiler: its configuration file and what it reports.

The export compiles with Vela (tinyrps.export.ethos_u) and keeps its summary and
per-layer tables beside the program; the measure stage (tinyrps.measure) and the NPU
sweep (tinyrps.measure.npu_sweep) read them here into tinyrps's units. Nothing here imports Vela
or ExecuTorch until a function needs it.
"""
from __future__ import annotations

import configparser
import csv
import importlib.util
from functools import lru_cache
from pathlib import Path
from typing import Optional

from ..infra.errors import UserError
from .families import macs_per_cycle

# Flags that make Vela print its per-layer and cycle estimates (kept in vela.log).
VELA_EXTRA_FLAGS = ["--verbose-performance", "--verbose-cycle-estimate"]

# What the export keeps of a compile, in RUN/export/T/.
TOSA_NAME = "out.tosa"
PER_LAYER_NAME = "vela_per_layer.csv"
SUMMARY_NAME = "vela_summary.csv"
LOG_NAME = "vela.log"

VELA_FIELDS = ("accelerator", "system_config", "memory_mode", "clock_hz", "npu_cycles", "total_cycles",
               "inference_ms", "inferences_per_s", "sram_bytes", "dram_bytes", "flash_bytes", "macs",
               "utilisation", "utilisation_total", "weights_in", "layers")
LAYER_FIELDS = ("name", "op", "npu_cycles", "total_cycles", "macs", "utilisation", "sram_access_cycles",
                "dram_access_cycles", "flash_access_cycles")


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


def vela_version() -> str:
    from ethosu.vela._version import __version__
    return __version__


def vela_summary(summary_csv: Path, accelerator: str, per_layer_csv: Optional[Path] = None) -> dict:
    """Vela's performance estimate from its summary CSV (and per-layer CSV), in tinyrps's units.

    Vela reports memory in KiB and time in seconds. `utilisation` is the fraction of the
    configuration's MAC capacity used over the NPU cycles (Vela's figure); `utilisation_total`
    the same over all cycles, memory waits included (what the inference time reflects).
    Memory: with the weights on the SRAM port (Sram_Only), Vela books them as on-chip flash;
    here they count as SRAM, where they are (their traffic too). `layers`: one entry per NPU operation.
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
        **{key: _cycles(row, columns) for key, columns in TRAFFIC_COLUMNS.items()},
    }
    if per_layer_csv is not None:
        result["layers"] = vela_layers(per_layer_csv, accelerator)
    if weights_in == "Sram":        # the "flash" Vela books is the SRAM port's, as above
        for entry, (flash, sram) in [(result, ("flash_traffic_bytes", "sram_traffic_bytes"))] + \
                [(layer, ("flash_access_cycles", "sram_access_cycles")) for layer in result.get("layers", [])]:
            entry[sram], entry[flash] = entry[sram] + entry[flash], 0
    return result


def utilisation(macs: int, cycles: int, accelerator: str) -> float:
    """MACs done / MACs the configuration could do in `cycles`."""
    return macs / (cycles * macs_per_cycle(accelerator)) if cycles else 0.0


# Vela's per-layer cycles spent accessing each memory (its "AC" columns), by the memory as tinyrps names it.
ACCESS_COLUMNS = {"sram_access_cycles": ("SRAM AC",), "dram_access_cycles": ("DRAM AC",),
                  "flash_access_cycles": ("OnFlash AC", "OffFlash AC")}
# The whole inference's traffic in bytes (Vela's summary), by memory.
TRAFFIC_COLUMNS = {"sram_traffic_bytes": ("sram_total_bytes",), "dram_traffic_bytes": ("dram_total_bytes",),
                   "flash_traffic_bytes": ("on_chip_flash_total_bytes", "off_chip_flash_total_bytes")}


def _cycles(row: dict, columns: tuple) -> int:
    return sum(int(float(row.get(column) or 0.0)) for column in columns)


def vela_layers(per_layer_csv: Path, accelerator: str) -> list:
    """One entry per operation of Vela's per-layer table: its name, the original operator,
    NPU cycles (compute), total cycles (compute and memory waits), MACs and utilisation
    over its total cycles (Vela's "Util% (MAC)"; 0 for an operation that takes no cycles), and the
    cycles it spends accessing SRAM, DRAM and flash (ACCESS_COLUMNS)."""
    with open(per_layer_csv, newline="") as f:
        rows = list(csv.DictReader(f))
    layers = []
    for row in rows:
        total, macs = int(float(row["Op Cycles"])), int(float(row["MAC Count"]))
        layers.append({"name": row["Name"], "op": row["Original Operator"], "npu_cycles": int(float(row["NPU"])),
                       "total_cycles": total, "macs": macs, "utilisation": utilisation(macs, total, accelerator),
                       **{key: _cycles(row, columns) for key, columns in ACCESS_COLUMNS.items()}})
    return layers


def measure_program(pte, described, quick: bool = False) -> dict:
    """The measure stage's `vela` figures of an Ethos-U program: Vela's estimate, read from the
    summary and per-layer tables its export kept (T/vela_summary.csv, T/vela_per_layer.csv)."""
    from .descriptor import kept_file
    paths = {name: kept_file(pte, described, name) for name in (SUMMARY_NAME, PER_LAYER_NAME)}
    return vela_summary(paths[SUMMARY_NAME], described.info.accelerator, paths[PER_LAYER_NAME])
