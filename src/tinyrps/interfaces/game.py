"""The terminal rock-paper-scissors game.

Each round renders an image of your move and of the opponent's move (random, or
adaptive: tinyrps.interfaces.opponents) with the data renderer, classifies both on the chosen
device, and decides the winner by the *predicted* labels: the model is the referee, so
a misread move counts as read.
"""
from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass

import numpy as np

from ..infra import ctrl_c
from .ascii_art import image_to_ascii, side_by_side
from ..network.letters import render
from ..infra.errors import UserError
from ..network.labels import LABELS, softmax
from .opponents import make_opponent

QUIT = {"q", "quit", "exit"}
BEATS = {"rock": "scissors", "paper": "rock", "scissors": "paper"}
PROMPT = "your move [r]ock / [p]aper / [s]cissors, or [q]uit: "


@dataclass
class Round:
    you: str
    you_pred: str
    you_conf: float
    opponent: str
    opp_pred: str
    opp_conf: float
    outcome: str
    latency_ms: float


def parse_move(text: str):
    """'r' / 'Rock' / ' paper ' / 'sc' / 'scissor' -> canonical name; None if not a move.

    Any beginning of a move's name is that move: the three start with different letters."""
    text = text.strip().lower()
    matches = [label for label in LABELS if text and label.startswith(text)]
    return matches[0] if len(matches) == 1 else None


def parse_moves(text: str) -> list:
    moves = [parse_move(m) for m in text.split(",")]
    if not text.strip() or None in moves:
        raise UserError(f"--moves must be a comma-separated list of rock/paper/scissors (or r/p/s), got '{text}'")
    return moves


def outcome(you: str, opponent: str) -> str:
    if you == opponent:
        return "tie"
    return "win" if BEATS[you] == opponent else "lose"


class Game:
    def __init__(self, device, seed=None, opponent: str = "random"):
        self.device = device
        self.rng = np.random.default_rng(seed)
        self.opponent = make_opponent(opponent, self.rng)
        self.score = {"win": 0, "lose": 0, "tie": 0}
        self.last_images = None
        self.last_stats = {}

    def play_round(self, you: str) -> Round:
        opponent = self.opponent.move()
        images = render(np.array([LABELS.index(you), LABELS.index(opponent)]), self.rng)
        start = time.perf_counter()
        logits = self.device.classify(images)
        latency_ms = (time.perf_counter() - start) * 1000 / len(images)
        probs = softmax(logits)
        pred = probs.argmax(1)
        result = Round(you, LABELS[pred[0]], float(probs[0, pred[0]]), opponent, LABELS[pred[1]],
                       float(probs[1, pred[1]]), outcome(LABELS[pred[0]], LABELS[pred[1]]), latency_ms)
        self.score[result.outcome] += 1
        self.opponent.observe(you)
        self.last_images = images
        self.last_stats = self.device.last_stats()
        return result


def describe_stats(stats: dict) -> str:
    parts = []
    if "npu_estimate_ms" in stats:
        estimate = stats["npu_estimate_ms"]
        parts.append(f"Ethos-U estimate (Vela) {estimate:.3f} ms" if estimate is not None
                     else "Ethos-U estimate: not measured (tinyrps measure --model X.pte)")
    if "instructions" in stats:
        parts.append(f"{stats['instructions']:,} instructions on the MCU")
    if "link_ms" in stats:
        parts.append(f"serial round trip {stats['link_ms']:.0f} ms")
    return "; ".join(parts)


