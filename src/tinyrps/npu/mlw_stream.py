"""The standard Ethos-U weight stream (MLW, "SWD" on the U85), decoded with every read bounds-checked.

A stream is a sequence of slices, each up to 32768 nonzero-or-palette values, ended by
end-of-stream codes (ZDIV = 7) padded to a byte. A slice header holds:

    ZDIV 3 bits     Golomb-Rice divisor of the zero runs (0-3), or 6: no zero runs
    SLICELEN 15     values in the slice, less one
    WDIV 3          Golomb-Rice divisor of the values (0-5), or 7: stored uncompressed
    WTRUNC 1        the unary parts are truncated at 2
    NEWPAL 1        a palette follows: DIROFS 5, PALSIZE 5 (size less one, 0 = none),
                    PALBITS 3 (bits per entry less two), then the entries

The body interleaves chunks of up to 12 value symbols (12-bit unary masks, then their second
unary bits, then their remainders one chunk later) with chunks of zero-run symbols (12- or 8-bit
unary masks, remainders one chunk later), the zero runs kept at most 8 symbols behind. A value
below the palette size is a palette index; above it, value - size + DIROFS. Either way the result
is a 9-bit magnitude-and-sign (sign in bit 0) weight. With zero runs, a new palette's slice starts
with a run, and each value is followed by one.

The Vela wheel's own decoder ends the process on a stream that runs out; this one raises a
UserError instead, as it does for every other malformed field, so a corrupt program is one line.
"""
from __future__ import annotations

import numpy as np

from ..infra.errors import UserError

ZDIV_NONE, END = 6, 7
WDIV_RAW = 7
VALUE_LIMIT = 512          # weights are 9-bit


class _Reader:
    """Little-endian bit fields of a byte string, each read checked against its end."""

    def __init__(self, data: bytes):
        self.data = bytes(data) + bytes(16)       # room for a window at the last byte
        self.size = len(data)
        self.pos = 0

    def get(self, width: int) -> int:
        if not width:
            return 0
        if self.pos + width > 8 * self.size:
            raise UserError(f"a weight stream of {self.size} bytes ends inside a field: the weights are corrupt")
        at = self.pos >> 3
        window = int.from_bytes(self.data[at:at + 4], "little") >> (self.pos & 7)
        self.pos += width
        return window & ((1 << width) - 1)

    def get_many(self, width: int, count: int) -> list:
        """`count` consecutive fields of `width` bits (at most 12 of 9 bits: one window)."""
        if not width or not count:
            return [0] * count
        total = width * count
        if self.pos + total > 8 * self.size:
            raise UserError(f"a weight stream of {self.size} bytes ends inside a field: the weights are corrupt")
        at = self.pos >> 3
        window = int.from_bytes(self.data[at:at + 16], "little") >> (self.pos & 7)
        self.pos += total
        mask = (1 << width) - 1
        return [(window >> (i * width)) & mask for i in range(count)]

    def align(self) -> None:
        self.pos = (self.pos + 7) & ~7

    def at_end(self) -> bool:
        return self.pos >> 3 >= self.size


def mlw_decode(data: bytes, limit: int) -> np.ndarray:
    """The int32 weights of one stream; more than `limit` of them is refused (a corrupt zero run
    could otherwise ask for any amount of memory)."""
    bits, out, state = _Reader(data), [], {"first": True, "zero_runs": None}
    total = 0
    while True:
        zdiv = bits.get(3)
        while zdiv == END:
            bits.align()
            if bits.at_end():
                return np.concatenate(out) if out else np.zeros(0, np.int32)
            zdiv = bits.get(3)
        if bits.at_end():
            return np.concatenate(out) if out else np.zeros(0, np.int32)
        values = _slice(bits, zdiv, state, limit - total)
        total += len(values)
        out.append(values)


def _slice(bits: _Reader, zdiv: int, state: dict, room: int) -> np.ndarray:
    if not (zdiv < 4 or zdiv == ZDIV_NONE):
        raise UserError(f"a weight slice has zero-run divisor {zdiv}: the weights are corrupt")
    zero_runs = zdiv != ZDIV_NONE
    count = bits.get(15) + 1
    wdiv, truncated, new_palette = bits.get(3), bits.get(1), bits.get(1)
    if state["first"] and not new_palette:
        raise UserError("a weight stream's first slice has no palette: the weights are corrupt")
    if not new_palette and zero_runs != state["zero_runs"]:
        raise UserError("a weight slice changes its zero-run mode without a new palette: the weights are corrupt")
    state["first"], state["zero_runs"] = False, zero_runs
    if new_palette:
        state["offset"] = bits.get(5)
        size = bits.get(5)
        size += 1 if size else 0
        state["palette_bits"] = bits.get(3) + 2
        state["palette"] = [bits.get(state["palette_bits"]) for _ in range(size)]
    palette = state["palette"]
    raw = wdiv == WDIV_RAW
    if raw:     # the values' width: enough for a palette index, else the palette's entry width
        wdiv = max(len(palette) - 1, 0).bit_length() if palette else state["palette_bits"]
    elif wdiv > 5:
        raise UserError(f"a weight slice has value divisor {wdiv}: the weights are corrupt")
    codes, runs = _body(bits, count, count + (1 if new_palette else 0), wdiv, raw, truncated, zero_runs, zdiv)
    return _weights(codes, runs, palette, state["offset"], new_palette and zero_runs, zero_runs, room)


