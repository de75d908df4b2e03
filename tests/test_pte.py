"""What the host reads from a .pte and its sidecar before any device runs it: the file
identifier the firmware accepts, and a sidecar that really describes the program."""
from __future__ import annotations

import hashlib
import json
import shutil

import pytest

from tinyrps.devices import default_device, open_device
from tinyrps.errors import UserError
from tinyrps.pte import program_family, read_program


def test_only_the_format_the_firmware_reads_is_a_program(exported, tmp_path):
    data = bytearray(exported("fp32").read_bytes())
    assert data[4:8] == b"ET12"
    assert read_program(exported("fp32")) == bytes(data)
    data[4:8] = b"ET09"                       # an ExecuTorch program of an older format
    other = tmp_path / "old.pte"
    other.write_bytes(bytes(data))
    with pytest.raises(UserError, match="format ET09.*ET12 only"):
        read_program(other)


def copy_with_sidecar(program, sidecar_of, folder, name="model.pte"):
    """`program`'s bytes under `name`, beside the sidecar of the program `sidecar_of`."""
    copy = folder / name
    shutil.copyfile(program, copy)
    shutil.copyfile(sidecar_of.with_suffix(".json"), copy.with_suffix(".json"))
    return copy


def test_a_sidecar_describing_another_program_is_refused(exported, tmp_path):
    """A host program beside a Cortex-M program's sidecar (the .pte was replaced after
    the export): its family must not come from that sidecar."""
    stale = copy_with_sidecar(exported("fp32"), exported("cortex-m55"), tmp_path)
    for family_of in (program_family, default_device):
        with pytest.raises(UserError, match="does not match its sidecar .*export the program again"):
            family_of(stale)


@pytest.mark.parametrize("device", ["host", "native", "mcu"])
def test_every_device_refuses_a_stale_sidecar(exported, tmp_path, device):
    program = exported("fp32") if device == "host" else exported("cortex-m55")
    other = exported("int8-xnnpack") if device == "host" else exported("cortex-m4")
    stale = copy_with_sidecar(program, other, tmp_path)
    with pytest.raises(UserError, match="does not match its sidecar"):
        open_device(device, stale)


def test_a_matching_sidecar_is_used(exported, tmp_path):
    program = copy_with_sidecar(exported("cortex-m55"), exported("cortex-m55"), tmp_path)
    assert program_family(program) == "cortex-m" and default_device(program) == "mcu"


@pytest.mark.parametrize("text", ["{\"family\": \"cortex-m\", ", "[1, 2]", "\xff\xfe"])
def test_a_corrupt_sidecar_is_an_error(exported, tmp_path, text):
    program = copy_with_sidecar(exported("fp32"), exported("fp32"), tmp_path)
    program.with_suffix(".json").write_bytes(text.encode("latin-1"))
    with pytest.raises(UserError, match="corrupt .*export the program again"):
        program_family(program)


def test_a_sidecar_naming_an_unknown_family_is_an_error(exported, tmp_path):
    program = copy_with_sidecar(exported("fp32"), exported("fp32"), tmp_path)
    sidecar = json.loads(program.with_suffix(".json").read_text())
    sidecar["family"] = "gpu"
    program.with_suffix(".json").write_text(json.dumps(sidecar))
    assert sidecar["sha256"] == hashlib.sha256(program.read_bytes()).hexdigest()
    with pytest.raises(UserError, match="unknown family 'gpu'"):
        program_family(program)


@pytest.mark.parametrize("device", [None, "native", "mcu"])
def test_the_cli_reports_a_stale_sidecar_in_one_line(cli, exported, tmp_path, device):
    from PIL import Image
    image = tmp_path / "rock.png"
    Image.new("L", (28, 28)).save(image)
    stale = copy_with_sidecar(exported("fp32"), exported("cortex-m55"), tmp_path)
    args = ["classify", "--model", stale, image] + (["--device", device] if device else [])
    res = cli(*args)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert "does not match its sidecar" in line and "tinyrps export" in line


# Read a program and its sidecar in a fresh interpreter, then list the heavy packages that came with it.
READ_WITHOUT_TORCH = """
import json, sys
from tinyrps.pte import checked_sidecar, program_contents, program_family, read_program
path = sys.argv[1]
program = read_program(path)
program_contents(program, path)
checked_sidecar(path, program)
family = program_family(path)
heavy = ("torch", "executorch", "numpy")
print(json.dumps({"family": family, "loaded": sorted(h for h in heavy if h in sys.modules)}))
"""


@pytest.mark.parametrize("target,family", [("fp32", "host"), ("cortex-m55", "cortex-m")])
def test_reading_a_program_and_its_sidecar_imports_no_torch(exported, target, family):
    import subprocess
    import sys
    program = exported(target)
    assert program.with_suffix(".json").is_file()   # the sidecar is read too
    res = subprocess.run([sys.executable, "-c", READ_WITHOUT_TORCH, str(program)], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == {"family": family, "loaded": []}
