"""`tinyrps classify` as people use it: several files and folders, a bad file among them,
a page without a letter, --show, and the JSON contract."""
import json

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from tinyrps.network.model import LABELS


def bold_letter(letter: str, path, transparent: bool = False) -> None:
    import matplotlib
    from pathlib import Path
    ttf = Path(matplotlib.__file__).parent / "mpl-data" / "fonts" / "ttf" / "DejaVuSans-Bold.ttf"
    img = Image.new("RGBA", (200, 200), (0, 0, 0, 0) if transparent else (255, 255, 255, 255))
    ImageDraw.Draw(img).text((100, 100), letter, font=ImageFont.truetype(str(ttf), 130), fill=(0, 0, 0, 255),
                             anchor="mm")
    img.save(path)


@pytest.fixture
def pictures(tmp_path):
    """A folder of three letters (one a transparent PNG) with a text file beside them."""
    folder = tmp_path / "moves"
    folder.mkdir()
    bold_letter("S", folder / "c-scissors.png")
    bold_letter("R", folder / "a-rock.png", transparent=True)
    bold_letter("P", folder / "b-paper.png")
    (folder / "notes.txt").write_text("not a picture")
    return folder


def test_json_contract(cli, exported, pictures):
    model = exported("int8-xnnpack")
    res = cli("classify", "--model", model, pictures / "a-rock.png", pictures / "b-paper.png", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["model"] == str(model) and out["device"] == "executorch" and "xnnpack" in out["runs_on"].lower()
    assert [r["path"] for r in out["results"]] == [str(pictures / "a-rock.png"), str(pictures / "b-paper.png")]
    for r in out["results"]:
        assert r["letter_found"] is True
        assert set(r["probabilities"]) == set(LABELS) == set(r["logits"])
        logits = np.array([r["logits"][k] for k in LABELS])
        softmax = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
        assert np.allclose(softmax, [r["probabilities"][k] for k in LABELS], atol=1e-6)
        assert r["label"] == max(r["probabilities"], key=r["probabilities"].get)
        assert r["confidence"] == pytest.approx(max(r["probabilities"].values()))
        assert "seen" not in r


def test_folders_expand_to_their_pictures_in_name_order(cli, exported, pictures):
    res = cli("classify", "--model", exported("int8-xnnpack"), pictures, "--json")
    assert res.returncode == 0, res.stderr
    results = json.loads(res.stdout)["results"]
    assert [r["path"] for r in results] == [str(pictures / n) for n in ("a-rock.png", "b-paper.png", "c-scissors.png")]


def test_the_programs_read_the_pictures(cli, exported, pictures):
    for target in ("int8-xnnpack", "fp32-xnnpack"):
        results = json.loads(cli("classify", "--model", exported(target), pictures, "--json").stdout)["results"]
        assert [r["label"] for r in results] == ["rock", "paper", "scissors"], target


def test_a_bad_file_gets_an_error_entry_and_the_rest_is_classified(cli, exported, pictures, tmp_path):
    broken = tmp_path / "broken.png"
    broken.write_text("not a picture")
    empty_folder = tmp_path / "empty"
    empty_folder.mkdir()
    res = cli("classify", "--model", exported("int8-xnnpack"), pictures / "a-rock.png", broken,
              tmp_path / "missing.jpg", empty_folder, pictures / "c-scissors.png", "--json")
    assert res.returncode == 2
    results = json.loads(res.stdout)["results"]
    assert [set(r) for r in results[1:4]] == [{"path", "error"}] * 3
    assert "not an image" in results[1]["error"] and "not found" in results[2]["error"]
    assert "without pictures" in results[3]["error"]
    assert results[0]["label"] and results[4]["label"]
    errors = res.stderr.strip().splitlines()
    assert len(errors) == 3 and all(line.startswith("tinyrps: error: ") for line in errors)
    assert "Traceback" not in res.stderr


def test_only_bad_files_exit_2_without_opening_the_model(cli, exported, tmp_path):
    text = tmp_path / "move.png"
    text.write_text("rock")
    res = cli("classify", "--model", exported("int8-xnnpack"), text)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.strip().splitlines() == [f"tinyrps: error: {text} is not an image Pillow can read "
                                               "(use PNG, JPEG, WebP, TIFF, GIF or BMP)"]


@pytest.mark.slow
def test_a_blank_page_has_no_letter_in_words_and_in_json(cli, exported, tmp_path):
    blank = tmp_path / "blank.png"
    Image.new("L", (300, 200), 250).save(blank)
    model = exported("int8-xnnpack")
    text = cli("classify", "--model", model, blank)
    assert text.returncode == 0, text.stderr
    assert f"{blank}: no letter found" in text.stdout and "rock" in text.stdout and "%" in text.stdout
    r = json.loads(cli("classify", "--model", model, blank, "--json").stdout)["results"][0]
    assert r["label"] is None and r["confidence"] is None and r["letter_found"] is False
    assert sum(r["probabilities"].values()) == pytest.approx(1.0)


@pytest.mark.slow
def test_show_prints_what_the_model_saw(cli, exported, pictures):
    res = cli("classify", "--model", exported("int8-xnnpack"), pictures / "b-paper.png", "--show")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].startswith(f"{pictures / 'b-paper.png'}: ")
    art = lines[1:]
    assert len(art) == 14 and all(len(line) == 4 + 28 for line in art)
    assert any("@" in line for line in art) and art[0].strip() == ""     # bright letter, dark border
    seen = json.loads(cli("classify", "--model", exported("int8-xnnpack"), pictures / "b-paper.png",
                          "--show", "--json").stdout)["results"][0]["seen"]
    assert [line.strip() for line in seen] == [line.strip() for line in art]
