"""`tinyrps serve`: the API (Starlette's TestClient on the real application and devices), the
server as a process, a real browser drawing on the page, the emulated board's queue and its
restart, and the adaptive opponent."""
from __future__ import annotations

import base64
import io
import json
import struct
import threading
import urllib.request
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from proc_table import children, command_of
from script_module import load_script

REPO = Path(__file__).resolve().parents[1]


def browser_script():
    return load_script("serve_browser")


sb = browser_script()
R_PNG = sb.draw_letter_png("R")


def blank_png(side: int = 256) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (side, side), "white").save(buf, "PNG")
    return buf.getvalue()


def huge_png(width: int = 12000, height: int = 9000) -> bytes:
    """A PNG whose header says width x height (108 MP, above the reader's limit and below Pillow's): its
    pixels are never decoded."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")


def decoded(data_url: str) -> np.ndarray:
    assert data_url.startswith("data:image/png;base64,")
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(data_url.split(",", 1)[1]))))


def files_of(folder: Path) -> dict:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")}


# ── the application in process ───────────────────────────────────────────────
class Served:
    """A WebGame on programs, its application and a TestClient, closed on exit."""

    def __init__(self, models=(), runs=(), reader_workers=0, warm=False, **options):
        from starlette.testclient import TestClient

        from tinyrps.interfaces.serve.game import WebGame
        from tinyrps.interfaces.serve.programs import collect_programs
        from tinyrps.interfaces.serve.app import create_app
        self.programs = collect_programs(runs, models, **options)
        self.game = WebGame(self.programs, reader_workers=reader_workers, warm=warm)
        self.client = TestClient(create_app(self.game, allowed_hosts=["testserver"]))

    def play(self, picture=R_PNG, tab="tab-0001", **query):
        return self.client.post("/api/play", params={"tab": tab, **query}, content=picture,
                                headers={"content-type": "image/png", "x-picture-name": "drawing.png"})

    def __enter__(self):
        self.client.__enter__()
        return self

    def __exit__(self, *exc):
        self.client.__exit__(*exc)
        self.game.close()


@pytest.fixture(scope="module")
def cpu_pte(exported):
    return exported("int8-xnnpack")


@pytest.fixture(scope="module")
def cpu_server(cpu_pte):
    with Served([cpu_pte]) as served:
        yield served


def test_the_page_and_its_files_are_served_from_the_package_with_no_outside_address(cpu_server):
    page = cpu_server.client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    for name, kind in (("app.js", "text/javascript"), ("style.css", "text/css")):
        asset = cpu_server.client.get(f"/{name}")
        assert asset.status_code == 200 and asset.headers["content-type"].startswith(kind)
        assert "http://" not in asset.text and "https://" not in asset.text, name
    assert "http://" not in page.text and "https://" not in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["x-content-type-options"] == "nosniff"
    for control in ('id="clear"', 'id="play"', 'id="choose"', 'for="program"', 'for="opponent"'):
        assert control in page.text


def test_programs_lists_every_program_with_its_device(trained_run, exported):
    for target in ("int8-xnnpack", "ethos-u85-128", "cortex-m55"):
        exported(target)
    with Served(runs=[trained_run]) as served:
        info = served.client.get("/api/programs").json()
    devices = {p["target"]: p["device"] for p in info["programs"]}
    assert devices["int8-xnnpack"] == "executorch" and devices["ethos-u85-128"] == "npu"
    assert devices["cortex-m55"] == "mcu"
    assert info["default"] == "int8-xnnpack" and info["opponents"] == ["random", "adaptive"]
    assert {"upload_bytes", "pixels"} <= set(info["limits"])
    label = next(p["label"] for p in info["programs"] if p["target"] == "cortex-m55")
    assert "Cortex-M55" in label and "mps3-an547" in label


def test_a_drawn_move_answers_every_field(cpu_server, cpu_pte):
    from tinyrps.interfaces.game import outcome
    from tinyrps.network.images import read_image_bytes
    from tinyrps.network.labels import LABELS
    answer = cpu_server.play(tab="fields-tab-1", opponent="random")
    assert answer.status_code == 200, answer.text
    a = answer.json()
    seen = read_image_bytes(R_PNG, "drawing.png")
    you = a["you"]
    assert you["letter_found"] and you["label"] == "rock" and 0.5 < you["confidence"] <= 1
    assert set(you["probabilities"]) == set(LABELS) and abs(sum(you["probabilities"].values()) - 1) < 1e-6
    assert np.array_equal(decoded(you["image"]), seen.image), "the preview is not what the model saw"
    theirs = a["opponent"]
    assert theirs["move"] in LABELS and theirs["strategy"] == "random" and theirs["label"] in LABELS
    assert theirs["label"] == max(theirs["probabilities"], key=theirs["probabilities"].get)
    assert decoded(theirs["image"]).shape == (28, 28)
    assert a["outcome"] == outcome(you["label"], theirs["label"])
    assert a["round"] == 1 and sum(a["score"].values()) == 1 and a["score"][a["outcome"]] == 1
    assert a["program"]["id"] == "int8-xnnpack" and a["program"]["device"] == "executorch"
    assert a["runs_on"].startswith("ExecuTorch runtime")
    assert a["stats"]["host_ms"] > 0 and a["stats"]["read_ms"] > 0 and a["notice"] is None
    names = [f["name"] for f in a["figures"]]
    assert names == ["host latency", "picture read"] and all(f["note"] for f in a["figures"])
    second = cpu_server.play(tab="fields-tab-1").json()
    assert second["round"] == 2 and sum(second["score"].values()) == 2


def test_no_letter_found_plays_no_round(cpu_server):
    a = cpu_server.play(blank_png(), tab="blank-tab-1").json()
    assert a["you"]["letter_found"] is False and a["you"]["label"] is None and a["you"]["confidence"] is None
    assert a["opponent"] is None and a["outcome"] is None and a["round"] is None
    assert a["score"] == {"win": 0, "lose": 0, "tie": 0}
    assert decoded(a["you"]["image"]).shape == (28, 28)


def test_the_score_is_kept_per_tab_and_a_new_game_resets_it(cpu_server):
    for _ in range(2):
        cpu_server.play(tab="tab-a-0001")
    other = cpu_server.play(tab="tab-b-0001").json()
    assert other["round"] == 1 and sum(other["score"].values()) == 1
    reset = cpu_server.client.post("/api/new-game", params={"tab": "tab-a-0001"})
    assert reset.json()["score"] == {"win": 0, "lose": 0, "tie": 0}
    assert cpu_server.play(tab="tab-a-0001").json()["round"] == 1


def test_a_non_image_gets_400_with_the_message_of_classify(cpu_server, tmp_path):
    from tinyrps.infra.errors import UserError
    from tinyrps.network.images import read_image
    for name, data in (("notes.png", b"these are words, not pixels"), ("cut.png", R_PNG[:len(R_PNG) // 2])):
        answer = cpu_server.client.post("/api/play", params={"tab": "errors-tab-1"}, content=data,
                                         headers={"x-picture-name": name})
        assert answer.status_code == 400, answer.text
        (tmp_path / name).write_bytes(data)
        with pytest.raises(UserError) as classify_said:
            read_image(tmp_path / name)
        assert answer.json()["error"] == str(classify_said.value).replace(str(tmp_path / name), name)
    assert "not an image Pillow can read" in cpu_server.client.post(
        "/api/play", params={"tab": "errors-tab-1"}, content=b"words").json()["error"]


def test_too_large_uploads_get_413_with_the_readers_message(cpu_server):
    from tinyrps.network.images import MAX_PIXELS
    from tinyrps.interfaces.serve.app import MAX_UPLOAD_BYTES
    answer = cpu_server.play(huge_png(), tab="large-tab-1")
    assert answer.status_code == 413
    assert answer.json()["error"] == (f"drawing.png is too large (12000x9000 pixels; at most {MAX_PIXELS:,} pixels): "
                                      "scale it down first")
    answer = cpu_server.play(b"\0" * (MAX_UPLOAD_BYTES + 1), tab="large-tab-1")
    assert answer.status_code == 413 and "too large" in answer.json()["error"]
    assert f"at most {MAX_UPLOAD_BYTES:,} bytes" in answer.json()["error"]


def test_bad_requests_get_400_in_one_line(cpu_server):
    cases = {"unknown program 'tpu'": dict(program="tpu"), "unknown opponent 'psychic'": dict(opponent="psychic"),
             "tab must be": dict(tab="../../etc")}
    for needle, query in cases.items():
        answer = cpu_server.play(**query)
        assert answer.status_code == 400 and needle in answer.json()["error"], (query, answer.text)
        assert "\n" not in answer.json()["error"]
    empty = cpu_server.play(b"", tab="empty-tab-1")
    assert empty.status_code == 400 and "no picture" in empty.json()["error"]
    assert cpu_server.client.get("/api/play").status_code == 405
    assert cpu_server.client.get("/", headers={"host": "evil.example"}).status_code == 400


def test_a_picture_name_is_a_name_never_a_path():
    from tinyrps.interfaces.serve.app import picture_name
    assert picture_name("../../home/me/photo.jpg") == "photo.jpg"
    assert picture_name("C:\\Users\\me\\pic.png") == "pic.png"
    assert picture_name(None) == picture_name("") == picture_name("////") == "the picture"
    assert picture_name("<script>x.png") == "scriptx.png"
    assert picture_name("石头.png") == "石头.png" and picture_name("✌️.png") == "✌️.png"
    assert picture_name("rock — take 2.png") == "rock — take 2.png"
    assert picture_name("a\u202eb\x00c.png") == "abc.png"          # no direction override, no control


def test_a_picture_name_in_any_script_reaches_the_message_through_the_query(cpu_server):
    """A header carries Latin-1 only: the page sends the name in the query, percent-encoded."""
    name = "石头 — ✌️.png"
    answer = cpu_server.client.post("/api/play", params={"tab": "name-tab-01", "name": name}, content=b"words")
    assert answer.status_code == 400 and answer.json()["error"].startswith(f"{name} is not an image"), answer.text
    good = cpu_server.client.post("/api/play", params={"tab": "name-tab-01", "name": name}, content=R_PNG)
    assert good.status_code == 200 and good.json()["you"]["label"] == "rock"


def test_only_the_pages_own_origin_changes_a_score(cpu_server):
    """A page of another site can POST text/plain with no preflight: Origin and Sec-Fetch-Site say
    where it comes from, and such a request is refused before it plays or resets anything."""
    tab = "origin-tab-01"
    assert cpu_server.play(tab=tab).json()["round"] == 1
    foreign = [{"origin": "http://evil.example", "content-type": "text/plain"},
               {"origin": "null", "content-type": "text/plain"},
               {"sec-fetch-site": "cross-site", "content-type": "text/plain"},
               {"sec-fetch-site": "same-site", "origin": "http://other.testserver"}]
    for headers in foreign:
        for path in ("/api/play", "/api/new-game"):
            answer = cpu_server.client.post(path, params={"tab": tab}, content=R_PNG, headers=headers)
            assert answer.status_code == 403, (path, headers, answer.text)
            assert "plays only for its own page" in answer.json()["error"]
    own = {"origin": "http://testserver", "sec-fetch-site": "same-origin", "content-type": "image/png"}
    answer = cpu_server.client.post("/api/play", params={"tab": tab}, content=R_PNG, headers=own)
    assert answer.status_code == 200 and answer.json()["round"] == 2, "a refused request changed the score"


def test_the_server_writes_nothing_into_the_run(trained_run, exported):
    exported("int8-xnnpack")
    exported("ethos-u85-128")
    before = files_of(trained_run)
    with Served(runs=[trained_run], warm=True) as served:
        for program in ("int8-xnnpack", "ethos-u85-128"):
            assert served.play(program=program, tab="write-tab-1").status_code == 200
    assert files_of(trained_run) == before


def test_the_npu_reference_reports_vela_estimate_from_the_measurement(exported):
    from tinyrps import measure
    pte = exported("ethos-u85-128")
    measure.path_of(pte).unlink(missing_ok=True)
    with Served([pte]) as served:
        a = served.play(tab="npu-tab-0001").json()
    assert a["you"]["label"] == "rock" and a["program"]["device"] == "npu"
    figures = {f["name"]: f for f in a["figures"]}
    vela = figures["Ethos-U85-128 time (Vela estimate)"]
    assert vela["value"] == "not measured" and "tinyrps measure" in vela["note"]
    assert "not the NPU's speed" in figures["NPU model on this CPU"]["note"]
    measure.measure(pte, only=("vela",))
    with Served([pte]) as served:
        a = served.play(tab="npu-tab-0001").json()
    ms = measure.read(pte)["vela"]["inference_ms"]
    assert a["stats"]["npu_estimate_ms"] == ms
    assert {f["name"]: f for f in a["figures"]}["Ethos-U85-128 time (Vela estimate)"]["value"].startswith(f"{ms:.3f} ms")


def test_pictures_are_read_in_worker_processes_the_same_way(cpu_pte):
    with Served([cpu_pte], reader_workers=2) as served:
        a = served.play(tab="workers-tab-1").json()
        assert served.play(b"words", tab="workers-tab-1").status_code == 400
        assert served.play(huge_png(), tab="workers-tab-1").status_code == 413
    from tinyrps.network.images import read_image_bytes
    assert np.array_equal(decoded(a["you"]["image"]), read_image_bytes(R_PNG, "x").image)


def test_a_reader_killed_from_outside_is_restarted_and_the_next_move_is_not_blamed(cpu_pte):
    import os
    import signal
    from tinyrps.interfaces.serve.reader import READER_RESTARTED
    with Served([cpu_pte], reader_workers=1) as served:
        assert served.play(tab="reader-tab-1").status_code == 200
        (worker,) = served.game.reader._pool._processes.values()
        os.kill(worker.pid, signal.SIGKILL)
        worker.join(10)
        after = served.play(tab="reader-tab-1")
        assert after.status_code == 200 and after.json()["you"]["label"] == "rock", after.text
        assert after.json()["notice"] == READER_RESTARTED and "not because of this picture" in READER_RESTARTED
        again = served.play(tab="reader-tab-1")
        assert again.status_code == 200 and again.json()["notice"] is None


# ── the server on real sockets, in this process ───────────────────────────────
class Live:
    """The application under uvicorn with the command's settings (serve.server_config), on a
    loopback port, in a thread of this process: its WebGame and devices are at hand."""

    def __init__(self, models):
        from tinyrps.interfaces.serve.game import WebGame
        from tinyrps.interfaces.serve.programs import collect_programs
        from tinyrps.interfaces.serve.app import create_app
        from tinyrps.interfaces.serve import listen
        from tinyrps.interfaces.serve.connections import server_config
        import uvicorn
        self.game = WebGame(collect_programs([], models), reader_workers=0, warm=True)
        self.sock = listen("127.0.0.1", 0)
        self.port = self.sock.getsockname()[1]
        self.server = uvicorn.Server(server_config(create_app(self.game)))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self):
        import time
        self.thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "the server did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(30)
        self.sock.close()
        self.game.close()

    def post(self, path, body=b"", headers=None, timeout=60):
        import http.client
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            connection.request("POST", path, body=body, headers=headers or {})
            response = connection.getresponse()
            return response.status, json.loads(response.read()), dict(response.getheaders())
        finally:
            connection.close()

    def raw(self, data: bytes = b""):
        import socket
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=30)
        if data:
            sock.sendall(data)
        return sock

    def block_device(self, program: str):
        """The program's device made busy by a job that waits for the event returned: the moves after it queue."""
        release, started = threading.Event(), threading.Event()
        slot = self.game.slots[program]
        slot.warm().result(60)

        def hold(device):
            started.set()
            release.wait(60)
        slot.submit(hold)
        assert started.wait(30)
        return release


