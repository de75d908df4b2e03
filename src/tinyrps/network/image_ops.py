"""Image primitives on numpy arrays, for reading people's pictures (tinyrps.network.images): Gaussian
blur, binary erosion, connected components and their boxes, Otsu's threshold, hole filling and the
area of a mask's convex hull. Only numpy and Pillow, as the reading itself.
"""
from __future__ import annotations

import numpy as np
from PIL import Image, ImageFilter


def gaussian_taps(sigma: float) -> np.ndarray:
    radius = max(1, int(3 * sigma + 0.5))
    taps = np.exp(-0.5 * (np.arange(-radius, radius + 1) / sigma) ** 2)
    return taps / taps.sum()


def blur_gain(sigma: float) -> float:
    """How much blur(., sigma) scales the standard deviation of white noise."""
    return float((gaussian_taps(sigma) ** 2).sum())


def blur(a: np.ndarray, sigma: float) -> np.ndarray:
    """Separable Gaussian blur, edges repeated."""
    taps = gaussian_taps(sigma)
    r = len(taps) // 2
    h, w = a.shape
    rows = np.pad(a.astype(np.float32), ((r, r), (0, 0)), mode="edge")
    out = sum(float(t) * rows[k:k + h] for k, t in enumerate(taps))
    cols = np.pad(out, ((0, 0), (r, r)), mode="edge")
    return sum(float(t) * cols[:, k:k + w] for k, t in enumerate(taps)).astype(np.float32)


def erode(mask: np.ndarray, radius: int) -> np.ndarray:
    """Binary erosion by a square of side 2*radius+1: where a box average of the mask is full
    (PIL's box blur costs the same for any radius)."""
    img = Image.fromarray(mask.astype(np.uint8) * 255)
    return np.asarray(img.filter(ImageFilter.BoxBlur(radius))) == 255


def label_components(mask: np.ndarray, connectivity: int = 8) -> tuple:
    """Connected components of a bool mask -> (labels int [H,W], 0 = background, 1..count; count).

    Works on runs (horizontal stretches of the mask), not pixels: runs in neighbouring
    rows that touch are joined, and labels spread over the joins by repeated minimum and
    pointer jumping; all of it vectorised, so a 400x400 page takes milliseconds."""
    h, w = mask.shape
    row_len = w + 1                                  # a False column ends every row: runs never wrap
    flat = np.zeros(h * row_len, bool)
    flat.reshape(h, row_len)[:, :w] = mask
    edges = np.diff(flat.astype(np.int8), prepend=0, append=0)
    starts, ends = np.nonzero(edges == 1)[0], np.nonzero(edges == -1)[0]
    run_label = _join_runs(starts, ends, row_len, 1 if connectivity == 8 else 0)
    roots, dense = np.unique(run_label, return_inverse=True)
    lengths = ends - starts
    positions = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths) + np.repeat(starts, lengths)
    out = np.zeros(h * row_len, np.int64)
    out[positions] = np.repeat(dense + 1, lengths)
    return out.reshape(h, row_len)[:, :w], len(roots)


def _join_runs(starts: np.ndarray, ends: np.ndarray, row_len: int, diagonal: int) -> np.ndarray:
    """A component id per run (the smallest run index in its component). Run a touches run b in
    the next row if their column ranges overlap (or meet at a corner, with `diagonal`)."""
    count = len(starts)
    below_first = np.searchsorted(ends, starts + row_len - diagonal, side="right")
    below_end = np.searchsorted(starts, ends + row_len + diagonal, side="left")
    touching = np.maximum(below_end - below_first, 0)
    upper = np.repeat(np.arange(count), touching)
    lower = np.arange(touching.sum()) - np.repeat(np.cumsum(touching) - touching, touching) \
        + np.repeat(below_first, touching)
    label = np.arange(count)
    while True:
        low = np.minimum(label[upper], label[lower])
        new = label.copy()
        np.minimum.at(new, upper, low)
        np.minimum.at(new, lower, low)
        for _ in range(4):
            new = new[new]
        if np.array_equal(new, label):
            return label
        label = new


def component_boxes(labels: np.ndarray, count: int) -> np.ndarray:
    """[count, 4] boxes (x0, y0, x1, y1), inclusive, of labels 1..count."""
    rows, cols = np.nonzero(labels)
    ids = labels[rows, cols] - 1
    boxes = np.empty((count, 4), np.int64)
    boxes[:, 0] = np.full(count, np.iinfo(np.int64).max)
    boxes[:, 1] = boxes[:, 0]
    boxes[:, 2] = -1
    boxes[:, 3] = -1
    np.minimum.at(boxes[:, 0], ids, cols)
    np.minimum.at(boxes[:, 1], ids, rows)
    np.maximum.at(boxes[:, 2], ids, cols)
    np.maximum.at(boxes[:, 3], ids, rows)
    return boxes


def otsu_threshold(gray: np.ndarray) -> float:
    """The gray level that best splits the histogram in two classes (Otsu)."""
    hist = np.bincount(np.clip(gray, 0, 255).astype(np.uint8).ravel(), minlength=256).astype(np.float64)
    levels = np.arange(256)
    weight = np.cumsum(hist)
    total = weight[-1]
    mean = np.cumsum(hist * levels)
    with np.errstate(divide="ignore", invalid="ignore"):
        between = (mean[-1] * weight - mean * total) ** 2 / (weight * (total - weight))
    return float(np.nanargmax(np.where(np.isfinite(between), between, np.nan))) if np.isfinite(between).any() \
        else float(np.median(gray))


def fill_holes(mask: np.ndarray) -> np.ndarray:
    """The mask plus every region it encloses (what cannot be reached from the image border)."""
    labels, _ = label_components(~mask, connectivity=4)
    border = np.unique(np.concatenate([labels[0], labels[-1], labels[:, 0], labels[:, -1]]))
    return mask | ~np.isin(labels, border[border > 0])


def convex_hull_area(mask: np.ndarray) -> float:
    """Area of the convex hull of a mask's pixels (pixel squares), by the monotone chain."""
    rows = np.nonzero(mask.any(axis=1))[0]
    if not len(rows):
        return 0.0
    left = mask[rows].argmax(axis=1)
    right = mask.shape[1] - 1 - mask[rows, ::-1].argmax(axis=1)
    points = sorted(set(zip(np.concatenate([left, right + 1]).tolist(), np.concatenate([rows, rows]).tolist()))
                    | set(zip(np.concatenate([left, right + 1]).tolist(), (np.concatenate([rows, rows]) + 1).tolist())))
    hull = _half_hull(points) + _half_hull(points[::-1])
    xs, ys = np.array(hull, dtype=np.float64).T
    return float(abs(np.dot(xs, np.roll(ys, -1)) - np.dot(ys, np.roll(xs, -1))) / 2)


def _half_hull(points: list) -> list:
    hull = []
    for p in points:
        while len(hull) >= 2 and _cross(hull[-2], hull[-1], p) <= 0:
            hull.pop()
        hull.append(p)
    return hull[:-1]


def _cross(o, a, b) -> float:
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])
