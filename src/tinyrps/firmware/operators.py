"""The operators the firmware's runtime runs: the rows of firmware/src/ops/operators.def.

That file is the one list: the C operator table, its declarations and kernel parameters are
generated from it by the preprocessor, and this parser gives the same rows to Python (tests,
documentation), so nothing copies the list by hand. `tinyrps-native ops` prints the table a
build compiled, with the kernel variants it has for each operator.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

DEF_FILE = Path("src") / "ops" / "operators.def"
# TRT_OPERATOR(symbol, "namespace::name", "overload", parameters)
ROW = re.compile(r'^TRT_OPERATOR\(\s*(\w+)\s*,\s*"([^"]+)"\s*,\s*"(\w+)"\s*,\s*(\w+)\s*\)\s*$', re.M)


@dataclass(frozen=True)
class Operator:
    symbol: str        # C name: trt_op_<symbol>, trt_params.<symbol>
    name: str          # as a program names it, e.g. "cortex_m::quantized_add"
    overload: str      # "out"
    parameters: str    # kernel parameter struct

    @property
    def qualified(self) -> str:
        """name.overload, as tinyrps.export.cortex_m.program_operators lists a program's operators."""
        return f"{self.name}.{self.overload}"


def runtime_operators(firmware_root: Path | None = None) -> list:
    """The rows of operators.def, in table order."""
    if firmware_root is None:
        from .build import firmware_dir
        firmware_root = firmware_dir()
    text = (Path(firmware_root) / DEF_FILE).read_text()
    rows = [Operator(*m.groups()) for m in ROW.finditer(text)]
    calls = len(re.findall(r"^TRT_OPERATOR\(", text, re.M))
    if calls != len(rows) or not rows:
        raise ValueError(f"{DEF_FILE}: {calls} TRT_OPERATOR rows, {len(rows)} of them well formed")
    return rows


# TRT_DEFINE_OPERATOR(symbol, bind, VARIANTS) in ops/<file>.c, and its variant array's rows, one line each:
# TRT_<ISA>_VARIANT(run, accepts, ...) (ops/operator_table.h). A row's name is its first argument, its
# kernel's run function.
DEFINE = re.compile(r"^TRT_DEFINE_(?:FUSING_)?OPERATOR\(\s*(\w+)\s*,\s*\w+\s*,\s*(\w+)\s*(?:,\s*\w+\s*)?\)", re.M)
VARIANT_ARRAY = r"static const trt_kernel_variant {}\[\] = \{{(.*?)\n\}};"
VARIANT_ROW_OF = r"^[ \t]*TRT_(MVE|DSP|C)_VARIANT\(\s*({})\s*,[^\n]*\)[ \t]*$"   # {}: the row's name
VARIANT_ROW = re.compile(VARIANT_ROW_OF.format(r"\w+"), re.M)


def variant_rows(ops_source: str, symbol: str, path: str) -> list:
    """[(isa, name)] of the variant list operator `symbol`'s ops/ file defines it with, in the file's order."""
    arrays = dict(DEFINE.findall(ops_source))
    if symbol not in arrays:
        raise ValueError(f"{path}: no TRT_DEFINE_OPERATOR({symbol}, ...)")
    body = re.search(VARIANT_ARRAY.format(arrays[symbol]), ops_source, re.S)
    if body is None:
        raise ValueError(f"{path}: no variant list {arrays[symbol]} for {symbol}")
    return [(isa.lower(), name) for isa, name in VARIANT_ROW.findall(body.group(1))]


def operator_variants(firmware_root: Path | None = None) -> dict:
    """symbol -> the kernel variants its ops/ file lists (["mve", "dsp", "c"]: every ISA, fastest first;
    an ISA may have several).

    Read from the sources, so it covers the variants of every build, not only the host's."""
    if firmware_root is None:
        from .build import firmware_dir
        firmware_root = firmware_dir()
    found = {}
    for source in sorted((Path(firmware_root) / "src" / "ops").glob("*.c")):
        text = source.read_text()
        for symbol, _ in DEFINE.findall(text):
            found[symbol] = [isa for isa, _ in variant_rows(text, symbol, source.name)]
    return found
