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
from DateTime import DateTime
from functools import partial
from OFS.Folder import Folder
from plone.base.interfaces import IPloneCatalogTool
from plone.indexer.interfaces import IIndexableObject
from plone.pgcatalog import registry as r
from plone.pgcatalog.connection import jar_of
from plone.pgcatalog.connection import fetch
from plone.pgcatalog.connection import storage_instance
from plone.pgcatalog.extraction import extract
from plone.pgcatalog.indexes import CatalogInternals
from plone.pgcatalog.indexes import index_entry
from plone.pgcatalog.indexes import IndexesMapping
from plone.pgcatalog.lexicon import Lexicon
from plone.pgcatalog.lexicon import META_TYPE as LEXICON_META_TYPE
from plone.pgcatalog.overlay import catalog_sql
from plone.pgcatalog.overlay import has_changes
from plone.pgcatalog.overlay import pending_metadata
from plone.pgcatalog.pending import changes_for
from plone.pgcatalog.pending import get_pending
from plone.pgcatalog.positions import refresh_positions
from plone.pgcatalog.processor import CatalogStateProcessor
from plone.pgcatalog.relevance import ranked_sql
from plone.pgcatalog.query import add_sort
from plone.pgcatalog.query import build
from plone.pgcatalog.query import merge_query
from plone.pgcatalog.query import canonical
from plone.pgcatalog.query import Fault
from plone.pgcatalog.query import sort_spec
from plone.pgcatalog.query import top_sql
from plone.pgcatalog.rebuild import cataloged_objects
from plone.pgcatalog.rebuild import catalog_tree
from plone.pgcatalog.results import CatalogResults
from plone.pgcatalog.results import MAX_PAGE
from plone.pgcatalog.results import MIN_ROWS
from plone.pgcatalog.schema import CATALOGED
from plone.pgcatalog.schema import ROWS
from plone.pgcatalog.schema import index_ddl
from plone.pgcatalog.interfaces import IPGCatalogTool
from plone.pgcatalog.values import array_literal
from plone.pgcatalog.values import decode_metadata
from plone.pgcatalog.values import parsed_metadata
from Missing import MV
from Products.CMFCore.indexing import getQueue
from Products.CMFCore.indexing import processQueue
from Products.CMFCore.interfaces import ICatalogTool
from Products.CMFCore.permissions import AccessInactivePortalContent
from Products.CMFCore.utils import _checkPermission
from Products.CMFCore.utils import _getAuthenticatedUser
from Products.CMFCore.utils import UniqueObject
from Products.CMFCore.indexing import filterTemporaryItems
from Products.ZCatalog.interfaces import IZCatalog
from Products.ZCatalog.ZCatalog import CatalogError
from Products.ZCTextIndex.ZCTextIndex import PLexicon
from zExceptions import Unauthorized
from zope.component import queryMultiAdapter
from zope.component.hooks import getSite
from zope.interface import implementer
from ZTUtils.Lazy import LazyCat

from urllib.parse import quote

import logging
import time


logger = logging.getLogger("plone.pgcatalog")


def ensure_processor(instance) -> None:
    """Register the catalog's state processor on the storage, once."""
    main = getattr(instance, "_main", instance)
    if getattr(main, "_pgcatalog_processor", None) is None:
        processor = CatalogStateProcessor()
        main.register_state_processor(processor)
        main._pgcatalog_processor = processor


