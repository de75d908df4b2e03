"""What the host and the firmware share, read from the firmware's C headers, where each fact is written once.

The headers ship with the firmware sources (a checkout's firmware/, or the copy inside an installed
wheel: tinyrps.firmware.build.firmware_dir), and keep their facts in forms read here:

- `#define NAME value` with an integer expression or a string: `define("LINK_MAX_PAYLOAD")`;
- lists, `#define NAME_LIST(X) X(NAME, value, "text") ...`: `listing("TRT_STATUS_LIST")`;
- payload layouts, `#define NAME_FIELDS(X) X(FIELD, offset, type) ...`: `layout("LINK_INFO_FIELDS",
  "LINK_INFO_BYTES")`, checked to be contiguous and to end at its size;
- the board ports: `port("mps3-an547")` from port.h, port.cmake and the linker script's MEMORY.

Parsing is cached; nothing here imports more than the standard library and numpy.
"""
from __future__ import annotations

import ast
import operator
import re
import struct
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

# The headers that hold shared facts, relative to the firmware folder.
HEADERS = ("include/tinyrps_runtime.h", "protocol/link_protocol.h", "protocol/tensor_desc.h",
           "protocol/batch_format.h", "protocol/native_profile.h", "board/common/model_slot.h", "src/ops/operator_table.h",
           "protocol/npu_link.h")


class FirmwareFactError(RuntimeError):
    """A header does not hold a fact in the form this module reads: the sources are inconsistent (a bug)."""


# ---------------------------------------------------------------------------------------------
# Reading headers
# ---------------------------------------------------------------------------------------------

def _firmware_dir() -> Path:
    from .sources import firmware_dir
    return firmware_dir()


def _logical_lines(text: str) -> list:
    """Lines with comments removed and backslash continuations joined."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return text.replace("\\\n", " ").splitlines()


def _split_arguments(body: str) -> list:
    """The comma-separated arguments of one X(...) row; commas inside strings stay."""
    parts, current, quoted = [], "", False
    for char in body:
        if char == '"':
            quoted = not quoted
        if char == "," and not quoted:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    parts.append(current.strip())
    return parts


_ROW = re.compile(r'\bX\(((?:[^()"]|"[^"]*")*)\)')
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
           ast.Div: operator.floordiv, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
           ast.BitOr: operator.or_, ast.BitAnd: operator.and_, ast.BitXor: operator.xor, ast.Mod: operator.mod}


def _integer(expression: str, known: dict):
    """The value of a C integer constant expression of literals and known macros, or None."""
    text = re.sub(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]+\b", r"\1", expression.strip())
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        return None

    def value(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name) and isinstance(known.get(node.id), int):
            return known[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return _BINARY[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Invert, ast.UAdd)):
            inner = value(node.operand)
            return -inner if isinstance(node.op, ast.USub) else ~inner if isinstance(node.op, ast.Invert) else inner
        raise ValueError(node)
    try:
        return value(tree)
    except (ValueError, TypeError, ZeroDivisionError):
        return None


@dataclass(frozen=True)
class Header:
    path: Path
    defines: dict      # NAME -> int or str
    tables: dict       # NAME -> [[argument, ...], ...] of its X(...) rows


@lru_cache(maxsize=None)
def header(relative: str) -> Header:
    path = _firmware_dir() / relative
    try:
        text = path.read_text()
    except OSError as e:
        raise FirmwareFactError(f"cannot read the firmware header {path}: {e}") from None
    defines, tables = {}, {}
    for line in _logical_lines(text):
        match = re.match(r"\s*#\s*define\s+(\w+)(\(X\))?\s*(.*)$", line)
        if not match:
            continue
        name, is_table, body = match.groups()
        if is_table:
            tables[name] = [[_literal(a, defines) for a in _split_arguments(row)] for row in _ROW.findall(body)]
        elif re.fullmatch(r'"[^"]*"', body.strip()):
            defines[name] = body.strip()[1:-1]
        else:
            number = _integer(body, defines)
            if number is not None:
                defines[name] = number
    return Header(path, defines, tables)


def _literal(argument: str, known: dict):
    """A row's argument: a string literal's text, a name as it is written, a number's value."""
    if argument.startswith('"') and argument.endswith('"'):
        return argument[1:-1]
    if re.fullmatch(r"[A-Za-z_]\w*", argument):
        return argument
    number = _integer(argument, known)
    return argument if number is None else number


