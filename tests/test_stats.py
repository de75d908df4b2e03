"""The Wilson score interval and the one form every place writes an accuracy in."""
import subprocess
import sys

import pytest

from tinyrps.infra.stats import Z95, count_of, entry_accuracy, format_accuracy, wilson

# Worked out apart from tinyrps.infra.stats: the roots in p of (1 + z^2/n) p^2 - (2 k/n + z^2/n) p + (k/n)^2 = 0,
# i.e. (k/n - p)^2 = z^2 p (1 - p) / n, solved with 40-digit arithmetic (mpmath), z = 1.959964.
REFERENCE = {
    (597, 600): (0.985403793542766, 0.998298122354946),
    (598, 600): (0.987928640239252, 0.999085403321415),
    (600, 600): (0.993638298886577, 1.0),
    (0, 600): (0.0, 0.00636170111342282),
    (0, 1): (0.0, 0.793450688208197),
    (1, 1): (0.206549311791803, 1.0),
    (3, 5): (0.230724279409119, 0.882379226859003),
    (1, 10): (0.017876212896074, 0.404150029524772),
    (2990, 3000): (0.993874643999242, 0.99818836624692),
}


@pytest.mark.parametrize("k, n", REFERENCE)
def test_the_interval_matches_values_worked_out_independently(k, n):
    low, high = wilson(k, n)
    assert low == pytest.approx(REFERENCE[k, n][0], abs=1e-12)
    assert high == pytest.approx(REFERENCE[k, n][1], abs=1e-12)


def test_the_ends_at_none_and_all_correct_are_exact():
    # closed forms at the ends: 0/n gives [0, z^2 / (n + z^2)], n/n gives [n / (n + z^2), 1]
    z2 = Z95 ** 2
    assert wilson(0, 600) == (0.0, pytest.approx(z2 / (600 + z2), abs=1e-15))
    assert wilson(600, 600) == (pytest.approx(600 / (600 + z2), abs=1e-15), 1.0)
    assert wilson(0, 600)[0] == 0.0 and wilson(600, 600)[1] == 1.0     # exactly, not an ulp off


def test_the_interval_holds_the_observed_rate_and_narrows_with_more_images():
    for n in (1, 2, 7, 600, 3000):
        for k in sorted({0, 1, n // 2, n - 1, n}):
            low, high = wilson(k, n)
            assert 0.0 <= low <= k / n <= high <= 1.0
    widths = [high - low for low, high in (wilson(n * 995 // 1000, n) for n in (200, 600, 3000))]
    assert widths[0] > widths[1] > widths[2]


@pytest.mark.parametrize("k, n, words", [(0, 0, "at least one image"), (1, 0, "at least one image"),
                                         (-1, 10, "0 <= k <= n"), (11, 10, "0 <= k <= n"),
                                         (0.5, 10, "whole number"), (5, 10.0, "whole number"),
                                         (True, 10, "whole number")])
def test_bad_counts_are_refused(k, n, words):
    with pytest.raises(ValueError, match=words):
        wilson(k, n)


def test_the_form_of_an_accuracy():
    assert format_accuracy(598, 600) == "99.67 % (598/600, 95 % CI 98.8–99.9 %)"
    assert format_accuracy(597, 600) == "99.50 % (597/600, 95 % CI 98.5–99.8 %)"
    assert format_accuracy(600, 600) == "100.00 % (600/600, 95 % CI 99.4–100.0 %)"
    assert format_accuracy(2990, 3000) == "99.67 % (2,990/3,000, 95 % CI 99.4–99.8 %)"
    assert format_accuracy(0, 0) == "no images"


def test_a_result_without_counts_is_shown_from_its_image_count():
    """JSON written before the counts were stored beside accuracies still gets its interval."""
    assert count_of(597 / 600, 600) == 597 and count_of(float(2990 / 3000), 3000) == 2990
    assert entry_accuracy({"accuracy": 598 / 600}, images=600) == format_accuracy(598, 600)
    assert entry_accuracy({"accuracy": 0.5, "correct": 5, "images": 10}, images=600) == format_accuracy(5, 10)
    assert entry_accuracy({"val_accuracy": 0.9, "val_correct": 9, "val_images": 10}, key="val_accuracy",
                          prefix="val_") == format_accuracy(9, 10)
    assert entry_accuracy({"accuracy": 0.995}) == "99.50 %"      # nothing to count from: the bare figure
    assert entry_accuracy({}) == ""


def test_the_module_imports_neither_numpy_nor_torch():
    code = "import sys, tinyrps.infra.stats; print(sorted(m for m in ('numpy', 'torch') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
