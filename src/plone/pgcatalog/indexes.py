"""Index objects and ZCatalog's ``Catalog`` internals, answered from PostgreSQL.

Plone code reaches into ``catalog.Indexes[name]`` (plone.app.uuid reads
``_index.get(uid)``; type counts call ``uniqueValues(withLengths=True)``),
into ``catalog._catalog`` (the search page lists the used types with
``_catalog.getIndex("portal_type").uniqueValues()``; plone.restapi looks
up its query parsers by the *class* of ``_catalog.indexes[name]``; add-ons
read ``_catalog.uids``, ``paths`` and ``data``).  These small views give
those calls their ZCatalog answers from SQL.

None of them is published: they answer without the catalog's security
filter, for Python callers only (a stock ZCatalog's index objects are
URLs; here ``Indexes/...`` answers 404).
"""

from __future__ import annotations

from typing import Any

from BTrees.LLBTree import LLTreeSet
from collections.abc import Iterator
from collections.abc import Mapping
from functools import cache
from plone.pgcatalog import registry as r
from plone.pgcatalog.database import cataloged_rows
from plone.pgcatalog.database import read
from plone.pgcatalog.database import select
from plone.pgcatalog.interfaces import IPGIndex
from plone.pgcatalog.interfaces import IPGTextIndex
from plone.pgcatalog.schema import CATALOGED
from plone.pgcatalog.schema import ROWS
from plone.pgcatalog.values import is_rid
from Products.ZCatalog.query import IndexQuery
from zope.interface import classImplementsOnly
from zope.interface import implementedBy
from zope.interface import implementer
from ZPublisher import zpublish

import importlib
import orjson


__all__ = ["CatalogInternals", "IndexesMapping", "IndexView", "index_entries", "index_entry", "index_view"]

# The stock class of each kind: a view provides what its class implements,
# so that adapters registered for the class (plone.restapi's query
# parsers) find it.
_STOCK_CLASSES = {
    r.FIELD: "Products.PluginIndexes.FieldIndex.FieldIndex:FieldIndex",
    r.KEYWORD: "Products.PluginIndexes.KeywordIndex.KeywordIndex:KeywordIndex",
    r.DATE: "Products.PluginIndexes.DateIndex.DateIndex:DateIndex",
    r.DATE_RANGE: "Products.PluginIndexes.DateRangeIndex.DateRangeIndex:DateRangeIndex",
    r.DATE_RECURRING: "Products.DateRecurringIndex.index:DateRecurringIndex",
    r.BOOLEAN: "Products.PluginIndexes.BooleanIndex.BooleanIndex:BooleanIndex",
    r.UUID: "Products.PluginIndexes.UUIDIndex.UUIDIndex:UUIDIndex",
    r.TEXT: "Products.ZCTextIndex.ZCTextIndex:ZCTextIndex",
    r.PATH: "Products.ExtendedPathIndex.ExtendedPathIndex:ExtendedPathIndex",
    r.GOPIP: "plone.folder.nogopip:GopipIndex",
}


@zpublish(False)
class _ForwardIndex:
    """``index._index``: value → record id, for unique (UUID) indexes."""

    def __init__(self, view):
        self._view = view

    def get(self, value, default=None):
        rids = self._view._rids(value)
        return rids[0] if rids else default

    def keys(self):
        return tuple(self._view.uniqueValues())

    def __iter__(self):
        return iter(self.keys())


