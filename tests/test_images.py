"""Reading people's own pictures: made here the way people make them (a paint program's
transparent PNG, a phone photo of a sheet on a desk, a thin pen, dirt, a blank page, noise)."""
import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from tinyrps.network import image_ops, images
from tinyrps.infra.errors import UserError


def font(size: int, name: str = "DejaVuSans.ttf") -> ImageFont.FreeTypeFont:
    import matplotlib
    from pathlib import Path
    return ImageFont.truetype(str(Path(matplotlib.__file__).parent / "mpl-data" / "fonts" / "ttf" / name), size)


def letter_on_white(letter: str = "R", size: int = 256, height: int = 160, name: str = "DejaVuSans-Bold.ttf"):
    img = Image.new("L", (size, size), 255)
    ImageDraw.Draw(img).text((size / 2, size / 2), letter, font=font(height, name), fill=0, anchor="mm")
    return img


def transparent_png(letter: str = "R") -> Image.Image:
    """What a paint program saves: black ink, every other pixel fully transparent (black RGB)."""
    img = Image.new("RGBA", (256, 256), (0, 0, 0, 0))
    ImageDraw.Draw(img).text((128, 128), letter, font=font(160, "DejaVuSans-Bold.ttf"), fill=(0, 0, 0, 255),
                             anchor="mm")
    return img


def photographed_page(letter: str = "R", seed: int = 0) -> Image.Image:
    """A white sheet lying rotated on a dark desk, blue ink, light falling off to one side, sensor noise."""
    rng = np.random.default_rng(seed)
    w, h, angle, centre = 640, 480, 6.0, (330, 235)
    sheet = Image.new("L", (w, h), 0)
    c, s = np.cos(np.radians(angle)), np.sin(np.radians(angle))
    corners = [(-190, -160), (190, -160), (190, 160), (-190, 160)]
    ImageDraw.Draw(sheet).polygon([(centre[0] + x * c - y * s, centre[1] + x * s + y * c) for x, y in corners],
                                  fill=255)
    ink = Image.new("L", (w, h), 0)
    ImageDraw.Draw(ink).text(centre, letter, font=font(170), fill=255, anchor="mm")
    ink = ink.rotate(-angle, center=centre, resample=Image.Resampling.BILINEAR)
    on_sheet = np.asarray(sheet, np.float32)[..., None] / 255
    inked = np.asarray(ink, np.float32)[..., None] / 255
    desk, paper, pen = (np.array(v, np.float32) for v in ((70, 58, 48), (232, 230, 222), (35, 40, 80)))
    rgb = desk * (1 - on_sheet) + (paper * (1 - inked) + pen * inked) * on_sheet
    rgb = rgb * np.linspace(0.7, 1.05, w)[None, :, None] + rng.normal(0, 4, rgb.shape)
    return Image.fromarray(np.clip(rgb, 0, 255).astype(np.uint8))


def arc(cx, cy, rx, ry, start_deg, end_deg, steps=24) -> list:
    t = np.radians(np.linspace(start_deg, end_deg, steps))
    return list(zip((cx + rx * np.cos(t)).tolist(), (cy + ry * np.sin(t)).tolist()))


# Pen paths of the three letters on a 512 px canvas (y down), as a hand moves.
PEN_PATHS = {
    "P": [[(190, 420), (190, 100)], [(190, 100)] + arc(260, 180, 80, 80, -90, 90) + [(190, 260)]],
    "R": [[(190, 420), (190, 100)], [(190, 100)] + arc(260, 180, 80, 80, -90, 90) + [(190, 260)],
          [(250, 260), (340, 420)]],
    "S": [arc(260, 180, 70, 80, -30, -270) + arc(260, 340, 70, 80, -90, 150)],
}


def pen_drawing(letter: str, pen: int, size: int = 512) -> Image.Image:
    """A letter drawn with a round pen `pen` px wide on a white canvas, as in a paint program."""
    img = Image.new("L", (size, size), 255)
    d = ImageDraw.Draw(img)
    r = pen / 2
    for path in PEN_PATHS[letter]:
        d.line(path, fill=0, width=pen, joint="curve")
        for x, y in (path[0], path[-1]):
            d.ellipse((x - r, y - r, x + r, y + r), fill=0)
    return img


def read(img: Image.Image, tmp_path, name: str = "picture.png", **save) -> images.Reading:
    path = tmp_path / name
    img.save(path, **save)
    return images.read_image(path)


def ink_mask(reading: images.Reading) -> np.ndarray:
    return reading.image > 127


def overlap(a: images.Reading, b: images.Reading) -> float:
    """Intersection over union of the two readings' ink."""
    ma, mb = ink_mask(a), ink_mask(b)
    return float((ma & mb).sum() / max((ma | mb).sum(), 1))


def letter_box(reading: images.Reading) -> tuple:
    rows, cols = np.nonzero(ink_mask(reading))
    return rows.max() - rows.min() + 1, cols.max() - cols.min() + 1


