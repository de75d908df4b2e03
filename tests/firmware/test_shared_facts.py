"""Each fact the host shares with the firmware is written once, in the firmware's C headers, and the host
reads it from there (tinyrps.firmware.c_facts). Here the C compiler's view of those headers -- and what
the runtime's own functions return -- is printed by a small C program (facts_dump.c) and compared with
what the host read: a header changed in a way the host misreads, or a host module that keeps a copy of
its own, fails here."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tinyrps.firmware import batch_results, boards, c_facts, link_protocol, qemu
from tinyrps.firmware.build import firmware_dir
from tinyrps.firmware.operators import VARIANT_ROW, operator_variants
from tinyrps.firmware.tensors import description_layout

DUMP = Path(__file__).with_name("facts_dump.c")
LAYOUTS = {"LINK_ERROR_FIELDS": "LINK_ERROR_HEADER_BYTES", "LINK_INFO_FIELDS": "LINK_INFO_BYTES",
           "LINK_INFER_FIELDS": "LINK_INFER_HEADER_BYTES", "LINK_TENSOR_FIELDS": "LINK_TENSOR_REQUEST_BYTES",
           "LINK_WRITE_FIELDS": "LINK_WRITE_HEADER_BYTES", "LINK_WRITE_REPLY_FIELDS": "LINK_WRITE_REPLY_BYTES",
           "LINK_RUN_FIELDS": "LINK_RUN_REPLY_BYTES", "LINK_READ_FIELDS": "LINK_READ_REQUEST_BYTES",
           "LINK_READ_REPLY_FIELDS": "LINK_READ_REPLY_HEADER_BYTES", "TENSOR_DESC_FIELDS": "TENSOR_DESC_BYTES",
           "BATCH_HEADER_FIELDS": "BATCH_HEADER_FIXED_BYTES", "BATCH_RECORD_FIELDS": "BATCH_RECORD_HEADER_BYTES",
           "BATCH_PROFILE_FIELDS": "BATCH_PROFILE_HEADER_BYTES", "BATCH_LAYER_FIELDS": "BATCH_LAYER_BYTES",
           "BATCH_TRAILER_FIELDS": "BATCH_TRAILER_BYTES", "NATIVE_PROFILE_FIELDS": "NATIVE_PROFILE_HEADER_BYTES",
           "BOOT_DESCRIPTOR_FIELDS": "BOOT_DESCRIPTOR_BYTES"}


@pytest.fixture(scope="module", params=list(boards.BOARDS))
def compiled(request, native_build, tmp_path_factory) -> dict:
    """The dump, built against one port's port.h and the native runtime library, parsed by kind."""
    if shutil.which("gcc") is None:
        pytest.fail("gcc is not installed: apt-get install --no-install-recommends gcc libc6-dev", pytrace=False)
    root, board = firmware_dir(), request.param
    library = next(native_build.build_dir.glob("libtinyrps_rt.a"))
    exe = tmp_path_factory.mktemp("facts") / "facts"
    includes = [f"-I{root / d}" for d in ("include", "src", "protocol", "board/common", f"board/{board}")]
    # -lm: the runtime's portable float operators call the C library's expf, fmaxf, ...
    subprocess.run(["gcc", "-std=c11", "-Wall", "-Wextra", "-Werror", *includes, str(DUMP), str(library), "-lm", "-o",
                    str(exe)], check=True)
    facts = {}
    for line in subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines():
        kind, _, rest = line.partition(" ")
        facts.setdefault(kind, []).append(rest)
    facts["board"] = board
    return facts


def test_constants(compiled):
    for line in compiled["define"]:
        name, value = line.split(" ")
        assert c_facts.define(name) == int(value), name
    for line in compiled["text"]:
        name, value = line.split(" ", 1)
        assert c_facts.define(name) == value, name


def test_lists(compiled):
    rows = {}
    for line in compiled["row"]:
        listing, name, value, text = line.split(" ", 3)
        rows.setdefault(listing, []).append([name, int(value), text])
    for listing, expected in rows.items():
        assert c_facts.listing(listing) == expected, listing


def test_layouts(compiled):
    fields = {}
    for line in compiled["field"]:
        layout, name, offset, kind = line.split(" ")
        fields.setdefault(layout, []).append((name, int(offset), kind))
    assert set(fields) == set(LAYOUTS)
    for layout, size in LAYOUTS.items():
        assert c_facts.layout(layout, size).fields == fields[layout], layout


