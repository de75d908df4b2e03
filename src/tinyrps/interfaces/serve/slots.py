"""One device, one thread: each program's device is owned by a thread whose queue of moves is bounded
(MAX_DEVICE_QUEUE, a 503 beyond); a move whose client has gone leaves the queue; a device that runs in
another process (QEMU) and died is started again.
"""
from __future__ import annotations

import concurrent.futures
import gc
import numpy as np
import queue
import threading
import time
from dataclasses import dataclass
from typing import Optional

from ...infra.errors import UserError, one_line
from .programs import Program


class ClientLeft(Exception):
    """The client closed its connection before the answer."""


class DeviceFailed(UserError):
    """The device failed on a request (or could not be opened); answered as 503."""


class ServerBusy(UserError):
    """Too many moves waiting (for a tab, for a device or in all); answered as 503 with Retry-After."""


# moves waiting for one device, the one it runs included (an emulated board's move takes ~0.2 s)
MAX_DEVICE_QUEUE = 16

# how long closing waits for a device's current request before stopping it anyway
CLOSE_WAIT_S = 15.0


class DeviceSlot:
    """A program's device, opened on first use and owned by one thread: requests run one at a
    time, first come first served (a serial link carries one request at a time)."""

    def __init__(self, program: Program):
        self.program = program
        self.device = None
        self.runs_on: Optional[str] = None
        self._jobs: queue.Queue = queue.Queue()
        self._closed = False
        self._lock = threading.Lock()
        self.waiting = 0                  # jobs submitted and not done (a cancelled one is done)
        self._thread = threading.Thread(target=self._serve, name=f"device {program.id}", daemon=True)
        self._thread.start()

    def submit(self, job) -> concurrent.futures.Future:
        """Run job(device) on the device's thread; the future's result is (job's result, notice),
        notice a line saying the device was restarted before the job (None when it was not)."""
        future = concurrent.futures.Future()
        if self._closed:
            future.set_exception(DeviceFailed("the server is stopping"))
            return future
        with self._lock:
            if self.waiting >= MAX_DEVICE_QUEUE:
                raise ServerBusy(f"{self.program.target} has {self.waiting} moves waiting already "
                                 f"(at most {MAX_DEVICE_QUEUE}): play again in a moment")
            self.waiting += 1
        future.add_done_callback(self._done)
        self._jobs.put((future, job))
        return future

    def _done(self, future) -> None:
        with self._lock:
            self.waiting -= 1

    def _serve(self) -> None:
        while True:
            item = self._jobs.get()
            if item is None:
                return
            future, job = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(self._run(job))
            except BaseException as e:        # the request's error, answered on the page
                future.set_exception(e)
                if isinstance(e, DeviceFailed) and self.device is None and not self._closed:
                    self._try_open()          # ready for the next move

    def _run(self, job):
        notice = None
        if self.device is not None:
            try:
                check_alive(self.device)
            except UserError as e:
                notice = f"{one_line(e)}; it was started again for this move"
                self._close_device()
        if self.device is None:
            self._open()
        try:
            return job(self.device), notice
        except ClientLeft:
            raise                             # the job stopped itself: the device is well
        except Exception as e:
            if not self.device.out_of_process:
                raise
            self._close_device()
            raise DeviceFailed(f"{self.program.target} failed on this move ({one_line(e)}); the device is "
                               "started again: play again") from e

    def _open(self) -> None:
        from ...devices import open_device
        try:
            device = open_device(self.program.device, self.program.pte, **self.program.options)
        except UserError as e:
            raise DeviceFailed(f"{self.program.target} could not be opened on {self.program.device}: "
                               f"{one_line(e)}") from e
        if self._closed:
            device.close()
            raise DeviceFailed("the server is stopping")
        self.device, self.runs_on = device, device.describe()
        # What opening imported (torch, the runtime: hundreds of thousands of objects) stays for
        # good: out of the collector's sight, a full collection no longer stalls a move by ~0.1 s.
        gc.freeze()

    def _try_open(self) -> None:
        try:
            self._open()
        except UserError:
            pass                              # the next request tries again and says why

    def warm(self) -> concurrent.futures.Future:
        """Open the device now (in its thread), so the first move does not wait for it."""
        return self.submit(lambda device: None)

    def _close_device(self) -> None:
        device, self.device = self.device, None
        if device is not None:
            try:
                device.close()
            except Exception:                 # a device that died may not close cleanly
                pass

    def close(self) -> None:
        """Stop taking requests, let the current one finish (for a while), stop the device."""
        self._closed = True
        self._jobs.put(None)
        self._thread.join(CLOSE_WAIT_S)
        self._close_device()


def check_alive(device) -> None:
    """Raise UserError if the device's emulator process has exited (QEMU killed or crashed)."""
    server = getattr(device, "server", None)
    if server is not None:
        server.check_alive()


@dataclass
class Classified:
    you: np.ndarray                 # logits of the player's picture
    opponent: Optional[np.ndarray]  # logits of the opponent's drawing
    host_ms: float                  # the player's inference, timed here around the device call
    stats: dict                     # the device's own figures of the player's inference


def classify_move(device, you: np.ndarray, opponent: Optional[np.ndarray], gone=lambda: False) -> Classified:
    """Both inferences of a move; the opponent's skipped when `gone()` says the client left
    during the player's (on an emulated board each takes a good part of a second)."""
    start = time.perf_counter()
    you_logits = device.classify(you[None])[0]
    host_ms = (time.perf_counter() - start) * 1000
    stats = device.last_stats()
    if gone():
        raise ClientLeft()
    opp_logits = device.classify(opponent[None])[0] if opponent is not None else None
    return Classified(you_logits, opp_logits, host_ms, stats)
