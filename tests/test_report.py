"""The Markdown report and the latency plot: tables that render, text that reads as text."""
import pytest

from tinyrps.interfaces.report.markdown import write_report
from tinyrps.interfaces.report.tables import markdown_table

VELA = {"accelerator": "ethos-u85-128", "inference_ms": 0.215, "inferences_per_s": 4660, "sram_bytes": 43110,
        "utilisation": 0.454}
FIRMWARE = {"flash_bytes": 481576, "ram_bytes": 71208, "arena_bytes": 42048,
            "instructions_per_inference": 25579563, "instructions_per_mac": 3.31}


def summary_of_a_run() -> dict:
    """A summary as the main job writes it, with a program of every family."""
    return {
        "seconds": {"data": 3.0, "train": 20.0, "total": 23.0},
        "data": {"images": 10500, "seed": 0, "per_class": {"train": 3000, "val": 300, "test": 200},
                 "splits": {"val": {"images": 600}}},
        "training": {"epochs": [{"epoch": 1}, {"epoch": 2}], "val_accuracy": 0.995},
        "eval": {"test_images": 600, "programs": {
            "eager": {"accuracy": 0.9967, "device": "eager"},
            "int8-xnnpack": {"accuracy": 0.9983, "device": "executorch", "agreement": 0.9983, "max_abs_logit_diff": 8.8},
            "ethos-u85-128": {"accuracy": 0.9983, "device": "npu-ref", "agreement": 1.0,
                              "agreement_with": "int8-xnnpack", "max_abs_logit_diff": 8.8},
            "cortex-m55": {"accuracy": 0.9967, "device": "mcu", "agreement": 1.0, "max_abs_logit_diff": 8.9,
                           "bit_exact": True, "mismatches": 0, "images": 600,
                           "reference": "ExecuTorch cortex_m Python operators"}}},
        "bench": {"rounds": 10, "runs": 200, "block_s": 0.1, "render_images_per_s": 8140.0,
                  "eager_size_bytes": 120000, "programs": {
                      "eager": {"device": "eager", "latency_ms": 0.45, "runs": 200},
                      "int8-xnnpack": {"device": "executorch", "latency_ms": 0.052, "runs": 2000, "ratio_to_eager": 0.114,
                                       "size_bytes": 437260},
                      "ethos-u85-128": {"device": "npu-ref", "latency_ms": 14.8, "runs": 200, "ratio_to_eager": 32.9,
                                        "size_bytes": 405696, "simulated_by": "the TOSA reference model",
                                        "vela": VELA},
                      "cortex-m55": {"device": "mcu", "latency_ms": 97.0, "runs": 20, "ratio_to_eager": 216.0,
                                     "size_bytes": 437820, "simulated_by": "QEMU", "firmware": FIRMWARE}}},
        "game": [{"target": "int8-xnnpack", "device": "executorch", "you": "rock", "you_pred": "rock", "you_conf": 0.99,
                  "opponent": "paper", "opp_pred": "paper", "opp_conf": 0.98, "outcome": "lose"}],
        "skipped": {},
    }


def test_a_pipe_inside_a_cell_is_escaped(markdown_tables):
    table = markdown_tables(markdown_table(["a", "max |Δlogit|"], [["x", "a|b"]]))[0]
    assert table[0] == ["a", r"max \|Δlogit\|"] and table[2] == ["x", r"a\|b"]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    (out / "run").mkdir()
    write_report(out, summary_of_a_run())
    return out, (out / "report.md").read_text()


def test_every_table_renders(report, markdown_tables):
    _, text = report
    headers = [table[0] for table in markdown_tables(text, check=True)]
    assert any(r"max \|Δlogit\|" in h for h in headers)


def test_the_data_line_reads_as_text(report):
    _, text = report
    line = next(line for line in text.splitlines() if "synthetic images" in line)
    assert "{" not in line and "'" not in line
    assert "3,000 train, 300 val, 200 test" in line


def test_simulated_rows_say_their_times_are_not_hardware_times(report, markdown_tables):
    _, text = report
    speed = next(t for t in markdown_tables(text) if "median ms" in t[0])
    timed_on = {row[0]: row[speed[0].index("timed on")] for row in speed[2:]}
    assert timed_on["int8-xnnpack"] == timed_on["eager"] == "this CPU"
    assert "TOSA reference model" in timed_on["ethos-u85-128"] and "not hardware time" in timed_on["ethos-u85-128"]
    assert "QEMU" in timed_on["cortex-m55"] and "not hardware time" in timed_on["cortex-m55"]
    assert "not the hardware" in text


