"""Start-up stays fast: what a command imports, checked module by module (deterministic,
unlike timings; the timings themselves are scripts/bench_startup.py's)."""
import atexit
import json
import os
import select
import subprocess
import sys
import tempfile

from script_module import load_script

# A process that has imported tinyrps.interfaces.cli, and nothing else a command brings, forks a child per
# command: the child runs tinyrps.interfaces.cli.main with the command's arguments, then lists the heavy
# packages it imported. Its modules are a fresh interpreter's after `from tinyrps.interfaces.cli import
# main` (the first thing `python -m tinyrps` does), without that interpreter's start-up each time.
SERVER = """
import json, os, sys
from tinyrps.interfaces.cli import main
HEAVY = ("torch", "torchao", "executorch.exir", "matplotlib", "tosa_reference_model", "ethosu")
for line in sys.stdin:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        for fd, path in ((0, os.devnull), (1, request["stdout"]), (2, request["stderr"])):
            opened = os.open(path, os.O_RDONLY if fd == 0 else os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(opened, fd)
            os.close(opened)
        sys.stdin = open(0, closefd=False)
        sys.argv = ["tinyrps", *request["args"]]
        try:
            code = main(request["args"])
        except SystemExit as e:
            code = e.code
        except BaseException:
            sys.excepthook(*sys.exc_info())
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        loaded = sorted(h for h in HEAVY if any(m == h or m.startswith(h + ".") for m in sys.modules))
        with open(request["result"], "w") as f:
            json.dump({"code": code, "loaded": loaded}, f)
        os._exit(0)
    os.waitpid(pid, 0)
    print("done", flush=True)
"""
_server = None


def server() -> subprocess.Popen:
    global _server
    if _server is None:
        _server = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   text=True)
        atexit.register(_server.stdin.close)
    return _server


