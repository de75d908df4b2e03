#!/usr/bin/env python3
"""Coverage-guided fuzzing of the firmware's parsers with libFuzzer (clang-16), under ASan and UBSan.

    scripts/fuzz.py run [--seconds S] [--target T ...] [--program PTE ...] [--work DIR]
        Replays the seeds and regression inputs, then fuzzes each target for S seconds
        (default 60). Exit status 1 on any finding, naming the input that triggered it.
        The pte target starts from the committed ~10 kB programs; --program adds a full
        exported one (its mutants run the whole network: ~30x fewer executions a second).
    scripts/fuzz.py replay [--target T ...]
        Runs every seed and regression input once (no fuzzing).
    scripts/fuzz.py seeds
        Rewrites the committed seed corpora in firmware/fuzz/seeds/ from the real
        encoders: small Cortex-M programs from the export flow, frames from the host's
        link encoder, the command line the QEMU batch passes.

Targets (firmware/fuzz/): `pte` (the .pte reader and loader, then one inference), `ethos-u`
(the same harness on Ethos-U programs: the delegate's blob and command-stream parser, then one
inference whose NPU job a checking driver takes, fuzz_npu_driver.c),
`link-frame` (the serial frame receiver), `link-tensor-io` (the link's TENSOR, WRITE, RUN
and READ requests on a stand-in program), `batch-input` (the batch transport's command line
and samples-file size). The targets are built by tinyrps.firmware.build_firmware("fuzz")
in the user's cache. Corpora grow in the work folder (default
$XDG_CACHE_HOME/tinyrps/fuzz/<target>/corpus), so campaigns build on each other.
A finding is written to <work>/<target>/findings/; once fixed, keep the input in
firmware/fuzz/regressions/<target>/ so every later run replays it.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FUZZ_DIR = REPO / "firmware" / "fuzz"
sys.path.insert(0, str(REPO / "src"))

from tinyrps.infra.errors import UserError  # noqa: E402

# target name -> executable in the fuzz build
TARGETS = {"pte": "fuzz-pte", "ethos-u": "fuzz-ethos-u", "link-frame": "fuzz-link-frame",
           "link-tensor-io": "fuzz-link-tensor-io", "batch-input": "fuzz-batch-input"}
# Each run of one input may take this long (a whole inference of the real model under the
# sanitizers is ~0.1 s); anything slower is a hang worth reporting.
INPUT_TIMEOUT_S = 10
RSS_LIMIT_MB = 2048


@dataclass
class Campaign:
    target: str
    seconds: float
    executions: int = 0
    executions_per_s: int = 0
    coverage_edges: int = 0       # libFuzzer "cov": instrumented edges reached
    features: int = 0             # libFuzzer "ft": edges with hit-count buckets, compares ...
    corpus_inputs: int = 0
    new_inputs: int = 0
    peak_rss_mb: int = 0
    finding: str = ""             # path of the input that failed, if any


def fuzz_build() -> dict:
    """target name -> path of its executable (built once per source change)."""
    from tinyrps.firmware import build_firmware
    build = build_firmware("fuzz")
    return {name: build.tool(exe) for name, exe in TARGETS.items()}


def default_work() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "tinyrps" / "fuzz"


def input_dirs(target: str) -> list:
    """The committed inputs of a target: its seeds and its regression inputs."""
    return [d for d in (FUZZ_DIR / "seeds" / target, FUZZ_DIR / "regressions" / target) if d.is_dir()]


def options(target: str, findings: Path) -> list:
    opts = [f"-timeout={INPUT_TIMEOUT_S}", f"-rss_limit_mb={RSS_LIMIT_MB}", f"-artifact_prefix={findings}/"]
    dictionary = FUZZ_DIR / f"{target}.dict"
    if dictionary.is_file():
        opts.append(f"-dict={dictionary}")
    return opts


def sanitizer_env() -> dict:
    """The environment of a target: with a symbolizer named, so a finding's stack has file:line
    (clang-16's runtime looks only in its own folder, where Debian ships none without llvm-16)."""
    env = dict(os.environ)
    symbolizer = shutil.which("llvm-symbolizer-16") or shutil.which("llvm-symbolizer")
    if symbolizer and "ASAN_SYMBOLIZER_PATH" not in env:
        env["ASAN_SYMBOLIZER_PATH"] = symbolizer
    return env


def replay(binary: Path, target: str, dirs: list, findings: Path) -> str:
    """Run every input in `dirs` once; '' if all pass, else libFuzzer's report."""
    findings.mkdir(parents=True, exist_ok=True)
    files = [str(f) for d in dirs for f in sorted(d.iterdir()) if f.is_file()]
    if not files:
        return ""
    result = subprocess.run([str(binary), *options(target, findings), *files], capture_output=True, text=True,
                            env=sanitizer_env())
    return "" if result.returncode == 0 else result.stderr[-4000:]


def campaign(binary: Path, target: str, seconds: float, work: Path, extra_seeds: list) -> Campaign:
    """Fuzz one target for `seconds`; the corpus grows in work/target/corpus."""
    corpus, findings = work / target / "corpus", work / target / "findings"
    shutil.rmtree(findings, ignore_errors=True)   # findings of this run only
    corpus.mkdir(parents=True, exist_ok=True)
    findings.mkdir(parents=True)
    dirs = [corpus, *input_dirs(target), *extra_seeds]
    log = work / target / "fuzz.log"
    with open(log, "w") as out:
        result = subprocess.run([str(binary), *options(target, findings), f"-max_total_time={max(1, round(seconds))}",
                                 "-print_final_stats=1", *map(str, dirs)], stdout=out, stderr=subprocess.STDOUT,
                                env=sanitizer_env())
    stats = Campaign(target, seconds)
    parse_stats(log.read_text(errors="replace"), stats)
    failed = sorted(findings.iterdir())
    if result.returncode != 0 or failed:
        stats.finding = str(failed[0]) if failed else f"libFuzzer exited {result.returncode}; see {log}"
    return stats


def parse_stats(text: str, stats: Campaign) -> None:
    """Fill `stats` from libFuzzer's status lines and its -print_final_stats summary."""
    status = re.findall(r"^#(\d+)\s+\w+\s+cov: (\d+) ft: (\d+) corp: (\d+)/", text, re.M)
    if status:
        _, cov, ft, corp = status[-1]
        stats.coverage_edges, stats.features, stats.corpus_inputs = int(cov), int(ft), int(corp)
    final = dict(re.findall(r"^stat::(\w+):\s+(\d+)", text, re.M))
    stats.executions = int(final.get("number_of_executed_units", 0))
    stats.executions_per_s = int(final.get("average_exec_per_sec", 0))
    stats.new_inputs = int(final.get("new_units_added", 0))
    stats.peak_rss_mb = int(final.get("peak_rss_mb", 0))


def program_seeds(work: Path, programs: list) -> list:
    """A folder holding copies of the given Cortex-M programs (none: no folder)."""
    if not programs:
        return []
    folder = work / "pte" / "programs"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for i, program in enumerate(programs):
        shutil.copyfile(program, folder / f"{i}-{Path(program).name}")
    return [folder]


def export_program(make_model, core: str) -> bytes:
    """A seeded, untrained model through the Cortex-M export flow, calibrated on a few images."""
    import torch

    from tinyrps.data import make_split
    from tinyrps.export.cortex_m import lower_images
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = make_model().eval()
    return lower_images(model, make_split("train", 4, 0)[0], core).program


def export_ethos_u_program(make_model, target: str) -> bytes:
    """A seeded, untrained model through the Ethos-U export flow (TOSA and Vela), calibrated on a few images."""
    import tempfile

    import torch

    from tinyrps.data import make_split
    from tinyrps.export import export_model
    from tinyrps.hardware.descriptor import Origin
    from tinyrps.network.model import images_to_tensor
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = make_model().eval()
    images = images_to_tensor(make_split("train", 4, 0)[0])
    calibration = [(images[i:i + 1],) for i in range(len(images))]
    with tempfile.TemporaryDirectory() as out:
        pte = export_model(model, calibration[0], calibration, target, out,
                           Origin(module="scripts/fuzz.py:small_network", calibration="12 training images"))
        return pte.read_bytes()


def write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


# --- seeds ------------------------------------------------------------------------------------

def small_network():
    """The operators of the default network (the 1-channel depthwise conv, conv, max pool, the
    flattening clone, linear, quantize and dequantize) in a program of ~10 kB, so the fuzzer
    mutates and runs it fast."""
    from torch import nn
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 4, 3, padding=1), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Conv2d(4, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(4 * 7 * 7, 8), nn.ReLU(), nn.Linear(8, 3))


