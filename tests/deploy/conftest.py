"""Fixtures for the FVP route: a PATH holding only the tools a test provides, the files of an
ExecuTorch checkout that the checks look at, and stand-ins for the build script and the FVP.

No Corstone FVP and no ExecuTorch C++ build can be had here, so the stand-ins act out
their side of a run (recording what they were given) for the orchestration to be
tested; they live only in these tests.
"""
from __future__ import annotations

import json
import shutil
import stat
import sys

import pytest

from tinyrps.deploy.prerequisites import executorch_release


def make_executable(path, text="#!/bin/sh\nexit 0\n"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def make_toolchain(folder, cxx_library: bool):
    """arm-none-eabi-gcc/g++ that answer the C++ library probe as a toolchain with/without libstdc++ does."""
    library = folder / "lib" / "libstdc++.a"
    library.parent.mkdir(parents=True, exist_ok=True)
    library.write_text("")
    answer = str(library) if cxx_library else "libstdc++.a"
    make_executable(folder / "arm-none-eabi-gcc", "#!/bin/sh\necho 15.2.1\n")
    make_executable(folder / "arm-none-eabi-g++", f"#!/bin/sh\necho {answer}\n")


@pytest.fixture
def executable():
    """executable(path, script) writes an executable script."""
    return make_executable


@pytest.fixture
def toolchain():
    """toolchain(folder, cxx_library) writes a stand-in Arm GNU toolchain into folder."""
    return make_toolchain


@pytest.fixture
def bin_dir(tmp_path, monkeypatch):
    """An otherwise empty PATH with CMake 3.28, git and bash, so each test decides which other tools exist."""
    folder = tmp_path / "bin"
    make_executable(folder / "cmake", "#!/bin/sh\necho 'cmake version 3.28.1'\n")
    make_executable(folder / "git", "#!/bin/sh\nexit 0\n")
    (folder / "bash").symlink_to(shutil.which("bash"))
    monkeypatch.setenv("PATH", str(folder))
    return folder


@pytest.fixture
def checkout(tmp_path):
    """The files of an ExecuTorch checkout that the checks look at (no sources are built here)."""
    root = tmp_path / "executorch"
    for rel in ("CMakeLists.txt", "examples/arm/executor_runner/arm_executor_runner.cpp",
                "backends/arm/scripts/build_executor_runner.sh", "examples/arm/arm-scratch/setup_path.sh"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("")
    (root / "version.txt").write_text(executorch_release() + "\n")
    return root


# A semihosting run of arm_executor_runner as its log reads, line for line in the formats of
# ExecuTorch's sources (pytorch/executorch; read at commits 0189e1bd and 14f76720):
# - examples/arm/executor_runner/arm_executor_runner.cpp, et_pal_emit_log_message():
#   "%c [executorch:%s:%lu %s()] %s\n" (level, file, line, function, message); the messages of
#   main(), runner_init(), run_model() and print_outputs() ("Writing output to file: %s" when
#   built for semihosting; the printf "Output[%d][%d]: (float) %f\n" otherwise);
# - examples/arm/executor_runner/arm_perf_monitor.cpp, StopMeasurements(): "NPU Inferences : %d",
#   "ethos-u : cycle_cnt : %" PRIu64 " cycles (%.2f per inference)", "Inference runtime: %" PRIu64
#   " CPU cycles total (%.2f per inference)", "ethosu_pmu_cycle_cntr : % " PRIu64 " (%.2f per inference)".
# The line numbers inside the lines are the runner's own and stand for any.
SEMIHOSTING_RUN = [
    "I [executorch:arm_executor_runner.cpp:1418 main()] Running executor with parameter:",
    "I [executorch:arm_executor_runner.cpp:1431 main()]    executor_runner",
    "I [executorch:arm_executor_runner.cpp:1433 main()]    -m m.pte",
    "I [executorch:arm_executor_runner.cpp:1433 main()]    -o out",
    "I [executorch:arm_executor_runner.cpp:1433 main()]    -i x.bin",
    "I [executorch:arm_executor_runner.cpp:1465 main()] Reading input tensor 1 from file x.bin",
    "I [executorch:arm_executor_runner.cpp:1480 main()] Reading pte model from file m.pte",
    "I [executorch:arm_executor_runner.cpp:732 runner_init()] PTE Model data loaded. Size: 434432 bytes.",
    "I [executorch:arm_executor_runner.cpp:748 runner_init()] Model buffer loaded, has 1 methods",
    "I [executorch:arm_executor_runner.cpp:756 runner_init()] Running method forward",
    "I [executorch:arm_executor_runner.cpp:922 runner_init()] Method 'forward' loaded.",
    "I [executorch:arm_executor_runner.cpp:924 runner_init()] Preparing inputs...",
    "I [executorch:arm_executor_runner.cpp:1013 runner_init()] Input prepared.",
    "I [executorch:arm_executor_runner.cpp:1370 run_model()] Starting running 1 inferences...",
    "I [executorch:arm_perf_monitor.cpp:151 StopMeasurements()] NPU Inferences : 1",
    "I [executorch:arm_perf_monitor.cpp:152 StopMeasurements()] NPU delegations: 1 (1.00 per inference)",
    "I [executorch:arm_perf_monitor.cpp:157 StopMeasurements()] Profiler report, CPU cycles per operator:",
    "I [executorch:arm_perf_monitor.cpp:161 StopMeasurements()] ethos-u : cycle_cnt : 183711 cycles (183711.00 per inference)",
    "I [executorch:arm_perf_monitor.cpp:168 StopMeasurements()] Operator(s) total: 183711 CPU cycles (183711.00 per inference)",
    "I [executorch:arm_perf_monitor.cpp:175 StopMeasurements()] Inference runtime: 241003 CPU cycles total (241003.00 per inference)",
    "I [executorch:arm_perf_monitor.cpp:181 StopMeasurements()] NOTE: CPU cycle values and ratio calculations require FPGA and identical CPU/NPU frequency",
    "I [executorch:arm_perf_monitor.cpp:191 StopMeasurements()] Inference CPU ratio: 23.77 %",
    "I [executorch:arm_perf_monitor.cpp:195 StopMeasurements()] Inference NPU ratio: 76.23 %",
    "I [executorch:arm_perf_monitor.cpp:204 StopMeasurements()] cpu_wait_for_npu_cntr : 183711 CPU cycles (183711.00 per inference)",
    "I [executorch:arm_perf_monitor.cpp:209 StopMeasurements()] Ethos-U PMU report:",
    "I [executorch:arm_perf_monitor.cpp:210 StopMeasurements()] ethosu_pmu_cycle_cntr :  141522 (141522.00 per inference)",
    "I [executorch:arm_perf_monitor.cpp:217 StopMeasurements()] ethosu_pmu_cntr0 : 4160 (4160.00 per inference)",
    "I [executorch:arm_executor_runner.cpp:1385 run_model()] 1 inferences finished",
    "I [executorch:arm_executor_runner.cpp:1179 print_outputs()] 1 outputs: ",
    "I [executorch:arm_executor_runner.cpp:1216 print_outputs()] Writing output to file: out-0.bin",
    "I [executorch:arm_executor_runner.cpp:1390 run_model()] Model run: 1",
    "I [executorch:arm_executor_runner.cpp:1495 main()] Program complete, exiting.",
]


@pytest.fixture
def semihosting_log():
    return list(SEMIHOSTING_RUN)


@pytest.fixture
def u85(exported):
    return exported("ethos-u85-128")


# Stands in for backends/arm/scripts/build_executor_runner.sh: records its arguments, working
# folder, PATH and VIRTUAL_ENV (one JSON line per call) and leaves an ELF-named file in --output.
FAKE_BUILD = """#!/bin/bash
exec {python} - "$@" <<'EOF'
import json, os, pathlib, sys
args = sys.argv[1:]
record = pathlib.Path({record!r})
with open(record, "a") as f:
    f.write(json.dumps({{"args": args, "cwd": os.getcwd(), "PATH": os.environ["PATH"],
                         "VIRTUAL_ENV": os.environ.get("VIRTUAL_ENV")}}) + "\\n")
output = pathlib.Path([a.split("=", 1)[1] for a in args if a.startswith("--output=")][0])
output.mkdir(parents=True, exist_ok=True)
(output / "arm_executor_runner").write_bytes(b"\\x7fELF")
EOF
"""

# Stands in for FVP_Corstone_SSE-320. It records each run (argv, working folder, the program
# and input files named on the semihosting command line) and then does what the plan in
# $FAKE_FVP_PLAN says: print these log lines, write the logits for this run (the n-th run
# gets the n-th list) to <-o>-0.bin.
FAKE_FVP = """#!{python}
import json, os, pathlib, sys
args = sys.argv[1:]
params = [args[i + 1] for i, a in enumerate(args) if a == "-C"]
plan = json.loads(pathlib.Path(os.environ["FAKE_FVP_PLAN"]).read_text())
record = pathlib.Path(os.environ["FAKE_FVP_RECORD"])
run = {{"argv": args, "cwd": os.getcwd()}}
line = [p.split("=", 1)[1] for p in params if ".semihosting-cmd_line=" in p]
if line:
    argv = line[0].strip("'").split()
    opts = dict(zip(argv[1::2], argv[2::2]))
    folder = pathlib.Path([p.split("=", 1)[1] for p in params if ".semihosting-cwd=" in p][0])
    run["runner_argv"] = argv
    run["program"] = (folder / opts["-m"]).read_bytes().hex()
    run["input"] = (folder / opts["-i"]).read_bytes().hex()
    done = len(record.read_text().splitlines()) if record.exists() else 0
    logits = plan["logits"][done] if plan.get("logits") else None
    if logits is not None:
        import struct
        (folder / (opts["-o"] + "-0.bin")).write_bytes(struct.pack("<%df" % len(logits), *logits))
with open(record, "a") as f:
    f.write(json.dumps(run) + "\\n")
print("\\n".join(plan["log"]))
"""


@pytest.fixture
def fake_tools(tmp_path, bin_dir, checkout, monkeypatch):
    """Toolchain, build script and FVP stand-ins; returns an object to set the FVP's plan and read records."""
    make_toolchain(bin_dir, cxx_library=True)
    build_record, fvp_record = tmp_path / "build-calls.jsonl", tmp_path / "fvp-runs.jsonl"
    make_executable(checkout / "backends/arm/scripts/build_executor_runner.sh",
                    FAKE_BUILD.format(python=sys.executable, record=str(build_record)))
    make_executable(bin_dir / "FVP_Corstone_SSE-320", FAKE_FVP.format(python=sys.executable))
    plan = tmp_path / "fvp-plan.json"
    monkeypatch.setenv("FAKE_FVP_PLAN", str(plan))
    monkeypatch.setenv("FAKE_FVP_RECORD", str(fvp_record))

    class Tools:
        root = checkout
        bin = bin_dir

        @staticmethod
        def plan(log, logits=()):
            """The log every run prints, and the logits of each run in turn (None: write no output file)."""
            plan.write_text(json.dumps({"log": log, "logits": [None if x is None else list(map(float, x))
                                                                for x in logits]}))

        @staticmethod
        def builds():
            return [json.loads(x) for x in build_record.read_text().splitlines()] if build_record.exists() else []

        @staticmethod
        def runs():
            return [json.loads(x) for x in fvp_record.read_text().splitlines()] if fvp_record.exists() else []
    return Tools
