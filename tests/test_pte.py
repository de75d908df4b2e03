"""What the host reads from a .pte and its descriptor before any device runs it: the file
identifier the firmware accepts, and a descriptor that really describes the program."""
from __future__ import annotations

import hashlib
import json
import shutil

import pytest

from tinyrps.devices import default_device, open_device
from tinyrps.infra.errors import UserError
from tinyrps.hardware.pte import program_family, read_program


def test_only_the_format_the_firmware_reads_is_a_program(exported, tmp_path):
    data = bytearray(exported("fp32").read_bytes())
    assert data[4:8] == b"ET12"
    assert read_program(exported("fp32")) == bytes(data)
    data[4:8] = b"ET09"                       # an ExecuTorch program of an older format
    other = tmp_path / "old.pte"
    other.write_bytes(bytes(data))
    with pytest.raises(UserError, match="format ET09.*ET12 only"):
        read_program(other)


def copy_with_descriptor(program, descriptor_of, folder, name="model.pte"):
    """`program`'s bytes under `name`, beside the descriptor of the program `descriptor_of`."""
    copy = folder / name
    shutil.copyfile(program, copy)
    shutil.copyfile(descriptor_of.with_suffix(".json"), copy.with_suffix(".json"))
    return copy


def test_a_descriptor_describing_another_program_is_refused(exported, tmp_path):
    """A cpu program beside a Cortex-M program's descriptor (the .pte was replaced after
    the export): its family must not come from that descriptor."""
    stale = copy_with_descriptor(exported("fp32"), exported("cortex-m55"), tmp_path)
    for family_of in (program_family, default_device):
        with pytest.raises(UserError, match="does not match its descriptor .*export the program again"):
            family_of(stale)


@pytest.mark.parametrize("device", ["executorch", "native", "mcu"])
def test_every_device_refuses_a_stale_descriptor(exported, tmp_path, device):
    program = exported("fp32") if device == "executorch" else exported("cortex-m55")
    other = exported("int8-xnnpack") if device == "executorch" else exported("cortex-m4")
    stale = copy_with_descriptor(program, other, tmp_path)
    with pytest.raises(UserError, match="does not match its descriptor"):
        open_device(device, stale)


def test_a_matching_descriptor_is_used(exported, tmp_path):
    program = copy_with_descriptor(exported("cortex-m55"), exported("cortex-m55"), tmp_path)
    assert program_family(program) == "cortex-m" and default_device(program) == "mcu"


@pytest.mark.parametrize("text", ["{\"family\": \"cortex-m\", ", "[1, 2]", "\xff\xfe"])
def test_a_corrupt_descriptor_is_an_error(exported, tmp_path, text):
    program = copy_with_descriptor(exported("fp32"), exported("fp32"), tmp_path)
    program.with_suffix(".json").write_bytes(text.encode("latin-1"))
    with pytest.raises(UserError, match="corrupt .*export the program again"):
        program_family(program)


def test_a_descriptor_naming_an_unknown_family_is_an_error(exported, tmp_path):
    program = copy_with_descriptor(exported("fp32"), exported("fp32"), tmp_path)
    raw = json.loads(program.with_suffix(".json").read_text())
    raw["family"] = "gpu"
    program.with_suffix(".json").write_text(json.dumps(raw))
    assert raw["sha256"] == hashlib.sha256(program.read_bytes()).hexdigest()
    with pytest.raises(UserError, match="unknown family 'gpu'"):
        program_family(program)


@pytest.mark.parametrize("device", [None, "native", "mcu"])
def test_the_cli_reports_a_stale_descriptor_in_one_line(cli, exported, tmp_path, device):
    from PIL import Image
    image = tmp_path / "rock.png"
    Image.new("L", (28, 28)).save(image)
    stale = copy_with_descriptor(exported("fp32"), exported("cortex-m55"), tmp_path)
    args = ["classify", "--model", stale, image] + (["--device", device] if device else [])
    res = cli(*args)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert "does not match its descriptor" in line and "tinyrps export" in line


# Read a program and its raw in a fresh interpreter, then list the heavy packages that came with it.
READ_WITHOUT_TORCH = """
import json, sys
from tinyrps.hardware import descriptor
from tinyrps.hardware.pte import program_contents, program_family, read_program
path = sys.argv[1]
program = read_program(path)
program_contents(program, path)
descriptor.read(path, program)
family = program_family(path)
heavy = ("torch", "executorch", "numpy")
print(json.dumps({"family": family, "loaded": sorted(h for h in heavy if h in sys.modules)}))
"""


