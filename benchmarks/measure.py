"""Timing helpers: run a callable, keep each run's milliseconds, summarise."""

from __future__ import annotations

from collections.abc import Callable

import statistics
import time


ITERATIONS = 50
WARMUP = 5


def summary(samples_ms: list[float]) -> dict:
    """Median (what the report compares), spread, and the sample count."""
    ordered = sorted(samples_ms)
    n = len(ordered)
    return {
        "median": statistics.median(ordered),
        "mean": statistics.fmean(ordered),
        "min": ordered[0],
        "p90": ordered[min(n - 1, int(round(0.9 * (n - 1))))],
        "p95": ordered[min(n - 1, int(round(0.95 * (n - 1))))],
        "n": n,
    }


def time_once(fn: Callable[[], object]) -> tuple[float, object]:
    """Milliseconds taken by one call of *fn*, and its result."""
    start = time.perf_counter()
    result = fn()
    return (time.perf_counter() - start) * 1000.0, result


def time_repeated(
    fn: Callable[[], object],
    between: Callable[[], object] | None = None,
    iterations: int = ITERATIONS,
    warmup: int = WARMUP,
) -> dict:
    """Time *iterations* calls of *fn* after *warmup* untimed ones.

    *between* runs before every call, untimed (e.g. ending the previous
    transaction, as the end of a request would).
    """
    samples = []
    for i in range(warmup + iterations):
        if between is not None:
            between()
        elapsed, _ = time_once(fn)
        if i >= warmup:
            samples.append(elapsed)
    return summary(samples)
