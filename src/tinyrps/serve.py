"""`tinyrps serve`: the game in a browser. Draw your move (or bring a photo of a letter), and
see what the model saw, what it read, the opponent's move and what the device measured.

An ASGI application (Starlette) on uvicorn. The page is plain HTML, CSS and JavaScript
shipped in the package (tinyrps/web/), with no build step and nothing fetched from
elsewhere. The API:

    GET  /api/programs                 the programs served here, the opponents, the limits
    POST /api/play?program=ID&opponent=random|adaptive&tab=TAB&name=NAME
                                       body: the picture's bytes (PNG, JPEG, ...); NAME, its file's
                                       name for messages, percent-encoded as any query value
    POST /api/new-game?tab=TAB         the tab's score back to zero

Only requests from the page's own origin change a score: a POST whose Origin or
Sec-Fetch-Site names another site is refused (403), so a page elsewhere cannot play for the
player. Moves are bounded: MAX_MOVES_PER_TAB in flight per tab, MAX_MOVES in all, and
answered 503 beyond; a move whose client has gone is cancelled (a move waiting for its
device leaves the queue) and never scored. A connection must send its request's head
within HEAD_TIMEOUT_S of opening or of its previous answer, and a body within BODY_TIMEOUT_S.

A picture is read by tinyrps.images exactly as `classify` reads a file (in worker processes,
so that reading, pure numpy and Pillow, uses every core and a decoder crash takes only its
worker down). Each program's device is owned by one thread: its requests run one at a time,
in the order they came, as they must on one serial link. A device that runs in another
process (QEMU) and died is started again, and the move that found it dead says so.

The server writes nothing: not into a run's folder, not anywhere. The client names
programs by their id, never a path. A tab (the page keeps its id in sessionStorage) has
its own score and opponents; the server keeps at most MAX_TABS of them.
"""
from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import contextlib
import gc
import io
import ipaddress
import multiprocessing
import queue
import re
import signal
import sys
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from .errors import UserError, one_line
from .labels import LABELS

# An upload larger than this is refused before it is read (a phone photo is 2-12 MB).
MAX_UPLOAD_BYTES = 25 * 1024 * 1024
MAX_TABS = 1000
# Moves in flight, from the picture's arrival (read, queued or on the device): per tab (one playing, one
# waiting), and in all.
MAX_MOVES_PER_TAB = 2
MAX_MOVES = 64
# connections open at once (uvicorn answers 503 beyond)
MAX_CONNECTIONS = 256
# A request's head must arrive within this long of its connection opening or of the previous
# answer (a silent or slow-writing client holds a connection no longer); its body within BODY_TIMEOUT_S.
HEAD_TIMEOUT_S = 10.0
IDLE_TIMEOUT_S = 5.0
BODY_TIMEOUT_S = 60.0
TAB_ID = re.compile(r"[A-Za-z0-9_-]{8,64}")
# What a picture is called in messages when the page does not say (a name, never a path).
DEFAULT_PICTURE_NAME = "the picture"
PICTURE_NAME_PUNCTUATION = " .()+-_"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1", "[::1]")
# how long closing waits for a device's current request before stopping it anyway
CLOSE_WAIT_S = 15.0
# the page's files: name -> content type
WEB_FILES = {"index.html": "text/html; charset=utf-8", "app.js": "text/javascript; charset=utf-8",
             "style.css": "text/css; charset=utf-8"}
