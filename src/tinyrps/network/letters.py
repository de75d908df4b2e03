"""The synthetic letters drawn: 28x28 grayscale images of the letters R, P and S.

Each image is one letter, either typeset in a random font or drawn as pen
strokes (smooth polylines through jittered control points, as a hand would draw
it), then scaled, rotated, sheared, placed anywhere in the frame, blurred, given
a random foreground/background brightness and Gaussian noise, and in half of the
images inverted (dark ink on a light ground). Letters range from 7 px tall (what
a low-resolution camera or a small font gives) to 26 px. Every random choice
comes from the numpy Generator `render` is given (one per split: tinyrps.data),
so the same seed gives byte-identical arrays.

Speed: glyphs are rasterised once per font at high resolution (with box-filtered
half and quarter sizes, so small letters are not aliased); each font image is
then a single affine resample (PIL, in C), each stroke letter one anti-aliased
drawing at 4x resolution, and the rest vectorised numpy work on the batch.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from .labels import IMAGE_SIZE

LETTERS = ("R", "P", "S")
# Glyphs are rasterised on a GLYPH x GLYPH canvas, letter about GLYPH_PT tall.
GLYPH = 96
GLYPH_PT = 64
# Box-filtered reductions of each glyph: a resample never shrinks by more than about
# 2x, which bilinear sampling alone would alias into broken strokes.
GLYPH_REDUCTIONS = (1, 2, 4)
# Stroke letters are drawn at this multiple of the image size, then box-reduced.
SUPERSAMPLE = 4
# The letter keeps this margin (px) to the frame when it is shifted.
FRAME_MARGIN = 0.5


@dataclass(frozen=True)
class Jitter:
    """Ranges of the random transforms (uniform unless said otherwise)."""
    height_px: tuple = (7.0, 26.0)      # letter height in the 28x28 image
    rotate_deg: tuple = (-18.0, 18.0)
    shear: tuple = (-0.3, 0.3)
    aspect: tuple = (0.8, 1.2)          # x/y stretch
    shift_px: float = 7.0               # max centre offset per axis (less where the letter would leave the frame)
    offset_min_px: float = 0.0          # > 0: the centre lies this far or farther from the middle, in a random direction
    blur_px: tuple = (0.0, 1.0)         # for letters >= BLUR_FULL_HEIGHT px; smaller ones get proportionally less
    foreground: tuple = (140, 255)
    background: tuple = (0, 70)
    noise_sigma: tuple = (0.0, 18.0)
    invert_prob: float = 0.5
    stroke_prob: float = 0.3            # share of hand-drawn stroke letters (the rest are fonts)
    pen_px: tuple = (1.5, 4.0)          # stroke letters' pen width in the 28x28 image
    pen_per_height: float = 0.25        # ... and at most this fraction of the letter's height


# Images per chunk of the vectorised steps of `render` whose intermediates are large.
CHUNK = 1024

# Blur scales down below this letter height: a 1 px blur erases a 7 px letter's strokes.
BLUR_FULL_HEIGHT = 14.0

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


@dataclass(frozen=True)
class Glyph:
    """One font's letter, ready to resample: its box-reduced images and ink box (full-size pixels)."""
    images: tuple          # one per GLYPH_REDUCTIONS
    box: tuple             # ink bounding box (x0, y0, x1, y1)

    @property
    def height(self) -> float:
        return float(self.box[3] - self.box[1])

    @property
    def centre(self) -> np.ndarray:
        return np.array([(self.box[0] + self.box[2]) / 2, (self.box[1] + self.box[3]) / 2])

    def corners(self) -> np.ndarray:
        """The ink box's corners relative to its centre, [4, 2]."""
        x0, y0, x1, y1 = self.box
        return np.array([[x0, y0], [x1, y0], [x0, y1], [x1, y1]], dtype=np.float64) - self.centre


