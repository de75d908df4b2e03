"""An estimate of the cycles a Cortex-M program takes on a real core: never a measurement.

QEMU counts instructions, not cycles. On silicon an instruction takes one cycle or several, and on
the Cortex-M55 two Helium (MVE) instructions overlap when they use different pipes. This module
turns one inference's executed instructions into cycles with a timing model per core:

1. QEMU runs the program once more (one input) with its execution trace on
   (`-d in_asm,exec,nochain`): each translated block's first and last address, and each block run in
   turn. The blocks are mapped onto the firmware's own disassembly (objdump), so every executed
   instruction is known by its mnemonic and operands; a conditional branch at a block's end was
   taken when the next block run is not the one that follows it.
2. Each instruction is given cycles from its core's timing row (tinyrps.hardware.cores) (its class: alu, mul, div, load,
   store, ... or one of the three MVE pipes) and the class of the instruction before it (a load
   after a load or store pipelines on the M4/M33; an MVE instruction issued while the one before
   it, of another pipe, is still in its second beat costs one cycle instead of two).
3. The kernel calls are told apart by the runtime's per-call counter (board_ticks, read before the
   first call and after each): the same boundaries as the firmware's own per-layer counts, so each
   layer has its estimated cycles beside its instruction count, and the traced instruction count of
   each layer can be checked against the firmware's.

What the model leaves out (so, its uncertainty): wait states of the memories (zero-wait memory is
assumed), the result latency of loads and multiplies used by the very next instruction, dual issue
of 16-bit pairs, branch prediction beyond a fixed refill penalty, and the finer rules of MVE
overlap (chains of dependent accumulations, cross-lane reductions). Against published figures
of such models, that is roughly +/-25-30 % on the M55 and +/-15 % on the M4 (+/-20 % on the M33,
which reuses the M4's table): UNCERTAINTY, shown wherever a cycle estimate is.

Sources of the per-core tables: the processor instruction set summaries (cycle counts, zero wait
states) of Arm's Cortex-M4 Technical Reference Manual; for the M33, which publishes no such table,
the M4's; for the M7, its published single-instruction figures (single-cycle loads and stores, two
registers a cycle for LDM/STM, a predicted branch's one-cycle bubble), taken one instruction at a
time: the model has no dual issue, which on the M7 retires many pairs in one cycle, so its M7 band
is the widest (+/-35 %); the plain-C cores (M0, M0+, M3, M23) have no row, only instruction counts; for the M55, the beat-wise execution of Helium (two beats a cycle: a 128-bit instruction
takes two cycles, and overlaps the one before it when their pipes differ) with single-cycle scalar
instructions, as Arm's Cortex-M55 Software Optimization Guide describes them. The clocks are the
emulated boards' own (QEMU's models of the MPS2/MPS3 FPGA images): device time at those clocks is
cycles / clock.
"""
from __future__ import annotations

import bisect
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Optional

from ..hardware.cores import CoreTiming, timings
from ..infra.errors import UserError
from ..infra.tempdirs import temp_dir

MODEL_VERSION = 2      # 2: blocks QEMU stopped before their first instruction are left out
ESTIMATE_NOTE = "an estimate from the executed instructions and a per-core timing model, not a measurement"


# core -> its cycle-model row (tinyrps.hardware.cores)
TIMINGS = timings()

