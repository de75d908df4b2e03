"""The game and classification on the NPU reference and on the emulated MCU, as on the host."""
import json

import pytest
from PIL import Image

pytestmark = pytest.mark.slow     # boots QEMU, runs the TOSA reference model

# (target, device, a figure the device adds to each round)
DEVICES = [("ethos-u85-128", "npu", "npu_estimate_ms"), ("ethos-u85-128", "npu-ref", "npu_estimate_ms"),
           ("cortex-m55", "mcu", "instructions")]


@pytest.mark.parametrize("target,device,figure", DEVICES)
def test_scripted_rounds(cli, exported, target, device, figure):
    from tinyrps import measure
    if figure == "npu_estimate_ms" and measure.read(exported(target), needs=("vela",)) is None:
        measure.measure(exported(target), only=("vela",))     # the estimate a round shows is the measure stage's
    res = cli("play", "--model", exported(target), "--device", device, "--moves", "rock,scissors", "--seed", "4", "--json")
    assert res.returncode == 0, res.stderr
    rounds = [json.loads(line) for line in res.stdout.splitlines()]
    assert [r["you"] for r in rounds] == ["rock", "scissors"]
    for r in rounds:
        assert r["outcome"] in ("win", "lose", "tie") and 0 < r["you_conf"] <= 1
        assert r[figure] > 0


@pytest.mark.parametrize("target,device,figure", DEVICES)
def test_interactive_rounds_with_piped_input(cli, exported, target, device, figure):
    res = cli("play", "--model", exported(target), "--device", device, "--seed", "2", input="paper\nspock\nr\n")
    assert res.returncode == 0, res.stderr
    out, said = res.stdout, res.stderr        # the rounds on stdout; prompts and messages on stderr
    assert "round 2" in out and "'spock' is not a move" in said and "final score: you" in said
    assert ("Ethos-U estimate" in out) if device.startswith("npu") else ("instructions on the MCU" in out)


@pytest.mark.parametrize("target,board", [("cortex-m33", "mps2-an505"), ("cortex-m4", "mps2-an386")])
def test_scripted_round_on_the_programs_own_board(cli, exported, target, board):
    res = cli("play", "--model", exported(target), "--device", "mcu", "--moves", "paper", "--seed", "1", "--json")
    assert res.returncode == 0, res.stderr
    (round_,) = [json.loads(line) for line in res.stdout.splitlines()]
    assert round_["you"] == "paper" and round_["instructions"] > 0


def test_default_device_of_a_program_follows_its_family(cli, exported):
    res = cli("play", "--model", exported("cortex-m55"), "--moves", "p", "--json")
    assert res.returncode == 0, res.stderr
    assert "instructions" in json.loads(res.stdout)


def test_classify_on_the_mcu_matches_the_host_format(cli, exported, tmp_path):
    from tinyrps.data import make_split
    images, _ = make_split("test", 1, seed=5)
    paths = []
    for i, img in enumerate(images):
        paths.append(tmp_path / f"move{i}.png")
        Image.fromarray(img).save(paths[-1])
    mcu = json.loads(cli("classify", "--model", exported("cortex-m55"), "--device", "mcu", *paths, "--json").stdout)["results"]
    native = json.loads(cli("classify", "--model", exported("cortex-m55"), "--device", "native", *paths,
                            "--json").stdout)["results"]
    assert [r["label"] for r in mcu] == [r["label"] for r in native]
    assert [r["probabilities"] for r in mcu] == [r["probabilities"] for r in native]


def test_eval_lists_npu_and_mcu_programs_by_contract(cli, trained_run, exported):
    for target in ("int8-xnnpack", "ethos-u85-128", "cortex-m55"):
        exported(target)
    # a relative --run, as typed by a user in the run's parent folder
    res = cli("eval", "--run", trained_run.name, "--json", "--program", "int8-xnnpack", "--program", "ethos-u85-128",
              "--program", "cortex-m55", cwd=trained_run.parent)
    assert res.returncode == 0, res.stderr
    v = json.loads(res.stdout)["programs"]
    assert v["ethos-u85-128"]["device"] == "npu" and v["ethos-u85-128"]["agreement_with"] == "int8-xnnpack"
    assert v["ethos-u85-128"]["bit_exact"] is True and v["ethos-u85-128"]["mismatches"] == 0
    assert v["ethos-u85-128"]["agreement"] >= 0.97
    assert v["cortex-m55"]["device"] == "mcu"
    assert v["cortex-m55"]["bit_exact"] is True and v["cortex-m55"]["mismatches"] == 0
    assert v["cortex-m55"]["accuracy"] >= 0.8


def test_cortex_m55_measurement_has_the_firmware_figures(exported, measured):
    from tinyrps.hardware import descriptor
    pte = exported("cortex-m55")
    described = descriptor.read(pte)
    fw = measured(pte)["firmware"]
    assert set(fw) >= {"flash_bytes", "ram_bytes", "arena_bytes", "instructions_per_inference", "instructions_per_mac"}
    assert fw["flash_bytes"] > described.size_bytes and fw["arena_bytes"] > 0
    assert fw["ram_bytes"] > fw["arena_bytes"]
    # the widest multiply-accumulate (Helium VMLADAV on int8) does 16 MACs in one instruction
    assert fw["macs"] / 16 < fw["instructions_per_inference"] < 5 * fw["macs"]
    assert (fw["board"], fw["core"], fw["kernels"]) == ("mps3-an547", "cortex-m55", "mve")
    assert fw["instructions_per_inference_plain_c"] > fw["macs"]
    assert {layer["op"] + ".out" for layer in fw["layers"]} == set(described.info.operators)


def test_play_on_a_board_on_a_serial_port(cli, cortex_m_pte):
    """--port: the game talks to a board running the firmware (here QEMU's UART, reached as a board would be)."""
    from tinyrps.firmware import qemu
    with qemu.LinkedFirmware(cortex_m_pte) as server:
        server.link.close()                 # QEMU's UART then accepts the next connection
        port = f"socket://127.0.0.1:{server.port}"
        res = cli("play", "--model", cortex_m_pte, "--port", port, "--moves", "r,s", "--seed", "1", "--json")
        assert res.returncode == 0, res.stderr
        rounds = [json.loads(line) for line in res.stdout.splitlines()]
        assert [r["you"] for r in rounds] == ["rock", "scissors"] and all(r["instructions"] > 0 for r in rounds)
        assert server.process.poll() is None
    # and the port is really what it talks to: nothing listens on this one
    res = cli("play", "--model", cortex_m_pte, "--port", "socket://127.0.0.1:1", "--moves", "r")
    assert res.returncode == 2 and "serial port socket://127.0.0.1:1" in res.stderr, res.stderr


def test_eval_on_a_board_on_a_serial_port(cli, trained_run, cortex_m_pte):
    from tinyrps.firmware import qemu
    with qemu.LinkedFirmware(cortex_m_pte) as server:
        server.link.close()
        res = cli("eval", "--run", trained_run, "--program", "cortex-m55", "--port",
                  f"socket://127.0.0.1:{server.port}", "--limit", "3", "--json")
        assert res.returncode == 0, res.stderr
        v = json.loads(res.stdout)["programs"]["cortex-m55"]
        assert v["device"] == "mcu" and v["bit_exact"] is True
