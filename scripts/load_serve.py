"""`tinyrps serve` under misbehaving clients: do honest players still get their answers in time?

    python scripts/load_serve.py --model X.pte [--seconds 60] [--clients 32] [--misbehaving 8]
                                 [--utilisation 0.25] [--json]

Starts `tinyrps serve --model X.pte --http-port 0` on 127.0.0.1, then measures the time of an
honest move (POST /api/play of a drawn letter as the page sends it, from sending to the whole
answer read), twice:

1. idle: one player alone, IDLE_MOVES moves one after the other (IDLE_PAUSE_S apart);
2. loaded: CLIENTS clients for SECONDS s, MISBEHAVING of them misbehaving, in turn:
   - slow: a request head sent a byte a second (the server closes it HEAD_TIMEOUT_S after
     the connection opened), or a picture's body a byte a second (408 after BODY_TIMEOUT_S);
     then again;
   - abandoning: a whole move sent, the connection closed 0-0.3 s later, before the answer
     (a move on the emulated board takes longer), then again ABANDON_PAUSE_S later;
   - cross-origin: POSTs of text/plain to /api/play and /api/new-game with another site's
     Origin, as a page elsewhere sends them with no preflight (each must get 403);
   the others play as people do: a move, then a pause for drawing the next, drawn uniformly
   from 0.5-1.5 times a mean chosen so that the honest players together ask for UTILISATION
   of what the idle server answers (mean pause = honest players x idle mean move / UTILISATION):
   the load measured is the misbehaving clients', not a queue of honest ones.

Prints the honest moves' median and p99, idle and loaded, their ratio, every answer the clients
got by kind, whether a cross-origin request changed a score (each cross-origin client's tab is
played once at the end: its round must be 1), and the machine's load average before and after:
the machine may be shared, and the figures move with its load. Every request goes to
127.0.0.1 only; the run is bounded in time, and the server is stopped at the end.
"""
from __future__ import annotations

import argparse
import http.client
import importlib.util
import json
import os
import platform
import random
import socket
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlparse

REPO = Path(__file__).resolve().parents[1]
IDLE_MOVES = 60
IDLE_PAUSE_S = 0.1
ABANDON_PAUSE_S = 0.2
REQUEST_TIMEOUT_S = 120.0


def script(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def play_head(tab: str, length: int, extra: str = "") -> bytes:
    return (f"POST /api/play?tab={tab}&opponent=adaptive HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Content-Type: image/png\r\nContent-Length: {length}\r\n{extra}\r\n").encode()


class Player:
    """An honest player's keep-alive connection. The server closes one left idle (IDLE_TIMEOUT_S):
    a request that finds it closed before any answer is sent again on a new connection, as a
    browser does."""

    def __init__(self, port: int, path: str):
        self.port, self.path = port, path
        self.connection = None

    def move(self, picture: bytes):
        """The answer's status, or the name of the error that stopped the move."""
        for attempt in range(2):
            reused = self.connection is not None
            if self.connection is None:
                self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=REQUEST_TIMEOUT_S)
            try:
                self.connection.request("POST", self.path, body=picture, headers={"Content-Type": "image/png"})
                response = self.connection.getresponse()
                response.read()
                return response.status
            except (OSError, http.client.HTTPException) as e:
                self.close()
                closed_while_idle = isinstance(e, (BrokenPipeError, ConnectionResetError,
                                                   http.client.RemoteDisconnected))
                if not (reused and closed_while_idle) or attempt:
                    return type(e).__name__

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None