SECURITY_HEADERS = [
    (b"content-security-policy", b"default-src 'self'; img-src 'self' data: blob:; media-src 'self' blob:; "
                                 b"style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; "
                                 b"base-uri 'none'; form-action 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]


# ── the programs served ──────────────────────────────────────────────────────
@dataclass(frozen=True)
class Program:
    id: str               # what the page names it by
    pte: Path
    target: str
    family: str
    device: str           # the tinyrps.devices name that runs it
    label: str            # for the selector: the target, and what it runs on
    options: dict = field(default_factory=dict)   # open_device options (board, port)
    core: Optional[str] = None                    # the MCU core it runs on ("Cortex-M55"), for mcu

    def public(self) -> dict:
        return {"id": self.id, "label": self.label, "target": self.target, "family": self.family,
                "device": self.device}


def collect_programs(runs=(), models=(), device: str = None, board: str = None, port: str = None) -> list:
    """The programs of the runs (each checked to come from its checkpoint) and the models, each
    with the device that runs it: `device` for the programs whose family it runs, the family's
    default for the others."""
    from . import descriptor
    from .families import get_family
    from .pte import program_family
    from .programs import selected
    paths = []
    for run in runs:
        found = selected(run)
        if not found:
            raise UserError(f"{run} has no exported program: export one with "
                            f"`tinyrps export --run {run} --target int8-xnnpack`")
        paths += list(found.items())
    paths += [(Path(m).stem, Path(m)) for m in models]
    programs, seen, ids = [], set(), set()
    for name, pte in paths:
        if pte.resolve() in seen:
            continue
        seen.add(pte.resolve())
        family = program_family(pte)
        devices = get_family(family).devices
        chosen = device if device in devices else devices[0]
        described = descriptor.read(pte)
        target = described.target if described is not None else name
        pid = unique_id(name, ids)
        options = {}
        if chosen == "mcu":
            options = {"board": board} if board else {}
            if port:
                options["port"] = port
        label, core = program_label(pte, target, chosen, described, board, port)
        programs.append(Program(pid, pte, target, family, chosen, label, options, core))
    check_device_options(programs, device, board, port)
    return programs


def unique_id(name: str, taken: set) -> str:
    pid, n = name, 2
    while pid in taken:
        pid, n = f"{name}-{n}", n + 1
    taken.add(pid)
    return pid


def check_device_options(programs: list, device: str, board: str, port: str) -> None:
    if not programs:
        raise UserError("nothing to serve: give --run RUN or --model X.pte")
    if device and not any(p.device == device for p in programs):
        raise UserError(f"no program served here runs on --device {device}: "
                        f"{', '.join(sorted({p.family for p in programs}))} programs only")
    on_mcu = [p for p in programs if p.device == "mcu"]
    if (board or port) and not on_mcu:
        flag = "--board" if board else "--port"
        raise UserError(f"{flag} is for the mcu device, and no program served here runs on it")
    if port and len(on_mcu) > 1:
        raise UserError(f"--port {port} is one board with one program, and {len(on_mcu)} Cortex-M programs would "
                        f"run on it ({', '.join(p.id for p in on_mcu)}): give the one it holds with --model X.pte")


def program_label(pte: Path, target: str, device: str, described, board: str, port: str) -> tuple:
    """(the selector's label: the target and what it runs on, the MCU core's name or None)."""
    from .devices import device_class
    where, core = device_class(device).runs_on(pte, target, described, board, port)
    return f"{target}: {where}", core


# ── one device, one thread ───────────────────────────────────────────────────
class DeviceFailed(UserError):
    """The device failed on a request (or could not be opened); answered as 503."""


class ServerBusy(UserError):
    """Too many moves waiting (for a tab, for a device or in all); answered as 503 with Retry-After."""


# moves waiting for one device, the one it runs included (an emulated board's move takes ~0.2 s)
MAX_DEVICE_QUEUE = 16


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
        from .devices import open_device
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


# ── reading pictures ─────────────────────────────────────────────────────────
def _reader_worker_init() -> None:
    # Ctrl-C in the terminal reaches the whole process group: the server stops its workers itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _warm_reader() -> bool:
    import tinyrps.images  # noqa: F401
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
        from .images import read_image_bytes
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


# ── the game of one tab ──────────────────────────────────────────────────────
class Tab:
    """One browser tab's game: its score, its rounds and both opponents (each learns from every
    move, so switching to the adaptive one mid-game finds it informed)."""

    def __init__(self):
        from .opponents import OPPONENTS, make_opponent
        self.lock = asyncio.Lock()
        self.rng = np.random.default_rng()
        self.opponents = {name: make_opponent(name, self.rng) for name in OPPONENTS}
        self.score = {"win": 0, "lose": 0, "tie": 0}
        self.rounds = 0


class Game:
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
        from .data import render
        from .game import outcome
        from .labels import softmax
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
    from .devices import device_class
    return device_class(program.device).figures(stats, program.pte, program.target, program.core) + [
        {"name": "picture read", "value": f"{stats['read_ms']:.1f} ms",
         "note": "your picture to the model's 28x28 input, as `tinyrps classify` reads it"}]


# ── the web application ──────────────────────────────────────────────────────
def error(status: int, message: str, headers: dict = None):
    from starlette.responses import JSONResponse
    return JSONResponse({"error": message}, status_code=status, headers=headers)


class CrossOrigin(UserError):
    """A state-changing request sent by a page of another site; answered as 403."""


def check_same_origin(request) -> None:
    """Refuse a request that a browser says comes from another site. A browser names the page
    that sent a POST in Sec-Fetch-Site (same-origin, same-site, cross-site; none: the user)
    and Origin, even for a "simple" request that needs no preflight (Content-Type text/plain);
    a client that is no browser (a script, curl) sends neither, and no other site's page
    can make it send anything."""
    site = request.headers.get("sec-fetch-site")
    origin = request.headers.get("origin")
    own = f"{request.url.scheme}://{request.headers.get('host', '')}".lower()
    if site is not None and site not in ("same-origin", "none"):
        raise CrossOrigin(f"this server plays only for its own page ({own}); a request from "
                          f"{origin or 'another site'} ({site}) is refused")
    if origin is not None and origin.lower() != own:
        raise CrossOrigin(f"this server plays only for its own page ({own}); a request from {origin} is refused")


class ClientLeft(Exception):
    """The client closed its connection before the answer."""


async def unless_client_leaves(request, work):
    """await work(gone): cancelled when the client closes its connection (a move waiting for
    its device leaves the queue), and `gone()` true from then on, for work that cannot stop."""
    left = threading.Event()             # read by the device's thread too

    async def watch():
        while True:
            message = await request.receive()
            if message["type"] == "http.disconnect":
                left.set()
                return
    task = asyncio.ensure_future(work(left.is_set))
    watcher = asyncio.ensure_future(watch())
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:             # the server stops
        task.cancel()
        raise
    finally:
        watcher.cancel()
    if not task.done():
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        raise ClientLeft()
    if task.cancelled() and left.is_set():
        raise ClientLeft()
    return task.result()


def picture_name(given: Optional[str]) -> str:
    """The name the page gives the picture, for messages: a file's name only, never a path, in
    any script (石头.png, ✌️.png), without markup, control or direction-changing characters."""
    if not given:
        return DEFAULT_PICTURE_NAME
    base = given.replace("\\", "/").rsplit("/", 1)[-1]
    name = "".join(c for c in base if name_character(c))[:80].strip()
    return name or DEFAULT_PICTURE_NAME


def name_character(c: str) -> bool:
    import unicodedata
    kind = unicodedata.category(c)
    return c in PICTURE_NAME_PUNCTUATION or kind[0] in "LNM" or kind in ("So", "Pd", "Sc")


def given_picture_name(request) -> Optional[str]:
    """The picture's name from the query (`name`, percent-encoded: any script), or from the
    X-Picture-Name header of older clients (Latin-1 only, as every header; percent-decoded)."""
    from urllib.parse import unquote
    name = request.query_params.get("name")
    if name is None and request.headers.get("x-picture-name"):
        name = unquote(request.headers["x-picture-name"])
    return name


async def read_body(request, limit: int) -> bytes:
    """The request's body, refused (UploadTooLarge) as soon as it is known to exceed `limit`."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise UploadTooLarge(int(declared), limit)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise UploadTooLarge(size, limit)
        chunks.append(chunk)
    return b"".join(chunks)


class UploadTooLarge(UserError):
    def __init__(self, size: int, limit: int):
        super().__init__(f"the upload is too large ({'at least ' if size > limit else ''}{size:,} bytes; at most "
                         f"{limit:,} bytes): scale the picture down first")


def web_file(name: str) -> bytes:
    from importlib.resources import files
    return files("tinyrps").joinpath("web", name).read_bytes()


class SecurityHeaders:
    """Adds SECURITY_HEADERS to every response (the page loads only its own files)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                message = {**message, "headers": list(message.get("headers", [])) + SECURITY_HEADERS}
            await send(message)
        await self.app(scope, receive, send_with_headers)


def create_app(game: Game, allowed_hosts=None):
    """The Starlette application of a Game. `allowed_hosts`: the Host names it answers (None: any)."""
    from contextlib import asynccontextmanager

    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.trustedhost import TrustedHostMiddleware
    from starlette.requests import ClientDisconnect
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    from .images import MAX_PIXELS, ImageTooLarge
    from .opponents import OPPONENTS
    pages = {name: (web_file(name), kind) for name, kind in WEB_FILES.items()}

    def static(name):
        async def endpoint(request):
            body, kind = pages[name]
            return Response(body, media_type=kind)
        return endpoint

    async def programs(request):
        return JSONResponse({"programs": [dict(p.public(), runs_on=game.slots[p.id].runs_on)
                                          for p in game.programs.values()],
                             "default": game.default_id, "opponents": list(OPPONENTS),
                             "limits": {"upload_bytes": MAX_UPLOAD_BYTES, "pixels": MAX_PIXELS}})

    async def play(request):
        q = request.query_params
        try:
            check_same_origin(request)
            program = game.program(q.get("program"))
            opponent = q.get("opponent") or "random"
            if opponent not in OPPONENTS:
                raise UserError(f"unknown opponent '{opponent}'; valid: {', '.join(OPPONENTS)}")
            tab_id = q.get("tab")
            tab = game.tab(tab_id)
            name = picture_name(given_picture_name(request))
            try:
                data = await asyncio.wait_for(read_body(request, MAX_UPLOAD_BYTES), BODY_TIMEOUT_S)
            except asyncio.TimeoutError:
                return error(408, f"the picture did not arrive within {BODY_TIMEOUT_S:.0f} s: play again")
            if not data:
                raise UserError("the request carries no picture: draw your move or choose a photo")
            # counted once its picture is here: a slow upload holds its connection, never a place in the queue
            with game.admitted(tab_id):
                return JSONResponse(await unless_client_leaves(
                    request, lambda gone: game.play(program, opponent, tab, data, name, gone)))
        except (UploadTooLarge, ImageTooLarge) as e:
            return error(413, str(e))
        except CrossOrigin as e:
            return error(403, str(e))
        except ServerBusy as e:
            return error(503, str(e), {"retry-after": "1"})
        except DeviceFailed as e:
            return error(503, str(e))
        except UserError as e:
            return error(400, str(e))
        except (ClientDisconnect, ClientLeft):
            return error(400, "the client left before the answer")

    async def new_game(request):
        try:
            check_same_origin(request)
            tab = game.tab(request.query_params.get("tab"))
        except CrossOrigin as e:
            return error(403, str(e))
        except UserError as e:
            return error(400, str(e))
        async with tab.lock:
            tab.score = {"win": 0, "lose": 0, "tie": 0}
            tab.rounds = 0
        return JSONResponse({"score": tab.score})

    async def server_error(request, exc):
        import traceback
        traceback.print_exception(exc, file=sys.stderr)
        return error(500, f"internal error ({type(exc).__name__}): a bug in tinyrps; the server's log has the "
                          "traceback")

    @asynccontextmanager
    async def lifespan(app):
        game.start()
        try:
            yield
        finally:
            await asyncio.get_running_loop().run_in_executor(None, game.close)

    middleware = [Middleware(SecurityHeaders)]
    if allowed_hosts is not None:
        middleware.insert(0, Middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts)))
    routes = [Route("/", static("index.html")), Route("/app.js", static("app.js")),
              Route("/style.css", static("style.css")), Route("/api/programs", programs),
              Route("/api/play", play, methods=["POST"]), Route("/api/new-game", new_game, methods=["POST"])]
    return Starlette(routes=routes, middleware=middleware, lifespan=lifespan,
                     exception_handlers={Exception: server_error})


