"""Synthetic data: 28x28 grayscale images of the letters R, P and S.

Each image is one letter, either typeset in a random font or drawn as pen
strokes (smooth polylines through jittered control points, as a hand would draw
it), then scaled, rotated, sheared, placed anywhere in the frame, blurred, given
a random foreground/background brightness and Gaussian noise, and in half of the
images inverted (dark ink on a light ground). Letters range from 7 px tall (what
a low-resolution camera or a small font gives) to 26 px. Every random choice
comes from one numpy Generator per split, so the same seed gives byte-identical
arrays.

Speed: glyphs are rasterised once per font at high resolution (with box-filtered
half and quarter sizes, so small letters are not aliased); each font image is
then a single affine resample (PIL, in C), each stroke letter one anti-aliased
drawing at 4x resolution, and the rest vectorised numpy work on the batch.
"""
from __future__ import annotations

import functools
import io
import os
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

from .infra.artifacts.files import (atomic_write_bytes, atomic_write_json, available_memory, free_disk, human_bytes,
                              sha256_bytes, sha256_file)
from .infra.artifacts.records import data_info
from .infra.artifacts.locks import interrupts_deferred
from .infra.artifacts.manifest import mismatch, write_manifest
from .infra.artifacts.staging import staged_folder
from .infra.errors import UserError
from .network.labels import DEFAULT_PER_CLASS, IMAGE_SIZE, LABELS  # noqa: F401 (DEFAULT_PER_CLASS: read from here too)

LETTERS = ("R", "P", "S")
# benchmark: held out like test and larger (by default 1,000 a class, five times test), so that the
# 95 % interval of an accuracy near 99.5 % is about 0.5 points wide (1.3 with the 600 test images, where
# one image is 0.17 points). Nothing trains or picks on it.
SPLITS = ("train", "val", "test", "benchmark")
# The random stream of each split and probe set: SeedSequence([seed, stream]). Fixed for good: the
# benchmark split came after the probe sets and took the next free stream, so that adding it changed
# none of the images the other splits and probe sets had (tests/test_data.py holds each stream's first draws).
# SELECT: the tune's selection split (tinyrps.tune chooses among its finalists on it), the benchmark
# split's size and held out like it. The tune renders it for itself (select_split): no data set holds it,
# so adding it changed no data set's files.
SELECT = "select"
SPLIT_STREAMS = {"train": 0, "val": 1, "test": 2, "benchmark": 5, SELECT: 6}
PROBE_STREAMS = {"small": 3, "off-centre": 4}
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

# Sets that probe what the training range covers least: tiny letters and letters far
# from the middle (read through the raw program, no crop or refit).
PROBES = {
    "small": Jitter(height_px=(7.0, 9.0), shift_px=3.0),
    "off-centre": Jitter(height_px=(10.0, 14.0), offset_min_px=4.0),
}


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


def probe_set(name: str, per_class: int, seed: int) -> tuple:
    """A test set of one of the PROBES (small letters, off-centre letters): images, labels."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, PROBE_STREAMS[name]]))
    labels = np.repeat(np.arange(len(LABELS), dtype=np.int64), per_class)
    labels = labels[rng.permutation(len(labels))]
    return render(labels, rng, PROBES[name]), labels


def probe_dir(data_dir, name: str) -> Path:
    """Where a probe set lives: a data folder of its own holding only a test split, so that
    `tinyrps eval --run RUN --data DATA/probe-NAME` measures any program on it."""
    return Path(data_dir) / f"probe-{name}"


def save_probe_sets(data_dir, per_class: int, seed: int) -> dict:
    """Write each probe set as a data folder of its own (test split, data.json, manifest);
    returns what the data set's data.json records of them."""
    probes = {}
    for name in PROBES:
        folder = probe_dir(data_dir, name)
        folder.mkdir(parents=True, exist_ok=True)
        images, labels = probe_set(name, per_class, seed)
        entry = save_split(folder / "test.npz", images, labels)
        atomic_write_json(folder / "data.json", {"probe": name, "seed": seed, "per_class": {"test": per_class},
                                                 "images": len(images), "splits": {"test": entry}})
        write_manifest(folder, "data")
        probes[name] = {"folder": folder.name, **entry}
    return probes


