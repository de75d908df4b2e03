"""The NPU's output stage: accumulator + bias, scaled, rounded, shifted, offset and clamped.

    out = clamp(((acc + bias) * scale + R) >> shift, ...) + zero point, clamped to the
          activation range and then to the OFM's type

R is the rounding term of the round mode (shift 0: R = 0):
    NATURAL            1 << (shift-1)                        (TOSA RESCALE, single round)
    DBL / DOUBLE_SYM.  NATURAL + (v >= 0 ? D : -D)           (TOSA RESCALE, double round)
    DOUBLE_ASYMMETRIC  NATURAL + D
    SYMMETRIC          NATURAL - (v < 0)                     (half away from zero)
    TRUNCATE (to zero) v >= 0 ? 0 : (1 << shift) - 1
    TRUNCATE_TO_LOWER  0                                     (floor)
with D = 1 << (30 - d) when shift > 31 - d, else 0, and d the double-round position (0 for
RESCALE; the U85's OFM_SCALE.dbl_rnd). The products are exact: in int64 where they fit,
else in Python integers.
"""
from __future__ import annotations

import numpy as np

from . import NpuUnsupported

NATURAL, DOUBLE_SYMMETRIC, DOUBLE_ASYMMETRIC, SYMMETRIC, TRUNCATE_TO_ZERO, TRUNCATE_TO_LOWER = (
    "NATURAL", "DOUBLE_SYMMETRIC", "DOUBLE_ASYMMETRIC", "SYMMETRIC", "TRUNCATE_TO_ZERO", "TRUNCATE_TO_LOWER")
U55_ROUND = {0: DOUBLE_SYMMETRIC, 1: TRUNCATE_TO_ZERO, 2: NATURAL}
U85_ROUND = {0: DOUBLE_SYMMETRIC, 1: NATURAL, 2: DOUBLE_ASYMMETRIC, 3: SYMMETRIC, 4: TRUNCATE_TO_ZERO,
             5: TRUNCATE_TO_LOWER}


def round_mode(table: dict, value: int, register: str) -> str:
    if value not in table:
        raise NpuUnsupported(f"{register}.round_mode {value} is not implemented")
    return table[value]


def rescale(v: np.ndarray, scale, shift, mode: str, double_round: int = 0) -> np.ndarray:
    """((v * scale + R) >> shift) per element; scale and shift broadcast over v's last axis."""
    scale = np.asarray(scale, np.int64)
    shift = np.asarray(shift, np.int64)
    v = np.asarray(v, np.int64)
    big = int(np.abs(v).max(initial=0)) * int(np.abs(scale).max(initial=0)) >= 1 << 62
    if big:
        v, scale, shift = v.astype(object), scale.astype(object), shift.astype(object)
    half = np.where(shift > 0, np.left_shift(1, np.maximum(shift - 1, 0)), 0)
    if mode == NATURAL:
        r = half
    elif mode in (DOUBLE_SYMMETRIC, DOUBLE_ASYMMETRIC):
        d = np.where(shift > 31 - double_round, 1 << (30 - double_round), 0)
        r = half + (np.where(v >= 0, d, -d) if mode == DOUBLE_SYMMETRIC else d)
    elif mode == SYMMETRIC:
        r = half - (v < 0)
    elif mode == TRUNCATE_TO_ZERO:
        r = np.where(v >= 0, 0, np.left_shift(1, shift) - 1)
    elif mode == TRUNCATE_TO_LOWER:
        r = 0
    else:
        raise NpuUnsupported(f"round mode {mode} is not implemented")
    out = (v * scale + r) >> shift
    return out.astype(np.int64) if big else out


def clamp(v: np.ndarray, low: int, high: int) -> np.ndarray:
    return np.minimum(np.maximum(v, low), high)
