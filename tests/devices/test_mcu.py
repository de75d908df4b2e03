"""Device `mcu`: the Cortex-M program on the firmware in QEMU, over the serial link (or the
semihosting batch), bit-exact with the reference; bad programs give one clear error."""
from __future__ import annotations


import numpy as np
import pytest

from tinyrps.devices import open_device
from tinyrps.infra.errors import UserError
from tinyrps.firmware import qemu

pytestmark = pytest.mark.slow     # builds the firmware, boots QEMU

@pytest.fixture(scope="module")
def mcu(cortex_m_pte):
    with open_device("mcu", cortex_m_pte) as device:
        yield device


def test_classify_is_bit_exact_with_the_reference(mcu, cortex_m_pte, test_images):
    from tinyrps.reference.cortex_m import reference_int8
    images = test_images[0][:6]
    logits = mcu.classify(images)
    assert logits.shape == (6, 3) and logits.dtype == np.float32
    assert np.array_equal(mcu.last_int8, reference_int8(cortex_m_pte, images))
    assert np.array_equal(np.argmax(logits, 1), np.argmax(mcu.last_int8, 1))


def test_last_stats_of_the_serial_link(mcu, test_images):
    mcu.classify(test_images[0][:1])
    stats = mcu.last_stats()
    assert stats["transport"] == "serial"
    assert stats["instructions"] > 1_000_000
    assert 0 < stats["link_ms"] < 10_000
    assert "Cortex-M55" in mcu.describe()


def test_empty_batch(mcu):
    assert mcu.classify(np.zeros((0, 28, 28), np.uint8)).shape == (0, 3)


def test_batch_transport_gives_the_same_outputs(cortex_m_pte, mcu, test_images):
    images = test_images[0]
    serial_logits = mcu.classify(images)
    serial_int8 = mcu.last_int8
    with open_device("mcu", cortex_m_pte, transport="batch") as batch:
        assert np.array_equal(batch.classify(images), serial_logits)
        assert np.array_equal(batch.last_int8, serial_int8)
        assert batch.last_stats()["transport"] == "batch"
        assert len(batch.int8_outputs) == len(images)


def test_unknown_transport(cortex_m_pte):
    with pytest.raises(UserError, match="transport"):
        open_device("mcu", cortex_m_pte, transport="carrier-pigeon")


def test_wrong_images_are_refused(mcu):
    with pytest.raises(ValueError):
        mcu.classify(np.zeros((1, 27, 28), np.uint8))


def one_line_user_error(path) -> str:
    live_before = set(qemu._live_processes)
    with pytest.raises(UserError) as raised:
        open_device("mcu", path)
    assert set(qemu._live_processes) == live_before, "QEMU left running after a failed open"
    message = str(raised.value)
    assert "\n" not in message
    return message


def test_truncated_program(cortex_m_pte, tmp_path):
    bad = tmp_path / "truncated.pte"
    bad.write_bytes(cortex_m_pte.read_bytes()[:len(cortex_m_pte.read_bytes()) // 2])
    assert "does not run on the firmware" in one_line_user_error(bad)


def test_bit_flipped_program(cortex_m_pte, tmp_path):
    data = bytearray(cortex_m_pte.read_bytes())
    data[0] ^= 0x04                          # the root table offset now points 4 bytes off
    bad = tmp_path / "flipped.pte"
    bad.write_bytes(bytes(data))
    assert "does not run on the firmware" in one_line_user_error(bad)


def test_not_a_program(tmp_path):
    bad = tmp_path / "notes.pte"
    bad.write_bytes(b"just some text, not a program")
    assert "not an ExecuTorch program" in one_line_user_error(bad)


def test_host_program_is_refused(exported, tmp_path):
    """A program for the host CPU (no descriptor to tell): the firmware itself refuses it."""
    program = tmp_path / "fp32.pte"
    program.write_bytes(exported("fp32").read_bytes())
    message = one_line_user_error(program)
    assert "does not run on the firmware" in message and "cortex-m55" in message


def test_descriptor_of_another_family_points_to_its_device(cortex_m_pte, exported, descriptor_like, tmp_path):
    program = tmp_path / "npu.pte"
    program.write_bytes(cortex_m_pte.read_bytes())
    descriptor_like(program, exported("ethos-u85-128"))
    assert "--device npu-ref" in one_line_user_error(program)


def test_a_board_on_a_serial_port(cortex_m_pte, test_images):
    """The `port` option talks to a board running the firmware: here QEMU's UART socket."""
    with qemu.LinkedFirmware(cortex_m_pte) as server:
        server.link.close()                 # QEMU's UART then accepts the next connection
        with open_device("mcu", cortex_m_pte, port=f"socket://127.0.0.1:{server.port}") as board:
            logits = board.classify(test_images[0][:2])
            assert logits.shape == (2, 3) and board.last_stats()["transport"] == "serial"
            assert f"127.0.0.1:{server.port}" in board.describe()
        assert server.process.poll() is None        # a board is not ours to stop


def test_a_board_holding_another_program(cortex_m_pte, exported, tmp_path):
    other = tmp_path / "other.pte"
    other.write_bytes(cortex_m_pte.read_bytes() + b"\0")      # any other bytes: another SHA-256
    with qemu.LinkedFirmware(cortex_m_pte) as server:
        server.link.close()
        with pytest.raises(UserError, match="different program .* flash it"):
            open_device("mcu", other, port=f"socket://127.0.0.1:{server.port}")


def test_a_batch_boot_holding_another_program_is_refused(cortex_m_pte, exported_fast, test_images, monkeypatch):
    """Each batch is a boot of its own, with the model slot loaded again; the firmware hashes what it holds
    there (the boot descriptor asks it to), so a slot loaded with other bytes is caught as `info` catches it."""
    other = exported_fast("cortex-m55")     # another program with the same inputs and outputs: it runs
    with open_device("mcu", cortex_m_pte, transport="batch") as device:
        plain = qemu.qemu_command
        monkeypatch.setattr(qemu, "qemu_command", lambda elf, pte, *rest: plain(elf, other, *rest))
        with pytest.raises(UserError, match="batch ran a different program"):
            device.classify(test_images[0][:2])


def test_auto_transport_batches_large_calls(cortex_m_pte, test_images):
    images = test_images[0]
    with open_device("mcu", cortex_m_pte, transport="auto") as device:
        device.classify(images[:2])
        assert device.last_stats()["transport"] == "serial"
        device.classify(np.concatenate([images, images])[:16])
        assert device.last_stats()["transport"] == "batch"
        assert len(device.int8_outputs) == 18
