"""The classes, the image size and the default data set size every stage agrees on;
importable without torch or numpy (the image reader, the data renderer and the command
line's help need them, and start-up time matters)."""

LABELS = ("rock", "paper", "scissors")
IMAGE_SIZE = 28
# How an RPS program's input and output are read (the program descriptor records them).
RPS_INPUT_CONVENTION = "uint8 image / 255"
RPS_OUTPUT_CONVENTION = "logits of " + ", ".join(LABELS)
# Per-class image counts of the default data set, per split.
DEFAULT_PER_CLASS = {"train": 6000, "val": 300, "test": 200, "benchmark": 1000}
# The held-out splits `tinyrps eval --split` reads (benchmark: the larger one, not on emulated boards).
EVAL_SPLITS = ("test", "benchmark")


def softmax(logits):
    """Probabilities of the labels from logits [..., classes] (numpy), along the last axis."""
    import numpy as np
    logits = np.asarray(logits)
    z = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)
