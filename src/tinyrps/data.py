"""Synthetic data: 28x28 grayscale images of the letters R, P and S.

Each image is one letter drawn in a random font, then scaled, rotated, sheared,
shifted, blurred, given a random foreground/background brightness, Gaussian noise
and, now and then, inverted. Every random choice comes from one numpy Generator
per split, so the same seed gives byte-identical arrays.

Speed: glyphs are rasterised once per font at high resolution; each image is then
a single affine resample (PIL, in C) plus vectorised numpy work on the batch.
"""
from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from .model import IMAGE_SIZE, LABELS

LETTERS = ("R", "P", "S")
SPLITS = ("train", "val", "test")
# Per-class image counts of the default data set, per split.
DEFAULT_PER_CLASS = {"train": 3000, "val": 300, "test": 200}
# Glyphs are rasterised on a GLYPH x GLYPH canvas, letter about GLYPH_PT tall.
GLYPH = 96
GLYPH_PT = 64


@dataclass(frozen=True)
class Jitter:
    """Ranges of the random transforms (uniform unless said otherwise)."""
    height_px: tuple = (13.0, 24.0)     # letter height in the 28x28 image
    rotate_deg: tuple = (-18.0, 18.0)
    shear: tuple = (-0.3, 0.3)
    aspect: tuple = (0.8, 1.2)          # x/y stretch
    shift_px: float = 3.0               # max centre offset
    blur_px: tuple = (0.0, 1.0)
    foreground: tuple = (140, 255)
    background: tuple = (0, 70)
    noise_sigma: tuple = (0.0, 18.0)
    invert_prob: float = 0.1


def font_files() -> list:
    """Fonts that ship with the Python dependencies (no system fonts)."""
    import importlib.util
    # found, not imported: importing matplotlib would slow every game's start
    ttf = Path(importlib.util.find_spec("matplotlib").origin).parent / "mpl-data" / "fonts" / "ttf"
    names = ["DejaVuSans.ttf", "DejaVuSans-Bold.ttf", "DejaVuSans-Oblique.ttf",
             "DejaVuSerif.ttf", "DejaVuSerif-Bold.ttf", "DejaVuSansMono.ttf",
             "DejaVuSansMono-Bold.ttf", "STIXGeneral.ttf", "cmss10.ttf"]
    return [None] + [str(ttf / n) for n in names]  # None = Pillow's built-in font


def _load_font(path):
    if path is None:
        return ImageFont.load_default(size=GLYPH_PT)
    return ImageFont.truetype(path, GLYPH_PT)


@functools.lru_cache(maxsize=None)
def glyphs() -> tuple:
    """Letter masks, one [len(LETTERS), GLYPH, GLYPH] float32 stack per font, centred."""
    out = []
    for path in font_files():
        font = _load_font(path)
        stack = []
        for letter in LETTERS:
            img = Image.new("L", (GLYPH, GLYPH), 0)
            draw = ImageDraw.Draw(img)
            x0, y0, x1, y1 = draw.textbbox((0, 0), letter, font=font)
            draw.text(((GLYPH - (x1 - x0)) / 2 - x0, (GLYPH - (y1 - y0)) / 2 - y0), letter, fill=255, font=font)
            stack.append(img)
        out.append(tuple(stack))
    return tuple(out)


def _glyph_height(img: Image.Image) -> float:
    box = img.getbbox()
    return float(box[3] - box[1]) if box else float(GLYPH_PT)


def _affine_for(rng_params, glyph_h: float):
    """Output->input affine coefficients for PIL, from one image's random draws."""
    height, angle, shear, aspect, dx, dy = rng_params
    scale = height / glyph_h
    c, s = math.cos(math.radians(angle)), math.sin(math.radians(angle))
    # forward map (glyph -> image), centred: A = R @ Shear @ diag(scale*aspect, scale)
    sx, sy = scale * aspect, scale
    a = np.array([[c, -s], [s, c]]) @ np.array([[1.0, shear], [0.0, 1.0]]) @ np.diag([sx, sy])
    inv = np.linalg.inv(a)
    out_c = np.array([IMAGE_SIZE / 2 + dx, IMAGE_SIZE / 2 + dy])
    in_c = np.array([GLYPH / 2, GLYPH / 2])
    off = in_c - inv @ out_c
    return (inv[0, 0], inv[0, 1], off[0], inv[1, 0], inv[1, 1], off[1])