# ── instruction classes ──────────────────────────────────────────────────────
CONDITIONS = ("eq", "ne", "cs", "hs", "cc", "lo", "mi", "pl", "vs", "vc", "hi", "ls", "ge", "lt", "gt", "le", "al")
SCALAR = {
    "mul": "mul mla mls smull umull smlal umlal umaal smlad smladx smlsd smlsdx smlald smlaldx smlsld smlsldx "
           "smlabb smlabt smlatb smlatt smulbb smulbt smultb smultt smulwb smulwt smlawb smlawt smmul smmulr "
           "smmla smmlar smmls smmlsr smuad smuadx smusd smusdx usad8 usada8",
    "div": "sdiv udiv",
    "load": "ldr ldrb ldrh ldrsb ldrsh ldrex ldrexb ldrexh ldrt ldrbt ldrht ldrsbt ldrsht lda ldab ldah",
    "load_pair": "ldrd strd",
    "store": "str strb strh strex strexb strexh strt strbt strht stl stlb stlh",
    "multiple": "ldm ldmia ldmdb ldmfd stm stmia stmdb stmea push pop",
    "branch": "b bl blx bx cbz cbnz tbb tbh bxns blxns",
    "loop_end": "le letp",
    "loop_start": "wls dls wlstp dlstp",
    "alu": "mov mvn add adc sub sbc rsb neg cmp cmn tst teq and orr orn eor bic lsl lsr asr ror rrx movw movt "
           "addw subw adr sxtb sxth uxtb uxth sxtb16 uxtb16 sxtab sxtah sxtab16 uxtab uxtah uxtab16 ubfx sbfx bfi "
           "bfc clz rev rev16 revsh rbit ssat usat ssat16 usat16 qadd qsub qdadd qdsub qadd8 qadd16 qsub8 qsub16 "
           "qasx qsax sadd8 sadd16 ssub8 ssub16 sasx ssax uadd8 uadd16 usub8 usub16 shadd8 shadd16 shsub8 "
           "shsub16 uhadd8 uhadd16 uqadd8 uqadd16 uqsub8 uqsub16 sel pkhbt pkhtb nop cinc cinv cneg csel csinc "
           "csinv csneg cset csetm asrl lsll lsrl sqrshr sqrshrl sqshl sqshll srshr srshrl uqrshl uqrshll uqshl "
           "uqshll urshr urshrl cpsie cpsid dsb dmb isb msr mrs wfi wfe sev bkpt svc udf clrex",
}
SCALAR_CLASS = {name: cls for cls, names in SCALAR.items() for name in names.split()}
# Helium instructions known by name alone (no Q register among their operands, or a scalar form that
# must not be read as floating point)
MVE_ONLY = re.compile(r"^(vpst|vpt\w*|vctp\d*|vpnot|vpsel|vaddv\w*|vaddlv\w*|vmlav\w*|vmladav\w*|vmlaldav\w*|"
                      r"vmlsdav\w*|vmlsldav\w*|vrmlaldavh\w*|vrmlsldavh\w*|vminv\w*|vmaxv\w*|vabav|vidup|vddup|"
                      r"viwdup|vdwdup|vld[24]\d|vst[24]\d)$")
Q_REGISTER = re.compile(r"\bq[0-7]\b")
MVE_LOAD_STORE = ("vldr", "vstr", "vld2", "vld4", "vst2", "vst4")
MVE_MAC = ("vmla", "vmls", "vmul", "vqdmul", "vqrdmul", "vrmla", "vrmls", "vrmul", "vqdmla", "vqrdmla", "vqdmls",
           "vqrdmls", "vabav", "vrmlal", "vrmlsl", "vmlal", "vmlsl")
MVE_CONTROL = ("vpst", "vpt", "vctp", "vpnot")
FP_SLOW = ("vdiv", "vsqrt")
FP_MEMORY = ("vldr", "vstr")
FP_MULTIPLE = ("vpush", "vpop", "vldm", "vstm", "vlldm", "vlstm")


def _scalar_class(mnemonic: str) -> Optional[str]:
    """The class of a scalar mnemonic, read through its flag-setting `s` and an IT block's condition."""
    if mnemonic in SCALAR_CLASS:
        return SCALAR_CLASS[mnemonic]
    if re.fullmatch(r"b(" + "|".join(CONDITIONS) + r")", mnemonic):
        return "branch"
    if re.fullmatch(r"it[te]{0,3}", mnemonic):
        return "alu"
    for base in (mnemonic[:-2] if mnemonic[-2:] in CONDITIONS else None, mnemonic):
        if base is None:
            continue
        if base in SCALAR_CLASS:
            return SCALAR_CLASS[base]
        if base.endswith("s") and base[:-1] in SCALAR_CLASS:
            return SCALAR_CLASS[base[:-1]]
    return None


