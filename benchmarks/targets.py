"""The project's performance targets, checked against a run's results.

Every target is a ratio of medians, written so that bigger is better for
plone.pgcatalog except the SQL-floor one (pgcatalog / floor, smaller is
better).
"""

from __future__ import annotations

import math

from dataclasses import dataclass
from workload import scenarios


LABELS = {
    "pgcatalog": "pgcatalog",
    "floor": "SQL floor",
    "relstorage": "ZCatalog/RelStorage",
    "filestorage": "ZCatalog/FileStorage",
    "peer": "peer (PyPI plone-pgcatalog)",
}
VARIANTS = ("bare", "listing")
SMALL_SITE = 500
LARGE_SITE = 20000
REBUILD_SITE = 5000


@dataclass(frozen=True)
class Check:
    """One target: *ratio* compared with *goal* (``>=`` or ``<=``)."""

    name: str
    ratio: float | None
    goal: float
    at_most: bool = False  # True: the ratio must be <= goal
    note: str = ""
    unit: str = "x"  # "" for counts

    @property
    def passed(self) -> bool | None:
        if self.ratio is None:
            return None
        return self.ratio <= self.goal if self.at_most else self.ratio >= self.goal

    @property
    def status(self) -> str:
        return {None: "n/a", True: "PASS", False: "FAIL"}[self.passed]

    @property
    def measured_text(self) -> str:
        if self.ratio is None:
            return "–"
        return f"{self.ratio:.2f}x" if self.unit == "x" else f"{self.ratio:g}{self.unit}"

    @property
    def goal_text(self) -> str:
        return f"{'≤' if self.at_most else '≥'} {self.goal:g}{self.unit}"


def sizes(results: dict) -> list[int]:
    return sorted(int(s) for s in results["meta"]["settings"]["sizes"])


def query_median(results: dict, backend: str, size: int, scenario: str, variant: str) -> float | None:
    """The median ms of one scenario variant; ``floor`` is read from the
    pgcatalog run."""
    source = "pgcatalog" if backend == "floor" else backend
    data = results["backends"].get(source, {}).get("sizes", {}).get(str(size))
    if data is None:
        return None
    part = data.get("floor" if backend == "floor" else "queries", {}).get(scenario)
    return None if part is None else part[variant]["median"]


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def write_ratio(results: dict, key: str) -> float | None:
    """RelStorage's median ms/doc over pgcatalog's."""
    backends = results["backends"]
    try:
        return ratio(backends["relstorage"][key]["median"], backends["pgcatalog"][key]["median"])
    except KeyError:
        return None


def rebuild_ratio(results: dict) -> tuple[float | None, int | None]:
    backends = results["backends"]
    try:
        pg, rs = backends["pgcatalog"]["rebuild"], backends["relstorage"]["rebuild"]
    except KeyError:
        return None, None
    return ratio(rs["seconds"], pg["seconds"]), pg["docs"]


def write_checks(results: dict) -> list[Check]:
    rebuild, docs = rebuild_ratio(results)
    note = "" if docs in (None, REBUILD_SITE) else f"measured at {docs:,} docs (target at {REBUILD_SITE:,})"
    return [
        Check("creation vs RelStorage", write_ratio(results, "create_ms_per_doc"), 1.3),
        Check("modification vs RelStorage", write_ratio(results, "modify_ms_per_doc"), 2.0),
        Check(f"clearFindAndRebuild vs RelStorage ({docs or '?'} docs)", rebuild, 2.0, note=note),
    ]


def query_checks(results: dict) -> list[Check]:
    """Per scenario and variant: vs RelStorage on the smallest and the
    largest site, and vs the SQL floor at every size."""
    checks = []
    measured = sizes(results)
    small, large = measured[0], measured[-1]
    for scenario in scenarios():
        for variant in VARIANTS:
            label = f"{scenario.label} ({variant})"

            def vs(backend, size, scenario=scenario, variant=variant):
                return ratio(
                    query_median(results, backend, size, scenario.name, variant),
                    query_median(results, "pgcatalog", size, scenario.name, variant),
                )

            note = "" if small == SMALL_SITE else f"target at {SMALL_SITE:,} docs"
            checks.append(Check(f"{label} vs RelStorage @{small:,}", vs("relstorage", small), 1.0, note=note))
            if large != small:
                note = "" if large == LARGE_SITE else f"target at {LARGE_SITE:,} docs"
                checks.append(
                    Check(f"{label} vs RelStorage @{large:,}", vs("relstorage", large), 10.0, note=note)
                )
            for size in measured:
                floor = vs("floor", size)
                checks.append(
                    Check(
                        f"{label} / SQL floor @{size:,}", None if not floor else 1 / floor, 1.5, at_most=True
                    )
                )
    return checks


# the scenarios that find a few rows however large the site (2, 4, 6)
SELECTIVE = ("complex", "navigation", "date_paged")


def growth_checks(results: dict) -> list[Check]:
    """Selective scenarios: cost at the largest size over cost at the
    smallest, at most log(largest) / log(smallest), the growth of a
    logarithm with no constant part (any constant part only lowers it)."""
    measured = sizes(results)
    small, large = measured[0], measured[-1]
    if large == small:
        return []
    bound = math.log(large) / math.log(small)
    checks = []
    for scenario in scenarios():
        if scenario.name not in SELECTIVE:
            continue
        for variant in VARIANTS:
            growth = ratio(
                query_median(results, "pgcatalog", large, scenario.name, variant),
                query_median(results, "pgcatalog", small, scenario.name, variant),
            )
            name = f"{scenario.label} ({variant}) growth {small:,} → {large:,}"
            checks.append(Check(name, growth, round(bound, 2), at_most=True))
    return checks


def stored_objects(results: dict, backend: str, size: int) -> dict | None:
    """The catalog's objects in ZODB at *size* (see ``closure.py``)."""
    return results["backends"].get(backend, {}).get("sizes", {}).get(str(size), {}).get("catalog_objects")


def zodb_checks(results: dict) -> list[Check]:
    """No catalog data in ZODB: besides the tool itself, no object reachable
    from pgcatalog's tool, stored or cached, at any size."""
    found = [stored_objects(results, "pgcatalog", n) for n in sizes(results)]
    if not all(found):
        return []
    return [
        Check("objects besides the tool, stored", max(f["stored"] for f in found) - 1, 0, True, unit=""),
        Check(
            "objects besides the tool, in the ZODB cache",
            max(f["cached"] for f in found) - 1,
            0,
            True,
            unit="",
        ),
    ]


def all_checks(results: dict) -> list[Check]:
    return write_checks(results) + query_checks(results) + growth_checks(results) + zodb_checks(results)
