"""How sure an accuracy is: the Wilson score interval of k correct out of n, and the one way
every table, line and report writes an accuracy (its percentage, its count, its interval).

With 600 test images one image is 0.17 points and the standard error near 99.5 % about
0.29 points, so a bare percentage claims more than the count supports. The Wilson interval
is the set of true rates p for which the observed rate k/n lies within z standard errors
of p, the standard error taken at p itself, sqrt(p (1 - p) / n). Solving
(k/n - p)^2 = z^2 p (1 - p) / n for p gives

    centre = (k/n + z^2 / (2n)) / (1 + z^2 / n)
    half   = z / (1 + z^2 / n) * sqrt(k/n (1 - k/n) / n + z^2 / (4 n^2))

and the interval [centre - half, centre + half]. Unlike k/n +- z sqrt(k/n (1 - k/n) / n) it
stays inside [0, 1] and does not shrink to a point at 0/n or n/n (598/600 and 600/600 are
where this project's figures live). No numpy or torch: the command line's tables import it.
"""
from __future__ import annotations

import math

# The two-sided 95 % quantile of the standard normal distribution.
Z95 = 1.959964


def check_counts(k, n) -> None:
    """k correct of n must be whole numbers with 0 <= k <= n and n >= 1."""
    for name, value in (("k", k), ("n", n)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"{name} must be a whole number, got {value!r}")
    if n < 1:
        raise ValueError(f"an accuracy needs at least one image, got n = {n}")
    if not 0 <= k <= n:
        raise ValueError(f"k correct of n needs 0 <= k <= n, got k = {k}, n = {n}")


def wilson(k: int, n: int, z: float = Z95) -> tuple:
    """(low, high): the Wilson score interval of the rate behind k successes in n trials."""
    check_counts(k, n)
    p = k / n
    z2 = z * z
    denominator = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n))
    # at k = 0 and k = n one end is exactly 0 or 1; the float sum would leave an ulp of noise there
    low = 0.0 if k == 0 else max(0.0, centre - half)
    high = 1.0 if k == n else min(1.0, centre + half)
    return low, high


def count_of(accuracy: float, n: int) -> int:
    """The number correct behind an accuracy computed as k / n (JSON written before counts were
    stored beside accuracies): k / n as a double is within an ulp of k / n, so n times it rounds
    back to k for any image count this project reaches."""
    return int(round(accuracy * n))


def format_accuracy(k: int, n: int, cell: bool = False) -> str:
    """"99.67 % (598/600, 95 % CI 98.8–99.9 %)": the form every place shows an accuracy in. As a cell
    of a table on screen (`cell`) the three parts are three lines, "99.67 %", "598/600" and
    "98.8–99.9 %", so that a table of several columns still fits 80 columns."""
    if n == 0:
        return "no images"
    low, high = wilson(k, n)
    share, count, interval = f"{100 * k / n:.2f} %", f"{k:,}/{n:,}", f"{100 * low:.1f}–{100 * high:.1f} %"
    return f"{share}\n{count}\n{interval}" if cell else f"{share} ({count}, 95 % CI {interval})"


def entry_accuracy(entry: dict, images=None, key: str = "accuracy", prefix: str = "", cell: bool = False) -> str:
    """An accuracy of a JSON result as text: from its stored counts (`{prefix}correct` and
    `{prefix}images`), else from the accuracy and the image count the result records elsewhere
    (`images`; results written before the counts were stored), else the bare percentage."""
    value = entry.get(key)
    if value is None:
        return ""
    correct, total = entry.get(f"{prefix}correct"), entry.get(f"{prefix}images", images)
    if total and correct is None:
        correct = count_of(value, total)
    if not total:
        return f"{100 * value:.2f} %"
    return format_accuracy(int(correct), int(total), cell)
