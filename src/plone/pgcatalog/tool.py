"""``portal_catalog`` on PostgreSQL: the ZCatalog / CMFPlone API, thin.

The tool keeps only small plain data in ZODB (the index registry and the
metadata columns); every catalog row lives in ``object_state``.  Writing
delegates to :mod:`extraction` and :mod:`pending`, searching to
:mod:`query` and :mod:`results`.
"""

from __future__ import annotations

from AccessControl import ClassSecurityInfo
from AccessControl.class_init import InitializeClass
from AccessControl.Permissions import manage_zcatalog_entries as ManageZCatalogEntries
from AccessControl.Permissions import search_zcatalog as SearchZCatalog

from Acquisition import aq_base
from Acquisition import aq_inner
from Acquisition import aq_parent
from ComputedAttribute import ComputedAttribute
from DateTime import DateTime
from dataclasses import replace
from functools import partial
from OFS.Folder import Folder
from zExceptions import BadRequest
from plone.base.interfaces import IPloneCatalogTool
from plone.pgcatalog import registry as r
from plone.pgcatalog.connection import fetch
from plone.pgcatalog.connection import jar_of
from plone.pgcatalog.connection import storage_instance
from plone.pgcatalog.database import cataloged_rows
from plone.pgcatalog.database import load_metadata
from plone.pgcatalog.database import select
from plone.pgcatalog.database import site_path
from plone.pgcatalog.extraction import catalog_row
from plone.pgcatalog.indexes import CatalogInternals
from plone.pgcatalog.indexes import index_entries
from plone.pgcatalog.indexes import IndexesMapping
from plone.pgcatalog.interfaces import IPGCatalogTool
from plone.pgcatalog.facets import Facet
from plone.pgcatalog.facets import facet_counts
from plone.pgcatalog.lexicon import Lexicon
from plone.pgcatalog.lexicon import lexicons
from plone.pgcatalog.moves import move_queued
from plone.pgcatalog.moves import moved_row
from plone.pgcatalog.moves import moved_descendant
from plone.pgcatalog.overlay import has_changes
from plone.pgcatalog.pending import changes_for
from plone.pgcatalog.pending import get_pending
from plone.pgcatalog.errors import SchemaPrivilegeError
from plone.pgcatalog.privileges import owned_index_ddl
from plone.pgcatalog.processor import ensure_processor
from plone.pgcatalog.query import merge_query
from plone.pgcatalog.rebuild import catalog_tree
from plone.pgcatalog.rebuild import cataloged_objects
from plone.pgcatalog.rebuild import Progress
from plone.pgcatalog.schema import CATALOGED
from plone.pgcatalog import report
from plone.pgcatalog import zmi
from plone.pgcatalog.report import searching
from plone.pgcatalog.search import all_records
from plone.pgcatalog.security import hook as security_hook
from plone.pgcatalog.security import secure
from plone.pgcatalog.search import Catalog
from plone.pgcatalog.search import search
from plone.pgcatalog.suggestions import suggestions as text_suggestions
from plone.pgcatalog.values import decode_metadata
from plone.pgcatalog.values import is_rid
from plone.pgcatalog.verify import repair
from plone.pgcatalog.verify import verify
from Products.PageTemplates.PageTemplateFile import PageTemplateFile
from plone.pgcatalog.values import parsed_metadata
from Missing import MV
from Products.CMFCore.indexing import getQueue
from Products.CMFCore.indexing import processQueue
from Products.CMFCore.interfaces import ICatalogTool
from Products.CMFCore.utils import _getAuthenticatedUser
from Products.CMFCore.utils import UniqueObject
from Products.CMFCore.indexing import filterTemporaryItems
from Products.CMFPlone.CatalogTool import CatalogTool
from Products.ZCatalog.interfaces import IZCatalog
from Products.ZCatalog.ZCatalog import CatalogError
from Products.ZCTextIndex.ZCTextIndex import PLexicon
from zope.interface import implementer

from urllib.parse import quote
from ZPublisher import zpublish
from ZPublisher import zpublish_wrap

import logging
import time


__all__ = ["PGCatalogTool"]


logger = logging.getLogger("plone.pgcatalog")