@implementer(IPGCatalogTool, IPloneCatalogTool, ICatalogTool, IZCatalog)
class PGCatalogTool(UniqueObject, Folder):
    """Plone's catalog, with its data in PostgreSQL."""

    id = "portal_catalog"
    meta_type = "Plone PostgreSQL Catalog Tool"
    title = "Indexes all content in the site (PostgreSQL)"
    security = ClassSecurityInfo()

    _pgc_indexes: tuple = ()  # IndexDef.to_data() dicts, in definition order
    _pgc_columns: tuple = ()

    # -- registry ----------------------------------------------------------------

    def _index_defs(self) -> dict[str, r.IndexDef]:
        cached = self.__dict__.get("_v_index_defs")
        if cached is not None and cached[0] is self._pgc_indexes:
            return cached[1]
        defs = {data["name"]: r.IndexDef.from_data(data) for data in self._pgc_indexes}
        self._v_index_defs = (self._pgc_indexes, defs)
        return defs

    def _set_index_defs(self, defs) -> None:
        self._pgc_indexes = tuple(d.to_data() for d in defs)

    @security.protected(SearchZCatalog)
    def indexes(self) -> list[str]:
        return list(self._index_defs())

    @security.protected(SearchZCatalog)
    def schema(self) -> list[str]:
        return list(self._pgc_columns)

    def _lexicons(self) -> dict[str, Lexicon]:
        """The ZCTextIndex lexicons by id (a ``PLexicon`` left by an older
        release read as ours)."""
        return {
            obj.getId(): obj if isinstance(obj, Lexicon) else Lexicon.like(obj)
            for obj in self.objectValues()
            if getattr(obj, "meta_type", None) == LEXICON_META_TYPE
        }

    def _pipelines(self) -> dict:
        return {name: lexicon.process for name, lexicon in self._lexicons().items()}

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
        if name in self._index_defs():
            raise CatalogError(f"The index {name!r} already exists")
        meta_type = getattr(type, "meta_type", type)
        try:
            index = r.index_def_from_extra(name, meta_type, extra)
        except ValueError as exc:
            logger.error("%s", exc)
            raise CatalogError(str(exc)) from exc
        self._set_index_defs([*self._index_defs().values(), index])
        changes_for(self).ddl.extend(index_ddl(index))

    manage_addIndex = addIndex

    @security.protected(ManageZCatalogEntries)
    def delIndex(self, name):
        defs = self._index_defs()
        if name not in defs:
            raise CatalogError(f"The index {name!r} does not exist")
        self._set_index_defs([d for n, d in defs.items() if n != name])

    @security.protected(ManageZCatalogEntries)
    def manage_delIndex(self, ids=None, REQUEST=None, RESPONSE=None, URL1=None):
        for name in [ids] if isinstance(ids, str) else ids or ():
            self.delIndex(name)

    def _reconfigure_index(self, index: r.IndexDef) -> None:
        """Replace an index's definition (``catalog.xml`` settings).  When it
        changed, its values are dropped (searches in this transaction no
        longer see them; the rows lose them at commit), as ZCatalog clears
        the index: ``reindexIndex`` fills it again."""
        defs = self._index_defs()
        old = defs[index.name]
        if old == index and old.options == index.options:
            return
        self._set_index_defs([index if d.name == index.name else d for d in defs.values()])
        pending = changes_for(self)
        pending.ddl.extend(index_ddl(index))
        pending.clear_index(index.name, index.column)

    @security.protected(ManageZCatalogEntries)
    def reindexIndex(self, name, REQUEST=None, pghandler=None):
        """Recompute one index (or a list of them) for every cataloged object."""
        names = [name] if isinstance(name, str) else list(name)
        defs = self._index_defs()
        for each in names:
            if each not in defs:
                raise CatalogError(f"The index {each!r} does not exist")
        rows = self._cataloged_rows()
        for path, obj in cataloged_objects(self, rows):
            self.catalog_object(obj, path, idxs=names, update_metadata=0)

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
        wrapper = obj
        if not IIndexableObject.providedBy(obj):
            wrapper = queryMultiAdapter((obj, self), IIndexableObject) or obj
        defs = self._index_defs()
        for name in idxs or ():
            if name not in defs:
                raise KeyError(name)  # as ZCatalog's getIndex
        # ZCatalog refreshes metadata unless the caller declines it; a record
        # new to the catalog always gets its metadata.  A full row carries
        # its metadata (a partial one leaves the stored metadata alone).
        full = not idxs
        kept = self._kept_metadata(zoid, uid) if full and not update_metadata else None
        with_metadata = bool(update_metadata) or (full and kept is None)
        row = extract(
            wrapper, uid, defs.values(), self._pgc_columns, self._pipelines(), idxs or None, with_metadata
        )
        if kept is not None:
            row["meta"] = kept
        changes_for(self).catalog(zoid, row)

    def _kept_metadata(self, zoid: int, uid: str) -> dict | None:
        """The metadata this transaction sees for *zoid* cataloged under
        *uid*; None when the record is new to the catalog."""
        if not self._select("1", f"zoid = %s AND path = %s AND {CATALOGED}", [zoid, uid]):
            return None
        return parsed_metadata(self._load_metadata([zoid]).get(zoid) or {})

    @security.protected(ManageZCatalogEntries)
    def uncatalog_object(self, uid):
        changes_for(self).uncatalog(uid)

    @security.private
    def indexObject(self, object, idxs=None):
        self.reindexObject(object, idxs or [])

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
        if idxs:
            # CMFCore: names that are no index go; none left means every index
            idxs = [name for name in idxs if name in self._index_defs()]
        self.catalog_object(object, uid, idxs, update_metadata)

    @security.protected(ManageZCatalogEntries)
    def manage_catalogClear(self, REQUEST=None, RESPONSE=None, URL1=None):
        """Empty the catalog (at commit, in the same transaction)."""
        changes_for(self).clear()
        _redirect(RESPONSE, URL1, "Catalog cleared")

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
        self.manage_catalogClear()
        # every index and the metadata: full rows (which the commit writes
        # once, not after clearing them)
        catalog_tree(self, aq_parent(aq_inner(self)))

    @security.protected(ManageZCatalogEntries)
    def refreshCatalog(self, clear=0, pghandler=None):
        rows = self._cataloged_rows()
        if clear:
            self.manage_catalogClear()
        for path, obj in cataloged_objects(self, rows):
            self.catalog_object(obj, path)

    # -- reading ------------------------------------------------------------------

    def _fetch(self, sql: str, params, **options) -> list[tuple]:
        """Every catalog read goes through here (see ``connection.fetch``
        for the *options*)."""
        return fetch(self, sql, params, **options)

    def _read(self, sql: str, params, **options) -> list[tuple]:
        """Rows of *sql*, which reads the catalog rows as ``ROWS``: the
        catalog as this transaction sees it, its pending changes included."""
        pending = get_pending()
        if pending is not None and pending.reordered:
            refresh_positions(self)  # folders reordered since: positions first
        sql, head = catalog_sql(sql, pending)
        return self._fetch(sql, [*head, *params], **options)

    def _select(self, columns: str, where: str, params) -> list[tuple]:
        """``SELECT columns FROM <catalog rows> WHERE where`` (see :meth:`_read`)."""
        return self._read(f"SELECT {columns} FROM {ROWS} WHERE {where}", params)

    def _cataloged_rows(self) -> list[tuple[int, str]]:
        """``(zoid, path)`` of every catalog row, in path order."""
        return self._select("zoid, path", f"{CATALOGED} ORDER BY path", [])

    def _load_metadata(self, zoids: list[int]) -> dict:
        """``{zoid: metadata}`` as stored, JSON text (a brain parses its own
        when first touched), or this transaction's pending dict."""
        rows = self._fetch(
            "SELECT zoid, meta FROM object_state WHERE zoid = ANY(%s::bigint[])",
            [array_literal(zoids)],
            guarded=False,
        )
        found = {zoid: meta for zoid, meta in rows if meta is not None}
        found.update(pending_metadata(get_pending(), zoids))
        return found

    def _search(self, query: dict):
        """ZCatalog's search over a merged query dict."""
        odd = [key for key in query if not isinstance(key, str)]
        if odd:
            # ZCatalog's query plan sorts the keys and fails the same way
            # (plone.app.querystring makes a None key of an empty row)
            raise TypeError(f"catalog query keys must be strings, not {odd[0]!r}")
        defs = self._index_defs()
        texts = any(defs[name].kind == r.TEXT for name in query if name in defs)
        lexicons = self._lexicons() if texts else {}
        spec = sort_spec(query, defs)  # a bad sort_on fails even where nothing matches
        query = canonical(query)
        try:
            stmt = build(query, defs, lexicons, self.getPhysicalPath())
        except Fault as fault:
            if fault.before is None or self._any(fault.before):
                raise fault.error from None
            return LazyCat([])
        if stmt is None:
            return LazyCat([])
        matched = stmt.where_sql()  # ZCatalog's rlen counts rows without a sort key too
        clauses = len(stmt.where)
        add_sort(stmt, spec)
        keyed = " AND ".join(stmt.where[clauses:]) or "true"  # the rows with every sort key
        where = stmt.where_sql()

        def count() -> int:
            return self._select("count(*)", where, stmt.params)[0][0]

        try:
            b_start, b_size, limit = _batch(query)
        except (TypeError, ValueError, OverflowError):
            # ZCatalog reads these only once something matched
            if self._any(stmt):
                raise
            return LazyCat([])
        if not spec:
            limit = None  # ZCatalog limits only what it sorts
        elif b_size is not None and b_size < 0:
            # ZCatalog's sort fails on it: an empty batch (unsorted
            # results are sliced with it, as ZCatalog slices them)
            b_size = limit = 0
        total = None
        if spec and b_size and b_start > 0:
            # ZCatalog takes a batch that starts past the middle of the
            # matches from their end: counting up to 2 * b_start tells
            rlen, sortable = self._read(
                f"SELECT count(*), count(*) FILTER (WHERE keyed) FROM "
                f"(SELECT {keyed} AS keyed FROM {ROWS} WHERE {matched} LIMIT %s) AS matched",
                [*stmt.params, _bounded(2 * b_start)],
            )[0]
            if b_start > rlen / 2:
                # the matches are all counted: their count is known
                total = rlen if b_start >= rlen else sortable  # (ZCatalog's, as it gives up or sorts)
                b_start, b_size = _window_from_end(b_start, b_size, rlen, sortable)
                limit = b_start + b_size

        if stmt.scored:
            select = self._scored_select(stmt, where)
        else:
            # the record id last: a total order, so that windows and batches
            # are stable (ZCatalog's unsorted results come in record id order too)
            select = self._ordered_select(
                f"{where} ORDER BY {', '.join([*stmt.order, stmt.tiebreak])}", stmt.params
            )

        if b_size is None:
            return self._all_matches(select)

        end = b_start + b_size if limit is None else min(b_start + b_size, limit)
        if b_start >= 0 and b_size >= 0 and (limit is None or limit >= 0):
            offset = _bounded(b_start)
            size = _bounded(max(0, end - b_start))
            # a page is about to be shown: its metadata comes with its rows
            metadata = 0 < size <= MAX_PAGE
            if size and not stmt.scored and stmt.walks(offset + size):
                rows = self._read(*top_sql(stmt, offset + size, offset, metadata), generic=True)
            else:
                rows = select("LIMIT %s OFFSET %s", [size, offset], metadata=metadata) if size else []
            if total is None and (0 < len(rows) < size or (offset == 0 and len(rows) < size)):
                total = offset + len(rows)  # a short batch ends the result
            return self._results(rows, length=len(rows), total=total, count=count, metadata=metadata)
        # Python slice semantics (negative starts) on the first `limit` rows
        limited = limit is not None and limit > 0
        first = self._rows(select, 0, _bounded(limit)) if limited else select("", [])
        rows = first[slice(b_start, b_start + b_size)]
        total = len(first) if not limited or len(first) < limit else None
        return self._results(rows, length=len(rows), total=total, count=count)

    def _any(self, stmt) -> bool:
        """Whether *stmt* matches any record."""
        return bool(self._select("1", f"{stmt.where_sql()} LIMIT 1", stmt.params))

    def _ordered_select(self, ordered: str, ordered_params: list):
        """*select* (see :meth:`_rows`) over ``WHERE ordered``."""

        def select(tail: str, params: list, counted: bool = False, metadata: bool = False) -> list[tuple]:
            columns = (
                "zoid, path" + (", count(*) OVER ()" if counted else "") + (", meta" if metadata else "")
            )
            return self._select(columns, f"{ordered} {tail}", [*ordered_params, *params])

        return select

    def _scored_select(self, stmt, where: str):
        """*select* (see :meth:`_rows`) over the matches in order of their
        relevance (:mod:`plone.pgcatalog.relevance`): rows carry ZCatalog's
        ``data_record_score_`` and ``data_record_normalized_score_``."""
        head, head_params = ranked_sql(stmt.scored, where, stmt.params, get_pending())
        a, b = stmt.scale

        def select(tail: str, params: list, counted: bool = False, metadata: bool = False) -> list[tuple]:
            columns = "zoid, path, score, max(score) OVER ()" + (", count(*) OVER ()" if counted else "")
            sql = f"SELECT {columns} FROM pgcatalog_scored ORDER BY score DESC, zoid DESC {tail}"
            if metadata:  # of the selected rows only, stored (see _results)
                sql = (
                    f"SELECT s.*, o.meta FROM ({sql}) AS s LEFT JOIN object_state o ON o.zoid = s.zoid"
                    " ORDER BY s.score DESC, s.zoid DESC"
                )
            return [
                (zoid, path, a * score + b, int(100.0 * (a * score + b) / (a * best + b)), *rest)
                # planning this statement costs as much as running it (the text
                # index is read in several places), and every match is scored
                # whatever the words: the generic plan serves
                for zoid, path, score, best, *rest in self._read(
                    f"{head}\n{sql}", [*head_params, *params], generic=True
                )
            ]

        return select

    def _rows(self, select, offset: int, limit: int) -> list[tuple]:
        """Rows ``offset`` to ``offset + limit`` of a search: *select(tail,
        params, counted=False, metadata=False)* selects its rows in order,
        ``tail`` (LIMIT, OFFSET) appended, then the number of matches when
        *counted*, then the stored metadata when *metadata*."""
        return select("LIMIT %s OFFSET %s", [limit, offset])

    def _all_matches(self, select) -> CatalogResults:
        """Every match of a search (*select*, see :meth:`_rows`).

        The first rows and the count come in one statement: len() is the
        count and listings ask for it (counting later would mean a second
        pass over every match whenever the plan reads them all anyway);
        more rows are selected when somebody walks that far.
        """
        rows = select("LIMIT %s", [MIN_ROWS], counted=True)
        total = rows[0][-1] if rows else 0
        return self._results(
            [row[:-1] for row in rows], length=total, total=total, load_rows=partial(self._rows, select)
        )

    def _results(self, rows, *, metadata: bool = False, **kw):
        """Results over *rows*; with *metadata* each row ends with its
        stored metadata (this transaction's pending metadata wins, as in
        :meth:`_load_metadata`)."""
        tool = self

        def wrap(brain):
            return brain.__of__(tool)

        loaded = None
        if metadata:
            pending = pending_metadata(get_pending(), [row[0] for row in rows])
            loaded = {position: pending.get(row[0], row[-1]) or {} for position, row in enumerate(rows)}
            rows = [row[:-1] for row in rows]
        return CatalogResults(rows, self._pgc_columns, self._load_metadata, wrap, metadata=loaded, **kw)

    def _listAllowedRolesAndUsers(self, user) -> list[str]:
        result = user.getRoles()
        if "Anonymous" in result:
            return ["Anonymous"]
        result = list(result)
        if hasattr(aq_base(user), "getGroups"):
            result += [f"user:{group}" for group in user.getGroups()]
        result.insert(0, f"user:{user.getId()}")
        result.append("Anonymous")
        return result

    def allow_inactive(self, query_kw) -> bool:
        """CMFPlone's rule: the permission site-wide, or on every queried path."""
        if _checkPermission(AccessInactivePortalContent, self):
            return True
        paths = query_kw.get("path", False)
        if not paths:
            return False
        if isinstance(paths, dict):
            paths = paths.get("query", [])
        if isinstance(paths, str):
            paths = [paths]
        site = getSite()
        objs = []
        for path in list(paths):
            try:
                site_path = "/".join(site.getPhysicalPath())
                parts = path[len(site_path) + 1 :].split("/")
                parent = site.unrestrictedTraverse("/".join(parts[:-1]))
                objs.append(parent.restrictedTraverse(parts[-1]))
            except (KeyError, AttributeError, Unauthorized):
                continue  # not there: ignored (other errors fail the search, as on Plone)
        return bool(objs) and all(_checkPermission(AccessInactivePortalContent, o) for o in objs)

    @security.protected(SearchZCatalog)
    def searchResults(self, query=None, **kw):
        """Search as the current user: Plone's security terms always apply."""
        processQueue()
        kw = kw.copy()
        show_inactive = kw.get("show_inactive")
        if show_inactive is None and isinstance(query, dict):
            show_inactive = query.get("show_inactive")
        if show_inactive is None:
            show_inactive = self.allow_inactive(kw)
        sort_on = kw.get("sort_on") or []
        if isinstance(sort_on, str):
            sort_on = [sort_on]
        valid = self._index_defs()
        try:
            sort_on = [name for name in sort_on if name in valid]
        except TypeError:
            sort_on = []
        if sort_on:
            kw["sort_on"] = sort_on
        else:
            kw.pop("sort_on", None)
        return self._search(self._secured(merge_query(query, **kw), not show_inactive))

    def _secured(self, query: dict, active_only: bool) -> dict:
        """*query* limited to what the current user may see (and to active
        content if *active_only*).  The caller's own keys for these indexes
        go, options too: stock Plone lets ``allowedRolesAndUsers_range``
        or ``_operator`` change its security term; here nothing can."""
        replaced = SECURITY_INDEXES if active_only else SECURITY_INDEXES[:1]
        query = {key: value for key, value in query.items() if _index_of_key(key) not in replaced}
        user = _getAuthenticatedUser(self)
        query["allowedRolesAndUsers"] = {"query": self._listAllowedRolesAndUsers(user)}
        if active_only:
            query["effectiveRange"] = {"query": DateTime()}
        return query

    __call__ = searchResults

    @security.private
    def unrestrictedSearchResults(self, REQUEST=None, **kw):
        processQueue()
        return self._search(merge_query(REQUEST, **kw))

    @security.private
    def _unrestrictedSearchResults(self, REQUEST=None, **kw):
        return self._search(merge_query(REQUEST, **kw))

    @security.protected(SearchZCatalog)
    def search(self, query_request, sort_index=None, reverse=0, limit=None, merge=1):
        processQueue()
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
        processQueue()
        counter = self._fetch("SELECT value FROM pgcatalog_counter WHERE id = 1", [], guarded=False)[0][0]
        # the commit bumps the counter once for this transaction's changes
        return counter + 1 if has_changes(get_pending()) else counter

    @security.protected(SearchZCatalog)
    def getpath(self, rid) -> str:
        rows = self._select("path", f"zoid = %s AND {CATALOGED}", [rid]) if _is_rid(rid) else []
        if not rows:
            raise KeyError(rid)
        return rows[0][0]

    @security.protected(SearchZCatalog)
    def getrid(self, path, default=None):
        if not isinstance(path, str) or "\x00" in path:
            return default
        rows = self._select("zoid", f"path = %s AND {CATALOGED}", [path])
        return rows[0][0] if rows else default

    def _index_entries(self, rid) -> dict | None:
        """Every index's entry for a record (see ``index_entry``), without
        the indexes that hold nothing for it; None if it is not cataloged."""
        if not _is_rid(rid):
            return None
        defs = self._index_defs()
        texts = [d for d in defs.values() if d.kind == r.TEXT]
        # a text index's words in document order, from the tsvector positions
        words = "".join(
            f", (SELECT array_agg(w.lexeme ORDER BY p) FROM unnest({d.expression()}) AS w, unnest(w.positions) AS p)"
            for d in texts
        )
        # keyword lists kept in a column of their own (object_provides)
        own = [d for d in defs.values() if d.kind != r.TEXT and d.column is not None]
        columns = "".join(f", {d.column}" for d in own)
        rows = self._select(f"path, idx{columns}{words}", f"zoid = %s AND {CATALOGED}", [rid])
        if not rows:
            return None
        path, idx, *rest = rows[0]
        idx = {
            **idx,
            **{d.name: value for d, value in zip(own, rest[: len(own)], strict=True) if value is not None},
        }
        by_text = dict(zip((d.name for d in texts), rest[len(own) :], strict=True))
        entries = {name: index_entry(d, idx, path, by_text.get(name), _MISSING) for name, d in defs.items()}
        return {name: entry for name, entry in entries.items() if entry is not _MISSING}

    @security.protected(SearchZCatalog)
    def getIndexDataForRID(self, rid) -> dict:
        """Every index's entry for a record (plone.app.event reads the
        occurrences of events from ``start`` and ``end`` here)."""
        entries = self._index_entries(rid) or {}
        return {name: entries.get(name, "") for name in self._index_defs()}

    @security.protected(SearchZCatalog)
    def getMetadataForRID(self, rid) -> dict:
        """Every metadata column of a record (Missing.Value where unset)."""
        meta = parsed_metadata(self._load_metadata([int(rid)]).get(int(rid), {}))
        return {name: decode_metadata(meta[name]) if name in meta else MV for name in self._pgc_columns}

    @security.protected(SearchZCatalog)
    def getAllBrains(self):
        """Every cataloged record, in record id order, unfiltered."""
        yield from self.searchAll()

    @security.protected(SearchZCatalog)
    def searchAll(self):
        """ZCatalog's search for all documents: no security, no filters."""
        return self._all_matches(self._ordered_select(f"{CATALOGED} ORDER BY zoid", []))

    @security.protected(SearchZCatalog)
    def getobject(self, rid, REQUEST=None):
        return self.unrestrictedTraverse(self.getpath(rid))

    @security.protected(SearchZCatalog)
    def uniqueValuesFor(self, name) -> tuple:
        """The distinct values of an index, as its kind lists them on
        ZCatalog (``KeyError`` for an unknown index)."""
        return tuple(self.Indexes[name].uniqueValues())

    @security.protected(ManageZCatalogEntries)
    def getIndexObjects(self) -> list:
        """Every index object (GenericSetup's ``catalog.xml`` export)."""
        return list(self.Indexes.values())

    def _cataloged_rows_by(self, order: str, batch: int = 1000):
        """``(path, zoid)`` of every catalog row, in *order* (``"path"`` or
        ``"zoid"``), read a batch at a time."""
        column = {"path": "path", "zoid": "zoid"}[order]
        after = None
        while True:
            where = CATALOGED if after is None else f"{CATALOGED} AND {column} > %s"
            rows = self._select(
                "path, zoid",
                f"{where} ORDER BY {column} LIMIT {int(batch)}",
                [] if after is None else [after],
            )
            yield from rows
            if len(rows) < batch:
                return
            after = rows[-1][0 if column == "path" else 1]

    @property
    def Indexes(self) -> IndexesMapping:
        return IndexesMapping(self)

    @property
    def _catalog(self) -> CatalogInternals:
        return CatalogInternals(self)

    def __len__(self):
        return self._select("count(*)", CATALOGED, [])[0][0]

    def __bool__(self):
        return True


