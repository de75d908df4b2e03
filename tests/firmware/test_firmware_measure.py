"""Footprint and instruction counts of a Cortex-M program on the firmware, against the issue's targets."""
from __future__ import annotations


import pytest

from tinyrps.measure.firmware import elf_sections, measure_firmware, memory_footprint

KIB = 1024


pytestmark = pytest.mark.slow     # builds the firmware, boots QEMU

@pytest.fixture(scope="module")
def measured(cortex_m_pte):
    return measure_firmware(cortex_m_pte)


def test_contract_keys(measured):
    for key in ("flash_bytes", "ram_bytes", "arena_bytes", "instructions_per_inference", "instructions_per_mac",
                "instructions_per_inference_plain_c"):
        assert key in measured and measured[key] > 0, key
    assert (measured["board"], measured["core"], measured["kernels"]) == ("mps3-an547", "cortex-m55", "mve")


def test_layers_add_up_to_the_inference(measured):
    layers = measured["layers"]
    assert [layer["op"].split("::")[0] for layer in layers][:2] == ["cortex_m", "cortex_m"]
    total = sum(layer["instructions"] for layer in layers)
    assert abs(total - measured["instructions_per_inference"]) <= 0.05 * measured["instructions_per_inference"]
    total_c = sum(layer["instructions_plain_c"] for layer in layers)
    assert abs(total_c - measured["instructions_per_inference_plain_c"]) \
        <= 0.05 * measured["instructions_per_inference_plain_c"]
    # the MACs are the program's own (the runtime's count), and they are the model's
    from tinyrps.network.model import count_macs
    assert measured["macs"] == sum(layer["macs"] for layer in layers) == count_macs()
    assert all(layer["macs"] > 0 for layer in layers if "conv" in layer["op"] or "linear" in layer["op"])


def test_footprint_is_within_the_targets(measured, cortex_m_pte):
    assert measured["flash_bytes"] <= 512 * KIB, measured
    assert measured["ram_bytes"] <= 128 * KIB, measured
    assert measured["flash_bytes"] == (measured["code_bytes"] + measured["rodata_bytes"] + measured["data_bytes"]
                                       + cortex_m_pte.stat().st_size)
    assert measured["arena_bytes"] <= measured["arena_reserved_bytes"]
    parts = measured["arena_parts_bytes"]
    assert list(parts) == ["planned", "workspace", "working"] and sum(parts.values()) == measured["arena_bytes"]
    # the Helium kernels' folded biases and working memory lie in the plan's free bytes (runtime.c, place_by_lifetime)
    assert parts["planned"] > 0 and parts["workspace"] == parts["working"] == 0, parts
    assert measured["stack_used_bytes"] < measured["stack_bytes"]


def test_instructions_per_mac_meet_the_target(measured):
    assert measured["deterministic"]
    lo, hi = measured["instructions_range"]
    assert lo <= measured["instructions_per_inference"] <= hi
    assert measured["instructions_per_mac"] <= 5.0, measured


def test_the_boot_meets_the_target_and_the_hash_is_counted_apart(measured):
    """Reset to ready on the Cortex-M55 in at most 2 M instructions; the program's hash is not part of it:
    the measurement asks for it in a run of its own (which checks it is the program's) and reports its cost."""
    assert 0 < measured["load_instructions"] < measured["boot_instructions"] <= 2_000_000, measured
    # the hash reads every byte of the program: many times the boot on a 437 kB program
    assert measured["sha256_instructions"] > 10 * measured["boot_instructions"], measured


def test_a_measurement_of_a_slot_holding_another_program_is_refused(cortex_m_pte, exported_fast, monkeypatch):
    """The measurement asks the firmware for the hash of what it ran: figures of other bytes than the program's
    are never recorded as its own."""
    from tinyrps.infra.errors import UserError
    from tinyrps.firmware import qemu
    other, plain = exported_fast("cortex-m55"), qemu.qemu_command
    monkeypatch.setattr(qemu, "qemu_command", lambda elf, pte, *rest: plain(elf, other, *rest))
    with pytest.raises(UserError, match="hashed another program than the one measured"):
        measure_firmware(cortex_m_pte, image="generic")