def classify(mnemonic: str, operands: str = "") -> str:
    """An instruction's class: a scalar class of SCALAR, "fp", "fp_slow", "fp_load", "fp_multiple",
    "mve_ls", "mve_mac", "mve_alu", "mve_control", or "unknown"."""
    name = mnemonic.lower()
    for suffix in (".n", ".w"):
        name = name.removesuffix(suffix)
    base = name.split(".")[0]
    if base.startswith("v"):
        if MVE_ONLY.match(base) or Q_REGISTER.search(operands):
            if base.startswith(MVE_CONTROL):
                return "mve_control"
            if base.startswith(MVE_LOAD_STORE):
                return "mve_ls"
            if base.startswith(MVE_MAC):      # "vmla" and "vrmla" take the reductions (vmladav, vrmlaldavh) too
                return "mve_mac"
            return "mve_alu"
        if base.startswith(FP_SLOW):
            return "fp_slow"
        if base.startswith(FP_MULTIPLE):
            return "fp_multiple"
        if base in FP_MEMORY or re.fullmatch(r"v(ldr|str)(" + "|".join(CONDITIONS) + ")", base):
            return "fp_load"
        return "fp"
    return _scalar_class(base) or "unknown"


def register_count(operands: str) -> int:
    """Registers in a register list {r4-r7, lr} (d8-d15, s16-s31 for the floating-point forms)."""
    listed = re.search(r"\{([^}]*)\}", operands)
    if not listed:
        return 1
    count = 0
    for item in listed.group(1).split(","):
        item = item.strip()
        span = re.fullmatch(r"([rdsq])(\d+)-[rdsq](\d+)", item)
        count += int(span.group(3)) - int(span.group(2)) + 1 if span else 1
    return count


def writes_pc(cls: str, operands: str) -> bool:
    """A pop or load of pc, or a move or add to it: a branch (a pipeline refill)."""
    if cls in ("multiple", "load"):
        return bool(re.search(r"\bpc\b", operands.split("[")[0]))
    return cls == "alu" and operands.split(",")[0].strip() == "pc"


def cycles_of(cls: str, operands: str, previous: str, timing: CoreTiming) -> float:
    """Cycles of one instruction of class `cls` after one of class `previous`, branches not taken
    (a taken branch adds timing.branch_refill, see estimate)."""
    if cls.startswith("mve_"):
        if not timing.mve:
            return 1.0
        if cls == "mve_control":
            return 1.0
        overlaps = previous.startswith("mve_") and previous not in ("mve_control", cls)
        return 1.0 if overlaps else 2.0
    if cls in ("load", "store", "fp_load"):
        single = timing.load if cls in ("load", "fp_load") else timing.store
        return float(timing.load_pipelined if previous in ("load", "store", "fp_load") else single)
    if cls == "load_pair":
        return float(timing.load_pair)
    if cls in ("multiple", "fp_multiple"):
        return 1.0 + timing.multiple_per_register * register_count(operands)
    if cls == "div":
        return float(timing.divide)
    if cls == "fp_slow":
        return float(timing.fp_divide)
    if cls == "loop_end":
        return float(timing.low_overhead_loop)
    return 1.0


def overlap_state(cls: str, previous: str) -> str:
    """What the next instruction sees as the one before it: predication and loop ends pass the MVE state on."""
    return previous if cls in ("mve_control", "loop_end") else cls


def step(cls: str, operands: str, previous: str, timing: CoreTiming) -> tuple:
    """(cycles, what the next instruction sees before it) of one instruction, a write to pc's refill
    included; a taken branch's refill is the caller's (only the next instruction tells)."""
    cycles = cycles_of(cls, operands, previous, timing)
    if writes_pc(cls, operands):
        cycles += timing.branch_refill
    return cycles, overlap_state(cls, previous)


