"""Figures in the documentation come from the default run's descriptors and measurements (docs/figures/), generated."""
from pathlib import Path

from script_module import load_script

REPO = Path(__file__).resolve().parents[1]


def doc_figures():
    return load_script("doc_figures")


def test_the_documentation_agrees_with_the_figures():
    assert doc_figures().main(["--check"]) == 0, "run scripts/doc_figures.py"


def test_every_block_is_closed_and_known():
    figures = doc_figures()
    for path in figures.DOCUMENTS:
        text = path.read_text()
        names = [m["name"] for m in figures.BLOCK.finditer(text)]
        assert text.count("<!-- figures:") == text.count("<!-- /figures:") == len(names), path
        assert set(names) <= set(figures.BLOCKS), path


def test_a_stale_block_is_rewritten_from_the_figures():
    figures = doc_figures()
    loaded = figures.load_figures(figures.FIGURES)
    fw = loaded["cortex-m33"]["firmware"]
    stale = f"before\n{figures.BEGIN.format(name='firmware-boards')}\n| 1 | 2 |\n" \
            f"{figures.END.format(name='firmware-boards')}\nafter\n"
    text = figures.rewrite(stale, loaded)
    assert text.startswith("before\n") and text.endswith("\nafter\n") and "| 1 | 2 |" not in text
    assert f"{fw['instructions_per_inference']:,}" in text and f"{fw['flash_bytes']:,} B" in text
    assert figures.rewrite(text, loaded) == text


def test_the_figures_are_of_one_run_and_each_measurement_of_its_program():
    from tinyrps.hardware import descriptor
    loaded = doc_figures().load_figures(REPO / "docs" / "figures")
    described = {name: descriptor.from_json(f["descriptor"], REPO / "docs" / "figures" / f"{name}.json")
                 for name, f in loaded.items()}
    assert len({d.origin.checkpoint_sha256 for d in described.values()}) == 1
    for name, f in loaded.items():
        assert f["program_sha256"] == described[name].sha256 and f["target"] == name


def test_the_accuracy_figures_are_of_that_run_and_its_programs():
    figures = doc_figures()
    loaded = figures.load_figures(figures.FIGURES)
    evaluations = figures.load_evaluations()
    checkpoint = {f["descriptor"]["origin"]["checkpoint_sha256"] for f in loaded.values()}
    assert {e["checkpoint_sha256"] for e in evaluations.values()} == checkpoint
    for e in evaluations.values():
        for name, v in e["programs"].items():
            if name in loaded:
                assert v["program_sha256"] == loaded[name]["program_sha256"], name
    test, *benchmark = evaluations.values()
    assert test.get("split", "test") == "test" and {b["split"] for b in benchmark} == {"benchmark"}
    assert len({b["split_sha256"] for b in benchmark}) == 1
    assert set(test["programs"]) == {name for b in benchmark for name in b["programs"]}
