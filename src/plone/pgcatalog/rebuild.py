"""Walking a site or the catalog's paths, loading objects in batches.

ZCatalog walks with ``ZopeFindAndApply`` (``clearFindAndRebuild``) or
resolves one path after another (``reindexIndex``, ``refreshCatalog``); both
load each object, and each of its persistent parts (annotations, workflow
history, ...), with a query of its own: three or four round trips per
document.  The walks here visit the same objects in the same order, but
first warm the storage's cache with a batch of objects and everything they
reference, in two queries.
"""

from __future__ import annotations

from typing import Any

from Acquisition import aq_base
from collections.abc import Iterator
from itertools import batched
from itertools import chain
from plone.pgcatalog.connection import fetch
from plone.pgcatalog.extraction import walking
from plone.pgcatalog.interfaces import IPGCatalogTool
from plone.pgcatalog.values import array_literal

import logging
import time
import transaction


__all__ = [
    "BATCH",
    "COMMIT_EVERY",
    "Progress",
    "catalog_in_batches",
    "catalog_tree",
    "catalogable",
    "comments",
    "content",
    "cataloged_objects",
    "descendants",
    "prefetch",
]


logger = logging.getLogger("plone.pgcatalog")

BATCH = 100
"""Children loaded per round trip: enough to amortise it, small enough for
the storage's per-connection cache (16 MB by default)."""

_REFS = "SELECT DISTINCT unnest(refs) FROM object_state WHERE zoid = ANY(%s::bigint[])"


def descendants(container: Any) -> Iterator:
    """Every object below *container*, each before its own children.

    Objects that were ghosts are turned back into ghosts once their
    subtree has been visited, so memory stays bounded on large sites.
    """
    if not hasattr(aq_base(container), "objectItems"):
        return
    try:
        items = container.objectItems()
    except Exception:
        # ZopeFindAndApply skips a container it cannot list; so do we.
        logger.warning("Cannot list %r; its contents are not cataloged", container, exc_info=True)
        return
    for chunk in batched(items, BATCH):
        prefetch(container, [zoid_of(ob) for _, ob in chunk])
        for _, ob in chunk:
            was_ghost = getattr(ob, "_p_changed", 0) is None
            yield ob
            yield from descendants(ob)
            if was_ghost:
                ob._p_deactivate()


def catalogable(obj: Any) -> bool:
    """Content, as ``clearFindAndRebuild`` takes it: what has a
    ``reindexObject``, the catalog tool itself excepted."""
    base = aq_base(obj)
    return callable(getattr(base, "reindexObject", None)) and not IPGCatalogTool.providedBy(base)


COMMIT_EVERY = 1000
"""Objects cataloged per committed transaction by :func:`catalog_in_batches`."""


class Progress:
    """Logs how far a long run is: done of the expected total, items per
    second and the time left, at most every *every* seconds."""

    def __init__(self, label: str, total: int | None = None, every: float = 10.0) -> None:
        self.label, self.total, self.every = label, total, every
        self.done = 0
        self.started = self.logged = time.monotonic()

    def step(self, count: int = 1) -> None:
        self.done += count
        if time.monotonic() - self.logged >= self.every:
            self.log()

    def log(self, final: bool = False) -> None:
        self.logged = time.monotonic()
        elapsed = max(self.logged - self.started, 1e-9)
        rate = self.done / elapsed
        message = f"plone.pgcatalog {self.label}: {self.done}"
        if self.total and not final:
            left = max(self.total - self.done, 0)
            eta = f", about {left / rate:.0f} s left" if rate else ""
            message += f" of ~{self.total} ({100 * self.done / self.total:.0f}%)"
            message += f", {rate:.0f} items/s{eta}"
        else:
            message += f" in {elapsed:.1f} s, {rate:.0f} items/s" + (", done" if final else "")
        logger.info(message)