@zpublish(False)
@implementer(IPGIndex)
class IndexView:
    """One catalog index, read-only, as ZCatalog's index object answers."""

    def __init__(self, tool, index: r.IndexDef):
        self._tool = tool
        self._def = index
        self.id = index.name
        self.meta_type = index.kind
        self.query_options = index.query_options
        self._index = _ForwardIndex(self)

    def getId(self) -> str:
        return self.id

    def getIndexSourceNames(self) -> tuple[str, ...]:
        return self._def.source_names

    def getEntryForObject(self, documentId: int, default=None):
        """What the index holds for a record: its value, words or path."""
        if self._def.kind == r.GOPIP:
            return []  # ZCatalog's GopipIndex holds nothing, for any record
        entries = index_entries(self._tool, documentId)
        if entries is None:
            return default
        return entries.get(self.id, default)

    def _rids(self, value) -> list[int]:
        if self._def.kind in (r.FIELD, r.UUID) and self._def.sql_type == "text":
            return [
                zoid
                for (zoid,) in select(
                    self._tool, "zoid", f"idx IS NOT NULL AND {self._def.expression()} = %s", [value]
                )
            ]
        results = self._tool.unrestrictedSearchResults({self.id: value})
        return [brain.getRID() for brain in results]

    def query_index(self, record, resultset=None) -> LLTreeSet:
        """The record ids matching an ``IndexQuery`` (within *resultset*)."""
        query = {"query": record.keys}
        for option in self.query_options:
            value = record.get(option)
            if option != "query" and value is not None:
                query[option] = value
        found = LLTreeSet(brain.getRID() for brain in self._tool.unrestrictedSearchResults({self.id: query}))
        return found if resultset is None else LLTreeSet(rid for rid in found if rid in resultset)

    def _apply_index(self, request, resultset=None):
        """ZCatalog's index protocol: ``(record ids, (index id,))``, or None
        when *request* does not query this index.  Record ids are object
        ids, 64-bit: they come in an ``LLTreeSet``."""
        record = IndexQuery(request, self.id, self.query_options)
        if record.keys is None:
            return None
        return self.query_index(record, resultset), (self.id,)

    def uniqueValues(self, name=None, withLengths=False) -> Iterator:
        """The distinct values in key order (with the number of records
        holding each), as the stock index of this kind lists them."""
        if name is not None and name != self.id:
            return
        yield from _unique_values(self._tool, self._def, bool(withLengths))

    def numObjects(self) -> int:
        """How many records have a value in this index."""
        if self._def.column is not None:
            where = f"{self._def.column} IS NOT NULL"
        else:
            where = f"idx ? {self._def.key}"
        return select(self._tool, "count(*)", f"{CATALOGED} AND {where}", [])[0][0]

    def indexSize(self) -> int:
        """How many distinct values the index holds."""
        return sum(1 for _ in self.uniqueValues())


class _PathIndexView(IndexView):
    def getIndexSourceNames(self) -> tuple[str, ...]:
        return self._def.attrs or ("getPhysicalPath",)  # as ExtendedPathIndex answers

    def uniqueValues(self, name=None, withLengths=False) -> Iterator:
        # a PathIndex also answers to its source name
        if name in (None, self.id, "getPhysicalPath"):
            yield from _unique_values(self._tool, self._def, bool(withLengths))


class _DateRangeIndexView(IndexView):
    def uniqueValues(self, name=None, withLengths=False) -> Iterator:
        """Values of one end of the range, named by its field; none for
        the index's own name (so ``uniqueValuesFor`` is empty)."""
        options = self._def.options
        ends = {options.get("since_field"): 0, options.get("until_field"): 1}
        if name is None or name not in ends:
            return
        yield from _range_end_values(self._tool, self._def, ends[name], bool(withLengths))


class _TextIndexView(IndexView):
    def uniqueValues(self, name=None, withLengths=False):
        raise NotImplementedError  # as ZCTextIndex

    def indexSize(self) -> int:
        """How many distinct words the index holds (ZCTextIndex: its
        lexicon's words in use)."""
        expr = self._def.expression()
        sql = f"SELECT count(DISTINCT w.lexeme) FROM {ROWS}, unnest({expr}) AS w WHERE {expr} IS NOT NULL"
        return read(self._tool, sql, [])[0][0]


class _GopipIndexView(IndexView):
    """ZCatalog's GopipIndex is a stub that stores and lists nothing."""

    @property
    def uniqueValues(self):
        raise AttributeError("uniqueValues")

    def numObjects(self) -> int:
        return 0


@cache
def index_view(kind: str) -> type[IndexView]:
    """The view class for indexes of *kind* (custom kinds: plain views)."""
    base = {
        r.PATH: _PathIndexView,
        r.DATE_RANGE: _DateRangeIndexView,
        r.TEXT: _TextIndexView,
        r.GOPIP: _GopipIndexView,
    }.get(kind, IndexView)
    stock = _stock_class(kind)
    if stock is None:
        return base
    # named as ZCatalog's class of the kind: add-ons read the class name
    view = type(kind, (base,), {"__module__": __name__})
    # our own adapters (GenericSetup's index im/export) before the stock ones
    marker = IPGTextIndex if kind == r.TEXT else IPGIndex
    classImplementsOnly(view, marker, implementedBy(stock))
    return view


