"""The catalog after an undo (history-preserving storages).

ZCatalog keeps its data in BTrees that change in the same transactions as
the content, so undoing a transaction undoes its catalog changes too.  Here
the catalog data lives in the content's own rows, and the storage restores
the objects' states without it.  zodb-pgjsonb tells the state processor,
inside the undo's commit, which objects the undo restores
(:func:`plan_repair`); once the undo has committed, :func:`repair`
catalogs again, in a transaction of its own, every cataloged object whose
state or parts (workflow history, annotations, a folder's BTree) the undo
restored:

- the object itself, from its restored state;
- a folder's children, where the undo brought one back or took one away
  (an undone delete, add, move or rename);
- the whole subtree, where the undo changed the object's local roles or
  permission settings (an undone workflow transition or sharing change),
  which its descendants' ``allowedRolesAndUsers`` acquire, or its name (an
  undone rename), and of every object the undo puts into a folder or takes
  out of one (an undone move).

Until then those subtrees' rows would show what they showed before the
undo, to those who could see it then: an undone publish to Anonymous, an
undone move at its old place.  So the undo's own transaction hides them
(:func:`hide`): their ``allowedRolesAndUsers`` become :data:`HIDDEN` and
stay so if the repair fails.

Objects the undo deletes (created in the undone transaction) take their
catalog data with their rows.
"""

from __future__ import annotations

from typing import Any

from Acquisition import aq_base
from Acquisition import aq_chain
from dataclasses import dataclass
from plone.pgcatalog.database import select
from plone.pgcatalog.interfaces import IPGCatalogTool
from plone.pgcatalog.rebuild import catalog_tree
from plone.pgcatalog.rebuild import catalogable
from plone.pgcatalog.row import STAMP_COLUMN
from plone.pgcatalog.row import typed_sets
from plone.pgcatalog.schema import CATALOGED
from plone.pgcatalog.security import SECURITY_INDEX
from plone.pgcatalog.security import settings
from plone.pgcatalog.values import array_literal
from psycopg.rows import tuple_row
from Testing.makerequest import makerequest
from ZODB.DB import DB
from ZODB.POSException import ConflictError
from zope.component.hooks import setSite
from zope.globalrequest import setRequest
from zope.component.interfaces import ISite

import logging
import orjson
import threading
import transaction


__all__ = ["HIDDEN", "Repair", "hide", "plan_repair", "repair", "schedule"]

logger = logging.getLogger("plone.pgcatalog")

MAX_DEPTH = 8
"""How far up the references a restored part is followed to its object
(a BTree bucket: bucket, tree, folder)."""

ATTEMPTS = 3

# The cataloged objects owning the restored objects: themselves when
# cataloged, else the nearest cataloged objects referencing them.
_OWNERS = f"""
WITH RECURSIVE up(zoid, depth) AS (
    SELECT z, 0 FROM unnest(%s::bigint[]) AS z
  UNION
    SELECT o.zoid, up.depth + 1
      FROM up
      JOIN object_state AS part ON part.zoid = up.zoid AND part.idx IS NULL
      JOIN object_state AS o ON o.refs @> ARRAY[up.zoid]
     WHERE up.depth < {MAX_DEPTH}
)
SELECT DISTINCT s.zoid, s.path FROM up JOIN object_state AS s ON s.zoid = up.zoid
 WHERE s.idx IS NOT NULL"""


@dataclass(frozen=True)
class Repair:
    """A cataloged path to catalog again after an undo."""

    path: str
    subtree: bool  # its security settings changed: catalog everything below too


def plan_repair(cur: Any, restored: list[int], entries: dict) -> list[Repair]:
    """What to catalog again once the undo of *restored* objects commits
    (run inside the undo's commit, on the database as it was before)."""
    if not restored:
        return []
    with cur.connection.cursor(row_factory=tuple_row) as owners:
        owners.execute(_OWNERS, (array_literal(restored),))
        found = owners.fetchall()
        # objects the undo puts into a container or takes out of one: the
        # references of a restored folder (or of its BTree's buckets) change
        entered_or_left = set()
        for zoid in restored:
            before, after = _revisions(entries, zoid)
            entered_or_left |= set(before.get("refs") or ()) ^ set(after.get("refs") or ())
        if entered_or_left:
            owners.execute(
                f"SELECT zoid, path FROM object_state WHERE zoid = ANY(%s::bigint[]) AND {CATALOGED}",
                (array_literal(entered_or_left),),
            )
            moved = owners.fetchall()
        else:
            moved = []
    repairs = [Repair(path, True) for _, path in moved]
    for zoid, path in found:
        before, after = (revision.get("state") for revision in _revisions(entries, zoid))
        changed = settings(before) != settings(after) or _name(before) != _name(after)
        repairs.append(Repair(path, changed))
    return repairs


def _revisions(entries: dict, zoid: int) -> tuple[dict, dict]:
    entry = entries.get(zoid) or {}
    return entry.get("before") or {}, entry.get("after") or {}


def _name(state: Any) -> Any:
    """The id an object's state gives it (a rename changes it)."""
    return (state.get("id"), state.get("__name__")) if isinstance(state, dict) else None


HIDDEN = ("Manager",)
"""The security terms of a row an undo may have made stale, until it is
cataloged again: only who may see everything finds it."""


