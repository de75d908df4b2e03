"""The game on the command line: play in the terminal, serve in a browser."""
from __future__ import annotations

import sys
from pathlib import Path

from ...infra.errors import UserError
from .options import (Command, add_board, add_device, check_model, check_run, chosen_device, device_options,
                      seed_number, whole_number)


def play_arguments(s) -> None:
    from ..opponents import OPPONENTS
    s.add_argument("--model", required=True, type=Path, metavar="X.pte", help="a program made by `tinyrps export`")
    add_device(s, "the program")
    add_board(s)
    s.add_argument("--moves", metavar="M,M,...", help="scripted game: comma-separated moves, e.g. rock,paper,s "
                   "(default: ask for each move)")
    s.add_argument("--seed", type=seed_number, metavar="S",
                   help="seed of the opponent's moves and the drawings (default: different every game)")
    s.add_argument("--opponent", choices=OPPONENTS, default="random", help="how the opponent picks its move: at "
                   "random, or adaptive (predicts your next move from your history and plays what beats it)")
    s.add_argument("--json", action="store_true", help="one JSON object per round on stdout (JSON Lines)")


def cmd_play(a):
    check_model(a.model)
    from ..game import parse_moves
    moves = parse_moves(a.moves) if a.moves is not None else None
    from ...devices import open_device, require_board_device
    device_name = chosen_device(a)
    require_board_device(device_name, a.board)
    options = device_options(a, device_name).get(device_name, {})
    from ..game import Game, play_interactive, play_scripted
    # stdout carries only the rounds (JSON Lines with --json); prompts, messages and the score go to stderr
    with open_device(device_name, a.model, board=a.board, **options) as device:
        game = Game(device, seed=a.seed, opponent=a.opponent)
        if moves:
            play_scripted(game, moves, a.json, talk=sys.stderr, keep=False)
        else:
            play_interactive(game, a.json, talk=sys.stderr)


def serve_arguments(s) -> None:
    s.add_argument("--run", type=Path, action="append", metavar="RUN", help="serve every exported program of this "
                   "run; repeatable (required, unless --model)")
    s.add_argument("--model", type=Path, action="append", metavar="X.pte",
                   help="serve this program; repeatable (default: none, only the runs' programs)")
    add_device(s, "the programs of its family")
    add_board(s)
    s.add_argument("--host", default="127.0.0.1", help="address to listen on; another than this machine's "
                   "loopback lets other machines play")
    s.add_argument("--http-port", type=whole_number(0, 65535), default=8000, metavar="N",
                   help="TCP port to listen on; 0 takes any free port")
    s.add_argument("--open", action="store_true", help="open the page in the web browser")


def cmd_serve(a):
    if not a.run and not a.model:
        raise UserError("serve needs --run RUN (every program of the run) or --model X.pte; both repeatable")
    runs = [check_run(run) for run in a.run or ()]
    models = [check_model(model) for model in a.model or ()]
    if a.device == "eager":
        raise UserError("--device eager runs a checkpoint; serve runs exported programs: choose another device")
    from ..serve import serve
    serve(runs, models, device=a.device, board=a.board, port=a.port, host=a.host, http_port=a.http_port,
          open_browser=a.open)


COMMANDS = (
    Command("play", "play rock-paper-scissors; the model reads both moves", play_arguments, cmd_play),
    Command("serve", "play in a web browser: draw your move, see what the model sees on each device",
            serve_arguments, cmd_serve),
)
