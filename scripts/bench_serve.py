"""Load on `tinyrps serve`: concurrent clients playing drawn moves through HTTP on loopback.

    python scripts/bench_serve.py --run RUN [--program int8-xnnpack] [--clients 8] [--moves 400] [--json]

Starts `tinyrps serve --model RUN/export/PROGRAM.pte --http-port 0` (so its start-up is
measured too: until it says it is ready, until /api/programs answers, until the first move
is answered), then CLIENTS threads, each with its own keep-alive connection and tab, send
MOVES moves in all, back to back: drawings of R, P and S as the page sends them (a 256 px
PNG of a round pen on white, scripts/serve_browser.py), each read by the server's image
reader, classified with the opponent's move on the device. Each latency is one POST
/api/play, from sending to the whole answer read. The machine's load average is printed
beside the figures: the machine is shared and the figures move with it.

Every request goes to 127.0.0.1 only; the loop is bounded in count (MOVES) and in time
(each request times out after REQUEST_TIMEOUT_S), and the server is stopped at the end.
"""
from __future__ import annotations

import argparse
import http.client
import importlib.util
import json
import os
import platform
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

REPO = Path(__file__).resolve().parents[1]
REQUEST_TIMEOUT_S = 300.0


def browser_script():
    spec = importlib.util.spec_from_file_location("serve_browser", REPO / "scripts" / "serve_browser.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def percentile(values: list, q: float) -> float:
    """The q-th percentile (0-100), linear between the nearest ranks (numpy's default)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


class Client:
    """One player: a keep-alive connection and a tab of its own."""

    def __init__(self, host: str, port: int, program: str, number: int):
        self.connection = http.client.HTTPConnection(host, port, timeout=REQUEST_TIMEOUT_S)
        self.query = f"/api/play?program={program}&opponent=adaptive&tab=bench-client-{number:04d}"

    def move(self, picture: bytes) -> tuple:
        """(seconds, status, answer) of one move."""
        start = time.perf_counter()
        self.connection.request("POST", self.query, body=picture,
                                headers={"Content-Type": "image/png", "X-Picture-Name": "drawing.png"})
        response = self.connection.getresponse()
        body = response.read()
        return time.perf_counter() - start, response.status, body

    def close(self) -> None:
        self.connection.close()


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) of a process and of its living children (the server's picture
    readers, QEMU), from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")

    def own(p: int) -> float:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / ticks
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    children.append(int(entry.name))
            except (OSError, ValueError, IndexError):
                pass
    return own(pid) + sum(own(c) for c in children)


def load(url: str, program: str, clients: int, moves: int, pictures: list) -> dict:
    parsed = urlparse(url)
    remaining = [moves]
    lock = threading.Lock()
    latencies, errors, inside = [], [], []

    def player(number: int) -> None:
        client = Client(parsed.hostname, parsed.port, program, number)
        try:
            while True:
                with lock:
                    if remaining[0] == 0:
                        return
                    remaining[0] -= 1
                    k = remaining[0]
                try:
                    seconds, status, body = client.move(pictures[k % len(pictures)])
                except (OSError, http.client.HTTPException) as e:
                    with lock:
                        errors.append(f"{type(e).__name__}: {e}")
                    client.close()
                    client = Client(parsed.hostname, parsed.port, program, number)
                    continue
                with lock:
                    latencies.append(seconds)
                    if status != 200:
                        errors.append(f"{status}: {body[:200]!r}")
                    else:
                        inside.append(json.loads(body)["stats"]["server_ms"])
        finally:
            client.close()

    threads = [threading.Thread(target=player, args=(i,)) for i in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    ms = [s * 1000 for s in latencies]
    return {"moves": len(latencies), "errors": len(errors), "first_errors": errors[:3],
            "median_ms": round(percentile(ms, 50), 1), "p99_ms": round(percentile(ms, 99), 1),
            "max_ms": round(max(ms), 1) if ms else None,
            # the part of a move inside the server's handler: picture read, device, answer
            "server_median_ms": round(percentile(inside, 50), 1), "server_p99_ms": round(percentile(inside, 99), 1), "moves_per_s": round(len(latencies) / wall, 1),
            "wall_s": round(wall, 2)}


def bench(run: Path, program: str, clients: int, moves: int) -> dict:
    sb = browser_script()
    pte = run / "export" / f"{program}.pte"
    if not pte.is_file():
        raise SystemExit(f"bench_serve: {pte} not found: export it with `tinyrps export --run {run} --target {program}`")
    pictures = [sb.draw_letter_png(letter) for letter in "RPS"]
    started = time.perf_counter()
    with sb.ServerProcess("--model", pte) as server:
        ready_line_s = server.ready_s
        parsed = urlparse(server.url)
        connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=REQUEST_TIMEOUT_S)
        connection.request("GET", "/api/programs")
        connection.getresponse().read()
        answering_s = time.perf_counter() - started
        first = Client(parsed.hostname, parsed.port, program, 9999)
        _, status, body = first.move(pictures[0])
        first_move_s = time.perf_counter() - started
        first.close()
        if status != 200:
            raise SystemExit(f"bench_serve: the first move failed ({status}): {body[:300]!r}")
        answer = json.loads(body)
        load_before = os.getloadavg()
        cpu_before = cpu_seconds(server.process.pid)
        result = load(server.url, program, clients, moves, pictures)
        result["server_cpu_ms_per_move"] = round((cpu_seconds(server.process.pid) - cpu_before) * 1000
                                                 / max(result["moves"], 1), 2)
        load_after = os.getloadavg()
        status = server.stop()
    return {"program": program, "runs_on": answer["runs_on"], "clients": clients, **result,
            "startup": {"ready_line_s": round(ready_line_s, 2), "answering_s": round(answering_s, 2),
                        "first_move_s": round(first_move_s, 2)},
            "load_average_1m": {"before": round(load_before[0], 2), "after": round(load_after[0], 2)},
            "cpus": os.cpu_count(), "machine": platform.platform(), "server_exit": status}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", required=True, type=Path, help="a run folder with the program exported")
    parser.add_argument("--program", action="append", help="exported program to load; repeatable "
                        "(default: int8-xnnpack)")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--moves", type=int, default=400, help="moves in all, shared by the clients")
    parser.add_argument("--json", action="store_true")
    a = parser.parse_args(argv)
    if not 1 <= a.clients <= 64 or not 1 <= a.moves <= 10000:
        raise SystemExit("bench_serve: --clients must be 1-64 and --moves 1-10000")
    results = [bench(a.run, program, a.clients, a.moves) for program in a.program or ["int8-xnnpack"]]
    if a.json:
        print(json.dumps(results, indent=2))
    else:
        for r in results:
            s = r["startup"]
            print(f"{r['program']} ({r['runs_on']}): {r['moves']} moves by {r['clients']} clients, {r['errors']} errors; "
                  f"median {r['median_ms']} ms, p99 {r['p99_ms']} ms, max {r['max_ms']} ms "
                  f"(in the handler: median {r['server_median_ms']} ms, p99 {r['server_p99_ms']} ms), "
                  f"{r['moves_per_s']} moves/s, server CPU {r['server_cpu_ms_per_move']} ms a move; ready line {s['ready_line_s']} s, answering {s['answering_s']} s, "
                  f"first move {s['first_move_s']} s; load average {r['load_average_1m']['before']} -> "
                  f"{r['load_average_1m']['after']} on {r['cpus']} CPUs")
            for e in r["first_errors"]:
                print(f"  error: {e}")
    return 1 if any(r["errors"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
