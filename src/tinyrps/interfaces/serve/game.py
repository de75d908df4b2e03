"""The game of the browser's tabs: each tab its own score and opponent (at most MAX_TABS kept), moves in
flight bounded per tab and in all, one move played and scored.
"""
from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import numpy as np
import re
import threading
import time
from collections import OrderedDict
from typing import Optional

from ...infra.errors import UserError
from ...network.labels import LABELS
from .programs import Program
from .reader import PictureReader
from .slots import DeviceSlot, ServerBusy, classify_move


MAX_TABS = 1000

# Moves in flight, from the picture's arrival (read, queued or on the device): per tab (one playing, one
# waiting), and in all.
MAX_MOVES_PER_TAB = 2
MAX_MOVES = 64
TAB_ID = re.compile(r"[A-Za-z0-9_-]{8,64}")


class Tab:
    """One browser tab's game: its score, its rounds and both opponents (each learns from every
    move, so switching to the adaptive one mid-game finds it informed)."""

    def __init__(self):
        from ..opponents import OPPONENTS, make_opponent
        self.lock = asyncio.Lock()
        self.rng = np.random.default_rng()
        self.opponents = {name: make_opponent(name, self.rng) for name in OPPONENTS}
        self.score = {"win": 0, "lose": 0, "tie": 0}
        self.rounds = 0


class WebGame:
    """Everything the server holds: programs, their devices, the reader and the tabs."""

    def __init__(self, programs: list, reader_workers: int = 2, warm: bool = True):
        self.warm = warm
        self.programs = {p.id: p for p in programs}
        default = next((p for p in programs if p.target == "int8-xnnpack"), programs[0])
        self.default_id = default.id
        self.slots = {p.id: DeviceSlot(p) for p in programs}
        self.reader = PictureReader(reader_workers)
        self.tabs: OrderedDict = OrderedDict()
        self.moves = 0                    # moves in flight, and per tab id (touched only by the event loop)
        self.tab_moves: dict = {}

    @contextlib.contextmanager
    def admitted(self, tab_id: str):
        """A move counted in flight while it is read, waits and runs; ServerBusy beyond the bounds."""
        if self.tab_moves.get(tab_id, 0) >= MAX_MOVES_PER_TAB:
            raise ServerBusy(f"this tab has {MAX_MOVES_PER_TAB} moves in progress already: wait for their answers")
        if self.moves >= MAX_MOVES:
            raise ServerBusy(f"the server is busy ({MAX_MOVES} moves in progress): play again in a moment")
        self.moves += 1
        self.tab_moves[tab_id] = self.tab_moves.get(tab_id, 0) + 1
        try:
            yield
        finally:
            self.moves -= 1
            self.tab_moves[tab_id] -= 1
            if not self.tab_moves[tab_id]:
                del self.tab_moves[tab_id]

    def start(self) -> None:
        """Start the picture readers, and open the devices one after the other (the default
        program's first) in the background: the server answers at once, and a move on a device
        that is still opening waits for it."""
        self.reader.start()
        if not self.warm:
            return
        order = [self.default_id] + [pid for pid in self.slots if pid != self.default_id]
        threading.Thread(target=self._warm, args=(order,), name="open devices", daemon=True).start()

    def _warm(self, order: list) -> None:
        for pid in order:
            try:
                self.slots[pid].warm().result()
            except Exception:             # a device that cannot open says why on its first move
                pass

    def close(self) -> None:
        for slot in self.slots.values():
            slot.close()
        self.reader.close()

    def program(self, pid: Optional[str]) -> Program:
        pid = pid or self.default_id
        if pid not in self.programs:
            raise UserError(f"unknown program '{pid}'; this server has: {', '.join(self.programs)}")
        return self.programs[pid]

    def tab(self, tab_id: Optional[str]) -> Tab:
        if not tab_id or not TAB_ID.fullmatch(tab_id):
            raise UserError("tab must be 8-64 letters, digits, '-' or '_' (the page makes one per tab)")
        if tab_id not in self.tabs:
            self.tabs[tab_id] = Tab()
            while len(self.tabs) > MAX_TABS:
                self.tabs.popitem(last=False)       # the tab unused for longest
        self.tabs.move_to_end(tab_id)
        return self.tabs[tab_id]

    async def play(self, program: Program, opponent: str, tab: Tab, data: bytes, name: str,
                   gone=lambda: False) -> dict:
        """The move, scored unless `gone()` says its client left while the device ran it (a move
        cancelled before leaves the device's queue: the CancelledError reaches the awaits here)."""
        from ...network.letters import render
        from ..game import outcome
        from ...network.labels import softmax
        started = time.perf_counter()
        reading, read_notice = await self.reader.read(data, name)
        read_ms = (time.perf_counter() - started) * 1000
        async with tab.lock:
            move = drawing = None
            if reading.letter_found:
                move = tab.opponents[opponent].move()
                drawing = render(np.array([LABELS.index(move)]), tab.rng)[0]
            slot = self.slots[program.id]
            result, notice = await asyncio.wrap_future(slot.submit(
                lambda device: classify_move(device, reading.image, drawing, gone)))
            if gone():
                raise asyncio.CancelledError("the client left")
            you = read_entry(softmax(result.you.astype(np.float64)), reading.letter_found, reading.image)
            answer = {"round": None, "outcome": None, "opponent": None}
            if reading.letter_found:
                theirs = read_entry(softmax(result.opponent.astype(np.float64)), True, drawing)
                answer["outcome"] = outcome(you["label"], theirs["label"])
                answer["opponent"] = {"move": move, "strategy": opponent, **theirs}
                tab.score[answer["outcome"]] += 1
                tab.rounds += 1
                answer["round"] = tab.rounds
                for each in tab.opponents.values():
                    each.observe(you["label"])
            score = dict(tab.score)
        stats = {"host_ms": round(result.host_ms, 3), "read_ms": round(read_ms, 2), **result.stats,
                 "server_ms": round((time.perf_counter() - started) * 1000, 2)}
        notice = "; ".join(n for n in (read_notice, notice) if n) or None
        return {**answer, "program": program.public(), "runs_on": slot.runs_on, "you": you, "score": score,
                "stats": stats, "figures": device_figures(program, stats), "notice": notice}


def read_entry(probs: np.ndarray, found: bool, image: np.ndarray) -> dict:
    best = int(probs.argmax())
    return {"letter_found": found, "label": LABELS[best] if found else None,
            "confidence": float(probs[best]) if found else None,
            "probabilities": {label: float(p) for label, p in zip(LABELS, probs)},
            "image": png_data_url(image)}


def png_data_url(image: np.ndarray) -> str:
    from PIL import Image
    buf = io.BytesIO()
    Image.fromarray(image).save(buf, "PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def device_figures(program: Program, stats: dict) -> list:
    """The device's own figures for this move, each with what it is: {name, value, note}."""
    from ...devices import device_class
    return device_class(program.device).figures(stats, program.pte, program.target, program.core) + [
        {"name": "picture read", "value": f"{stats['read_ms']:.1f} ms",
         "note": "your picture to the model's 28x28 input, as `tinyrps classify` reads it"}]