@functools.lru_cache(maxsize=None)
def font_glyphs() -> tuple:
    """Glyph records, [font][letter]."""
    out = []
    for stack in glyphs():
        row = []
        for img in stack:
            box = img.getbbox() or (0, 0, GLYPH, GLYPH)
            row.append(Glyph(tuple(img if f == 1 else img.reduce(f) for f in GLYPH_REDUCTIONS), box))
        out.append(tuple(row))
    return tuple(out)


# ── hand-drawn stroke letters ────────────────────────────────────────────────
# Control points in letter units (height 1, centred on 0, y down) and the strokes
# through them (indices, so strokes that meet share a point and stay joined).
STROKE_LETTERS = {
    "P": ([(-0.28, 0.5), (-0.28, -0.5), (0.05, -0.5), (0.27, -0.4), (0.32, -0.22), (0.22, -0.06),
           (0.0, 0.02), (-0.28, 0.02)],
          [(0, 1), (1, 2, 3, 4, 5, 6, 7)]),
    "R": ([(-0.28, 0.5), (-0.28, -0.5), (0.05, -0.5), (0.27, -0.4), (0.32, -0.22), (0.22, -0.06),
           (0.0, 0.02), (-0.28, 0.02), (0.33, 0.5)],
          [(0, 1), (1, 2, 3, 4, 5, 6, 7), (6, 8)]),
    "S": ([(0.3, -0.37), (0.12, -0.5), (-0.12, -0.5), (-0.3, -0.38), (-0.28, -0.16), (-0.08, -0.04),
           (0.14, 0.05), (0.31, 0.18), (0.31, 0.38), (0.12, 0.5), (-0.12, 0.5), (-0.32, 0.38)],
          [tuple(range(12))]),
}
STROKE_POINTS = max(len(points) for points, _ in STROKE_LETTERS.values())
STROKE_JITTER = 0.035      # control points move by this much (std, letter heights)
# The corners of a box that holds a stroke letter's path with its jitter (3 sigma).
STROKE_BOX = np.array([[-0.43, -0.61], [0.44, -0.61], [-0.43, 0.61], [0.44, 0.61]])


def smooth_polylines(points: np.ndarray, rounds: int = 2) -> np.ndarray:
    """Chaikin corner cutting on a batch [..., P, 2], ends kept: a pen's smooth curve through
    the control points."""
    for _ in range(rounds):
        if points.shape[-2] < 3:
            return points
        a, b = points[..., :-1, :], points[..., 1:, :]
        cut = np.empty(a.shape[:-2] + (2 * a.shape[-2], 2))
        cut[..., 0::2, :], cut[..., 1::2, :] = 0.75 * a + 0.25 * b, 0.25 * a + 0.75 * b
        points = np.concatenate([points[..., :1, :], cut[..., 1:-1, :], points[..., -1:, :]], axis=-2)
    return points


def stroke_paths(labels, point_jitter, forward, centres) -> dict:
    """image index -> its strokes, each a flat [x0, y0, x1, y1, ...] list in SUPERSAMPLE x pixels:
    jittered control points, smoothed, mapped by each image's `forward` to its centre."""
    paths = {}
    for label, letter in enumerate(LETTERS):
        idx = np.nonzero(labels == label)[0]
        if not len(idx):
            continue
        base, strokes = STROKE_LETTERS[letter]
        points = np.asarray(base)[None] + point_jitter[idx, :len(base)]
        for stroke in strokes:
            line = smooth_polylines(points[:, list(stroke)])
            pixels = (np.einsum("nij,npj->npi", forward[idx], line) + centres[idx, None]) * SUPERSAMPLE
            for i, flat in zip(idx, pixels.reshape(len(idx), -1).tolist()):
                paths.setdefault(i, []).append(flat)
    return paths


def draw_strokes(strokes: list, pen: float) -> Image.Image:
    """Stroke paths (from stroke_paths) as an anti-aliased 28x28 'L' mask: drawn with a round
    pen at SUPERSAMPLE x, then box-reduced."""
    k = SUPERSAMPLE
    img = Image.new("L", (IMAGE_SIZE * k, IMAGE_SIZE * k), 0)
    draw = ImageDraw.Draw(img)
    width = max(1, round(pen * k))
    r = width / 2
    for flat in strokes:
        # the smoothed path turns by small angles only, so plain joints leave no visible notches
        draw.line(flat, fill=255, width=width)
        for x, y in ((flat[0], flat[1]), (flat[-2], flat[-1])):     # round pen ends
            draw.ellipse((x - r, y - r, x + r, y + r), fill=255)
    return img.reduce(k)


