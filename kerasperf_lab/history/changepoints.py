"""Change points of a noisy latency series: E-divisive means (Matteson & James, 2014).

The method MongoDB's signal-processing-algorithms and Apache Otava (Hunter)
use for performance series, not a threshold between neighbours:

1. in each segment of the series (at first the whole series), every split
   ``tau`` with at least ``min_size`` points on each side gets the energy
   statistic (alpha = 1)::

       Q(tau) = t (m - t) / m * (2 E|X - Y| - E|X - X'| - E|Y - Y'|)

   where X are the segment's points left of ``tau``, Y those right of it,
   ``t = tau - start`` and ``m`` the segment's length (the divergence of the
   two sides' distributions, large when they differ in location);
2. the split with the largest Q over all segments is a candidate; it is kept
   when a permutation test says Q that large is unlikely by chance: the
   candidate's segment is shuffled ``permutations`` times (fixed seed) and
   ``p = (1 + #{permuted max Q >= Q}) / (1 + permutations)`` must be at most
   ``significance``;
3. a kept split cuts its segment in two and the search repeats, until no
   candidate is significant.

Two guards against the noise of a shared machine: a split must leave
``min_size`` points on each side, and the two sides' medians must differ by
at least ``min_magnitude`` (relative) for the split to be a candidate at all.

Simplification: the original E-divisive also searches the right end
``kappa`` of the right-hand side inside a segment; here the right side is
always the rest of the segment (as Otava's default windowless mode).
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
else:
    Array = Any

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


def _prefix(distances: Array) -> Array:
    """2-D prefix sums: ``P[i, j]`` = sum of ``distances[:i, :j]``."""
    import numpy as np

    size = distances.shape[0]
    prefix = np.zeros((size + 1, size + 1))
    prefix[1:, 1:] = distances.cumsum(axis=0).cumsum(axis=1)
    return prefix


def _block(prefix: Array, r0: int, r1: int, c0: int, c1: int) -> float:
    return float(prefix[r1, c1] - prefix[r0, c1] - prefix[r1, c0] + prefix[r0, c0])


def _best_split(
    values: Array, min_size: int, min_magnitude: float
) -> tuple[int, float] | tuple[None, float]:
    """The split (index into ``values``) with the largest Q, among the eligible ones."""
    import numpy as np

    size = values.size
    if size < 2 * min_size:
        return None, 0.0
    distances = np.abs(values[:, None] - values[None, :])
    prefix = _prefix(distances)
    best: int | None = None
    best_q = 0.0
    for tau in range(min_size, size - min_size + 1):
        if min_magnitude > 0:
            left, right = float(np.median(values[:tau])), float(np.median(values[tau:]))
            if left == 0 or abs(right / left - 1.0) < min_magnitude:
                continue
        n_left, n_right = tau, size - tau
        between = _block(prefix, 0, tau, tau, size) / (n_left * n_right)
        # within: sum over ordered pairs / (n (n - 1)), i.e. the mean over unordered pairs
        within_left = _block(prefix, 0, tau, 0, tau) / (n_left * (n_left - 1)) if n_left > 1 else 0
        within_right = (
            _block(prefix, tau, size, tau, size) / (n_right * (n_right - 1)) if n_right > 1 else 0
        )
        q = n_left * n_right / size * (2 * between - within_left - within_right)
        if best is None or q > best_q:
            best, best_q = tau, q
    if best is None:
        return None, 0.0
    return best, best_q


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
