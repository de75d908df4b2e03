"""Tables on screen (rich) and the Markdown report of the main job."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.table import Table

from ..infra.artifacts.files import atomic_write_bytes
from ..infra.machine import line as machine_line
from ..infra.stats import entry_accuracy

out_console = Console(highlight=False)  # stdout: tables are results


def _pct(x) -> str:
    return "" if x is None else f"{100 * x:.2f} %"


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def targets_table(targets: dict) -> None:
    from ..hardware.families import get_family
    rows, missing = [], {}
    for name, target in targets.items():
        family = get_family(target.family)
        if family.name not in missing:
            missing[family.name] = family.available()
        note = f" [{missing[family.name]}]" if missing[family.name] else ""
        rows.append([name, target.family, family.default_device, target.description + note])
    print_table("export targets", ["target", "family", "runs on", "what"], rows, text_columns=4, unwrapped=3,
                legend={"target": "the name `export --target` takes", "family": "the kind of program",
                        "runs on": "the device that runs it unless --device names another",
                        "what": "what the program is, and what is missing on this machine to make it"})


def _bit_exact(v: dict) -> str:
    if v.get("bit_exact") is None:
        return ""
    if v["bit_exact"]:
        return "yes"
    return f"NO ({v['mismatches']} images differ)" if v.get("mismatches") else "NO"


def eval_images(result: dict) -> int:
    """How many images an evaluation read (results written before --split: `test_images`)."""
    return result.get("images", result.get("test_images"))


def eval_split(result: dict) -> str:
    return result.get("split", "test")


def eval_rows(result: dict, screen: bool = True) -> list:
    """The evaluation's rows; on `screen` an accuracy's parts are lines of its cell (EVAL_HEADER),
    in Markdown one line (MARKDOWN_EVAL_HEADER)."""
    rows = []
    for name, v in result["programs"].items():
        rows.append([name, v["device"], entry_accuracy(v, eval_images(result), cell=screen),
                     _pct(v.get("agreement")),
                     "" if "max_abs_logit_diff" not in v else f"{v['max_abs_logit_diff']:.4f}",
                     _bit_exact(v)])
    return rows


EVAL_HEADER = ["program", "device", "accuracy\ncorrect\n95 % CI", "agreement", "max |Δlogit|", "int8 bit-exact"]
MARKDOWN_EVAL_HEADER = ["program", "device", "accuracy (correct/images, 95 % CI)", *EVAL_HEADER[3:]]


def eval_notes(result: dict) -> str:
    """What the columns compare against, from the results themselves."""
    notes = ["accuracy: with the images read right of all, and its 95 % Wilson interval; "
             "agreement: same predicted label as eager (Ethos-U: as the int8 CPU model); "
             "max |Δlogit|: largest difference from eager's logits"]
    references = sorted({v["reference"] for v in result["programs"].values() if v.get("reference")})
    if references:
        notes.append(f"int8 bit-exact: the device's int8 outputs equal, on every {eval_split(result)} image, "
                     f"those of {' and '.join(references)} running the same program")
    shared = [f"{name} has {v['outputs_of']}'s outputs" for name, v in result["programs"].items() if v.get("outputs_of")]
    if shared:      # evaluate.shared_or_classified
        notes.append(f"{', '.join(shared)} (the same computation on its device, run once)")
    return "; ".join(notes)


def print_table(title: str, header: list, rows: list, text_columns: int = 2, unwrapped: int = None,
                legend: dict = None) -> None:
    """A table on stdout that never cuts a cell: the first `text_columns` columns left-aligned (the
    first `unwrapped` of them, by default all, never wrapped), the rest figures, right-aligned and
    never wrapped. Too wide for the console (80 columns, and 80 when stdout is no terminal), it
    is split into tables of fewer columns, each led by the first; where even that does not fit,
    each row is printed as lines of `column  value`. Then `legend`: what each column means."""
    unwrapped = text_columns if unwrapped is None else unwrapped
    layout = TableLayout(header, rows, text_columns, unwrapped)
    groups = layout.column_groups(out_console)
    if groups is None:
        layout.print_records(out_console, title)
    else:
        for n, (columns, widths) in enumerate(groups):
            out_console.print(layout.table(columns, title if n == 0 else None, widths))
    if legend:
        out_console.print(legend_line(header, legend))


def legend_line(header: list, legend: dict) -> str:
    """`column: meaning; ...` in the header's order (a header's lines joined by spaces)."""
    names = {" ".join(col.split()): col for col in header}
    unknown = set(legend) - set(names)
    assert not unknown, f"the legend names no column: {unknown}"
    return "; ".join(f"{name}: {legend[name]}" for name in names if name in legend)


class TableLayout:
    """The columns of a table, and the layouts that fit them into a console's width: rich would
    shrink a column that does not fit, cutting its figures ("median…"), so the widths are
    chosen here, and a table that cannot have them is laid out otherwise."""

    def __init__(self, header: list, rows: list, text_columns: int, unwrapped: int):
        self.header, self.rows = header, rows
        self.text_columns, self.unwrapped = text_columns, unwrapped
        cells = [[header[i]] + [row[i] for row in rows] for i in range(len(header))]
        lines = [[line for cell in column for line in str(cell).splitlines()] for column in cells]
        # a column's natural width (its longest line) and the least it can have (its longest word, if it wraps)
        self.natural = [max(map(cell_len, column), default=0) for column in lines]
        self.least = [max((cell_len(word) for line in column for word in line.split()), default=0)
                      if self.wraps(i) else self.natural[i] for i, column in enumerate(lines)]

    def wraps(self, i: int) -> bool:
        return self.unwrapped <= i < self.text_columns

    def table(self, columns: list, title: Optional[str], widths: dict = None) -> Table:
        # collapsed padding: two spaces between columns
        t = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
        for i in columns:
            t.add_column(self.header[i], justify="left" if i < self.text_columns else "right",
                         no_wrap=not self.wraps(i), width=(widths or {}).get(i))
        for row in self.rows:
            t.add_row(*(row[i] for i in columns))
        return t

    def widths(self, columns: list, width: int) -> Optional[dict]:
        """The wrapped columns' widths that fit `columns` into `width` (each at least its longest
        word, the rest shared out up to its natural width), or None where they cannot fit."""
        room = width - self.overhead(len(columns)) - sum(self.least[i] for i in columns)
        if room < 0:
            return None
        widths = {}
        for i in columns:
            if self.wraps(i):
                extra = min(room, self.natural[i] - self.least[i])
                widths[i], room = self.least[i] + extra, room - extra
        return widths

    @staticmethod
    def overhead(n: int) -> int:
        """The characters a table of n columns spends beside its cells: an edge each side, two between columns."""
        return 2 + 2 * (n - 1)

    def column_groups(self, console: Console) -> Optional[list]:
        """[(columns, wrapped widths)]: the columns in groups, each led by the first column, that fit
        side by side; None where the first column and one other do not."""
        groups, current = [], [0]
        for i in range(1, len(self.header)):
            if self.widths(current + [i], console.width) is not None:
                current.append(i)
                continue
            if len(current) == 1 or self.widths([0, i], console.width) is None:
                return None
            groups.append(current)
            current = [0, i]
        return [(columns, self.widths(columns, console.width)) for columns in groups + [current]]

    def print_records(self, console: Console, title: str) -> None:
        """Each row as lines: its first cell, then `column  value` per other column (a cell's
        lines indented below each other); long lines run on rather than being cut."""
        names = [" ".join(col.split()) for col in self.header]
        indent = 2 + max(len(n) for n in names[1:]) + 2 if len(names) > 1 else 2
        lines = [title]
        for row in self.rows:
            lines += ["", " ".join(str(row[0]).split())]
            for name, cell in zip(names[1:], row[1:]):
                parts = str(cell).splitlines() or [""]
                lines.append(f"  {name:<{indent - 4}}  {parts[0]}".rstrip())
                lines += [" " * indent + part for part in parts[1:]]
        console.print("\n".join(lines), soft_wrap=True, markup=False)


def eval_table(result: dict) -> None:
    print_table(f"evaluation on {eval_images(result):,} {eval_split(result)} images ({eval_notes(result)})",
                EVAL_HEADER, eval_rows(result), legend=EVAL_LEGEND)


EVAL_LEGEND = {"program": "eager is the PyTorch checkpoint, the others its exported programs",
               "device": "what ran it"}


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
            out_console.print(f"{name} × eager: {v['ratio_refused']}")
    if any(v.get("simulated_by") for v in result["programs"].values()):
        out_console.print(SIMULATION_NOTE)
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
                         _pct(vela.get("utilisation")), _pct(vela.get("utilisation_total"))])
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
            macs, fast, plain = layer["macs"], layer["instructions"], layer.get("instructions_plain_c")
            estimated = estimates[i]["estimated_cycles"] if i < len(estimates) else None
            rows.append([_layer_name(layer["op"]), layer.get("kernels", ""), f"{macs:,}" if macs else "",
                         f"{fast:,}", f"{fast / macs:.2f}" if macs else "", "" if plain is None else f"{plain:,}",
                         f"{plain / macs:.2f}" if macs and plain is not None else "",
                         "" if estimated is None else f"{estimated:,}"])
        tables.append((f"{name} on {fw['board']}: per layer, the {fw.get('kernels', '?')} build (kernels: the "
                       "variant each call ran with) and plain C (\"C\")", rows))
    return tables


def markdown_cell(value) -> str:
    """A table cell's text: a '|' inside it would end the cell, a newline the row."""
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(header: list, rows: list) -> str:
    lines = ["| " + " | ".join(map(markdown_cell, header)) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(map(markdown_cell, row)) + " |" for row in rows]
    return "\n".join(lines)


