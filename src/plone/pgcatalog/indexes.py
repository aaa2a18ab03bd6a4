"""Read-only index objects answered from PostgreSQL.

Plone code reaches into ``catalog.Indexes[name]`` (plone.app.uuid reads
``_index.get(uid)``; type counts call ``uniqueValues(withLengths=True)``)
and into ``catalog._catalog`` (the search page lists the used types with
``_catalog.getIndex("portal_type").uniqueValues()``; keyword vocabularies
iterate ``_index``).  These small views give those calls their ZCatalog
answers from SQL.
"""

from __future__ import annotations

from BTrees.LLBTree import LLTreeSet
from plone.pgcatalog import registry as r
from plone.pgcatalog.interfaces import IPGIndex
from plone.pgcatalog.schema import CATALOGED
from Products.ZCatalog.query import IndexQuery
from zope.interface import implementer


class _ForwardIndex:
    """``index._index``: value → record id, for unique (UUID) indexes."""

    def __init__(self, view):
        self._view = view

    def get(self, value, default=None):
        rids = self._view._rids(value)
        return rids[0] if rids else default

    def keys(self):
        return self._view.uniqueValues()

    def __iter__(self):
        return iter(self.keys())


@implementer(IPGIndex)
class IndexView:
    def __init__(self, tool, index: r.IndexDef):
        self._tool = tool
        self._def = index
        self.id = index.name
        self.meta_type = index.kind
        self.query_options = index.query_options
        self._index = _ForwardIndex(self)

    def getId(self):
        return self.id

    def _rids(self, value):
        if self._def.kind in (r.FIELD, r.UUID) and self._def.sql_type == "text":
            return [
                zoid
                for (zoid,) in self._tool._select(
                    "zoid", f"idx IS NOT NULL AND {self._def.expression()} = %s", [value]
                )
            ]
        results = self._tool._unrestrictedSearchResults({self.id: value})
        return [brain.getRID() for brain in results]

    def query_index(self, record, resultset=None) -> LLTreeSet:
        """The record ids matching an ``IndexQuery`` (within *resultset*)."""
        query = {"query": record.keys}
        for option in self.query_options:
            value = record.get(option)
            if option != "query" and value is not None:
                query[option] = value
        found = LLTreeSet(brain.getRID() for brain in self._tool._unrestrictedSearchResults({self.id: query}))
        return found if resultset is None else LLTreeSet(rid for rid in found if rid in resultset)

    def _apply_index(self, request, resultset=None):
        """ZCatalog's index protocol: ``(record ids, (index id,))``, or None
        when *request* does not query this index.  Record ids are object
        ids, 64-bit: they come in an ``LLTreeSet``."""
        record = IndexQuery(request, self.id, self.query_options)
        if record.keys is None:
            return None
        return self.query_index(record, resultset), (self.id,)

    def uniqueValues(self, name=None, withLengths=False):
        values = self._tool.uniqueValuesFor(self.id)
        if not withLengths:
            return values
        return tuple((v, len(self._rids(v))) for v in values)

    def numObjects(self) -> int:
        """How many records have a value in this index."""
        if self._def.column is not None:
            where = f"{self._def.column} IS NOT NULL"
        else:
            where = f"idx ? {self._def.key}"
        return self._tool._select("count(*)", f"{CATALOGED} AND {where}", [])[0][0]

    def indexSize(self) -> int:
        """How many distinct values the index holds."""
        return len(self._tool.uniqueValuesFor(self.id))


class IndexesMapping:
    """``catalog.Indexes``: index views by name."""

    def __init__(self, tool):
        self._tool = tool

    def __getitem__(self, name):
        index = self._tool._index_defs().get(name)
        if index is None:
            raise KeyError(name)
        return IndexView(self._tool, index)

    def get(self, name, default=None):
        try:
            return self[name]
        except KeyError:
            return default

    def __contains__(self, name):
        return name in self._tool._index_defs()

    def keys(self):
        return list(self._tool._index_defs())


class CatalogInternals:
    """``catalog._catalog``: the parts of ZCatalog's ``Catalog`` that
    Plone code reads (indexes, schema, ``getIndex``)."""

    def __init__(self, tool):
        self._tool = tool
        self.indexes = IndexesMapping(tool)

    def getIndex(self, name):
        return self.indexes[name]

    def getIndexDataForRID(self, rid) -> dict:
        return self._tool.getIndexDataForRID(rid)

    def getMetadataForRID(self, rid) -> dict:
        return self._tool.getMetadataForRID(rid)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._tool.schema())

    @property
    def schema(self) -> dict[str, int]:
        return {name: position for position, name in enumerate(self.names)}


def index_entry(index: r.IndexDef, idx: dict, path: str, words: list[str] | None):
    """What the ZCatalog index's ``getEntryForObject`` hands out for a row:
    the stored value in that index's own shape ("" when the row has none)."""
    if index.kind == r.PATH:
        return path
    if index.kind == r.TEXT:
        return words if words is not None else ""
    value = idx.get(index.name)
    if value is None:
        return ""
    if index.kind == r.DATE_RECURRING:
        return tuple(value)
    if index.kind == r.DATE_RANGE:
        since, until = value
        return (None if since == r.OPEN_START else since, None if until == r.OPEN_END else until)
    return value