def _stock_class(kind: str) -> type | None:
    spec = _STOCK_CLASSES.get(kind)
    if spec is None:
        return None
    module, name = spec.split(":")
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError:  # an optional package (DateRecurringIndex) is missing
        return None


def _sorted(values) -> list:
    """In BTree key order (``None`` first, as in an OOBTree)."""
    try:
        return sorted(values, key=lambda v: (v is not None, v))
    except TypeError:  # values of several types: grouped by type
        return sorted(values, key=lambda v: (v is not None, type(v).__name__, str(v)))


def _grouped(tool, element: str, where: str, source: str = ROWS) -> dict:
    """``{value: number of records}`` of the JSON values *element* over
    the catalog rows (*source*, which names them ``object_state``)."""
    rows = read(
        tool,
        f"SELECT {element}::text AS v, count(DISTINCT object_state.zoid) FROM {source} "
        f"WHERE {CATALOGED} AND {where} GROUP BY v",
        [],
    )
    return {orjson.loads(v): n for v, n in rows}


def _unique_values(tool, index: r.IndexDef, with_lengths: bool) -> Iterator:
    kind = index.kind
    if kind in (r.KEYWORD, r.DATE_RECURRING):
        expr = index.expression()
        counts = _grouped(
            tool, "k", f"jsonb_typeof({expr}) = 'array'", f"{ROWS}, jsonb_array_elements({expr}) AS k"
        )
    elif kind == r.PATH:
        # ExtendedPathIndex keys every path component, and None for the ends
        counts = _grouped(tool, "to_jsonb(c)", "c <> ''", f"{ROWS}, unnest(string_to_array(path, '/')) AS c")
        everything = len(tool)
        if everything:
            counts[None] = everything
    elif kind == r.BOOLEAN:
        counts = _grouped(tool, f"(idx->{index.key})", f"idx ? {index.key}")
        true, false = counts.get(True, 0), counts.get(False, 0)
        # BooleanIndex lists first the value it keeps a set of: the rarer one
        first = true <= false
        pairs = [(first, true if first else false), (not first, false if first else true)]
        yield from pairs if with_lengths else (value for value, _ in pairs)
        return
    else:
        counts = _grouped(tool, f"(idx->{index.key})", f"jsonb_typeof(idx->{index.key}) <> 'null'")
    for value in _sorted(counts):
        yield (value, counts[value]) if with_lengths else value


def _range_end_values(tool, index: r.IndexDef, end: int, with_lengths: bool) -> Iterator:
    """One end of a DateRangeIndex: its minutes, open ends left out.  As
    the stock index keeps them in two trees, the records whose other end
    is bounded come first, then those whose other end is open (a value may
    show in both)."""
    expressions = index.range_expressions()
    expr, other = expressions[end], expressions[1 - end]
    open_end, other_open = (r.OPEN_START, r.OPEN_END) if end == 0 else (r.OPEN_END, r.OPEN_START)
    for test in ("<>", "="):
        where = f"idx ? {index.key} AND {expr} <> {open_end} AND {other} {test} {other_open}"
        counts = _grouped(tool, f"to_jsonb({expr})", where)
        for value in _sorted(counts):
            yield (value, counts[value]) if with_lengths else value


@zpublish(False)
class IndexesMapping(Mapping):
    """``catalog.Indexes`` and ``_catalog.indexes``: index views by name."""

    def __init__(self, tool):
        self._tool = tool

    def __getitem__(self, name):
        index = r.index_defs(self._tool).get(name)
        if index is None:
            raise KeyError(name)
        return index_view(index.kind)(self._tool, index)

    def __contains__(self, name):
        return name in r.index_defs(self._tool)

    def __iter__(self):
        return iter(r.index_defs(self._tool))

    def __len__(self):
        return len(r.index_defs(self._tool))


@zpublish(False)
class _ReadOnlyMapping(Mapping):
    """A ZCatalog BTree, read from the catalog rows in batches of keys."""

    BATCH = 1000

    def __init__(self, tool):
        self._tool = tool

    def __setitem__(self, key, value):
        raise TypeError(f"{type(self).__name__} is read-only: the catalog's data lives in PostgreSQL")

    __delitem__ = __setitem__

    def __len__(self):
        return len(self._tool)

    def keys(self):
        return list(self)


class _Uids(_ReadOnlyMapping):
    """``_catalog.uids``: catalog path → record id, in path order."""

    def __getitem__(self, path):
        rid = self._tool.getrid(path) if isinstance(path, str) else None
        if rid is None:
            raise KeyError(path)
        return rid

    def __iter__(self):
        for _, path in cataloged_rows(self._tool, "path"):
            yield path