def estimate(listing: Iterable, timing: CoreTiming) -> float:
    """Cycles of a straight sequence of (mnemonic, operands[, taken]) instructions: what a hand count
    of a loop is checked against. `taken` (default False) marks a branch that was taken."""
    total, previous = 0.0, "none"
    for item in listing:
        mnemonic, operands = item[0], item[1]
        taken = item[2] if len(item) > 2 else False
        cls = classify(mnemonic, operands)
        cycles, previous = step(cls, operands, previous, timing)
        total += cycles + (timing.branch_refill if taken and cls == "branch" else 0)
    return total


# ── the firmware's disassembly ───────────────────────────────────────────────
LINE = re.compile(r"^\s*([0-9a-f]+):\t([0-9a-f ]+?)\s*\t(\S+)\s*([^<;@]*)")
SYMBOL = re.compile(r"^([0-9a-f]{8}) <([^>]+)>:$")


@dataclass
class Disassembly:
    addresses: list         # sorted instruction addresses
    sizes: dict             # address -> bytes
    classes: dict           # address -> class
    operands: dict          # address -> operand text
    symbols: dict           # name -> address
    calls: set              # addresses of the calls (BL, BLX)


@lru_cache(maxsize=8)
def disassemble(elf: Path, arch: str, mtime_ns: int) -> Disassembly:
    tool = shutil.which("arm-none-eabi-objdump")
    if tool is None:
        from . import OBJDUMP_MISSING
        raise UserError(OBJDUMP_MISSING)
    text = subprocess.run([tool, "-d", "-m", arch, str(elf)], capture_output=True, text=True, check=True).stdout
    addresses, sizes, classes, operands, symbols, calls = [], {}, {}, {}, {}, set()
    for line in text.splitlines():
        m = LINE.match(line)
        if m:
            mnemonic = m.group(3)
            if mnemonic.startswith("."):        # literal pools (.word, .short): data, never executed
                continue
            address = int(m.group(1), 16)
            addresses.append(address)
            sizes[address] = len(m.group(2).replace(" ", "")) // 2
            operands[address] = m.group(4).strip()
            classes[address] = classify(mnemonic, operands[address])
            if mnemonic.split(".")[0] in ("bl", "blx"):
                calls.add(address)
            continue
        s = SYMBOL.match(line)
        if s:
            symbols[s.group(2)] = int(s.group(1), 16)
    addresses.sort()
    return Disassembly(addresses, sizes, classes, operands, symbols, calls)


# ── the traced run ───────────────────────────────────────────────────────────
TRACE = re.compile(r"^Trace \d+: (0x[0-9a-f]+) \[[0-9a-f]+/([0-9a-f]+)/")
# QEMU logs a block before running it, and this line when it then left the block at its start (an
# interrupt pending, or the instruction budget spent): that block did not run
STOPPED = re.compile(r"^Stopped execution of TB chain before (0x[0-9a-f]+) ")


def traced_blocks(log_lines: Iterable[str]):
    """(host block id, guest pc, first address, last address) of each block run, in order, from QEMU's
    in_asm,exec,nochain log: a block's extent comes from its translation just before its first run;
    a block logged and then stopped before its first instruction is left out."""
    extents, pending, first, last, logged = {}, False, None, None, None
    for line in log_lines:
        if line.startswith("IN:"):
            pending, first, last = True, None, None
        elif pending and line.startswith("0x") and ":" in line[:12]:
            address = int(line[2:10], 16)
            first = address if first is None else first
            last = address
        elif line.startswith("Stopped"):
            m = STOPPED.match(line)
            if m and logged is not None and logged[0] == m.group(1):
                logged = None
        else:
            m = TRACE.match(line)
            if m:
                host, pc = m.group(1), int(m.group(2), 16)
                if pending and first is not None:
                    extents[host] = (first, last)
                    pending = False
                if logged is not None:
                    yield logged
                extent = extents.get(host)
                logged = (host, pc, extent[0], extent[1]) if extent is not None else None
    if logged is not None:
        yield logged