def play_request(tab: str, picture: bytes = R_PNG) -> bytes:
    head = (f"POST /api/play?tab={tab} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: image/png\r\n"
            f"Content-Length: {len(picture)}\r\n\r\n")
    return head.encode() + picture


def wait_until(condition, timeout=30.0, what="the condition"):
    import time
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} not reached within {timeout} s"
        time.sleep(0.02)


def test_a_move_whose_client_left_leaves_the_queue_and_is_not_scored(cpu_pte):
    with Live([cpu_pte]) as live:
        slot = live.game.slots["int8-xnnpack"]
        release = live.block_device("int8-xnnpack")
        client = live.raw(play_request("gone-tab-0001"))
        wait_until(lambda: slot.waiting == 2, what="the move queued behind the busy device")
        client.close()
        wait_until(lambda: slot.waiting == 1, what="the abandoned move cancelled")
        release.set()
        wait_until(lambda: slot.waiting == 0, what="the device free")
        status, answer, _ = live.post("/api/play?tab=gone-tab-0001", R_PNG)
        assert status == 200 and answer["round"] == 1, "the abandoned move was scored"
        assert live.game.moves == 0 and not live.game.tab_moves


def test_a_move_whose_client_leaves_during_its_inference_skips_the_opponents_and_is_not_scored(cpu_pte):
    import time
    with Live([cpu_pte]) as live:
        slot = live.game.slots["int8-xnnpack"]
        slot.warm().result(60)
        device, calls = slot.device, []
        real, started, resume = device.classify, threading.Event(), threading.Event()

        def classify(images):                     # the player's inference outlasts its client
            calls.append(len(images))
            if len(calls) == 1:
                started.set()
                resume.wait(30)
            return real(images)
        device.classify = classify
        client = live.raw(play_request("leave-tab-0001"))
        assert started.wait(30)
        client.close()
        time.sleep(0.5)                           # the server sees the connection closed
        resume.set()
        wait_until(lambda: slot.waiting == 0 and live.game.moves == 0, what="the move ended")
        assert len(calls) == 1, "the opponent's inference ran for a client that had left"
        device.classify = real
        status, answer, _ = live.post("/api/play?tab=leave-tab-0001", R_PNG)
        assert status == 200 and answer["round"] == 1, "the abandoned move was scored"
        assert answer["notice"] is None and slot.device is device