def split_rng(seed: int, split: str) -> np.random.Generator:
    """Independent, disjoint random streams for train / val / test / benchmark / select from one seed."""
    return np.random.default_rng(np.random.SeedSequence([seed, SPLIT_STREAMS[split]]))


def select_split(data_dir) -> tuple:
    """(images, labels) of the tune's selection split for the data set in `data_dir`: rendered from the
    data set's seed on its own stream, as many images a class as its benchmark split."""
    info, _ = data_info(Path(data_dir))
    return make_split(SELECT, info["per_class"]["benchmark"], info["seed"])


def make_split(split: str, per_class: int, seed: int) -> tuple:
    rng = split_rng(seed, split)
    labels = np.repeat(np.arange(len(LABELS), dtype=np.int64), per_class)
    labels = labels[rng.permutation(len(labels))]
    return render(labels, rng), labels


# ── split files ──────────────────────────────────────────────────────────────
# Zip entries carry this date, not the time of writing: the same arrays give the same bytes,
# so a data set's checksums are a function of its seed and sizes.
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
SPLIT_ARRAYS = ("images", "labels")


def _write_npz(f, images: np.ndarray, labels: np.ndarray) -> None:
    """The split's arrays as a zip of .npy members, with fixed dates, into the open file `f`."""
    with zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as z:
        for key, array in zip(SPLIT_ARRAYS, (images, labels)):
            info = zipfile.ZipInfo(f"{key}.npy", date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            with z.open(info, "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.ascontiguousarray(array), allow_pickle=False)


def save_split(path: Path, images: np.ndarray, labels: np.ndarray) -> dict:
    """Write a split as .npz (`images` uint8 [N,28,28], `labels` int64 [N]), whole or not at
    all; returns what data.json records of it (file, image count, sha256)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        # zipfile's objects close themselves in finalisers, and a KeyboardInterrupt that lands in a
        # finaliser is printed and lost; a half-built one prints a traceback. So a Ctrl-C waits until
        # the archive is written and its objects are gone (with _write_npz's frame): about 0.6 s
        # for the default training split.
        with interrupts_deferred(), os.fdopen(fd, "wb") as f:
            _write_npz(f, images, labels)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:   # a full disk, Ctrl-C: leave no half-written file behind
        Path(tmp).unlink(missing_ok=True)
        raise
    return {"file": path.name, "images": int(len(images)), "sha256": sha256_file(path)}


def load_split(data_dir, split: str, info: dict = None) -> tuple:
    """(images uint8 [N,28,28], labels int64 [N]) of a split, checked: against the checksum
    DATA/data.json records for it (`info`: data.json as already read), and for what every
    stage assumes of the arrays. Any problem is one line naming the file."""
    data_dir = Path(data_dir)
    path = data_dir / f"{split}.npz"
    entry = split_entry(data_dir, split, info)
    raw = path.read_bytes()
    if sha256_bytes(raw) != entry["sha256"]:
        raise mismatch(data_dir, path.name, str(data_dir / "data.json"), "data")
    return split_arrays(raw, path, f"`tinyrps data --out {data_dir}`")


def split_entry(data_dir, split: str, info: dict = None) -> dict:
    """What DATA/data.json records of a split ({"file", "images", "sha256"}), once its file is
    there; any problem is the one line load_split gives."""
    data_dir = Path(data_dir)
    path = data_dir / f"{split}.npz"
    hint = f"`tinyrps data --out {data_dir}`"
    if info is None:
        if not path.is_file() and not (data_dir / "data.json").is_file():
            raise UserError(f"no {split} split at {path}: create it with {hint}")
        info, _ = data_info(data_dir)
    entry = info["splits"].get(split)
    if entry is None and info.get("probe"):
        raise UserError(f"{data_dir} is the probe set '{info['probe']}', a test split only: read it with --split test")
    if entry is None and split == "benchmark":
        raise UserError(f"{data_dir} has no benchmark split (made by a tinyrps without one): make it with "
                        f"{remake_data_command(data_dir, info)}; the other splits come out the same bytes")
    if not path.is_file():
        raise UserError(f"no {split} split at {path}: create it with {hint}")
    if entry is None:
        raise UserError(f"{data_dir / 'data.json'} records no {split} split: make the data again with {hint}")
    return entry


def remake_data_command(data_dir, info: dict) -> str:
    """The `tinyrps data` command that renders the data set `info` (data.json) records, again."""
    sizes, seed = info.get("per_class") or {}, info.get("seed")
    command = f"tinyrps data --out {data_dir}" + (f" --seed {seed}" if seed not in (None, 0) else "")
    # the default sizes are not what --per-class 6000 gives (val and test scale with it): name it only when needed
    if sizes.get("train") and any(sizes[split] != DEFAULT_PER_CLASS.get(split) for split in sizes):
        command += f" --per-class {sizes['train']}"
    return f"`{command}`"


def split_arrays(raw: bytes, path: Path, hint: str) -> tuple:
    """The arrays of a split file's bytes, or one line saying what is wrong with the file."""
    def bad(what: str) -> UserError:
        return UserError(f"{path} {what}: make the data again with {hint}")
    if not raw:
        raise bad("is empty")
    try:
        loaded = np.load(io.BytesIO(raw), allow_pickle=False)
        if not isinstance(loaded, np.lib.npyio.NpzFile):
            raise bad("is a single array, not an .npz archive of images and labels")
        with loaded as z:
            missing = [key for key in SPLIT_ARRAYS if key not in z.files]
            if missing:
                raise bad(f"has no '{missing[0]}' array (it holds: {', '.join(z.files) or 'nothing'})")
            images, labels = z["images"], z["labels"]
    except UserError:
        raise
    except Exception as e:     # zipfile, zlib, numpy's format reader: whatever a damaged archive makes them raise
        reason = str(e).splitlines()[0][:80] if str(e) else type(e).__name__
        raise bad(f"is not a readable .npz archive ({reason})") from None
    size = f"[N,{IMAGE_SIZE},{IMAGE_SIZE}]"
    if images.dtype != np.uint8 or images.ndim != 3 or images.shape[1:] != (IMAGE_SIZE, IMAGE_SIZE):
        raise bad(f"holds images of {images.dtype} {list(images.shape)}, not uint8 {size}")
    if not np.issubdtype(labels.dtype, np.integer) or labels.ndim != 1:
        raise bad(f"holds labels of {labels.dtype} {list(labels.shape)}, not integers [N]")
    if len(images) != len(labels):
        raise bad(f"holds {len(images)} images but {len(labels)} labels")
    if len(images) == 0:
        raise bad("holds no images")
    low, high = int(labels.min()), int(labels.max())
    if low < 0 or high >= len(LABELS):
        wrong = low if low < 0 else high
        raise bad(f"has label {wrong}; labels are 0 to {len(LABELS) - 1} ({', '.join(LABELS)})")
    return images, labels.astype(np.int64, copy=False)


# ── what a data set needs ────────────────────────────────────────────────────
# Peak memory of rendering one image (`render`: random draws, letter masks, stroke paths,
# the uint8 result; measured with tracemalloc, rounded up), and the most a split file takes
# per image (the noise leaves little to compress).
RENDER_BYTES_PER_IMAGE = 9_000
FILE_BYTES_PER_IMAGE = IMAGE_SIZE * IMAGE_SIZE + 8 + 1
# Memory and disk beyond the images: the font masks, the preview figure and its PNG.
RENDER_BASE_BYTES = 64 * 2**20
FILES_BASE_BYTES = 1 * 2**20


def needed(sizes: dict) -> tuple:
    """(peak memory, disk) of a data set of `sizes` (images per class, per split), probe sets included."""
    counts = [len(LABELS) * n for n in sizes.values()] + [len(LABELS) * sizes["test"]] * len(PROBES)
    memory = RENDER_BASE_BYTES + max(counts) * RENDER_BYTES_PER_IMAGE
    disk = FILES_BASE_BYTES + sum(counts) * FILE_BYTES_PER_IMAGE
    return memory, disk


def check_resources(sizes: dict, out) -> None:
    """Refuse, before anything is allocated or written, a data set this machine cannot hold."""
    memory, disk = needed(sizes)
    per_class = sizes["train"]
    available = available_memory()
    if available is not None and memory > available:
        raise UserError(f"--per-class {per_class} needs about {human_bytes(memory)} of memory to render the "
                        f"largest split, and {human_bytes(available)} is available: use a smaller --per-class "
                        f"(at most about {largest_fitting(available, 0):,})")
    free = free_disk(out)
    if disk > free:
        raise UserError(f"--per-class {per_class} writes up to {human_bytes(disk)} to {out}, and "
                        f"{human_bytes(free)} is free there: free some space, write somewhere else, or use a "
                        f"smaller --per-class (at most about {largest_fitting(0, free):,})")


def largest_fitting(memory: int, disk: int) -> int:
    """The largest training images per class whose data set fits in `memory` (or `disk`) bytes."""
    if memory:
        return max(0, (memory - RENDER_BASE_BYTES) // (len(LABELS) * RENDER_BYTES_PER_IMAGE))
    # the val, test, probe and benchmark splits add at most (1/10 + (1 + probes)/15 + 1/6) of the training images
    share = 1 + 1 / 10 + (1 + len(PROBES)) / 15 + 1 / 6
    return max(0, int((disk - FILES_BASE_BYTES) / (len(LABELS) * FILE_BYTES_PER_IMAGE * share)))


def preview(images: np.ndarray, labels: np.ndarray, path: Path, columns: int = 12, rows: int = 6) -> None:
    """A labelled grid of the first images, as PNG. Drawn with Pillow: a figure of 72 matplotlib
    axes took a second, most of a small data set's whole stage."""
    zoom, label_px, gap = 3, 14, 6
    side = IMAGE_SIZE * zoom
    count = min(len(images), columns * rows)
    rows = max(1, -(-count // columns))                     # no empty rows below a small set's images
    sheet = Image.new("L", (gap + columns * (side + gap), gap + rows * (label_px + side + gap)), 255)
    draw = ImageDraw.Draw(sheet)
    font = ImageFont.truetype(font_files()[1], 11)          # DejaVu Sans
    for i in range(count):
        row, column = divmod(i, columns)
        x, y = gap + column * (side + gap), gap + row * (label_px + side + gap)
        name = LABELS[labels[i]]
        draw.text((x + (side - draw.textlength(name, font=font)) / 2, y), name, fill=0, font=font)
        tile = Image.fromarray(np.asarray(images[i], np.uint8), "L").resize((side, side), Image.NEAREST)
        sheet.paste(tile, (x, y + label_px))
    buffer = io.BytesIO()
    sheet.save(buffer, format="png")
    atomic_write_bytes(path, buffer.getvalue())


# --- the data stage ------------------------------------------------------------------------

def split_sizes(per_class) -> dict:
    if per_class is None:
        return dict(DEFAULT_PER_CLASS)
    if per_class < 1:
        raise UserError(f"--per-class must be at least 1, got {per_class}")
    return {"train": per_class, "val": max(per_class // 10, 10), "test": max(per_class // 15, 10),
            "benchmark": max(per_class // 6, 10)}


def check_seed(seed: int) -> None:
    if seed < 0:
        raise UserError(f"--seed must be at least 0, got {seed}")


def make_data(out, seed: int = 0, per_class=None, quiet: bool = False) -> dict:
    """Render the data set into OUT, whole: built in a folder of its own and swapped in with
    its manifest (tinyrps.infra.artifacts.staging.staged_folder), so that OUT holds the previous data set or
    this one, never a mix. OUT/data.json records each split's sha256."""
    out = Path(out)
    check_seed(seed)
    sizes = split_sizes(per_class)
    check_resources(sizes, out)
    start = time.perf_counter()
    with staged_folder(out, "data") as folder:
        splits = {}
        for split in SPLITS:
            images, labels = make_split(split, sizes[split], seed)
            splits[split] = save_split(folder / f"{split}.npz", images, labels)
            if split == "train":
                preview(images, labels, folder / "preview.png")
            del images, labels
        probes = save_probe_sets(folder, sizes["test"], seed)
        info = {"seed": seed, "per_class": sizes, "images": sum(s["images"] for s in splits.values()),
                "splits": splits, "probes": probes,
                "fonts": [Path(f).name if f else "Pillow built-in" for f in font_files()]}
        atomic_write_json(folder / "data.json", info)
    seconds = time.perf_counter() - start
    from .infra.progress import say
    say(f"data: {info['images']} images in {seconds:.1f} s -> {out}", quiet)
    return info