def data_line(data: dict) -> str:
    sizes = data["per_class"]
    per_class = ", ".join(f"{sizes[split]:,} {split}" for split in ("train", "val", "test", "benchmark")
                          if split in sizes)
    return f"{data['images']:,} synthetic images (seed {data['seed']}; per class: {per_class})"


def split_images(data: dict, split: str):
    """A split's image count from what data.json records, or None."""
    return ((data or {}).get("splits") or {}).get(split, {}).get("images")


def trained_on(training: dict) -> str:
    """What the run's training recorded of its machine (its bits depend on it), or nothing for older runs."""
    m = training.get("machine")
    if not m:
        return ""
    return (f" Trained on {m['cpu']}, torch {m['torch']} with its {m['torch_cpu_capability']} kernels on "
            f"{m['threads']} threads: the same seed gives the same bits where these agree.")


def arch_line(arch) -> str:
    if not arch:
        return ""
    return (f"Architecture `{arch['name']}` (`{arch['spec']}`: {arch['macs'] / 1e6:.2f} M MACs, "
            f"{arch['params']:,} parameters). ")


def npu_layers_section(out: Path, bench: dict, rel) -> list:
    """Where each Ethos-U program's time goes, layer by layer (Vela's per-layer estimate)."""
    from .plots import plot_npu_layers
    profiles = {name: v["vela"] for name, v in bench["programs"].items() if v.get("vela", {}).get("layers")}
    if not profiles:
        return []
    path = out / "run" / "npu_layers.png"
    plot_npu_layers(profiles, path)
    lines = []
    for name, vela in profiles.items():
        slowest = max(vela["layers"], key=lambda layer: layer["total_cycles"])
        waiting = 1 - vela["npu_cycles"] / vela["total_cycles"] if vela["total_cycles"] else 0.0
        lines.append(f"- {name}: {waiting:.0%} of the cycles wait on memory; the slowest operation, "
                     f"{slowest['op']} ({slowest['name']}), takes {slowest['total_cycles'] / vela['total_cycles']:.0%}.")
    return ["Per layer: compute (NPU cycles) and memory waits. Utilisation (NPU) is MACs over the NPU "
            "cycles' capacity; (all) over all cycles, memory waits included.", "\n".join(lines),
            f"![NPU layers]({rel(path)})"]


