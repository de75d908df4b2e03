"""Deployment on the command line: `deploy fvp` (Arm's runner on the Corstone-320 FVP) and `deploy library`
(a C library for your own firmware)."""
from __future__ import annotations

from pathlib import Path

from .options import Command, check_model, emit_json


def fvp_arguments(f) -> None:
    f.add_argument("--model", required=True, type=Path, metavar="X.pte", help="an Ethos-U program")
    f.add_argument("--executorch-root", required=True, type=Path, metavar="DIR",
                   help="a checkout of ExecuTorch's sources")
    f.add_argument("--fvp", type=Path, help="FVP_Corstone_SSE-320 binary (default: on PATH)")
    f.add_argument("--toolchain", type=Path, help="Arm GNU toolchain folder (default: on PATH or the checkout's)")
    f.add_argument("--image", type=Path, action="append",
                   help="classify this PNG/JPEG on the FVP; repeatable (default: none, the runner's input of ones)")
    f.add_argument("--workdir", type=Path, help="build and log folder (default: next to the .pte, MODEL.fvp/)")
    f.add_argument("--timeout", type=int, default=600, help="FVP time limit per run, seconds (default 600)")


def cmd_deploy_fvp(a):
    check_model(a.model)
    from ...deploy.fvp import deploy_fvp
    result = deploy_fvp(a.model, a.executorch_root, fvp=a.fvp, toolchain=a.toolchain, workdir=a.workdir,
                        images=a.image, timeout_s=a.timeout)
    emit_json(result)


def library_arguments(f) -> None:
    f.add_argument("--model", required=True, type=Path, metavar="X.pte", help="a Cortex-M program")
    f.add_argument("--out", required=True, type=Path, metavar="DIR", help="the library's folder (new, or one written "
                   "by this command before, which is replaced)")
    f.add_argument("--name", default="tinyrps_model", metavar="NAME",
                   help="a C identifier: the prefix of the library's names and its file names")


def cmd_deploy_library(a):
    check_model(a.model)
    from ...deploy.library import check_name, check_out, summary_lines, write_library
    check_name(a.name)
    check_out(a.out)
    manifest = write_library(a.model, a.out, a.name)
    print("\n".join(summary_lines(manifest, a.out)))


GROUP_HELP = "deploy a program to real or simulated hardware"
COMMANDS = (
    Command("deploy fvp", "build ExecuTorch's Arm runner with an Ethos-U .pte and run it on the Corstone-320 FVP",
            fvp_arguments, cmd_deploy_fvp, quiet=False),
    Command("deploy library", "write a Cortex-M program as a C library for your own firmware (CMake and Make)",
            library_arguments, cmd_deploy_library, quiet=False,
            description="write a Cortex-M program as a C99 library for your own firmware: the program, the runtime's "
                        "part it needs, an API of its own, CMake and Make files, an example"),
)