def test_moves_are_bounded_per_tab_in_all_and_per_device_with_a_503(cpu_pte, monkeypatch):
    from concurrent.futures import ThreadPoolExecutor
    import tinyrps.interfaces.serve as serve
    import tinyrps.interfaces.serve.app, tinyrps.interfaces.serve.connections, tinyrps.interfaces.serve.game, tinyrps.interfaces.serve.slots  # noqa: E401,F401
    monkeypatch.setattr(serve.game, "MAX_MOVES", 3)
    with Live([cpu_pte]) as live, ThreadPoolExecutor(8) as pool:
        slot = live.game.slots["int8-xnnpack"]
        release = live.block_device("int8-xnnpack")
        kept = [pool.submit(live.post, "/api/play?tab=busy-tab-0001", R_PNG) for _ in range(2)]
        wait_until(lambda: live.game.tab_moves.get("busy-tab-0001") == 2 and slot.waiting == 2)
        status, answer, headers = live.post("/api/play?tab=busy-tab-0001", R_PNG)
        assert status == 503 and "this tab has 2 moves in progress" in answer["error"], answer
        assert headers.get("retry-after") == "1"
        kept.append(pool.submit(live.post, "/api/play?tab=busy-tab-0002", R_PNG))
        wait_until(lambda: live.game.moves == 3 and slot.waiting == 3)
        status, answer, _ = live.post("/api/play?tab=busy-tab-0003", R_PNG)
        assert status == 503 and "the server is busy (3 moves in progress)" in answer["error"], answer
        monkeypatch.setattr(serve.game, "MAX_MOVES", 10)
        monkeypatch.setattr(serve.slots, "MAX_DEVICE_QUEUE", 3)
        status, answer, _ = live.post("/api/play?tab=busy-tab-0004", R_PNG)
        assert status == 503 and "int8-xnnpack has 3 moves waiting" in answer["error"], answer
        release.set()
        assert [f.result(60)[0] for f in kept] == [200] * 3
        assert live.game.moves == 0 and slot.waiting == 0


