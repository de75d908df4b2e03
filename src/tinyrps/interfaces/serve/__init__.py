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

A picture is read by tinyrps.network.images exactly as `classify` reads a file (in worker processes,
so that reading, pure numpy and Pillow, uses every core and a decoder crash takes only its
worker down). Each program's device is owned by one thread: its requests run one at a time,
in the order they came, as they must on one serial link. A device that runs in another
process (QEMU) and died is started again, and the move that found it dead says so.

The server writes nothing: not into a run's folder, not anywhere. The client names
programs by their id, never a path. A tab (the page keeps its id in sessionStorage) has
its own score and opponents; the server keeps at most MAX_TABS of them.

    programs     the programs served and the device each runs on
    slots        one device, one thread: its queue of moves
    reader       the pool of processes that read pictures
    game         the tabs, their scores and opponents, one move
    app          the web application: routes, checks of origin and input
    connections  uvicorn's connections, with deadlines for a request's head and body
"""
from __future__ import annotations

import ipaddress
import sys
import threading

from ...infra.errors import UserError
from .app import create_app
from .connections import server_config
from .game import WebGame
from .programs import collect_programs


LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1", "[::1]")


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
    family, socktype, proto, _, address = infos[0]
    sock = socket.socket(family, socktype, proto)
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
    game = WebGame(programs, reader_workers=reader_workers)
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
