"""Runs tinyrps commands and stops them at a chosen change to the file system.

Started once by tests/test_crash_consistency.py; it imports tinyrps and its libraries,
then reads one JSON command per line on stdin and answers one JSON line on stdout. Each
command runs in a child forked from this process (so it starts in milliseconds, with the
libraries already imported), through tinyrps.interfaces.cli.main as `tinyrps ARGS` would. An audit
hook (sys.addaudithook) counts the child's changes to the file system (a file opened for
writing, a rename, a removal, a new folder, a link, the renameat2 exchange of two folders) and,
with "kill_at": K, sends the child a real signal just before its K-th change: SIGKILL
(the process dies there, as in a crash or power loss) or SIGINT (Ctrl-C). With
"after_s": T the signal comes from this process T seconds after the command began (the
child says when it calls tinyrps's main), wherever the command is then. "no_exchange" makes the child swap folders the way file systems without
renameat2(RENAME_EXCHANGE) do. "group" puts the child in a process group of its own and sends
the signal to the whole group, as a terminal's Ctrl-C or a power loss reaches the emulators,
compilers and helper processes a command has started too.

A command: {"argv": [...], "stdout": PATH, "stderr": PATH, "kill_at": K, "signal": "SIGINT",
"after_s": T, "kill_on": REGEX, "no_exchange": false, "group": false, "log": false}
("kill_on": the signal just before the first change to a path the pattern finds.). The answer: {"rc": exit code (-N for a
signal), "events": changes made (when the child got to report), "log": [[event, path]...]}.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import select
import signal
import sys

CHANGES = {"os.rename", "os.remove", "os.rmdir", "os.mkdir", "os.link", "os.symlink", "os.chmod", "os.truncate",
           "shutil.rmtree", "tinyrps.exchange"}
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def is_change(event: str, args: tuple) -> bool:
    if event in CHANGES:
        return True
    if event == "open":
        path, mode, flags = args
        if isinstance(path, int):           # os.fdopen of a file already opened
            return False
        return (isinstance(mode, str) and any(c in mode for c in "wxa+")) or bool((flags or 0) & WRITE_FLAGS)
    return False


def child(command: dict, report, started) -> None:
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    for fd, key in ((1, "stdout"), (2, "stderr")):
        out = os.open(command[key], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(out, fd)
    kill_at, signum = command.get("kill_at"), getattr(signal, command.get("signal") or "SIGKILL")
    kill_on = re.compile(command["kill_on"]) if command.get("kill_on") else None
    if command.get("group"):
        os.setpgid(0, 0)
    stop = (lambda: os.killpg(0, signum)) if command.get("group") else (lambda: os.kill(os.getpid(), signum))
    log = [] if command.get("log") else None
    count = [0]

    def hook(event, args):
        if not is_change(event, args):
            return
        count[0] += 1
        if log is not None:
            log.append([event, str(args[0]) if args else ""])
        if count[0] == kill_at or (kill_on and args and isinstance(args[0], str) and kill_on.search(args[0])):
            stop()

    import tinyrps.infra.artifacts.staging
    exchange = tinyrps.infra.artifacts.staging.exchange

    def audited_exchange(a, b):      # a foreign call raises no audit event of its own
        sys.audit("tinyrps.exchange", str(a), str(b))
        return False if command.get("no_exchange") else exchange(a, b)
    tinyrps.infra.artifacts.staging.exchange = audited_exchange
    from tinyrps.interfaces.cli import main
    sys.addaudithook(hook)
    os.write(started, b"s")          # a timed stop counts from here: the command's own run
    os.close(started)
    try:
        rc = main(command["argv"])
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else 1
    signal.signal(signal.SIGINT, signal.SIG_IGN)    # the command is over: a late Ctrl-C stops nothing
    os.write(report, json.dumps({"events": count[0], "log": log}).encode())
    os.close(report)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)


def serve() -> None:
    # everything a command imports, imported once here (of threads, only one of torch's idle ones is started)
    import matplotlib.pyplot  # noqa: F401
    import torch  # noqa: F401
    import torch._inductor  # noqa: F401 (what torch.use_deterministic_algorithms imports, 3 s)

    from executorch.backends.arm.ethosu import EthosUPartitioner  # noqa: F401 (what an Ethos-U export imports, 4 s)

    import tinyrps.interfaces.cli
    import tinyrps.export.ethos_u  # noqa: F401
    import tinyrps.pipeline  # noqa: F401
    import tinyrps.interfaces.plots  # noqa: F401
    import tinyrps.train  # noqa: F401
    # the pattern graphs XNNPACK's lowering builds once per process (torch.export of template
    # modules, 5 s), built here so that each XNNPACK export in a child does not build them again
    # (on one thread: torch's pool of workers is not started before the fork)
    from executorch.backends.xnnpack.partition.graphs import bilinear_2d, sdpa

    from tinyrps.infra.torch_settings import torch_threads
    with torch_threads(1):
        bilinear_2d.get_graphs_dict()
        sdpa.get_graphs()
    from tqdm import tqdm       # and no thread of tqdm's (its bars' monitor, which the lowering started)
    if tqdm.monitor is not None:
        tqdm.monitor.exit()
        tqdm.monitor = None
    tinyrps.interfaces.cli.build_parser()
    threads = len(os.listdir("/proc/self/task"))
    print(json.dumps({"ready": True, "threads": threads}), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        read_end, write_end = os.pipe()
        started_read, started_write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            os.close(started_read)
            try:
                child(command, write_end, started_write)
            finally:
                os._exit(99)
        os.close(write_end)
        os.close(started_write)
        began = os.read(started_read, 1)      # empty if the child died before its command began
        os.close(started_read)
        # the signal only if the command is still running then (its report not begun)
        if command.get("after_s") is not None and began and not select.select([read_end], [], [], command["after_s"])[0]:
            signum = getattr(signal, command.get("signal") or "SIGKILL")
            with contextlib.suppress(ProcessLookupError):        # the command may be over already
                (os.killpg if command.get("group") else os.kill)(pid, signum)
        chunks = []
        while True:
            chunk = os.read(read_end, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(read_end)
        _, status = os.waitpid(pid, 0)
        report = json.loads(b"".join(chunks) or b"{}")
        print(json.dumps({"rc": os.waitstatus_to_exitcode(status), "events": report.get("events"),
                          "log": report.get("log")}), flush=True)


if __name__ == "__main__":
    serve()
