"""The web application (Starlette): the page's files, the API's routes, and the checks on each request:
same origin for whatever changes a score, the picture's size and arrival time, its name carried safely.
"""
from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from typing import Optional

from ...infra.errors import UserError
from .game import WebGame
from .slots import ClientLeft, DeviceFailed, ServerBusy


# An upload larger than this is refused before it is read (a phone photo is 2-12 MB).
MAX_UPLOAD_BYTES = 25 * 1024 * 1024
BODY_TIMEOUT_S = 60.0

# What a picture is called in messages when the page does not say (a name, never a path).
DEFAULT_PICTURE_NAME = "the picture"
PICTURE_NAME_PUNCTUATION = " .()+-_"

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
    category = unicodedata.category(c)
    return c in PICTURE_NAME_PUNCTUATION or category[0] in "LNM" or category in ("So", "Pd", "Sc")


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


class Endpoints:
    """The API's and the page's request handlers, on one WebGame."""

    def __init__(self, game: WebGame):
        self.game = game
        self.pages = {name: (web_file(name), media_type) for name, media_type in WEB_FILES.items()}

    def static(self, name: str):
        """The handler of one of the page's files."""
        from starlette.responses import Response

        async def endpoint(request):
            body, media_type = self.pages[name]
            return Response(body, media_type=media_type)
        return endpoint

    async def programs(self, request):
        from starlette.responses import JSONResponse

        from ...network.images import MAX_PIXELS
        from ..opponents import OPPONENTS
        game = self.game
        return JSONResponse({"programs": [dict(p.public(), runs_on=game.slots[p.id].runs_on)
                                          for p in game.programs.values()],
                             "default": game.default_id, "opponents": list(OPPONENTS),
                             "limits": {"upload_bytes": MAX_UPLOAD_BYTES, "pixels": MAX_PIXELS}})

    async def play(self, request):
        from starlette.requests import ClientDisconnect

        from ...network.images import ImageTooLarge
        try:
            return await self.play_round(request)
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

    async def play_round(self, request):
        """A round of a play request, its refusals raised (play answers them)."""
        from starlette.responses import JSONResponse

        from ..opponents import OPPONENTS
        game, q = self.game, request.query_params
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

    async def new_game(self, request):
        from starlette.responses import JSONResponse
        try:
            check_same_origin(request)
            tab = self.game.tab(request.query_params.get("tab"))
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


def create_app(game: WebGame, allowed_hosts=None):
    """The Starlette application of a WebGame. `allowed_hosts`: the Host names it answers (None: any)."""
    from contextlib import asynccontextmanager

    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.trustedhost import TrustedHostMiddleware
    from starlette.routing import Route

    endpoints = Endpoints(game)

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
    routes = [Route("/", endpoints.static("index.html")), Route("/app.js", endpoints.static("app.js")),
              Route("/style.css", endpoints.static("style.css")), Route("/api/programs", endpoints.programs),
              Route("/api/play", endpoints.play, methods=["POST"]),
              Route("/api/new-game", endpoints.new_game, methods=["POST"])]
    return Starlette(routes=routes, middleware=middleware, lifespan=lifespan,
                     exception_handlers={Exception: server_error})