def render(labels: np.ndarray, rng: np.random.Generator, jitter: Jitter = Jitter()) -> np.ndarray:
    """Render one image per label (0=rock/R, 1=paper/P, 2=scissors/S) -> uint8 [N,28,28]."""
    labels = np.asarray(labels, dtype=np.int64)
    n = len(labels)
    fonts = glyphs()
    j = jitter
    font_idx = rng.integers(0, len(fonts), n)
    params = np.stack([
        rng.uniform(*j.height_px, n), rng.uniform(*j.rotate_deg, n), rng.uniform(*j.shear, n),
        rng.uniform(*j.aspect, n), rng.uniform(-j.shift_px, j.shift_px, n), rng.uniform(-j.shift_px, j.shift_px, n),
    ], axis=1)
    blur = rng.uniform(*j.blur_px, n)
    fg = rng.uniform(*j.foreground, n)[:, None, None]
    bg = rng.uniform(*j.background, n)[:, None, None]
    sigma = rng.uniform(*j.noise_sigma, n)[:, None, None]
    invert = rng.random(n) < j.invert_prob
    noise = rng.standard_normal((n, IMAGE_SIZE, IMAGE_SIZE)).astype(np.float32)

    heights = [[_glyph_height(g) for g in f] for f in fonts]
    alpha = np.empty((n, IMAGE_SIZE, IMAGE_SIZE), dtype=np.float32)
    size = (IMAGE_SIZE, IMAGE_SIZE)
    for i in range(n):
        f, k = font_idx[i], labels[i]
        glyph = fonts[f][k]
        img = glyph.transform(size, Image.Transform.AFFINE, _affine_for(params[i], heights[f][k]),
                              resample=Image.Resampling.BILINEAR)
        if blur[i] > 0.25:
            img = img.filter(ImageFilter.GaussianBlur(float(blur[i])))
        alpha[i] = np.asarray(img, dtype=np.float32)
    pixels = bg + (fg - bg) * (alpha / 255.0) + sigma * noise
    pixels = np.clip(np.rint(pixels), 0, 255).astype(np.uint8)
    pixels[invert] = 255 - pixels[invert]
    return pixels


def split_rng(seed: int, split: str) -> np.random.Generator:
    """Independent, disjoint random streams for train / val / test from one seed."""
    return np.random.default_rng(np.random.SeedSequence([seed, SPLITS.index(split)]))


def make_split(split: str, per_class: int, seed: int) -> tuple:
    rng = split_rng(seed, split)
    labels = np.repeat(np.arange(len(LABELS), dtype=np.int64), per_class)
    labels = labels[rng.permutation(len(labels))]
    return render(labels, rng), labels


def save_split(path: Path, images: np.ndarray, labels: np.ndarray) -> None:
    tmp = path.with_name(path.name + ".tmp.npz")
    try:
        np.savez_compressed(tmp, images=images, labels=labels)
        os.replace(tmp, path)
    except BaseException:   # a full disk, Ctrl-C: leave no half-written file behind
        tmp.unlink(missing_ok=True)
        raise


def load_split(data_dir, split: str) -> tuple:
    path = Path(data_dir) / f"{split}.npz"
    if not path.is_file():
        from .errors import UserError
        raise UserError(f"no {split} split at {path}: create it with `tinyrps data --out {data_dir}`")
    with np.load(path) as z:
        return z["images"], z["labels"]


def preview(images: np.ndarray, labels: np.ndarray, path: Path, columns: int = 12, rows: int = 6) -> None:
    """A labelled grid of the first images, as PNG."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    count = min(len(images), columns * rows)
    fig, axes = plt.subplots(rows, columns, figsize=(columns * 0.9, rows * 1.05))
    for i, ax in enumerate(axes.flat):
        ax.axis("off")
        if i < count:
            ax.imshow(images[i], cmap="gray", vmin=0, vmax=255)
            ax.set_title(LABELS[labels[i]], fontsize=7)
    fig.tight_layout()
    tmp = path.with_name(path.name + ".tmp.png")
    try:
        fig.savefig(tmp, dpi=100)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        plt.close(fig)


# Preprocessing of user images for `tinyrps classify`: the letter's height in the
# fitted image sits inside the training range (Jitter.height_px).
FIT_BOX = 20


def load_image(path) -> np.ndarray:
    """Any PNG/JPEG -> uint8 [28,28] like the training data: grayscale, dark background,
    the drawn content cropped and fitted into a 20x20 box at the centre."""
    from .errors import UserError
    path = Path(path)
    if not path.is_file():
        raise UserError(f"image not found: {path}")
    try:
        with Image.open(path) as img:
            gray = np.asarray(img.convert("L"), dtype=np.float32)
    except Exception:
        raise UserError(f"{path} is not an image Pillow can read (use PNG or JPEG)") from None
    return fit_image(gray)


def fit_image(gray: np.ndarray) -> np.ndarray:
    border = np.concatenate([gray[0], gray[-1], gray[:, 0], gray[:, -1]])
    if np.median(border) > 127:             # bright background: make it dark like the training data
        gray = 255.0 - gray
    background = np.median(border) if np.median(border) <= 127 else 255.0 - np.median(border)
    mask = gray > background + 0.5 * (gray.max() - background)
    if mask.any() and gray.max() > background + 8:
        ys, xs = np.nonzero(mask)
        gray = gray[ys.min():ys.max() + 1, xs.min():xs.max() + 1]
    h, w = gray.shape
    scale = FIT_BOX / max(h, w)
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    small = Image.fromarray(np.clip(gray, 0, 255).astype(np.uint8)).resize(size, Image.Resampling.LANCZOS)
    canvas = Image.new("L", (IMAGE_SIZE, IMAGE_SIZE), int(np.clip(background, 0, 255)))
    canvas.paste(small, ((IMAGE_SIZE - size[0]) // 2, (IMAGE_SIZE - size[1]) // 2))
    return np.asarray(canvas, dtype=np.uint8)
