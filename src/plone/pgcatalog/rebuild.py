"""Walking a site for ``clearFindAndRebuild``, loading objects in batches.

ZCatalog walks with ``ZopeFindAndApply``, which loads each object, and each
of its persistent parts (annotations, workflow history, ...), with a query
of its own: three or four round trips per document.  The walk here visits
the same objects in the same order, but before a batch of children is
visited it warms the storage's cache with the children and everything they
reference, in two queries.
"""

from __future__ import annotations

from Acquisition import aq_base
from collections.abc import Iterator
from itertools import batched
from plone.pgcatalog.connection import fetch

import logging


logger = logging.getLogger("plone.pgcatalog")

BATCH = 100
"""Children loaded per round trip: enough to amortise it, small enough for
the storage's per-connection cache (16 MB by default)."""

_REFS = "SELECT DISTINCT unnest(refs) FROM object_state WHERE zoid = ANY(%s)"


def descendants(container) -> Iterator:
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
        prefetch(container, [ob for _, ob in chunk])
        for _, ob in chunk:
            was_ghost = getattr(ob, "_p_changed", 0) is None
            yield ob
            yield from descendants(ob)
            if was_ghost:
                ob._p_deactivate()


def prefetch(context, objects: list) -> None:
    """Load *objects* and the objects they reference, in two queries."""
    jar = getattr(aq_base(context), "_p_jar", None)
    oids = [oid for ob in objects if (oid := getattr(aq_base(ob), "_p_oid", None)) is not None]
    if jar is None or not oids:
        return
    zoids = [int.from_bytes(oid, "big") for oid in oids]
    refs = [zoid.to_bytes(8, "big") for (zoid,) in fetch(context, _REFS, [zoids])]
    jar.prefetch(oids, refs)