def _find(table: str, name: str):
    for relative in HEADERS:
        found = getattr(header(relative), table)
        if name in found:
            return found[name]
    raise FirmwareFactError(f"no firmware header ({', '.join(HEADERS)}) defines {name}")


def define(name: str):
    """The value of `#define name value` (an int or a string)."""
    return _find("defines", name)


def listing(name: str) -> list:
    """The rows of `#define name(X) X(...) X(...)`, each a list of its arguments (ints where they are numbers)."""
    return _find("tables", name)


def named_values(name: str) -> dict:
    """A list of X(NAME, value, "text") rows as {value: text}."""
    return {row[1]: row[2] for row in listing(name)}


def value_of(name: str, row_name: str) -> int:
    """The value of one row of a list, by its name: value_of("LINK_COMMAND_LIST", "LINK_CMD_RUN")."""
    for row in listing(name):
        if row[0] == row_name:
            return row[1]
    raise FirmwareFactError(f"{name} has no row {row_name}")


# ---------------------------------------------------------------------------------------------
# Layouts
# ---------------------------------------------------------------------------------------------

_SCALARS = {"u8": "B", "u16": "H", "u32": "I", "u64": "Q", "i8": "b", "i16": "h", "i32": "i", "i64": "q",
            "f32": "f"}


def _field_format(ctype: str) -> tuple:
    """(struct code, bytes, how to turn the unpacked value into a Python one) of a field type."""
    if ctype in _SCALARS:
        code = _SCALARS[ctype]
        return code, struct.calcsize("<" + code), None
    match = re.fullmatch(r"(text|bytes)(\d+)", ctype)
    if match:
        n = int(match.group(2))
        return f"{n}s", n, (lambda raw: raw.split(b"\0", 1)[0].decode("ascii", "replace")) \
            if match.group(1) == "text" else None
    match = re.fullmatch(r"([ui]\d+)x(\d+)", ctype)
    if match and match.group(1) in _SCALARS:
        n, code = int(match.group(2)), _SCALARS[match.group(1)]
        return f"{n}{code}", struct.calcsize(f"<{n}{code}"), "array"
    raise FirmwareFactError(f"unknown field type {ctype!r}")


class Layout:
    """A payload layout of a header: its fields, offsets and size, as a little-endian struct."""

    def __init__(self, name: str, rows: list, size: int):
        self.name, self.size = name, size
        self.fields, codes, self._decode, offset = [], [], {}, 0
        for field, at, ctype in rows:
            code, width, decode = _field_format(ctype)
            if at != offset:
                raise FirmwareFactError(f"{name}: field {field} is at {at}, the fields before it end at {offset}")
            self.fields.append((field, at, ctype))
            codes.append(code)
            self._decode[field] = decode
            offset += width
        if offset != size:
            raise FirmwareFactError(f"{name}: the fields end at {offset}, the layout's size is {size}")
        self.struct = struct.Struct("<" + "".join(codes))
        self._counts = [_field_count(code) for code in codes]

    def offset(self, field: str) -> int:
        return next(at for name, at, _ in self.fields if name == field)

    def unpack(self, data: bytes, offset: int = 0) -> dict:
        flat, values, k = self.struct.unpack_from(data, offset), {}, 0
        for (field, _, _), count in zip(self.fields, self._counts):
            raw = flat[k:k + count] if self._decode[field] == "array" else flat[k]
            k += count
            decode = self._decode[field]
            values[field] = list(raw) if decode == "array" else decode(raw) if decode else raw
        return values

    def pack(self, **values) -> bytes:
        """Fields not given are zero; text fields take str, array fields a list."""
        flat = []
        for (field, _, ctype), count in zip(self.fields, self._counts):
            value = values.pop(field, None)
            if self._decode[field] == "array":
                items = list(value or [])
                flat += items + [0] * (count - len(items))
            elif ctype.startswith(("text", "bytes")):
                flat.append(value.encode() if isinstance(value, str) else bytes(value or b""))
            else:
                flat.append(value or 0)
        if values:
            raise KeyError(f"{self.name} has no field {', '.join(values)}")
        return self.struct.pack(*flat)


def _field_count(code: str) -> int:
    """How many values struct yields for one field's code ('4s' is one, '6i' six)."""
    match = re.fullmatch(r"(\d+)([a-zA-Z])", code)
    if match and match.group(2) != "s":
        return int(match.group(1))
    return 1


