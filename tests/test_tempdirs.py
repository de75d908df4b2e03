"""Temporary folders: a killed command's are removed by the next command (tinyrps.infra.tempdirs)."""
import os
import signal
import subprocess
import sys
import time

import pytest
from PIL import Image

from tinyrps.infra import tempdirs

HOURS_AGO = 2 * 3600


def gone_pid() -> int:
    """The id of a process that has ended (and been reaped)."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def make(root, name, age_s=HOURS_AGO, folder=True):
    path = root / name
    path.mkdir() if folder else path.write_text("x")
    (path / "qemu.log").write_text("left") if folder else None
    stamp = time.time() - age_s
    os.utime(path, (stamp, stamp))
    return path


def test_only_old_folders_of_gone_processes_are_left_behind(tmp_path):
    dead = gone_pid()
    left = make(tmp_path, f"tinyrps-qemu.{dead}.a1b2c3d4")
    older = make(tmp_path, f"tinyrps-batch.{dead}.zz_9", age_s=3 * 3600)
    kept = [make(tmp_path, f"tinyrps-qemu.{dead}.young", age_s=60),          # may still be in use
            make(tmp_path, f"tinyrps-batch.{os.getpid()}.alive"),            # its process runs
            make(tmp_path, "tinyrps-qemu.k3j2h1g0"),                         # no process id in the name
            make(tmp_path, f"tinyrps-qemu.{dead}.file", folder=False),       # not a folder
            make(tmp_path, f"othertool-qemu.{dead}.abc"),                    # not ours
            make(tmp_path, f"tinyrps-qemu.0.abc")]                           # no process's id
    assert tempdirs.left_behind(tmp_path) == [older, left]
    assert all(p.exists() for p in kept)


def test_the_first_temporary_folder_of_a_process_sweeps_once(tmp_path, monkeypatch):
    monkeypatch.setattr(tempdirs.tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(tempdirs, "_swept", False)
    left = make(tmp_path, f"tinyrps-qemu.{gone_pid()}.x")
    with tempdirs.temp_dir("batch") as work:
        assert os.path.basename(work).startswith(f"tinyrps-batch.{os.getpid()}.")
        assert not left.exists()
        later = make(tmp_path, f"tinyrps-qemu.{gone_pid()}.y")
        with tempdirs.temp_dir("qemu"):
            assert later.exists()        # once per process: a sweep is a scan of the whole folder
    assert sorted(p.name for p in tmp_path.iterdir()) == [later.name]


@pytest.mark.slow
def test_a_killed_commands_folder_is_removed_by_the_next_command(exported, tmp_path):
    """`classify` on the emulated board killed while QEMU runs leaves its folder (it cannot remove it);
    once that is old, the next command that makes one removes it, and leaves none of its own."""
    from tinyrps.data import make_split
    images, _ = make_split("test", 4, seed=7)
    pictures = tmp_path / "pictures"
    pictures.mkdir()
    for i, image in enumerate(images):
        Image.fromarray(image).save(pictures / f"{i}.png")
    temp = tmp_path / "tmp"
    temp.mkdir()
    command = [sys.executable, "-m", "tinyrps", "classify", "--model", str(exported("cortex-m55")), "--device", "mcu",
               "--quiet", str(pictures)]
    env = {**os.environ, "TMPDIR": str(temp)}
    child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             start_new_session=True)
    deadline = time.monotonic() + 120
    while not list(temp.glob("tinyrps-*")) and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    os.killpg(child.pid, signal.SIGKILL)
    child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL, "classify ended before its temporary folder could be seen"
    left = list(temp.glob("tinyrps-*"))
    assert left and all(p.name.split(".")[1] == str(child.pid) for p in left), left
    stamp = time.time() - HOURS_AGO
    for path in left:
        os.utime(path, (stamp, stamp))
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert list(temp.iterdir()) == []
