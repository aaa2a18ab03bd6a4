"""Compiled statements of the queries a site asks again and again.

A listing, a portlet, the navigation, Plone's own views: the same query
comes back many times a minute, and compiling it (every index's part read
as ZCatalog reads it, checked and written as SQL) costs more than the
rest of the catalog's Python before the statement goes out.  Each catalog
tool keeps the statements of its latest queries, per ZODB connection (a
volatile attribute: one thread at a time; dropped when the tool changes,
and when its index definitions do), keyed by the query as the compiler
reads it, as it was asked (before ``canonical`` and ``sort_spec`` read
it: a hit skips them too).  A statement is not changed after it is built
(:mod:`.statement`), so one serves every search of its query; so does
what the caller makes of it once (the search's page plan).

The key holds every value of the query.  Dates of the date indexes count
to the minute, the precision those indexes compare at: the ``DateTime()``
Plone adds to every Anonymous search (``effectiveRange``) changes each
call, its minute once a minute.  A value without a dependable key (an
object compared by identity, a mutable container, a date given to an
index that compares it whole) compiles every time.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from collections.abc import Hashable
from collections.abc import Mapping
from collections.abc import Sequence
from DateTime import DateTime
from plone.pgcatalog import registry as r
from typing import Any
from ZPublisher.HTTPRequest import record


__all__ = ["SIZE", "compiled"]

SIZE = 256
"""Statements kept per catalog tool and ZODB connection (the least recently
used go first)."""

_DATED = (r.DATE, r.DATE_RANGE, r.DATE_RECURRING)


def compiled[T](
    tool: Any,
    query: dict,
    indexes: Mapping[str, r.IndexDef],
    lexicons: Callable[[], Mapping[str, Any]],
    catalog_path: Sequence[str],
    make: Callable[[Mapping[str, Any]], T],
    variant: Hashable = None,
) -> T:
    """``make(lexicons)`` for *query* as asked (the caller's compiling:
    its query read, checked, built and planned), or what it made of an
    equal query before.  *lexicons* (by id) are asked for by text queries
    only; *variant* tells apart what *make* makes of one query in other
    ways (its globs' words).  Faults are raised every time (nothing is
    kept), so a query found here passed every check the first time and
    needs none again."""
    key = query_key(query, indexes)
    if key is not None and variant is not None:
        key = (key, variant)
    if key is None:
        return make(lexicons() if _texts(query, indexes) else {})
    path = tuple(catalog_path)
    kept = tool.__dict__.get("_v_statements")
    if kept is None or kept[0] is not indexes or kept[1] != path:
        kept = (indexes, path, OrderedDict())
        tool._v_statements = kept
    statements = kept[2]
    found = statements.get(key)
    if found is not None:
        pipelines, made = found
        # a text query is read by its lexicons' pipelines (a new one is a new tuple)
        if pipelines is None or _same(pipelines, lexicons()):
            statements.move_to_end(key)
            return made
    if _texts(query, indexes):
        now = lexicons()
        pipelines = tuple((name, lexicon._pipeline) for name, lexicon in now.items())
    else:
        now, pipelines = {}, None
    made = make(now)
    statements[key] = (pipelines, made)
    while len(statements) > SIZE:
        statements.popitem(last=False)
    return made


def _texts(query: dict, indexes: Mapping[str, r.IndexDef]) -> bool:
    return any(indexes[name].kind == r.TEXT for name in query if name in indexes)


def _same(pipelines: tuple, lexicons: Mapping[str, Any]) -> bool:
    return len(pipelines) == len(lexicons) and all(
        name in lexicons and lexicons[name]._pipeline is pipeline for name, pipeline in pipelines
    )


def query_key(query: dict, indexes: Mapping[str, r.IndexDef]) -> Hashable | None:
    """A key of *query* (string keys, as ``search`` checked) equal for
    queries the compiler reads alike, or None."""
    try:
        return tuple([(name, _frozen(query[name], _dated(indexes.get(name)))) for name in sorted(query)])
    except TypeError:
        return None


def _dated(index: r.IndexDef | None) -> bool:
    return index is not None and index.kind in _DATED


def _frozen(value: Any, dated: bool) -> Hashable:
    """*value* as a key: its type with it (``1``, ``True`` and ``1.0`` are
    equal in Python, not in SQL)."""
    kind = type(value)
    if kind is str:
        return value  # the most common, and no tuple is equal to it
    if kind is int or kind is bool:
        return (kind, value)
    if kind is list or kind is tuple or isinstance(value, (list, tuple)):
        return (list, tuple([_frozen(item, dated) for item in value]))
    if kind is dict or isinstance(value, (dict, record)):
        return (dict, tuple([(key, _frozen(value[key], dated)) for key in sorted(value.keys())]))
    if isinstance(value, DateTime):
        if not dated:
            raise TypeError("a date compared whole")
        millis = value.millis()
        # the minute as DateIndex (UTC, floor) and DateRangeIndex
        # (towards zero) count it: equal where both are
        return (DateTime, millis // 60000, int(millis / 60000))
    if kind.__hash__ is None or kind.__hash__ is object.__hash__ or hasattr(value, "timetuple"):
        raise TypeError(f"no value key for {kind.__name__}")
    return (kind, value)