def test_bit_exact_names_its_reference(report):
    _, text = report
    assert "int8 bit-exact: the device's int8 outputs equal" in text
    assert "ExecuTorch cortex_m Python operators" in text


def test_latency_labels_stay_inside_the_plot():
    from tinyrps.interfaces.plots import latency_figure
    rows = [{"name": "eager (eager)", "latency_ms": 0.45},
            {"name": "int8-xnnpack (executorch)", "latency_ms": 0.01, "ratio_to_eager": 0.022},
            {"name": "a-very-long-program-name (mcu, simulated)", "latency_ms": 9870.0, "ratio_to_eager": 21933.0}]
    fig = latency_figure(rows)
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    frame, page = ax.get_window_extent(renderer), fig.bbox
    for text in ax.texts:
        box = text.get_window_extent(renderer)
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1, text.get_text()
    for label in ax.get_yticklabels() + [ax.xaxis.label]:
        box = label.get_window_extent(renderer)
        assert page.x0 <= box.x0 and box.x1 <= page.x1 and page.y0 <= box.y0 and box.y1 <= page.y1, label.get_text()


def test_each_accuracy_carries_its_count_and_interval(report, markdown_tables):
    _, text = report
    accuracy = next(t for t in markdown_tables(text) if "agreement" in t[0])
    column = accuracy[0].index("accuracy (correct/images, 95 % CI)")
    cells = {row[0]: row[column] for row in accuracy[2:]}
    # an evaluation written before the counts were stored: counted again from its image count
    assert cells["eager"] == "99.67 % (598/600, 95 % CI 98.8–99.9 %)"
    assert cells["ethos-u85-128"] == "99.83 % (599/600, 95 % CI 99.1–100.0 %)"
    assert "Test split, 600 images" in text
    assert "the last epoch's weights kept: validation accuracy 99.50 % (597/600, 95 % CI 98.5–99.8 %)" in text


def screen_text(show) -> str:
    """What a table printed on an 80-column terminal looks like."""
    import io

    from rich.console import Console

    from tinyrps.interfaces.report import tables
    console, tables.out_console = tables.out_console, Console(width=80, file=io.StringIO(), highlight=False)
    try:
        show()
        return tables.out_console.file.getvalue()
    finally:
        tables.out_console = console


BENCHMARK_EVAL = {"split": "benchmark", "images": 3000, "programs": {
    "eager": {"accuracy": 2990 / 3000, "correct": 2990, "images": 3000, "device": "eager"},
    "ethos-u85-128": {"accuracy": 2987 / 3000, "correct": 2987, "images": 3000, "device": "npu-ref",
                      "agreement": 0.9987, "max_abs_logit_diff": 11.9219},
    "cortex-m55": {"accuracy": 2991 / 3000, "correct": 2991, "images": 3000, "device": "native", "agreement": 0.999,
                   "max_abs_logit_diff": 11.9219, "bit_exact": True, "mismatches": 0, "reference": "the reference"}}}


def test_the_eval_table_shows_count_and_interval_within_80_columns():
    from tinyrps.interfaces.report.accuracy import eval_table
    text = screen_text(lambda: eval_table(BENCHMARK_EVAL))
    words = " ".join(text.split())
    assert "evaluation on 3,000 benchmark images" in words and "every benchmark image" in words
    assert "…" not in text and max(map(len, text.splitlines())) <= 80
    for part in ("99.57 %", "2,987/3,000", "99.3–99.7 %", "yes"):
        assert part in text, part