@pytest.mark.slow       # waits for the timeouts, shortened to 1 s
def test_silent_slow_and_idle_connections_are_closed(cpu_pte, monkeypatch):
    import time
    import tinyrps.interfaces.serve as serve
    import tinyrps.interfaces.serve.app, tinyrps.interfaces.serve.connections, tinyrps.interfaces.serve.game, tinyrps.interfaces.serve.slots  # noqa: E401,F401
    monkeypatch.setattr(serve.connections, "HEAD_TIMEOUT_S", 1.0)
    monkeypatch.setattr(serve.connections, "IDLE_TIMEOUT_S", 1.0)
    with Live([cpu_pte]) as live:
        silent = live.raw()
        slow = live.raw(b"POST /api/play?tab=slow-tab-0001 HTTP/1.1\r\n")
        served = live.raw(play_request("idle-tab-0001"))
        assert served.recv(65536).startswith(b"HTTP/1.1 200")
        started = time.monotonic()
        closed = {}
        while len(closed) < 3 and time.monotonic() - started < 10:
            try:
                if "slow" not in closed:
                    slow.sendall(b"X")                           # a header a byte at a time
            except OSError:
                closed["slow"] = round(time.monotonic() - started, 1)
            for name, sock in (("silent", silent), ("slow", slow), ("idle", served)):
                sock.settimeout(0.2)
                try:
                    if name not in closed and sock.recv(65536) == b"":
                        closed[name] = round(time.monotonic() - started, 1)
                except TimeoutError:
                    pass
                except OSError:
                    closed[name] = round(time.monotonic() - started, 1)
        assert set(closed) == {"silent", "slow", "idle"}, closed
        assert max(closed.values()) < 4, closed
        monkeypatch.setattr(serve.app, "BODY_TIMEOUT_S", 1.0)
        trickle = live.raw(play_request("trickle-tab-1")[:-100])          # a body that stops short
        trickle.settimeout(5)
        answer = b""
        while b"did not arrive" not in answer and (chunk := trickle.recv(65536)):
            answer += chunk                                              # the head and body may come apart
        assert answer.startswith(b"HTTP/1.1 408") and b"did not arrive within 1 s" in answer, answer
        assert live.game.moves == 0