class Run:
    """The clients of one load, and what each kind of client got."""

    def __init__(self, port: int, pictures: list, until: float):
        self.port, self.pictures, self.until = port, pictures, until
        self.lock = threading.Lock()
        self.latencies: list = []
        self.answers: dict = {kind: Counter() for kind in ("honest", "slow", "abandoning", "cross-origin")}
        self.held_s: list = []          # how long the server let a slow connection hold on

    def count(self, kind: str, what) -> None:
        with self.lock:
            self.answers[kind][str(what)] += 1

    def honest(self, number: int, pause_mean: float) -> None:
        rng = random.Random(number)
        player = Player(self.port, f"/api/play?tab=load-honest-{number:04d}&opponent=adaptive")
        time.sleep(rng.uniform(0, pause_mean))              # the players do not all start at once
        while time.monotonic() < self.until:
            picture = self.pictures[rng.randrange(len(self.pictures))]
            started = time.perf_counter()
            status = player.move(picture)
            seconds = time.perf_counter() - started
            self.count("honest", status)
            if status == 200:
                with self.lock:
                    self.latencies.append(seconds)
            time.sleep(min(rng.uniform(0.5, 1.5) * pause_mean, max(0.0, self.until - time.monotonic())))
        player.close()

    def slow(self, number: int) -> None:
        """A head, then a body, a byte a second, each until the server closes or answers."""
        body_next = number % 2 == 1
        while time.monotonic() < self.until:
            tab = f"load-slow-{number:04d}"
            start = play_head(tab, 10_000) if body_next else play_head(tab, 10_000)[:40]
            sock = socket.create_connection(("127.0.0.1", self.port), timeout=5)
            sock.sendall(start)
            opened, answer = time.monotonic(), b""
            sock.settimeout(1.0)
            while time.monotonic() < self.until:
                try:
                    sock.sendall(b"\0" if body_next else b"x")
                    answer = sock.recv(4096)
                    break                                    # closed (b"") or answered
                except socket.timeout:
                    continue
                except OSError:
                    break
            if time.monotonic() < self.until:
                with self.lock:
                    self.held_s.append(time.monotonic() - opened)
                self.count("slow", answer.split(b" ", 2)[1].decode() if answer.startswith(b"HTTP/") else "closed")
            sock.close()
            body_next = not body_next

    def abandoning(self, number: int) -> None:
        rng = random.Random(1000 + number)
        while time.monotonic() < self.until:
            picture = self.pictures[rng.randrange(len(self.pictures))]
            try:
                sock = socket.create_connection(("127.0.0.1", self.port), timeout=5)
                sock.sendall(play_head(f"load-gone-{number:04d}", len(picture)) + picture)
                time.sleep(rng.uniform(0, 0.3))
                sock.close()
                self.count("abandoning", "sent and left")
            except OSError as e:
                self.count("abandoning", type(e).__name__)
            time.sleep(ABANDON_PAUSE_S)

    def cross_origin(self, number: int) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=REQUEST_TIMEOUT_S)
        headers = {"Origin": "http://another-site.example", "Content-Type": "text/plain",
                   "Sec-Fetch-Site": "cross-site"}
        while time.monotonic() < self.until:
            for path in ("/api/new-game", "/api/play"):
                try:
                    connection.request("POST", f"{path}?tab=load-foreign-{number:04d}", body=self.pictures[0],
                                       headers=headers)
                    response = connection.getresponse()
                    response.read()
                    self.count("cross-origin", response.status)
                except (OSError, http.client.HTTPException) as e:
                    self.count("cross-origin", type(e).__name__)
                    connection.close()
                    connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=REQUEST_TIMEOUT_S)
            time.sleep(0.05)
        connection.close()


def idle_moves(port: int, pictures: list, moves: int) -> list:
    """Seconds of each of `moves` honest moves, one client alone, IDLE_PAUSE_S apart."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT_S)
    seconds = []
    for k in range(moves):
        started = time.perf_counter()
        connection.request("POST", "/api/play?tab=load-idle-0001&opponent=adaptive", body=pictures[k % len(pictures)],
                           headers={"Content-Type": "image/png"})
        response = connection.getresponse()
        body = response.read()
        if response.status != 200:
            raise SystemExit(f"load_serve: an idle move failed ({response.status}): {body[:300]!r}")
        seconds.append(time.perf_counter() - started)
        time.sleep(IDLE_PAUSE_S)
    connection.close()
    return seconds


def foreign_rounds(port: int, picture: bytes, clients: int) -> list:
    """The round each cross-origin client's tab is at after one honest move: 1 where nothing was played on it."""
    rounds = []
    for number in range(clients):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT_S)
        connection.request("POST", f"/api/play?tab=load-foreign-{number:04d}", body=picture,
                           headers={"Content-Type": "image/png"})
        rounds.append(json.loads(connection.getresponse().read())["round"])
        connection.close()
    return rounds


def kinds_of(misbehaving: int) -> list:
    """The misbehaving clients' kinds, in turn: slow, abandoning, cross-origin, slow, ..."""
    order = ("slow", "abandoning", "cross-origin")
    return [order[i % 3] for i in range(misbehaving)]


