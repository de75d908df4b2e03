"""People's own pictures of a letter -> the model's 28x28 input.

What people bring: a PNG drawn in a paint program (often with a transparent
background), a scan, a phone photo of a sheet of paper lying on a desk (uneven
light, slight rotation, JPEG), a thin pen line, a speck of dirt, or nothing at
all. The steps:

1. open: EXIF orientation applied, alpha composited onto white, any mode
   (palette, CMYK, 16-bit) to gray, shrunk to at most WORK_SIDE pixels;
2. the page: a light, convex region with a darker border around it is a sheet
   on a desk; only the sheet is searched for the letter, and ink on it is dark.
   Without one, the whole image is the page and the ink is the polarity that
   stands out from the median;
3. the ink: a smooth background (a quadratic surface, fitted robustly, so a
   lighting gradient goes away) is subtracted, the noise level measured, and
   the ink is what stands clearly above it;
4. the letter: connected ink components, minus specks (small components away
   from the letter), or no letter at all if no component is big and strong
   enough;
5. the fit: the letter's box is scaled into a FIT_BOX square, thin strokes are
   thickened to the width the model was trained on, and the result is
   box-filtered down into the middle of a dark 28x28 image, ink bright.

Only numpy and Pillow (the primitives in tinyrps.network.image_ops): reading an image must not pay
for torch.
"""
from __future__ import annotations

import io
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageFilter, ImageOps, UnidentifiedImageError

from ..infra.errors import UserError
from .image_ops import (blur, blur_gain, component_boxes, convex_hull_area, erode, fill_holes, label_components,
                        otsu_threshold)
from .labels import IMAGE_SIZE

# The analysis runs on the image shrunk to at most this many pixels a side: plenty
# for a 28x28 result, and a 4-7 px pen line on a 512 px canvas stays 3 px or wider.
WORK_SIDE = 400
# Larger images are refused before they are decoded (a photo of 100 MP is already rare).
MAX_PIXELS = 100_000_000
# The letter's longer side in the 28x28 result: the middle of the training heights.
FIT_BOX = 20
# The letter is fitted at this multiple of the final size, thickened there, then box-reduced.
SUPERSAMPLE = 4
# Stroke width, as a fraction of the fitted box, below which strokes are thickened and the
# width they are brought to (the thinnest and a typical training font).
MIN_STROKE = 0.09
TARGET_STROKE = 0.13
# Ink is signal above max(NOISE_SIGMAS * noise, PEAK_FRACTION * the strongest ink).
NOISE_SIGMAS = 4.0
PEAK_FRACTION = 0.3
# A letter: ink this much above the background (gray levels, 0-255) ...
MIN_CONTRAST = 12.0
# ... in a component whose box spans this fraction of the page's shorter side ...
MIN_LETTER_SPAN = 0.02
# ... and which holds this share of all the ink (noise spreads its ink over many specks).
MIN_INK_SHARE = 0.3
# Components this small relative to the largest count as specks unless they lie close to it.
SPECK_AREA = 0.15
NEAR_LETTER = 0.15     # "close": within this fraction of the letter's box size
# A sheet: the largest light region, hole-filled, covering this share of the image ...
SHEET_MIN_AREA = 0.12
# ... nearly convex (area / convex hull area) ...
SHEET_CONVEXITY = 0.9
# ... with at least this share of the image outside it (else the page fills the frame) ...
SHEET_MAX_AREA = 0.97
# ... which is darker than the sheet by this many gray levels and makes up this share of the
# image's border (a dark letter that runs off the edge of a light image touches less of it).
SHEET_DESK_CONTRAST = 25.0
SHEET_DESK_BORDER = 0.3
# Smaller pictures are drawings or crops, never a photographed sheet.
SHEET_MIN_SIDE = 64
# The sheet's outer rim (shadows, paper edge) is left out: this fraction of its size.
SHEET_RIM = 0.03


@dataclass(frozen=True)
class Reading:
    """The model's input made from one picture, and whether a letter was found in it."""
    image: np.ndarray      # uint8 [28,28], dark background, bright ink
    letter_found: bool