# ── the command ───────────────────────────────────────────────────────────────
def test_serve_refuses_bad_arguments_in_one_line(cli, trained_run, exported, cpu_pte):
    exported("cortex-m55")
    exported("cortex-m33")
    cases = {("--model", cpu_pte, "--device", "native"): "no program served here runs on --device native",
             ("--model", cpu_pte, "--port", "/dev/ttyACM0"): "--port is for the mcu device",
             ("--model", cpu_pte, "--board", "mps2-an505"): "--board is for the mcu device",
             ("--run", trained_run, "--port", "/dev/ttyACM0"): "one board with one program",
             ("--model", cpu_pte, "--device", "eager"): "--device eager runs a checkpoint",
             ("--model", cpu_pte, "--host", "8.8.8.8"): "--host 8.8.8.8 is not an address of this machine",
             (): "serve needs --run RUN"}
    for args, needle in cases.items():
        res = cli("serve", *args)
        lines = res.stderr.strip().splitlines()
        assert res.returncode == 2 and len(lines) == 1 and needle in lines[0], (args, res.stderr)


def test_the_server_starts_answers_and_stops_on_ctrl_c(cpu_pte):
    with sb.ServerProcess("--model", cpu_pte) as server:
        assert server.url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(server.url + "api/programs", timeout=30) as r:
            assert json.load(r)["programs"][0]["id"] == "int8-xnnpack"
        request = urllib.request.Request(server.url + "api/play?tab=process-tab-1", data=R_PNG, method="POST")
        with urllib.request.urlopen(request, timeout=60) as r:
            assert json.load(r)["you"]["label"] == "rock"
        busy = sb.ServerProcess("--model", cpu_pte)
        busy.args[-1] = server.url.rsplit(":", 1)[1].strip("/")          # the port already taken
        res = __import__("subprocess").run(busy.args, capture_output=True, text=True, timeout=120)
        assert res.returncode == 2 and "cannot listen on 127.0.0.1" in res.stderr, res.stderr
        status = server.stop()
    assert status == 130 and server.stderr_lines[-1] == "tinyrps: interrupted", server.stderr_lines
    assert not any("Traceback" in line for line in server.stderr_lines)


def test_listening_beyond_this_machine_warns_in_one_line(cpu_pte):
    with sb.ServerProcess("--model", cpu_pte, "--host", "0.0.0.0") as server:
        with urllib.request.urlopen(server.url + "api/programs", timeout=30) as r:
            assert r.status == 200
    warnings = [line for line in server.stderr_lines if "warning" in line]
    assert len(warnings) == 1 and "--host 0.0.0.0" in warnings[0]


