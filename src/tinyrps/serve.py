"""`tinyrps serve`: the game in a browser. Draw your move (or bring a photo of a letter), and
see what the model saw, what it read, the opponent's move and what the device measured.

An ASGI application (Starlette) on uvicorn. The page is plain HTML, CSS and JavaScript
shipped in the package (tinyrps/web/), with no build step and nothing fetched from
elsewhere. The API:

    GET  /api/programs                 the programs served here, the opponents, the limits
    POST /api/play?program=ID&opponent=random|adaptive&tab=TAB
                                       body: the picture's bytes (PNG, JPEG, ...)
    POST /api/new-game?tab=TAB         the tab's score back to zero

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
TAB_ID = re.compile(r"[A-Za-z0-9_-]{8,64}")
# What a picture is called in messages when the page does not say (a name, never a path).
DEFAULT_PICTURE_NAME = "the picture"
PICTURE_NAME_CHARS = re.compile(r"[^\w .()+-]")
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
    info = getattr(described, "info", None)
    core = None
    if device == "host":
        where = "host CPU, ExecuTorch runtime"
    elif device == "npu-ref":
        npu = getattr(info, "accelerator", target).replace("ethos-u", "Ethos-U")
        where = f"{npu}, its TOSA graph in the reference model"
    elif device == "npu":
        npu = getattr(info, "accelerator", target).replace("ethos-u", "Ethos-U")
        where = f"{npu}, its command stream in tinyrps's NPU model"
    elif device == "mcu":
        from .devices.mcu import CORE_NAMES, program_board
        chosen = program_board(pte, board)
        core = CORE_NAMES.get(chosen.core, chosen.core)
        where = f"{core} on the board at {port}" if port else f"{core} on QEMU {chosen.machine}"
    elif device == "native":
        where = "the firmware's C runtime on this CPU"
    else:
        where = device
    return f"{target}: {where}", core


# ── one device, one thread ───────────────────────────────────────────────────
class DeviceFailed(UserError):
    """The device failed on a request (or could not be opened); answered as 503."""


class DeviceSlot:
    """A program's device, opened on first use and owned by one thread: requests run one at a
    time, first come first served (a serial link carries one request at a time)."""

    def __init__(self, program: Program):
        self.program = program
        self.device = None
        self.runs_on: Optional[str] = None
        self._jobs: queue.Queue = queue.Queue()
        self._closed = False
        self._thread = threading.Thread(target=self._serve, name=f"device {program.id}", daemon=True)
        self._thread.start()

    def submit(self, job) -> concurrent.futures.Future:
        """Run job(device) on the device's thread; the future's result is (job's result, notice),
        notice a line saying the device was restarted before the job (None when it was not)."""
        future = concurrent.futures.Future()
        if self._closed:
            future.set_exception(DeviceFailed("the server is stopping"))
        else:
            self._jobs.put((future, job))
        return future

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


def classify_move(device, you: np.ndarray, opponent: Optional[np.ndarray]) -> Classified:
    start = time.perf_counter()
    you_logits = device.classify(you[None])[0]
    host_ms = (time.perf_counter() - start) * 1000
    stats = device.last_stats()
    opp_logits = device.classify(opponent[None])[0] if opponent is not None else None
    return Classified(you_logits, opp_logits, host_ms, stats)


# ── reading pictures ─────────────────────────────────────────────────────────
def _reader_worker_init() -> None:
    # Ctrl-C in the terminal reaches the whole process group: the server stops its workers itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _warm_reader() -> bool:
    import tinyrps.images  # noqa: F401
    return True


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

    async def read(self, data: bytes, name: str):
        from .images import read_image_bytes
        if self._pool is None:
            from starlette.concurrency import run_in_threadpool
            return await run_in_threadpool(read_image_bytes, data, name)
        pool = self._pool
        try:
            return await asyncio.wrap_future(pool.submit(read_image_bytes, data, name))
        except concurrent.futures.process.BrokenProcessPool:
            self._replace(pool)
            raise UserError(f"{name} stopped the picture reader (it was started again): "
                            "save the picture again, or try another") from None

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

    async def play(self, program: Program, opponent: str, tab: Tab, data: bytes, name: str) -> dict:
        from .data import render
        from .game import outcome
        from .labels import softmax
        started = time.perf_counter()
        reading = await self.reader.read(data, name)
        read_ms = (time.perf_counter() - started) * 1000
        async with tab.lock:
            move = drawing = None
            if reading.letter_found:
                move = tab.opponents[opponent].move()
                drawing = render(np.array([LABELS.index(move)]), tab.rng)[0]
            slot = self.slots[program.id]
            result, notice = await asyncio.wrap_future(slot.submit(
                lambda device: classify_move(device, reading.image, drawing)))
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
    figures = []
    if program.device == "host":
        figures.append({"name": "host latency", "value": f"{stats['host_ms']:.3f} ms",
                        "note": "one inference in the ExecuTorch runtime on this server's CPU, timed around the call"})
    elif program.device in ("npu", "npu-ref"):
        accelerator = (stats.get("accelerator") or program.target).replace("ethos-u", "Ethos-U")
        if stats.get("npu_estimate_ms") is not None:
            clock = f" at {stats['clock_hz'] / 1e6:.0f} MHz" if stats.get("clock_hz") else ""
            figures.append({"name": f"{accelerator} time (Vela estimate)",
                            "value": f"{stats['npu_estimate_ms']:.3f} ms{clock}",
                            "note": "Vela's estimate of the NPU's time for one inference, from `tinyrps measure`"})
        else:
            figures.append({"name": f"{accelerator} time (Vela estimate)", "value": "not measured",
                            "note": f"run `tinyrps measure --model {program.pte.name}` to have Vela estimate it"})
        figures.append({"name": "TOSA reference model on this CPU",
                        "value": f"{stats.get('reference_ms', stats['host_ms']):.1f} ms",
                        "note": "what the NPU computes, run on the host: not the NPU's speed"})
    elif program.device == "mcu":
        if "instructions" in stats:
            figures.append({"name": f"instructions on the {program.core}", "value": f"{stats['instructions']:,}",
                            "note": "counted by QEMU (-icount): instructions, not cycles"})
        if "link_ms" in stats:
            figures.append({"name": "serial round trip", "value": f"{stats['link_ms']:.1f} ms",
                            "note": "the request and its reply over the board's UART, wall time"})
    else:
        figures.append({"name": f"{program.device} latency", "value": f"{stats['host_ms']:.3f} ms",
                        "note": "one inference, timed around the call on this server"})
    figures.append({"name": "picture read", "value": f"{stats['read_ms']:.1f} ms",
                    "note": "your picture to the model's 28x28 input, as `tinyrps classify` reads it"})
    return figures


# ── the web application ──────────────────────────────────────────────────────
def error(status: int, message: str):
    from starlette.responses import JSONResponse
    return JSONResponse({"error": message}, status_code=status)


def picture_name(header: Optional[str]) -> str:
    """The name the page gives the picture, for messages: a file's name only, never a path."""
    if not header:
        return DEFAULT_PICTURE_NAME
    name = PICTURE_NAME_CHARS.sub("", header.replace("\\", "/").rsplit("/", 1)[-1])[:80].strip()
    return name or DEFAULT_PICTURE_NAME


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
            program = game.program(q.get("program"))
            opponent = q.get("opponent") or "random"
            if opponent not in OPPONENTS:
                raise UserError(f"unknown opponent '{opponent}'; valid: {', '.join(OPPONENTS)}")
            tab = game.tab(q.get("tab"))
            name = picture_name(request.headers.get("x-picture-name"))
            data = await read_body(request, MAX_UPLOAD_BYTES)
            if not data:
                raise UserError("the request carries no picture: draw your move or choose a photo")
            return JSONResponse(await game.play(program, opponent, tab, data, name))
        except (UploadTooLarge, ImageTooLarge) as e:
            return error(413, str(e))
        except DeviceFailed as e:
            return error(503, str(e))
        except UserError as e:
            return error(400, str(e))
        except ClientDisconnect:
            return error(400, "the upload stopped before its end")

    async def new_game(request):
        try:
            tab = game.tab(request.query_params.get("tab"))
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
        hint = "choose another --http-port" if port else "choose another --host"
        raise UserError(f"cannot listen on {host}:{port} ({e.strerror}): {hint}") from None
    sock.set_inheritable(True)
    return sock


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
    if not is_loopback(host):
        print(f"tinyrps: warning: --host {host} lets other machines on the network play on this server "
              "(no authentication); the default 127.0.0.1 keeps it to this machine", file=sys.stderr, flush=True)
    sock = listen(host, http_port)
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

    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=5)
    try:
        Server(config).run(sockets=[sock])
    finally:
        sock.close()
        game.close()          # idempotent: the lifespan has closed it already on a clean stop
