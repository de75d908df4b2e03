"""Facts about a .pte file: is it one, which hardware family does it need, which kernels it calls.

The program's flatbuffer is read here, and only here, directly (only the fields needed: the
first execution plan's delegates, operators and kernel calls with their scalar arguments)
rather than through ExecuTorch's serializer, whose import pulls in torch and the whole
exir compiler: several seconds before a user sees a first answer. Every read is bounds-checked,
so a damaged program gives its one-line error, never an exception from the reader.
"""
from __future__ import annotations

import contextlib
import struct
from dataclasses import dataclass
from typing import NamedTuple

from ..infra.errors import UserError, require_file

# File identifier of an ExecuTorch program flatbuffer (bytes 4..8): "ET" and the format
# version. ET12 is what this ExecuTorch writes and the only one the firmware's reader
# (firmware/src/pte_reader.c) accepts, so the host refuses the others too.
PTE_FILE_IDENTIFIER = b"ET12"
# Field slots in executorch/exir/_serialize/program.fbs (a union takes two: its type, then its value).
PROGRAM_EXECUTION_PLAN = 1
PLAN_VALUES = 2
PLAN_CHAINS = 5
PLAN_OPERATORS = 6
PLAN_DELEGATES = 7
OPERATOR_NAME, OPERATOR_OVERLOAD = 0, 1
DELEGATE_ID = 0
CHAIN_INSTRUCTIONS = 2
INSTRUCTION_ARGS_TYPE, INSTRUCTION_ARGS = 0, 1
KERNEL_CALL_OP_INDEX, KERNEL_CALL_ARGS = 0, 1
EVALUE_TYPE, EVALUE_VAL = 0, 1
# Union members (numbered from 1 in the schema's order; 0 is none).
KERNEL_CALL = 1                             # InstructionArguments: KernelCall, DelegateCall, ...
SCALAR_FORMATS = {2: "<q", 4: "<d"}           # KernelTypes: Null, Int (a long), Bool, Double (a double), ...


def read_program(path) -> bytes:
    path = require_file(path, "model file", "create one with `tinyrps export --run RUN --target T`")
    data = path.read_bytes()
    identifier = data[4:8]
    if len(data) < 8 or identifier[:2] != PTE_FILE_IDENTIFIER[:2]:
        raise UserError(f"{path} is not an ExecuTorch program (.pte): export one with `tinyrps export`")
    if identifier != PTE_FILE_IDENTIFIER:
        shown = identifier.decode("ascii", "replace")
        raise UserError(f"{path} is an ExecuTorch program of format {shown}, but tinyrps reads "
                        f"{PTE_FILE_IDENTIFIER.decode()} only: export it again with `tinyrps export`")
    return data


@dataclass(frozen=True)
class ProgramContents:
    delegates: tuple    # backend ids of the first execution plan's delegates, e.g. ("XnnpackBackend",)
    operators: tuple    # its operator names, e.g. ("aten::convolution",)


def program_contents(data: bytes, path="program") -> ProgramContents:
    """The delegates and operators of the program's first execution plan."""
    with _read_whole(path):
        flatbuffer = _Flatbuffer(data)
        plan = flatbuffer.tables(flatbuffer.root(), PROGRAM_EXECUTION_PLAN)[0]
        return ProgramContents(
            delegates=tuple(flatbuffer.string(d, DELEGATE_ID) for d in flatbuffer.tables(plan, PLAN_DELEGATES)),
            operators=tuple(flatbuffer.string(o, OPERATOR_NAME) for o in flatbuffer.tables(plan, PLAN_OPERATORS)))


class KernelCall(NamedTuple):
    chain: int          # the chain's index in the plan
    index: int          # the instruction's index in its chain (what ETDump's events name)
    name: str           # the operator, e.g. "cortex_m::quantized_conv2d"
    overload: str       # e.g. "out"
    args: tuple         # each argument an int or a float where its value is an Int or a Double, else None


