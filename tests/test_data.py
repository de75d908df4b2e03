import hashlib

import numpy as np
import pytest

from tinyrps import data
from tinyrps.errors import UserError


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
    assert len(data.glyphs()) >= 5                # several fonts


def test_fonts_come_from_python_packages_only():
    for path in data.font_files():
        assert path is None or "site-packages" in path or ".venv" in path


def test_saved_split_round_trips(tmp_path):
    images, labels = data.make_split("val", 5, seed=1)
    data.save_split(tmp_path / "val.npz", images, labels)
    back_images, back_labels = data.load_split(tmp_path, "val")
    assert np.array_equal(images, back_images) and np.array_equal(labels, back_labels)
    assert not list(tmp_path.glob("*.tmp*"))


def test_missing_split_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="tinyrps data --out"):
        data.load_split(tmp_path, "train")