@implementer(IPGCatalogTool, IPloneCatalogTool, ICatalogTool, IZCatalog)
class PGCatalogTool(UniqueObject, Folder):
    """Plone's catalog, with its data in PostgreSQL."""

    id = "portal_catalog"
    meta_type = "Plone PostgreSQL Catalog Tool"
    title = "Indexes all content in the site (PostgreSQL)"
    security = ClassSecurityInfo()

    _pgc_indexes: tuple = ()  # IndexDef.to_data() dicts, in definition order
    _pgc_columns: tuple = ()
    _pgc_complete = True  # False while an install catalogs the content in batches
    _pgc_expected: int | None = None  # how many items that install expects
    _pgc_typed = False  # searches read the hot keys' typed columns (schema version 3)

    # ZCatalog's management tabs (see plone.pgcatalog.zmi)
    manage_options = (
        Folder.manage_options[0],
        {"label": "Catalog", "action": "manage_catalogView"},
        {"label": "Indexes", "action": "manage_catalogIndexes"},
        {"label": "Metadata", "action": "manage_catalogSchema"},
        {"label": "Advanced", "action": "manage_catalogAdvanced"},
        {"label": "Query Report", "action": "manage_catalogReport"},
        *Folder.manage_options[1:],
    )
    def _canCopy(self, op: int = 0) -> bool:
        # OFS asks before a copy, cut or rename (and ZCatalog's tool says
        # yes): the catalog's data are columns of the site's rows, which a
        # second tool could only share, so it refuses, and says why (a
        # bad request: 400, where WebDAV's COPY would answer 405)
        raise BadRequest(
            "portal_catalog cannot be copied, moved or renamed: plone.pgcatalog keeps the catalog "
            "in the rows of the site's objects in PostgreSQL, and a copy would be a second catalog "
            "of the same rows"
        )

    security.declareProtected(ManageZCatalogEntries, "manage_catalogAdvanced")
    manage_catalogAdvanced = PageTemplateFile("www/catalogAdvanced.pt", globals())
    _catalogView = PageTemplateFile("www/catalogView.pt", globals())
    _catalogRecord = PageTemplateFile("www/catalogRecord.pt", globals())
    _catalogIndexes = PageTemplateFile("www/catalogIndexes.pt", globals())
    _catalogSchema = PageTemplateFile("www/catalogSchema.pt", globals())
    _catalogReport = PageTemplateFile("www/catalogReport.pt", globals())

    @security.protected(ManageZCatalogEntries)
    def manage_catalogView(self, REQUEST=None, path: str = ""):
        """The Catalog tab: records, by path."""
        return self._catalogView(**zmi.records(self, path if isinstance(path, str) else ""))

    @security.protected(ManageZCatalogEntries)
    def manage_objectInformation(self, rid, REQUEST=None):
        """One record: its index entries and metadata."""
        path = self.getpath(rid)
        indexes = sorted(self.getIndexDataForRID(rid).items())
        metadata = sorted(self.getMetadataForRID(rid).items())
        return self._catalogRecord(rid=rid, path=path, indexes=indexes, metadata=metadata)

    @security.protected(ManageZCatalogEntries)
    def manage_catalogIndexes(self, REQUEST=None):
        """The Indexes tab."""
        return self._catalogIndexes(rows=zmi.index_rows(self))

    @security.protected(ManageZCatalogEntries)
    def manage_catalogSchema(self, REQUEST=None):
        """The Metadata tab."""
        return self._catalogSchema(columns=self.schema())

    @security.protected(ManageZCatalogEntries)
    def manage_catalogReport(self, REQUEST=None, explain: int | None = None):
        """The Query Report tab: the slowest searches, one with its plan."""
        found = report.entries()
        rows = [
            {
                "key": e.key,
                "count": e.count,
                "mean": f"{e.mean * 1000:.1f}",
                "slowest": f"{e.slowest * 1000:.1f}",
            }
            for e in found
        ]
        plan = planned = ""
        try:
            position = int(explain)
        except (TypeError, ValueError):
            position = -1
        if 0 <= position < len(found):
            plan, planned = report.explain(self, found[position]), found[position].key
        return self._catalogReport(entries=rows, keep=report.KEEP, plan=plan, planned=planned)

    # -- registry ----------------------------------------------------------------

    @security.protected(SearchZCatalog)
    @zpublish(False)
    def indexes(self) -> list[str]:
        return list(r.index_defs(self))

    @security.protected(SearchZCatalog)
    @zpublish(False)
    def schema(self) -> list[str]:
        return list(self._pgc_columns)

    def _setOb(self, id, object):
        # GenericSetup adds a lexicon named in catalog.xml as a PLexicon:
        # keep its pipeline, not its vocabulary BTrees
        if isinstance(object, PLexicon):
            object = Lexicon.like(object)
        super()._setOb(id, object)

    @security.protected(ManageZCatalogEntries)
    def addIndex(self, name, type, extra=None):
        """Register an index; its SQL index is built at commit."""
        if not isinstance(name, str) or not name:
            raise CatalogError("The index name must be a non-empty string")
        if name in r.index_defs(self):
            raise CatalogError(f"The index {name!r} already exists")
        meta_type = getattr(type, "meta_type", type)
        try:
            index = r.index_def_from_extra(name, meta_type, extra)
        except ValueError as exc:
            logger.error("%s", exc)
            raise CatalogError(str(exc)) from exc
        ddl = owned_index_ddl(self, index, f"Adding the index {name!r}")
        r.set_index_defs(self, [*r.index_defs(self).values(), index])
        changes_for(self).ddl.extend(ddl)

    manage_addIndex = addIndex

    @security.protected(ManageZCatalogEntries)
    def delIndex(self, name):
        defs = r.index_defs(self)
        unserved = r.unserved(self)
        if name in unserved:
            del unserved[name]
            r.set_unserved(self, unserved)
            return
        if name not in defs:
            raise CatalogError(f"The index {name!r} does not exist")
        r.set_index_defs(self, [d for n, d in defs.items() if n != name])

    @security.protected(ManageZCatalogEntries)
    def manage_delIndex(self, ids=None, REQUEST=None, RESPONSE=None, URL1=None):
        for name in [ids] if isinstance(ids, str) else ids or ():
            self.delIndex(name)

    @security.protected(ManageZCatalogEntries)
    def reindexIndex(self, name, REQUEST=None, pghandler=None):
        """Recompute one index (or a list of them) for every cataloged object."""
        names = [name] if isinstance(name, str) else list(name)
        defs = r.index_defs(self)
        for each in names:
            if each not in defs:
                raise CatalogError(f"The index {each!r} does not exist")
        rows = list(cataloged_rows(self))
        progress = Progress(f"reindexIndex {', '.join(names)}", len(rows))
        for path, obj in cataloged_objects(self, rows):
            self.catalog_object(obj, path, idxs=names, update_metadata=0)
            progress.step()
        progress.log(final=True)

    @security.protected(ManageZCatalogEntries)
    def manage_reindexIndex(self, ids=None, REQUEST=None, RESPONSE=None, URL1=None):
        """ZCatalog's form handler: reindex the named indexes."""
        self.reindexIndex([ids] if isinstance(ids, str) else list(ids or ()), REQUEST)

    @security.protected(ManageZCatalogEntries)
    def addColumn(self, name, default_value=None):
        if name in self._pgc_columns:
            raise CatalogError(f"The column {name!r} already exists")
        self._pgc_columns = (*self._pgc_columns, name)

    manage_addColumn = addColumn

    @security.protected(ManageZCatalogEntries)
    def delColumn(self, name):
        if name not in self._pgc_columns:
            raise CatalogError(f"The column {name!r} does not exist")
        self._pgc_columns = tuple(c for c in self._pgc_columns if c != name)

    # -- writing ------------------------------------------------------------------

    def _oid_of(self, obj) -> int | None:
        """The object's zoid, assigning an OID to a new object now (its
        OID would otherwise only exist after the before-commit hooks)."""
        base = aq_base(obj)
        if getattr(base, "_p_oid", None) is None:
            jar = jar_of(obj)
            if jar is None or not hasattr(base, "_p_jar"):
                return None
            jar.add(base)
        return int.from_bytes(base._p_oid, "big")

    @security.protected(ManageZCatalogEntries)
    def catalog_object(self, object, uid=None, idxs=None, update_metadata=1, pghandler=None):
        """Extract *object*'s row and queue it for this transaction's commit."""
        obj = object
        if uid is None:
            uid = "/".join(obj.getPhysicalPath())
        elif not isinstance(uid, str):
            raise CatalogError(f"The object unique id must be a string: {uid!r}")
        instance = storage_instance(self)
        if instance is not None:
            ensure_processor(instance)
        zoid = self._oid_of(obj)
        if zoid is None:
            logger.warning("Not cataloging %s: it is not a persistent object", uid)
            return
        defs = r.index_defs(self)
        for name in idxs or ():
            if name not in defs:
                raise KeyError(name)  # as ZCatalog's getIndex
        # ZCatalog refreshes metadata unless the caller declines it; a record
        # new to the catalog always gets its metadata.  A full row carries
        # its metadata (a partial one leaves the stored metadata alone).
        full = not idxs
        kept = self._kept_metadata(zoid, uid) if full and not update_metadata else None
        with_metadata = bool(update_metadata) or (full and kept is None)
        row = catalog_row(self, obj, uid, idxs or None, with_metadata)
        self._decide_value_types(defs, row.idx)
        if kept is not None:
            row = replace(row, meta=kept)
        changes_for(self).catalog(zoid, row)
        security_hook(self)

    def _decide_value_types(self, defs: dict[str, r.IndexDef], values: dict) -> None:
        """Indexes added empty learn what they hold from their first value
        (see ``registry.decide_value_type``); their SQL indexes are built at
        commit, where the site's role owns the tables."""
        decided = {}
        for name, index in defs.items():
            if not index.decided and values.get(name) is not None:
                found = r.decide_value_type(index, values[name])
                if found is not None:
                    decided[name] = found
        if not decided:
            return
        r.set_index_defs(self, [decided.get(name, index) for name, index in defs.items()])
        try:
            for index in decided.values():
                changes_for(self).ddl.extend(owned_index_ddl(self, index, f"Indexing {index.name!r}"))
        except SchemaPrivilegeError:
            logger.warning(
                "plone.pgcatalog: no SQL index for %s until the tables' owner imports the profile again",
                ", ".join(decided),
            )

    def _kept_metadata(self, zoid: int, uid: str) -> dict | None:
        """The metadata this transaction sees for *zoid* cataloged under
        *uid*; None when the record is new to the catalog."""
        if not select(self, "1", f"zoid = %s AND path = %s AND {CATALOGED}", [zoid, uid]):
            return None
        return parsed_metadata(load_metadata(self, [zoid]).get(zoid) or {})

    @security.protected(ManageZCatalogEntries)
    def uncatalog_object(self, uid):
        changes_for(self).uncatalog(uid)
        security_hook(self)

    @security.private
    def indexObject(self, object, idxs=None):
        """CMFPlone's: a full reindex, which marks the object modified; an
        object below a folder that just moved only has what the move
        changes reindexed (see :mod:`plone.pgcatalog.moves`)."""
        plan = None if idxs else moved_descendant(object)
        if plan is None:
            self.reindexObject(object, idxs or [])
            return
        if hasattr(aq_base(object), "notifyModified"):
            object.notifyModified()
        self.reindexObject(object, list(plan.idxs))

    @security.private
    def unindexObject(self, object):
        obj = filterTemporaryItems(object, checkId=False)
        if obj is not None:
            getQueue().unindex(obj)

    @security.private
    def reindexObject(self, object, idxs=[], update_metadata=1, uid=None):
        if idxs in (None, []) and hasattr(aq_base(object), "notifyModified"):
            object.notifyModified()
        obj = filterTemporaryItems(object)
        if obj is not None:
            getQueue().reindex(obj, idxs, update_metadata=update_metadata)

    @security.private
    def _indexObject(self, object):
        self.catalog_object(object, "/".join(object.getPhysicalPath()))

    @security.private
    def _unindexObject(self, object):
        self.uncatalog_object("/".join(object.getPhysicalPath()))

    @security.private
    def _reindexObject(self, object, idxs=[], update_metadata=1, uid=None):
        if uid is None:
            uid = "/".join(object.getPhysicalPath())
        plan = move_queued(object)
        if plan is not None:
            if set(idxs or ()) == set(plan.idxs) and update_metadata:
                changes_for(self).catalog(self._oid_of(object), moved_row(self, object, uid, plan))
                return
            # CMFCore merged the move's reindex with another one: ZCatalog
            # then catalogs the object in full (the move queued a full one)
            idxs, update_metadata = [], 1
        if idxs:
            # CMFCore: names that are no index go; none left means every index
            idxs = [name for name in idxs if name in r.index_defs(self)]
        self.catalog_object(object, uid, idxs, update_metadata)

    @security.protected(ManageZCatalogEntries)
    def manage_catalogClear(self, REQUEST=None, RESPONSE=None, URL1=None):
        """Empty the catalog (at commit, in the same transaction)."""
        changes_for(self).clear(site_path(self))
        _redirect(RESPONSE, URL1, "Catalog cleared")

    @security.protected(ManageZCatalogEntries)
    def manage_catalogReindex(self, REQUEST=None, RESPONSE=None, URL1=None):
        """ZCatalog's "Update Catalog": every cataloged object again."""
        self.refreshCatalog(clear=1)
        _redirect(RESPONSE, URL1, "Catalog updated")

    @security.protected(ManageZCatalogEntries)
    def manage_catalogVerify(self, REQUEST=None):
        """The Advanced tab with a report of :func:`plone.pgcatalog.verify.verify`."""
        return self.manage_catalogAdvanced(report=verify(self).summary())

    @security.protected(ManageZCatalogEntries)
    def manage_catalogRepair(self, REQUEST=None, RESPONSE=None, URL1=None):
        """Verify and repair (:func:`plone.pgcatalog.verify.repair`)."""
        counts = repair(self).counts()
        fixed = ", ".join(f"{counts[kind]} {kind}" for kind in ("missing", "orphaned", "misplaced", "stale"))
        _redirect(RESPONSE, URL1, f"Catalog repaired: {fixed}")

    @security.protected(ManageZCatalogEntries)
    def manage_catalogRebuild(self, RESPONSE=None, URL1=None):
        """CMFPlone's "Clear and Rebuild": :meth:`clearFindAndRebuild`, timed."""
        started, cpu = time.time(), time.process_time()
        self.clearFindAndRebuild()
        message = (
            f"Catalog Rebuilt\nTotal time: {time.time() - started}\n"
            f"Total CPU time: {time.process_time() - cpu}"
        )
        logger.info(message)
        _redirect(RESPONSE, URL1, message)

    @security.protected(ManageZCatalogEntries)
    def clearFindAndRebuild(self):
        """Empty the catalog, then catalog the site root and all content."""
        progress = Progress("clearFindAndRebuild", len(self))
        self.manage_catalogClear()
        # every index and the metadata: full rows (which the commit writes
        # once, not after clearing them)
        catalog_tree(self, aq_parent(aq_inner(self)), progress)
        progress.log(final=True)

    @security.protected(ManageZCatalogEntries)
    def refreshCatalog(self, clear=0, pghandler=None):
        rows = list(cataloged_rows(self))
        progress = Progress("refreshCatalog", len(rows))
        if clear:
            self.manage_catalogClear()
        for path, obj in cataloged_objects(self, rows):
            self.catalog_object(obj, path)
            progress.step()
        progress.log(final=True)

    # -- reading ------------------------------------------------------------------

    # ZCatalog's search API is for Python callers.  Its methods are never
    # published (``zpublish(False)``), as stock ZCatalog and CMFPlone keep
    # them off the web: Anonymous holds "Search ZCatalog", and a docstring
    # alone would make each a URL handing out index data, metadata or paths
    # past the security filter (docs/reference.md, "What the catalog
    # publishes").

    def _process_queue(self) -> None:
        """CMFCore's indexing queue, then the subtrees whose security this
        transaction may have changed (see :mod:`plone.pgcatalog.security`):
        what a search reads is what the commit will write."""
        processQueue()
        secure(self, searching=True)

    def _search(self, query: dict):
        """ZCatalog's search over a merged query dict (see :mod:`plone.pgcatalog.search`)."""
        return searching(query, partial(search, self._as_searched()))

    def _as_searched(self) -> Catalog:
        path = self.getPhysicalPath()
        return Catalog(
            self,
            path,
            r.index_defs(self),
            tuple(self._pgc_columns),
            partial(lexicons, self),
            site_path(self, path),
        )

    # CMFPlone's own: the user's roles and groups, and who sees inactive content
    _listAllowedRolesAndUsers = CatalogTool._listAllowedRolesAndUsers
    security.declarePrivate("allow_inactive")
    allow_inactive = CatalogTool.allow_inactive
    # RoleManager's has a docstring (a URL); ZCatalog's has none
    valid_roles = zpublish_wrap(Folder.valid_roles, publish=False)

    @security.protected(SearchZCatalog)
    @zpublish(False)
    def searchResults(self, query=None, **kw):
        """Search as the current user: Plone's security terms always apply."""
        self._process_queue()
        return self._search(self._as_user(query, kw))

    @security.protected(SearchZCatalog)
    @zpublish(False)
    def facetCounts(self, facets, query=None, **kw) -> dict[str, Facet]:
        """Per value of each index in *facets*, the matches of the query
        (as ``searchResults`` takes it, security terms included) with that
        index's own criterion left out (see :mod:`plone.pgcatalog.facets`)."""
        self._process_queue()
        return facet_counts(self._as_searched(), self._as_user(query, kw), facets)

    @security.protected(SearchZCatalog)
    @zpublish(False)
    def suggestions(self, query=None, limit: int = 5, **kw) -> list[str]:
        """ "Did you mean": up to *limit* other texts for the query's text
        (as ``searchResults`` takes the query), whose words items the user
        may see hold (see :mod:`plone.pgcatalog.suggestions`)."""
        self._process_queue()
        return text_suggestions(self._as_searched(), self._as_user(query, kw), limit)

    def _as_user(self, query, kw: dict) -> dict:
        """The query of ``searchResults(query, **kw)``, merged, with the
        current user's security terms."""
        kw = kw.copy()
        show_inactive = kw.get("show_inactive")
        if show_inactive is None and isinstance(query, dict):
            show_inactive = query.get("show_inactive")
        if show_inactive is None:
            show_inactive = self.allow_inactive(kw)
        sort_on = kw.get("sort_on") or []
        if isinstance(sort_on, str):
            sort_on = [sort_on]
        valid = r.index_defs(self)
        try:
            sort_on = [name for name in sort_on if name in valid]
        except TypeError:
            sort_on = []
        if sort_on:
            kw["sort_on"] = sort_on
        else:
            kw.pop("sort_on", None)
        return self._secured(merge_query(query, **kw), not show_inactive)

    def _secured(self, query: dict, active_only: bool) -> dict:
        """*query* limited to what the current user may see (and to active
        content if *active_only*).  The caller's own keys for these indexes
        go, options too: stock Plone lets ``allowedRolesAndUsers_range``
        or ``_operator`` change its security term; here nothing can."""
        names, flat = _SECURITY_KEYS if active_only else _ROLES_KEYS
        query = {
            key: value
            for key, value in query.items()
            if not (isinstance(key, str) and (key in names or key.startswith(flat)))
        }
        user = _getAuthenticatedUser(self)
        query["allowedRolesAndUsers"] = {"query": self._listAllowedRolesAndUsers(user)}
        if active_only:
            query["effectiveRange"] = {"query": this_minute()}
        return query

    __call__ = searchResults

    @security.private
    def unrestrictedSearchResults(self, REQUEST=None, **kw):
        self._process_queue()
        return self._search(merge_query(REQUEST, **kw))

    @security.private
    def _unrestrictedSearchResults(self, REQUEST=None, **kw):
        return self._search(merge_query(REQUEST, **kw))

    @security.protected(SearchZCatalog)
    @zpublish(False)
    def search(self, query_request, sort_index=None, reverse=0, limit=None, merge=1):
        self._process_queue()
        query = dict(query_request)
        query = self._secured(query, not self.allow_inactive(query))
        if sort_index is not None:
            query["sort_on"] = getattr(sort_index, "getId", lambda: sort_index)()
            query["sort_order"] = "reverse" if reverse else ""
        if limit is not None:
            query["sort_limit"] = limit
        return self._search(query)

    @security.private
    def getCounter(self) -> int:
        self._process_queue()
        counter = fetch(self, "SELECT value FROM pgcatalog_counter WHERE id = 1", [], guarded=False)[0][0]
        # the commit bumps the counter once for this transaction's changes
        return counter + 1 if has_changes(get_pending()) else counter

    @security.protected(SearchZCatalog)
    @zpublish(False)
    def getpath(self, rid) -> str:
        rows = select(self, "path", f"zoid = %s AND {CATALOGED}", [rid]) if is_rid(rid) else []
        if not rows:
            raise KeyError(rid)
        return rows[0][0]

    @security.protected(SearchZCatalog)
    @zpublish(False)
    def getrid(self, path, default=None):
        if not isinstance(path, str) or "\x00" in path:
            return default
        rows = select(self, "zoid", f"path = %s AND {CATALOGED}", [path])
        return rows[0][0] if rows else default

    @security.protected(SearchZCatalog)
    @zpublish(False)
    def getIndexDataForRID(self, rid) -> dict:
        """Every index's entry for a record (plone.app.event reads the
        occurrences of events from ``start`` and ``end`` here)."""
        entries = index_entries(self, rid) or {}
        return {name: entries.get(name, "") for name in r.index_defs(self)}

    @security.protected(SearchZCatalog)
    @zpublish(False)
    def getMetadataForRID(self, rid) -> dict:
        """Every metadata column of a record (Missing.Value where unset)."""
        meta = parsed_metadata(load_metadata(self, [int(rid)]).get(int(rid), {}))
        return {name: decode_metadata(meta[name]) if name in meta else MV for name in self._pgc_columns}

    @security.protected(SearchZCatalog)
    @zpublish(False)
    def getAllBrains(self):
        """Every cataloged record, in record id order, unfiltered."""
        yield from self.searchAll()

    @security.protected(SearchZCatalog)
    @zpublish(False)
    def searchAll(self):
        """ZCatalog's search for all documents: no security, no filters."""
        return all_records(self._as_searched())

    @security.protected(SearchZCatalog)
    @zpublish(False)
    def getobject(self, rid, REQUEST=None):
        return self.unrestrictedTraverse(self.getpath(rid))

    @security.protected(SearchZCatalog)
    @zpublish(False)
    def uniqueValuesFor(self, name) -> tuple:
        """The distinct values of an index, as its kind lists them on
        ZCatalog (``KeyError`` for an unknown index)."""
        return tuple(self.Indexes[name].uniqueValues())

    @security.protected(ManageZCatalogEntries)
    @zpublish(False)
    def getIndexObjects(self) -> list:
        """Every index object (GenericSetup's ``catalog.xml`` export)."""
        return list(self.Indexes.values())

    # computed on the acquisition wrapper: the views read this site's rows
    Indexes = ComputedAttribute(IndexesMapping, 1)
    _catalog = ComputedAttribute(CatalogInternals, 1)

    def __len__(self):
        return select(self, "count(*)", CATALOGED, [])[0][0]

    def __bool__(self):
        return True


InitializeClass(PGCatalogTool)


# the security indexes a query may not name: as keys, and as the prefix of
# a flat ``<index>_<option>`` key (``allowedRolesAndUsers_operator``)
_SECURITY_KEYS = (r.SECURITY_INDEXES, tuple(f"{name}_" for name in r.SECURITY_INDEXES))
_ROLES_KEYS = (r.SECURITY_INDEXES[:1], (f"{r.SECURITY_INDEXES[0]}_",))


_minute: tuple[int, DateTime | None] = (-1, None)


def this_minute() -> DateTime:
    """Now, to the minute: what an effective range compares (DateRangeIndex
    counts in minutes).  One object serves a minute's searches: making a
    ``DateTime()`` costs more than the rest of the security terms."""
    global _minute
    minute = int(time.time() // 60)
    if _minute[0] != minute:
        _minute = (minute, DateTime(minute * 60))
    return _minute[1]


def _redirect(response, url: str | None, message: str) -> None:
    """Back to the catalog's ZMI page with *message*, as ZCatalog's forms do."""
    if response is not None and url:
        response.redirect(f"{url}/manage_catalogAdvanced?manage_tabs_message={quote(message)}")
