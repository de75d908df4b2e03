"""An Ethos-U program layer by layer across its system: what ran on the CPU and what on the NPU.

    system_table(name, measured) -> SystemTable or None    (measured: the measure stage's figures,
                                                            or a benchmark's entry, with "cpu_part" and "vela")

One table in the program's order: each kernel call of the CPU part with its instructions on the
emulated Cortex-M55 (the measure stage's `cpu_part`), and under the delegate call each operation
Vela compiled for the NPU with Vela's estimated cycles: computing, in all, and spent accessing
SRAM, DRAM (where any) and flash. The two kinds of figure are never added together: QEMU counts
instructions, not cycles, and Vela's cycles are an estimate. `tinyrps measure` prints the table
(print_system_tables), the report writes it in Markdown (markdown_parts).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

DELEGATE_KERNELS = "npu"        # the kernel name the runtime gives an Ethos-U delegate's call


@dataclass(frozen=True)
class SystemTable:
    title: str
    header: list
    rows: list
    note: str


def _count(value) -> str:
    return "" if value is None else f"{value:,}"


def _cpu_name(op: str) -> str:
    """"cortex_m::quantize_per_tensor" -> "quantize_per_tensor"; the delegate's call by what it is."""
    return "Ethos-U delegate call" if op == "EthosUBackend" else op.split("::")[-1]


def system_table(name: str, measured: dict) -> Optional[SystemTable]:
    cpu, vela = measured.get("cpu_part"), measured.get("vela")
    if not cpu or not vela or not vela.get("layers"):
        return None
    npu_layers = vela["layers"]
    with_dram = any(layer.get("dram_access_cycles") for layer in npu_layers)
    memories = ["SRAM"] + (["DRAM"] if with_dram else []) + ["flash"]
    header = ["layer", "on", "CPU instr", "CPU cyc", "NPU cyc", "all cyc", *[f"{m} cyc" for m in memories]]
    keys = [f"{m.lower()}_access_cycles" for m in memories]
    blank = [""] * (3 + len(memories))
    rows, placed = [], False
    for layer in cpu["layers"]:
        rows.append([_cpu_name(layer["op"]), "CPU", _count(layer["instructions"]),
                     _count(layer.get("estimated_cycles")), *blank[1:]])
        if layer["kernels"] == DELEGATE_KERNELS and not placed:    # Vela's table covers the program's delegates
            placed = True
            rows += [[f"  {n['op']}", "NPU", "", "", _count(n["npu_cycles"]), _count(n["total_cycles"]),
                      *[_count(n.get(key)) for key in keys]] for n in npu_layers]
    rows.append(["total", "", _count(sum(layer["instructions"] for layer in cpu["layers"])),
                 _count(cpu.get("estimated_cycles_per_inference")),
                 *[_count(sum(n.get(key) or 0 for n in npu_layers)) for key in ("npu_cycles", "total_cycles", *keys)]])
    title = (f"{name}: per layer, the CPU part on {cpu['board']} ({cpu['core']}) and the NPU part on "
             f"{vela['accelerator']}")
    traffic = ", ".join(f"{m} {vela[f'{m.lower()}_traffic_bytes']:,} B" for m in memories
                        if f"{m.lower()}_traffic_bytes" in vela)
    note = (f"on: the CPU or the NPU. CPU instr: instructions per inference on the emulated board, mean of the "
            f"measurement's inputs (QEMU counts instructions, not cycles; the whole run, calls and all: "
            f"{cpu['instructions_per_inference']:,}); the delegate call's are the CPU's side of the job (copies, "
            "the driver call). CPU cyc: the cycle model's estimate of the same calls on a real "
            f"{cpu['core']} (QEMU's trace and a timing model, not a measurement). NPU cyc: Vela's "
            f"estimate at {vela['clock_hz'] / 1e6:g} MHz, computing; all cyc: memory waits included; "
            f"{', '.join(memories)} cyc: spent accessing each memory (Vela's estimates, not measured)."
            + (f" Vela's estimate of one inference's traffic: {traffic}." if traffic else "")
            + whole_inference_line(cpu, vela))
    return SystemTable(title, header, rows, note)


def whole_inference_line(cpu: dict, vela: dict) -> str:
    """One inference at the system's clock, each part with its source; empty without the CPU's estimate."""
    if cpu.get("estimated_cycles_per_inference") is None or vela.get("total_cycles") is None:
        return ""
    from ...measure.npu_system import whole_inference
    w = whole_inference(cpu, vela)
    return (f" One inference at the system's {w['clock_hz'] / 1e6:g} MHz (Vela's system config, the CPU's clock "
            f"too), estimated: CPU part {w['cpu_cycles']:,} cycles = {w['cpu_ms']:.3f} ms (cycle model, "
            f"±{w['cpu_uncertainty']:.0%}), NPU part {w['npu_cycles']:,} cycles = {w['npu_ms']:.3f} ms (Vela), "
            f"about {w['ms']:.3f} ms in all, the CPU waiting while the NPU runs.")


def print_system_tables(results: dict) -> None:
    """Each Ethos-U program's table on stdout (results: name -> the measure stage's figures)."""
    from .tables import out_console, print_table
    for name, measured in results.items():
        table = system_table(name, measured)
        if table is not None:
            print_table(table.title, table.header, table.rows, text_columns=2)
            out_console.print(table.note)


def markdown_parts(bench: dict) -> list:
    """The report's tables: a heading, the table and its note per Ethos-U program of the benchmark."""
    from .tables import markdown_table
    parts = []
    for name, entry in bench["programs"].items():
        table = system_table(name, entry)
        if table is not None:
            parts += [f"#### {table.title}", markdown_table(table.header, table.rows), table.note]
    return parts