def run_traced(pte: Path, elf: Path, board: str, sample, work: Path) -> Path:
    """One inference of `sample` on the firmware with QEMU's execution trace: the log's path. A program with
    an Ethos-U delegate has its NPU link served by the NPU model, as in any batch."""
    from ..firmware import qemu
    specs = qemu.program_inputs(pte, elf, board)
    samples = qemu.check_inputs(list(specs), sample, pte.name, batched=True)
    (work / "samples.bin").write_bytes(qemu.samples_file_bytes(list(specs), samples))
    log = work / "exec.log"
    npu = qemu.npu_host_for(pte, work)
    command = qemu.qemu_command(elf, pte, qemu.MODE_BATCH, board, qemu.FLAG_NPU_LINK if npu else 0) + [
        "-serial", "null", "-semihosting-config", "enable=on,target=native,arg=fw,arg=samples.bin,arg=results.bin",
        "-d", "in_asm,exec,nochain", "-D", str(log)]
    try:
        subprocess.run(command, cwd=work, timeout=qemu.BOOT_TIMEOUT_S + 60, check=True, capture_output=True)
    except subprocess.CalledProcessError as e:
        raise UserError(f"the traced run of {pte.name} on {board} failed (exit {e.returncode}): "
                        "rebuild the firmware") from None
    except subprocess.TimeoutExpired:
        raise UserError(f"the traced run of {pte.name} on {board} did not finish: QEMU was stopped") from None
    finally:
        if npu:
            npu.close()
    return log


def trace_segments(log_lines: Iterable[str], dis: Disassembly, timing: CoreTiming) -> list:
    """[{instructions, cycles}] between one read of the runtime's per-call counter and the next, from
    the first inference's start (run_range) to the end of the trace."""
    run_start, counter = dis.symbols["run_range"], dis.symbols["board_ticks"]
    block_cache: dict = {}
    running, segments, current = False, [], None
    previous, pending_branch = "none", None      # (fall-through address, class, a call?) of the last block's end

    def cost(first: int, last: int, entry: str) -> tuple:
        key = (first, last, entry)
        if key not in block_cache:
            lo = bisect.bisect_left(dis.addresses, first)
            hi = bisect.bisect_right(dis.addresses, last)
            total, prev, vector, overlapped = 0.0, entry, 0, 0
            for address in dis.addresses[lo:hi]:
                cls = dis.classes[address]
                cycles, prev = step(cls, dis.operands[address], prev, timing)
                if timing.mve and cls.startswith("mve_") and cls != "mve_control":
                    vector += 1
                    overlapped += cycles == 1.0
                total += cycles
            end = dis.addresses[hi - 1] if hi > lo else last
            block_cache[key] = (hi - lo, total, vector, overlapped, prev,
                                (end + dis.sizes.get(end, 2), dis.classes.get(end), end in dis.calls))
        return block_cache[key]

    for _host, pc, first, last in traced_blocks(log_lines):
        called = False
        if pending_branch is not None:
            fall_through, cls, called = pending_branch
            if pc != fall_through and cls == "branch" and current is not None:     # taken: the pipeline refills
                current["cycles"] += timing.branch_refill
        if pc == run_start:
            running = True
        # a call of the counter (its own loop may branch back to its first instruction: not a new read)
        if running and pc == counter and called:
            current = {"instructions": 0, "cycles": 0.0, "vector": 0, "overlapped": 0}
            segments.append(current)
        count, cycles, vector, overlapped, previous, pending_branch = cost(first, last, previous)
        if current is not None:
            current["instructions"] += count
            current["cycles"] += cycles
            current["vector"] += vector
            current["overlapped"] += overlapped
    return segments


def layer_estimates(segments: list, reference_layers: list) -> list:
    """The segments that are the kernel calls. The runtime reads its counter before the first call and
    after each (a chain), or, for a program with copies between calls, before and after each call;
    the reading whose traced instruction counts match the firmware's own per-call counts is taken."""
    calls = len(reference_layers)
    readings = [segments[:calls], segments[0::2][:calls]]
    readings = [r for r in readings if len(r) == calls]
    if not readings:
        raise UserError(f"the traced run showed {len(segments)} reads of the runtime's counter for a program "
                        f"of {calls} kernel calls: rebuild the firmware")

    def mismatch(reading):
        return sum(abs(s["instructions"] - layer["instructions"]) for s, layer in zip(reading, reference_layers))
    return min(readings, key=mismatch)


