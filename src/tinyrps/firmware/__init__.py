"""The firmware: its C runtime (firmware/ in the repository) built for the host or a Cortex-M board."""
from .build import FirmwareBuild, build_firmware, firmware_dir  # noqa: F401
