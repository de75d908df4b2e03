"""Start-up stays fast: what a command imports, checked module by module (deterministic,
unlike timings; the timings themselves are scripts/bench_startup.py's)."""
import json
import subprocess
import sys

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


def test_help_imports_nothing_heavy():
    assert imports_of("--help") == {"code": 0, "loaded": []}
    assert imports_of("play", "--help") == {"code": 0, "loaded": []}


def test_a_user_error_imports_nothing_heavy(tmp_path):
    assert imports_of("play", "--model", tmp_path / "missing.pte") == {"code": 2, "loaded": []}
    assert imports_of("eval", "--run", tmp_path, "--limit", "0") == {"code": 2, "loaded": []}
    assert imports_of("eval", "--run", tmp_path) == {"code": 2, "loaded": []}
    assert imports_of("play", "--model", tmp_path, "--device", "tpu") == {"code": 2, "loaded": []}


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
