"""One Ethos-U delegate, ready to run: its regions, its steps, its inputs and outputs."""
from __future__ import annotations

import numpy as np

from ..infra.errors import UserError
from . import NpuCorrupt, blob, commands, machine


class Program:
    def __init__(self, delegate: blob.Delegate, name: str):
        self.name, self.delegate = name, delegate
        self.config, words = commands.parse_payload(delegate.cmd_data, name)
        self.commands = commands.decode(words, self.config, name)
        self.steps, self.region_sizes = machine.prepare(
            self.commands, self.config, (len(delegate.weight_data), delegate.scratch_size), name)
        self.weights = np.frombuffer(delegate.weight_data, np.uint8)

    @classmethod
    def from_pte(cls, program: bytes, name: str) -> list:
        """A Program per Ethos-U delegate of a .pte, in the plan's order."""
        return [cls(blob.parse_delegate(data, name), name) for data in blob.ethos_u_blobs(program, name)]

    @property
    def inputs(self) -> tuple:
        return self.delegate.inputs

    @property
    def outputs(self) -> tuple:
        return self.delegate.outputs

    def run(self, inputs: list) -> list:
        """One inference: each input's bytes (any integer array of its size) in, each output's out
        (int8, int16 or int32 by its element size, flat)."""
        if len(inputs) != len(self.inputs):
            raise NpuCorrupt(f"{self.name}: the delegate takes {len(self.inputs)} inputs, not {len(inputs)}")
        memory = [self.weights.copy(), np.zeros(self.region_sizes[1], np.uint8),
                  np.zeros(self.region_sizes[2], np.uint8), np.zeros(self.config.internal_bytes, np.uint8), {}]
        for place, value in zip(self.inputs, inputs):
            data = np.ascontiguousarray(value).view(np.uint8).reshape(-1)
            if len(data) != place.nbytes:
                raise NpuCorrupt(f"{self.name}: an input of {len(data)} bytes for a tensor of {place.nbytes}")
            memory[1][place.offset:place.offset + place.nbytes] = data
        for step in self.steps:
            try:
                step.run(memory)
            except UserError as error:       # what only the data shows: a weight stream that does not decode
                raise NpuCorrupt(f"{self.name}: {step.report['operation']} at command word {step.report['at']}: "
                                 f"{error}") from None
        kinds = {1: np.int8, 2: np.int16, 4: np.int32}
        return [memory[1][p.offset:p.offset + p.nbytes].view(kinds[p.element_size]).copy() for p in self.outputs]

    def report(self) -> list:
        """What one inference executes: per step, its operation, OFM shape, MACs and DMA bytes."""
        return [step.report for step in self.steps]
