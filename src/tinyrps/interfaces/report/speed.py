"""The speed and size section: each program's latency on this machine and on its own hardware (Vela's
estimate for the NPU, the cycle estimate for a Cortex-M core), Vela's figures, and the Cortex-M firmware's
footprint and instruction counts, whole and per layer (`tinyrps bench`, the report's Speed and size)."""
from __future__ import annotations

from typing import Optional

from .tables import percent, print_line, print_table


BENCH_HEADER = ["program", "device", "timed on", "median ms", "IQR ms", "× eager", "runs", "size", "device ms"]
BENCH_LEGEND = {"program": "eager is the PyTorch checkpoint", "device": "what ran it",
                "timed on": "what the median was measured on",
                "median ms": "the median wall time of one inference on this machine",
                "IQR ms": "its interquartile range (the middle half of the timed calls lies within it)",
                "× eager": "median ms over eager's; \"spread\" where eager's IQR, relative to its median, is larger "
                           "than the ratio, which it then cannot carry (see below)",
                "runs": "timed calls", "size": "the program's file (eager: the checkpoint's)",
                "device ms": "one inference on the device's own hardware: measured where it ran on this CPU, "
                             "else an estimate (Vela's for the NPU; for a Cortex-M core its cycle estimate at its "
                             "board's clock, ± its error band)"}


def timed_on(v: dict) -> str:
    """Where a program's time comes from: this machine's CPU, or a model of the hardware."""
    return f"{v['simulated_by']} (not hardware time)" if v.get("simulated_by") else "this CPU"


SIMULATION_NOTE = ("Rows timed on a simulator or emulator (the TOSA reference model for the Ethos-U NPU, QEMU for "
                   "the Cortex-M boards, over a serial link) measure that model running on this machine, not the "
                   "hardware (median ms): the hardware's time (device ms) is Vela's estimate for the NPU, and for a "
                   "Cortex-M core the cycle estimate at its board's clock (tinyrps.measure.cycles: the executed "
                   "instructions through a per-core timing model; an estimate, with its error band).")


def device_time(v: dict) -> Optional[dict]:
    """A program's time on its own hardware: {ms, band (relative, +/-), what}. Measured where it ran on this
    CPU (or a real board); for an NPU program Vela's estimate, for a Cortex-M program on an emulated board
    the cycle estimate at the board's clock; None when a simulated program has no estimate. The emulators'
    wall times are not the hardware's and stay in their own column."""
    if not v.get("simulated_by"):
        return {"ms": v["latency_ms"], "band": 0.0, "what": "measured"}
    if v.get("vela"):
        return {"ms": v["vela"]["inference_ms"], "band": 0.0, "what": "Vela's estimate"}
    if v.get("cycles"):
        c = v["cycles"]
        clock = f"{c['clock_hz'] / 1e6:g} MHz"
        return {"ms": c["estimated_ms"], "band": c["uncertainty"], "what": f"cycle estimate at {clock}", "clock": clock}
    return None


def device_cell(v: dict) -> str:
    t = device_time(v)
    if t is None:
        return ""
    if t["what"] == "measured":
        return f"{t['ms']:.4f}"
    if t["band"]:
        return f"{t['ms']:.3g} ±{t['band']:.0%} (est., {t['clock']})"
    return f"{t['ms']:.4f} (Vela est.)"


def iqr(v: dict) -> str:
    return f"{v['iqr_ms']:.4f}" if "iqr_ms" in v else ""


def ratio_cell(v: dict) -> str:
    """The ratio to eager, or why it is not shown (eager's spread too large to carry it)."""
    if v.get("ratio_to_eager") is not None:
        return f"{v['ratio_to_eager']:.3f}"
    return "spread" if v.get("ratio_refused") else ""


def bench_rows(result: dict) -> list:
    rows = []
    for name, v in result["programs"].items():
        rows.append([name, v["device"], timed_on(v), f"{v['latency_ms']:.4f}", iqr(v),
                     "1" if name == "eager" else ratio_cell(v), f"{v['runs']:,}",
                     f"{v.get('size_bytes', result.get('eager_size_bytes', 0)):,} B", device_cell(v)])
    return rows


def bench_table(result: dict) -> None:
    if "render_images_per_s" in result:
        title = (f"latency of one inference: median over {result['rounds']} warmed-up blocks per program, "
                 f"taking turns; data renderer {result['render_images_per_s']:,.0f} images/s")
    else:
        title = f"latency of one inference: median of {result['runs']} timed calls after a warm-up"
    print_table(title, BENCH_HEADER, bench_rows(result), text_columns=3, unwrapped=2, legend=BENCH_LEGEND)
    for name, v in result["programs"].items():
        if isinstance(v.get("ratio_refused"), str):
            print_line(f"{name} × eager: {v['ratio_refused']}")
    if any(v.get("simulated_by") for v in result["programs"].values()):
        print_line(SIMULATION_NOTE)
    vela, firmware = vela_rows(result), firmware_rows(result)
    if vela:
        print_table("Ethos-U: Vela's estimate", VELA_HEADER, vela, text_columns=1, legend=VELA_LEGEND)
    if firmware:
        print_table(f"Cortex-M firmware on emulated boards: {FIRMWARE_UNITS}; {QEMU_COUNTS}",
                    FIRMWARE_HEADER, firmware, text_columns=2, legend=FIRMWARE_LEGEND)
        for title, rows in layer_tables(result):
            print_table(title, LAYER_HEADER, rows, text_columns=2, legend=LAYER_LEGEND)


