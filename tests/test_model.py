import io

import torch

from tinyrps.model import INPUT_SHAPE, LABELS, TinyRPS, count_macs, images_to_tensor


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
