"""Every user error found by trying to break the commands, one row each: the command exits with code 2,
says what is wrong in one line on stderr (no traceback), and leaves every file it was given as it was.

A row is (name, make, says): make(tmp_path, exported) writes what the case needs into tmp_path and
returns the command's arguments; says is a piece of the line. What a row leaves in tmp_path is compared
with what was there before the command: the same entries, each of the same kind and bytes.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import socket
import stat
import textwrap
from pathlib import Path

import numpy as np
import pytest

IMAGE = np.zeros((1, 1, 28, 28), np.float32)          # one input of the fixture's programs


# ── what the rows write ───────────────────────────────────────────────────────────────────────
def npz(path: Path, **arrays) -> Path:
    np.savez(path, **arrays)
    return path


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def unix_socket(path: Path) -> Path:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))          # the socket file stays after the close
    server.close()
    return path


def module(tmp: Path, source: str) -> str:
    path = tmp / "user_net.py"
    path.write_text("import sys\nimport torch\n\n" + textwrap.dedent(source))
    return f"{path}:Net"


LINEAR = """
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.fc(x)
"""


def export_module(tmp: Path, source: str, *extra, target: str = "int8-xnnpack", shape: str = "1,8",
                  calibration: str = "random") -> tuple:
    return ("export", "--module", module(tmp, source), "--input-shape", shape, "--calibration", calibration,
            "--target", target, "--out", tmp / "out", *extra)


def calibration(tmp: Path, value: float) -> str:
    examples = np.random.default_rng(0).normal(size=(16, 1, 8)).astype(np.float32)
    examples[3, 0, 5] = value
    return str(npz(tmp / "calibration.npz", input0=examples))


def run(tmp: Path, program: Path, *extra, inputs=None, out=None, device: str = "executorch") -> tuple:
    inputs = inputs if inputs is not None else npz(tmp / "in.npz", input0=IMAGE)
    return ("run", "--model", program, "--inputs", inputs, "--out", out if out is not None else tmp / "out.npz",
            "--device", device, *extra)


def copied_as(tmp: Path, program: Path, name: str) -> Path:
    """A program and its descriptor copied under another target's name."""
    for suffix in (".pte", ".json"):
        shutil.copyfile(program.with_suffix(suffix), (tmp / name).with_suffix(suffix))
    return (tmp / name).with_suffix(".pte")


def parent_is_a_file(tmp: Path) -> Path:
    (tmp / "some_file").write_text("mine")
    return tmp / "some_file" / "x.npz"


def inputs_as_out(tmp: Path) -> Path:
    return npz(tmp / "in.npz", input0=IMAGE)


