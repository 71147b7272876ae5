"""The types of the plugin's option values: each parses an option's text as argparse does
(``type=``), raising ``argparse.ArgumentTypeError`` with the reason."""

from __future__ import annotations

import argparse

from pytest_kerasperf import shards


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {value}")
    return value


def tolerance(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction such as 0.1, got {text!r}") from None
    if not 0 <= value < 10:
        raise argparse.ArgumentTypeError(f"expected a fraction such as 0.1, got {value}")
    return value


def shard(text: str) -> tuple[int, int]:
    try:
        return shards.parse(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
