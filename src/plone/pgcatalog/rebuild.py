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
from plone.pgcatalog.interfaces import IPGCatalogTool
from plone.pgcatalog.values import array_literal

import logging


__all__ = ["BATCH", "catalog_tree", "catalogable", "cataloged_objects", "descendants", "prefetch"]


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


def catalog_tree(catalog: Any, obj: Any) -> None:
    """Catalog *obj* and all content below it, each as a full row."""
    for item in chain((obj,), descendants(obj)):
        if catalogable(item):
            catalog.catalog_object(item, "/".join(item.getPhysicalPath()))


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
