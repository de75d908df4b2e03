import hashlib
import json

import numpy as np
import pytest

from tinyrps import data
from tinyrps.network import letters
from tinyrps.infra.errors import UserError


def digest(arr) -> str:
    return hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest()


def test_same_seed_gives_byte_identical_arrays():
    a_images, a_labels = data.make_split("train", 40, seed=7)
    b_images, b_labels = data.make_split("train", 40, seed=7)
    assert digest(a_images) == digest(b_images)
    assert digest(a_labels) == digest(b_labels)


def test_other_seed_or_split_gives_other_images():
    base = data.make_split("train", 20, seed=7)[0]
    assert digest(base) != digest(data.make_split("train", 20, seed=8)[0])
    assert digest(base) != digest(data.make_split("val", 20, seed=7)[0])
    assert digest(data.make_split("val", 20, seed=7)[0]) != digest(data.make_split("test", 20, seed=7)[0])


def test_split_shapes_types_and_balance():
    images, labels = data.make_split("test", 25, seed=0)
    assert images.shape == (75, 28, 28) and images.dtype == np.uint8
    assert labels.dtype == np.int64
    assert np.bincount(labels).tolist() == [25, 25, 25]


def test_images_vary_in_the_ways_the_renderer_promises():
    images, _ = data.make_split("train", 100, seed=0)
    means = images.reshape(len(images), -1).mean(1)
    assert means.std() > 10                       # brightness, inversion
    assert (means > 128).mean() > 0.03            # some inverted (bright background)
    assert len(letters.glyphs()) >= 5                # several fonts


def test_fonts_come_from_python_packages_only():
    for path in letters.font_files():
        assert path is None or "site-packages" in path or ".venv" in path


def test_saved_split_round_trips(tmp_path):
    images, labels = data.make_split("val", 5, seed=1)
    entry = data.save_split(tmp_path / "val.npz", images, labels)
    assert entry == {"file": "val.npz", "images": 15, "sha256": hashlib.sha256((tmp_path / "val.npz").read_bytes()).hexdigest()}
    (tmp_path / "data.json").write_text(json.dumps({"splits": {"val": entry}}))
    back_images, back_labels = data.load_split(tmp_path, "val")
    assert np.array_equal(images, back_images) and np.array_equal(labels, back_labels)
    assert back_labels.dtype == np.int64
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.json", "val.npz"]     # no temporary file left


def test_the_same_arrays_give_the_same_file(tmp_path):
    """No time of writing in the archive: a data set's checksums follow from its seed and sizes."""
    images, labels = data.make_split("test", 4, seed=2)
    a = data.save_split(tmp_path / "a.npz", images, labels)
    b = data.save_split(tmp_path / "b.npz", images.copy(), labels.copy())
    assert a["sha256"] == b["sha256"]


def test_a_ctrl_c_while_a_member_opens_stops_the_writing_as_a_ctrl_c(tmp_path, monkeypatch):
    """Ctrl-C inside ZipFile.open (its compressor made, the member not yet returned) used to leave the
    archive mid-member, and its close raised a ValueError in place of the KeyboardInterrupt: the
    command then ended as a bug (exit 1) rather than stopped (130)."""
    import signal
    import zipfile
    images, labels = data.make_split("val", 2, seed=1)
    compressor = zipfile._get_compressor

    def interrupted(*args):
        signal.raise_signal(signal.SIGINT)      # a real signal, where the stop test saw it land
        return compressor(*args)
    monkeypatch.setattr(zipfile, "_get_compressor", interrupted)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            data.save_split(tmp_path / "val.npz", images, labels)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert list(tmp_path.iterdir()) == []        # nothing half-written left


def test_a_split_without_data_json_is_refused(tmp_path):
    images, labels = data.make_split("val", 2, seed=1)
    data.save_split(tmp_path / "val.npz", images, labels)
    with pytest.raises(UserError, match="has no data.json"):
        data.load_split(tmp_path, "val")


def test_missing_split_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="tinyrps data --out"):
        data.load_split(tmp_path, "train")


CLEAN = dict(foreground=(255, 255), background=(0, 0), noise_sigma=(0.0, 0.0), blur_px=(0.0, 0.0), invert_prob=0.0)


def ink_boxes(images: np.ndarray) -> np.ndarray:
    """[N, 4] (height, width, centre row, centre column) of each clean image's ink."""
    out = []
    for img in images:
        rows, cols = np.nonzero(img > 127)
        out.append((rows.max() - rows.min() + 1, cols.max() - cols.min() + 1,
                    (rows.min() + rows.max()) / 2, (cols.min() + cols.max()) / 2))
    return np.array(out, dtype=np.float64)


