"""28x28 grayscale images as ASCII art for the terminal game.

A terminal cell is about twice as tall as it is wide, so each character stands for
one pixel column and two pixel rows (their mean), giving a 28x14 block.
"""
from __future__ import annotations

import numpy as np

# dark -> bright
RAMP = " .:-=+*#%@"


def image_to_ascii(image: np.ndarray) -> list:
    """uint8 [H,W] -> H/2 lines of W characters."""
    img = np.asarray(image, dtype=np.float32)
    rows = (img[0::2] + img[1::2]) / 2.0 if img.shape[0] % 2 == 0 else img
    idx = np.clip((rows / 256.0 * len(RAMP)).astype(int), 0, len(RAMP) - 1)
    return ["".join(RAMP[i] for i in line) for line in idx]


def side_by_side(blocks: list, titles: list = None, gap: int = 6) -> str:
    """Join blocks of equal-width lines horizontally, with an optional title over each."""
    widths = [max(len(line) for line in b) for b in blocks]
    lines = []
    if titles:
        lines.append((" " * gap).join(t[:w].center(w) for t, w in zip(titles, widths)))
    for row in range(max(len(b) for b in blocks)):
        cells = [(b[row] if row < len(b) else "").ljust(w) for b, w in zip(blocks, widths)]
        lines.append((" " * gap).join(cells).rstrip())
    return "\n".join(lines)
