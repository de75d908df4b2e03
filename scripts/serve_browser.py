"""`tinyrps serve` used as a person uses it: letters drawn with a pen, in a real browser.

Shared by tests/test_serve.py (the browser test), scripts/bench_serve.py (the drawings it
sends and the server it starts) and, run as a script, the screenshot in the documentation:

    python scripts/serve_browser.py --run RUN [--out docs/figures/serve.png]

The browser is Debian's chromium driven by its chromedriver through Selenium; nothing is
downloaded. Everything here talks to 127.0.0.1 only.
"""
from __future__ import annotations

import argparse
import io
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BROWSER_INSTALL = "apt-get update && apt-get install --no-install-recommends chromium chromium-driver"
# Without the background-networking flags Chromium keeps trying hosts this machine cannot reach.
CHROMIUM_FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--hide-scrollbars")
READY_TIMEOUT_S = 60.0

# Each letter as a pen draws it: strokes of points in the unit square (x right, y down).
LETTER_STROKES = {
    "R": [[(0.32, 0.85), (0.32, 0.15), (0.55, 0.15), (0.65, 0.21), (0.68, 0.32), (0.65, 0.43), (0.55, 0.49),
           (0.32, 0.49)],
          [(0.47, 0.49), (0.70, 0.85)]],
    "P": [[(0.34, 0.85), (0.34, 0.15), (0.58, 0.15), (0.68, 0.22), (0.70, 0.33), (0.68, 0.44), (0.58, 0.51),
           (0.34, 0.51)]],
    "S": [[(0.68, 0.24), (0.60, 0.16), (0.45, 0.14), (0.33, 0.20), (0.31, 0.32), (0.40, 0.43), (0.58, 0.52),
           (0.69, 0.63), (0.69, 0.76), (0.58, 0.85), (0.42, 0.86), (0.30, 0.78)]],
}
MOVE_OF_LETTER = {"R": "rock", "P": "paper", "S": "scissors"}


def densified(stroke, step: float = 0.02) -> list:
    """The stroke's points with more in between, at most `step` apart (a pen reports many)."""
    out = [stroke[0]]
    for (x0, y0), (x1, y1) in zip(stroke, stroke[1:]):
        n = max(1, int(max(abs(x1 - x0), abs(y1 - y0)) / step))
        out += [(x0 + (x1 - x0) * i / n, y0 + (y1 - y0) * i / n) for i in range(1, n + 1)]
    return out


# The page's drawing pad and the size it sends its drawing at (src/tinyrps/web/app.js).
PAD_SIDE = 256
UPLOAD_SIDE = 128


def draw_letter_png(letter: str, side: int = PAD_SIDE, sent: int = UPLOAD_SIDE) -> bytes:
    """The letter as the page sends it: drawn with a black round pen of side/20 on a white pad of
    `side` pixels, then scaled to `sent` pixels, as a PNG."""
    from PIL import Image, ImageDraw
    img = Image.new("RGB", (side, side), "white")
    draw = ImageDraw.Draw(img)
    width = side / 20
    for stroke in LETTER_STROKES[letter]:
        points = [(x * side, y * side) for x, y in densified(stroke)]
        draw.line(points, fill="black", width=round(width), joint="curve")
        for x, y in (points[0], points[-1]):
            draw.ellipse((x - width / 2, y - width / 2, x + width / 2, y + width / 2), fill="black")
    if sent != side:
        img = img.resize((sent, sent), Image.Resampling.BILINEAR)
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


# ── the server ───────────────────────────────────────────────────────────────
class ServerProcess:
    """`tinyrps serve ARGS --http-port 0` in a child process; `url` once it said it is ready,
    `ready_s` how long that took from the start of the process."""

    def __init__(self, *args, python: str = sys.executable, env: dict = None):
        self.args = [python, "-m", "tinyrps", "serve", *map(str, args), "--http-port", "0"]
        self.env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        self.process = None
        self.url = None
        self.ready_s = None
        self.stderr_lines: list = []

    def start(self) -> "ServerProcess":
        started = time.perf_counter()
        self.process = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        env=self.env)
        threading.Thread(target=self._collect_stderr, daemon=True).start()
        found = {}

        def read_line():
            line = self.process.stdout.readline()
            found["line"] = line
        reader = threading.Thread(target=read_line, daemon=True)
        reader.start()
        reader.join(READY_TIMEOUT_S)
        line = found.get("line", "")
        if "http://" not in line:
            self.stop()
            raise RuntimeError(f"tinyrps serve did not become ready within {READY_TIMEOUT_S:.0f} s: "
                               f"{line.strip()} {' / '.join(self.stderr_lines[-5:])}")
        self.ready_s = time.perf_counter() - started
        self.url = line.split("http://", 1)[1].split()[0]
        self.url = "http://" + self.url
        return self

    def _collect_stderr(self) -> None:
        for line in self.process.stderr:
            self.stderr_lines.append(line.rstrip("\n"))

    def stop(self, timeout: float = 30.0) -> int:
        """Ctrl-C, as in a terminal; the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout)
        return self.process.returncode

    def __enter__(self) -> "ServerProcess":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


# ── the browser ──────────────────────────────────────────────────────────────
class BrowserMissing(RuntimeError):
    pass


def require_browser() -> tuple:
    """(chromium, chromedriver) paths, or BrowserMissing with the command that installs them."""
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium or not driver:
        missing = " and ".join(n for n, p in (("chromium", chromium), ("chromedriver", driver)) if not p)
        raise BrowserMissing(f"{missing} not installed; the browser test needs Debian's: {BROWSER_INSTALL}")
    return chromium, driver


def start_browser(profile: Path, width: int = 1000, height: int = 1400):
    """Headless chromium with a fresh profile, driven by Selenium."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    chromium, driver = require_browser()
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument(f"--window-size={width},{height}")
    return webdriver.Chrome(service=Service(executable_path=driver), options=options)


