"""Command lines for the Corstone FVPs, and running one headless with a time limit.

The parameters are those of ExecuTorch 1.5's Arm scripts (run_fvp.sh for the runner
with the program baked in; the Arm test harness for the semihosting runner), without
`ethosu.extra_args=--fast`: that option makes the NPU model skip its timing, and the
NPU cycle count is what the FVP is run for.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from ..infra.errors import UserError
from ..hardware.families import npu_family
from .prerequisites import FVPS

# The FVP truncates a longer semihosting command line.
SEMIHOSTING_CMD_LINE_LIMIT = 256


def board_of(accelerator: str) -> str:
    return FVPS[npu_family(accelerator)][2]


def headless_parameters(accelerator: str) -> list:
    """NPU size, no windows, no telnet terminal, UART to stdout, quit when the program ends."""
    board = board_of(accelerator)
    macs = accelerator.rsplit("-", 1)[1]
    npu = f"{board}.subsystem.ethosu" if board == "mps4_board" else "ethosu"
    params = [f"{npu}.num_macs={macs}",
              f"{board}.visualisation.disable-visualisation=1",
              f"{board}.telnetterminal0.start_telnet=0",
              f"{board}.uart0.out_file=-",
              f"{board}.uart0.shutdown_on_eot=1"]
    if board == "mps4_board":
        # unbuffered: a run stopped by the time limit still leaves its log
        params += ["vis_hdlcd.disable_visualisation=1", f"{board}.uart0.unbuffered_output=1"]
    return params


def semihosting_parameters(accelerator: str, cwd: Path, cmd_line: str) -> list:
    """Let the runner open host files in `cwd` and give it `cmd_line` as its argv."""
    cpu = "mps4_board.subsystem.cpu0" if board_of(accelerator) == "mps4_board" else "cpu0"
    return [f"{cpu}.semihosting-enable=1",
            f"{cpu}.semihosting-stack_base=0",
            f"{cpu}.semihosting-heap_limit=0",
            f"{cpu}.semihosting-cwd={cwd}",
            f"{cpu}.semihosting-cmd_line='{cmd_line}'"]


def fvp_command(fvp: Path, accelerator: str, elf: Path, timeout_s: int, semihosting: list = ()) -> list:
    """The FVP command line; `semihosting` adds semihosting_parameters()."""
    cmd = [str(fvp)]
    for p in headless_parameters(accelerator) + list(semihosting):
        cmd += ["-C", p]
    return cmd + ["-a", str(elf), "--timelimit", str(timeout_s)]


def semihosting_cmd_line(program: str, input_file: str, output_base: str) -> str:
    """The runner's argv as one string: program, output base name (-> OUT-0.bin), input tensor file."""
    line = f"executor_runner -m {program} -o {output_base} -i {input_file}"
    if len(line) > SEMIHOSTING_CMD_LINE_LIMIT:
        raise UserError(f"the runner's command line would be {len(line)} characters, over the FVP's "
                        f"{SEMIHOSTING_CMD_LINE_LIMIT}-character semihosting limit: use shorter file names")
    return line


def refuse_unsafe_folder(folder: Path) -> None:
    """The semihosting folder is passed inside an FVP parameter: no spaces or quotes."""
    if any(c.isspace() or c in "'\"" for c in str(folder)):
        raise UserError(f"the FVP's semihosting folder '{folder}' has a space or a quote, which an FVP "
                        f"parameter cannot carry: set TMPDIR to a folder without them")


def fvp_environment(fvp: Path, env: dict) -> dict:
    """The Corstone-320 FVP ships its own Python runtime library next to its models/ folder."""
    env = dict(env)
    bundled = fvp.parent.parent.parent / "python" / "lib"
    if bundled.is_dir():
        env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(bundled), env.get("LD_LIBRARY_PATH")]))
    return env


def run_fvp(cmd: list, cwd: Path, env: dict, log: Path, timeout_s: int) -> Path:
    """Run the FVP with its output (UART and semihosting console) into `log`."""
    with open(log, "w") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        try:
            subprocess.run(cmd, cwd=cwd, env=fvp_environment(Path(cmd[0]), env), stdout=out,
                           stderr=subprocess.STDOUT, timeout=timeout_s + 60)
        except subprocess.TimeoutExpired:
            raise UserError(f"the FVP did not finish within {timeout_s + 60} s; see {log}") from None
        except OSError as e:
            raise UserError(f"cannot start the FVP {cmd[0]}: {e.strerror or e}") from None
    return log
