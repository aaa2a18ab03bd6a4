"""What the catalog keeps in ZODB: the persistent objects reachable from
the catalog tool, as stored, and how many of them sit in the ZODB cache.

ZCatalog keeps its indexes, metadata records and lexicons there as BTrees,
which grow with the site and compete for the object cache; plone.pgcatalog
should keep nothing but its tool (its lexicons' word pipelines are part of
the tool's record).
"""

from __future__ import annotations

from collections import Counter
from ZODB.serialize import referencesf
from ZODB.utils import get_pickle_metadata


def catalog_objects(catalog, stop: tuple) -> dict:
    """``stored``: objects reachable from *catalog* in its storage (the
    tool included), ``by_class`` their classes, ``cached``: how many of
    them are loaded in the connection's cache.  The walk does not enter
    the objects in *stop* (the site, the application)."""
    jar = catalog._p_jar
    storage = jar._storage  # this connection's view: the current snapshot
    stopped = {obj._p_oid for obj in stop}
    seen, todo, classes = set(), [catalog._p_oid], Counter()
    while todo:
        oid = todo.pop()
        if oid in seen or oid in stopped:
            continue
        seen.add(oid)
        data, _ = storage.load(oid)
        module, name = get_pickle_metadata(data)
        classes[f"{module}.{name}"] += 1
        todo.extend(referencesf(data))
    cached = sum(1 for oid, _ in jar._cache.lru_items() if oid in seen)
    return {"stored": len(seen), "by_class": dict(classes.most_common()), "cached": cached}