# ── the opponents ─────────────────────────────────────────────────────────────
def play_against(strategy: str, player, rounds: int, seed: int) -> dict:
    from tinyrps.interfaces.game import outcome
    from tinyrps.interfaces.opponents import make_opponent
    opponent = make_opponent(strategy, np.random.default_rng(seed))
    tally = {"win": 0, "lose": 0, "tie": 0}                      # the opponent's results
    for i in range(rounds):
        theirs, yours = opponent.move(), player(i)
        tally[outcome(theirs, yours)] += 1
        opponent.observe(yours)
    return tally


def test_the_adaptive_opponent_beats_a_fixed_pattern():
    pattern = ["rock", "rock", "paper"]
    for seed in range(5):
        assert play_against("adaptive", lambda i: pattern[i % 3], 300, seed)["win"] >= 0.7 * 300
    assert play_against("random", lambda i: pattern[i % 3], 300, 0)["win"] < 0.5 * 300   # the test can fail


def test_the_adaptive_opponent_does_no_worse_than_even_against_a_random_player():
    """Against uniform moves every strategy wins and loses a third each; wins - losses over n
    rounds then has mean 0 and standard deviation sqrt(2n/3). A strategy that gave moves away
    would fall below -3 standard deviations (a fair one does so with probability 0.13 %)."""
    from tinyrps.network.labels import LABELS
    rounds = 3000
    for seed in range(3):
        player = np.random.default_rng(1000 + seed)
        moves = [LABELS[k] for k in player.integers(3, size=rounds)]
        tally = play_against("adaptive", lambda i: moves[i], rounds, seed)
        assert tally["win"] - tally["lose"] >= -3 * np.sqrt(2 * rounds / 3), tally


def test_the_adaptive_opponent_never_sees_the_move_it_answers():
    from tinyrps.interfaces.opponents import make_opponent
    opponent = make_opponent("adaptive", np.random.default_rng(0))
    for move in ["rock", "paper"] * 5:
        opponent.observe(move)
    first = opponent.move()
    state = json.dumps({k: {str(c): v.tolist() for c, v in t.items()} for k, t in opponent.counts.items()})
    assert opponent.move() in ("rock", "paper", "scissors") and first == "paper"   # it expects rock next
    assert json.dumps({k: {str(c): v.tolist() for c, v in t.items()}
                       for k, t in opponent.counts.items()}) == state, "move() changed what it learned"


def test_play_takes_the_adaptive_opponent(cli, cpu_pte):
    moves = ["rock", "rock", "paper"] * 10
    res = cli("play", "--model", cpu_pte, "--moves", ",".join(moves), "--opponent", "adaptive", "--seed", "0",
              "--json")
    assert res.returncode == 0, res.stderr
    rounds = [json.loads(line) for line in res.stdout.splitlines()]
    from tinyrps.interfaces.opponents import BEATEN_BY
    from tinyrps.network.labels import LABELS
    answered = [r["opponent"] == LABELS[BEATEN_BY[LABELS.index(r["you"])]] for r in rounds[9:]]
    assert sum(answered) >= 0.7 * len(answered), rounds
    bad = cli("play", "--model", cpu_pte, "--moves", "r", "--opponent", "psychic")
    assert bad.returncode == 2 and "psychic" in bad.stderr


# ── the emulated Cortex-M55 (slow: QEMU) ──────────────────────────────────────
@pytest.fixture
def m55_server(cortex_m_pte):
    with Served([cortex_m_pte], warm=True) as served:
        served.slot = served.game.slots["cortex-m55"]
        yield served


@pytest.mark.slow
def test_mcu_moves_queue_in_order_one_at_a_time(m55_server):
    slot = m55_server.slot
    slot.warm().result(120)
    device = slot.device
    calls, submitted, ran, lock = [], [], [], threading.Lock()
    real_classify, real_submit = device.classify, slot.submit

    def classify(images):
        with lock:
            calls.append(("start", threading.get_ident()))
        try:
            return real_classify(images)
        finally:
            with lock:
                calls.append(("end", threading.get_ident()))

    def submit(job):
        n = len(submitted)
        submitted.append(n)

        def numbered(d):
            ran.append(n)
            return job(d)
        return real_submit(numbered)
    device.classify, slot.submit = classify, submit
    answers = [None] * 4

    def one(i):
        answers[i] = m55_server.play(tab=f"queue-tab-{i:04d}")
    threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert all(a is not None and a.status_code == 200 for a in answers), [a and a.text for a in answers]
    assert [kind for kind, _ in calls] == ["start", "end"] * 8, "device calls overlapped"
    assert ran == submitted == [0, 1, 2, 3]
    a = answers[0].json()
    assert a["you"]["label"] == "rock" and a["stats"]["instructions"] > 0 and a["stats"]["link_ms"] > 0
    names = [f["name"] for f in a["figures"]]
    assert names[:2] == ["instructions on the Cortex-M55", "serial round trip"]
    assert "instructions, not cycles" in a["figures"][0]["note"]