def test_a_clean_drawing_becomes_a_bright_letter_centred_on_dark(tmp_path):
    r = read(letter_on_white("P"), tmp_path)
    assert r.letter_found and r.image.shape == (28, 28) and r.image.dtype == np.uint8
    assert r.image[0].max() < 30 and r.image[:, 0].max() < 30      # dark background
    assert r.image.max() == 255                                    # contrast stretched
    height, width = letter_box(r)
    assert max(height, width) in range(images.FIT_BOX - 1, images.FIT_BOX + 2)
    rows, cols = np.nonzero(ink_mask(r))
    assert abs((rows.min() + rows.max()) / 2 - 13.5) <= 1.5 and abs((cols.min() + cols.max()) / 2 - 13.5) <= 1.5


def test_transparent_png_is_ink_on_white_paper(tmp_path):
    reference = read(letter_on_white("R"), tmp_path, "white.png")
    r = read(transparent_png("R"), tmp_path, "transparent.png")
    assert r.letter_found
    assert overlap(r, reference) > 0.9


def test_exif_orientation_is_applied(tmp_path):
    upright = letter_on_white("P", size=300)
    reference = read(upright, tmp_path, "upright.jpg", quality=95)
    sideways = upright.transpose(Image.Transpose.ROTATE_90)     # stored turned, as a camera does
    exif = Image.Exif()
    exif[0x0112] = 6                                             # Orientation: rotate 90 CW to display
    r = read(sideways, tmp_path, "sideways.jpg", quality=95, exif=exif.tobytes())
    assert overlap(r, reference) > 0.85
    plain = read(sideways, tmp_path, "sideways-no-exif.jpg", quality=95)
    assert overlap(plain, reference) < 0.6                       # the check can tell the difference


@pytest.mark.parametrize("letter", ["R", "P", "S"])
def test_photographed_page_reads_the_letter_not_the_sheet(tmp_path, letter):
    photo = photographed_page(letter, seed=ord(letter))
    path = tmp_path / "photo.jpg"
    photo.save(path, quality=80)
    assert images.find_sheet(images.open_gray(path)) is not None
    r = images.read_image(path)
    assert r.letter_found
    # the same letter, turned as on the sheet, drawn cleanly
    clean = letter_on_white(letter, height=170, size=300, name="DejaVuSans.ttf")
    reference = read(clean.rotate(-6.0, resample=Image.Resampling.BILINEAR, fillcolor=255), tmp_path, "clean.png")
    assert overlap(r, reference) > 0.7
    assert max(letter_box(r)) <= images.FIT_BOX + 1


def test_a_sheet_is_not_found_where_there_is_none():
    light_letter_on_dark = 255.0 - np.asarray(letter_on_white("P", height=220), np.float32)
    assert images.find_sheet(light_letter_on_dark) is None
    assert images.find_sheet(np.asarray(letter_on_white("S"), np.float32)) is None


@pytest.mark.parametrize("letter", ["R", "P", "S"])
def test_thin_pen_strokes_come_out_as_thick_as_training_letters(tmp_path, letter):
    thin = read(pen_drawing(letter, pen=5), tmp_path, "thin.png")
    thick = read(pen_drawing(letter, pen=30), tmp_path, "thick.png")
    assert thin.letter_found
    # without thickening a 5 px pen on 512 px shrinks to well under one pixel
    assert images.stroke_width(ink_mask(thin)) >= 2.0
    assert ink_mask(thin).sum() >= 0.6 * ink_mask(thick).sum()
    assert overlap(thin, thick) > 0.5


def test_a_speck_of_dirt_does_not_widen_the_crop(tmp_path):
    clean = letter_on_white("R", size=512, height=200, name="DejaVuSans.ttf")
    dirty = clean.copy()
    ImageDraw.Draw(dirty).ellipse((440, 440, 452, 452), fill=40)
    r_clean, r_dirty = read(clean, tmp_path, "clean.png"), read(dirty, tmp_path, "dirty.png")
    assert r_dirty.letter_found
    assert letter_box(r_dirty) == letter_box(r_clean)
    assert overlap(r_dirty, r_clean) > 0.95


def test_blank_page_and_noise_have_no_letter(tmp_path):
    rng = np.random.default_rng(0)
    shaded = (235 + rng.normal(0, 3, (480, 640))) * np.linspace(0.7, 1.05, 640)[None, :]   # light from one side
    page = Image.fromarray(np.clip(shaded, 0, 255).astype(np.uint8))
    noise = Image.fromarray(rng.integers(0, 256, (256, 256), dtype=np.uint8))
    gray_noise = Image.fromarray(np.clip(128 + rng.normal(0, 40, (300, 300)), 0, 255).astype(np.uint8))
    cases = [(Image.new("L", (400, 300), 245), "blank.png", {}), (page, "page.jpg", {"quality": 75}),
             (photographed_page(" "), "empty-sheet.jpg", {"quality": 80}), (noise, "noise.png", {}),
             (gray_noise, "gray-noise.png", {}), (Image.new("RGB", (28, 28), "white"), "tiny.png", {})]
    for img, name, save in cases:
        r = read(img, tmp_path, name, **save)
        assert not r.letter_found, name
        assert r.image.shape == (28, 28) and r.image.dtype == np.uint8   # the model still gets an input


