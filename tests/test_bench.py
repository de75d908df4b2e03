import json

import pytest

pytestmark = pytest.mark.slow     # timed runs of a program


def test_bench_json_contract(cli, trained_run, exported):
    exported("int8-xnnpack")
    res = cli("bench", "--run", trained_run, "--json", "--runs", "20", "--program", "int8-xnnpack")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    eager, int8 = out["programs"]["eager"], out["programs"]["int8-xnnpack"]
    assert eager["latency_ms"] > 0 and eager["runs"] >= 20
    assert int8["latency_ms"] > 0 and int8["size_bytes"] == exported("int8-xnnpack").stat().st_size
    ratio = int8["latency_ms"] / eager["latency_ms"]
    if eager["iqr_ms"] / eager["latency_ms"] > ratio:      # a loaded machine: the ratio is refused, and says why
        assert int8["ratio_to_eager"] is None and "run the benchmark again" in int8["ratio_refused"]
    else:
        assert abs(int8["ratio_to_eager"] - ratio) < 1e-9 and "ratio_refused" not in int8
    assert out["render_images_per_s"] > 0


def test_firmware_tables_have_one_row_per_board_and_layers_side_by_side():
    from tinyrps.interfaces.report.speed import firmware_rows, layer_tables
    layers = [{"op": "cortex_m::quantize_per_tensor", "kernels": "c", "macs": 0, "instructions": 90,
               "instructions_plain_c": 90},
              {"op": "cortex_m::quantized_conv2d", "kernels": "dsp", "macs": 1000, "instructions": 2500,
               "instructions_plain_c": 4000},
              {"op": "cortex_m::quantized_max_pool2d", "kernels": "dsp", "macs": 0, "instructions": 300,
               "instructions_plain_c": 300}]
    firmware = {"board": "mps2-an505", "core": "cortex-m33", "kernels": "dsp", "flash_bytes": 480_000,
                "ram_bytes": 72_000, "instructions_per_inference": 2_900, "instructions_per_mac": 2.9,
                "instructions_per_inference_plain_c": 4_400, "instructions_per_mac_plain_c": 4.4, "layers": layers}
    cycles = {"core": "cortex-m33", "estimated_cycles_per_inference": 4_350, "uncertainty": 0.2, "clock_hz": 20_000_000,
              "estimated_ms": 0.2175, "layers": [{"estimated_cycles": n} for n in (120, 3_800, 430)]}
    result = {"programs": {"eager": {"device": "eager", "latency_ms": 0.5},
                           "cortex-m33": {"device": "mcu", "latency_ms": 61.4, "firmware": firmware, "cycles": cycles,
                                          "simulated_by": "QEMU"}}}
    assert firmware_rows(result) == [["cortex-m33", "mps2-an505", "469", "70.3", "0.00", "2.90", "0.00", "4.40", "61",
                                      "0.00 ±20%"]]
    (title, rows), = layer_tables(result)
    assert "mps2-an505" in title and "dsp" in title
    assert rows == [["quantize_per_tensor", "c", "", "90", "", "90", "", "120"],
                    ["conv2d", "dsp", "1,000", "2,500", "2.50", "4,000", "4.00", "3,800"],
                    ["max_pool2d", "dsp", "", "300", "", "300", "", "430"]]
    # without an estimate the column stays empty; the hardware's time is the estimate's, never QEMU's
    del result["programs"]["cortex-m33"]["cycles"]
    assert firmware_rows(result)[0][-1] == "" and layer_tables(result)[0][1][0][-1] == ""


def test_the_chart_shows_each_programs_time_on_its_hardware():
    """Measured where the program ran on this CPU; Vela's estimate for the NPU; the cycle estimate with its band
    for an emulated Cortex-M; a simulated program without an estimate is not charted."""
    from tinyrps.interfaces.report.speed import device_cell, device_rows
    cycles = {"estimated_ms": 84.4, "uncertainty": 0.3, "clock_hz": 32_000_000}
    bench = {"programs": {
        "eager": {"device": "eager", "latency_ms": 0.8},
        "int8-xnnpack": {"device": "executorch", "latency_ms": 0.12, "ratio_to_eager": 0.15},
        "ethos-u85-128": {"device": "npu-ref", "latency_ms": 13.3, "simulated_by": "the TOSA reference model",
                          "vela": {"inference_ms": 0.207}},
        "cortex-m55": {"device": "mcu", "latency_ms": 102.4, "simulated_by": "QEMU", "cycles": cycles},
        "cortex-m4": {"device": "mcu", "latency_ms": 52.7, "simulated_by": "QEMU"}}}
    rows = {r["name"]: r for r in device_rows(bench)}
    assert list(rows) == ["eager (eager)", "int8-xnnpack (executorch)", "ethos-u85-128 (npu-ref)", "cortex-m55 (mcu)"]
    assert rows["int8-xnnpack (executorch)"]["latency_ms"] == 0.12 and rows["int8-xnnpack (executorch)"]["ratio_to_eager"] == 0.15
    assert rows["ethos-u85-128 (npu-ref)"]["latency_ms"] == 0.207 and rows["ethos-u85-128 (npu-ref)"]["band"] == 0
    m55 = rows["cortex-m55 (mcu)"]
    assert (m55["latency_ms"], m55["band"], m55["what"]) == (84.4, 0.3, "cycle estimate at 32 MHz")
    assert device_cell(bench["programs"]["cortex-m55"]) == "84.4 ±30% (est., 32 MHz)"
    assert device_cell(bench["programs"]["ethos-u85-128"]) == "0.2070 (Vela est.)"
    assert device_cell(bench["programs"]["cortex-m4"]) == ""


def test_a_ratio_is_refused_when_the_baseline_spreads_more_than_it():
    from tinyrps.bench import ratio_to, spread
    steady = spread([0.30, 0.31, 0.30, 0.32, 0.31])
    wild = spread([0.3, 0.3, 90.0, 94.0, 0.3, 95.0, 0.3, 92.0])
    fast = spread([0.03] * 5)
    assert steady["q1_ms"] <= steady["latency_ms"] <= steady["q3_ms"] and steady["iqr_ms"] == pytest.approx(0.01)
    assert ratio_to(fast, steady)["ratio_to_eager"] == pytest.approx(0.03 / 0.31)
    refused = ratio_to(fast, wild)
    assert refused["ratio_to_eager"] is None and "spread" in refused["ratio_refused"]
    slow = spread([500.0] * 5)
    assert ratio_to(slow, wild)["ratio_to_eager"] > 1      # a ratio far above the spread still holds
