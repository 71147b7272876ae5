"""K/N shards: one of N processes or CI jobs takes every Nth item, from the Kth.

``--kerasperf-shard K/N`` shards a run's collected tests, ``kerasperf sweep
--shard K/N`` a range's commits; both read K/N here.
"""

from __future__ import annotations

#: the most shards a run is split into (a results file saying more is refused)
MAX_SHARDS = 1000


def parse(text: str) -> tuple[int, int]:
    """``K/N`` -> (K, N), 1 <= K <= N <= MAX_SHARDS; a ValueError saying what is expected
    otherwise."""
    k, sep, n = text.partition("/")
    try:
        index, count = int(k), int(n)
    except ValueError:
        index = count = 0
    if not sep or count < 1 or not 1 <= index <= count or count > MAX_SHARDS:
        raise ValueError(f"expected K/N with 1 <= K <= N <= {MAX_SHARDS} such as 2/4, got {text!r}")
    return index, count


def in_shard(position: int, shard: tuple[int, int] | None) -> bool:
    """Item ``position`` (from 0) belongs to shard K/N when position % N == K - 1."""
    return shard is None or position % shard[1] == shard[0] - 1