def write_report(out: Path, summary: dict) -> None:
    """DIR/report.md: what was built, how well it does, how fast, with the plots."""
    rel = lambda p: Path(p).relative_to(out).as_posix()  # noqa: E731
    ev, be = summary["eval"], summary["bench"]
    epochs = len(summary["training"]["epochs"])
    parts = [
        "# TinyRPS report",
        f"Machine: {machine_line()}. Whole pipeline: {summary['seconds']['total']:.0f} s "
        f"({', '.join(f'{k} {v:.0f} s' for k, v in summary['seconds'].items() if k != 'total')}).",
        "## Data",
        f"{data_line(summary['data'])}, rendered at {be['render_images_per_s']:,.0f} images/s.",
        f"![training images]({rel(out / 'data' / 'preview.png')})",
        "## Training",
        arch_line(summary.get("arch")) +
        f"{epochs} epoch{'s' if epochs != 1 else ''}, the last epoch's weights kept: validation accuracy "
        f"{entry_accuracy(summary['training'], split_images(summary['data'], 'val'), key='val_accuracy')}"
        "." + trained_on(summary["training"]),
        f"![training curves]({rel(out / 'run' / 'curves.png')}) ![confusion matrix]({rel(out / 'run' / 'confusion.png')})",
        "## Accuracy",
        f"{_sentence(eval_split(ev))} split, {eval_images(ev):,} images. {_sentence(eval_notes(ev))}.",
        markdown_table(MARKDOWN_EVAL_HEADER, eval_rows(ev, screen=False)),
        "## Speed and size",
        f"Median latency of single-image inferences, measured in one process: each program runs {be['rounds']} "
        f"warmed-up blocks (at least {be['runs'] // be['rounds']} calls and {be['block_s']} s each), the programs "
        "taking turns block by block so that bursts of load on the machine hit every program alike. The MCU, "
        "over its serial link, takes fewer runs.",
        markdown_table(BENCH_HEADER, bench_rows(be)),
    ]
    if any(v.get("simulated_by") for v in be["programs"].values()):
        parts.append(SIMULATION_NOTE)
    parts.append(f"![latency]({rel(out / 'run' / 'latency.png')})")
    vela, firmware = vela_rows(be), firmware_rows(be)
    if vela:
        parts += ["### Ethos-U (Vela's performance estimate)", markdown_table(VELA_HEADER, vela)]
        parts += npu_layers_section(out, be, rel)
        from .system_layers import markdown_parts
        parts += markdown_parts(be)
    if firmware:
        parts += ["### Cortex-M firmware on emulated boards",
                  f"Each program on its board in QEMU, measured by the measure stage on the same images: {FIRMWARE_UNITS} "
                  f"(one image, `play --device mcu`, median). {QEMU_COUNTS}.",
                  markdown_table(FIRMWARE_HEADER, firmware)]
        for title, rows in layer_tables(be):
            parts += [f"#### {title}", markdown_table(LAYER_HEADER, rows)]
    if summary.get("skipped"):
        parts += ["## Not built", "\n".join(f"- {k}: {v}" for k, v in summary["skipped"].items())]
    if summary.get("game"):
        rows = [[g["target"], g["device"], g["you"], f"{g['you_pred']} ({g['you_conf']:.1%})", g["opponent"],
                 f"{g['opp_pred']} ({g['opp_conf']:.1%})", g["outcome"]] for g in summary["game"]]
        parts += ["## Game rounds", markdown_table(["program", "device", "you", "model reads", "opponent",
                                                    "model reads", "outcome"], rows)]
    from .plots import plot_latency
    plot_latency(device_rows(be), out / "run" / "latency.png")
    atomic_write_bytes(out / "report.md", ("\n\n".join(parts) + "\n").encode())


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


