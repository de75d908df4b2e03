import io

import torch

from tinyrps.network.model import INPUT_SHAPE, LABELS, TinyRPS, count_macs, images_to_tensor


def test_output_shape_for_batches():
    model = TinyRPS().eval()
    assert model(torch.zeros(INPUT_SHAPE)).shape == (1, 3)
    assert model(torch.zeros(5, 1, 28, 28)).shape == (5, 3)


def test_architecture_is_exactly_the_specified_one():
    model = TinyRPS()
    shapes = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    assert shapes == {
        "body.0.weight": (16, 1, 3, 3), "body.0.bias": (16,),
        "body.2.weight": (32, 16, 3, 3), "body.2.bias": (32,),
        "body.5.weight": (64, 32, 3, 3), "body.5.bias": (64,),
        "head.1.weight": (128, 64 * 7 * 7), "head.1.bias": (128,),
        "head.3.weight": (3, 128), "head.3.bias": (3,),
    }
    assert LABELS == ("rock", "paper", "scissors")


def test_state_dict_loads_with_weights_only():
    buffer = io.BytesIO()
    torch.save(TinyRPS().state_dict(), buffer)
    buffer.seek(0)
    TinyRPS().load_state_dict(torch.load(buffer, weights_only=True))


def test_mac_count():
    assert count_macs() == 28 * 28 * 16 * 9 + 28 * 28 * 32 * 16 * 9 + 14 * 14 * 64 * 32 * 9 + 3136 * 128 + 128 * 3


def test_images_to_tensor_scales_to_unit_range():
    import numpy as np
    t = images_to_tensor(np.array([[[0] * 28] * 27 + [[255] * 28]], dtype=np.uint8))
    assert t.shape == (1, 1, 28, 28) and t.dtype == torch.float32
    assert t.min() == 0.0 and t.max() == 1.0


# ── architectures ────────────────────────────────────────────────────────────
import json  # noqa: E402

import pytest  # noqa: E402

from tinyrps.infra.errors import UserError  # noqa: E402
from tinyrps.network.model import (ARCHITECTURES, count_params, describe_arch, feature_shape, load_model,  # noqa: E402
                           parse_arch)


def test_default_architecture_is_the_named_tinyrps_and_builds_the_same_network():
    assert parse_arch("tinyrps").spec == ARCHITECTURES["tinyrps"] == "c16-c32-p-c64-p-f128"
    torch.manual_seed(0)
    default = TinyRPS().state_dict()
    torch.manual_seed(0)
    from_spec = TinyRPS("c16-c32-p-c64-p-f128").state_dict()
    assert list(default) == list(from_spec) and all(torch.equal(default[k], from_spec[k]) for k in default)


def test_fast_architecture_pools_early_and_to_one_pixel_before_a_64_feature_classifier():
    model = TinyRPS("fast")
    convs = [m for m in model.body if isinstance(m, torch.nn.Conv2d)]
    assert [(c.in_channels, c.out_channels, c.stride) for c in convs] == [(1, 16, (1, 1)), (16, 32, (1, 1)),
                                                                         (32, 64, (1, 1))]
    pools = [m for m in model.body if isinstance(m, torch.nn.MaxPool2d)]
    # 28 -> 14 -> 7 -> 3, then 3x3 -> 1x1: each channel's largest value wherever the letter is
    assert [(pool.kernel_size, pool.stride) for pool in pools] == [(2, 2), (2, 2), (2, 2), (3, 2)]
    assert feature_shape(parse_arch("fast")) == (64, 1, 1)
    assert [(m.in_features, m.out_features) for m in model.head if isinstance(m, torch.nn.Linear)] == \
        [(64, 64), (64, 3)]
    assert model.eval()(torch.zeros(INPUT_SHAPE)).shape == (1, 3)
    assert count_macs("fast") == (28 * 28 * 16 * 9 + 14 * 14 * 32 * 16 * 9 + 7 * 7 * 64 * 32 * 9
                                  + 64 * 64 + 64 * 3)
    assert count_macs("fast") * 3.5 < count_macs("tinyrps")
    assert count_params("fast") == sum(p.numel() for p in model.parameters()) < count_params("tinyrps") / 15


def test_specs_are_normalised_and_described():
    arch = parse_arch(" c8s2-c16-p-f32 ")
    assert (arch.name, arch.spec) == ("c8s2-c16-p-f32", "c8s2-c16-p-f32")
    assert describe_arch("fast") == {"name": "fast", "spec": ARCHITECTURES["fast"], "macs": count_macs("fast"),
                                     "params": count_params("fast")}
    # a spec without a hidden layer: the classifier reads the features directly
    assert [m.in_features for m in TinyRPS("c8s2-c8s2").head if isinstance(m, torch.nn.Linear)] == [8 * 7 * 7]


@pytest.mark.parametrize("spec,words", [
    ("c16-x3", "bad layer 'x3'"), ("p-c16", "must start with a convolution"), ("c16-f32-c8", "must come after"),
    ("c0", "1 to 256"), ("c16-p-p-p-p-p", "shrinks"), ("-".join(["c4"] * 11), "at most 10"),
    ("c256", "flattens"), ("", "bad layer")])
def test_bad_specs_are_refused_in_one_line(spec, words):
    with pytest.raises(UserError) as e:
        parse_arch(spec)
    assert words in str(e.value) and "\n" not in str(e.value)


def write_run_files(folder, state, **config) -> None:
    """model.pt and the config.json `tinyrps train` writes beside it (with the checkpoint's sha256)."""
    from tinyrps.infra.artifacts.files import sha256_file
    torch.save(state, folder / "model.pt")
    config = {"data": "somewhere", "arch": "tinyrps", "epochs": 1, "seed": 0, "data_identity": {},
              "checkpoint_sha256": sha256_file(folder / "model.pt"), **config}
    (folder / "config.json").write_text(json.dumps({k: v for k, v in config.items() if v is not None}))


def test_load_model_rebuilds_the_run_architecture(tmp_path):
    torch.save(TinyRPS("fast").state_dict(), tmp_path / "model.pt")
    with pytest.raises(UserError) as e:   # no config.json: the default network, which does not fit
        load_model(tmp_path / "model.pt")
    assert "does not hold a 'tinyrps' network" in str(e.value)
    write_run_files(tmp_path, TinyRPS("fast").state_dict(), arch="fast")
    assert load_model(tmp_path / "model.pt").arch.spec == ARCHITECTURES["fast"]
    write_run_files(tmp_path, TinyRPS().state_dict(), arch=None)   # a config without `arch`: not this version's
    with pytest.raises(UserError, match="has no 'arch'"):
        load_model(tmp_path / "model.pt")