CASES = [
    # 1: a file is renamed only over a regular file or nothing
    ("out-is-a-named-pipe", lambda t, e: run(t, e("int8-xnnpack"), out=fifo(t / "pipe")), "is a named pipe"),
    ("etdump-is-a-socket", lambda t, e: run(t, e("cortex-m55"), "--etdump", unix_socket(t / "sock"),
                                            device="native"), "is a socket"),
    # 4: a program named for a target is that target's
    ("program-copied-to-another-target", lambda t, e: run(t, copied_as(t, e("int8-xnnpack"), "fp32")),
     "named for the target fp32, but its descriptor records int8-xnnpack"),
    ("bench-of-a-copied-program", lambda t, e: ("bench", "--model", copied_as(t, e("int8-xnnpack"), "fp32"),
                                                "--device", "executorch", "--runs", "1"), "named for the target fp32"),
    ("export-named-for-another-target", lambda t, e: export_module(t, LINEAR, "--name", "fp32"),
     "--name fp32 is the name of another target"),
    # 6: operators the runtime has no kernel for
    ("operator-without-a-kernel", lambda t, e: export_module(t, """
        class Net(torch.nn.Module):
            def forward(self, x):
                return torch.sort(x, dim=-1).values
        """), "aten::sort.values"),
    ("complex-numbers", lambda t, e: export_module(t, """
        class Net(torch.nn.Module):
            def forward(self, x):
                return torch.fft.fft(x).abs()
        """), "ExecuTorch cannot lower"),
    # 7: calibration checked up front
    ("calibration-outlier", lambda t, e: export_module(t, LINEAR, calibration=calibration(t, 3e38)),
     "would quantize to 0"),
    ("calibration-nan", lambda t, e: export_module(t, LINEAR, calibration=calibration(t, np.nan)),
     "NaN or infinite"),
    ("calibration-inf", lambda t, e: export_module(t, LINEAR, calibration=calibration(t, np.inf)),
     "NaN or infinite"),
    ("calibration-extra-array", lambda t, e: export_module(
        t, LINEAR, calibration=str(npz(t / "c.npz", input0=np.zeros((4, 1, 8), np.float32),
                                       input1=np.zeros((4, 1, 8), np.float32)))), "has array input1 besides"),
    # 8: the user's code does not end the command
    ("sys-exit-0-at-import", lambda t, e: export_module(t, "sys.exit(0)\n"), "called sys.exit(0)"),
    ("sys-exit-message-in-forward", lambda t, e: export_module(t, """
        class Net(torch.nn.Module):
            def forward(self, x):
                sys.exit("msg")
        """), "forward called sys.exit('msg')"),
    ("keyboard-interrupt-in-forward", lambda t, e: export_module(t, """
        class Net(torch.nn.Module):
            def forward(self, x):
                raise KeyboardInterrupt
        """), "raised KeyboardInterrupt itself"),
    # 10: what torch.export cannot trace
    ("data-dependent-if", lambda t, e: export_module(t, """
        class Net(torch.nn.Module):
            def forward(self, x):
                if x.sum() > 0:
                    return x * 2
                return x
        """), "torch.export cannot trace"),
    ("data-dependent-size", lambda t, e: export_module(t, """
        class Net(torch.nn.Module):
            def forward(self, x):
                return x[:, :torch.nonzero(x).shape[0]]
        """), "ExecuTorch cannot lower"),
    # 11: shapes no program records or no memory holds
    ("input-shape-past-memory", lambda t, e: export_module(t, LINEAR, shape="1,1,1000000,1000000"),
     "of memory free"),
    ("input-shape-past-int64", lambda t, e: export_module(t, LINEAR, shape="1,99999999999999999999999"),
     "32-bit integers"),
    # 12: a parent that is a file
    ("out-under-a-file", lambda t, e: run(t, e("int8-xnnpack"), out=parent_is_a_file(t)),
     "some_file is a file, not a folder"),
    # 21: byte order, inputs overwritten, arrays ignored
    ("big-endian-input", lambda t, e: run(t, e("int8-xnnpack"), inputs=npz(t / "be.npz", input0=IMAGE.astype(">f4"))),
     "the array given is float32 big-endian"),
    ("out-is-the-inputs", lambda t, e: run(t, e("int8-xnnpack"), out=inputs_as_out(t), inputs=t / "in.npz"),
     "is the file of --inputs"),
    ("inputs-with-extra-arrays", lambda t, e: run(t, e("int8-xnnpack"),
                                                  inputs=npz(t / "in.npz", input0=IMAGE, extra=IMAGE)),
     "has array extra besides input0"),
    # 23: advice that leads to a device
    # an Ethos-U program's tensors run on the NPU model, the TOSA reference and the emulated Cortex-M55
    ("ethos-u-tensors-on-native", lambda t, e: run(t, e("ethos-u55-128"), device="native"),
     "run it with --device npu or --device npu-ref or --device mcu"),
    ("ethos-u-tensors-on-executorch", lambda t, e: run(t, e("ethos-u55-128"), device="executorch"),
     "run it with --device npu or --device npu-ref or --device mcu"),
]


def snapshot(folder: Path) -> dict:
    """Every entry under `folder`: its kind and, for a regular file, its bytes' digest."""
    entries = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(root, name)
            mode = path.lstat().st_mode
            digest = hashlib.sha256(path.read_bytes()).hexdigest() if stat.S_ISREG(mode) else None
            entries[path.relative_to(folder).as_posix()] = (stat.S_IFMT(mode), digest)
    return entries


