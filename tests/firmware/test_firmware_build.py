"""build_firmware: cached builds, and clear errors when a tool is missing."""
from __future__ import annotations

import pytest

from tinyrps.infra.errors import UserError
from tinyrps.firmware import build, build_firmware


def test_unchanged_sources_do_not_rebuild(native_build, monkeypatch):
    def no_cmake(*args, **kwargs):
        raise AssertionError("cmake ran although no firmware source changed")
    monkeypatch.setattr(build, "_run_cmake", no_cmake)
    again = build_firmware("native")
    assert again.tool("tinyrps-native") == native_build.tool("tinyrps-native")
    assert again.tool("tinyrps-mutate").is_file()


@pytest.mark.parametrize("kind,missing,hint", [
    ("mps3-an547", "arm-none-eabi-gcc", "gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm"),
    ("mps2-an386-c", "arm-none-eabi-gcc", "gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm"),
    ("native", "cmake", "apt-get install --no-install-recommends cmake gcc"),
])
def test_missing_tool_says_how_to_install_it(kind, missing, hint, monkeypatch):
    real_which = build.shutil.which
    monkeypatch.setattr(build.shutil, "which", lambda name: None if name == missing else real_which(name))
    with pytest.raises(UserError, match=f"needs {missing}.*{hint}"):
        build_firmware(kind)


def test_an_unknown_build_lists_the_valid_ones():
    with pytest.raises(UserError, match="valid: native, native-asan, mps3-an547, mps3-an547-c, mps3-an547-dsp, "
                                        "mps2-an505, mps2-an505-c, mps2-an505-cortex-m23, mps2-an386, mps2-an386-c, "
                                        "mps2-an500, mps2-an500-c, mps2-an385, mps2-an385-cortex-m0, "
                                        "mps2-an385-cortex-m0plus, fuzz"):
        build_firmware("cortex-a53")
