"""`deploy fvp`: the program and image files in, the runner built once, one FVP run per image,
results in the form of `classify --json`. The build script and the FVP are stand-ins (conftest.py)
that record what they were given, so everything short of the real FVP is exercised."""
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tinyrps.network.images import read_image
from tinyrps.deploy import fvp
from tinyrps.deploy.runner_build import flatc_path
from tinyrps.infra.errors import UserError


@pytest.fixture
def image_files(tmp_path, test_images):
    images, _ = test_images
    paths = []
    for i, img in enumerate(images[:2]):
        paths.append(tmp_path / f"img{i}.png")
        Image.fromarray(img).resize((84, 84)).save(paths[-1])
    return paths


def npu_ref(model, paths):
    from tinyrps.devices import open_device
    with open_device("npu-ref", model) as device:
        return device.classify(np.stack([read_image(p).image for p in paths]))


def program_input_nbytes(model) -> int:
    from executorch.exir._serialize._program import deserialize_pte_binary
    plan = deserialize_pte_binary(Path(model).read_bytes()).program.execution_plan[0]
    tensor = plan.values[plan.inputs[0]].val
    assert tensor.scalar_type == 6  # float32
    return 4 * int(np.prod(tensor.sizes))


@pytest.mark.slow
def test_input_file_is_the_prepared_image_as_float32(u85, image_files):
    image = read_image(image_files[0]).image
    data = fvp.input_tensor_bytes(image)
    assert data == (image.astype(np.float32) / np.float32(255.0)).tobytes()  # byte for byte
    assert len(data) == program_input_nbytes(u85) == 28 * 28 * 4


def test_images_are_classified_on_the_fvp(u85, image_files, fake_tools, semihosting_log, tmp_path):
    expected = npu_ref(u85, image_files)
    off = expected[1] + np.array([2.0, -2.0, 0.0], np.float32)   # the second run disagrees with npu-ref
    fake_tools.plan(semihosting_log, logits=[expected[0], off])
    workdir = tmp_path / "work"
    entries = fvp.deploy_fvp(u85, fake_tools.root, workdir=workdir, images=image_files)

    # the classify --json form, with the device and the FVP's cycle counts
    assert [e["path"] for e in entries] == [str(p) for p in image_files]
    for entry, logits in zip(entries, [expected[0], off]):
        assert entry["device"] == "fvp"
        assert entry["logits"] == pytest.approx(logits.tolist())
        assert set(entry["probabilities"]) == {"rock", "paper", "scissors"}
        assert entry["label"] == max(entry["probabilities"], key=entry["probabilities"].get)
        assert entry["confidence"] == pytest.approx(max(entry["probabilities"].values()))
        assert (entry["npu_cycles"], entry["cpu_cycles"], entry["ethos_u_delegate_cpu_cycles"]) == \
            (141522, 241003, 183711)
    assert [e["matches_npu_ref"] for e in entries] == [True, False]
    assert entries[1]["max_abs_diff_npu_ref"] == pytest.approx(2.0)
    json.dumps(entries)  # printable as JSON

    # one build of the semihosting runner, from the checkout, with this Python and flatc
    (build,) = fake_tools.builds()
    assert build["cwd"] == str(fake_tools.root)
    assert build["args"] == ["--pte=semihosting", "--target=ethos-u85-128", "--system_config=Ethos_U85_SYS_DRAM_Mid",
                             "--memory_mode=Dedicated_Sram", f"--output={workdir / 'build-semihosting'}",
                             f"--extra_build_flags=-DPYTHON_EXECUTABLE={sys.executable} "
                             f"-DFLATC_EXECUTABLE={flatc_path()}"]
    assert build["PATH"].split(":")[:2] == [str(fake_tools.bin), str(Path(sys.executable).parent)]
    assert build["VIRTUAL_ENV"] == sys.prefix

    # one FVP run per image: program and prepared input through semihosting, in a short folder
    runs = fake_tools.runs()
    assert len(runs) == 2
    for run, path in zip(runs, image_files):
        assert run["runner_argv"] == ["executor_runner", "-m", "m.pte", "-o", "out", "-i", "x.bin"]
        assert bytes.fromhex(run["program"]) == u85.read_bytes()
        assert bytes.fromhex(run["input"]) == (read_image(path).image.astype(np.float32) / np.float32(255)).tobytes()
        params = [run["argv"][i + 1] for i, a in enumerate(run["argv"]) if a == "-C"]
        assert f"mps4_board.subsystem.cpu0.semihosting-cwd={run['cwd']}" in params
        assert "mps4_board.subsystem.cpu0.semihosting-enable=1" in params
        assert "mps4_board.uart0.unbuffered_output=1" in params
        assert not any("--fast" in a for a in run["argv"])
        assert run["argv"][-4:-2] == ["-a", str(workdir / "build-semihosting" / "arm_executor_runner")]
        assert not Path(run["cwd"]).exists()  # the temporary folder is gone
    assert [e["log"] for e in entries] == [str(workdir / "fvp-image0.log"), str(workdir / "fvp-image1.log")]
    assert "Writing output to file: out-0.bin" in (workdir / "fvp-image1.log").read_text()


