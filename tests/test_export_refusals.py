"""Models the installed ExecuTorch cannot lower to a Cortex-M program, or cannot check, end in one line and exit
code 2 from `tinyrps export --module`, never in a traceback: a hardswish on the model's input (ExecuTorch's
lowering leaves it on the int8 codes, which neither torch nor ExecuTorch's runtime computes), a batched matmul of 4-D inputs (ExecuTorch serializes a program that computes something else,
which the replay check catches), a quantizable LSTM and a max pool that returns its indices (ExecuTorch's passes
raise)."""
from __future__ import annotations

import pytest

MODEL = '''
import torch
from torch import nn


class Hardswish(nn.Module):
    def forward(self, x):
        return nn.functional.hardswish(x)


class BatchMatmul4d(nn.Module):
    def forward(self, a, b):
        return torch.matmul(a, b)


class Lstm(nn.Module):
    def __init__(self):
        super().__init__()
        from torch.ao.nn.quantizable import LSTM
        self.lstm = LSTM(8, 16, batch_first=True)

    def forward(self, x):
        return self.lstm(x)[0]


class PoolIndices(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool2d(2, return_indices=True)

    def forward(self, x):
        return self.pool(x)
'''

# name -> (input shapes, what the line says)
CASES = {
    "Hardswish": (["3,7"], "ExecuTorch's Python reference of the Cortex-M operators cannot compute this program"),
    "BatchMatmul4d": (["1,2,4,8", "1,2,8,3"], "does not replay like its edge program (output 0:"),
    "Lstm": (["1,5,8"], "ExecuTorch's Cortex-M lowering cannot take this model: the Cortex-M passes"),
    "PoolIndices": (["1,3,8,8"], "ExecuTorch's Cortex-M lowering cannot take this model: the Cortex-M passes"),
}


@pytest.mark.slow     # each lowers a model
@pytest.mark.parametrize("name", list(CASES))
def test_a_model_executorch_cannot_lower_or_check_is_one_line(cli, tmp_path, name):
    path = tmp_path / "models.py"
    path.write_text(MODEL)
    shapes, needle = CASES[name]
    args = [arg for shape in shapes for arg in ("--input-shape", shape)]
    res = cli("export", "--module", f"{path}:{name}", *args, "--calibration", "random", "--target", "cortex-m55",
              "--out", tmp_path / "out", timeout=600)
    assert res.returncode == 2, (res.stdout, res.stderr[-3000:])
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr[-3000:]
    assert needle in lines[0], lines[0]
    assert not (tmp_path / "out" / f"{name}.pte").exists()
