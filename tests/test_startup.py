"""Start-up stays fast: what a command imports, checked module by module (deterministic,
unlike timings; the timings themselves are scripts/bench_startup.py's)."""
import json
import subprocess
import sys

from script_module import load_script

# Run tinyrps.cli.main in a fresh interpreter, then list the heavy packages it imported.
PROBE = """
import json, sys
from tinyrps.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as e:
    code = e.code
heavy = ("torch", "torchao", "executorch.exir", "matplotlib", "tosa_reference_model", "ethosu")
loaded = sorted(h for h in heavy if any(m == h or m.startswith(h + ".") for m in sys.modules))
print(json.dumps({"code": code, "loaded": loaded}), file=sys.stderr)
"""


def imports_of(*args) -> dict:
    res = subprocess.run([sys.executable, "-c", PROBE, *map(str, args)], capture_output=True, text=True, timeout=300)
    return json.loads(res.stderr.strip().splitlines()[-1])


def said(*args) -> list:
    """What the command printed on stderr, line by line."""
    res = subprocess.run([sys.executable, "-m", "tinyrps", *map(str, args)], capture_output=True, text=True,
                         timeout=300)
    return res.stderr.strip().splitlines()


def test_help_imports_nothing_heavy():
    assert imports_of("--help") == {"code": 0, "loaded": []}
    assert imports_of("play", "--help") == {"code": 0, "loaded": []}


def startup_script():
    return load_script("bench_startup")


def test_the_user_errors_cover_every_command():
    from tinyrps.cli import build_parser
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
        found = imports_of(*args)
        assert found == {"code": 2, "loaded": []}, (name, found)
        lines = said(*args)
        assert len(lines) == 1 and "Traceback" not in lines[0], (name, lines)
    assert imports_of("play", "--model", tmp_path, "--device", "tpu") == {"code": 2, "loaded": []}


def test_a_runs_programs_are_checked_against_the_options_before_any_work(exported, tmp_path):
    """A device of another family, a --board no selected program boots, a target option the target
    does not take, a bad --arch: each one line and exit 2 before torch loads (so before eager runs)."""
    exported("cortex-m55")
    run = exported("fp32").parents[1]
    cases = startup_script().run_user_errors(run, tmp_path)
    for name, args in cases.items():
        found = imports_of(*args)
        assert found == {"code": 2, "loaded": []}, (name, found)
        lines = said(*args)
        assert len(lines) == 1 and lines[0].startswith("tinyrps") and "Traceback" not in lines[0], (name, lines)
    assert "--device mcu or --device native" in said(*cases["eval, a Cortex-M program on npu-ref"])[0]
    assert "leave --board out" in said(*cases["eval, --board for a host program"])[0]


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

    from tinyrps.pte import program_contents
    for target in ("fp32", "int8-xnnpack"):
        data = exported(target).read_bytes()
        plan = deserialize_pte_binary(data).program.execution_plan[0]
        contents = program_contents(data)
        assert contents.delegates == tuple(d.id for d in plan.delegates)
        assert contents.operators == tuple(op.name for op in plan.operators)


def test_a_corrupted_program_is_a_user_error(exported):
    import pytest

    from tinyrps.errors import UserError
    from tinyrps.pte import program_contents
    data = bytearray(exported("fp32").read_bytes())
    for broken in (bytes(data[:4096]), bytes(data[:16]), bytes(data[:4]) + b"\xff" * 60):
        with pytest.raises(UserError, match="corrupted"):
            program_contents(broken)