def load_test(model: Path, seconds: float, clients: int, misbehaving: int, utilisation: float) -> dict:
    sb, bench = script("serve_browser"), script("bench_serve")
    pictures = [sb.draw_letter_png(letter) for letter in "RPS"]
    with sb.ServerProcess("--model", model) as server:
        port = urlparse(server.url).port
        idle_moves(port, pictures, 5)                      # the device opened and warm
        load_before = os.getloadavg()
        idle = idle_moves(port, pictures, IDLE_MOVES)
        honest = clients - misbehaving
        pause_mean = honest * (sum(idle) / len(idle)) / utilisation
        run = Run(port, pictures, time.monotonic() + seconds)
        threads = [threading.Thread(target=run.honest, args=(i, pause_mean)) for i in range(honest)]
        kinds = kinds_of(misbehaving)
        threads += [threading.Thread(target=getattr(run, kind.replace("-", "_")), args=(i,))
                    for i, kind in enumerate(kinds)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(seconds + REQUEST_TIMEOUT_S + 30)
        load_after = os.getloadavg()
        rounds = foreign_rounds(port, pictures[0], kinds.count("cross-origin"))
        status = server.stop()
    ms = lambda values, q: round(bench.percentile([v * 1000 for v in values], q), 1)  # noqa: E731
    return {"model": str(model), "seconds": seconds, "clients": clients, "honest": honest,
            "misbehaving": dict(Counter(kinds)), "pause_mean_s": round(pause_mean, 2),
            "idle": {"moves": len(idle), "median_ms": ms(idle, 50), "p99_ms": ms(idle, 99),
                     "max_ms": round(max(idle) * 1000, 1)},
            "loaded": {"moves": len(run.latencies), "median_ms": ms(run.latencies, 50), "p99_ms": ms(run.latencies, 99),
                       "max_ms": round(max(run.latencies) * 1000, 1) if run.latencies else None},
            "p99_ratio": round(ms(run.latencies, 99) / ms(idle, 99), 2),
            "answers": {kind: dict(counts) for kind, counts in run.answers.items()},
            "slow_held_s": {"median": round(bench.percentile(run.held_s, 50), 1),
                            "max": round(max(run.held_s), 1)} if run.held_s else None,
            "foreign_tab_rounds": rounds, "server_exit": status,
            "load_average_1m": {"before": round(load_before[0], 2), "after": round(load_after[0], 2)},
            "cpus": os.cpu_count(), "machine": platform.platform()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, type=Path, help="the program to serve (its device: the family's)")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--misbehaving", type=int, default=8)
    parser.add_argument("--utilisation", type=float, default=0.25,
                        help="what the honest players ask of the idle server's capacity (default 0.25)")
    parser.add_argument("--json", action="store_true")
    a = parser.parse_args(argv)
    if not 1 <= a.clients <= 64 or not 0 <= a.misbehaving < a.clients or not 1 <= a.seconds <= 600 \
            or not 0 < a.utilisation <= 1:
        raise SystemExit("load_serve: --clients 1-64, --misbehaving below it, --seconds 1-600, --utilisation 0-1")
    if not a.model.is_file():
        raise SystemExit(f"load_serve: {a.model} not found")
    r = load_test(a.model, a.seconds, a.clients, a.misbehaving, a.utilisation)
    if a.json:
        print(json.dumps(r, indent=2))
    else:
        i, l_ = r["idle"], r["loaded"]
        print(f"{Path(r['model']).name}: idle {i['moves']} moves median {i['median_ms']} ms, p99 {i['p99_ms']} ms; "
              f"loaded ({r['honest']} honest players pausing {r['pause_mean_s']} s on average, misbehaving "
              f"{r['misbehaving']}, {r['seconds']:.0f} s) {l_['moves']} moves median {l_['median_ms']} ms, "
              f"p99 {l_['p99_ms']} ms, max {l_['max_ms']} ms: p99 {r['p99_ratio']}x idle")
        print(f"answers: {r['answers']}; slow connections held {r['slow_held_s']} s; cross-origin tabs' round "
              f"after one honest move: {r['foreign_tab_rounds']}; load average {r['load_average_1m']['before']} -> "
              f"{r['load_average_1m']['after']} on {r['cpus']} CPUs")
    honest_failed = sum(n for status, n in r["answers"]["honest"].items() if status != "200")
    return 1 if honest_failed or any(n != 1 for n in r["foreign_tab_rounds"]) else 0


if __name__ == "__main__":
    sys.exit(main())