@lru_cache(maxsize=None)
def layout(fields: str, size: str) -> Layout:
    return Layout(fields, listing(fields), define(size))


# ---------------------------------------------------------------------------------------------
# The runtime's facts
# ---------------------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def status_names() -> dict:
    """trt_status value -> trt_status_name's text."""
    return named_values("TRT_STATUS_LIST")


@lru_cache(maxsize=None)
def dtypes() -> dict:
    """ScalarType code -> (name, bytes per element) of every dtype the runtime takes."""
    return {code: (name, size) for _, code, name, size in listing("TRT_DTYPE_LIST")}


def dtype_name(code: int) -> str:
    """The name of a ScalarType code ("float32"), or "scalar type N" for one the runtime does not take."""
    known = dtypes()
    return known[code][0] if code in known else f"scalar type {code}"


@lru_cache(maxsize=None)
def limits() -> dict:
    """The runtime's table limits as its header sets them by default: {"TRT_MAX_KERNEL_CALLS": 64, ...},
    in TRT_LIMIT_LIST order (a build may set others: the firmware reports its own)."""
    return {row[0]: define(row[0]) for row in listing("TRT_LIMIT_LIST")}


def limit_names() -> list:
    return [row[0] for row in listing("TRT_LIMIT_LIST")]


@lru_cache(maxsize=None)
def kernel_variants() -> tuple:
    """The kernel variant names the runtime reports (trt_call_variant), fastest first."""
    return tuple(define("TRT_KERNEL_VARIANT_NAMES").split())


# ---------------------------------------------------------------------------------------------
# Board ports
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Port:
    name: str              # PORT_BOARD_NAME
    core: str              # port.cmake PORT_CORE
    systick_hz: int        # PORT_SYSTICK_HZ
    model_address: int     # ORIGIN of the region aliased MODEL
    model_max_bytes: int   # __model_max_size
    ram_address: int       # ORIGIN of the region aliased RAM: the boot descriptor's address
    ram_bytes: int         # its LENGTH


_SIZE_SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def _linker_number(text: str) -> int:
    match = re.fullmatch(r"\s*(0[xX][0-9a-fA-F]+|\d+)\s*([KMG]?)\s*", text)
    if not match:
        raise FirmwareFactError(f"cannot read {text!r} as a linker script number")
    return int(match.group(1), 0) * _SIZE_SUFFIX[match.group(2)]


@lru_cache(maxsize=None)
def port(board: str) -> Port:
    """A board port's facts, from firmware/board/<board>/: port.h, port.cmake and its linker script."""
    folder = _firmware_dir() / "board" / board
    ported = header(f"board/{board}/port.h").defines
    cmake = (folder / "port.cmake").read_text()
    core = re.search(r"set\(PORT_CORE\s+([\w-]+)\)", cmake)
    script = re.search(r"set\(PORT_LINKER_SCRIPT\s+([\w.-]+)\)", cmake)
    if not core or not script:
        raise FirmwareFactError(f"{folder / 'port.cmake'} does not set PORT_CORE and PORT_LINKER_SCRIPT")
    ld = re.sub(r"/\*.*?\*/", " ", (folder / script.group(1)).read_text(), flags=re.S)
    regions = {name: (_linker_number(origin), _linker_number(length)) for name, origin, length in
               re.findall(r"^\s*(\w+)\s*\([^)]*\)\s*:\s*ORIGIN\s*=\s*([^,]+),\s*LENGTH\s*=\s*(\S+)", ld, re.M)}
    aliases = dict(re.findall(r'REGION_ALIAS\("(\w+)",\s*(\w+)\)', ld))
    model_max = re.search(r"__model_max_size\s*=\s*([^;]+);", ld)
    try:
        model, ram = regions[aliases["MODEL"]], regions[aliases["RAM"]]
    except KeyError as e:
        raise FirmwareFactError(f"{folder / script.group(1)} has no region aliased {e}") from None
    if not model_max:
        raise FirmwareFactError(f"{folder / script.group(1)} does not set __model_max_size")
    return Port(ported["PORT_BOARD_NAME"], core.group(1), ported["PORT_SYSTICK_HZ"], model[0],
                _linker_number(model_max.group(1)), ram[0], ram[1])