# ── geometry shared by both kinds of letter ──────────────────────────────────
def forward_matrices(params: np.ndarray) -> np.ndarray:
    """[N, 4] (height, angle, shear, aspect) -> [N, 2, 2] maps from letter units (height 1) to
    image pixels: rotation @ shear @ diag(height * aspect, height)."""
    height, angle, shear, aspect = params.T
    c, s = np.cos(np.radians(angle)), np.sin(np.radians(angle))
    m = np.empty((len(params), 2, 2))
    m[:, 0, 0], m[:, 0, 1] = c * height * aspect, (c * shear - s) * height
    m[:, 1, 0], m[:, 1, 1] = s * height * aspect, (s * shear + c) * height
    return m


def half_extents(forward: np.ndarray, corners: np.ndarray, rim: np.ndarray) -> np.ndarray:
    """[N, 2] half width and half height (px) of each letter's box as placed in the image."""
    return np.abs(np.einsum("nij,nkj->nki", forward, corners)).max(axis=1) + rim[:, None]


def fit_in_frame(forward: np.ndarray, corners: np.ndarray, rim: np.ndarray) -> np.ndarray:
    """Shrink the letters that, turned and sheared, would not fit in the frame."""
    limit = IMAGE_SIZE / 2 - FRAME_MARGIN
    reach = half_extents(forward, corners, rim).max(axis=1)
    return forward * np.minimum(1.0, (limit - rim) / np.maximum(reach - rim, 1e-6))[:, None, None]


def letter_centres(forward: np.ndarray, corners: np.ndarray, rim: np.ndarray, u: np.ndarray, j: Jitter) -> np.ndarray:
    """Each letter's centre in the image [N, 2]. u in [-1, 1]^2 is scaled to the room the letter's
    box (plus `rim` px: half a pen, or a resampled edge) leaves to the frame, at most shift_px;
    with offset_min_px, u is read as a direction and a distance between offset_min_px and
    shift_px instead."""
    room = np.clip(IMAGE_SIZE / 2 - FRAME_MARGIN - half_extents(forward, corners, rim), 0.0, j.shift_px)
    if j.offset_min_px <= 0:
        offset = u * room
    else:
        angle = np.pi * u[:, 0]
        distance = j.offset_min_px + (j.shift_px - j.offset_min_px) * (u[:, 1] + 1) / 2
        offset = np.clip(distance[:, None] * np.stack([np.cos(angle), np.sin(angle)], axis=1), -room, room)
    return IMAGE_SIZE / 2 + offset


def font_transforms(forward: np.ndarray, glyph_heights, glyph_centres, centres) -> tuple:
    """Per image: which glyph reduction to resample (the one that leaves at most ~1.5x shrinking)
    and PIL's output->input affine coefficients for it."""
    scale = forward / glyph_heights[:, None, None]                # glyph pixels -> image pixels
    shrink = 1.0 / np.sqrt(np.abs(np.linalg.det(scale)))
    factors = np.asarray(GLYPH_REDUCTIONS, dtype=np.float64)
    level = (factors[None, :] <= np.maximum(1.0, shrink / 1.5)[:, None]).sum(axis=1) - 1
    f = factors[level]
    inv = np.linalg.inv(scale * f[:, None, None])
    offset = glyph_centres / f[:, None] - np.einsum("nij,nj->ni", inv, centres)
    coeffs = np.stack([inv[:, 0, 0], inv[:, 0, 1], offset[:, 0], inv[:, 1, 0], inv[:, 1, 1], offset[:, 1]], axis=1)
    return level, coeffs


