"""Verify and repair: the catalog compared with the content.

:func:`verify` walks the site as ``clearFindAndRebuild`` does and compares
what it finds with the catalog rows: objects without a row (*missing*),
rows whose object is gone (*orphaned*), rows kept under another path than
their object's (*misplaced*), and rows whose values are not what the
object gives now (*stale*: its index values, words, own columns and
metadata, extracted afresh and compared in SQL, a batch at a time).
:func:`repair` fixes what a report found, committing a batch at a time.
"""

from __future__ import annotations

from Acquisition import aq_inner
from Acquisition import aq_parent
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
from itertools import batched
from plone.pgcatalog import row
from plone.pgcatalog.database import cataloged_rows
from plone.pgcatalog.database import read
from plone.pgcatalog.extraction import catalog_row
from plone.pgcatalog.rebuild import catalogable
from plone.pgcatalog.rebuild import content
from plone.pgcatalog.rebuild import zoid_of
from plone.pgcatalog.values import decode_metadata
from plone.pgcatalog.values import parsed_metadata
from typing import Any

import logging
import orjson
import time
import transaction


__all__ = ["EXAMPLES", "Report", "repair", "verify"]

logger = logging.getLogger("plone.pgcatalog")

EXAMPLES = 10
"""Paths shown per kind of problem in a report's summary."""

BATCH = 500
"""Objects compared, or repaired, per statement or transaction."""

_KINDS = ("missing", "orphaned", "misplaced", "stale")


@dataclass
class Report:
    """What :func:`verify` found.  Each list holds paths: of the objects
    (missing, misplaced, stale) or of the rows (orphaned)."""

    objects: int = 0  # catalogable objects in the site
    rows: int = 0  # catalog rows
    missing: list[str] = field(default_factory=list)
    orphaned: list[str] = field(default_factory=list)
    misplaced: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not any(getattr(self, kind) for kind in _KINDS)

    def counts(self) -> dict[str, int]:
        return {"objects": self.objects, "rows": self.rows, **{k: len(getattr(self, k)) for k in _KINDS}}

    def summary(self, examples: int = EXAMPLES) -> str:
        """The counts, then up to *examples* paths of each problem."""
        lines = [
            f"{self.objects} objects, {self.rows} catalog rows, checked in {self.seconds:.1f} s: "
            + ("the catalog matches the content." if self.ok else "problems found.")
        ]
        for kind in _KINDS:
            paths = getattr(self, kind)
            if paths:
                more = f" (and {len(paths) - examples} more)" if len(paths) > examples else ""
                lines.append(f"{kind}: {len(paths)}{more}")
                lines += [f"  {path}" for path in paths[:examples]]
        return "\n".join(lines)


def _content(catalog: Any) -> Iterator[tuple[int | None, str, Any]]:
    """``(zoid, path, object)`` of what ``clearFindAndRebuild`` catalogs."""
    for path, obj in content(aq_parent(aq_inner(catalog))):
        yield zoid_of(obj), path, obj


def verify(catalog: Any, values: bool = True, batch: int = BATCH) -> Report:
    """Compare *catalog* with the site's content (and, with *values*, every
    row's values with the object's)."""
    started = time.monotonic()
    rows = {zoid: path for zoid, path in cataloged_rows(catalog, "zoid")}
    report = Report(rows=len(rows))
    seen: set[int] = set()
    compare: list[tuple[int, str, Any]] = []
    for zoid, path, obj in _content(catalog):
        report.objects += 1
        stored = rows.get(zoid)
        if stored is None:
            report.missing.append(path)
            continue
        seen.add(zoid)
        if stored != path:
            report.misplaced.append(path)
        elif values:
            compare.append((zoid, path, obj))
            if len(compare) >= batch:
                report.stale += _stale(catalog, compare)
                compare = []
    if compare:
        report.stale += _stale(catalog, compare)
    report.orphaned = sorted(path for zoid, path in rows.items() if zoid not in seen)
    report.seconds = time.monotonic() - started
    logger.info("plone.pgcatalog verify: %s", report.counts())
    return report


def _stale(catalog: Any, objects: list[tuple[int, str, Any]]) -> list[str]:
    """The paths of *objects* whose rows differ from their fresh rows."""
    fresh = {zoid: catalog_row(catalog, obj, path) for zoid, path, obj in objects}
    records = orjson.dumps([row.record(zoid, r) for zoid, r in fresh.items()]).decode()
    found = read(
        catalog,
        f"SELECT p.zoid, {row.differs_sql('o', 'p', typed=catalog._pgc_typed)}, o.meta "
        f"FROM jsonb_to_recordset(%s::jsonb) AS p({row.record_columns_sql()}) "
        "JOIN object_state o ON o.zoid = p.zoid",
        [records],
    )
    paths = {zoid: path for zoid, path, _ in objects}
    stale = []
    for zoid, differs, meta in found:
        wanted = orjson.loads(orjson.dumps(fresh[zoid].meta))
        stored = parsed_metadata(meta or {})
        # equal values may be encoded apart: a datetime in pytz's UTC is
        # pickled, and comes back from the storage in datetime's own UTC
        if differs or stored != wanted and decode_metadata(stored) != decode_metadata(wanted):
            stale.append(paths[zoid])
    return sorted(stale)


def repair(catalog: Any, report: Report | None = None, batch: int = BATCH) -> Report:
    """Fix what *report* (default: a fresh :func:`verify`) found, a batch
    at a time, each committed: missing, misplaced and stale objects are
    cataloged again, orphaned rows uncataloged.  Returns the report."""
    if report is None:
        report = verify(catalog, batch=batch)
    root = catalog.getPhysicalRoot()
    recatalog = sorted({*report.missing, *report.misplaced, *report.stale})
    work = [("uncatalog", path) for path in report.orphaned] + [("catalog", path) for path in recatalog]
    done = 0
    for chunk in batched(work, batch):
        for action, path in chunk:
            obj = root.unrestrictedTraverse(path, None)
            if obj is not None and "/".join(obj.getPhysicalPath()) != path:
                obj = None  # found by acquisition, not there
            if action == "uncatalog":
                catalog.uncatalog_object(path)
                if obj is None or not catalogable(obj):
                    continue
                # another object lives there now: cataloged in the same
                # transaction, it keeps its own row
            if obj is not None:
                catalog.catalog_object(obj, path)
        transaction.commit()
        done += len(chunk)
        logger.info("plone.pgcatalog repair: %d of %d done", done, len(work))
    return report