SWEEP_HEADER = ["NPU", "system config", "ms", "SRAM", "DRAM", "flash", "util."]
SWEEP_LEGEND = {"NPU": "the Ethos-U and its MAC units", "system config": "Vela's memory system",
                "ms": "Vela's estimate of one inference", "SRAM": "used, KiB", "DRAM": "used, KiB",
                "flash": "used, KiB", "util.": "MACs over (all cycles x MAC units)"}


def _kib(n: int) -> str:
    return f"{n / 1024:,.0f} KiB" if n else "0"


def sweep_rows(configs: list) -> list:
    return [[c["accelerator"].removeprefix("ethos-"), c["system_config"].removeprefix("Ethos_"),
             f"{c['inference_ms']:.3f}", _kib(c["sram_bytes"]), _kib(c["dram_bytes"]), _kib(c["flash_bytes"]),
             _pct(c["utilisation_total"])] for c in configs]


def npu_sweep_table(result: dict, written: dict) -> None:
    """The sweep on stdout: a table per memory mode of every accepted configuration, then the
    refusals, grouped by Vela's reason."""
    from ..measure.npu_sweep import refusal_groups
    out_console.print(f"Vela {result['vela_version']}'s estimate of {result['run']} for every Ethos-U configuration: "
                      f"{len(result['configs'])} of {result['combinations']} combinations accepted. "
                      "ms: one inference; util.: MACs / (all cycles x MAC units)")
    for mode in dict.fromkeys(c["memory_mode"] for c in result["configs"]):
        configs = [c for c in result["configs"] if c["memory_mode"] == mode]
        weights = "/".join(dict.fromkeys(c.get("weights_in", "?") for c in configs))
        print_table(f"memory mode {mode} (weights in {weights})", SWEEP_HEADER, sweep_rows(configs),
                    legend=SWEEP_LEGEND)
    for reason, entries in refusal_groups(result["refused"]).items():
        out_console.print(f"refused ({sum(len(e['accelerators']) * len(e['memory_modes']) for e in entries)}): "
                          f"{reason}")
        for e in entries:
            accelerators = ("every accelerator" if len(e["accelerators"]) == len(result["accelerators"])
                            else ", ".join(e["accelerators"]))
            out_console.print(f"  {e['system_config']} with {', '.join(e['memory_modes'])}: {accelerators}")
    out_console.print(f"plot: {written['plot']}; every figure: {written['json']}")


TUNE_HEADER = ["candidate", "val", "NPU ms", "SRAM", "bytes", "MMAC", "front"]
TUNE_LEGEND = {"candidate": "the trial's number and network", "NPU ms": "Vela's estimate of one inference",
               "front": "pick: the network chosen; final: a finalist; yes: on the Pareto front; the title says the rest"}