@pytest.mark.parametrize("name,make,says", CASES, ids=[case[0] for case in CASES])
def test_a_user_error_is_one_line_and_touches_nothing(name, make, says, cli, exported, tmp_path):
    args = make(tmp_path, exported)
    before = snapshot(tmp_path)
    res = cli(*args)
    assert res.returncode == 2, (res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert says in lines[0], lines[0]
    assert snapshot(tmp_path) == before


def test_out_the_same_as_the_inputs_is_named(cli, exported, tmp_path):
    inputs = npz(tmp_path / "in.npz", input0=IMAGE)
    res = cli(*run(tmp_path, exported("int8-xnnpack"), inputs=inputs, out=tmp_path / "." / "in.npz"))
    assert res.returncode == 2 and "--out" in res.stderr and "is the file of --inputs" in res.stderr, res.stderr


def test_only_a_regular_file_or_nothing_is_replaced(tmp_path):
    """The rule itself, on the system's own device nodes (checked, never written) and a pipe."""
    from tinyrps.infra.artifacts.files import atomic_write_bytes, check_replaceable_file
    from tinyrps.infra.errors import UserError
    for path, what in (("/dev/null", "a character device"), ("/dev/full", "a character device"),
                       (fifo(tmp_path / "pipe"), "a named pipe"), (tmp_path, "a folder")):
        with pytest.raises(UserError, match=what):
            check_replaceable_file(path, "--out")
    with pytest.raises(UserError, match="is a named pipe"):
        atomic_write_bytes(tmp_path / "pipe", b"x")
    assert stat.S_ISFIFO((tmp_path / "pipe").lstat().st_mode)
    (tmp_path / "file").write_bytes(b"old")
    atomic_write_bytes(tmp_path / "file", b"new")
    atomic_write_bytes(tmp_path / "new", b"new")
    link = tmp_path / "link"
    link.symlink_to("/dev/null")
    with pytest.raises(UserError, match="a character device"):
        check_replaceable_file(link)
    assert (tmp_path / "file").read_bytes() == b"new" and (tmp_path / "new").read_bytes() == b"new"


# ── results named by their own record ─────────────────────────────────────────────────────────
def test_a_measurement_is_shown_only_for_the_target_it_was_taken_for(exported, measured, tmp_path):
    """The M4's and the M33's programs are the same bytes, run on different boards: the M33's measurement
    copied over the M4's is not the M4's."""
    from tinyrps import measure
    m4, m33 = exported("cortex-m4"), exported("cortex-m33")
    assert m4.read_bytes() == m33.read_bytes()
    taken = measured(m33)
    programs = {name: copied_as(tmp_path, pte, name) for name, pte in (("cortex-m4", m4), ("cortex-m33", m33))}
    for pte in programs.values():
        shutil.copyfile(measure.path_of(m33), measure.path_of(pte))
    assert measure.read(programs["cortex-m33"]) == taken
    assert measure.read(programs["cortex-m4"]) is None


# ── a home folder that does not exist ─────────────────────────────────────────────────────────
def without_home(tmp_path: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "MPLCONFIGDIR")}
    return {**env, "HOME": str(tmp_path / "gone" / "home")}


def test_a_missing_home_folder_is_not_made(tmp_path):
    """The caches that belong in it (firmware builds, matplotlib's) go into a temporary folder, said once."""
    import subprocess
    import sys
    code = ("import tinyrps.interfaces.plots, matplotlib.pyplot as plt\n"
            "from tinyrps.firmware.build import build_root\n"
            "plt.figure(); print(build_root())\n")
    res = subprocess.run([sys.executable, "-c", code], env=without_home(tmp_path), capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert not (tmp_path / "gone").exists()
    assert not res.stdout.strip().startswith(str(tmp_path)), res.stdout
    notes = [line for line in res.stderr.splitlines() if line.startswith("tinyrps: note:")]
    assert len(notes) == 1 and "does not exist" in notes[0], res.stderr
    assert not Path(res.stdout.strip()).exists()       # removed at the end


@pytest.mark.slow     # builds the native runtime in a temporary folder
def test_a_program_runs_without_a_home_folder(exported, tmp_path):
    import subprocess
    import sys
    args = run(tmp_path, exported("cortex-m55"), device="native")
    res = subprocess.run([sys.executable, "-m", "tinyrps", *map(str, args)], env=without_home(tmp_path),
                         capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "out.npz").is_file() and not (tmp_path / "gone").exists()