class _Paths(_ReadOnlyMapping):
    """``_catalog.paths``: record id → catalog path, in record id order."""

    def __getitem__(self, rid):
        try:
            return self._tool.getpath(rid)
        except (TypeError, ValueError) as exc:
            raise KeyError(rid) from exc

    def __iter__(self):
        for rid, _ in cataloged_rows(self._tool, "zoid"):
            yield rid


class _Data(_ReadOnlyMapping):
    """``_catalog.data``: record id → metadata tuple in schema order."""

    def __getitem__(self, rid):
        paths = _Paths(self._tool)
        if rid not in paths:
            raise KeyError(rid)
        meta = self._tool.getMetadataForRID(rid)
        return tuple(meta[name] for name in self._tool.schema())

    def __iter__(self):
        return iter(_Paths(self._tool))


@zpublish(False)
class CatalogInternals:
    """``catalog._catalog``: the parts of ZCatalog's ``Catalog`` that
    Plone code reads (indexes, schema, ``getIndex``, ``uids``, ``paths``,
    ``data``), read-only."""

    def __init__(self, tool):
        self._tool = tool
        self.indexes = IndexesMapping(tool)
        self.uids = _Uids(tool)
        self.paths = _Paths(tool)
        self.data = _Data(tool)

    def getIndex(self, name):
        return self.indexes[name]

    def getIndexDataForRID(self, rid) -> dict:
        return self._tool.getIndexDataForRID(rid)

    def getMetadataForRID(self, rid) -> dict:
        return self._tool.getMetadataForRID(rid)

    def uniqueValuesFor(self, name) -> tuple:
        return self._tool.uniqueValuesFor(name)

    def __len__(self):
        return len(self._tool)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._tool.schema())

    @property
    def schema(self) -> dict[str, int]:
        return {name: position for position, name in enumerate(self.names)}


def index_entry(index: r.IndexDef, idx: dict, path: str, words: list[str] | None, default: Any = "") -> Any:
    """What the ZCatalog index's ``getEntryForObject`` hands out for a row:
    the stored value in that index's own shape (*default* when the row
    has none)."""
    if index.kind == r.PATH:
        return path
    if index.kind == r.GOPIP:
        return []  # ZCatalog's GopipIndex stores nothing
    if index.kind == r.TEXT:
        return words if words is not None else default
    value = idx.get(index.name)
    if value is None:
        return default
    if index.kind == r.DATE_RECURRING:
        return tuple(value)
    if index.kind == r.BOOLEAN:
        return int(value)  # a BooleanIndex keeps 1 and 0
    if index.kind == r.DATE_RANGE:
        since, until = value
        return (None if since == r.OPEN_START else since, None if until == r.OPEN_END else until)
    return value


_MISSING = object()


def index_entries(tool: Any, rid: int) -> dict | None:
    """Every index's entry for a record (see :func:`index_entry`), without
    the indexes that hold nothing for it; None if it is not cataloged."""
    if not is_rid(rid):
        return None
    defs = r.index_defs(tool)
    texts = [d for d in defs.values() if d.kind == r.TEXT]
    # a text index's words in document order, from the tsvector positions
    words = "".join(
        f", (SELECT array_agg(w.lexeme ORDER BY p) FROM unnest({d.expression()}) AS w, unnest(w.positions) AS p)"
        for d in texts
    )
    # keyword lists kept in a column of their own (object_provides)
    own = [d for d in defs.values() if d.kind != r.TEXT and d.column is not None]
    columns = "".join(f", {d.column}" for d in own)
    rows = select(tool, f"path, idx, word_counts{columns}{words}", f"zoid = %s AND {CATALOGED}", [rid])
    if not rows:
        return None
    path, idx, counts, *rest = rows[0]
    idx = {
        **idx,
        **{d.name: value for d, value in zip(own, rest[: len(own)], strict=True) if value is not None},
    }
    by_text = dict(zip((d.name for d in texts), rest[len(own) :], strict=True))
    for name in counts or ():
        if by_text.get(name) is None:
            by_text[name] = []  # a text without words: indexed, as ZCTextIndex holds it
    entries = {name: index_entry(d, idx, path, by_text.get(name), _MISSING) for name, d in defs.items()}
    return {name: entry for name, entry in entries.items() if entry is not _MISSING}