def tune_rows(result: dict) -> list:
    from ..network.arch import count_macs
    front = {c["number"] for c in result["pareto"]}
    best = (result.get("best") or {}).get("number")
    finalists = {f["number"] for f in result.get("finalists", [])}
    rows = []
    for c in result["candidates"]:
        name = f"#{c['number']} {c.get('arch') or '?'}"
        if c["state"] == "PRUNED":     # its NPU estimate before training: see tinyrps.tune.settings.LATENCY_SLACK
            rows.append([name, "not trained", f"{c['npu_ms']:.4f}", f"{c['sram_bytes'] / 1024:.0f}",
                         f"{c['program_bytes']:,}", f"{count_macs(c['arch']) / 1e6:.1f}", "slow"])
            continue
        if c["state"] != "COMPLETE":
            rows.append([name, "failed", "", "", "", "", ""])
            continue
        mark = "pick" if c["number"] == best else ("final" if c["number"] in finalists else
                                                   "yes" if c["number"] in front else "")
        if c.get("feasible") is False:
            mark = "over"
        # units live in the title: with the longest spec of the space the table fits 80 columns
        rows.append([name, entry_accuracy(c, key="val_accuracy", prefix="val_", cell=True), f"{c['npu_ms']:.4f}",
                     f"{c['sram_bytes'] / 1024:.0f}", f"{c['program_bytes']:,}", f"{count_macs(c['arch']) / 1e6:.1f}",
                     mark])
    return rows


def finalists_line(finalists: list) -> None:
    """The finalists, each trained like the pick, and what they read of the selection split."""
    from ..tune.settings import SELECT_ACCURACY
    out_console.print(f"finalists, trained like the pick, on the selection split (npu-ref; the pick: the fastest "
                      f"at {SELECT_ACCURACY * 100:g} %, else the most accurate): "
                      + "; ".join(f"#{f['number']} {f['arch']} ({f['npu_ms']:.4f} ms) "
                                  f"{entry_accuracy(f, key='select_accuracy', prefix='select_')}" for f in finalists))


def tune_table(result: dict, out) -> None:
    """The tuner's candidates on stdout, then the pick, its test accuracy, and each seed's accuracy
    on the benchmark split (results made before the pick was checked there: on the test split)."""
    print_table(f"candidates ({len(result['candidates'])}; Pareto front: {len(result['pareto'])}); val: int8 accuracy "
                "on npu-ref, the images it read right and its 95 % interval; SRAM: KiB on the NPU; bytes: the "
                "program; MMAC: millions of multiply-accumulates per inference; over: beyond a limit; slow: not "
                "trained, its NPU estimate before training over the limit",
                TUNE_HEADER, tune_rows(result), text_columns=1, legend=TUNE_LEGEND)
    final = result.get("final")
    if result.get("finalists"):
        finalists_line(result["finalists"])
    if final:
        epochs = f"{final['epochs']} epoch{'s' if final['epochs'] != 1 else ''}"
        out_console.print(f"pick: {final['arch']}, retrained for {epochs}: test accuracy "
                          f"{entry_accuracy(final, key='test_accuracy', prefix='test_')} on npu-ref, "
                          f"NPU {final['npu_ms']:.4f} ms, SRAM "
                          f"{final['sram_bytes'] / 1024:.1f} KiB, program {final['program_bytes']:,} B, "
                          f"Cortex-M55 {final['mcu_instructions']:,} instructions")
        seeds = final.get("seeds", [])
        split = "benchmark" if seeds and all("benchmark_accuracy" in entry for entry in seeds) else "test"
        if len(seeds) > 1 or split == "benchmark":
            key = f"{split}_accuracy"
            worst = min(seeds, key=lambda entry: entry[key])
            out_console.print(f"{split} accuracy on npu-ref by training seed: "
                              + "; ".join(f"{entry['seed']}: {entry_accuracy(entry, key=key, prefix=split + '_')}"
                                          for entry in seeds)
                              + (f"; worst: seed {worst['seed']}" if len(seeds) > 1 else ""))
        if final.get("teacher"):
            teacher = final["teacher"]
            out_console.print(f"distilled from {teacher['run']} ({teacher['arch']}, a {teacher['alpha']:g}, "
                              f"T {teacher['temperature']:g})")
    elif not result["pareto"]:
        out_console.print("no candidate meets the limits: relax --max-npu-ms / --max-program-bytes")
    out_console.print(f"front and candidates: {Path(out) / 'tune.json'}; plot: {Path(out) / 'tune.png'}")