def kernel_calls(data: bytes, path="program") -> list:
    """The first execution plan's kernel calls in order (KernelCall)."""
    with _read_whole(path):
        flatbuffer = _Flatbuffer(data)
        plan = flatbuffer.tables(flatbuffer.root(), PROGRAM_EXECUTION_PLAN)[0]
        operators = [(flatbuffer.string(o, OPERATOR_NAME), flatbuffer.string(o, OPERATOR_OVERLOAD))
                     for o in flatbuffer.tables(plan, PLAN_OPERATORS)]
        values = flatbuffer.tables(plan, PLAN_VALUES)
        calls = []
        for c, chain in enumerate(flatbuffer.tables(plan, PLAN_CHAINS)):
            for n, instruction in enumerate(flatbuffer.tables(chain, CHAIN_INSTRUCTIONS)):
                if flatbuffer.scalar(instruction, INSTRUCTION_ARGS_TYPE, "<B") != KERNEL_CALL:
                    continue
                call = flatbuffer.table(instruction, INSTRUCTION_ARGS)
                name, overload = _item(operators, flatbuffer.scalar(call, KERNEL_CALL_OP_INDEX, "<i"))
                args = tuple(_scalar_value(flatbuffer, _item(values, i))
                             for i in flatbuffer.scalars(call, KERNEL_CALL_ARGS, "<i"))
                calls.append(KernelCall(c, n, name, overload, args))
        return calls


@contextlib.contextmanager
def _read_whole(path):
    """A read of the flatbuffer gives its result or the one line that says the program is damaged."""
    try:
        yield
    except (_Malformed, IndexError, UnicodeDecodeError):
        raise UserError(f"{path} is a corrupted ExecuTorch program: export it again with `tinyrps export`") from None


def _item(items: list, index: int):
    if not 0 <= index < len(items):      # a negative index would read from the end
        raise _Malformed(index)
    return items[index]


def _scalar_value(flatbuffer, value: int):
    fmt = SCALAR_FORMATS.get(flatbuffer.scalar(value, EVALUE_TYPE, "<B"))
    return None if fmt is None else flatbuffer.scalar(flatbuffer.table(value, EVALUE_VAL), 0, fmt)


def program_family(path) -> str:
    """The program's family: from the descriptor if it describes the program, else from the program."""
    from . import descriptor
    program = read_program(path)
    described = descriptor.read(path, program)
    if described is not None:
        return described.family
    return family_of_program(program, path)


def family_of_program(data: bytes, path="program") -> str:
    """The family whose mark the program carries (families.Family.marks)."""
    from .families import family_marked
    contents = program_contents(data, path)
    return family_marked(contents.delegates, contents.operators)


class _Malformed(Exception):
    pass


class _Flatbuffer:
    """Bounds-checked reads of flatbuffer tables, vectors of tables and strings."""

    def __init__(self, data: bytes):
        self.data = data

    def _read(self, fmt: str, at: int) -> int:
        if not 0 <= at <= len(self.data) - struct.calcsize(fmt):
            raise _Malformed(at)
        return struct.unpack_from(fmt, self.data, at)[0]

    def _follow(self, at: int) -> int:
        """The position an unsigned 32-bit offset stored at `at` points to."""
        return at + self._read("<I", at)

    def root(self) -> int:
        return self._follow(0)

    def _field(self, table: int, slot: int):
        """Position of a table's field, or None when the field is absent."""
        vtable = table - self._read("<i", table)
        vtable_bytes = self._read("<H", vtable)
        entry = 4 + 2 * slot
        if entry + 2 > vtable_bytes:
            return None
        offset = self._read("<H", vtable + entry)
        return table + offset if offset else None

    def scalar(self, table: int, slot: int, fmt: str):
        """A scalar field; an absent one has the schema's default, 0 (a writer leaves defaults out)."""
        field = self._field(table, slot)
        return struct.unpack(fmt, bytes(struct.calcsize(fmt)))[0] if field is None else self._read(fmt, field)

    def table(self, table: int, slot: int) -> int:
        field = self._field(table, slot)
        if field is None:
            raise _Malformed(table)
        return self._follow(field)

    def scalars(self, table: int, slot: int, fmt: str) -> list:
        """The items of a vector-of-scalars field (empty when absent)."""
        field = self._field(table, slot)
        if field is None:
            return []
        vector = self._follow(field)
        count, size = self._read("<I", vector), struct.calcsize(fmt)
        if count > len(self.data) // size:
            raise _Malformed(vector)
        return [self._read(fmt, vector + 4 + size * i) for i in range(count)]

    def tables(self, table: int, slot: int) -> list:
        """The tables of a vector-of-tables field (empty when absent)."""
        field = self._field(table, slot)
        if field is None:
            return []
        vector = self._follow(field)
        count = self._read("<I", vector)
        if count > len(self.data) // 4:
            raise _Malformed(vector)
        return [self._follow(vector + 4 + 4 * i) for i in range(count)]

    def string(self, table: int, slot: int) -> str:
        field = self._field(table, slot)
        if field is None:
            return ""
        start = self._follow(field)
        length = self._read("<I", start)
        if start + 4 + length > len(self.data):
            raise _Malformed(start)
        return self.data[start + 4:start + 4 + length].decode()