def test_a_dot_alone_on_a_page_is_not_a_letter(tmp_path):
    page = Image.new("L", (512, 512), 250)
    ImageDraw.Draw(page).ellipse((300, 300, 306, 306), fill=30)
    assert not read(page, tmp_path).letter_found


def test_no_test_image_of_the_data_is_called_empty(data_dir):
    from tinyrps.data import load_split
    test_images, _ = load_split(data_dir, "test")
    empty = [i for i, img in enumerate(test_images) if not images.read_letter(img).letter_found]
    assert empty == []


def test_training_like_images_are_refitted_not_garbled():
    """A rendered image read as a picture: the same letter, now filling the fitted box."""
    from tinyrps.network.letters import Jitter, render
    clean = Jitter(height_px=(10, 12), noise_sigma=(0, 0), blur_px=(0, 0), invert_prob=0.0, stroke_prob=0.0,
                   rotate_deg=(0, 0), shear=(0, 0), aspect=(1, 1))
    img = render(np.array([1]), np.random.default_rng(3), clean)[0]
    r = images.read_letter(img)
    assert r.letter_found
    assert max(letter_box(r)) in range(images.FIT_BOX - 1, images.FIT_BOX + 2)


@pytest.mark.parametrize("name,save,convert", [
    ("letter.webp", {"lossless": True}, None),
    ("letter.tiff", {}, "I;16"),
    ("letter.gif", {}, "P"),
    ("letter.jpg", {"quality": 90}, "CMYK"),
    ("letter.bmp", {}, "RGB"),
    ("letter-la.png", {}, "LA"),
])
def test_other_formats_and_modes_read_alike(tmp_path, name, save, convert):
    base = letter_on_white("S")
    reference = read(base, tmp_path, "reference.png")
    img = base
    if convert == "I;16":
        img = Image.fromarray(np.asarray(base, np.uint16) * 257)
    elif convert:
        img = base.convert(convert)
    r = read(img, tmp_path, name, **save)
    assert r.letter_found and overlap(r, reference) > 0.85


# ── files that cannot be read: one clear message each ───────────────────────
def test_not_an_image(tmp_path):
    bad = tmp_path / "notes.png"
    bad.write_text("not an image")
    with pytest.raises(UserError, match="not an image Pillow can read"):
        images.read_image(bad)


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(UserError, match="image not found"):
        images.read_image(tmp_path / "nope.png")
    with pytest.raises(UserError, match="is a folder, not an image"):
        images.read_image(tmp_path)


def test_truncated_image(tmp_path):
    path = tmp_path / "cut.png"
    letter_on_white("R").save(path)
    path.write_bytes(path.read_bytes()[:300])
    with pytest.raises(UserError, match="damaged or truncated"):
        images.read_image(path)


def test_too_many_pixels(tmp_path, monkeypatch):
    path = tmp_path / "huge.png"
    Image.new("L", (300, 300), 255).save(path)
    monkeypatch.setattr(images, "MAX_PIXELS", 200 * 200)
    with pytest.raises(UserError, match=r"too large \(300x300 pixels"):
        images.read_image(path)
    # beyond what Pillow itself will open (its decompression-bomb limit)
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 100 * 100)
    with pytest.raises(UserError, match="too large"):
        images.read_image(path)


# ── building blocks ──────────────────────────────────────────────────────────
def test_connected_components_match_a_flood_fill():
    from collections import deque
    rng = np.random.default_rng(1)

    def flood(mask, connectivity):
        labels, count = np.zeros(mask.shape, int), 0
        steps = [(dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1)
                 if (dy, dx) != (0, 0) and (connectivity == 8 or 0 in (dy, dx))]
        for start in zip(*np.nonzero(mask)):
            if labels[start]:
                continue
            count += 1
            labels[start], queue = count, deque([start])
            while queue:
                y, x = queue.popleft()
                for dy, dx in steps:
                    p = (y + dy, x + dx)
                    if 0 <= p[0] < mask.shape[0] and 0 <= p[1] < mask.shape[1] and mask[p] and not labels[p]:
                        labels[p] = count
                        queue.append(p)
        return labels, count

    for _ in range(30):
        mask = rng.random((int(rng.integers(1, 25)), int(rng.integers(1, 25)))) < rng.uniform(0.2, 0.7)
        for connectivity in (4, 8):
            labels, count = image_ops.label_components(mask, connectivity)
            expected, expected_count = flood(mask, connectivity)
            assert count == expected_count
            assert len(set(zip(labels[mask].tolist(), expected[mask].tolist()))) == count   # same partition
            assert (labels[~mask] == 0).all()


def test_stroke_width_of_a_band():
    band = np.zeros((60, 60), bool)
    band[10:50, 20:26] = True
    assert images.stroke_width(band) == pytest.approx(6, rel=0.25)
