"""Folder moves and renames: the rows below follow in one statement.

When a folder is moved or renamed, OFS tells every object below it that it
moved, and CMFPlone catalogs each of them again in full: every indexer, the
text of every page, every metadata column.  Yet what a descendant holds
does not change with its place, except its path, what it acquires from the
folder's new parent, and what CMFPlone's reindex itself changes (it marks
the object modified).  So the folder itself is cataloged again in full, and
each object below it has reindexed only:

- its path;
- ``modified``, ``Date`` and ``Creator``, which marking it modified changes
  (``notifyModified`` sets the date and adds the user to the creators),
  and the metadata columns that follow them (:data:`LOCATION_FREE_COLUMNS`
  keep their stored values);
- every index and metadata column that Plone does not define itself: an
  add-on's indexer may read the object's place.

These partial rows are merged into the stored ones at commit, all in one
statement (:func:`plone.pgcatalog.row.partial_update_sql`).  An object
below the folder that the catalog does not hold at its old path is
cataloged in full, as ZCatalog would catalog it; and when CMFCore's queue
merges the move's reindex with another one of the same object (an edit
after the move, in the same transaction), the object is cataloged in full,
as ZCatalog then does.

``allowedRolesAndUsers`` is not in the plan: what the folder's new place
passes down may still change in the same transaction (its sharing, its
new parent's).  The folder's subtree is checked from the objects as they
are before the next search and at commit (:mod:`plone.pgcatalog.security`).
"""

from __future__ import annotations

from typing import Any

from Acquisition import aq_base
from dataclasses import dataclass
from dataclasses import replace
from plone.pgcatalog import registry as r
from plone.pgcatalog.database import select
from plone.pgcatalog.extraction import catalog_row
from plone.pgcatalog.row import CatalogRow
from plone.pgcatalog.values import parsed_metadata
from plone.pgcatalog.interfaces import IPGCatalogTool
from plone.pgcatalog.overlay import pending_metadata
from plone.pgcatalog.pending import get_pending
from plone.pgcatalog.security import note_subtree
from plone.pgcatalog.security import SECURITY_INDEX
from Products.CMFCore.indexing import processQueue
from Products.CMFCore.interfaces import IContentish
from Products.CMFCore.utils import getToolByName
from weakref import WeakKeyDictionary


__all__ = [
    "LOCATION_FREE_COLUMNS",
    "LOCATION_FREE_INDEXES",
    "Plan",
    "move_queued",
    "moved_row",
    "moved_descendant",
    "will_be_moved",
]


LOCATION_FREE_INDEXES = frozenset(
    """Description SearchableText Subject Title Type UID created effective effectiveRange end
    expires getId getObjPositionInParent getRawRelatedItems id in_reply_to is_default_page
    is_folderish exclude_from_nav object_provides portal_type review_state sortable_title start
    mime_type meta_type getIcon cmf_uid sync_uid commentators total_comments
    last_comment_date""".split()
)
"""Plone's own indexes whose value for an object below a moved folder
changes neither with the folder's place nor with ``notifyModified``
(``getObjPositionInParent`` and ``is_default_page`` read the object's own
container, which moves with it)."""

LOCATION_FREE_COLUMNS = frozenset(
    """CreationDate Description EffectiveDate ExpirationDate Subject Title Type UID created
    effective end exclude_from_nav expires getIcon getId getObjSize getRemoteUrl id image_scales
    is_folderish location portal_type review_state start mime_type meta_type cmf_uid sync_uid
    commentators total_comments last_comment_date""".split()
)
"""Plone's own metadata columns of that kind (``image_scales`` holds scale
paths relative to the object); the others (``modified``,
``ModificationDate``, ``Date``, ``Creator``, ``listCreators``, and every
column Plone does not define) are read again."""


@dataclass(frozen=True)
class Plan:
    """What a descendant of one moved folder has reindexed."""

    idxs: tuple[str, ...]  # the path indexes, and what else must follow
    columns: tuple[str, ...]  # the metadata columns read again
    cataloged: dict[int, str]  # zoid -> path, of the rows below the folder
    metadata: dict[int, Any]  # zoid -> their stored metadata (JSON text, or a dict)


_plans: WeakKeyDictionary = WeakKeyDictionary()  # move event -> Plan