@pytest.mark.parametrize("target,family", [("fp32", "cpu"), ("cortex-m55", "cortex-m")])
def test_reading_a_program_and_its_descriptor_imports_no_torch(exported, target, family):
    import subprocess
    import sys
    program = exported(target)
    assert program.with_suffix(".json").is_file()   # the descriptor is read too
    res = subprocess.run([sys.executable, "-c", READ_WITHOUT_TORCH, str(program)], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == {"family": family, "loaded": []}


def test_a_descriptor_round_trips_and_is_typed(exported):
    from tinyrps.hardware import descriptor
    from tinyrps.hardware.families import CortexMInfo
    pte = exported("cortex-m55")
    d = descriptor.read(pte, pte.read_bytes())
    assert isinstance(d.info, CortexMInfo) and d.labels == ("rock", "paper", "scissors") and d.is_classifier
    assert descriptor.from_json(descriptor.to_json(d), pte) == d
    assert json.loads(json.dumps(descriptor.to_json(d))) == json.loads(pte.with_suffix(".json").read_text())


@pytest.mark.parametrize("change,message", [
    (lambda raw: raw.pop("descriptor_version"), "older tinyrps's descriptor"),
    (lambda raw: raw.update(descriptor_version=99), "version 99"),
    (lambda raw: raw.pop("outputs"), "not a complete program descriptor"),
    (lambda raw: raw["cortex_m"].update(board="mps3-an547"), "unknown CortexMInfo fields"),
    (lambda raw: raw["cortex_m"].pop("core"), "not a complete program descriptor")])
def test_a_descriptor_of_another_schema_is_refused(exported, tmp_path, change, message):
    program = copy_with_descriptor(exported("cortex-m55"), exported("cortex-m55"), tmp_path)
    raw = json.loads(program.with_suffix(".json").read_text())
    change(raw)
    program.with_suffix(".json").write_text(json.dumps(raw))
    with pytest.raises(UserError, match=message):
        program_family(program)


def test_a_damaged_program_is_read_whole_or_refused_in_one_line(exported, monkeypatch):
    """Each byte the kernel calls' reader reads, changed in turn (flips seeded): the reader returns
    calls or refuses the program as corrupted, never another error."""
    import struct

    import numpy as np

    from tinyrps.hardware import pte
    data = bytearray(exported("ethos-u85-128").read_bytes())
    read = set()
    plain_read = pte._Flatbuffer._read

    def recording_read(self, fmt, at):
        read.update(range(at, at + struct.calcsize(fmt)))
        return plain_read(self, fmt, at)
    monkeypatch.setattr(pte._Flatbuffer, "_read", recording_read)
    calls = pte.kernel_calls(data)
    monkeypatch.setattr(pte._Flatbuffer, "_read", plain_read)
    assert len(read) > 200, len(read)
    outcomes = {"refused": 0, "other calls": 0, "same calls": 0}
    for at, flip in zip(sorted(read), np.random.default_rng(0).integers(1, 256, len(read))):
        data[at] ^= int(flip)
        try:
            outcomes["same calls" if pte.kernel_calls(data) == calls else "other calls"] += 1
        except UserError as e:
            assert "corrupted ExecuTorch program" in str(e)
            outcomes["refused"] += 1
        data[at] ^= int(flip)
    assert outcomes["refused"] and outcomes["other calls"], outcomes


def test_a_descriptor_of_the_family_s_old_name_is_read_as_the_cpu_family(exported, tmp_path):
    """0.1.0 called the cpu family "host" (descriptor version 3): its descriptors stay readable for one release."""
    from tinyrps.hardware import descriptor
    program = copy_with_descriptor(exported("fp32"), exported("fp32"), tmp_path)
    raw = json.loads(program.with_suffix(".json").read_text())
    assert raw["family"] == "cpu"
    raw["family"], raw["host"], raw["descriptor_version"] = "host", raw.pop("cpu"), 3
    for tensor in raw["inputs"] + raw["outputs"]:
        del tensor["scale"], tensor["zero_point"]
    program.with_suffix(".json").write_text(json.dumps(raw))
    assert descriptor.read(program).family == "cpu" and default_device(program) == "executorch"
