"""An Ethos-U program's per-layer table across its system (tinyrps.interfaces.report.system_layers): the CPU
part's instructions on the emulated Cortex-M55 (measure stage `cpu_part`) and the NPU part's Vela
estimates in one table, in `tinyrps measure` and the report."""
from __future__ import annotations

import csv
import json

import pytest

from tinyrps.interfaces.report.system_layers import markdown_parts, system_table

CPU_PART = {"board": "mps3-an547", "core": "cortex-m55", "kernels": "mve", "instructions_per_inference": 4_906,
            "estimated_cycles_per_inference": 6_500, "clock_hz": 32_000_000, "uncertainty": 0.3,
            "layers": [{"op": "cortex_m::quantize_per_tensor", "kernels": "mve", "instructions": 3_781,
                        "estimated_cycles": 4_900},
                       {"op": "EthosUBackend", "kernels": "npu", "instructions": 1_042, "estimated_cycles": 1_500},
                       {"op": "cortex_m::dequantize_per_tensor", "kernels": "mve", "instructions": 63,
                        "estimated_cycles": 100}]}
NPU_LAYERS = [{"name": "conv", "op": "Conv2D", "npu_cycles": 40_000, "total_cycles": 41_000, "macs": 3_600_000,
               "sram_access_cycles": 15_000, "dram_access_cycles": 0, "flash_access_cycles": 3_000},
              {"name": "fc", "op": "FullyConnected", "npu_cycles": 60_000, "total_cycles": 360_000, "macs": 400_000,
               "sram_access_cycles": 400, "dram_access_cycles": 0, "flash_access_cycles": 360_000}]
VELA = {"accelerator": "ethos-u55-128", "clock_hz": 500_000_000, "layers": NPU_LAYERS, "total_cycles": 401_000,
        "sram_traffic_bytes": 413_324, "dram_traffic_bytes": 0, "flash_traffic_bytes": 387_536}


def test_one_table_puts_the_npu_operations_under_the_delegate_call_with_totals():
    table = system_table("ethos-u55-128", {"cpu_part": CPU_PART, "vela": VELA})
    assert table.header == ["layer", "on", "CPU instr", "CPU cyc", "NPU cyc", "all cyc", "SRAM cyc", "flash cyc"]
    assert [row[:3] for row in table.rows] == [
        ["quantize_per_tensor", "CPU", "3,781"], ["Ethos-U delegate call", "CPU", "1,042"],
        ["  Conv2D", "NPU", ""], ["  FullyConnected", "NPU", ""], ["dequantize_per_tensor", "CPU", "63"],
        ["total", "", "4,886"]]
    assert [row[3] for row in table.rows] == ["4,900", "1,500", "", "", "100", "6,500"]
    assert table.rows[2][4:] == ["40,000", "41,000", "15,000", "3,000"]
    assert table.rows[-1][4:] == ["100,000", "401,000", "15,400", "363,000"]
    # the instructions are the emulator's and the cycles Vela's estimates: the table says both
    assert "QEMU counts instructions, not cycles" in table.note and "Vela's estimates, not measured" in table.note
    assert "SRAM 413,324 B, flash 387,536 B" in table.note and "4,906" in table.note
    assert "mps3-an547" in table.title and "ethos-u55-128" in table.title


def test_dram_gets_a_column_only_where_the_npu_uses_it():
    with_dram = [{**NPU_LAYERS[0], "dram_access_cycles": 7}, NPU_LAYERS[1]]
    table = system_table("x", {"cpu_part": CPU_PART, "vela": {**VELA, "layers": with_dram}})
    assert table.header[6:] == ["SRAM cyc", "DRAM cyc", "flash cyc"] and table.rows[2][7] == "7"


def test_one_inference_is_estimated_at_the_systems_clock_with_each_part_and_its_source():
    note = " ".join(system_table("x", {"cpu_part": CPU_PART, "vela": VELA}).note.split())
    # 6,500 + 401,000 cycles at 500 MHz: 0.013 + 0.802 ms
    assert "One inference at the system's 500 MHz" in note
    assert "CPU part 6,500 cycles = 0.013 ms (cycle model, ±30%)" in note
    assert "NPU part 401,000 cycles = 0.802 ms (Vela)" in note and "about 0.815 ms in all" in note
    # a measurement without the CPU's estimate (taken before the model ran on it) has no such line
    older = {**CPU_PART, "estimated_cycles_per_inference": None}
    assert "One inference" not in system_table("x", {"cpu_part": older, "vela": VELA}).note


def test_no_table_without_both_parts():
    assert system_table("x", {"vela": VELA}) is None and system_table("x", {"cpu_part": CPU_PART}) is None
    assert markdown_parts({"programs": {"eager": {}, "cortex-m55": {"firmware": {}}}}) == []


def test_the_report_writes_the_table(markdown_tables):
    parts = markdown_parts({"programs": {"eager": {}, "ethos-u55-128": {"cpu_part": CPU_PART, "vela": VELA}}})
    assert parts[0].startswith("#### ethos-u55-128: per layer, the CPU part on mps3-an547")
    (table,) = markdown_tables(parts[1])
    assert table[-1][:3] == ["total", "", "4,886"] and "not cycles" in parts[2]


# --- measured on the board and read from Vela's tables ----------------------------------------------------------

@pytest.mark.slow
def test_measure_counts_the_cpu_part_on_the_board_and_prints_the_table(exported, measured, cli):
    pte = exported("ethos-u55-128")
    figures = measured(pte)
    cpu = figures["cpu_part"]
    ops = [layer["op"] for layer in cpu["layers"]]
    assert ops[0].endswith("quantize_per_tensor") and ops[-1].endswith("dequantize_per_tensor")
    assert ops.count("EthosUBackend") == 1 and cpu["board"] == "mps3-an547"
    assert all(layer["instructions"] > 0 for layer in cpu["layers"])
    # the cycle model's estimate of each call: within the model's bounds of its instructions
    assert all(0.5 * layer["instructions"] <= layer["estimated_cycles"] <= 4 * layer["instructions"]
               for layer in cpu["layers"])
    assert cpu["estimated_cycles_per_inference"] == sum(layer["estimated_cycles"] for layer in cpu["layers"])
    assert 0 < cpu["instructions_per_inference"] < 100_000     # the NPU's work is not the board's
    # Vela's per-layer memory cycles add up to its summary's
    vela = figures["vela"]
    with open(pte.parent / pte.stem / "vela_summary.csv", newline="") as f:
        (summary,) = list(csv.DictReader(f))
    assert sum(n["sram_access_cycles"] for n in vela["layers"]) == int(float(summary["cycles_sram_access"]))
    assert sum(n["flash_access_cycles"] for n in vela["layers"]) == int(float(summary["cycles_on_chip_flash_access"])) \
        + int(float(summary["cycles_off_chip_flash_access"]))
    assert vela["sram_traffic_bytes"] == int(float(summary["sram_total_bytes"]))
    result = cli("measure", "--model", pte)
    assert result.returncode == 0, result.stderr
    out = " ".join(result.stdout.split())
    assert "Ethos-U delegate call CPU" in out and "NPU" in out and "QEMU counts instructions, not cycles" in out
    assert f"{cpu['instructions_per_inference']:,}" in out and "One inference at the system's" in out
    as_json = cli("measure", "--model", pte, "--json")
    assert json.loads(as_json.stdout)["ethos-u55-128"]["cpu_part"]["layers"] == cpu["layers"]