VELA_HEADER = ["target", "size", "NPU ms", "inferences/s", "SRAM", "util. (NPU)", "util. (all)"]
VELA_LEGEND = {"size": "the program's file", "NPU ms": "Vela's estimate of one inference on the NPU",
               "inferences/s": "the same as a rate", "SRAM": "the NPU's SRAM the program uses",
               "util. (NPU)": "MACs over (the NPU's cycles x its MAC units)",
               "util. (all)": "MACs over (all cycles, memory transfers included, x MAC units)"}


def vela_rows(result: dict) -> list:
    rows = []
    for name, v in result["programs"].items():
        vela = v.get("vela")
        if vela:
            rows.append([name, f"{v['size_bytes']:,} B", f"{vela['inference_ms']:.3f}",
                         f"{vela['inferences_per_s']:,.0f}", f"{vela['sram_bytes'] / 1024:.1f} KiB",
                         percent(vela.get("utilisation")), percent(vela.get("utilisation_total"))])
    return rows


FIRMWARE_UNITS = ("flash and RAM in KiB (of the program's own firmware image where the measurement says so), "
                  "instructions per inference in millions with the fastest kernels the core "
                  "allows and with plain C (\"C\"), link ms: serial round trip")
QEMU_COUNTS = ("QEMU counts instructions (-icount), not cycles: one Helium (MVE) instruction counts as one, "
               "whatever its width")
FIRMWARE_HEADER = ["target", "board", "flash", "RAM", "instr", "/MAC", "C instr", "C/MAC", "ms", "est. Mcycles"]
FIRMWARE_LEGEND = {"board": "the emulated board", "flash": "KiB", "RAM": "KiB",
                   "instr": "millions of instructions per inference, fastest kernels",
                   "/MAC": "instructions per multiply-accumulate", "C instr": "the same with plain C kernels",
                   "C/MAC": "plain C per multiply-accumulate", "ms": "the serial round trip of one inference",
                   "est. Mcycles": "estimated millions of cycles per inference on the real core, ± its error band"}


def _millions(count) -> str:
    return "" if count is None else f"{count / 1e6:.2f}"


def _per_mac(value) -> str:
    return "" if value is None else f"{value:.2f}"


def firmware_rows(result: dict) -> list:
    """One row per Cortex-M program: its board, footprint, and instructions per inference with the
    fastest kernels its core allows and with plain C ("C"), and the serial round trip bench measured."""
    rows = []
    for name, v in result["programs"].items():
        fw = v.get("firmware")
        if fw:
            rows.append([name, fw.get("board", ""), f"{fw['flash_bytes'] / 1024:.0f}", f"{fw['ram_bytes'] / 1024:.1f}",
                         _millions(fw["instructions_per_inference"]), _per_mac(fw["instructions_per_mac"]),
                         _millions(fw.get("instructions_per_inference_plain_c")),
                         _per_mac(fw.get("instructions_per_mac_plain_c")),
                         f"{v['latency_ms']:.0f}" if v.get("device") == "mcu" else "", _estimated_millions(v)])
    return rows


def _estimated_millions(v: dict) -> str:
    c = v.get("cycles")
    return f"{c['estimated_cycles_per_inference'] / 1e6:.2f} ±{c['uncertainty']:.0%}" if c else ""


LAYER_HEADER = ["layer", "kernels", "MACs", "instr", "/MAC", "C instr", "C/MAC", "est. cycles"]
LAYER_LEGEND = {"kernels": "the kernel variant the call ran with", "MACs": "multiply-accumulates of the layer",
                "instr": "instructions, fastest kernels", "/MAC": "instructions per MAC",
                "C instr": "instructions with plain C kernels", "C/MAC": "plain C per MAC",
                "est. cycles": "estimated cycles on the real core"}


def _layer_name(op: str) -> str:
    """"cortex_m::quantized_conv2d" -> "conv2d": short enough for an 80-column table."""
    name = op.split("::")[-1]
    return name[len("quantized_"):] if name.startswith("quantized_") else name


def layer_tables(result: dict) -> list:
    """(title, rows) per Cortex-M program with a per-layer profile: the kernel variant each call ran with
    in the ISA build, its instructions with those kernels and with plain C side by side, and per MAC
    where the layer has MACs."""
    tables = []
    for name, v in result["programs"].items():
        fw = v.get("firmware") or {}
        if not fw.get("layers"):
            continue
        rows = []
        estimates = (v.get("cycles") or {}).get("layers") or []
        for i, layer in enumerate(fw["layers"]):
            macs, counted, plain = layer["macs"], layer["instructions"], layer.get("instructions_plain_c")
            estimated = estimates[i]["estimated_cycles"] if i < len(estimates) else None
            rows.append([_layer_name(layer["op"]), layer.get("kernels", ""), f"{macs:,}" if macs else "",
                         f"{counted:,}", f"{counted / macs:.2f}" if macs else "", "" if plain is None else f"{plain:,}",
                         f"{plain / macs:.2f}" if macs and plain is not None else "",
                         "" if estimated is None else f"{estimated:,}"])
        tables.append((f"{name} on {fw['board']}: per layer, the {fw.get('kernels', '?')} build (kernels: the "
                       "variant each call ran with) and plain C (\"C\")", rows))
    return tables



def device_rows(bench: dict) -> list:
    """The latency chart's bars: each program's time on its own hardware (device_time), never an emulator's."""
    rows = []
    for name, v in bench["programs"].items():
        t = device_time(v)
        if t is not None:
            rows.append({"name": f"{name} ({v['device']})", "latency_ms": t["ms"], "band": t["band"],
                         "what": t["what"], **({"ratio_to_eager": v.get("ratio_to_eager")}
                                               if t["what"] == "measured" and name != "eager" else {})})
    return rows