@pytest.mark.slow
def test_a_killed_qemu_is_restarted_and_the_next_move_succeeds(m55_server):
    first = m55_server.play(tab="kill-tab-0001")
    assert first.status_code == 200, first.text
    qemu = m55_server.slot.device.server.process
    qemu.kill()
    qemu.wait(10)
    after = m55_server.play(tab="kill-tab-0001")
    assert after.status_code == 200, after.text
    a = after.json()
    assert "QEMU exited" in a["notice"] and "started again" in a["notice"]
    assert a["you"]["probabilities"] == first.json()["you"]["probabilities"]
    assert m55_server.slot.device.server.process.pid != qemu.pid
    assert m55_server.play(tab="kill-tab-0001").json()["notice"] is None


@pytest.mark.slow
def test_qemu_dying_during_a_move_fails_that_move_only(m55_server):
    assert m55_server.play(tab="crash-tab-001").status_code == 200
    device = m55_server.slot.device
    real = device.classify

    def dies_first(images):
        device.server.process.kill()
        return real(images)
    device.classify = dies_first
    failed = m55_server.play(tab="crash-tab-001")
    assert failed.status_code == 503 and "started again" in failed.json()["error"], failed.text
    assert "\n" not in failed.json()["error"]
    again = m55_server.play(tab="crash-tab-001")
    assert again.status_code == 200 and again.json()["you"]["label"] == "rock"


# ── a real browser (slow) ─────────────────────────────────────────────────────
@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    try:
        sb.require_browser()
    except sb.BrowserMissing as e:
        pytest.fail(str(e), pytrace=False)
    driver = sb.start_browser(tmp_path_factory.mktemp("chromium-profile"))
    yield driver
    driver.quit()


SENT_PNG = "return window.tinyrpsLastUpload"


def check_preview(browser, seen: dict) -> None:
    """The preview is the 28x28 image the model saw of the drawing sent, shown upscaled with sharp pixels."""
    from tinyrps.network.images import read_image_bytes
    sent = base64.b64decode(browser.execute_script(SENT_PNG).split(",", 1)[1])
    assert Image.open(io.BytesIO(sent)).size == (sb.UPLOAD_SIDE, sb.UPLOAD_SIDE)
    expected = read_image_bytes(sent, "drawing.png").image
    preview = seen["preview"]
    assert (preview["width"], preview["height"]) == (28, 28) and preview["shown"] >= 4 * 28
    assert preview["rendering"] in ("pixelated", "crisp-edges")
    assert np.array_equal(np.array(preview["gray"], np.uint8).reshape(28, 28), expected)


@pytest.mark.slow
def test_a_letter_drawn_in_the_browser_is_played_on_executorch_and_the_emulated_m55(browser, cpu_pte, cortex_m_pte,
                                                                                   tmp_path):
    with sb.ServerProcess("--model", cpu_pte, "--model", cortex_m_pte) as server:
        sb.open_page(browser, server.url)
        sb.draw_on_canvas(browser, "R")
        seen = sb.play(browser)
        assert not seen["error"], seen["error"]
        assert seen["you"].startswith("rock") and " vs " in seen["outcome"], seen
        assert "host latency" in seen["figures"] and seen["history_rows"] == 1
        check_preview(browser, seen)

        sb.choose_program(browser, "cortex-m55")
        browser.find_element("id", "clear").click()
        sb.draw_on_canvas(browser, "R", pointer="mouse")
        seen = sb.play(browser)
        assert not seen["error"], seen["error"]
        assert seen["you"].startswith("rock") and "Cortex-M55" in seen["runs_on"], seen
        assert "instructions on the Cortex-M55" in seen["figures"] and "not cycles" in seen["figures"]
        assert "serial round trip" in seen["figures"] and seen["history_rows"] == 2
        check_preview(browser, seen)
        shot = sb.screenshot(browser, tmp_path / "serve-cortex-m55.png")
        assert Image.open(shot).size[0] >= 900
        print(f"screenshot: {shot}")
        qemus = [pid for pid in children(server.process.pid) if "qemu-system-arm" in command_of(pid)]
        assert qemus, "the Cortex-M55 is not running in QEMU"
    assert server.process.returncode == 130
    assert not [pid for pid in qemus if Path(f"/proc/{pid}").exists()], "Ctrl-C left QEMU running"