# ── opening ──────────────────────────────────────────────────────────────────
class ImageTooLarge(UserError):
    """The picture has more pixels than the reader takes (a web upload answers 413 for it)."""


def read_image(path) -> Reading:
    """A picture file -> Reading. Problems with the file raise UserError with one clear line."""
    return read_letter(open_gray(path))


def read_image_bytes(data: bytes, name: str) -> Reading:
    """A picture's bytes (an upload) -> Reading, read as read_image reads a file; `name` stands
    for the file in the messages."""
    return read_letter(_decode_gray(io.BytesIO(data), name))


def open_gray(path) -> np.ndarray:
    """The picture as float32 gray levels 0-255 [H,W], upright, shrunk to at most WORK_SIDE."""
    path = Path(path)
    if path.is_dir():
        raise UserError(f"{path} is a folder, not an image")
    if not path.exists():
        raise UserError(f"image not found: {path}")
    return _decode_gray(path, path)


def _decode_gray(source, name) -> np.ndarray:
    """open_gray of a path or a binary file object; `name` is what the messages call it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(source) as img:
                if img.width * img.height > MAX_PIXELS:
                    raise _too_large(name, f"{img.width}x{img.height} pixels")
                img.draft(img.mode, (WORK_SIDE, WORK_SIDE))   # JPEG: decode at a reduced scale, much faster
                return _to_gray(_upright(img))
    except Image.DecompressionBombError:
        raise _too_large(name, "more pixels than Pillow will decode") from None
    except UnidentifiedImageError:
        raise UserError(f"{name} is not an image Pillow can read (use PNG, JPEG, WebP, TIFF, GIF or BMP)") from None
    except PermissionError:
        raise UserError(f"cannot read {name}: permission denied") from None
    except (OSError, ValueError, SyntaxError) as e:     # what Pillow raises for a damaged file
        raise UserError(f"{name} is a damaged or truncated image ({e}); save it again") from None


def _too_large(name, what: str) -> UserError:
    return ImageTooLarge(f"{name} is too large ({what}; at most {MAX_PIXELS:,} pixels): scale it down first")


def _upright(img: Image.Image) -> Image.Image:
    """Apply the EXIF orientation a camera recorded (a photo taken sideways stays sideways otherwise)."""
    try:
        return ImageOps.exif_transpose(img)
    except Exception:       # a malformed EXIF block: the pixels are still good
        return img


def _to_gray(img: Image.Image) -> np.ndarray:
    if img.mode in ("I", "I;16", "I;16B", "I;16L", "I;16N", "F"):
        gray = _shrink(img.convert("F"))
        a = np.asarray(gray, dtype=np.float32)
        # 16-bit images hold 0-65535; 32-bit float images usually 0-1
        scale = 255.0 / 65535.0 if a.max(initial=0) > 255 else (255.0 if a.max(initial=0) <= 1.0 else 1.0)
        return a * scale
    if img.mode in ("RGBA", "LA", "La", "RGBa", "PA") or "transparency" in img.info:
        # transparent pixels are paper: composite onto white
        rgba = img.convert("RGBA")
        white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        img = Image.alpha_composite(white, rgba)
    if img.mode not in ("L", "RGB", "RGBA", "CMYK", "1", "P"):
        img = img.convert("RGB")
    return np.asarray(_shrink(img.convert("L")), dtype=np.float32)


def _shrink(img: Image.Image) -> Image.Image:
    """At most WORK_SIDE a side, area-averaged: a thin line gets fainter, never lost."""
    scale = WORK_SIDE / max(img.size)
    if scale >= 1:
        return img
    size = (max(1, round(img.width * scale)), max(1, round(img.height * scale)))
    return img.resize(size, Image.Resampling.BOX)


# ── finding the letter ───────────────────────────────────────────────────────
def read_letter(gray: np.ndarray) -> Reading:
    """Gray levels [H,W] -> Reading (see the module's docstring for the steps)."""
    gray = np.asarray(gray, dtype=np.float32)
    page = find_sheet(gray)
    sigma = _smoothing_sigma(gray.shape)
    dark_ink = page is not None or _ink_is_dark(gray, sigma)
    region = page if page is not None else np.ones(gray.shape, bool)
    ink_up = 255.0 - gray if dark_ink else gray
    signal = ink_up - fit_background(ink_up, region)
    signal[~region] = 0.0
    smooth = blur(signal, sigma)
    noise = pixel_noise(signal, region)
    letter = find_letter(smooth, region, noise * blur_gain(sigma))
    if letter is None:
        return Reading(_whole_region(signal, region, noise), False)
    return Reading(fit_letter(np.where(letter, signal, 0.0), letter, noise), True)


def _ink_is_dark(gray: np.ndarray, sigma: float) -> bool:
    """Without a sheet: the median is the background, and the ink is the side (darker or lighter)
    with more stands-out-clearly mass, so a speck of the other polarity does not decide it."""
    smooth = blur(gray, sigma)
    deviation = smooth - np.median(smooth)
    clear = NOISE_SIGMAS * pixel_noise(gray, np.ones(gray.shape, bool)) * blur_gain(sigma) + 1.0
    return np.clip(-deviation - clear, 0, None).sum() > np.clip(deviation - clear, 0, None).sum()


def _smoothing_sigma(shape) -> float:
    # enough to tame sensor and JPEG noise, small against a letter of any size that is to be read
    return max(0.7, max(shape) / 400)


def pixel_noise(signal: np.ndarray, region: np.ndarray) -> float:
    """Standard deviation of the pixel noise, from differences of horizontal neighbours: the
    letter's edges are few among them, so their median absolute value measures the noise alone."""
    both = region[:, 1:] & region[:, :-1]
    steps = (signal[:, 1:] - signal[:, :-1])[both]
    return float(1.4826 * np.median(np.abs(steps)) / np.sqrt(2)) if steps.size else 0.0


def find_letter(smooth: np.ndarray, region: np.ndarray, noise: float):
    """The letter's mask (bool [H,W]) in the smoothed ink signal, specks dropped; None if no letter."""
    values = smooth[region]
    if not values.size:
        return None
    peak = float(np.percentile(values, 99.95))
    if peak < max(MIN_CONTRAST, NOISE_SIGMAS * noise):
        return None
    ink = (smooth > max(NOISE_SIGMAS * noise, PEAK_FRACTION * peak)) & region
    labels, count = label_components(ink)
    if count == 0:
        return None
    areas = np.bincount(labels.ravel(), minlength=count + 1)[1:]
    mass = np.bincount(labels.ravel(), weights=smooth.ravel(), minlength=count + 1)[1:]
    largest = int(np.argmax(mass))
    if mass[largest] < MIN_INK_SHARE * mass.sum():
        return None                                   # ink spread over many specks: noise
    boxes = component_boxes(labels, count)
    span = max(boxes[largest, 2] - boxes[largest, 0], boxes[largest, 3] - boxes[largest, 1])
    rows, cols = np.nonzero(region)
    page_side = min(rows.max() - rows.min() + 1, cols.max() - cols.min() + 1)
    if span < MIN_LETTER_SPAN * page_side or areas[largest] < 3:
        return None                                   # a speck on an empty page
    keep = letter_components(areas, boxes, largest)
    return np.isin(labels, keep + 1)


def letter_components(areas: np.ndarray, boxes: np.ndarray, largest: int) -> np.ndarray:
    """Indices of the components that make up the letter: the largest, every big one, and small
    ones that lie close to the letter (a detached serif); far small ones are specks."""
    keep = [largest]
    box = boxes[largest].astype(np.float64)
    for i in np.argsort(-areas):
        if i == largest:
            continue
        size = max(box[2] - box[0], box[3] - box[1])
        near = _grow(box, NEAR_LETTER * size)
        inside = (boxes[i, 0] >= near[0] and boxes[i, 1] >= near[1] and boxes[i, 2] <= near[2]
                  and boxes[i, 3] <= near[3])
        if areas[i] >= SPECK_AREA * areas[largest] or inside:
            keep.append(int(i))
            box = np.concatenate([np.minimum(box[:2], boxes[i, :2]), np.maximum(box[2:], boxes[i, 2:])])
    return np.array(keep)


def _grow(box, by: float) -> np.ndarray:
    return np.array([box[0] - by, box[1] - by, box[2] + by, box[3] + by])


# ── the sheet ────────────────────────────────────────────────────────────────
def find_sheet(gray: np.ndarray):
    """A light sheet lying on a darker desk: its inside (bool [H,W], rim left out), or None."""
    if min(gray.shape) < SHEET_MIN_SIDE:
        return None
    light = gray > otsu_threshold(gray)
    labels, count = label_components(light)
    if count == 0:
        return None
    areas = np.bincount(labels.ravel(), minlength=count + 1)
    areas[0] = 0
    sheet = fill_holes(labels == int(np.argmax(areas)))
    share = sheet.mean()
    if not SHEET_MIN_AREA <= share <= SHEET_MAX_AREA:
        return None
    if sheet.sum() < SHEET_CONVEXITY * convex_hull_area(sheet):
        return None                                   # not a sheet's shape (a bold letter, a blob)
    if np.median(gray[sheet]) - np.median(gray[~sheet]) < SHEET_DESK_CONTRAST:
        return None
    border = np.concatenate([sheet[0], sheet[-1], sheet[:, 0], sheet[:, -1]])
    if 1.0 - border.mean() < SHEET_DESK_BORDER:
        return None
    rows, cols = np.nonzero(sheet)
    rim = max(1, round(SHEET_RIM * min(rows.max() - rows.min(), cols.max() - cols.min())))
    return erode(sheet, rim)


# ── the background and the noise ─────────────────────────────────────────────
def fit_background(ink_up: np.ndarray, region: np.ndarray, rounds: int = 4) -> np.ndarray:
    """A quadratic surface through the background of `region` (ink is bright, so it is left out
    round by round as what lies well above the surface): lighting gradients, not letters."""
    h, w = ink_up.shape
    step = max(1, round(max(h, w) / 80))              # a coarse grid of samples is plenty
    ys, xs = np.nonzero(region[::step, ::step])
    values = ink_up[::step, ::step][ys, xs].astype(np.float64)
    if values.size < 12:
        return np.full(ink_up.shape, float(np.median(ink_up[region])) if region.any() else 0.0, np.float32)
    basis = _quadratic_basis(ys * step / h, xs * step / w)
    use = np.ones(values.size, bool)
    coeffs = np.zeros(basis.shape[1])
    for _ in range(rounds):
        # normal equations of a 6-term fit: tiny, and free of LAPACK's thread start-up
        b = basis[use]
        coeffs = np.linalg.solve(b.T @ b + 1e-9 * np.eye(b.shape[1]), b.T @ values[use])
        residual = values - basis @ coeffs
        spread = 1.4826 * np.median(np.abs(residual[use] - np.median(residual[use]))) + 1.0
        use = residual < 2.5 * spread
        if use.sum() < 12:
            break
    y = (np.arange(h, dtype=np.float64) / h)[:, None]
    x = (np.arange(w, dtype=np.float64) / w)[None, :]
    c = coeffs
    return (c[0] + c[1] * x + c[2] * y + c[3] * x * x + c[4] * x * y + c[5] * y * y).astype(np.float32)


def _quadratic_basis(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    return np.stack([np.ones_like(x), x, y, x * x, x * y, y * y], axis=-1)


# ── fitting the letter into 28x28 ────────────────────────────────────────────
def fit_letter(signal: np.ndarray, letter: np.ndarray, noise: float) -> np.ndarray:
    """The letter's ink (bright on 0), cropped to its box, contrast stretched, scaled so its longer
    side is FIT_BOX, thin strokes thickened, centred in a 28x28 uint8 image. The work happens at
    SUPERSAMPLE x the final size; one box reduction at the end anti-aliases it."""
    rows, cols = np.nonzero(letter)
    box = (slice(rows.min(), rows.max() + 1), slice(cols.min(), cols.max() + 1))
    crop = Image.fromarray(stretch(signal[box], signal[box][letter[box]], noise))
    side = FIT_BOX * SUPERSAMPLE
    big = scaled_to(crop, side)
    width = stroke_width(np.asarray(big) > 127)
    if 0 < width < MIN_STROKE * side:
        # Thin strokes: scale the letter a little smaller and widen its strokes by `grow` on
        # each side, so that it still spans `side` and its strokes come out TARGET_STROKE wide.
        grow = max(1, round((TARGET_STROKE * side - width) / (2 * (1 - width / side))))
        big = thicken(scaled_to(crop, side - 2 * grow), grow)
    canvas = Image.new("L", (IMAGE_SIZE * SUPERSAMPLE, IMAGE_SIZE * SUPERSAMPLE), 0)
    canvas.paste(big, ((canvas.width - big.width) // 2, (canvas.height - big.height) // 2))
    return np.asarray(canvas.reduce(SUPERSAMPLE), dtype=np.uint8)


def scaled_to(img: Image.Image, side: int) -> Image.Image:
    """Scaled (aspect kept) so its longer side is `side`: area-averaged when shrinking."""
    scale = side / max(img.size)
    size = (max(1, round(img.width * scale)), max(1, round(img.height * scale)))
    return img.resize(size, Image.Resampling.BOX if scale < 1 else Image.Resampling.BILINEAR)


def thicken(img: Image.Image, grow: int) -> Image.Image:
    """Strokes widened by `grow` pixels on each side (a max filter, on a canvas grown to fit)."""
    # A thin line shrunk to this size is fainter than the ink it was drawn with: lift what
    # reaches half the ink's level to full ink before widening it.
    pixels = np.asarray(img, dtype=np.float32)
    top = float(np.percentile(pixels[pixels > 0], 90)) if (pixels > 0).any() else 255.0
    img = Image.fromarray(np.clip(pixels * (2.0 * 255.0 / max(top, 1.0)), 0, 255).astype(np.uint8))
    return ImageOps.expand(img, grow, fill=0).filter(ImageFilter.MaxFilter(2 * grow + 1))


def stretch(values: np.ndarray, ink: np.ndarray, noise: float) -> np.ndarray:
    """Float signal -> uint8: the background noise floor to 0, the ink's typical level to 255."""
    floor = 2.0 * noise
    top = float(np.percentile(ink, 90)) if ink.size else float(values.max(initial=1.0))
    top = max(top, floor + 1.0)
    return np.clip((values - floor) / (top - floor) * 255.0, 0, 255).astype(np.uint8)


def stroke_width(mask: np.ndarray) -> float:
    """Typical stroke width of a mask: twice its area over its boundary length (a band of
    width w and length L has area w*L and two edges of length L)."""
    area = mask.sum()
    if area == 0:
        return 0.0
    inner = mask.copy()
    inner[1:] &= mask[:-1]
    inner[:-1] &= mask[1:]
    inner[:, 1:] &= mask[:, :-1]
    inner[:, :-1] &= mask[:, 1:]
    boundary = area - inner.sum()
    return 2.0 * area / max(boundary, 1)


def _whole_region(signal: np.ndarray, region: np.ndarray, noise: float) -> np.ndarray:
    """No letter: the page's ink signal as it is, shrunk to 28x28 (the model still says something)."""
    rows, cols = np.nonzero(region)
    if not len(rows):
        return np.zeros((IMAGE_SIZE, IMAGE_SIZE), np.uint8)
    crop = signal[rows.min():rows.max() + 1, cols.min():cols.max() + 1]
    img = Image.fromarray(stretch(crop, crop[crop > 0], noise))
    return np.asarray(img.resize((IMAGE_SIZE, IMAGE_SIZE), Image.Resampling.BOX), dtype=np.uint8)