def probed(*args) -> tuple:
    """One run of the command: ({"code": exit code, "loaded": heavy packages imported}, its stderr's
    lines). `python -m tinyrps` is `raise SystemExit(main())`, so the command says here what it says there."""
    proc = server()
    with tempfile.TemporaryDirectory() as scratch:
        files = {name: os.path.join(scratch, name) for name in ("stdout", "stderr", "result")}
        proc.stdin.write(json.dumps({"args": [str(a) for a in args], **files}) + "\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], 300)
        assert ready and proc.stdout.readline() == "done\n", f"tinyrps {' '.join(map(str, args))} did not end"
        with open(files["result"]) as f:
            found = json.load(f)
        with open(files["stderr"]) as f:
            return found, f.read().strip().splitlines()


def imports_of(*args) -> dict:
    return probed(*args)[0]


def test_help_imports_nothing_heavy():
    assert imports_of("--help") == {"code": 0, "loaded": []}
    assert imports_of("play", "--help") == {"code": 0, "loaded": []}


def startup_script():
    return load_script("bench_startup")


def test_the_user_errors_cover_every_command():
    from tinyrps.interfaces.cli import build_parser
    commands = set()
    for action in build_parser()._subparsers._group_actions:
        for name, parser in action.choices.items():
            nested = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
            commands |= {f"{name} {sub}" for a in nested for sub in a.choices} if nested else {name}
    covered = {name.split(" --")[0] for name in startup_script().user_errors(None, None)}
    assert commands <= covered, f"commands without a user-error case: {sorted(commands - covered)}"


def test_every_user_error_is_one_line_and_imports_nothing_heavy(tmp_path):
    a_file = tmp_path / "picture.png"
    a_file.write_bytes(b"not a folder")
    for name, args in startup_script().user_errors(tmp_path / "missing", a_file).items():
        found, lines = probed(*args)
        assert found == {"code": 2, "loaded": []}, (name, found)
        assert len(lines) == 1 and "Traceback" not in lines[0], (name, lines)
    assert imports_of("play", "--model", tmp_path, "--device", "tpu") == {"code": 2, "loaded": []}


def test_a_runs_programs_are_checked_against_the_options_before_any_work(exported, tmp_path):
    """A device of another family, a --board no selected program boots, a target option the target
    does not take, a bad --arch: each one line and exit 2 before torch loads (so before eager runs)."""
    exported("cortex-m55")
    run = exported("fp32").parents[1]
    cases = startup_script().run_user_errors(run, tmp_path)
    told = {}
    for name, args in cases.items():
        found, told[name] = probed(*args)
        assert found == {"code": 2, "loaded": []}, (name, found)
        lines = told[name]
        assert len(lines) == 1 and lines[0].startswith("tinyrps") and "Traceback" not in lines[0], (name, lines)
    assert "--device mcu or --device native" in told["eval, a Cortex-M program on npu-ref"][0]
    assert "leave --board out" in told["eval, --board for a cpu program"][0]


def test_listing_the_targets_imports_nothing_heavy():
    assert imports_of("export", "--list") == {"code": 0, "loaded": []}


def test_running_a_host_program_needs_no_compiler(exported, tmp_path):
    """The ExecuTorch runtime's extension, not executorch.runtime (which imports the exir compiler)."""
    from PIL import Image

    from tinyrps.data import make_split
    image = tmp_path / "move.png"
    Image.fromarray(make_split("test", 1, seed=5)[0][0]).save(image)
    program = exported("int8-xnnpack")
    assert imports_of("classify", "--model", program, image) == {"code": 0, "loaded": ["torch"]}
    assert imports_of("play", "--model", program, "--moves", "r") == {"code": 0, "loaded": ["torch"]}


def test_the_program_reader_agrees_with_executorch(exported):
    from executorch.exir._serialize._program import deserialize_pte_binary
    from executorch.exir.schema import Double, Int, KernelCall

    from tinyrps.hardware.pte import kernel_calls, program_contents

    def scalar(value):
        return value.int_val if isinstance(value, Int) else value.double_val if isinstance(value, Double) else None
    for target in ("fp32", "int8-xnnpack", "cortex-m55", "ethos-u85-128"):
        data = exported(target).read_bytes()
        plan = deserialize_pte_binary(data).program.execution_plan[0]
        contents = program_contents(data)
        assert contents.delegates == tuple(d.id for d in plan.delegates)
        assert contents.operators == tuple(op.name for op in plan.operators)
        calls = [(c, n, i.instr_args) for c, chain in enumerate(plan.chains) for n, i in enumerate(chain.instructions)
                 if isinstance(i.instr_args, KernelCall)]
        assert kernel_calls(data) == [(c, n, plan.operators[k.op_index].name, plan.operators[k.op_index].overload,
                                       tuple(scalar(plan.values[a].val) for a in k.args)) for c, n, k in calls], target
        if target in ("cortex-m55", "ethos-u85-128"):     # quantize calls with their scale and zero point
            assert any(isinstance(arg, float) for call in kernel_calls(data) for arg in call.args), target


def test_playing_on_the_npu_reference_needs_neither_torch_nor_the_compiler(exported):
    """The device reads the program's quantization with tinyrps's own reader: the TOSA reference
    model is all it loads (ExecuTorch's serializer alone took 5 s to import, with torch)."""
    program = exported("ethos-u85-128")
    assert imports_of("play", "--model", program, "--device", "npu-ref", "--moves", "r") == \
        {"code": 0, "loaded": ["tosa_reference_model"]}


def test_a_corrupted_program_is_a_user_error(exported):
    import pytest

    from tinyrps.infra.errors import UserError
    from tinyrps.hardware.pte import program_contents
    data = bytearray(exported("fp32").read_bytes())
    for broken in (bytes(data[:4096]), bytes(data[:16]), bytes(data[:4]) + b"\xff" * 60):
        with pytest.raises(UserError, match="corrupted"):
            program_contents(broken)