def test_measurement_is_repeatable(measured, cortex_m_pte):
    again = measure_firmware(cortex_m_pte.read_bytes())     # bytes work too
    assert again["instructions_per_inference"] == measured["instructions_per_inference"]
    assert again["flash_bytes"] == measured["flash_bytes"]


def test_a_layer_on_other_kernels_than_the_build_is_refused():
    """The runtime's variant choice and the build's flags must agree; a disagreement is a bug, not a figure."""
    from tinyrps.infra.errors import UserError
    from tinyrps.firmware.boards import get_board
    from tinyrps.measure.firmware import bound_kernels

    def layers(*variants):
        ops = ("cortex_m::quantize_per_tensor", "cortex_m::quantized_conv2d", "cortex_m::quantized_linear")
        return [{"op": op, "kernels": kernels} for op, kernels in zip(ops, variants)]

    m33 = get_board("mps2-an505")
    assert bound_kernels(m33, layers("c", "dsp", "dsp"), layers("c", "c", "c")) == "dsp"
    with pytest.raises(UserError, match=r"the ISA-kernel firmware of mps2-an505 ran cortex_m::quantized_linear with the 'c' "
                                        r"kernels, not 'dsp'"):
        bound_kernels(m33, layers("c", "dsp", "c"), layers("c", "c", "c"))
    with pytest.raises(UserError, match="plain-C firmware of mps2-an505 ran cortex_m::quantize_per_tensor with the "
                                        "'mve' kernels, not 'c'"):
        bound_kernels(m33, layers("c", "dsp", "dsp"), layers("mve", "c", "c"))
    with pytest.raises(UserError, match="no convolution, linear or pooling layer"):
        bound_kernels(m33, layers("c"), layers("c"))


def test_elf_sections_add_up(firmware_elf_path):
    sections = elf_sections(firmware_elf_path)
    assert sections[".vectors"][0] == 0 and sections[".boot_args"][0] == 0x20000000
    from tinyrps.firmware import c_facts
    assert sections[".boot_args"][1] == -(-c_facts.define("BOOT_DESCRIPTOR_BYTES") // 16) * 16 == 32
    footprint = memory_footprint(sections)
    assert footprint["flash_image"] >= footprint["code"] + footprint["rodata"]
    assert footprint["ram_reserved"] >= footprint["bss"] + footprint["stack"]


def test_the_footprint_is_of_the_programs_own_image(measured):
    """flash and RAM are of the firmware built for this program (its operators, the variants its calls bind),
    which ran it as the generic image does; the generic image, with every operator, is measured beside it."""
    assert measured["image"] == "program" and "only this program's operators" in measured["image_note"]
    generic = measured["generic_image"]
    assert measured["code_bytes"] + measured["rodata_bytes"] < generic["code_bytes"] + generic["rodata_bytes"]
    assert generic["flash_bytes"] == (generic["code_bytes"] + generic["rodata_bytes"] + generic["data_bytes"]
                                      + measured["program_bytes"])
    assert measured["flash_bytes"] < generic["flash_bytes"]


def test_a_quick_measurement_prints_its_count_and_says_it_has_no_footprint(cli, cortex_m_pte, measured, tmp_path):
    """`measure --quick` takes the instruction count only (one emulator run): its line says so."""
    import shutil
    pte = tmp_path / cortex_m_pte.name
    shutil.copy(cortex_m_pte, pte)
    shutil.copy(cortex_m_pte.with_suffix(".json"), pte.with_suffix(".json"))
    res = cli("measure", "--model", pte, "--quick")
    assert res.returncode == 0, res.stderr
    assert f"{measured['instructions_per_inference']:,} instructions per inference" in res.stdout, res.stdout
    assert "--quick: no footprint" in res.stdout and "Traceback" not in res.stderr
