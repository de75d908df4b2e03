import json

import pytest

pytestmark = pytest.mark.slow     # timed runs of a program


def test_bench_json_contract(cli, trained_run, exported):
    exported("int8-xnnpack")
    res = cli("bench", "--run", trained_run, "--json", "--runs", "20", "--variant", "int8-xnnpack")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    eager, int8 = out["variants"]["eager"], out["variants"]["int8-xnnpack"]
    assert eager["latency_ms"] > 0 and eager["runs"] >= 20
    assert int8["latency_ms"] > 0 and int8["size_bytes"] == exported("int8-xnnpack").stat().st_size
    assert abs(int8["ratio_to_eager"] - int8["latency_ms"] / eager["latency_ms"]) < 1e-9
    assert out["render_images_per_s"] > 0
