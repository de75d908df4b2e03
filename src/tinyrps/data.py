"""The data set: the splits of synthetic letters (tinyrps.network.letters) on their own random
streams, the probe sets, their files and the data stage that writes them.

A data set is a folder of one .npz file per split (images and labels, written with fixed dates
so that the same seed and sizes give the same bytes), the probe sets as data folders of their
own, a preview sheet, data.json (what was made, with each file's SHA-256) and a manifest. The
stage checks that the set fits in memory and on disk before it renders, and writes the folder
whole or not at all (staged_folder).
"""
from __future__ import annotations

import io
import os
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from .infra.artifacts.files import (atomic_write_bytes, atomic_write_json, available_memory, free_disk, human_bytes,
                              sha256_bytes, sha256_file)
from .infra.artifacts.records import data_info
from .infra.artifacts.locks import interrupts_deferred
from .infra.artifacts.manifest import mismatch, write_manifest
from .infra.artifacts.staging import staged_folder
from .infra.errors import UserError
from .network.labels import DEFAULT_PER_CLASS, IMAGE_SIZE, LABELS  # noqa: F401 (DEFAULT_PER_CLASS: read from here too)
from .network.letters import Jitter, font_files, render

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

# Sets that probe what the training range covers least: tiny letters and letters far
# from the middle (read through the raw program, no crop or refit).
PROBES = {
    "small": Jitter(height_px=(7.0, 9.0), shift_px=3.0),
    "off-centre": Jitter(height_px=(10.0, 14.0), offset_min_px=4.0),
}


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