def render_round(r: Round, game: Game, number: int) -> str:
    you_art, opp_art = (image_to_ascii(im) for im in game.last_images)
    verdict = {"win": "YOU WIN", "lose": "YOU LOSE", "tie": "TIE"}[r.outcome]
    lines = [f"── round {number} " + "─" * 44,
             side_by_side([you_art, opp_art], [f"you: {r.you}", f"opponent: {r.opponent}"]),
             f"{'model reads: ' + r.you_pred + f' ({r.you_conf:.1%})':<34}model reads: {r.opp_pred} ({r.opp_conf:.1%})",
             f"{r.you_pred} vs {r.opp_pred}: {verdict}    "
             f"inference {r.latency_ms:.2f} ms on {game.device.describe()}"]
    extra = describe_stats(game.last_stats)
    if extra:
        lines.append(extra)
    lines.append(f"score: {score_line(game.score)}")
    return "\n".join(lines)


def print_round(text: str, out) -> None:
    """A rendered round and a blank line, written a line at a time: a round's 2 KB written as one
    string (encoded and buffered in one piece) is a large allocation each round, and the C heap
    then grows by some 40 bytes a round for thousands of rounds; lines are small objects that
    Python's allocator reuses."""
    for line in text.splitlines():
        out.write(line + "\n")
    out.write("\n")
    out.flush()


def score_line(score: dict) -> str:
    return f"you {score['win']} - {score['lose']} opponent ({score['tie']} tie{'s' if score['tie'] != 1 else ''})"


def round_record(r: Round, game: Game) -> dict:
    """The JSON object of one round: the contract's fields plus the device's own figures.
    (Not dataclasses.asdict: each call of it builds a tuple that CPython's tuple free list
    keeps, about 100 bytes a round until that list is full after some 2,000 rounds.)"""
    return {**vars(r), **game.last_stats}


def play_scripted(game: Game, moves: list, as_json: bool, out=None, talk=None, keep: bool = True) -> list:
    """Play the given moves. Rounds go to `out` (JSON Lines with as_json), the final score to
    `talk` (default: `out`). Returns the rounds' records if `keep` (a long game printed as it
    goes keeps none: its memory stays flat however many rounds it plays). Ctrl-C stops the
    game after printing the score so far."""
    out = out or sys.stdout
    talk = talk or out
    records = []
    try:
        for i, move in enumerate(moves, 1):
            r = game.play_round(move)
            record = round_record(r, game)
            if keep:
                records.append(record)
            if as_json:
                print(json.dumps(record), file=out, flush=True)
            else:
                print_round(render_round(r, game, i), out)
    except KeyboardInterrupt:
        end_game(game, talk, interrupted=True)
        raise
    end_game(game, talk)
    return records


def play_interactive(game: Game, as_json: bool = False, stdin=None, out=None, talk=None) -> None:
    """Prompt until quit or end of input; rounds go to `out` (JSON Lines with as_json),
    prompts, messages and the final score to `talk` (default: `out`). An empty line asks
    again. Ctrl-C stops the game after printing the score so far, as in a scripted game."""
    stdin, out = stdin or sys.stdin, out or sys.stdout
    talk = talk or out
    print(f"Rock-paper-scissors against the model on {game.device.describe()}. "
          "Your move is drawn as a letter; the model reads both moves and decides.", file=talk)
    number = 0
    try:
        while True:
            print(PROMPT, end="", file=talk, flush=True)
            line = ctrl_c.read_line(stdin)
            if not line:
                print(file=talk)
                break
            text = line.strip().lower()
            if not text:
                continue
            if text in QUIT:
                break
            move = parse_move(text)
            if move is None:
                print(f"'{line.strip()}' is not a move: type rock, paper or scissors (r/p/s), or q to quit",
                      file=talk, flush=True)
                continue
            number += 1
            r = game.play_round(move)
            if as_json:
                print(json.dumps(round_record(r, game)), file=out, flush=True)
            else:
                print_round(render_round(r, game, number), out)
    except KeyboardInterrupt:
        end_game(game, talk, interrupted=True)
        raise
    end_game(game, talk)


def end_game(game: Game, talk, interrupted: bool = False) -> None:
    if interrupted:
        print(file=talk)     # the terminal's ^C leaves the cursor mid-line
    print(f"final score: {score_line(game.score)}", file=talk, flush=True)
