"""Packaging hook: the wheel carries the firmware's sources as package data.

tinyrps builds its firmware on the user's machine, into the user's cache, so an
installed package needs the C sources. build_py copies the files of firmware/ that
the build hashes (src/tinyrps/firmware/sources.py) into tinyrps/firmware/sources/
of the wheel. An editable install copies nothing: it reads the checkout's firmware/.
Everything else is declared in pyproject.toml.
"""
import importlib.util
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


def _firmware_sources_module():
    # loaded by path: importing the tinyrps package here would need its dependencies
    spec = importlib.util.spec_from_file_location("tinyrps_firmware_sources",
                                                  ROOT / "src" / "tinyrps" / "firmware" / "sources.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BuildWithFirmwareSources(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        sources = _firmware_sources_module()
        firmware = ROOT / "firmware"
        files = sources.source_files(firmware)
        if not files:
            raise SystemExit(f"no firmware sources in {firmware}: build the wheel from a complete checkout")
        target = Path(self.build_lib) / "tinyrps" / "firmware" / sources.PACKAGED_DIR
        shutil.rmtree(target, ignore_errors=True)
        for path in files:
            dest = target / path.relative_to(firmware)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)


setup(cmdclass={"build_py": BuildWithFirmwareSources})
