"""The classes and the image size every stage agrees on; importable without torch
(the image reader and the data renderer need them, and start-up time matters)."""

LABELS = ("rock", "paper", "scissors")
IMAGE_SIZE = 28