def hide(cur: Any, repairs: list[Repair]) -> None:
    """Hide the rows the *repairs* will catalog again in whole subtrees (an
    undone workflow change, sharing, move or rename), in the undo's own
    transaction: whether or not the repair after it succeeds, no other
    request reads their security as it was before the undo."""
    roots = [item.path for item in _outermost(repairs) if item.subtree]
    if not roots:
        return
    hidden = orjson.dumps(list(HIDDEN)).decode()
    new_idx = f"jsonb_set(idx, '{{{SECURITY_INDEX}}}', %(hidden)s::jsonb)"
    # the undo's tid is not in the log yet: any tid after the newest one
    # tells a concurrent commit that the rows changed (processor.check_concurrent)
    stamp = f"{STAMP_COLUMN} = (SELECT max(tid) + 1 FROM transaction_log)"
    for root in roots:
        cur.execute(
            f"UPDATE object_state SET idx = {new_idx}, {typed_sets(new_idx)}, {stamp} "
            "WHERE idx IS NOT NULL AND (path = %(root)s OR (path >= %(below)s AND path < %(after)s))",
            {"hidden": hidden, "root": root, "below": root + "/", "after": root + "0"},
        )


def schedule(txn: Any, repairs: list[Repair]) -> None:
    """Run :func:`repair` once *txn* (the undo) has committed."""
    # the database the undo runs on: ZODB's undo resource (and its
    # connections) joined the transaction with it
    db = next((r._db for r in txn._resources if isinstance(getattr(r, "_db", None), DB)), None)
    if db is None or not repairs:
        return
    txn.addAfterCommitHook(_after_commit, args=(db, repairs))


def _after_commit(committed: bool, db, repairs: list[Repair]) -> None:
    if not committed:
        return
    # The undo's transaction is still this thread's current one: the repair
    # gets a thread, and with it a transaction and a connection of its own.
    worker = threading.Thread(target=repair, args=(db, repairs), name="plone.pgcatalog undo repair")
    worker.start()
    worker.join()


def repair(db: Any, repairs: list[Repair]) -> None:
    """Catalog the *repairs* again from the objects as they are now."""
    for attempt in range(1, ATTEMPTS + 1):
        conn = db.open()
        try:
            app = makerequest(conn.root()["Application"])
            setRequest(app.REQUEST)
            for item in _outermost(repairs):
                _repair_path(app, item)
            transaction.commit()
            return
        except ConflictError:
            transaction.abort()
            if attempt == ATTEMPTS:
                logger.exception("plone.pgcatalog: the catalog could not be repaired after an undo")
        except Exception:
            transaction.abort()
            logger.exception("plone.pgcatalog: the catalog could not be repaired after an undo")
            return
        finally:
            setRequest(None)
            setSite(None)
            conn.close()


def _outermost(repairs: list[Repair]) -> list[Repair]:
    """Repairs in path order, without those inside a subtree repaired whole."""
    kept: list[Repair] = []
    for item in sorted(set(repairs), key=lambda r: (r.path, not r.subtree)):
        if any(r.subtree and item.path.startswith(r.path + "/") for r in kept):
            continue
        if kept and kept[-1].path == item.path:
            continue
        kept.append(item)
    return kept


def _catalog_of(app, path: str):
    """The plone.pgcatalog tool of the site *path* lies in, the site hook
    set to it; None for paths of other catalogs."""
    obj = app
    for name in path.strip("/").split("/"):
        found = obj.unrestrictedTraverse(name, None) if name else obj
        if found is None:
            break
        obj = found
    for item in aq_chain(obj):
        if ISite.providedBy(item):
            setSite(item)
            catalog = getattr(aq_base(item), "portal_catalog", None)
            if IPGCatalogTool.providedBy(catalog):
                return item.portal_catalog
            return None
    return None


def _repair_path(app, item: Repair) -> None:
    catalog = _catalog_of(app, item.path)
    if catalog is None:
        return
    obj = app.unrestrictedTraverse(item.path, None)
    if obj is None or not catalogable(obj) or "/".join(obj.getPhysicalPath()) != item.path:
        # gone from here (an undone add or move): so is what was below it
        _uncatalog_tree(catalog, item.path)
        return
    if item.subtree:
        catalog_tree(catalog, obj)
        return
    catalog.catalog_object(obj, item.path)
    _reconcile_children(catalog, obj, item.path)


def _reconcile_children(catalog, folder, path: str) -> None:
    """Catalog the children the undo brought back, uncatalog those it took away."""
    if not hasattr(aq_base(folder), "objectItems"):
        return
    present = {f"{path}/{name}": child for name, child in folder.objectItems() if catalogable(child)}
    cataloged = {
        row_path for (row_path,) in select(catalog, "path", f"parent_path = %s AND {CATALOGED}", [path])
    }
    for row_path in cataloged - present.keys():
        _uncatalog_tree(catalog, row_path)
    for child_path in present.keys() - cataloged:
        catalog_tree(catalog, present[child_path])


def _uncatalog_tree(catalog, path: str) -> None:
    rows = select(
        catalog, "path", f"{CATALOGED} AND (path = %s OR starts_with(path, %s))", [path, path + "/"]
    )
    for (row_path,) in rows:
        catalog.uncatalog_object(row_path)
