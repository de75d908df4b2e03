"""The classes and the image size every stage agrees on; importable without torch
(the image reader and the data renderer need them, and start-up time matters)."""

LABELS = ("rock", "paper", "scissors")
IMAGE_SIZE = 28


def softmax(logits):
    """Probabilities of the labels from logits [..., classes] (numpy), along the last axis."""
    import numpy as np
    logits = np.asarray(logits)
    z = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)
