"""The libraries' known chatter (torchao, torch's pytree, executorch), silenced by logger name
and warning message; every other warning still shows. The CLI calls `quiet_libraries` at
start, and so does every worker process it starts."""

# Loggers whose import-time messages say nothing about this program (torchao's CUDA-only
# extensions that fail to load on a CPU machine, torch's pytree registration notes).
QUIET_LOGGERS = ("torchao", "torch.utils._pytree", "torch._export", "executorch")


# Warnings the libraries give on every export, by message and category: torch's own pytree
# code (its stack level points into copyreg, so the module says nothing). DeprecationWarnings
# (executorch's ExperimentalWarning among them) are hidden by Python's defaults already.
KNOWN_WARNINGS = ((r"`isinstance\(treespec, LeafSpec\)` is deprecated", FutureWarning),)


# Log records of loggers that set their own level on import (so QUIET_LOGGERS does not reach
# them): logger name -> the start of the message. A filter on a logger outlives its setLevel.
KNOWN_LOG_MESSAGES = {"executorch.exir.pass_manager": "PassManager is deprecated"}


def quiet_libraries() -> None:
    """Silence the libraries' known chatter by logger name and warning message; every
    other warning still shows."""
    import logging
    import warnings
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    for name, start in KNOWN_LOG_MESSAGES.items():
        logging.getLogger(name).addFilter(lambda record, start=start: not str(record.msg).startswith(start))
    for message, category in KNOWN_WARNINGS:
        warnings.filterwarnings("ignore", message=message, category=category)