def will_be_moved(ob: Any, event: Any) -> None:
    """(any object, IObjectWillBeMovedEvent): note each object below a
    folder about to move (or be renamed) with the plan of its reindex.

    Registered for any object, this runs for the folder before OFS hands
    the event down to what it contains (the more general subscribers come
    first), and for each of those before CMFCore queues its uncatalog."""
    if event.oldParent is None or event.newParent is None:
        return  # an addition or a deletion
    if ob is event.object:
        if getattr(aq_base(ob), "objectIds", None) is not None:
            _plan_for(ob, event)
        return
    if not IContentish.providedBy(ob):
        return  # CMFCore catalogs only content again when it moved
    plan, zoid = _plan_for(ob, event), _zoid(ob)
    if plan is not None and zoid is not None:
        get_pending(create=True).moving[zoid] = ("/".join(ob.getPhysicalPath()), plan)


def _plan_for(ob: Any, event: Any) -> Plan | None:
    """The plan of *event*'s move, made once."""
    if event in _plans:
        return _plans[event]
    catalog = getToolByName(ob, "portal_catalog", None)
    plan = None
    if catalog is not None and IPGCatalogTool.providedBy(catalog):
        # what is queued for objects below goes in first, at their old
        # paths: the move then only moves their rows
        processQueue()
        plan = _plan(catalog, event)
        note_subtree(catalog, event.object)
    _plans[event] = plan
    return plan


def _plan(catalog: Any, event: Any) -> Plan | None:
    defs = r.index_defs(catalog)
    paths = [name for name, index in defs.items() if index.kind == r.PATH]
    if not paths:
        return None
    follow = [
        name
        for name in defs
        if name not in LOCATION_FREE_INDEXES and name not in paths and name != SECURITY_INDEX
    ]
    folder = "/".join(event.object.getPhysicalPath())
    # a range of the C-collated path: the path index finds it; one read
    # for the rows' places and their stored metadata
    rows = select(catalog, "zoid, path, meta", "path >= %s AND path < %s", [folder + "/", folder + "0"])
    columns = tuple(name for name in r.metadata_columns(catalog) if name not in LOCATION_FREE_COLUMNS)
    cataloged = {zoid: path for zoid, path, _ in rows}
    metadata = {zoid: meta for zoid, _, meta in rows if meta is not None}
    metadata.update(pending_metadata(get_pending(), cataloged))
    return Plan(tuple(paths + follow), columns, cataloged, metadata)


def _zoid(obj: Any) -> int | None:
    oid = getattr(aq_base(obj), "_p_oid", None)
    return None if oid is None else int.from_bytes(oid, "big")


def moved_descendant(obj: Any) -> Plan | None:
    """The plan of *obj*'s reindex, when it is an object below a folder
    that just moved and the catalog holds it at its old path; None when
    it is to be cataloged in full.  A plan is used once: by the index that
    CMFCore asks for when the object hears that it moved."""
    pending, zoid = get_pending(), _zoid(obj)
    if pending is None or not pending.moving or zoid is None:
        return None
    noted = pending.moving.pop(zoid, None)
    if noted is None:
        return None
    old_path, plan = noted
    path = "/".join(obj.getPhysicalPath())
    if plan.cataloged.get(zoid) != old_path or path == old_path:
        return None
    if old_path in pending.removed:
        # uncataloged at its old path since the plan: a search during the
        # move ran CMFCore's queue half way (plone.app.discussion's moved
        # handler searches), and its row, with the edits queued before,
        # went; cataloged in full, as ZCatalog then catalogs it
        return None
    pending.move(zoid, old_path, path)
    pending.moved[zoid] = plan
    return plan


def move_queued(obj: Any) -> Plan | None:
    """The plan of the reindex :func:`moved_descendant` queued for *obj*,
    now that CMFCore's queue runs it (once)."""
    pending, zoid = get_pending(), _zoid(obj)
    if pending is None or not pending.moved or zoid is None:
        return None
    return pending.moved.pop(zoid, None)


def moved_row(catalog: Any, obj: Any, uid: str, plan: Plan) -> CatalogRow:
    """The partial row of an object below a moved folder: the plan's
    indexes, and its stored metadata with the plan's columns read again."""
    stored = plan.metadata.get(_zoid(obj))
    if stored is None:
        return catalog_row(catalog, obj, uid, plan.idxs)
    fresh = catalog_row(catalog, obj, uid, plan.idxs, columns=plan.columns)
    return replace(fresh, meta={**parsed_metadata(stored), **fresh.meta})