def model_timing(core: str) -> Optional[CoreTiming]:
    """The timing row the model uses for a core's programs: that of the core whose firmware runs them on its
    board (the M55's for an M85 program); None for a core with a build of its own (the M0 on the M3's
    board) or a board core without a row (the M3): their programs have instruction counts only."""
    from ..firmware.boards import board_for_core, guest_core
    board = board_for_core(core)
    return None if guest_core(board.name, core) else TIMINGS.get(board.core)


def models(target: str) -> bool:
    """Whether the model estimates cycles of a target's programs (tinyrps.measure.MEASUREMENTS)."""
    from ..hardware.cores import find_core
    return find_core(target) is not None and model_timing(target) is not None


def measure_program(pte, described, quick: bool = False) -> Optional[dict]:
    """The measure stage's `cycles` figures of a Cortex-M program (None for a quick measurement)."""
    if quick:
        return None
    from ..firmware.boards import board_for_core
    from ..firmware.qemu import firmware_elf, images_as_input, run_batch
    from .firmware import measurement_inputs
    core = described.info.core
    board = board_for_core(core)
    timing = model_timing(core)
    if timing is None:
        raise UserError(f"the cycle model has no timing row for the {core}: its programs have instruction "
                        "counts only")
    elf = firmware_elf(board.name, "isa")
    samples = measurement_inputs(described)
    first = [images_as_input(samples[:1])] if hasattr(samples, "ndim") else [s[:1] for s in samples]
    reference = run_batch(Path(pte), first, elf=elf, board=board.name)
    return estimate_run(Path(pte), elf, board, first, reference.layers, timing)


def estimate_run(pte: Path, elf: Path, board, first: list, reference_layers: list, timing: CoreTiming) -> dict:
    """The estimate of one traced inference of `first` (one sample per input), its kernel calls matched to
    `reference_layers`, the firmware's own per-call counts of the same inference."""
    dis = disassemble(elf, timing.objdump_arch, elf.stat().st_mtime_ns)
    with temp_dir("cycles") as work:
        log = run_traced(pte, elf, board.name, first, Path(work))
        with open(log, errors="replace") as lines:
            layers = layer_estimates(trace_segments(lines, dis, timing), reference_layers)
    rows = []
    for layer, traced in zip(reference_layers, layers):
        rows.append({"op": layer["op"], "kernels": layer["kernels"], "instructions": layer["instructions"],
                     "traced_instructions": traced["instructions"], "estimated_cycles": round(traced["cycles"])})
    cycles = sum(r["estimated_cycles"] for r in rows)
    vector = sum(traced.get("vector", 0) for traced in layers)
    helium = {"helium_instructions": vector,
              "helium_overlapped": sum(traced.get("overlapped", 0) for traced in layers)} if timing.mve else {}
    instructions = sum(r["instructions"] for r in rows)
    return {"board": board.name, "core": board.core, "model_version": MODEL_VERSION, "note": ESTIMATE_NOTE,
            "uncertainty": timing.uncertainty, "clock_hz": timing.clock_hz,
            "estimated_cycles_per_inference": cycles, "instructions_per_inference": instructions,
            "estimated_cycles_per_instruction": round(cycles / instructions, 3) if instructions else None,
            "estimated_ms": round(cycles / timing.clock_hz * 1e3, 4), **helium, "layers": rows}


def fingerprint() -> str:
    """What the estimate depends on besides the program: the firmware (its figures' fingerprint) and the model."""
    import hashlib
    from .firmware import fingerprint as firmware_fingerprint
    return hashlib.sha256(f"{firmware_fingerprint()}\0{MODEL_VERSION}\0{sorted(TIMINGS.items())}".encode()).hexdigest()