def test_letters_are_7_to_26_px_tall_and_anywhere_in_the_frame():
    rng = np.random.default_rng(5)
    images = letters.render(np.repeat(np.arange(3), 200), rng, letters.Jitter(**CLEAN))
    boxes = ink_boxes(images)
    heights, offsets = boxes[:, 0], np.abs(boxes[:, 2:] - 13.5)
    assert heights.min() <= 9 and heights.max() >= 24
    assert offsets.max() >= 6                        # far off-centre ...
    assert (offsets > 3).any(axis=1).mean() > 0.2    # ... and often
    # ... yet never cut off by the frame, even the largest ones turned and sheared
    assert not (images[:, [0, -1], :] > 127).any() and not (images[:, :, [0, -1]] > 127).any()


def test_stroke_letters_are_drawn_with_a_pen_of_1_5_to_4_px():
    from tinyrps.network.images import stroke_width
    rng = np.random.default_rng(6)
    strokes = letters.render(np.repeat(np.arange(3), 40), rng, letters.Jitter(**CLEAN, stroke_prob=1.0,
                                                                       height_px=(18.0, 24.0)))
    widths = np.array([stroke_width(img > 127) for img in strokes])
    assert widths.min() >= 1.0 and widths.max() <= 5.5
    assert widths.max() - widths.min() > 1.0         # pens of several widths
    fonts = letters.render(np.repeat(np.arange(3), 40), np.random.default_rng(6),
                        letters.Jitter(**CLEAN, stroke_prob=0.0, height_px=(18.0, 24.0)))
    assert not np.array_equal(strokes, fonts)


def test_both_polarities_are_common():
    images, _ = data.make_split("train", 200, seed=0)
    bright_background = (np.median(images.reshape(len(images), -1), axis=1) > 127).mean()
    assert 0.35 < bright_background < 0.65


def test_probe_sets_hold_small_and_off_centre_letters():
    small, labels = data.probe_set("small", 30, seed=0)
    assert np.array_equal(small, data.probe_set("small", 30, seed=0)[0])            # deterministic
    assert np.bincount(labels).tolist() == [30, 30, 30]
    from dataclasses import replace
    upright = dict(CLEAN, rotate_deg=(0.0, 0.0), shear=(0.0, 0.0))
    clean_small = letters.render(np.repeat(np.arange(3), 30), np.random.default_rng(0),
                              replace(data.PROBES["small"], **upright))
    assert ink_boxes(clean_small)[:, 0].max() <= 10
    clean_off = letters.render(np.repeat(np.arange(3), 30), np.random.default_rng(0),
                            replace(data.PROBES["off-centre"], **CLEAN))
    distance = np.hypot(*(ink_boxes(clean_off)[:, 2:] - 13.5).T)
    assert np.median(distance) >= 4 and distance.min() >= 2.5


# The first three draws of each split's and probe set's random stream, as they were before the
# benchmark split was added (seed 0 and 7): every image is drawn from its stream, so the same draws
# mean the same images, on any machine (numpy keeps SeedSequence and PCG64 stable).
FIRST_DRAWS = {
    (0, "train"): [3653403231, 2735729615, 2195314465], (0, "val"): [2242647589, 3821399010, 4264680396],
    (0, "test"): [4206763307, 347136604, 1232261001], (7, "train"): [4058335883, 2684764585, 2938530453],
    (7, "val"): [3737738445, 3307730197, 3761774060], (7, "test"): [1208267292, 1193873271, 656516905],
    (0, "small"): [2163987359, 3843878652, 4100047885], (0, "off-centre"): [1935377987, 3792765083, 1988523316],
    (7, "small"): [3126384070, 4187737225, 2311545377], (7, "off-centre"): [2282365616, 878185625, 3240726578],
}


def first_draws(seed: int, name: str) -> list:
    if name in data.PROBES:
        rng = np.random.default_rng(np.random.SeedSequence([seed, data.PROBE_STREAMS[name]]))
    else:
        rng = data.split_rng(seed, name)
    return rng.integers(0, 2**32, 3).tolist()


def test_the_benchmark_split_left_every_other_split_and_probe_set_as_it_was():
    for (seed, name), draws in FIRST_DRAWS.items():
        assert first_draws(seed, name) == draws, (seed, name)
    assert set(data.PROBE_STREAMS) == set(data.PROBES) and set(data.SPLIT_STREAMS) == {*data.SPLITS, data.SELECT}
    streams = list(data.SPLIT_STREAMS.values()) + list(data.PROBE_STREAMS.values())
    assert len(set(streams)) == len(streams)
    # what probe_set draws is that stream
    images, labels = data.probe_set("small", 5, seed=3)
    rng = np.random.default_rng(np.random.SeedSequence([3, data.PROBE_STREAMS["small"]]))
    expected = np.repeat(np.arange(3), 5)[rng.permutation(15)]
    assert np.array_equal(labels, expected) and np.array_equal(images, letters.render(expected, rng, data.PROBES["small"]))