InitializeClass(PGCatalogTool)


_MISSING = object()

# The indexes of Plone's security terms, which searchResults sets itself
SECURITY_INDEXES = ("allowedRolesAndUsers", "effectiveRange")


def _index_of_key(key) -> str | None:
    """The security index a query key is about: its name or a flat
    ``<index>_<option>`` key (``allowedRolesAndUsers_operator``)."""
    if isinstance(key, str):
        for name in SECURITY_INDEXES:
            if key == name or key.startswith(name + "_"):
                return name
    return None


def _is_rid(rid) -> bool:
    """Whether *rid* can be a record id (an object id: a 64-bit integer)."""
    return isinstance(rid, int) and not isinstance(rid, bool) and -(2**63) <= rid < 2**63


# Batch positions and sizes past any catalog's length all mean the same
_FAR = 2**40


def _batch(query: dict) -> tuple[int, int | None, int | None]:
    """``b_start``, ``b_size`` and the limit of a sort, read as ZCatalog
    reads them (its errors for what ``int()`` refuses): a sort keeps its
    first ``b_start + b_size`` rows, or ``sort_limit`` rows, which then
    is the batch size too; ``sort_limit`` counts only without ``b_size``,
    and 0 or below is no limit."""
    b_start = int(query.get("b_start", 0))
    b_size = query.get("b_size")
    if b_size is not None:
        b_size = int(b_size)
        return b_start, b_size, b_start + b_size
    limit = query.get("sort-limit")
    if limit is None:
        limit = query.get("sort_limit")
    if not limit:
        return b_start, None, None
    if not isinstance(limit, int):
        # ZCatalog slices its results with it
        raise TypeError(f"sort_limit must be an integer, not {limit!r}")
    limit = max(limit, 0) or None
    return b_start, limit, limit


def _window_from_end(b_start: int, b_size: int, rlen: int, sortable: int) -> tuple[int, int]:
    """``(b_start, b_size)`` over the *sortable* rows of a batch that starts
    past the middle of the *rlen* matches.  ZCatalog finds it by sorting the
    other way and counting from the end of all matches, rows without a sort
    key (which it then drops) included: the window moves back by their
    number."""
    b_end = b_start + b_size
    if b_start >= rlen:
        return 0, 0
    skip, size = (0, rlen - b_start) if b_end >= rlen else (rlen - b_end, b_size)
    start, end = max(0, sortable - skip - size), max(0, sortable - skip)
    return start, end - start


def _bounded(number: int) -> int:
    """*number*, at most :data:`_FAR` (a 64-bit SQL integer).  Batch numbers
    are Python's until they go to SQL, so that sums of huge ones are right."""
    return min(number, _FAR)


def _redirect(response, url: str | None, message: str) -> None:
    """Back to the catalog's ZMI page with *message*, as ZCatalog's forms do."""
    if response is not None and url:
        response.redirect(f"{url}/manage_main?manage_tabs_message={quote(message)}")