@pytest.mark.parametrize("problem", [
    "I [executorch:arm_executor_runner.cpp:915 runner_init()] Loading of method forward failed with status 0x20",
    "F [executorch:arm_executor_runner.cpp:741 runner_init()] Program loading failed @ 0x70000000: 0x23",
    "[critical] Ethos-U: out of range access",
])
def test_a_failed_run_is_one_line_naming_the_problem_and_the_log(u85, image_files, fake_tools, semihosting_log,
                                                                  tmp_path, problem):
    fake_tools.plan(semihosting_log[:9] + [problem], logits=[None])
    with pytest.raises(UserError) as e:
        fvp.deploy_fvp(u85, fake_tools.root, workdir=tmp_path / "work", images=image_files[:1])
    message = str(e.value)
    assert "\n" not in message and problem in message and str(tmp_path / "work" / "fvp-image0.log") in message


def test_a_run_without_output_file_is_refused(u85, image_files, fake_tools, semihosting_log, tmp_path):
    fake_tools.plan(semihosting_log, logits=[None])
    with pytest.raises(UserError, match="the runner wrote no out-0.bin"):
        fvp.deploy_fvp(u85, fake_tools.root, workdir=tmp_path / "work", images=image_files[:1])


def test_a_bad_image_fails_before_anything_is_built(u85, fake_tools, tmp_path):
    with pytest.raises(UserError, match="image not found"):
        fvp.deploy_fvp(u85, fake_tools.root, workdir=tmp_path / "work", images=[tmp_path / "missing.png"])
    assert fake_tools.builds() == [] and fake_tools.runs() == []


def test_without_images_the_runner_has_the_program_baked_in(u85, fake_tools, semihosting_log, tmp_path):
    white = np.full((1, 28, 28), 255, np.uint8)
    from tinyrps.devices import open_device
    with open_device("npu-ref", u85) as device:
        expected = device.classify(white)[0]
    printed = [f"Output[0][{j}]: (float) {v:f}" for j, v in enumerate(expected)]  # the runner's printf("%f")
    fake_tools.plan(semihosting_log[:-4] + printed)
    workdir = tmp_path / "work"
    report = fvp.deploy_fvp(u85, fake_tools.root, workdir=workdir)
    assert report["matches_npu_ref"] and report["npu_cycles"] == 141522
    assert report["logits"] == pytest.approx(expected.tolist(), abs=1e-6)
    (build,) = fake_tools.builds()
    assert f"--pte={u85}" in build["args"] and f"--output={workdir / 'build'}" in build["args"]
    (run,) = fake_tools.runs()
    assert "runner_argv" not in run and not any("semihosting" in a for a in run["argv"])


def copy_program(model, folder, **vela):
    """The program, its descriptor and its measurement in another folder, with some of Vela's figures changed."""
    from tinyrps import measure
    folder.mkdir(parents=True, exist_ok=True)
    copy = Path(shutil.copy(model, folder / model.name))
    shutil.copy(model.with_suffix(".json"), copy.with_suffix(".json"))
    measured = measure.read(model) or measure.measure(model, only=("vela",))   # Vela's figures are what it changes
    measured["vela"].update(vela)
    measure.path_of(copy).write_text(json.dumps(measured))
    return copy


def test_program_needing_more_sram_than_the_runner_reserves_is_refused(u85, tmp_path, fake_tools):
    # the runner's fast scratch area for Dedicated_Sram is 384 KB (393,216 bytes)
    too_big = copy_program(u85, tmp_path / "big", sram_bytes=393_217)
    with pytest.raises(UserError, match="needs 393,217 bytes of NPU SRAM .*--memory-mode Dedicated_Sram_384KB"):
        fvp.deploy_fvp(too_big, fake_tools.root, workdir=tmp_path / "work", images=[tmp_path / "missing.png"])
    assert fake_tools.builds() == []
    fits = copy_program(u85, tmp_path / "fits", sram_bytes=393_216)
    fvp.check_memory_fits(fits, fvp.program_settings(fits))


def test_memory_fit_applies_to_the_dedicated_sram_modes_only():
    settings = {"accelerator": "ethos-u55-128", "memory_mode": "Shared_Sram", "sram_bytes": 1 << 20}
    fvp.check_memory_fits(Path("m.pte"), settings)
    with pytest.raises(UserError):
        fvp.check_memory_fits(Path("m.pte"), {**settings, "memory_mode": "Dedicated_Sram_384KB"})


def test_cli_bad_image_is_one_line_and_exit_2(cli, u85, tmp_path):
    res = cli("deploy", "fvp", "--model", u85, "--executorch-root", tmp_path / "et",
              "--image", tmp_path / "missing.png", "--workdir", tmp_path / "work")
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.count("\n") == 1 and "image not found" in res.stderr
    res = cli("deploy", "fvp", "--model", u85, "--executorch-root", tmp_path / "et", "--timeout", "0")
    assert res.returncode == 2 and "time limit must be a positive number" in res.stderr