def test_the_tunes_selection_split_is_deterministic_its_own_and_as_large_as_the_benchmark(tmp_path):
    data.make_data(tmp_path / "d", seed=3, per_class=60, quiet=True)
    images, labels = data.select_split(tmp_path / "d")
    again, _ = data.select_split(tmp_path / "d")
    benchmark, _ = data.load_split(tmp_path / "d", "benchmark")
    assert digest(images) == digest(again) and np.bincount(labels).tolist() == [10, 10, 10]
    assert len(images) == len(benchmark) and digest(images) != digest(benchmark)
    assert digest(images) == digest(data.make_split(data.SELECT, 10, seed=3)[0])
    assert not (tmp_path / "d" / "select.npz").exists()      # no data set holds it


def test_the_benchmark_split_is_deterministic_and_its_own():
    a_images, a_labels = data.make_split("benchmark", 30, seed=7)
    b_images, b_labels = data.make_split("benchmark", 30, seed=7)
    assert digest(a_images) == digest(b_images) and digest(a_labels) == digest(b_labels)
    assert np.bincount(a_labels).tolist() == [30, 30, 30]
    assert digest(a_images) != digest(data.make_split("test", 30, seed=7)[0])
    assert digest(a_images) != digest(data.make_split("benchmark", 30, seed=8)[0])
    assert first_draws(7, "benchmark") not in [draws for (seed, _), draws in FIRST_DRAWS.items() if seed == 7]


def test_the_benchmark_split_is_rendered_beside_the_others(tmp_path):
    assert data.split_sizes(None)["benchmark"] == 1000
    assert data.split_sizes(6000)["benchmark"] == 1000 and data.split_sizes(600)["benchmark"] == 100
    assert data.split_sizes(4)["benchmark"] == 10
    a = data.make_data(tmp_path / "a", seed=5, per_class=4, quiet=True)
    b = data.make_data(tmp_path / "b", seed=5, per_class=4, quiet=True)
    assert a["splits"]["benchmark"]["images"] == 30 and a["per_class"]["benchmark"] == 10
    assert a["splits"]["benchmark"]["sha256"] == b["splits"]["benchmark"]["sha256"]     # the same bytes
    assert a["splits"]["benchmark"]["sha256"] != a["splits"]["test"]["sha256"]
    images, labels = data.load_split(tmp_path / "a", "benchmark")
    assert len(images) == 30
    test = data.load_split(tmp_path / "a", "test")
    assert not any(np.array_equal(image, other) for image in images for other in test[0])


def test_a_data_set_made_before_the_benchmark_split_works_except_for_it(tmp_path):
    from tinyrps.infra.artifacts.manifest import write_manifest
    folder = tmp_path / "data"
    data.make_data(folder, seed=5, per_class=4, quiet=True)
    info = json.loads((folder / "data.json").read_text())
    del info["splits"]["benchmark"], info["per_class"]["benchmark"]
    (folder / "data.json").write_text(json.dumps(info))
    (folder / "benchmark.npz").unlink()
    write_manifest(folder, "data")
    for split in ("train", "val", "test"):
        assert len(data.load_split(folder, split)[0])
    with pytest.raises(UserError) as e:
        data.load_split(folder, "benchmark")
    line = str(e.value)
    assert "\n" not in line and "no benchmark split" in line
    assert f"`tinyrps data --out {folder} --seed 5 --per-class 4`" in line
    # made again as the line says, the other splits are the same bytes
    again = data.make_data(tmp_path / "again", seed=5, per_class=4, quiet=True)
    assert all(again["splits"][s]["sha256"] == info["splits"][s]["sha256"] for s in ("train", "val", "test"))


def test_a_probe_set_has_no_benchmark_split(tmp_path):
    data.make_data(tmp_path / "d", seed=0, per_class=4, quiet=True)
    with pytest.raises(UserError, match="probe set 'small', a test split only: read it with --split test"):
        data.load_split(data.probe_dir(tmp_path / "d", "small"), "benchmark")


def test_the_command_that_makes_a_data_set_again_names_only_what_differs():
    defaults = {k: v for k, v in data.DEFAULT_PER_CLASS.items() if k != "benchmark"}
    assert data.remake_data_command("d", {"seed": 0, "per_class": defaults}) == "`tinyrps data --out d`"
    assert data.remake_data_command("d", {"seed": 2, "per_class": data.split_sizes(50)}) == \
        "`tinyrps data --out d --seed 2 --per-class 50`"