def content(obj: Any) -> Iterator[tuple[str, Any]]:
    """``(path, object)`` of *obj* and everything below it that
    ``clearFindAndRebuild`` catalogs, in its order: each item, its
    comments, then what it contains."""
    for item in chain((obj,), descendants(obj)):
        if catalogable(item):
            yield "/".join(item.getPhysicalPath()), item
            for comment in comments(item):
                yield "/".join(comment.getPhysicalPath()), comment


try:
    from plone.app.discussion.interfaces import DISCUSSION_ANNOTATION_KEY
except ImportError:  # plone.app.discussion is an add-on since Plone 6.1
    DISCUSSION_ANNOTATION_KEY = None


def comments(item: Any) -> Iterator:
    """plone.app.discussion's comments on *item*: they live in its
    annotations, not among its items, and CMFPlone's
    ``clearFindAndRebuild`` catalogs them after the item."""
    if DISCUSSION_ANNOTATION_KEY is None:
        return
    annotations = getattr(aq_base(item), "__annotations__", None)
    conversation = None if annotations is None else annotations.get(DISCUSSION_ANNOTATION_KEY)
    if conversation is not None:
        yield from conversation.__of__(item).getComments()


def catalog_tree(catalog: Any, obj: Any, progress: Progress | None = None) -> None:
    """Catalog *obj* and all content below it, each as a full row (in one
    transaction: extraction may rely on a :func:`~plone.pgcatalog.extraction.walking` memo)."""
    with walking():
        for path, item in content(obj):
            catalog.catalog_object(item, path)
            if progress is not None:
                progress.step()


def catalog_in_batches(
    catalog: Any, site: Any, done: dict[int, str], total: int | None = None, every: int | None = None
) -> int:
    """Catalog the *site* and all its content in transactions of *every*
    (:data:`COMMIT_EVERY`) objects, each committed: memory stays bounded
    and writers wait for a batch at most.  Objects already cataloged
    under their path (*done*: zoid -> path, what an interrupted run left)
    are skipped, so a run that was killed resumes where it stopped.
    Returns how many objects it cataloged."""
    every = every or COMMIT_EVERY
    progress = Progress("install", total)
    progress.done = len(done)
    jar = getattr(aq_base(catalog), "_p_jar", None)
    batch = 0
    with walking() as walk:  # (what it remembers holds for one transaction)
        for path, item in content(site):
            if done.get(zoid_of(item)) == path:
                continue
            catalog.catalog_object(item, path)
            batch += 1
            if batch >= every:
                transaction.commit()
                walk.forget()
                progress.step(batch)
                batch = 0
                if jar is not None:
                    jar.cacheGC()
    transaction.commit()
    progress.step(batch)
    progress.log(final=True)
    return progress.done - len(done)


def cataloged_objects(tool: Any, rows: list[tuple[int, str]]) -> Iterator[tuple[str, object]]:
    """``(path, object)`` for the catalog rows ``(zoid, path)`` whose
    object still resolves, a batch of objects loaded at a time; objects
    left unchanged are turned back into ghosts after each batch."""
    root = tool.getPhysicalRoot()
    jar = getattr(aq_base(tool), "_p_jar", None)
    for chunk in batched(rows, BATCH):
        prefetch(tool, [zoid for zoid, _ in chunk])
        for _, path in chunk:
            obj = root.unrestrictedTraverse(path, None)
            if obj is not None:
                yield path, obj
        if jar is not None:
            jar.cacheGC()


def zoid_of(obj) -> int | None:
    oid = getattr(aq_base(obj), "_p_oid", None)
    return None if oid is None else int.from_bytes(oid, "big")


def prefetch(context: Any, zoids: list[int | None]) -> None:
    """Load the objects *zoids* and the objects they reference, in two
    queries (objects not stored yet, ``None``, are skipped)."""
    jar = getattr(aq_base(context), "_p_jar", None)
    zoids = [zoid for zoid in zoids if zoid is not None]
    if jar is None or not zoids:
        return
    refs = [zoid.to_bytes(8, "big") for (zoid,) in fetch(context, _REFS, [array_literal(zoids)])]
    jar.prefetch([zoid.to_bytes(8, "big") for zoid in zoids], refs)