def open_page(browser, url: str, timeout: float = 30.0) -> None:
    from selenium.webdriver.support.ui import WebDriverWait
    browser.get(url)
    WebDriverWait(browser, timeout).until(lambda b: b.execute_script("return document.body.dataset.ready === 'true'"))


def draw_on_canvas(browser, letter: str, pointer: str = "pen") -> None:
    """Draw the letter on the page's canvas with pointer actions (press, moves, release per stroke)."""
    from selenium.webdriver.common.actions import interaction
    from selenium.webdriver.common.actions.action_builder import ActionBuilder
    from selenium.webdriver.common.actions.pointer_input import PointerInput
    canvas = browser.find_element("id", "canvas")
    width, height = canvas.size["width"], canvas.size["height"]
    kind = {"pen": interaction.POINTER_PEN, "mouse": interaction.POINTER_MOUSE}[pointer]
    actions = ActionBuilder(browser, mouse=PointerInput(kind, pointer), duration=10)
    for stroke in LETTER_STROKES[letter]:
        points = densified(stroke, 0.03)
        x, y = points[0]
        actions.pointer_action.move_to(canvas, round((x - 0.5) * width), round((y - 0.5) * height))
        actions.pointer_action.pointer_down()
        for x, y in points[1:]:
            actions.pointer_action.move_to(canvas, round((x - 0.5) * width), round((y - 0.5) * height))
        actions.pointer_action.pointer_up()
    actions.perform()


def choose_program(browser, program_id: str) -> None:
    from selenium.webdriver.support.ui import Select
    Select(browser.find_element("id", "program")).select_by_value(program_id)


def play(browser, timeout: float = 120.0) -> dict:
    """Press Play and wait for the answer; what the page then shows."""
    from selenium.webdriver.support.ui import WebDriverWait
    answers = "return document.body.dataset.answers || '0'"
    before = browser.execute_script(answers)
    browser.find_element("id", "play").click()
    WebDriverWait(browser, timeout).until(lambda b: b.execute_script(answers) != before)
    return shown(browser)


# The preview as the page shows it: its natural size and its pixels' gray levels (row by row).
PREVIEW_PIXELS = """
const img = document.getElementById('you-image');
if (!img.complete || !img.naturalWidth) return null;
const c = document.createElement('canvas');
c.width = img.naturalWidth; c.height = img.naturalHeight;
const g = c.getContext('2d');
g.drawImage(img, 0, 0);
const d = g.getImageData(0, 0, c.width, c.height).data;
const gray = [];
for (let i = 0; i < d.length; i += 4) gray.push(d[i]);
return {width: c.width, height: c.height, shown: img.getBoundingClientRect().width, gray: gray,
        rendering: getComputedStyle(img).imageRendering};
"""


def shown(browser) -> dict:
    def text(i):
        return browser.find_element("id", i).text
    return {"error": text("error"), "outcome": text("outcome"), "you": text("you-label"),
            "opponent": text("opponent-label"), "score": text("score"), "runs_on": text("runs-on"),
            "figures": text("figures"), "notice": text("notice"), "status": text("status"),
            "history_rows": len(browser.find_elements("css selector", "#history tbody tr")),
            "preview": browser.execute_script(PREVIEW_PIXELS)}


def screenshot(browser, out: Path) -> Path:
    """The whole page as a PNG, beyond the window's height."""
    import base64
    metrics = browser.execute_cdp_cmd("Page.getLayoutMetrics", {})
    size = metrics["cssContentSize"]
    shot = browser.execute_cdp_cmd("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}})
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(base64.b64decode(shot["data"]))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="the page of `tinyrps serve` after a few moves, as a PNG")
    parser.add_argument("--run", required=True, type=Path, help="a run with int8-xnnpack and cortex-m55 exported")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "figures" / "serve.png")
    parser.add_argument("--width", type=int, default=1000)
    a = parser.parse_args(argv)
    with ServerProcess("--model", a.run / "export" / "int8-xnnpack.pte",
                       "--model", a.run / "export" / "cortex-m55.pte") as server, \
            tempfile.TemporaryDirectory(prefix="tinyrps-chromium.") as profile:
        browser = start_browser(Path(profile), width=a.width)
        try:
            open_page(browser, server.url)
            for letter, program in (("P", "int8-xnnpack"), ("S", "int8-xnnpack"), ("R", "cortex-m55")):
                choose_program(browser, program)
                browser.find_element("id", "clear").click()
                draw_on_canvas(browser, letter)
                seen = play(browser)
                print(f"{letter} on {program}: {seen['you']} / {seen['outcome']}", file=sys.stderr)
            print(screenshot(browser, a.out))
        finally:
            browser.quit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
