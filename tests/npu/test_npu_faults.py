"""Corrupted Ethos-U programs on the NPU model: mutated command words, weights and delegate headers
each end in a result or in one line (a UserError), never a crash, a read outside a region or a hang."""
import random
import signal
import struct

import numpy as np
import pytest

from tinyrps.infra.errors import UserError
from tinyrps.npu import blob
from tinyrps.npu.program import Program

pytestmark = pytest.mark.slow     # thousands of programs prepared and run

MUTATIONS = 150                   # per program and kind (a run of 10,000 is in docs/npu-model.md)
CASE_SECONDS = 10                 # a hang: any case slower than this


def block(raw: bytes, name: str) -> tuple:
    """(start, length) of a block's data in the delegate."""
    at = 0
    while True:
        length = struct.unpack_from("<I", raw, at + 16)[0]
        if raw[at:at + 16].rstrip(b"\0").decode() == name:
            return at + 32, length
        at += 32 + (length + 15) // 16 * 16


def mutate(raw: bytes, kind: str, rng: random.Random) -> bytes:
    data = bytearray(raw)
    if kind == "command word":
        start, length = block(raw, "cmd_data")
        word = start + 4 * rng.randrange(length // 4)
        if rng.random() < 0.5:
            data[word + rng.randrange(4)] ^= 1 << rng.randrange(8)
        else:
            data[word:word + 4] = struct.pack("<I", rng.getrandbits(32))
    elif kind == "weights":
        start, length = block(raw, "weight_data")
        for _ in range(rng.randint(1, 8)):
            data[start + rng.randrange(length)] ^= 1 << rng.randrange(8)
    else:                         # the blocks' headers and the small blocks after the weights
        starts = [at for name in blob.BLOCK_ORDER for at in [block(raw, name)[0] - 32]]
        at = rng.choice(starts) + rng.randrange(32) if rng.random() < 0.6 else rng.randrange(len(data))
        data[at] = rng.getrandbits(8)
    return bytes(data)


class Hang(Exception):
    pass


def _alarm(*_):
    raise Hang()


@pytest.mark.parametrize("target", ["ethos-u55-128", "ethos-u85-128"])
@pytest.mark.parametrize("kind", ["command word", "weights", "header"])
def test_mutated_programs_end_in_one_line(exported, target, kind):
    raw = blob.ethos_u_blobs(exported(target).read_bytes(), target)[0]
    rng = random.Random(f"{target} {kind}")
    outcomes = {"result": 0, "one line": 0}
    previous = signal.signal(signal.SIGALRM, _alarm)
    try:
        for case in range(MUTATIONS):
            mutated = mutate(raw, kind, rng)
            signal.alarm(CASE_SECONDS)
            try:
                delegate = blob.parse_delegate(mutated, "mutated.pte")
                program = Program(delegate, "mutated.pte")
                program.run([np.zeros(place.nbytes, np.int8) for place in delegate.inputs])
                outcomes["result"] += 1
            except UserError as e:
                assert "\n" not in str(e) and str(e).startswith("mutated.pte"), (case, str(e))
                outcomes["one line"] += 1
            except Hang:
                pytest.fail(f"{kind} mutation {case} of {target} ran for more than {CASE_SECONDS} s")
            finally:
                signal.alarm(0)
    finally:
        signal.signal(signal.SIGALRM, previous)
    # the mutations reach the checks, and some leave a program that still runs
    assert outcomes["one line"] > MUTATIONS // 4 and outcomes["result"] > 0, outcomes
