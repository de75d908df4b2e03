"""The operator list firmware/src/ops/operators.def is the one source: the built table, the ops/
files and the documentation agree with it."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tinyrps.firmware.operators import operator_variants, runtime_operators

REPO = Path(__file__).resolve().parents[2]


def test_the_built_table_is_the_list(native, native_tool, native_dsp_tool):
    rows = runtime_operators()
    variants = operator_variants()
    for tool, isas in ((native_tool, {"c"}), (native_dsp_tool, {"dsp", "c"})):
        built = json.loads(native.tool(tool, "ops").stdout)["operators"]
        assert [(op["name"], op["overload"]) for op in built] == [(row.name, row.overload) for row in rows]
        # the native builds have the variants of the lists for their ISAs, in the lists' order
        assert [op["variants"] for op in built] == [[v for v in variants[row.symbol] if v in isas] for row in rows]


def test_every_row_has_its_operator_and_every_operator_a_row():
    rows = runtime_operators()
    variants = operator_variants()
    assert sorted(variants) == sorted(row.symbol for row in rows)
    assert len({row.qualified for row in rows}) == len(rows)
    order = ["mve", "dsp", "c"]   # fastest first; an ISA may have several variants, one after another
    for symbol, isas in variants.items():
        assert isas and isas[-1] == "c" and isas.count("c") == 1, f"{symbol}: the last variant must be plain C, not {isas}"
        assert set(isas) <= set(order) and [order.index(i) for i in isas] == sorted(order.index(i) for i in isas), \
            (symbol, isas)


def documented_variants() -> dict:
    """qualified operator -> (Helium, DSP, plain C) cells of docs/runtime.md's operator table."""
    text = (REPO / "docs" / "runtime.md").read_text()
    section = text.split("## The operator table and the kernel variants", 1)[1].split("\n## ", 1)[0]
    table = {}
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        for name in re.findall(r"`([^`]+)`", cells[0]):
            table[name] = tuple(cells[1:4])
    return table


def test_the_documented_table_lists_every_operator_and_its_variants():
    documented = documented_variants()
    rows = runtime_operators()
    variants = operator_variants()
    assert set(documented) == {row.qualified for row in rows}
    for row in rows:   # a cell starting with "—" says the build has no such variant (a note may follow)
        mve, dsp, c = documented[row.qualified]
        assert (not mve.startswith("—")) == ("mve" in variants[row.symbol]), row.qualified
        assert (not dsp.startswith("—")) == ("dsp" in variants[row.symbol]), row.qualified
        assert not c.startswith("—"), row.qualified


def test_a_malformed_row_is_refused(tmp_path):
    (tmp_path / "src" / "ops").mkdir(parents=True)
    (tmp_path / "src" / "ops" / "operators.def").write_text(
        'TRT_OPERATOR(good, "cortex_m::good", "out", trt_good_params)\n'
        'TRT_OPERATOR(bad, cortex_m::bad, "out", trt_bad_params)\n')

    with pytest.raises(ValueError, match="2 TRT_OPERATOR rows, 1 of them well formed"):
        runtime_operators(tmp_path)
