#!/usr/bin/env python3
"""Does the tuner's short training rank candidates as a full training would? A check of one tune.

The tuner scores each candidate by its int8 accuracy on the validation split after
--candidate-epochs of training (3 by default). This script takes a sample of a finished tune's
candidates, spread evenly over the ranks of that score, trains each again as the pick is trained
(--epochs, 10 by default, with each of --seeds), exports it for the tune's NPU target and reads the
benchmark split on the NPU reference (the TOSA graph of the int8 program). It then gives the rank
correlation (Spearman's rho, ties ranked by their mean) between the candidates' scores and their
mean full-training accuracy, and Kendall's tau beside it.

    PYTHONPATH=src .venv/bin/python scripts/tune_ranking.py --tune TUNE [--sample 6] [--epochs 10] [--seeds 0,1,2]

Candidates are trained as the tune trained them (its teacher, if it distilled). Every
(candidate, seed) result is kept in OUT/ranking.json (OUT: --out, by default the tune's folder)
as soon as it is measured, written whole, so a stopped check resumes where it stopped; runs go to
OUT/ranking/ARCH/seedS.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tinyrps.infra.artifacts.files import atomic_write_json
from tinyrps.infra.library_noise import quiet_libraries
from tinyrps.infra.stats import format_accuracy

RANKING_JSON = "ranking.json"


def evenly_spread(candidates: list, k: int) -> list:
    """k distinct architectures at evenly spaced ranks of the candidates' validation score
    (best, worst and between); all of them when there are no more than k."""
    unique = {}
    for c in sorted(candidates, key=lambda c: (-c["val_accuracy"], c["arch"])):
        unique.setdefault(c["arch"], c)
    ordered = list(unique.values())
    if len(ordered) <= k:
        return ordered
    picks = sorted({round(i * (len(ordered) - 1) / (k - 1)) for i in range(k)})
    return [ordered[i] for i in picks]


def ranks(values: list) -> list:
    """1-based ranks, ties given the mean of the ranks they span."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for m in range(i, j + 1):
            out[order[m]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(x: list, y: list) -> float:
    """Pearson's correlation of the ranks."""
    rx, ry = ranks(x), ranks(y)
    n = len(x)
    mx, my = sum(rx) / n, sum(ry) / n
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    vx = sum((a - mx) ** 2 for a in rx) ** 0.5
    vy = sum((b - my) ** 2 for b in ry) ** 0.5
    return cov / (vx * vy) if vx and vy else float("nan")


def kendall(x: list, y: list) -> float:
    """Kendall's tau-b."""
    concordant = discordant = ties_x = ties_y = 0
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                ties_x += 1
            elif dy == 0:
                ties_y += 1
            elif (dx > 0) == (dy > 0):
                concordant += 1
            else:
                discordant += 1
    denominator = ((concordant + discordant + ties_x) * (concordant + discordant + ties_y)) ** 0.5
    return (concordant - discordant) / denominator if denominator else float("nan")


def measure_one(arch: str, seed: int, args, study: dict, run_dir: Path) -> dict:
    from tinyrps.export import export_target
    from tinyrps.train import train
    from tinyrps.tune.candidates import npu_counts
    from tinyrps.tune.settings import TuneSettings
    settings = TuneSettings(data=args.data, out=run_dir, target=study["target"], teacher=study.get("teacher"),
                            distill_alpha=study.get("distill_alpha"),
                            distill_temperature=study.get("distill_temperature"))
    train(settings.train_config(arch, args.epochs, seed), run_dir, quiet=True, test_split=False)
    counts = npu_counts(export_target(run_dir, settings.target), args.data, args.split)
    return {"arch": arch, "seed": seed, "epochs": args.epochs, "split": args.split, **counts}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tune", type=Path, required=True, help="a finished tune's output folder (tune.json)")
    parser.add_argument("--data", type=Path, help="the data folder (default: the one the tune searched on)")
    parser.add_argument("--sample", type=int, default=6, help="candidates to train again (default 6)")
    parser.add_argument("--epochs", type=int, default=10, help="epochs of each training (default 10)")
    parser.add_argument("--seeds", default="0,1,2", help="training seeds (default 0,1,2)")
    parser.add_argument("--split", default="benchmark", help="the split read on the NPU reference")
    parser.add_argument("--out", type=Path, help="where ranking.json and the runs go (default: the tune's folder)")
    args = parser.parse_args(argv)
    quiet_libraries()        # the libraries' known chatter, as the command line silences it
    tune_json = args.tune / "tune.json"
    if not tune_json.is_file():
        print(f"tune_ranking: {tune_json} is missing: run `tinyrps tune --out {args.tune}` first", file=sys.stderr)
        return 2
    tuned = json.loads(tune_json.read_text())
    study = tuned["study"]
    target = study["target"]
    args.data = args.data or Path(study["data"])
    seeds = [int(s) for s in args.seeds.split(",")]
    sample = evenly_spread([c for c in tuned["candidates"] if c.get("val_accuracy") is not None], args.sample)
    out = args.out or args.tune
    out.mkdir(parents=True, exist_ok=True)
    store = out / RANKING_JSON
    results = json.loads(store.read_text())["results"] if store.is_file() else []
    done = {(r["arch"], r["seed"], r["epochs"], r["split"]) for r in results}
    for c in sample:
        for seed in seeds:
            if (c["arch"], seed, args.epochs, args.split) in done:
                continue
            print(f"{c['arch']} seed {seed}: training {args.epochs} epochs", file=sys.stderr, flush=True)
            results.append(measure_one(c["arch"], seed, args, study, out / "ranking" / c["arch"] / f"seed{seed}"))
            atomic_write_json(store, {"target": target, "results": results})
    rows = []
    for c in sample:
        mine = [r for r in results if r["arch"] == c["arch"] and r["seed"] in seeds and r["epochs"] == args.epochs
                and r["split"] == args.split]
        rows.append((c, mine, sum(r["correct"] for r in mine), sum(r["images"] for r in mine)))
    score, full = [c["val_accuracy"] for c, *_ in rows], [correct / images for *_, correct, images in rows]
    rho, tau = spearman(score, full), kendall(score, full)
    print(f"| candidate | {study['candidate_epochs']}-epoch score (val) | "
          + " | ".join(f"seed {s}, {args.epochs} epochs ({args.split})" for s in seeds) + " | all seeds |")
    print("|---|---:|" + "---:|" * len(seeds) + "---:|")
    for c, mine, correct, images in rows:
        by_seed = {r["seed"]: r for r in mine}
        cells = [format_accuracy(by_seed[s]["correct"], by_seed[s]["images"]) for s in seeds]
        total = format_accuracy(correct, images)
        print(f"| `{c['arch']}` | {c['val_accuracy'] * 100:.2f} % | " + " | ".join(cells) + f" | {total} |")
    print(f"\nSpearman's rho {rho:.2f}, Kendall's tau {tau:.2f} over {len(rows)} candidates")
    atomic_write_json(store, {"target": target, "results": results, "spearman": rho, "kendall": tau,
                              "sample": [c["arch"] for c in sample]})
    return 0


if __name__ == "__main__":
    sys.exit(main())
