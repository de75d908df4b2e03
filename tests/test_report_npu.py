"""The NPU parts of the report and the tables of npu-sweep and tune, on figures made up here."""
from pathlib import Path

from tinyrps.interfaces.report.markdown import npu_layers_section
from tinyrps.interfaces.report.search import npu_sweep_table, tune_table

LAYERS = [{"name": "conv", "op": "Conv2D", "npu_cycles": 40_000, "total_cycles": 40_000, "macs": 3_600_000,
           "utilisation": 0.7},
          {"name": "fc", "op": "FullyConnected", "npu_cycles": 30_000, "total_cycles": 110_000, "macs": 400_000,
           "utilisation": 0.03}]
VELA = {"clock_hz": 1_000_000_000, "npu_cycles": 70_000, "total_cycles": 150_000, "inference_ms": 0.15,
        "system_config": "Ethos_U85_SYS_DRAM_Mid", "memory_mode": "Dedicated_Sram", "layers": LAYERS}


def test_report_charts_each_target_layers_split_into_compute_and_memory_waits(tmp_path):
    (tmp_path / "run").mkdir()
    bench = {"programs": {"eager": {}, "ethos-u85-128": {"vela": VELA}, "ethos-u55-128": {"vela": VELA}}}
    parts = npu_layers_section(tmp_path, bench, lambda p: Path(p).relative_to(tmp_path).as_posix())
    text = "\n".join(parts)
    assert "ethos-u85-128: 53% of the cycles wait on memory" in text and "FullyConnected (fc), takes 73%" in text
    assert "![NPU layers](run/npu_layers.png)" in text
    assert (tmp_path / "run" / "npu_layers.png").stat().st_size > 10_000
    assert npu_layers_section(tmp_path, {"programs": {"eager": {}}}, str) == []


def config(accelerator, mode, ms, weights="DRAM"):
    return {"accelerator": accelerator, "system_config": "Ethos_U85_SYS_DRAM_Mid", "memory_mode": mode,
            "inference_ms": ms, "inferences_per_s": 1000 / ms, "sram_bytes": 40_000, "dram_bytes": 100_000,
            "flash_bytes": 0, "utilisation": 0.5, "utilisation_total": 0.3, "weights_in": weights, "mac_units": 128}


def test_sweep_table_has_a_table_per_memory_mode_and_every_refusal(capsys):
    result = {"vela_version": "5.1.0", "run": "RUN", "combinations": 4, "accelerators": ["ethos-u85-128"],
              "configs": [config("ethos-u85-128", "Sram_Only", 0.13, "SRAM"),
                          config("ethos-u85-128", "Dedicated_Sram", 0.21)],
              "refused": [{"accelerator": "ethos-u85-128", "system_config": "Ethos_U55_Deep_Embedded",
                           "memory_mode": m, "reason": "Invalid configuration of arena_mem_area=OffChipFlash"}
                          for m in ("Dedicated_Sram", "Dedicated_Sram_256KB")]}
    npu_sweep_table(result, {"plot": "P.png", "json": "J.json"})
    out = " ".join(capsys.readouterr().out.split())   # the console wraps long lines
    assert "2 of 4 combinations accepted" in out
    assert "memory mode Sram_Only (weights in SRAM)" in out and "memory mode Dedicated_Sram (weights in DRAM)" in out
    assert "refused (2): Invalid configuration of arena_mem_area=OffChipFlash" in out
    assert "Ethos_U55_Deep_Embedded with Dedicated_Sram, Dedicated_Sram_256KB: every accelerator" in out


def test_tune_table_marks_the_front_the_pick_failures_and_those_not_trained(capsys, tmp_path):
    done = {"state": "COMPLETE", "val_accuracy": 0.99, "npu_ms": 0.05, "sram_bytes": 40_000,
            "program_bytes": 100_000, "mcu_instructions": 5_000_000}
    candidates = [{"number": 0, "arch": "c8-p-c8-p-c8-p", **done},
                  {"number": 1, "arch": "c16-c32s2-c64s2-p-f128", **done, "npu_ms": 0.04},
                  {"number": 2, "arch": "c24-p", "state": "FAIL", "error": "arena too small"},
                  {"number": 3, "arch": "c24-c48-p-c64-p3-f80", "state": "PRUNED", "npu_ms": 0.265,
                   "sram_bytes": 75_472, "program_bytes": 234_672, "pruned": "NPU estimate 0.2650 ms before training"}]
    result = {"candidates": candidates, "pareto": candidates[1:2], "best": candidates[1],
              "final": {**candidates[1], "epochs": 4, "test_accuracy": 0.995}}
    tune_table(result, tmp_path)
    out = " ".join(capsys.readouterr().out.split())   # the console wraps long lines
    assert "#1 c16-c32s2-c64s2-p-f128" in out and "pick" in out and "failed" in out
    assert "#3 c24-c48-p-c64-p3-f80 not trained 0.2650 74 234,672" in out and out.count(" slow") == 2   # and the key
    assert "test accuracy 99.50 % on npu-ref" in out


def test_tune_table_keeps_every_figure_whole_in_80_columns(capsys, tmp_path, monkeypatch):
    longest = "c16-p-c16s2-c32-p3-p3-f128"   # the longest spec of the search space
    candidate = {"number": 123, "arch": longest, "state": "COMPLETE", "val_accuracy": 0.9756, "npu_ms": 0.0689,
                 "sram_bytes": 44_000, "program_bytes": 154_176, "mcu_instructions": 1_886_875}
    from tinyrps.interfaces.report.tables import out_console
    monkeypatch.setattr(out_console, "width", 80)
    tune_table({"candidates": [candidate], "pareto": [candidate], "best": candidate}, tmp_path)
    row = next(line for line in capsys.readouterr().out.splitlines() if "#123" in line)
    assert row.split() == ["#123", longest, "97.56", "%", "0.0689", "43", "154,176", "0.5", "pick"]


def test_the_tune_plot_takes_candidates_not_trained(tmp_path):
    """A candidate not trained has an NPU estimate and a program size but no accuracy: the plot shows it
    on the size panel only, without failing on the missing accuracy."""
    from tinyrps.interfaces.plots import plot_tune
    done = {"state": "COMPLETE", "val_accuracy": 0.99, "sram_bytes": 40_000, "program_bytes": 30_000}
    candidates = [{"number": 0, "arch": "c16-p-c32-p-c64-p-p3-f64", **done, "npu_ms": 0.04},
                  {"number": 1, "arch": "c8-p-c16-p-c32-p-p3", **done, "npu_ms": 0.02, "val_accuracy": 0.97},
                  {"number": 2, "arch": "c24-c48-p-c64-p3-f80", "state": "PRUNED", "npu_ms": 0.265,
                   "sram_bytes": 75_472, "program_bytes": 234_672}]
    plot_tune(candidates, candidates[:2], candidates[0], tmp_path / "tune.png")
    assert (tmp_path / "tune.png").stat().st_size > 10_000
