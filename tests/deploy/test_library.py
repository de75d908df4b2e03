"""`tinyrps deploy library` (tinyrps.deploy.library): a Cortex-M program as a C library, used by
applications these tests write as an integrator would (tests/deploy/library_app/): its own main,
I/O and clock, built with the library's CMakeLists.txt or NAME.mk; on the boards its own startup
code and linker script, nothing of firmware/board/.

- on the host: gcc and clang at -std=c99 -Wall -Wextra -Wpedantic -Werror, once more under
  AddressSanitizer and UBSan; on QEMU's mps3-an547 (Cortex-M55), mps2-an505 (Cortex-M33, Secure
  at 0x10000000, data at 0x38000000) and mps2-an386 (Cortex-M4);
- 600 test images: tinyrps.data.make_split("test", 200, IMAGES_SEED) (the fixture's test split has
  78), compared with ExecuTorch's Python Cortex-M operators replaying the program (int8 values) and
  with the runtime's native build (float logits, bit for bit);
- instructions per inference (QEMU -icount shift=0 counts instructions, not cycles) against the
  tinyrps firmware's own figure for the same program.
"""
from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tinyrps.deploy import code_size
from tinyrps.deploy import library as lib
from tinyrps.deploy import selection
from tinyrps.infra.errors import UserError

APP = Path(__file__).parent / "library_app"
IMAGES_SEED = 2027
NAME = lib.DEFAULT_NAME
PEDANTIC = "-std=c99 -Wall -Wextra -Wpedantic -Werror"

# Each board's memory (docs/firmware.md), as the test application's linker script uses it: code and
# read-only data, RAM, and a region for the programs' own sections (placed by name).
BOARDS = {
    "mps3-an547": {"core": "cortex-m55", "code": (0x00000000, "512K"), "ram": (0x20000000, "512K"),
                   "model": (0x60000000, "16M"), "systick_hz": 32_000_000},
    "mps2-an505": {"core": "cortex-m33", "code": (0x10000000, "4M"), "ram": (0x38000000, "2M"),
                   "model": (0x80000000, "16M"), "systick_hz": 20_000_000},
    "mps2-an386": {"core": "cortex-m4", "code": (0x00000000, "4M"), "ram": (0x20000000, "4M"),
                   "model": (0x21000000, "16M"), "systick_hz": 25_000_000},
}
QEMU_SECONDS_PER_IMAGE = 0.5


# --- fixtures -------------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def libraries(exported, measured, tmp_path_factory):
    """libraries(pte, name) -> the folder written by write_library, once per program and name."""
    import fixture_cache
    from tinyrps.firmware.sources import firmware_dir, source_files
    made = {}
    compilers = [subprocess.run([cc, "--version"], capture_output=True, text=True).stdout.split("\n")[0]
                 for cc in ("gcc", "arm-none-eabi-gcc") if shutil.which(cc)]

    def get(pte: Path, name: str = NAME) -> Path:
        key = (str(pte), name)
        if key not in made:
            measured(pte)       # the measurement the library reads, beside the program before it is keyed
            # kept across runs: by the program and what lies beside it (its descriptor, its measurement),
            # the name, the library writer's modules and templates, the firmware's sources, and the
            # compilers (its code sizes)
            beside = [fixture_cache.sha256(p) for p in sorted(pte.parent.glob(f"{pte.stem}.*")) if p.is_file()]
            templates = sorted((Path(lib.__file__).parent / "templates").iterdir())
            stored = fixture_cache.fixture_key("library", name, *beside, *compilers,
                                               modules=["tinyrps.deploy.library", "tinyrps.deploy.library_files",
                                                        "tinyrps.deploy.selection"],
                                               files=[*source_files(firmware_dir()), *templates])
            folder = fixture_cache.cached_folder(f"library-{name}", stored,
                                                 lambda dest: lib.write_library(pte, dest / name, name),
                                                 tmp_path_factory.mktemp("library"))
            made[key] = folder / name
        return made[key]
    return get


@pytest.fixture(scope="session")
def m55_library(exported, libraries):
    return libraries(exported("cortex-m55"))


@pytest.fixture(scope="session")
def images600():
    from tinyrps.data import make_split
    images = make_split("test", 200, IMAGES_SEED)[0]
    assert images.shape == (600, 28, 28) and images.dtype == np.uint8
    return images


def reference_int8(pte: Path, images: np.ndarray) -> np.ndarray:
    """ExecuTorch's Python Cortex-M operators replaying the program (its int8 outputs), kept across runs."""
    import fixture_cache
    return fixture_cache.reference_int8(pte, images)


def native_logits(pte: Path, images: np.ndarray, work: Path) -> tuple:
    """(int8, float32 logits) of the runtime's native build (`tinyrps-native infer`)."""
    from tinyrps.firmware import build_firmware
    tool = build_firmware("native").tool("tinyrps-native")
    np.ascontiguousarray(images, np.uint8).tofile(work / "native-images.u8")
    subprocess.run([str(tool), "infer", str(pte), str(work / "native-images.u8"), str(work / "native.out")],
                   check=True, capture_output=True, timeout=300)
    raw = (work / "native.out").read_bytes()
    n = len(images)
    k = len(raw) // (5 * n)
    return np.frombuffer(raw[:n * k], np.int8).reshape(n, k), np.frombuffer(raw[n * k:], np.float32).reshape(n, k)


# --- the test applications ---------------------------------------------------------------------------------