@pytest.mark.slow
def test_the_page_works_by_keyboard_at_360_px(browser, cpu_pte):
    with sb.ServerProcess("--model", cpu_pte) as server:
        # a phone's viewport (a desktop window has a minimum width above 360 px)
        browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                {"width": 360, "height": 800, "deviceScaleFactor": 1, "mobile": True})
        try:
            sb.open_page(browser, server.url)
            width = browser.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
            assert width[1] == 360 and width[0] <= 360, f"the page scrolls sideways at 360 px: {width}"
            play_by_keyboard(browser)
        finally:
            browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def play_by_keyboard(browser) -> None:
    """The controls in tab order, and Play pressed with Enter."""
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait
    sb.draw_on_canvas(browser, "P")
    browser.execute_script("document.getElementById('program').focus()")
    focused = [browser.switch_to.active_element.get_attribute("id")]
    for _ in range(3):
        browser.switch_to.active_element.send_keys(Keys.TAB)
        focused.append(browser.switch_to.active_element.get_attribute("id"))
    assert focused == ["program", "opponent", "clear", "play"], focused
    answers = "return document.body.dataset.answers || '0'"
    before = browser.execute_script(answers)
    browser.switch_to.active_element.send_keys(Keys.ENTER)
    WebDriverWait(browser, 60).until(lambda b: b.execute_script(answers) != before)
    assert sb.shown(browser)["you"].startswith("paper")


def choose_file(browser, path: Path, timeout: float = 60.0) -> dict:
    """Choose a file with the page's file input, as "Choose a photo…" does, and wait for the answer."""
    from selenium.webdriver.support.ui import WebDriverWait
    answers = "return document.body.dataset.answers || '0'"
    before = browser.execute_script(answers)
    browser.find_element("id", "file").send_keys(str(path))
    WebDriverWait(browser, timeout).until(lambda b: b.execute_script(answers) != before)
    return sb.shown(browser)


@pytest.mark.slow
def test_a_photo_named_in_any_script_is_played_and_a_failed_move_clears_the_last_result(browser, cpu_pte,
                                                                                         tmp_path):
    stone = tmp_path / "石头 — ✌️.png"
    stone.write_bytes(R_PNG)
    broken = tmp_path / "剪刀.png"
    broken.write_bytes(b"these are words, not pixels")
    with sb.ServerProcess("--model", cpu_pte) as server:
        sb.open_page(browser, server.url)
        seen = choose_file(browser, stone)
        assert not seen["error"], seen["error"]
        assert seen["you"].startswith("rock") and " vs " in seen["outcome"] and seen["figures"], seen
        seen = choose_file(browser, broken)
        assert seen["error"].startswith("剪刀.png is not an image"), seen["error"]
        assert seen["outcome"] == "" and seen["figures"] == "" and seen["you"] == "", seen
        assert browser.execute_script("return document.getElementById('players').hidden") is True
        assert seen["status"] == "That move was not played."


@pytest.mark.slow
def test_a_page_of_another_origin_cannot_play_or_reset_the_score(browser, cpu_pte, tmp_path):
    """Another site's page POSTs text/plain with mode no-cors (no preflight, the answer unread):
    the server must refuse it, since the browser sends the player's own requests alike."""
    import functools
    import http.server
    (tmp_path / "index.html").write_text("<!doctype html><title>another site</title>")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    other = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    tab = "foreign-tab-0001"
    try:
        with sb.ServerProcess("--model", cpu_pte) as server:
            def play():
                request = urllib.request.Request(f"{server.url}api/play?tab={tab}", data=R_PNG, method="POST")
                with urllib.request.urlopen(request, timeout=60) as r:
                    return json.load(r)["round"]
            assert play() == 1
            browser.get(f"http://127.0.0.1:{other.server_address[1]}/")
            sent = browser.execute_async_script("""
                const [base, tab, done] = arguments;
                const post = (path) => fetch(`${base}${path}?tab=${tab}`, {method: "POST", mode: "no-cors",
                    headers: {"Content-Type": "text/plain"}, body: "R"}).then(() => "sent", (e) => String(e));
                Promise.all([post("api/new-game"), post("api/play")]).then(done);
            """, server.url, tab)
            assert sent == ["sent", "sent"], sent
            assert play() == 2, "a page of another origin reset the score"
    finally:
        other.shutdown()
        other.server_close()


@pytest.mark.slow
def test_honest_players_are_answered_beside_slow_abandoning_and_cross_origin_clients(cpu_pte):
    """scripts/load_serve.py at a small scale: every honest move answered, every cross-origin request
    refused and no score changed by one, every slow connection closed by the server. (Its times are a
    benchmark, in docs/benchmarks.md, not asserted here.)"""
    from tinyrps.interfaces.serve.connections import HEAD_TIMEOUT_S
    load = load_script("load_serve")
    r = load.load_test(cpu_pte, seconds=HEAD_TIMEOUT_S + 4, clients=7, misbehaving=4, utilisation=0.25)
    assert r["misbehaving"] == {"slow": 2, "abandoning": 1, "cross-origin": 1}
    assert set(r["answers"]["honest"]) == {"200"} and r["loaded"]["moves"] >= 3, r["answers"]
    assert set(r["answers"]["cross-origin"]) == {"403"} and r["foreign_tab_rounds"] == [1], r
    assert r["answers"]["abandoning"]["sent and left"] >= 3, r["answers"]
    assert r["answers"]["slow"].get("closed", 0) >= 1, r["answers"]
    assert r["slow_held_s"]["max"] <= HEAD_TIMEOUT_S + 2, r["slow_held_s"]
    assert r["server_exit"] == 130
