"""Change points of a noisy latency series: E-divisive means (Matteson & James, 2014).

Recursive splits, each the ``tau`` that maximises the energy statistic
(alpha = 1) ``Q(tau) = t (m - t) / m * (2 E|X - Y| - E|X - X'| - E|Y - Y'|)``
over the segments so far, kept while a permutation test of its segment
(``permutations`` shuffles, fixed seed) gives
``p = (1 + #{permuted max Q >= Q}) / (1 + permutations) <= significance``.
Two guards: at least ``min_size`` points each side, and the sides' medians at
least ``min_magnitude`` (relative) apart.  The right side of a split is the
rest of its segment (no ``kappa`` search).

Hand-written, not a library call: MongoDB's signal-processing-algorithms and
Apache Otava pin a numpy and scipy older than the lab's, and ruptures has no
significance test; the three were run on the same series as this module, see
docs/history.md ("A library instead?").
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Array = npt.NDArray[np.float64]
    Indices = npt.NDArray[np.intp]
else:
    Array = Indices = Any

DEFAULT_SIGNIFICANCE = 0.05
DEFAULT_PERMUTATIONS = 199
DEFAULT_MIN_SIZE = 3
DEFAULT_MIN_MAGNITUDE = 0.05
DEFAULT_SEED = 0


@dataclass(frozen=True)
class ChangePoint:
    """The series changes between ``index - 1`` and ``index`` (the first point of the new level)."""

    index: int
    before: float  # median of the segment left of the change
    after: float  # median of the segment right of it
    q: float  # the energy statistic of the split
    p_value: float  # of the permutation test

    @property
    def relative(self) -> float:
        """after / before - 1: +0.10 is 10 % slower when the series is a latency."""
        return self.after / self.before - 1.0 if self.before else float("inf")


def _medians(values: Array, taus: Indices) -> tuple[Array, Array]:
    """The medians of ``values[:tau]`` and of ``values[tau:]`` for each ``tau``, as np.median."""
    import numpy as np

    size = values.size
    positions = np.arange(size)
    # Row r holds the points left (right) of taus[r], the others are NaN: sorted last.
    left = np.sort(np.where(positions < taus[:, None], values, np.nan), axis=1)
    right = np.sort(np.where(positions >= taus[:, None], values, np.nan), axis=1)

    def middle(rows: Array, counts: Indices) -> Array:
        index = np.arange(rows.shape[0])
        upper = rows[index, counts // 2]
        lower = rows[index, (counts - 1) // 2]
        median: Array = np.where(counts % 2 == 1, upper, (lower + upper) / 2)
        return median

    return middle(left, taus), middle(right, size - taus)


def _best_split(
    values: Array, min_size: int, min_magnitude: float
) -> tuple[int, float] | tuple[None, float]:
    """The split (index into ``values``) with the largest Q, among the eligible ones."""
    import numpy as np

    size = values.size
    if size < 2 * min_size:
        return None, 0.0
    taus = np.arange(min_size, size - min_size + 1)
    if min_magnitude > 0:
        left, right = _medians(values, taus)
        with np.errstate(divide="ignore", invalid="ignore"):
            taus = taus[(left != 0) & (np.abs(right / left - 1.0) >= min_magnitude)]
        if taus.size == 0:
            return None, 0.0
    # 2-D prefix sums of the distances: prefix[i, j] = the sum of distances[:i, :j]
    prefix = np.zeros((size + 1, size + 1))
    prefix[1:, 1:] = np.abs(values[:, None] - values[None, :]).cumsum(axis=0).cumsum(axis=1)
    n_left, n_right = taus, size - taus
    between = (prefix[taus, size] - prefix[0, size] - prefix[taus, taus] + prefix[0, taus]) / (
        n_left * n_right
    )
    # within: sum over ordered pairs / (n (n - 1)), i.e. the mean over unordered pairs
    # (0 for a side of one point, as its one distance is 0)
    within_left = np.where(
        n_left > 1, prefix[taus, taus] / np.maximum(n_left * (n_left - 1), 1), 0.0
    )
    right_sum = prefix[size, size] - prefix[taus, size] - prefix[size, taus] + prefix[taus, taus]
    within_right = np.where(n_right > 1, right_sum / np.maximum(n_right * (n_right - 1), 1), 0.0)
    q = n_left * n_right / size * (2 * between - within_left - within_right)
    best = int(np.argmax(q))
    return int(taus[best]), float(q[best])


def e_divisive(
    series: Sequence[float],
    *,
    significance: float = DEFAULT_SIGNIFICANCE,
    permutations: int = DEFAULT_PERMUTATIONS,
    min_size: int = DEFAULT_MIN_SIZE,
    min_magnitude: float = DEFAULT_MIN_MAGNITUDE,
    seed: int = DEFAULT_SEED,
) -> list[ChangePoint]:
    """The significant change points of ``series``, in order of position."""
    import numpy as np

    if min_size < 1 or permutations < 1 or not 0 < significance < 1 or min_magnitude < 0:
        raise ValueError("min_size >= 1, permutations >= 1, significance in (0, 1)")
    values: Array = np.asarray(series, dtype=np.float64)
    rng = np.random.default_rng(seed)
    cuts = [0, values.size]
    found: dict[int, tuple[float, float]] = {}  # index -> (q, p)
    while True:
        candidate: tuple[int, int, int, float] | None = None  # start, end, split, q
        for start, end in itertools.pairwise(cuts):
            split, q = _best_split(values[start:end], min_size, min_magnitude)
            if split is not None and (candidate is None or q > candidate[3]):
                candidate = (start, end, start + split, q)
        if candidate is None:
            break
        start, end, index, q = candidate
        segment = values[start:end]
        exceed = 0
        for _ in range(permutations):
            _, permuted_q = _best_split(rng.permutation(segment), min_size, min_magnitude)
            exceed += permuted_q >= q
        p_value = (1 + exceed) / (1 + permutations)
        if p_value > significance:
            break
        found[index] = (q, p_value)
        cuts = sorted([*cuts, index])
    points = []
    for position, index in enumerate(cuts[1:-1], start=1):
        before = float(np.median(values[cuts[position - 1] : index]))
        after = float(np.median(values[index : cuts[position + 1]]))
        q, p_value = found[index]
        points.append(ChangePoint(index, before, after, q, p_value))
    return points
