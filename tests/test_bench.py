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
    from tinyrps.report import firmware_rows, layer_tables
    layers = [{"op": "cortex_m::quantize_per_tensor", "kernels": "c", "macs": 0, "instructions": 90,
               "instructions_plain_c": 90},
              {"op": "cortex_m::quantized_conv2d", "kernels": "dsp", "macs": 1000, "instructions": 2500,
               "instructions_plain_c": 4000},
              {"op": "cortex_m::quantized_max_pool2d", "kernels": "dsp", "macs": 0, "instructions": 300,
               "instructions_plain_c": 300}]
    firmware = {"board": "mps2-an505", "core": "cortex-m33", "kernels": "dsp", "flash_bytes": 480_000,
                "ram_bytes": 72_000, "instructions_per_inference": 2_900, "instructions_per_mac": 2.9,
                "instructions_per_inference_plain_c": 4_400, "instructions_per_mac_plain_c": 4.4, "layers": layers}
    result = {"programs": {"eager": {"device": "eager", "latency_ms": 0.5},
                           "cortex-m33": {"device": "mcu", "latency_ms": 61.4, "firmware": firmware}}}
    assert firmware_rows(result) == [["cortex-m33", "mps2-an505", "469", "70.3", "0.00", "2.90", "0.00", "4.40", "61"]]
    (title, rows), = layer_tables(result)
    assert "mps2-an505" in title and "dsp" in title
    assert rows == [["quantize_per_tensor", "c", "", "90", "", "90", ""],
                    ["conv2d", "dsp", "1,000", "2,500", "2.50", "4,000", "4.00"],
                    ["max_pool2d", "dsp", "", "300", "", "300", ""]]


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