def make_app(library: Path, build: Path, platform: str, cc: str = "gcc", arch: str = "", opt: str = "-O2",
             extra: str = "", ldflags: str = "", app: str = "app_classify.c", name: str = NAME,
             second: tuple = (), driver: Path = None) -> Path:
    """The application built with its Makefile and the library's NAME.mk (and a second library's; and an NPU
    driver's source)."""
    args = [f"LIB={library}", f"NAME={name}", f"BUILD={build}", f"APP={app}", f"PLATFORM={platform}", f"CC={cc}",
            f"ARCH={arch}", f"OPT={opt}", f"EXTRA_CFLAGS={extra}", f"LDFLAGS={ldflags}"]
    if driver:
        args.append(f"DRIVER={driver}")
    if second:
        args += [f"LIB2={second[0]}", f"NAME2={second[1]}"]
    result = subprocess.run(["make", "-s", "-j2", "-f", str(APP / "Makefile"), "-C", str(APP), *args],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return build / "app"


def cmake_app(library: Path, build: Path, platform: str, warnings: str, toolchain: Path = None,
              linker_script: Path = None, build_type: str = "Release") -> Path:
    """The application built with its CMakeLists.txt and the library's add_subdirectory."""
    configure = ["cmake", "-S", str(APP), "-B", str(build), f"-DLIBRARY={library}", f"-DPLATFORM={platform}",
                 f"-DCMAKE_BUILD_TYPE={build_type}", f"-DWARNINGS={warnings}"]
    if toolchain:
        configure += [f"-DCMAKE_TOOLCHAIN_FILE={toolchain}", f"-DLINKER_SCRIPT={linker_script}"]
    for command in (configure, ["cmake", "--build", str(build), "-j", "2"]):
        result = subprocess.run(command, capture_output=True, text=True, timeout=900)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return build / "app"


def results_of(raw: bytes) -> dict:
    """The results file of app_classify.c."""
    assert raw[:4] == b"TLIB", raw[:16]
    labels, layers, count, too_small, misaligned, status, arena = struct.unpack_from("<IIIiiiI", raw, 4)
    variants = [raw[32 + 4 * i:36 + 4 * i].rstrip(b"\0").decode() for i in range(layers)]
    record = np.dtype([("label", "<i4"), ("wrapped", "<i4"), ("ticks", "<u8"), ("logits", "<f4", (labels,)),
                       ("n_int8", "<i4"), ("int8", "i1", (16,)), ("layers", "<u8", (layers,))])
    records = np.frombuffer(raw, record, count=count, offset=32 + 4 * layers)
    return {"too_small": too_small, "misaligned": misaligned, "status": status, "arena": arena,
            "variants": variants, "records": records, "labels": labels}


def run_host(app: Path, images: np.ndarray, work: Path, profile: bool = False, env=None) -> dict:
    np.ascontiguousarray(images, np.uint8).tofile(work / "images.u8")
    result = subprocess.run([str(app), str(work / "images.u8"), str(work / "results.bin"), str(len(images)),
                             "1" if profile else "0"], capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    return results_of((work / "results.bin").read_bytes())


def linker_script(board: str, path: Path) -> Path:
    """The test application's linker script for a board: its own, with the programs' sections (every
    `.rodata.*_program`) placed by name in the board's large memory."""
    memory = BOARDS[board]
    (code, code_len), (ram, ram_len), (model, model_len) = memory["code"], memory["ram"], memory["model"]
    path.write_text(f"""ENTRY(reset_handler)
MEMORY
{{
  CODE (rx)  : ORIGIN = {code:#010x}, LENGTH = {code_len}
  RAM (rw)   : ORIGIN = {ram:#010x}, LENGTH = {ram_len}
  MODELS (r) : ORIGIN = {model:#010x}, LENGTH = {model_len}
}}
SECTIONS
{{
  .vectors : {{ KEEP(*(.vectors)) }} > CODE
  .text : {{ *(.text .text.*) }} > CODE
  .ARM.exidx : {{ *(.ARM.exidx*) }} > CODE
  .models : {{ . = ALIGN(16); KEEP(*(.rodata.*_program)) }} > MODELS
  .rodata : {{ . = ALIGN(4); *(.rodata .rodata.*) }} > CODE
  .data : {{ . = ALIGN(4); __data_start = .; *(.data .data.*) . = ALIGN(4); __data_end = .; }} > RAM AT > CODE
  __data_load = LOADADDR(.data);
  .bss (NOLOAD) : AT(ADDR(.bss)) {{ . = ALIGN(4); __bss_start = .; *(.bss .bss.* COMMON) . = ALIGN(4);
                                     __bss_end = .; }} > RAM
  .stack (NOLOAD) : AT(ADDR(.stack)) {{ . = ALIGN(8); . += 16K; __stack_top = .; }} > RAM
}}
""")
    return path


def board_flags(board: str) -> str:
    return " ".join(code_size.cpu_flags(BOARDS[board]["core"]))


BOARD_LDFLAGS = "-nostartfiles --specs=nano.specs -Wl,--gc-sections"


def run_board(board: str, elf: Path, work: Path, args: list, timeout: float) -> subprocess.CompletedProcess:
    """The application on QEMU's board, files over semihosting, -icount shift=0."""
    machine = board
    semihosting = ",".join(["enable=on", "target=native", "arg=app", *[f"arg={a}" for a in args]])
    command = ["qemu-system-arm", "-M", machine, "-nodefaults", "-display", "none", "-monitor", "none",
               "-icount", "shift=0", "-no-reboot", "-kernel", str(elf), "-semihosting-config", semihosting]
    result = subprocess.run(command, cwd=work, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{board}: exit {result.returncode}: {result.stderr[-2000:]}"
    return result


def classify_on_board(board: str, elf: Path, images: np.ndarray, work: Path, profile: bool) -> dict:
    np.ascontiguousarray(images, np.uint8).tofile(work / "images.u8")
    run_board(board, elf, work, ["images.u8", "results.bin", str(len(images)), "1" if profile else "0"],
              timeout=60 + QEMU_SECONDS_PER_IMAGE * len(images))
    return results_of((work / "results.bin").read_bytes())


def instructions(ticks, board: str) -> np.ndarray:
    """SysTick ticks of the core clock as instructions: one instruction is 1 ns under -icount shift=0."""
    return np.round(np.asarray(ticks, np.float64) * 1e9 / BOARDS[board]["systick_hz"]).astype(np.int64)


def require_arm_tools():
    """A missing tool fails the test with the command that installs it."""
    from tinyrps.firmware.build import APT_ARM
    missing = [t for t in ("qemu-system-arm", "arm-none-eabi-gcc", "cmake") if shutil.which(t) is None]
    if missing:
        pytest.fail(f"{', '.join(missing)} not installed; the board tests need them: {APT_ARM}", pytrace=False)


def check_bit_exact(results: dict, pte: Path, images: np.ndarray, work: Path) -> None:
    """Every picture: the int8 values equal the reference's, the logits the native runtime's (bit for bit),
    the label their argmax."""
    records = results["records"]
    assert results["status"] == 0
    assert (records["label"] >= 0).all()
    expected_int8 = reference_int8(pte, images)
    k = expected_int8.shape[1]
    assert (records["n_int8"] == k).all()
    mismatched = np.flatnonzero((records["int8"][:, :k] != expected_int8).any(axis=1))
    assert mismatched.size == 0, f"{mismatched.size} of {len(images)} pictures differ from the reference, " \
                                 f"first {mismatched[:5]}"
    _, native = native_logits(pte, images, work)
    assert np.array_equal(records["logits"].view(np.uint32), native.view(np.uint32))
    assert np.array_equal(records["label"], native.argmax(axis=1))


# --- the name, the folder and the command ---------------------------------------------------------------------

@pytest.mark.parametrize("bad", ["", "9lives", "my-model", "two words", "with\nnewline", "int", "_Model",
                                 "__x", "trt", "trt_model", "pte_x", "FB", "x" * 41])
def test_bad_names_are_refused(bad):
    with pytest.raises(UserError) as e:
        lib.check_name(bad)
    assert "\n" not in str(e.value)


def test_good_names_are_taken():
    for good in ("tinyrps_model", "rps", "Rps2", "_rps", "trtx"):
        assert lib.check_name(good) == good


def _dump(outputs: list, calls: list, values: int = 12, lists: dict = None) -> dict:
    """A program's dump as `tinyrps-native dump` gives it, of what may_copy_int8 reads: one chain of calls (their
    argument values), the outputs' values, and tensors but for the lists (value: items)."""
    kinds = [{"kind": "tensor_list", "items": lists[v]} if v in (lists or {}) else {"kind": "tensor"}
             for v in range(values)]
    return {"plans": [{"values": kinds, "outputs": outputs, "chains": [[{"args": a} for a in calls]]}]}


def test_int8_copies_are_left_out_only_when_the_last_call_alone_writes_the_outputs():
    """The loader copies an output's raw int8 values only when a call after its writer reuses their bytes: a
    library leaves that code out (TRT_INT8_COPIES=0) when the last call names every output and no call before
    it names one, and keeps it otherwise."""
    assert not lib.may_copy_int8(_dump([8], [[0, 1, 1], [1, 7], [7, 9, 8, 8]]))          # the Ethos-U program's
    assert lib.may_copy_int8(_dump([8], [[0, 1, 1], [7, 9, 8, 8], [1, 10, 10]]))         # a call after the writer
    assert lib.may_copy_int8(_dump([8, 5], [[0, 5, 5], [5, 9, 8, 8]]))                   # an output written before
    assert lib.may_copy_int8(_dump([8], [[3, 8, 8], [0, 11, 11]], lists={11: [8]}))      # read as a list item
    assert lib.may_copy_int8(_dump([8], [[0, 1, 1], [1, 11, 11]], lists={11: [8]}))      # written as one


def test_the_fusing_operators_are_the_convolutions():
    """TRT_FUSIONS=0 leaves out the loader's fusion pass in a library without any operator that has fuse_next."""
    from tinyrps.firmware import firmware_dir
    assert selection.fusing_operators(firmware_dir() / "src") == {
        "quantized_conv2d", "quantized_conv2d_nhwc", "quantized_depthwise_conv2d", "quantized_depthwise_conv2d_nhwc"}


def test_the_command_checks_its_arguments_before_importing_anything_heavy(tmp_path):
    from test_startup import imports_of
    pte = tmp_path / "m.pte"
    pte.write_bytes(b"\0" * 16)
    a_file = tmp_path / "file"
    a_file.write_text("")
    for args in (["--model", tmp_path / "missing.pte", "--out", tmp_path / "lib"],
                 ["--model", pte, "--out", tmp_path / "lib", "--name", "two\nlines"],
                 ["--model", pte, "--out", tmp_path / "lib", "--name", "9x"],
                 ["--model", pte, "--out", a_file]):
        assert imports_of("deploy", "library", *args) == {"code": 2, "loaded": []}, args


def test_the_command_says_what_is_wrong_in_one_line(cli, tmp_path, exported):
    a_file = tmp_path / "file"
    a_file.write_text("")
    cases = {
        ("--model", tmp_path / "missing.pte", "--out", tmp_path / "x"): "model file not found",
        ("--model", exported("cortex-m55"), "--out", tmp_path / "x", "--name", "a b"): "not a C identifier",
        ("--model", exported("cortex-m55"), "--out", a_file): "is a file",
        ("--model", exported("fp32"), "--out", tmp_path / "x"): "is not a Cortex-M program (its family: cpu)",
    }
    for args, says in cases.items():
        result = cli("deploy", "library", *args)
        assert result.returncode == 2, result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and says in lines[0], result.stderr


def test_a_corrupt_or_foreign_program_is_refused(tmp_path, exported):
    truncated = tmp_path / "cut.pte"
    truncated.write_bytes(exported("cortex-m55").read_bytes()[:4000])
    with pytest.raises(UserError):
        lib.write_library(truncated, tmp_path / "out")
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    with pytest.raises(UserError, match="other files"):
        lib.write_library(exported("cortex-m55"), other)
    assert (other / "keep.txt").read_text() == "mine"


def test_writing_a_library_again_keeps_the_files_it_did_not_write(m55_library, exported, tmp_path):
    """The manifest records what the command wrote; everything else in the folder (a user's notes, a
    build folder, a source of their own) is carried into the new library, and the summary says so."""
    out = tmp_path / NAME
    shutil.copytree(m55_library, out, symlinks=True)
    (out / "NOTES.md").write_text("mine")
    (out / "build").mkdir()
    (out / "build" / "app.o").write_bytes(b"object")
    (out / "src" / "extra.c").write_text("int extra;\n")
    manifest = lib.write_library(exported("cortex-m55"), out, NAME)
    assert (out / "NOTES.md").read_text() == "mine" and (out / "build" / "app.o").read_bytes() == b"object"
    assert (out / "src" / "extra.c").read_text() == "int extra;\n"
    assert sorted(manifest["kept"]) == ["NOTES.md", "build/app.o", "src/extra.c"]
    assert "kept 3 files not written by tinyrps" in "\n".join(lib.summary_lines(manifest, out))
    written = json.loads((out / lib.MANIFEST).read_text())["files"]
    assert "NOTES.md" not in written and lib.MANIFEST in written and "CMakeLists.txt" in written


def test_a_library_without_a_record_of_its_files_is_not_replaced(tmp_path):
    """A library folder whose manifest lists no files (an older tinyrps's): its own files cannot be told
    from a user's, so it is refused rather than replaced."""
    old = tmp_path / "old"
    old.mkdir()
    (old / lib.MANIFEST).write_text(json.dumps({"kind": lib.MANIFEST_KIND}))
    (old / "NOTES.md").write_text("mine")
    with pytest.raises(UserError, match="recorded no list of the files it wrote"):
        lib.check_out(old)


def test_every_operator_of_the_list_has_its_files():
    """operators.def is the one list: each row's ops/ file is found by its TRT_DEFINE_OPERATOR, and the
    files it needs by the names they use, for either ISA; no Python lists them."""
    from tinyrps.firmware import firmware_dir
    src = firmware_dir() / "src"
    files = selection.operator_files(src)
    assert set(files) == {row.symbol for row in selection.runtime_rows(src)}
    for isa in ("mve", "dsp"):
        for symbol, rel in files.items():
            needed = selection.source_closure(src, {rel}, isa)
            assert rel in needed and "ops/operator_table.c" in needed and "ops/dequantize.c" in needed, symbol
            assert all((src / f).is_file() and not f.startswith(f"kernels/{'dsp' if isa == 'mve' else 'mve'}/")
                       for f in needed), symbol
            kept = [s for s, f in files.items() if f in needed]
            every = [name for rows in selection.file_rows(src, kept).values() for _, name in rows]
            assert selection.source_closure(src, {rel}, isa, every) == needed, symbol   # all rows kept


def test_the_files_are_those_a_linker_takes():
    """A file is taken for a name it defines that a taken file uses (tinyrps.deploy.selection)."""
    from tinyrps.firmware import firmware_dir
    src = firmware_dir() / "src"
    conv = selection.source_closure(src, {"ops/conv2d.c"}, "mve")
    for rel in ("ops/conv_common.c", "kernels/weight_sums.c", "kernels/c/conv2d.c", "kernels/c/dot_s8.c",
                "kernels/mve/conv2d.c", "kernels/mve/conv2d_pooled.c", "ops/bind_args.c"):
        assert rel in conv, rel
    assert "ops/linear.c" not in conv and "kernels/mve/linear.c" not in conv
    # a variant left out takes the files only it needs with it
    depthwise = selection.source_closure(src, {"ops/depthwise_conv2d.c"}, "mve",
                                         ["trt_depthwise_conv2d_mve", "trt_depthwise_conv2d_c"])
    assert "kernels/mve/depthwise_conv2d.c" in depthwise and "kernels/c/depthwise_conv2d.c" in depthwise
    assert not {"kernels/mve/depthwise_one_channel.c", "kernels/mve/depthwise_channels.c"} & set(depthwise)
    assert "kernels/mve/depthwise_one_channel.c" in selection.source_closure(src, {"ops/depthwise_conv2d.c"}, "mve")
    assert selection.external_definitions("static int a(void) { return 0; }\nint b(int x) { return x; }\n"
                                          "typedef struct { int y; } t;\nconst int c[2] = {1, 2};\nint d;\n"
                                          "int e(void);\nTRT_ADAPTER void f_p(void) {}\n") == {"b", "c", "d"}


ALL_SYMBOLS = [row.symbol for row in selection.runtime_rows(Path(__file__).parents[2] / "firmware" / "src")]


@pytest.mark.slow
@pytest.mark.parametrize("symbol", ALL_SYMBOLS)
@pytest.mark.parametrize("kernels", ["c", "dsp"])
def test_each_operator_alone_links(symbol, kernels, tmp_path):
    """The files the selection finds for one operator (with the runtime's) are all it needs: its own
    operator_selection.h keeping that operator alone (and what it brings) links on the host (plain C, or the
    DSP kernels on the C model of DSP), the runtime's files as they are."""
    from tinyrps.firmware import firmware_dir
    fw = firmware_dir()
    src = fw / "src"
    qualified = {row.symbol: row.qualified for row in selection.runtime_rows(src)}
    symbols = selection.select_operators([qualified[symbol]], src, "dsp")
    files = selection.operator_files(src)
    sources = selection.source_closure(src, {files[s] for s in symbols}, "dsp")
    variants = [name for rows in selection.file_rows(src, symbols).values() for _, name in rows]
    shutil.copytree(src, tmp_path / "src", ignore=shutil.ignore_patterns("*.c"))   # every header
    (tmp_path / "src" / selection.SELECTION_HEADER).write_text(
        selection.selection_header(selection.Selection(tuple(symbols), tuple(variants), (), "dsp")))
    for rel in sources:
        shutil.copyfile(src / rel, tmp_path / "src" / rel)
    (tmp_path / "main.c").write_text('#include "tinyrps_runtime.h"\nstatic trt_program_storage s;\n'
                                     'int main(void) { return trt_load(trt_program_init(&s), 0, 0, 0, 0, 0, 0); }\n')
    define = ["-DTRT_KERNELS_FORCE_DSP=1"] if kernels == "dsp" else ["-DTRT_KERNELS_PORTABLE_ONLY=1"]
    result = subprocess.run(["gcc", "-O1", "-Wall", "-Werror", *define, f"-I{fw / 'include'}", str(tmp_path / "main.c"),
                             *[str(tmp_path / "src" / s) for s in sources], "-lm", "-o", str(tmp_path / "a.out")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]


@pytest.mark.slow
def test_the_library_folder(m55_library, exported):
    manifest = json.loads((m55_library / "manifest.json").read_text())
    pte = exported("cortex-m55")
    import hashlib
    assert manifest["program"]["sha256"] == hashlib.sha256(pte.read_bytes()).hexdigest()
    assert manifest["program"]["core"] == "cortex-m55" and manifest["kernels"]["isa"] == "mve"
    assert manifest["labels"] == ["rock", "paper", "scissors"]
    assert len(manifest["layers"]) == 10 and {la["kernels_on_core"] for la in manifest["layers"]} == {"mve"}
    # the selection: the program's operators only, with Helium and plain C; no DSP kernel, no board file
    files = {p.relative_to(m55_library).as_posix() for p in m55_library.rglob("*") if p.is_file()}
    assert not [f for f in files if f.endswith(".c") and "/dsp/" in f]
    assert not [f for f in files if "board" in f or "protocol" in f]
    for rel in manifest["build"]["sources"]:
        assert rel in files
    header = (m55_library / "include" / f"{NAME}.h").read_text()
    for needed in ("TINYRPS_MODEL_ARENA_BYTES 38208u", "TINYRPS_MODEL_ARENA_BYTES 41488u",
                   "int tinyrps_model_init(void *arena, size_t arena_bytes);",
                   "int tinyrps_model_run(const void *input, void *output);",
                   "int tinyrps_model_classify(const uint8_t image[TINYRPS_MODEL_IMAGE_BYTES]",
                   "const char *tinyrps_model_label(int index);", "void tinyrps_model_set_counter(",
                   f'#define TINYRPS_MODEL_SHA256 "{manifest["program"]["sha256"]}"'):
        assert needed in header, needed
    # no heap, no stdio, no file I/O in anything the library compiles: its own files, and the runtime's
    # sources its units compile, each as the firmware has it
    from tinyrps.firmware import firmware_dir
    compiled = []
    for rel in manifest["build"]["sources"]:
        text = (m55_library / rel).read_text()
        compiled.append((rel, text))
        if rel.startswith("src/units/"):
            (runtime,) = re.findall(r'^#include "\.\./runtime/(\S+\.c)"$', text, re.M)
            compiled.append((runtime, (m55_library / "src" / "runtime" / runtime).read_text()))
            assert compiled[-1][1] == (firmware_dir() / "src" / runtime).read_text(), runtime
    assert len(compiled) == 2 * len(manifest["build"]["sources"]) - 2
    for rel, text in compiled:
        assert not re.search(r"\b(malloc|calloc|realloc|free|printf|fprintf|puts|fopen|fwrite)\s*\(", text), rel
        assert "<stdio.h>" not in text and "<stdlib.h>" not in text, rel
    selected = (m55_library / "src" / "runtime" / "ops" / "operator_selection.h").read_text()
    assert re.findall(r"^#define TRT_WITH_(\w+) 1$", selected, re.M) == manifest["runtime_operators"]
    program = (m55_library / "src" / f"{NAME}_program.c").read_text()
    assert '".rodata.tinyrps_model_program"' in program and "aligned(16)" in program
    readme = (m55_library / "README.md").read_text()
    for section in ("## API", "## What your application provides", "## Adding it with CMake",
                    "## Adding it with Make", "## Figures", "instructions, not cycles"):
        assert section in readme, section


@pytest.mark.slow
def test_writing_again_replaces_the_folder_whole(exported, measured, tmp_path):
    out = tmp_path / "lib"
    measured(exported("cortex-m55"))        # the program's measurement, which the library reads
    lib.write_library(exported("cortex-m55"), out, "first")
    (out / "notes.txt").write_text("from before")      # not the command's: kept (the manifest lists its own)
    lib.write_library(exported("cortex-m55"), out, "second")
    assert (out / "notes.txt").read_text() == "from before" and (out / "include" / "second.h").is_file()
    assert not (out / "include" / "first.h").exists() and not (out / "src" / "first.c").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["lib"]     # no staging folder left behind


# --- on the host ----------------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("cc", ["gcc", "clang-16"])
def test_the_library_on_the_host(cc, m55_library, exported, images600, tmp_path):
    """Plain Make with NAME.mk, ISO C99 and every warning an error; the 600 images bit-exact."""
    if shutil.which(cc) is None:
        pytest.fail(f"{cc} is not installed: apt-get install --no-install-recommends {cc.split('-')[0]}")
    app = make_app(m55_library, tmp_path / "build", "host_platform.c", cc=cc, extra=PEDANTIC)
    results = run_host(app, images600, tmp_path)
    assert results["too_small"] == -5 and results["misaligned"] == -7    # ARENA_TOO_SMALL, BAD_INPUT
    assert results["arena"] == 41488 and results["variants"] == ["c"] * 10
    check_bit_exact(results, exported("cortex-m55"), images600, tmp_path)
    assert_only_prefixed_symbols(tmp_path / "build", NAME, nm="nm")


def test_unoptimised_the_library_still_needs_only_memcpy_and_memset(m55_library, tmp_path):
    make_app(m55_library, tmp_path / "build", "host_platform.c", opt="-O0", extra=PEDANTIC)
    assert_only_prefixed_symbols(tmp_path / "build", NAME, nm="nm")


def assert_only_prefixed_symbols(build: Path, name: str, nm: str, driver: tuple = (), least_objects: int = 21) -> None:
    """Every symbol the library's objects define for the linker starts with NAME_; all they need from
    outside is memcpy and memset (and the compiler's own helpers, __aeabi_* on Arm, and the NPU driver's
    functions `driver` of a library of an Ethos-U program)."""
    objects = [p for p in build.rglob("*") if p.suffix in (".o", ".obj") and "/src/" in p.as_posix()]
    assert len(objects) >= least_objects

    def symbols(*options):
        result = subprocess.run([nm, *options, *map(str, objects)], capture_output=True, text=True, check=True)
        return {line.split()[-1] for line in result.stdout.splitlines() if line.strip() and not line.endswith(":")}
    defined = symbols("-g", "--defined-only")
    assert defined and all(n.startswith(f"{name}_") for n in defined), [n for n in defined if not n.startswith(name)]
    needed = symbols("-u") - defined
    outside = {n for n in needed if not n.startswith(f"{name}_") and not n.startswith("__aeabi_")}
    assert outside <= {"memcpy", "memset", *driver}, outside


@pytest.mark.slow
def test_the_library_under_the_sanitizers(m55_library, exported, images600, tmp_path):
    flags = f"{PEDANTIC} -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
    app = make_app(m55_library, tmp_path / "build", "host_platform.c", opt="-O1", extra=flags)
    results = run_host(app, images600, tmp_path, profile=True)
    check_bit_exact(results, exported("cortex-m55"), images600, tmp_path)
    # the host clock counts its calls: each layer saw one step of it
    assert (results["records"]["layers"] == 1).all()


def test_the_library_with_cmake_add_subdirectory(m55_library, exported, images600, tmp_path):
    app = cmake_app(m55_library, tmp_path / "build", "host", warnings="-Wall -Wextra -Wpedantic -Werror")
    results = run_host(app, images600[:60], tmp_path)
    check_bit_exact(results, exported("cortex-m55"), images600[:60], tmp_path)


def test_the_example_prints_its_answer(m55_library, tmp_path):
    manifest = json.loads((m55_library / "manifest.json").read_text())
    (tmp_path / "print.c").write_text('#include <stdio.h>\nvoid example_print(const char *line);\n'
                                      'void example_print(const char *line) { puts(line); }\n')
    sources = [str(m55_library / s) for s in manifest["build"]["sources"]]
    subprocess.run(["gcc", *PEDANTIC.split(), "-O2", "-ffp-contract=off", f"-I{m55_library / 'include'}",
                    str(m55_library / "example" / "main.c"), str(tmp_path / "print.c"), *sources,
                    "-o", str(tmp_path / "example")], check=True, capture_output=True, timeout=300)
    out = subprocess.run([str(tmp_path / "example")], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    example = manifest["example"]
    assert example["answer"] == example["label"]
    shown = " ".join(f"{label} {x:.3f}" for label, x in zip(manifest["labels"], example["logits"]))
    assert out.stdout.strip() == f"the picture shows {example['answer']} (scores {shown})"


def corrupt_program(library: Path, name: str, changes: dict) -> None:
    """Write bytes over the embedded program (src/NAME_program.c) at the given offsets."""
    path = library / "src" / f"{name}_program.c"
    text = path.read_text()
    start = text.index("= {\n") + 4
    end = text.index("\n};", start)
    data = bytearray(int(v) for v in re.findall(r"\d+", text[start:end]))
    for offset, value in changes.items():
        data[offset] = value
    rows = ["    " + ",".join(str(b) for b in data[i:i + 24]) + "," for i in range(0, len(data), 24)]
    path.write_text(text[:start] + "\n".join(rows) + text[end:])


@pytest.mark.slow
def test_a_corrupted_embedded_program_gives_a_status(m55_library, images600, tmp_path):
    """Damage to the program's header, its tables or its kernel parameters: init says so, nothing faults
    (under the sanitizers)."""
    data = (m55_library / "src" / f"{NAME}_program.c").read_text()
    size = len(re.findall(r"\d+", data[data.index("= {"):]))
    rng = np.random.default_rng(3)
    # certain to be refused: the file identifier, the root table's offset, the segment data's size;
    # then random bytes of the flatbuffer part (its tables), refused or harmless
    certain = {"magic": {4: ord("X")}, "root offset": {0: 0xFF, 1: 0xFF}, "segment size": {39: 1}}
    damages = {**certain, **{f"tables {i}": {int(o): int(rng.integers(256)) for o in rng.integers(40, 8192, 4)}
                             for i in range(5)}}
    flags = f"{PEDANTIC} -g -fsanitize=address,undefined -fno-sanitize-recover=all"
    refused = []
    # one copy and one build: each damage rewrites the program's file alone, so only it is compiled again
    copy = tmp_path / NAME
    shutil.copytree(m55_library, copy)
    program = copy / "src" / f"{NAME}_program.c"
    pristine = program.read_text()
    np.ascontiguousarray(images600[:2], np.uint8).tofile(tmp_path / "images.u8")
    for what, changes in damages.items():
        program.write_text(pristine)
        corrupt_program(copy, NAME, changes)
        app = make_app(copy, tmp_path / "build", "host_platform.c", opt="-O1", extra=flags)
        (tmp_path / "results.bin").unlink(missing_ok=True)
        result = subprocess.run([str(app), str(tmp_path / "images.u8"), str(tmp_path / "results.bin"), "2", "0"],
                                capture_output=True, text=True, timeout=300)
        assert "Sanitizer" not in result.stderr and "runtime error" not in result.stderr, (what, result.stderr)
        status = results_of((tmp_path / "results.bin").read_bytes())["status"]
        if what in certain:
            assert status < 0, what
        refused.append((what, status))
        assert result.returncode == (1 if status < 0 else 0), (what, status)
    assert size == json.loads((m55_library / "manifest.json").read_text())["program"]["bytes"]
    print("\n", refused)


@pytest.mark.slow
def test_a_program_without_labels_gets_the_generic_api(exported, tmp_path):
    """Without labels (any other program): no classify, and the example runs one inference on zeros."""
    source = exported("cortex-m55")
    pte = tmp_path / "generic.pte"
    shutil.copy(source, pte)
    described = json.loads(source.with_suffix(".json").read_text())
    described["labels"] = None
    pte.with_suffix(".json").write_text(json.dumps(described))
    out = tmp_path / "generic"
    lib.write_library(pte, out, "generic")
    header = (out / "include" / "generic.h").read_text()
    assert "generic_classify" not in header and "int generic_run(const void *input, void *output);" in header
    manifest = json.loads((out / "manifest.json").read_text())
    (tmp_path / "print.c").write_text('#include <stdio.h>\nvoid example_print(const char *line);\n'
                                      'void example_print(const char *line) { puts(line); }\n')
    subprocess.run(["gcc", *PEDANTIC.split(), "-O2", "-ffp-contract=off", f"-I{out / 'include'}",
                    str(out / "example" / "main.c"), str(tmp_path / "print.c"),
                    *[str(out / s) for s in manifest["build"]["sources"]], "-o", str(tmp_path / "example")],
                   check=True, capture_output=True, timeout=300)
    printed = subprocess.run([str(tmp_path / "example")], capture_output=True, text=True, timeout=60).stdout
    # the native runtime on the all-zero input (an all-black picture gives the program zeros)
    _, logits = native_logits(source, np.zeros((1, 28, 28), np.uint8), tmp_path)
    assert printed.strip() == "output 0 on zeros: " + " ".join(f"{x:.3f}" for x in logits[0])


@pytest.mark.slow
def test_two_libraries_in_one_application_on_the_host(exported, exported_fast, libraries, images600, tmp_path):
    default, fast = exported("cortex-m55"), exported_fast("cortex-m55")
    first, second = libraries(default, "rps_default"), libraries(fast, "rps_fast")
    app = make_app(first, tmp_path / "build", "host_platform.c", extra=PEDANTIC, app="app_two.c",
                   name="rps_default", second=(second, "rps_fast"))
    np.ascontiguousarray(images600, np.uint8).tofile(tmp_path / "images.u8")
    subprocess.run([str(app), str(tmp_path / "images.u8"), str(tmp_path / "two.bin"), "600"], check=True,
                   timeout=600)
    check_two(tmp_path / "two.bin", default, fast, images600)
    assert_only_prefixed_symbols_of_both(tmp_path / "build", first, second)


def assert_only_prefixed_symbols_of_both(build: Path, first: Path, second: Path) -> None:
    for folder, name in ((first, "rps_default"), (second, "rps_fast")):
        assert_only_prefixed_symbols(build / folder.relative_to("/"), name, nm="nm")


def check_two(path: Path, default: Path, fast: Path, images: np.ndarray) -> None:
    raw = path.read_bytes()
    assert raw[:4] == b"TWO2"
    count, status_a, status_b = struct.unpack_from("<Iii", raw, 4)
    assert (count, status_a, status_b) == (len(images), 0, 0)
    one = np.dtype([("label", "<i4"), ("logits", "<f4", (3,)), ("int8", "i1", (4,))])
    records = np.frombuffer(raw, np.dtype([("a", one), ("b", one)]), count=count, offset=16)
    for side, pte in (("a", default), ("b", fast)):
        assert np.array_equal(records[side]["int8"][:, :3], reference_int8(pte, images)), side
        assert np.array_equal(records[side]["label"], records[side]["logits"].argmax(axis=1))


# --- on the emulated boards ---------------------------------------------------------------------------------

def board_app(board: str, library: Path, work: Path, build_with: str, opt: str = "-O3") -> Path:
    """The classify application for a board, built with Make (NAME.mk) or CMake (add_subdirectory, with a
    toolchain file of the test's own), at the firmware's optimisation."""
    script = linker_script(board, work / f"{board}.ld")
    if build_with == "make":
        return make_app(library, work / "build", "board_platform.c", cc="arm-none-eabi-gcc",
                        arch=board_flags(board), opt=opt, extra=f"{PEDANTIC} -ffunction-sections -fdata-sections",
                        ldflags=f"{BOARD_LDFLAGS} -T{script}")
    toolchain = work / "arm.cmake"
    toolchain.write_text(f"""set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
set(CMAKE_C_FLAGS_INIT "{board_flags(board)} -ffunction-sections -fdata-sections")
set(CMAKE_EXE_LINKER_FLAGS_INIT "{board_flags(board)}")
""")
    assert opt == "-O3", "the CMake build takes Release's optimisation"
    return cmake_app(library, work / "build", "board", warnings="-Wall -Wextra -Wpedantic -Werror",
                     toolchain=toolchain, linker_script=script)


BOARD_CASES = [("mps3-an547", "cortex-m55", "cmake", "default"), ("mps2-an505", "cortex-m33", "make", "default"),
               ("mps2-an386", "cortex-m4", "make", "default"), ("mps3-an547", "cortex-m55", "make", "fast")]


@pytest.mark.slow
@pytest.mark.parametrize("board,target,build_with,network", BOARD_CASES)
def test_the_library_on_a_board(board, target, build_with, network, request, libraries, images600, tmp_path):
    """600 pictures bit-exact through the library's own API on the board; its arena exact; the program's
    kernel calls within 1 % of the tinyrps firmware's instructions per inference (the export's measurement
    of the same program on the same three pictures, median, profile on in both); the rest of a
    classification (the picture's bytes to the input, the answer) a few instructions per pixel."""
    require_arm_tools()
    pte = request.getfixturevalue("exported" if network == "default" else "exported_fast")(target)
    library = libraries(pte)
    manifest = json.loads((library / "manifest.json").read_text())
    fast = manifest["kernels"]["isa"]
    elf = board_app(board, library, tmp_path, build_with)
    results = classify_on_board(board, elf, images600, tmp_path, profile=False)
    assert results["variants"] == [la["kernels_on_core"] for la in manifest["layers"]]
    assert results["arena"] == manifest["arena_bytes"][fast]
    assert results["too_small"] == -5 and results["misaligned"] == -7
    assert not results["records"]["wrapped"].any()
    check_bit_exact(results, pte, images600, tmp_path)
    assert_only_prefixed_symbols(tmp_path / "build", NAME, nm="arm-none-eabi-nm")

    from tinyrps.measure.firmware import measurement_images
    firmware = lib.board_figures(pte, target)      # the export's measurement of the program
    profiled = classify_on_board(board, elf, measurement_images(), tmp_path, profile=True)
    total = instructions(profiled["records"]["ticks"], board)
    layers = instructions(profiled["records"]["layers"], board)
    library_count = int(np.median(layers.sum(axis=1)))
    assert abs(library_count - firmware["instructions_per_inference"]) <= 0.01 * firmware["instructions_per_inference"]
    # NAME_classify around the calls: the 784 bytes of the picture to float32, then the best of the scores
    outside = total - layers.sum(axis=1)
    assert (outside >= 0).all() and (outside <= 12 * 784).all(), outside
    for i, layer in enumerate(firmware["layers"]):       # the firmware's per-layer figures are means
        assert abs(layers[:, i].mean() - layer["instructions"]) <= max(200, 0.01 * layer["instructions"]), i
    unprofiled = classify_on_board(board, elf, measurement_images(), tmp_path, profile=False)
    plain = int(np.median(instructions(unprofiled["records"]["ticks"], board)))
    print(f"\n{board} ({network}): library {library_count:,} instructions per inference with the profile "
          f"({plain:,} without), firmware {firmware['instructions_per_inference']:,}")


@pytest.mark.slow
def test_two_libraries_in_one_application_on_the_cortex_m55(exported, exported_fast, libraries, images600,
                                                           tmp_path):
    require_arm_tools()
    default, fast = exported("cortex-m55"), exported_fast("cortex-m55")
    first, second = libraries(default, "rps_default"), libraries(fast, "rps_fast")
    board = "mps3-an547"
    script = linker_script(board, tmp_path / "an547.ld")
    elf = make_app(first, tmp_path / "build", "board_platform.c", cc="arm-none-eabi-gcc", arch=board_flags(board),
                   opt="-O2", extra=f"{PEDANTIC} -ffunction-sections -fdata-sections",
                   ldflags=f"{BOARD_LDFLAGS} -T{script}", app="app_two.c", name="rps_default",
                   second=(second, "rps_fast"))
    images = images600[:120]
    np.ascontiguousarray(images, np.uint8).tofile(tmp_path / "images.u8")
    run_board(board, elf, tmp_path, ["images.u8", "two.bin", str(len(images))], timeout=60 + len(images))
    check_two(tmp_path / "two.bin", default, fast, images)
    assert_only_prefixed_symbols_of_both(tmp_path / "build", first, second)


@pytest.mark.slow
def test_code_size_of_the_library(exported, libraries):
    """The default network's Cortex-M55 library in its example: <= 24 KiB of code and read-only data
    (without the program) at -O2, the optimisation at which it runs as fast as the firmware."""
    require_arm_tools()
    sizes = {}
    for target in ("cortex-m55", "cortex-m33", "cortex-m4"):
        manifest = json.loads((libraries(exported(target)) / "manifest.json").read_text())
        sizes[target] = {opt: manifest["code"][opt]["library_and_libc_bytes"] for opt in code_size.SIZE_OPTIMISATIONS}
    print("\n" + json.dumps(sizes))
    assert sizes["cortex-m55"]["-O2"] <= 24 * 1024


@pytest.mark.slow
@pytest.mark.parametrize("target", ["ethos-u55-128", "ethos-u85-128"])
def test_code_size_of_an_ethos_u_library(target, exported, libraries):
    """The default network's Ethos-U program as a library for the Cortex-M55, in its example without the NPU
    driver and the program: <= 12 KiB of the library's code and read-only data at -O2. Its calls have no
    int[] or Tensor[] argument, none of its operators fuses the next call, and its last call writes its output,
    so the loader's code for lists, fusions and copies of raw int8 values is left out."""
    require_arm_tools()
    library = libraries(exported(target))
    code = json.loads((library / "manifest.json").read_text())["code"]["-O2"]
    print(f"\n{target}: .text {code['library_text_bytes']:,} + .rodata {code['library_rodata_bytes']:,} B, "
          f"libc {code['libc_bytes']:,} B")
    assert code["library_bytes"] <= 12 * 1024, code
    build_h = (library / "src" / f"{NAME}_build.h").read_text()
    assert "#define TRT_CALL_LISTS 0" in build_h
    assert "#define TRT_FUSIONS 0" in build_h and "#define TRT_INT8_COPIES 0" in build_h


@pytest.mark.slow
def test_a_library_without_call_lists_refuses_a_program_with_them(m55_library, images600, tmp_path):
    """The default Cortex-M network's calls have int[] arguments: its library keeps the code for them, and
    built without it (TRT_CALL_LISTS=0, as a library of a program without any is) init refuses the program
    with one status, unsupported operator, and nothing faults (under the sanitizers)."""
    assert "TRT_CALL_LISTS" not in (m55_library / "src" / f"{NAME}_build.h").read_text()
    flags = f"{PEDANTIC} -g -fsanitize=address,undefined -fno-sanitize-recover=all -DTRT_CALL_LISTS=0"
    app = make_app(m55_library, tmp_path / "build", "host_platform.c", opt="-O1", extra=flags)
    np.ascontiguousarray(images600[:2], np.uint8).tofile(tmp_path / "images.u8")
    result = subprocess.run([str(app), str(tmp_path / "images.u8"), str(tmp_path / "results.bin"), "2", "0"],
                            capture_output=True, text=True, timeout=300)
    assert "Sanitizer" not in result.stderr and "runtime error" not in result.stderr, result.stderr
    assert results_of((tmp_path / "results.bin").read_bytes())["status"] == -4    # TRT_ERR_UNSUPPORTED_OP
    assert result.returncode == 1


# --- a program of the user's own ----------------------------------------------------------------------------

DEPTHWISE_MODULE = '''
import torch
from torch import nn


class Depthwise(nn.Module):
    """A convolution, then a depthwise one, and no max pool."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(5)
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1, groups=8),
                                  nn.ReLU(), nn.Flatten(), nn.Linear(8 * 8 * 8, 4))

    def forward(self, x):
        return self.body(x)
'''

# Each sample through the library: its float outputs, then the int8 values the final dequantize read.
RUN_SAMPLES = r'''
#include <stdio.h>
#include <stdlib.h>

#include "dw.h"

static uint8_t arena[DW_ARENA_BYTES] DW_ALIGN16;
static DW_INPUT_TYPE input[DW_INPUT_NUMEL];
static DW_OUTPUT_TYPE output[DW_OUTPUT_NUMEL];

int main(int argc, char **argv) {
    FILE *in = fopen(argv[1], "rb"), *out = fopen(argv[2], "wb");
    const int8_t *values;
    if (argc != 4 || !in || !out || dw_init(arena, sizeof arena) != DW_OK) return 2;
    for (int i = 0; i < atoi(argv[3]); i++) {
        if (fread(input, 1, DW_INPUT_BYTES, in) != DW_INPUT_BYTES || dw_run(input, output) != DW_OK) return 3;
        int count = dw_output_int8(0, &values);
        if (count < 0) return 4;
        fwrite(output, 1, DW_OUTPUT_BYTES, out);
        fwrite(values, 1, (size_t)count, out);
    }
    return fclose(out) == 0 ? 0 : 5;
}
'''


@pytest.mark.slow     # lowers a network, measures it on the emulated board, builds the library
def test_a_depthwise_program_without_max_pool_makes_a_library(cli, tmp_path):
    """A Cortex-M55 program with a convolution and a depthwise one and no max pool: `deploy library`
    makes its library (the fuse steps, which look for a max pool after the layer, build without one),
    and the library built on the host gives `run --device native`'s outputs, bit for bit."""
    module = tmp_path / "dw_model.py"
    module.write_text(DEPTHWISE_MODULE)
    rng = np.random.default_rng(11)
    np.savez(tmp_path / "calibration.npz", input0=rng.standard_normal((16, 1, 3, 8, 8)).astype(np.float32)[:, 0])
    res = cli("export", "--module", f"{module}:Depthwise", "--input-shape", "1,3,8,8", "--calibration",
              tmp_path / "calibration.npz", "--target", "cortex-m55", "--out", tmp_path / "programs", "--name", "dw",
              timeout=900)
    assert res.returncode == 0, res.stderr
    pte = tmp_path / "programs" / "dw.pte"
    res = cli("deploy", "library", "--model", pte, "--out", tmp_path / "dw", "--name", "dw", timeout=900)
    assert res.returncode == 0, res.stderr
    manifest = json.loads((tmp_path / "dw" / "manifest.json").read_text())
    assert "quantized_depthwise_conv2d" in manifest["runtime_operators"]
    assert not [s for s in manifest["runtime_operators"] if "max_pool" in s]

    (tmp_path / "run.c").write_text(RUN_SAMPLES)
    sources = [str(tmp_path / "dw" / s) for s in manifest["build"]["sources"]]
    subprocess.run(["gcc", *PEDANTIC.split(), "-O2", "-ffp-contract=off", f"-I{tmp_path / 'dw' / 'include'}",
                    str(tmp_path / "run.c"), *sources, "-o", str(tmp_path / "run")], check=True, timeout=300)
    samples = rng.standard_normal((5, 1, 3, 8, 8)).astype(np.float32)
    order = manifest["inputs"][0]["dim_order"]        # the bytes of a tensor are in its dim order
    np.ascontiguousarray(samples.transpose(0, *[1 + d for d in order])).tofile(tmp_path / "samples.f32")
    subprocess.run([str(tmp_path / "run"), str(tmp_path / "samples.f32"), str(tmp_path / "library.out"), "5"],
                   check=True, timeout=120)
    record = np.dtype([("output", "<f4", (4,)), ("int8", "i1", (4,))])
    library = np.fromfile(tmp_path / "library.out", record)

    np.savez(tmp_path / "inputs.npz", input0=samples)
    res = cli("run", "--model", pte, "--inputs", tmp_path / "inputs.npz", "--out", tmp_path / "native.npz",
              "--device", "native")
    assert res.returncode == 0, res.stderr
    with np.load(tmp_path / "native.npz") as native:
        assert np.array_equal(library["output"].view(np.uint32), native["output0"].reshape(5, 4).view(np.uint32))
        assert np.array_equal(library["int8"], native["output0_int8"].reshape(5, 4))


# --- a library of an Ethos-U program ---------------------------------------------------------------------------

def ethos_u_app(library: Path, work: Path, driver: bool) -> Path:
    """The classify application for the Cortex-M55 board, with the library's QEMU NPU driver or none."""
    board = "mps3-an547"
    script = linker_script(board, work / "an547.ld")
    return make_app(library, work / "build", "board_platform.c", cc="arm-none-eabi-gcc", arch=board_flags(board),
                    opt="-O2", extra=f"{PEDANTIC} -ffunction-sections -fdata-sections",
                    ldflags=f"{BOARD_LDFLAGS} -T{script}",
                    driver=library / "npu" / "npu_link_qemu.c" if driver else None)


@pytest.mark.slow
@pytest.mark.parametrize("target", ["ethos-u55-128", "ethos-u85-128"])
def test_an_ethos_u_library_on_the_cortex_m55_with_the_npu_model(target, exported, libraries, images600, tmp_path):
    """The library of an Ethos-U program in the test application on the Cortex-M55 board, its NPU driver the
    library's QEMU one (npu/npu_link_qemu.c) and the NPU the host's model: all 600 pictures' int8 outputs equal
    the `npu` device's; the README states what the application supplies."""
    from tinyrps.devices import open_device
    from tinyrps.firmware.npu_host import NpuHost
    require_arm_tools()
    pte = exported(target)
    library = libraries(pte)
    manifest = json.loads((library / "manifest.json").read_text())
    assert [la["kernels_on_core"] for la in manifest["layers"]] == ["mve", "npu", "mve"]
    readme = (library / "README.md").read_text()
    assert "your application links the NPU driver" in readme and "ethosu_invoke_v3" in readme and "IRQ" in readme
    elf = ethos_u_app(library, tmp_path, driver=True)
    host = NpuHost(pte, tmp_path)
    try:
        results = classify_on_board("mps3-an547", elf, images600, tmp_path, profile=False)
        assert host.failure() == ""
    finally:
        host.close()
    assert results["status"] == 0
    with open_device("npu", pte) as device:
        device.classify(images600)
        expected = device.int8_outputs       # every batch's, in order
    records = results["records"]
    assert (records["n_int8"] == 3).all()
    mismatched = np.flatnonzero((records["int8"][:, :3] != expected).any(axis=1))
    assert mismatched.size == 0, f"{mismatched.size} of 600 pictures differ from the npu device's"
    assert np.array_equal(records["label"], expected.argmax(axis=1))
    assert_only_prefixed_symbols(tmp_path / "build", NAME, nm="arm-none-eabi-nm", least_objects=12,
                                 driver=("trt_npu_reserve", "trt_npu_invoke", "trt_npu_release"))


@pytest.mark.slow
def test_an_ethos_u_library_without_a_driver_is_refused_at_init(exported, libraries, images600, tmp_path):
    """Linked without an NPU driver, the library refuses the program at init: unsupported operator."""
    require_arm_tools()
    elf = ethos_u_app(libraries(exported("ethos-u55-128")), tmp_path, driver=False)
    np.ascontiguousarray(images600[:2], np.uint8).tofile(tmp_path / "images.u8")
    subprocess.run(["qemu-system-arm", "-M", "mps3-an547", "-nodefaults", "-display", "none", "-monitor", "none",
                    "-icount", "shift=0", "-no-reboot", "-kernel", str(elf), "-semihosting-config",
                    "enable=on,target=native,arg=app,arg=images.u8,arg=results.bin,arg=2,arg=0"],
                   cwd=tmp_path, capture_output=True, text=True, timeout=60)
    status = struct.unpack_from("<i", (tmp_path / "results.bin").read_bytes(), 24)[0]
    assert status == -4, status      # TRT_ERR_UNSUPPORTED_OP: "no NPU driver linked"
