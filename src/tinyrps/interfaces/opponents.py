"""The game's opponents: how the other player picks its move, before it sees yours.

- `random`: uniform over the three moves (one draw of the game's generator, as the game
  always did, so a seeded game keeps its moves).
- `adaptive`: predicts your next move from your history and plays what beats it. Three
  predictors each give a distribution over your next move: how often you played each
  move (frequency), what you played after your last move (a Markov chain of order one)
  and after your last two (order two). Their counts fade (DECAY a round), so a player who
  changes habits is followed. Each predictor keeps a fading score of how often its most
  likely move was the one you then played; the best-scoring one with something to go on
  decides. The opponent plays the move with the best expected result against that
  distribution, a random one of the best where they tie: against a player it cannot read
  its choice is as good as random, and it gives nothing away by being predictable.

An opponent is told each move you made (`observe`) after the round; `move()` never sees
the move of the round it is playing.
"""
from __future__ import annotations

import numpy as np

from ..infra.errors import UserError
from ..network.labels import LABELS

OPPONENTS = ("random", "adaptive")
# what beats each move, by index into LABELS: paper beats rock, scissors paper, rock scissors
BEATEN_BY = (1, 2, 0)
# How fast the counts and the predictors' scores forget: the weight of a round `k` rounds ago is DECAY**k.
DECAY = 0.9
ORDERS = (0, 1, 2)          # frequency, then the Markov chains over the last one and two moves
TIE = 1e-9                  # expected results this close are equal


def check_opponent(name: str) -> str:
    if name not in OPPONENTS:
        raise UserError(f"unknown opponent '{name}'; valid: {', '.join(OPPONENTS)}")
    return name


def make_opponent(name: str, rng: np.random.Generator):
    return {"random": RandomOpponent, "adaptive": AdaptiveOpponent}[check_opponent(name)](rng)


class RandomOpponent:
    name = "random"

    def __init__(self, rng: np.random.Generator):
        self.rng = rng

    def move(self) -> str:
        return LABELS[self.rng.integers(len(LABELS))]

    def observe(self, player_move: str) -> None:
        pass


class AdaptiveOpponent:
    name = "adaptive"

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.history: list = []                         # the player's moves, as indices
        self.counts = {k: {} for k in ORDERS}           # order -> context (tuple) -> faded counts [3]
        self.skill = np.zeros(len(ORDERS))              # faded hits of each predictor's top guess

    def predictions(self) -> dict:
        """order -> the distribution it predicts for the player's next move (orders with no data left out)."""
        out = {}
        for k in ORDERS:
            if len(self.history) < k:
                continue
            seen = self.counts[k].get(tuple(self.history[len(self.history) - k:]))
            if seen is not None and seen.sum() > 0:
                out[k] = (seen + 0.1) / (seen.sum() + 0.3)   # a little smoothing: never certain
        return out

    def predict(self):
        """The distribution over the player's next move of the best-scoring predictor, or None."""
        found = self.predictions()
        if not found:
            return None
        best = max(found, key=lambda k: (self.skill[ORDERS.index(k)], k))   # ties: the longer memory
        return found[best]

    def move(self) -> str:
        p = self.predict()
        if p is None:
            return LABELS[self.rng.integers(len(LABELS))]
        # expected result of playing m: P(m beats the player's move) - P(the player's move beats m)
        expected = np.array([p[BEATEN_BY.index(m)] - p[BEATEN_BY[m]] for m in range(len(LABELS))])
        best = np.flatnonzero(expected >= expected.max() - TIE)
        return LABELS[best[self.rng.integers(len(best))]]

    def observe(self, player_move: str) -> None:
        move = LABELS.index(player_move)
        found = self.predictions()
        self.skill *= DECAY
        for k, p in found.items():
            self.skill[ORDERS.index(k)] += 1.0 if int(np.argmax(p)) == move else 0.0
        for k in ORDERS:
            for table in self.counts[k].values():
                table *= DECAY
            if len(self.history) >= k:
                context = tuple(self.history[len(self.history) - k:])
                self.counts[k].setdefault(context, np.zeros(len(LABELS)))[move] += 1.0
        self.history.append(move)
        del self.history[:-max(ORDERS)]      # only the last moves are ever looked at