def test_the_runtime_functions(compiled):
    statuses = {int(v): text for v, _, text in (line.partition(" ") for line in compiled["status"])}
    assert c_facts.status_names() == statuses == link_protocol.TRT_STATUS
    assert c_facts.dtypes() == {int(c): (n, int(b)) for c, n, b in (line.split(" ") for line in compiled["dtype"])}
    assert sorted(c_facts.dtypes()) == [int(c) for c in compiled["dtype-named"]]
    assert c_facts.limits() == {n: int(v) for n, v in (line.split(" ") for line in compiled["limit"])}


def test_the_port(compiled):
    (line,) = compiled["port"]
    name, hz = line.split(" ")
    port = c_facts.port(compiled["board"])
    assert (port.name, port.systick_hz) == (name, int(hz)) == (compiled["board"], boards.get_board(name).systick_hz)


def test_the_host_modules_use_the_headers_facts():
    """The Python modules' constants are the headers' (the layouts above are the ones they use)."""
    assert link_protocol.MAX_PAYLOAD == c_facts.define("LINK_MAX_PAYLOAD") and link_protocol.PROTOCOL_VERSION == 3
    assert link_protocol.ERROR_CODES == c_facts.named_values("LINK_ERROR_LIST")
    assert link_protocol.INFO_LAYOUT is c_facts.layout("LINK_INFO_FIELDS", "LINK_INFO_BYTES")
    assert batch_results.BATCH_HEADER is c_facts.layout("BATCH_HEADER_FIELDS", "BATCH_HEADER_FIXED_BYTES")
    assert description_layout() is c_facts.layout("TENSOR_DESC_FIELDS", "TENSOR_DESC_BYTES")
    assert batch_results.KERNEL_VARIANTS == c_facts.kernel_variants() == ("mve", "dsp", "c")
    assert (qemu.DESCRIPTOR_MAGIC, qemu.MODE_LINK, qemu.MODE_BATCH) == (0x42505254, 0, 1)
    assert qemu.DESCRIPTOR is c_facts.layout("BOOT_DESCRIPTOR_FIELDS", "BOOT_DESCRIPTOR_BYTES")
    assert (qemu.DESCRIPTOR_VERSION, qemu.FLAG_SHA256) == (2, 1)
    assert batch_results.BATCH_EXIT_CODES == {1: "bad arguments or file I/O", 2: "the program did not load", 3: "a CPU fault"}
    # no module of the host keeps its own copy of a limit
    sources = (Path(link_protocol.__file__).parent).glob("*.py")
    for source in sources:
        text = source.read_text()
        assert not re.search(r"\bBATCH_MAX_LAYERS\b|\bTRT_MAX_[A-Z_]+\s*=", text), source.name


def test_every_kernel_variant_of_the_operator_table_has_a_known_name():
    """The variants' isa strings are written in the row macros of operator_table.h, one per name of the header's
    list; every row of the operators' files is one of those macros (the host's parser reads them)."""
    header = (firmware_dir() / "src" / "ops" / "operator_table.h").read_text()
    rows = dict(re.findall(r'^#define TRT_(\w+)_VARIANT\(run, \.\.\.\) .*\(\{"(\w+)", __VA_ARGS__, run##_p\},\)$',
                           header, re.M))
    assert sorted(rows.values()) == sorted(c_facts.kernel_variants()) and all(k.lower() == v for k, v in rows.items())
    listed = operator_variants()
    assert listed and {isa for isas in listed.values() for isa in isas} == set(c_facts.kernel_variants())
    for source in sorted((firmware_dir() / "src" / "ops").glob("*.c")):
        text = source.read_text()
        assert not re.search(r'\{\s*"\w+"\s*,', text), f"{source.name}: a variant row written out, not TRT_<ISA>_VARIANT"
        assert len(re.findall(r"^\s*TRT_\w+_VARIANT\(", text, re.M)) == len(VARIANT_ROW.findall(text)), source.name


def test_a_header_in_a_form_the_host_cannot_read_is_an_error(tmp_path):
    bad = c_facts.Layout.__new__(c_facts.Layout)
    with pytest.raises(c_facts.FirmwareFactError, match="field B is at 3, the fields before it end at 2"):
        bad.__init__("X_FIELDS", [("A", 0, "u16"), ("B", 3, "u8")], 4)
    with pytest.raises(c_facts.FirmwareFactError, match="the fields end at 2, the layout's size is 4"):
        c_facts.Layout("X_FIELDS", [("A", 0, "u16")], 4)
    with pytest.raises(c_facts.FirmwareFactError, match="unknown field type 'u12'"):
        c_facts.Layout("X_FIELDS", [("A", 0, "u12")], 2)
    with pytest.raises(c_facts.FirmwareFactError, match="defines NO_SUCH_FACT"):
        c_facts.define("NO_SUCH_FACT")
