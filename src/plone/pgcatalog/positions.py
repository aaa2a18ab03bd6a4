"""Folder order: ``getObjPositionInParent`` kept as the containers order it.

ZCatalog's GopipIndex stores nothing: when a search sorts on it, it asks
each result's container for the item's position, so a reordered folder
sorts in its new order at once.  Here positions are stored with each row
(so that sorting is an index walk), and whenever a container's order may
have changed (items moved, added, removed: zope's ``IContainerModifiedEvent``,
and plone.folder's ``orderObjects``, which sends none) the container is
noted for this transaction.  Before the next search and before the commit,
the rows of its children whose stored position differs from the live one
get a partial update: one statement per container, which returns only the
rows that changed.  The children of an unordered folder (plone.folder's
``UnorderedOrdering``, whose positions are None) all get
:data:`~plone.pgcatalog.registry.UNORDERED`: ZCatalog sorts them before
every position, where it does not drop them.
"""

from __future__ import annotations

from typing import Any

from Acquisition import aq_base
from plone.pgcatalog import registry as r
from plone.pgcatalog.connection import fetch
from plone.pgcatalog.interfaces import IPGCatalogTool
from plone.pgcatalog.overlay import catalog_sql
from plone.pgcatalog.pending import changes_for
from plone.pgcatalog.pending import get_pending
from plone.pgcatalog.row import CatalogRow
from plone.pgcatalog.schema import ROWS
from plone.pgcatalog.values import array_literal
from Products.CMFCore.utils import getToolByName

import transaction


__all__ = ["container_modified", "positions_changed", "refresh_positions"]


def container_modified(event: Any) -> None:
    """``IContainerModifiedEvent``: the container's order may have changed."""
    positions_changed(event.object)


def positions_changed(container: Any) -> None:
    """Note *container*: its children's positions are checked before the
    next search and the commit."""
    if getattr(aq_base(container), "getObjectPosition", None) is None:
        return  # not an ordered container: its children have no position
    catalog = getToolByName(container, "portal_catalog", None)
    if catalog is None or not IPGCatalogTool.providedBy(catalog):
        return
    if not any(d.kind == r.GOPIP for d in r.index_defs(catalog).values()):
        return
    pending = changes_for(catalog)
    if not pending.reordered:
        transaction.get().addBeforeCommitHook(refresh_positions, (catalog,))
    pending.reordered["/".join(container.getPhysicalPath())] = container


_CHANGED = f"""SELECT object_state.zoid, object_state.path, p.position
  FROM {ROWS} JOIN (SELECT id, CASE WHEN %s THEN n - 1 ELSE {r.UNORDERED} END AS position
                      FROM unnest(%s::text[]) WITH ORDINALITY AS u(id, n)) AS p
       ON object_state.path = %s || p.id
 WHERE object_state.parent_path = %s AND object_state.idx IS NOT NULL
   AND (object_state.idx->>%s)::bigint IS DISTINCT FROM p.position"""


def refresh_positions(catalog: Any) -> None:
    """Give the children of the noted containers their live positions
    (partial reindexes of the position indexes), as this transaction sees
    the catalog."""
    pending = get_pending()
    if pending is None or not pending.reordered:
        return
    containers, pending.reordered = pending.reordered, {}
    names = [d.name for d in r.index_defs(catalog).values() if d.kind == r.GOPIP]
    for path, container in containers.items():
        ids = list(container.objectIds())  # in the container's order
        # an unordered folder (plone.folder's) gives its children no position
        ordered = not ids or container.getObjectPosition(ids[0]) is not None
        for name in names:
            sql, head = catalog_sql(_CHANGED, pending, path)  # this transaction's rows below it
            rows = fetch(catalog, sql, [*head, ordered, array_literal(ids), path + "/", path, name])
            for zoid, child_path, position in rows:
                pending.catalog(zoid, CatalogRow(child_path, {name: position}, partial=True))
