"""The network and its inputs: architectures, the PyTorch model, quantization, labels, a user's own
module, and people's pictures read into the model's input."""