def elementwise_network():
    """The elementwise and data-movement operators (a residual add, hardswish's minimum and mul,
    a table activation, cat, pad, transpose, softmax) in a program of a few kB."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    class Elementwise(nn.Module):
        def __init__(self):
            super().__init__()
            self.c0 = nn.Conv2d(1, 4, 3, stride=4, padding=1)
            self.c1 = nn.Conv2d(4, 4, 3, padding=1)
            self.c2 = nn.Conv2d(4, 4, 3, padding=1)
            self.fc = nn.Linear(8 * 8 * 8, 3)

        def forward(self, x):
            x = F.relu(self.c0(x))
            x = F.relu(x + self.c1(x))
            h = F.hardswish(self.c2(x))
            y = F.pad(torch.cat([h, torch.sigmoid(h)], 1), (1, 0, 0, 1))
            return torch.softmax(self.fc(torch.flatten(y.permute(0, 2, 3, 1), 1)), -1)
    return Elementwise()

def tensor_requests() -> dict:
    """Payloads of the link's tensor requests, from the host's own encoders: describe an input and an
    output, write an image (one frame) and raw float32 elements from an offset, run, read values and raw
    int8 values from an offset."""
    import numpy as np

    from tinyrps.data import make_split
    from tinyrps.firmware import link_protocol
    image = make_split("test", 1, 5)[0][0].tobytes()
    raw = np.linspace(0, 1, 12, dtype=np.float32).tobytes()
    return {
        "tensor-input": (link_protocol.CMD_TENSOR, link_protocol.TENSOR_REQUEST.pack(KIND=link_protocol.TENSOR_INPUT, INDEX=0)),
        "tensor-output": (link_protocol.CMD_TENSOR, link_protocol.TENSOR_REQUEST.pack(KIND=link_protocol.TENSOR_OUTPUT, INDEX=1)),
        "write-image": (link_protocol.CMD_WRITE, link_protocol.WRITE_HEADER.pack(INDEX=0, ENCODING=link_protocol.ENCODING_IMAGE) + image),
        "write-raw": (link_protocol.CMD_WRITE, link_protocol.WRITE_HEADER.pack(INDEX=0, ENCODING=link_protocol.ENCODING_RAW, FIRST=20) + raw),
        "run": (link_protocol.CMD_RUN, b""),
        "run-with-a-piece": (link_protocol.CMD_RUN, link_protocol.WRITE_HEADER.pack(INDEX=1, ENCODING=link_protocol.ENCODING_RAW) + bytes(5)),
        "read-values": (link_protocol.CMD_READ, link_protocol.READ_REQUEST.pack(INDEX=0, PART=link_protocol.PART_VALUES, FIRST=2)),
        "read-int8": (link_protocol.CMD_READ, link_protocol.READ_REQUEST.pack(INDEX=0, PART=link_protocol.PART_INT8)),
    }


def frame_seeds() -> dict:
    """Streams the firmware receives: real requests from the host's encoder. Byte 0 of a
    link-frame input says how often the line goes quiet (0: never)."""
    from tinyrps.data import make_split
    from tinyrps.firmware.link_protocol import CMD_ECHO, CMD_INFER, CMD_INFO, encode_frame
    image = make_split("test", 1, 5)[0][0].tobytes()
    info, infer, echo = encode_frame(CMD_INFO, 1), encode_frame(CMD_INFER, 2, image), encode_frame(CMD_ECHO, 3, b"tinyrps")
    requests = tensor_requests()
    generic = b"".join(encode_frame(command, 10 + k, payload) for k, (command, payload) in enumerate(requests.values()))
    return {
        "info": b"\0" + info,
        "infer": b"\0" + infer,
        "echo": b"\0" + echo,
        "session": b"\0" + info + infer + echo + infer,
        "noise-cut-and-quiet": b"\x40" + b"noise" + infer[:300] + info,
        "tensor-session": b"\0" + info + generic,
    }


def tensor_io_seeds() -> dict:
    """link-tensor-io inputs: requests as (command byte, length byte, payload); payloads of up to 255 bytes
    (the image write is cut there, as a frame that holds part of an image)."""
    requests = tensor_requests()

    def entry(command, payload):
        payload = payload[:255]
        return bytes([command, len(payload)]) + payload

    seeds = {name: entry(*request) for name, request in requests.items()}
    seeds["session"] = b"".join(entry(*request) for request in requests.values())
    return seeds


def batch_seeds() -> dict:
    """What the batch transport reads: the samples file's size (8 bytes, little-endian) and
    the semihosting command line qemu.py passes."""
    line = b"tinyrps_fw samples.bin results.bin"
    return {"600-images": (600 * 784 * 4).to_bytes(8, "little") + line,
            "no-samples": (0).to_bytes(8, "little") + line}


def write_seeds() -> None:
    seeds = FUZZ_DIR / "seeds"
    programs = {f"small-{core}.pte": export_program(small_network, core) for core in ("cortex-m55", "cortex-m4")}
    programs["elementwise-cortex-m55.pte"] = export_program(elementwise_network, "cortex-m55")
    npu_programs = {f"small-{target}.pte": export_ethos_u_program(small_network, target)
                    for target in ("ethos-u55-128", "ethos-u85-128")}
    files = {"pte": programs, "ethos-u": npu_programs,
             "link-frame": frame_seeds(), "link-tensor-io": tensor_io_seeds(), "batch-input": batch_seeds()}
    for target, named in files.items():
        shutil.rmtree(seeds / target, ignore_errors=True)
        for name, data in named.items():
            write_atomically(seeds / target / name, data)
            print(f"{seeds / target / name}: {len(data)} bytes")


# --- command line ---------------------------------------------------------------------------------

def cmd_run(args) -> int:
    binaries = fuzz_build()
    work = Path(args.work)
    results = []
    for target in args.target:
        report = replay(binaries[target], target, input_dirs(target), work / target / "replay")
        if report:
            print(f"{target}: a seed or regression input fails:\n{report}", file=sys.stderr)
            return 1
        extra = program_seeds(work, args.program) if target == "pte" else []
        results.append(campaign(binaries[target], target, args.seconds, work, extra))
    print_table(results)
    write_atomically(work / "summary.json", (json.dumps([asdict(r) for r in results], indent=2) + "\n").encode())
    found = [r for r in results if r.finding]
    for r in found:
        print(f"{r.target}: finding {r.finding} (see {work / r.target / 'fuzz.log'}); once fixed, keep the input "
              f"in {FUZZ_DIR.relative_to(REPO) / 'regressions' / r.target}/", file=sys.stderr)
    return 1 if found else 0


def cmd_replay(args) -> int:
    binaries = fuzz_build()
    failed = 0
    for target in args.target:
        report = replay(binaries[target], target, input_dirs(target), Path(args.work) / target / "replay")
        files = sum(1 for d in input_dirs(target) for f in d.iterdir() if f.is_file())
        print(f"{target}: {files} inputs, {'FAILED' if report else 'ok'}")
        if report:
            print(report, file=sys.stderr)
            failed += 1
    return 1 if failed else 0


def print_table(results: list) -> None:
    print(f"{'target':<12} {'seconds':>7} {'executions':>11} {'exec/s':>7} {'cov':>6} {'ft':>7} {'corpus':>7} "
          f"{'new':>5} {'rss MB':>6}  finding")
    for r in results:
        print(f"{r.target:<12} {r.seconds:>7.0f} {r.executions:>11,} {r.executions_per_s:>7,} {r.coverage_edges:>6} "
              f"{r.features:>7} {r.corpus_inputs:>7} {r.new_inputs:>5} {r.peak_rss_mb:>6}  {r.finding or '-'}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("run", "replay"):
        p = sub.add_parser(name)
        p.add_argument("--target", nargs="+", choices=list(TARGETS), default=list(TARGETS))
        p.add_argument("--work", default=str(default_work()), help="corpora and findings (default: %(default)s)")
        if name == "run":
            p.add_argument("--seconds", type=float, default=60.0, help="per target (default: %(default)s)")
            p.add_argument("--program", action="append", default=[],
                           help="a Cortex-M .pte to add to the pte seeds, e.g. out/run/export/cortex-m55.pte")
    sub.add_parser("seeds")
    args = parser.parse_args(argv)
    try:
        if args.command == "seeds":
            write_seeds()
            return 0
        return cmd_run(args) if args.command == "run" else cmd_replay(args)
    except UserError as e:
        print(f"fuzz: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