def test_the_tuners_table_and_lines_show_count_and_interval():
    from types import SimpleNamespace

    from tinyrps.interfaces.report.search import tune_table
    from tinyrps.tune.trials import candidate_line
    candidate = {"number": 0, "state": "COMPLETE", "arch": "c16-p-c32-p-c64-p3-f128", "val_accuracy": 893 / 900,
                 "val_correct": 893, "val_images": 900, "npu_ms": 0.0574, "sram_bytes": 21000,
                 "program_bytes": 73424, "mcu_instructions": 625000}
    old = {**candidate, "number": 1}
    del old["val_correct"], old["val_images"]        # a tune.json written before the counts were stored
    seeds = [{"seed": 0, "test_accuracy": 597 / 600, "test_correct": 597, "test_images": 600},
             {"seed": 1, "test_accuracy": 596 / 600, "test_correct": 596, "test_images": 600}]
    final = {**candidate, "epochs": 10, "test_accuracy": 597 / 600, "test_correct": 597, "test_images": 600,
             "seeds": seeds, "test_accuracy_worst": 596 / 600}
    result = {"candidates": [candidate, old], "pareto": [candidate], "best": candidate, "final": final}
    text = screen_text(lambda: tune_table(result, "tune"))
    assert "…" not in text and max(map(len, text.splitlines())) <= 80
    assert "893/900" in text and "98.4–99.6 %" in text
    assert "test accuracy 99.50 % (597/600, 95 % CI 98.5–99.8 %) on npu-ref" in " ".join(text.split())
    assert "1: 99.33 % (596/600, 95 % CI 98.3–99.7 %); worst: seed 1" in " ".join(text.split())
    checked = [{**entry, "benchmark_accuracy": correct / 3000, "benchmark_correct": correct, "benchmark_images": 3000}
               for entry, correct in zip(seeds, (2993, 2983))]      # each seed checked on the benchmark split
    text = screen_text(lambda: tune_table({**result, "final": {**final, "seeds": checked}}, "tune"))
    assert "benchmark accuracy on npu-ref by training seed: 0: 99.77 % (2,993/3,000, 95 % CI" in " ".join(text.split())
    assert "1: 99.43 % (2,983/3,000, 95 % CI 99.1–99.6 %); worst: seed 1" in " ".join(text.split())
    text = screen_text(lambda: tune_table({**result, "final": {**final, "seeds": checked[:1]}}, "tune"))
    assert "by training seed: 0: 99.77 % (2,993/3,000" in " ".join(text.split()) and "worst" not in text
    trial = SimpleNamespace(number=0, state=SimpleNamespace(name="COMPLETE"), user_attrs={**candidate, "seconds": 12})
    assert "val 99.22 % (893/900, 95 % CI 98.4–99.6 %), NPU 0.0574 ms" in candidate_line(trial)


def a_benchmark() -> dict:
    """summary_of_a_run's benchmark with every column filled: spreads, a ratio refused, a cycle estimate."""
    bench = summary_of_a_run()["bench"]
    programs = bench["programs"]
    for name, iqr in (("eager", 0.0132), ("int8-xnnpack", 0.0009), ("ethos-u85-128", 0.4), ("cortex-m55", 1.2)):
        programs[name]["iqr_ms"] = iqr
    programs["ethos-u85-128"].update(ratio_to_eager=None, ratio_refused="eager's spread (IQR 53% of its median) is "
                                     "larger than the ratio (0.114): run the benchmark again on a quieter machine")
    programs["cortex-m55"]["cycles"] = {"estimated_ms": 0.123, "uncertainty": 0.2, "clock_hz": 160e6, "layers": [],
                                        "estimated_cycles_per_inference": 19.7e6}
    programs["cortex-m55"]["firmware"] = {**FIRMWARE, "board": "mps3-an547",
                                          "instructions_per_inference_plain_c": 60_000_000,
                                          "instructions_per_mac_plain_c": 7.9}
    return bench


@pytest.mark.parametrize("width", [80, 60, 40])
def test_the_bench_tables_keep_every_figure_whole_and_say_what_each_column_means(width):
    """On a console of `width` columns that is no terminal (a log): no cell, figure or header cut, no
    line past the width but for a record's own long line, every column explained."""
    import io

    from rich.console import Console

    from tinyrps.interfaces.report import speed as report, tables
    console, tables.out_console = tables.out_console, Console(width=width, file=io.StringIO(), highlight=False)
    try:
        report.bench_table(a_benchmark())
        text = tables.out_console.file.getvalue()
    finally:
        tables.out_console = console
    assert "…" not in text
    words = " ".join(text.split())
    bench_rows = report.bench_rows(a_benchmark())
    cells = [cell for rows in ([row[:2] + row[3:] for row in bench_rows], report.vela_rows(a_benchmark()),
                               report.firmware_rows(a_benchmark())) for row in rows for cell in row]
    for cell in cells:           # the cells that never wrap: whole on one line
        assert cell in text, (width, cell)
    for row in bench_rows:       # "timed on" wraps, word by word
        assert all(word in words.split() for word in row[2].split()), (width, row[2])
    for header, legend in ((report.BENCH_HEADER, report.BENCH_LEGEND), (report.VELA_HEADER, report.VELA_LEGEND),
                           (report.FIRMWARE_HEADER, report.FIRMWARE_LEGEND)):
        for column in header[1:]:
            assert f"{column}: {legend[column]}" in words, column
    assert "× eager: median ms over eager's; \"spread\" where eager's IQR" in words
    assert "ethos-u85-128 × eager: eager's spread (IQR 53% of its median) is larger than the ratio" in words
