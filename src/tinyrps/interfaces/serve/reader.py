"""Reading pictures in worker processes (tinyrps.network.images, as `classify` reads a file): reading uses every
core, and a decoder that crashes takes only its worker down; a pool found dead is started again.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import multiprocessing
import signal
import threading

from ...infra.errors import UserError


def _reader_worker_init() -> None:
    # Ctrl-C in the terminal reaches the whole process group: the server stops its workers itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _warm_reader() -> bool:
    import tinyrps.network.images  # noqa: F401
    return True


READER_RESTARTED = ("the picture reader had stopped (its process ended, not because of this picture) "
                    "and was started again for this move")


class PictureReader:
    """images.read_image_bytes in worker processes (`workers` of them; 0: in threads of this one)."""

    def __init__(self, workers: int):
        self.workers = workers
        self._pool = None
        self._lock = threading.Lock()

    def start(self) -> None:
        if self.workers:
            self._pool = concurrent.futures.ProcessPoolExecutor(
                self.workers, mp_context=multiprocessing.get_context("spawn"), initializer=_reader_worker_init)
            for _ in range(self.workers):
                self._pool.submit(_warm_reader)

    async def read(self, data: bytes, name: str) -> tuple:
        """(the reading, a notice or None). A worker that died (killed from outside, out of
        memory, or on another picture) fails every picture it had: this one is read again by a
        fresh pool, and only a picture that stops that one too is said to stop the reader."""
        from ...network.images import read_image_bytes
        if self._pool is None:
            from starlette.concurrency import run_in_threadpool
            return await run_in_threadpool(read_image_bytes, data, name), None
        for attempt in range(2):
            pool = self._pool
            try:
                return await asyncio.wrap_future(pool.submit(read_image_bytes, data, name)), \
                    (READER_RESTARTED if attempt else None)
            except concurrent.futures.process.BrokenProcessPool:
                self._replace(pool)
        raise UserError(f"{name} stopped the picture reader twice (it was started again): "
                        "save the picture again, or try another")

    def _replace(self, broken) -> None:
        with self._lock:
            if self._pool is broken:
                broken.shutdown(wait=False, cancel_futures=True)
                self.start()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
