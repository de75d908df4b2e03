"""The pick of the front and the finalists.

The pick is the fastest front candidate whose validation accuracy reaches --pick-accuracy (none: the
fastest within ACCURACY_MARGIN of the most accurate), then the smallest program: a bar, not a ranking,
because the short training favours large networks. The finalists are the pick and the faster front
candidates with the best validation accuracy, while their trainings fit the budget; the final pick is
the fastest finalist whose selection-split accuracy reaches SELECT_ACCURACY.
"""
from __future__ import annotations

import statistics
from typing import Optional

from .budget import own_costs, own_retraining, retraining_seconds, training_seconds
from .settings import ACCURACY_MARGIN, PICK_ACCURACY, SELECT_ACCURACY, TuneSettings


def pick_best(pareto: list, bar: float = PICK_ACCURACY) -> Optional[dict]:
    """The fastest front candidate whose validation accuracy reaches `bar`, then the smallest program;
    when none reaches it, the fastest of those within ACCURACY_MARGIN of the most accurate one."""
    if not pareto:
        return None
    top = max(c["val_accuracy"] for c in pareto)
    bar = min(bar, top - ACCURACY_MARGIN)
    close = [c for c in pareto if c["val_accuracy"] >= bar - 1e-12]
    return min(close, key=lambda c: (c["npu_ms"], c["program_bytes"], -c["val_accuracy"]))


def pick_within(pareto: list, settings: TuneSettings, left: Optional[float]) -> Optional[dict]:
    """The pick when `left` seconds of the budget remain (None: no limit): the pick of the whole front
    (pick_best) when its own retraining fits; else the pick among the candidates whose retraining fits
    and whose validation accuracy is within ACCURACY_MARGIN of that pick's; when none is, the front's
    pick all the same (the retraining then passes the budget: accuracy is not traded for time beyond
    the margin)."""
    best = pick_best(pareto, settings.pick_accuracy)
    if best is None or left is None or not settings.retrain or "cost" not in best \
            or own_retraining(best, settings) <= left:
        return best
    close = [c for c in pareto if "cost" in c and own_retraining(c, settings) <= left
             and c["val_accuracy"] >= best["val_accuracy"] - ACCURACY_MARGIN - 1e-12]
    return pick_best(close, settings.pick_accuracy) if close else best


def finalists_of(pareto: list, best: dict, settings: TuneSettings, left: Optional[float]) -> list:
    """The pick, then, up to --finalists in all, the front candidates faster than it, the most accurate
    (then the fastest) first, while their own trainings fit what `left` seconds (None: no limit) leave
    beside the pick's: a poorer candidate is not taken instead of one that does not fit (measured: such
    a second finalist, 855 of 900 after the short training, read 2,967 of the selection split)."""
    chosen = [best]
    room = None if left is None or "cost" not in best else left - own_retraining(best, settings)
    faster = sorted((c for c in pareto if c["npu_ms"] < best["npu_ms"] and "cost" in c),
                    key=lambda c: (-c["val_accuracy"], c["npu_ms"]))
    for candidate in faster:
        if len(chosen) >= settings.finalists:
            break
        cost = training_seconds(**own_costs(candidate, settings), settings=settings)
        if room is not None:
            if cost > room:
                break
            room -= cost
        chosen.append(candidate)
    return chosen


def choose_finalist(finalists: list, bar: float = SELECT_ACCURACY) -> dict:
    """The fastest finalist whose selection accuracy reaches `bar`, then the smallest program; when none
    does, the most accurate, then the fastest."""
    reaching = [f for f in finalists if f["select_accuracy"] >= bar - 1e-12]
    if reaching:
        return min(reaching, key=lambda f: (f["npu_ms"], f["program_bytes"]))
    return max(finalists, key=lambda f: (f["select_correct"], -f["npu_ms"]))


def retraining_estimate(costs: list, settings: TuneSettings, front: Optional[list] = None) -> float:
    """Seconds the final stage is expected to be charged, the room the search leaves for it. With a
    measured pick on the current `front`: what that front's final stage would train, each at its own
    cost (final_stage_seconds). Without one: the final stage's trainings (final_trainings) at the
    candidates' median cost per epoch and outside training. The first seed's Cortex-M55 export and
    count is in either: an overestimate of a few seconds. Nothing measured yet: 0, and the first
    candidate runs. Measured: the median of every candidate, the dear networks of the random start
    among them, reserved 287 s for a final stage that took 196 s; the median of the candidates faster
    than the pick left no room for the most accurate of them, whose training was dearer, and a poorer
    one became the second finalist. The search caps the room at RESERVE_SHARE of the budget, so that a
    dear candidate that is the pick for a while leaves the search room all the same; the pick is then
    made among the candidates whose own retraining fits what the search left, as long as that costs no
    accuracy beyond the margin (pick_within)."""
    if not settings.retrain or not costs:
        return 0.0
    pick = pick_best(front, settings.pick_accuracy) if front else None
    if pick is None or "cost" not in pick:
        return retraining_seconds(statistics.median(c["epoch"] for c in costs),
                                  statistics.median(c["rest"] for c in costs), settings)
    return final_stage_seconds(front, pick, settings)


def final_stage_seconds(front: list, pick: dict, settings: TuneSettings) -> float:
    """The pick's seeds and the other finalists (finalists_of, no limit) of `front`, each at its own cost."""
    others = finalists_of(front, pick, settings, None)[1:]
    return own_retraining(pick, settings) + sum(training_seconds(**own_costs(c, settings), settings=settings)
                                                for c in others)