def render(labels: np.ndarray, rng: np.random.Generator, jitter: Jitter = Jitter()) -> np.ndarray:
    """Render one image per label (0=rock/R, 1=paper/P, 2=scissors/S) -> uint8 [N,28,28]."""
    labels = np.asarray(labels, dtype=np.int64)
    n = len(labels)
    fonts = font_glyphs()
    j = jitter
    font_idx = rng.integers(0, len(fonts), n)
    stroke = rng.random(n) < j.stroke_prob
    params = np.stack([rng.uniform(*j.height_px, n), rng.uniform(*j.rotate_deg, n), rng.uniform(*j.shear, n),
                       rng.uniform(*j.aspect, n)], axis=1)
    shift_u = rng.uniform(-1.0, 1.0, (n, 2))
    pen = np.minimum(rng.uniform(*j.pen_px, n), np.maximum(j.pen_px[0], j.pen_per_height * params[:, 0]))
    point_jitter = rng.normal(0.0, STROKE_JITTER, (n, STROKE_POINTS, 2))
    blur = rng.uniform(*j.blur_px, n) * np.minimum(1.0, params[:, 0] / BLUR_FULL_HEIGHT)
    fg = rng.uniform(*j.foreground, n)[:, None, None]
    bg = rng.uniform(*j.background, n)[:, None, None]
    sigma = rng.uniform(*j.noise_sigma, n)[:, None, None]
    invert = rng.random(n) < j.invert_prob
    # drawn in chunks (the same numbers as one draw): float64 for a chunk only, float32 kept
    noise = np.empty((n, IMAGE_SIZE, IMAGE_SIZE), dtype=np.float32)
    for start in range(0, n, CHUNK):
        noise[start:start + CHUNK] = rng.standard_normal((len(noise[start:start + CHUNK]), IMAGE_SIZE, IMAGE_SIZE))

    glyph = [fonts[f][k] for f, k in zip(font_idx, labels)]
    glyph_heights = np.array([g.height for g in glyph])
    corners = np.stack([STROKE_BOX if stroke[i] else glyph[i].corners() / glyph_heights[i] for i in range(n)]) \
        if n else np.zeros((0, 4, 2))
    rim = np.where(stroke, pen / 2, 0.5)
    # a stroke letter's path is a pen's width shorter than its ink
    forward = forward_matrices(params) * np.where(stroke, 1.0 - pen / params[:, 0], 1.0)[:, None, None]
    forward = fit_in_frame(forward, corners, rim)
    centres = letter_centres(forward, corners, rim, shift_u, j)
    level, coeffs = font_transforms(forward, glyph_heights, np.array([g.centre for g in glyph]).reshape(n, 2), centres)
    paths = stroke_paths(np.where(stroke, labels, -1), point_jitter, forward, centres)
    coeffs, size = coeffs.tolist(), (IMAGE_SIZE, IMAGE_SIZE)

    alpha = np.empty((n, IMAGE_SIZE, IMAGE_SIZE), dtype=np.float32)
    for i in range(n):
        if stroke[i]:
            img = draw_strokes(paths[i], pen[i])
        else:
            img = glyph[i].images[level[i]].transform(size, Image.Transform.AFFINE, coeffs[i],
                                                      resample=Image.Resampling.BILINEAR)
        if blur[i] > 0.25:
            img = img.filter(ImageFilter.GaussianBlur(float(blur[i])))
        alpha[i] = np.asarray(img, dtype=np.float32)
    del paths
    # composed in chunks: the float64 intermediates of a chunk only, not of the whole split
    pixels = np.empty((n, IMAGE_SIZE, IMAGE_SIZE), dtype=np.uint8)
    for s in range(0, n, CHUNK):
        e = s + CHUNK
        mixed = bg[s:e] + (fg[s:e] - bg[s:e]) * (alpha[s:e] / 255.0) + sigma[s:e] * noise[s:e]
        pixels[s:e] = np.clip(np.rint(mixed), 0, 255).astype(np.uint8)
    pixels[invert] = 255 - pixels[invert]
    return pixels
