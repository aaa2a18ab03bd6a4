"""Stored security, right at every commit.

A row's ``allowedRolesAndUsers`` depends on its object's place and on the
settings of every container above it: local roles, their inheritance
block, permission settings (which a workflow transition changes).  Plone
keeps the catalog right by calling ``reindexObjectSecurity`` after each
such change; CMFCore's finds the rows to reindex with a search by path
that does not run the indexing queue, so after a move still waiting in
the queue it finds none of the moved rows, and the move's own reindex,
computed when the queue runs, may be older than a later change.  ZCatalog
gets away with it by cataloging every moved object in full at commit.

Here the subtrees whose security may have changed are collected through
the transaction, by object id, and checked from the objects as they are
then (:func:`secure`): before every search (so a search inside the
transaction sees what the commit will write) and in a before-commit hook,
after CMFCore's queue has run.  A subtree is noted when

- a folder moves or is renamed (:func:`note_subtree`, from
  :mod:`~plone.pgcatalog.moves`), and
- at commit, for every object the transaction changed whose local roles,
  inheritance block or permission settings differ from its committed
  state (:func:`changed_settings`): whether or not anything called
  ``reindexObjectSecurity``.  The hook is set by every catalog write and
  by every request's commit (``IPubBeforeCommit``, see
  :mod:`~plone.pgcatalog.subscribers`).

Checking a subtree computes each row's ``allowedRolesAndUsers`` and
queues a partial row where it differs from what the transaction would
store.
"""

from __future__ import annotations

from typing import Any

from Acquisition import aq_base
from Acquisition import aq_inner
from Acquisition import aq_parent
from collections.abc import Iterable
from plone.pgcatalog.connection import jar_of
from plone.pgcatalog.database import select
from plone.pgcatalog.extraction import catalog_row
from plone.pgcatalog.pending import changes_for
from plone.pgcatalog.pending import get_pending
from plone.pgcatalog.pending import Pending
from plone.pgcatalog.rebuild import content
from plone.pgcatalog.rebuild import zoid_of
from plone.pgcatalog.schema import CATALOGED
from plone.pgcatalog.values import array_literal
from Products.CMFCore.indexing import processQueue
from ZODB.utils import z64
from zope.component.hooks import getSite
from zope.component.hooks import setSite

import transaction


__all__ = ["SECURITY_INDEX", "changed_settings", "hook", "note_subtree", "secure", "settings"]

SECURITY_INDEX = "allowedRolesAndUsers"

_HOOKED = "plone.pgcatalog.security"


def settings(state: Any) -> dict:
    """The local roles, their block and the permission settings in an
    object's state (``__dict__``, or a state as the storage holds it)."""
    if not isinstance(state, dict):
        return {}
    return {
        key: value
        for key, value in state.items()
        if isinstance(key, str)
        and (key.startswith("__ac_local_roles") or (key.startswith("_") and key.endswith("_Permission")))
    }


def note_subtree(catalog: Any, obj: Any) -> None:
    """Check the security of *obj*'s subtree before the next search and at
    commit, wherever *obj* then is."""
    zoid = zoid_of(obj)
    if zoid is None:
        return
    pending = get_pending(create=True)
    pending.secured.add(zoid)
    hook(catalog)


def hook(catalog: Any) -> None:
    """Have :func:`secure` run for *catalog* when this transaction commits
    (every catalog write calls this: once hooked, it only looks it up)."""
    txn = transaction.get()
    hooked = _hooked(txn)
    key = id(aq_base(catalog))
    if key in hooked:
        return
    if aq_parent(aq_inner(catalog)) is None:
        # unwrapped (``getUtility(ICatalogTool)``): the current site's
        site = getSite()
        catalog = getattr(site, "portal_catalog", None) if site is not None else None
        if catalog is None or aq_parent(aq_inner(catalog)) is None:
            return
    if not hooked:
        txn.addBeforeCommitHook(_before_commit, (txn,))
    hooked[key] = catalog


def _hooked(txn: Any) -> dict:
    try:
        return txn.data(_HOOKED)
    except KeyError:
        found: dict = {}
        txn.set_data(_HOOKED, found)
        return found


def _before_commit(txn: Any) -> None:
    processQueue()  # what is queued goes in first: it may move rows
    for catalog in _hooked(txn).values():
        site = getSite()
        setSite(aq_parent(aq_inner(catalog)))
        try:
            secure(catalog, changed_settings(catalog))
        finally:
            setSite(site)


def changed_settings(catalog: Any) -> set[int]:
    """The ids of the content objects this transaction changed whose
    security settings differ from their committed state."""
    jar = jar_of(catalog)
    if jar is None:
        return set()
    found = set()
    for obj in list(jar._registered_objects):  # ZODB's list of changed objects
        oid = getattr(obj, "_p_oid", None)
        if oid is None or obj._p_serial == z64 or not callable(getattr(obj, "reindexObject", None)):
            continue  # new (cataloged at commit from what it is then), or no content
        data, _ = jar._storage.load(oid)
        if settings(jar._reader.getState(data)) != settings(obj.__dict__):
            found.add(int.from_bytes(oid, "big"))
    return found


def secure(catalog: Any, extra: Iterable[int] = (), searching: bool = False) -> int:
    """Check the security of every subtree noted in this transaction (and
    of those of *extra*): queue a partial row for each row whose
    ``allowedRolesAndUsers`` differs from the objects' own.  Returns how
    many rows were queued.

    Before a search (*searching*) made while a move is still telling the
    objects below the folder that they moved (a handler of the moved
    event searches), nothing is checked: their rows are only half in
    their new places, and a check now would have to be made again."""
    pending = get_pending()
    if searching and pending is not None and pending.moving:
        return 0
    zoids = set(extra) | (pending.secured if pending is not None else set())
    if not zoids:
        return 0
    if pending is not None:
        pending.secured.clear()
    rows = select(catalog, "path", f"zoid = ANY(%s::bigint[]) AND {CATALOGED}", [array_literal(zoids)])
    queued = 0
    for root in _outermost(path for (path,) in rows):
        queued += _secure_subtree(catalog, root)
    return queued


def _outermost(paths: Iterable[str]) -> list[str]:
    kept: list[str] = []
    for path in sorted(set(paths)):
        if not any(path == k or path.startswith(k + "/") for k in kept):
            kept.append(path)
    return kept


def _secure_subtree(catalog: Any, root: str) -> int:
    top = catalog.getPhysicalRoot().unrestrictedTraverse(root, None)
    if top is None or "/".join(top.getPhysicalPath()) != root:
        return 0
    stored = {
        zoid: (path, sorted(terms or ()))
        for zoid, path, terms in select(
            catalog,
            f"zoid, path, idx -> '{SECURITY_INDEX}'",
            f"{CATALOGED} AND (path = %s OR (path >= %s AND path < %s))",
            [root, root + "/", root + "0"],
        )
    }
    pending: Pending | None = None
    queued = 0
    for path, item in content(top):
        zoid = zoid_of(item)
        entry = stored.get(zoid)
        if entry is None or entry[0] != path:
            continue  # not cataloged here: nothing stored to be stale
        fresh = catalog_row(catalog, item, path, [SECURITY_INDEX], with_metadata=False)
        if sorted(fresh.idx.get(SECURITY_INDEX) or ()) != entry[1]:
            if pending is None:
                pending = changes_for(catalog)
            pending.catalog(zoid, fresh)
            queued += 1
    return queued