def _body(bits, count, run_count, wdiv, raw, truncated, zero_runs, zdiv):
    """The slice's value codes and zero runs, chunk by chunk: each chunk's remainders are read
    with the next chunk."""
    codes, runs = [], []
    w_quotients, z_quotients = None, None      # the previous chunk's, awaiting their remainders
    w_carry = z_carry = w_pos = z_pos = 0
    z_width = 12 if zdiv < 3 else 8
    w_symbols = 8 if raw and wdiv > 5 else 12
    while True:
        balance = w_pos - z_pos if zero_runs else 0
        w_enable = (balance < 8 or not zero_runs) and w_pos < count
        z_enable = balance >= 0 and zero_runs and z_pos < run_count
        w_mask = bits.get(12) if w_enable and not raw else 0
        new_z = None
        if z_enable:
            new_z, z_carry = _unary_runs(bits.get(z_width), z_width, z_carry)
            z_pos += len(new_z)
        new_w = None
        if w_enable:
            second = bits.get(bin(w_mask & ((1 << w_symbols) - 1)).count("1"))
            new_w, w_carry = _unary_values(w_mask, second, w_symbols, truncated, w_carry)
            w_pos += len(new_w)
        if w_quotients is not None:
            due = w_quotients[:count - len(codes)]
            codes += [(q << wdiv) + r for q, r in zip(due, bits.get_many(wdiv, len(due)))]
        if z_quotients is not None:
            due = z_quotients[:run_count - len(runs)]
            runs += [(q << zdiv) + r for q, r in zip(due, bits.get_many(zdiv, len(due)))]
        if new_w is None and new_z is None:
            return codes, runs
        w_quotients, z_quotients = new_w, new_z


def _unary_values(mask: int, second: int, symbols: int, truncated: int, carry: int) -> tuple:
    """Quotients of up to `symbols` values: a set mask bit adds one, and a set second bit one more;
    a quotient continues into the next position while both are set (unless truncated)."""
    quotients = []
    for i in range(symbols):
        code = 0
        if mask >> i & 1:
            code = 1 + (second & 1)
            second >>= 1
        carry += code
        if code < 2 or truncated:
            quotients.append(carry)
            carry = 0
    return quotients, carry


def _unary_runs(mask: int, width: int, carry: int) -> tuple:
    """Quotients of zero runs: each set bit adds one, each clear bit ends a quotient."""
    quotients = []
    for i in range(width):
        if mask >> i & 1:
            carry += 1
        else:
            quotients.append(carry)
            carry = 0
    return quotients, carry


def _weights(codes: list, runs: list, palette: list, offset: int, leading_run: bool, zero_runs: bool,
             room: int) -> np.ndarray:
    """The slice's weights: each code through the palette (or offset past it), unfolded, each
    followed by its zero run."""
    codes = np.asarray(codes, np.int64)
    if (codes >= VALUE_LIMIT).any():
        raise UserError("a weight slice holds a value code beyond 9 bits: the weights are corrupt")
    table = np.asarray(palette, np.int64)
    folded = np.where(codes < len(table), table[np.minimum(codes, max(len(table) - 1, 0))] if len(table) else 0,
                      codes - len(table) + offset)
    values = np.where(folded & 1, -(folded >> 1), folded >> 1).astype(np.int32)
    runs = np.asarray(runs if zero_runs else [], np.int64)
    lead = int(runs[0]) if leading_run else 0
    after = runs[1:] if leading_run else runs
    if lead + len(values) + int(after.sum()) > room:
        raise UserError("a weight stream decodes to more weights than its layer has: the weights are corrupt")
    if not zero_runs:
        return values
    pieces = np.zeros(lead + len(values) + int(after.sum()), np.int32)
    places = lead + np.arange(len(values)) + np.concatenate(([0], np.cumsum(after)[:-1]))
    pieces[places] = values
    return pieces