# ── the connections ──────────────────────────────────────────────────────────
def server_config(app, **options):
    """uvicorn's settings: the timeouts of TimedConnection, the bound on connections."""
    import uvicorn
    return uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=5,
                          http=timed_connection_class(), timeout_keep_alive=IDLE_TIMEOUT_S,
                          limit_concurrency=MAX_CONNECTIONS, **options)


def timed_connection_class():
    """uvicorn's HTTP/1.1 connection with a deadline for each request's head: HEAD_TIMEOUT_S from
    the connection's opening, or from the previous answer. uvicorn times out only the wait after
    an answer (IDLE_TIMEOUT_S): a client that connects and sends nothing, or its head a byte at
    a time, would hold its connection for good."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class TimedConnection(H11Protocol):
        head_timer = None

        def connection_made(self, transport):
            super().connection_made(transport)
            self._head_deadline()

        def handle_events(self):
            cycle = self.cycle
            super().handle_events()
            if self.cycle is not cycle:           # a request's head arrived whole
                self._no_deadline()

        def on_response_complete(self):
            self._head_deadline()                 # before: the next request may be waiting, and start now
            super().on_response_complete()

        def connection_lost(self, exc):
            self._no_deadline()
            super().connection_lost(exc)

        def _head_deadline(self):
            self._no_deadline()
            self.head_timer = self.loop.call_later(HEAD_TIMEOUT_S, self._head_late)

        def _no_deadline(self):
            if self.head_timer is not None:
                self.head_timer.cancel()
                self.head_timer = None

        def _head_late(self):
            self.head_timer = None
            if not self.transport.is_closing():
                self.transport.close()
    return TimedConnection


# ── the command ──────────────────────────────────────────────────────────────
def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def listen(host: str, port: int):
    """A listening socket on host:port (port 0: any free one), or a UserError saying why not."""
    import socket
    try:
        infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        raise UserError(f"--host {host} is not an address of this machine ({e.strerror})") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError as e:
        sock.close()
        raise UserError(listen_failure(host, port, e)) from None
    sock.set_inheritable(True)
    return sock


def listen_failure(host: str, port: int, e: OSError) -> str:
    """Why binding host:port failed, and what to change: the address, the port or the rights."""
    import errno
    if e.errno == errno.EADDRNOTAVAIL:
        return (f"--host {host} is not an address of this machine: give one of its own "
                "(127.0.0.1 for this machine only, 0.0.0.0 for every network it is on)")
    if e.errno == errno.EADDRINUSE:
        return f"cannot listen on {host}:{port}: the port is taken by another program: choose another --http-port"
    if e.errno == errno.EACCES and 0 < port < 1024:
        return f"cannot listen on {host}:{port}: ports below 1024 need root: choose a --http-port of 1024 or above"
    return f"cannot listen on {host}:{port} ({e.strerror}): choose another --host or --http-port"


def url_of(sock, host: str) -> str:
    port = sock.getsockname()[1]
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else (f"[{host}]" if ":" in host and not host.startswith("[")
                                                           else host)
    return f"http://{shown}:{port}/"


def serve(runs=(), models=(), device=None, board=None, port=None, host="127.0.0.1", http_port=8000,
          open_browser=False, reader_workers: int = 2) -> None:
    """Run the server until Ctrl-C (which stops the devices and their QEMU processes, then raises
    KeyboardInterrupt)."""
    programs = collect_programs(runs, models, device=device, board=board, port=port)
    sock = listen(host, http_port)
    if not is_loopback(host):
        print(f"tinyrps: warning: --host {host} lets other machines on the network play on this server "
              "(no authentication); the default 127.0.0.1 keeps it to this machine", file=sys.stderr, flush=True)
    import uvicorn
    game = Game(programs, reader_workers=reader_workers)
    # only this machine's names: a site that points its own name at 127.0.0.1 (DNS rebinding) gets 400
    allowed = list(LOOPBACK_NAMES) if is_loopback(host) else None
    app = create_app(game, allowed_hosts=allowed)
    url = url_of(sock, host)

    class Server(uvicorn.Server):
        async def startup(self, sockets=None):
            await super().startup(sockets=sockets)
            if self.started:
                print(f"tinyrps serve: {url} ({len(programs)} program{'s' if len(programs) != 1 else ''}; "
                      "Ctrl-C stops)", flush=True)
                if open_browser:
                    import webbrowser
                    threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()

    config = server_config(app)
    try:
        Server(config).run(sockets=[sock])
    finally:
        sock.close()
        game.close()          # idempotent: the lifespan has closed it already on a clean stop
