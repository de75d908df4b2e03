"""The memory plan's largest live set (tinyrps.measure.live_set) and the columns `measure` shows beside the
arena: the live set, and the gap between them.

MLPerf Tiny's FC autoencoder makes the figures plain: with float I/O its largest live set is at the first
call, the float32 input (640 x 4 B) and its int8 copy (640 B); with `--io int8` it is the int8 input and
the first layer's 128 int8 outputs."""
from __future__ import annotations

import pytest

from tinyrps.devtools import zoo
from tinyrps.measure import summary_line
from tinyrps.measure.live_set import _union_bytes, largest_live_set


@pytest.fixture(scope="module")
def autoencoders(tmp_path_factory):
    out = tmp_path_factory.mktemp("live-set")
    return {io: zoo.export_network("fc-autoencoder", "cortex-m55", out, io=io) for io in ("float", "int8")}


def test_overlapping_ranges_count_once():
    assert _union_bytes([(0, 10), (5, 20), (30, 40)]) == 30
    assert _union_bytes([(0, 10), (0, 10)]) == 10
    assert _union_bytes([(8, 16), (0, 4), (2, 6)]) == 14


def test_the_largest_live_set_of_the_autoencoder(autoencoders):
    floats = largest_live_set(autoencoders["float"].read_bytes())
    ints = largest_live_set(autoencoders["int8"].read_bytes())
    assert (floats["bytes"], floats["call"]) == (640 * 4 + 640, 0)
    assert (ints["bytes"], ints["call"]) == (640 + 128, 0)
    assert ints["calls"] == floats["calls"] - 2        # no quantize, no dequantize


def test_the_summary_line_shows_the_live_set_and_the_gap():
    line = summary_line({"firmware": {"instructions_per_inference": 1000, "board": "mps3-an547", "kernels": "mve",
                                      "arena_bytes": 39056, "largest_live_set_bytes": 38208,
                                      "largest_live_set_call": 2, "arena_gap_bytes": 848}})
    assert "arena 39,056 B (the plan's largest live set 38,208 B, at call 2; gap 848 B)" in line


@pytest.mark.slow
def test_measure_reports_the_arena_the_largest_live_set_and_the_gap(autoencoders):
    from tinyrps import measure
    for io, live in (("float", 3200), ("int8", 768)):
        fw = measure.measure(autoencoders[io], quick=True)["firmware"]
        assert fw["largest_live_set_bytes"] == live
        assert fw["arena_gap_bytes"] == fw["arena_bytes"] - live >= 0
