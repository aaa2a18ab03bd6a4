"""Facet counts: per value of some indexes, how many matches the user may
see, in one statement.

A search page's filters show, beside each value of an index, how many
items choosing it would find.  Each facet leaves its own criterion out of
its counts (choosing one type still shows how many items the other types
have) and keeps every other one, the security terms ``searchResults``
adds included.  ZCatalog has no such call: the REST API's proposal
(plone.restapi#1637) searches once per facet and intersects the result
with the index in Python.  Here one statement scans the rows matching
what all facets share once, reads each row's facet values and whether it
meets each facet's own criterion, and counts every facet from that.  A
process remembers the counts it made, with the commit they were made at:
the statement then reads only the rows changed since, as they are and as
they were (:mod:`~plone.pgcatalog.changes`), and adds the difference.
Counts made from every row are kept in the database too, for the other
processes of the site and those started later (:mod:`~plone.pgcatalog.shared`).

A facet counts either the values its index keeps (as ``uniqueValuesFor``
lists them: a field or boolean index's value, each of a keyword index's
values once per item) or named buckets, each a query of its index
(``{"last week": {"query": DateTime() - 7, "range": "min"}}``), which
serves date indexes.
"""

from __future__ import annotations

from collections.abc import Hashable
from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import replace
from functools import partial
from plone.pgcatalog import registry as r
from plone.pgcatalog.changes import ALL
from plone.pgcatalog.changes import EFFECTIVE_RANGE
from plone.pgcatalog.changes import Moment
from plone.pgcatalog.changes import NONE
from plone.pgcatalog.changes import SINCE
from plone.pgcatalog.changes import signed_rows
from plone.pgcatalog.changes import SOME
from plone.pgcatalog.counts import Remembered
from plone.pgcatalog.counts import statement_key
from plone.pgcatalog.counts import unchanged_key
from plone.pgcatalog.database import read
from Products.ZCatalog.ZCatalog import CatalogError
from plone.pgcatalog.query import criterion_keys
from plone.pgcatalog.query import where_of
from plone.pgcatalog.schema import ROWS
from plone.pgcatalog.shared import shared_answer
from plone.pgcatalog.shared import share
from typing import Any
from typing import TYPE_CHECKING

import orjson


if TYPE_CHECKING:
    from plone.pgcatalog.search import Catalog


__all__ = ["Facet", "facet_counts"]

# The kinds whose values a facet counts (a date index is counted in buckets)
VALUE_KINDS = (r.FIELD, r.KEYWORD, r.BOOLEAN)

_ROWS = "pgcatalog_facet_rows"
# the rows of the statement that are not a value's count
_SINCE_ROW, _TOTALS_ROW = -1, -2

_remembered = Remembered(256)
"""Facet counts a process remembers, with the stamp of the commit they
were made at (:mod:`~plone.pgcatalog.changes`)."""


@dataclass(frozen=True)
class Facet:
    """The counts of one facet: *counts* by value (or bucket name), most
    first; *matches*, the items it counts over that hold a value of its
    index (the facet's own criterion left out)."""

    counts: dict[Any, int]
    matches: int


def facet_counts(
    catalog: Catalog, query: dict, facets: Mapping[str, Mapping[str, Any] | None] | Iterable[str]
) -> dict[str, Facet]:
    """The :class:`Facet` of each index named in *facets* for *query* (a
    merged query dict, its security terms set).  *facets* maps index names
    to ``None``, which counts the index's values, or to named buckets
    (each a query of that index); a list of names counts their values."""
    if isinstance(facets, str) or not isinstance(facets, Iterable):
        raise CatalogError(f"Facets must be index names or a mapping of them, not {facets!r}")
    if not isinstance(facets, Mapping):
        facets = dict.fromkeys(facets)
    defs = catalog.indexes
    named = [_facet_index(defs, name, buckets) for name, buckets in facets.items()]
    if not named:
        return {}
    compiled = partial(where_of, indexes=defs, lexicons=catalog.lexicons(), catalog_path=catalog.path)
    compiled(query)  # a bad criterion fails as the search would
    own = {index.name: criterion_keys(query, index) for index in named}
    shared = {key: value for key, value in query.items() if not any(key in keys for keys in own.values())}
    # the effective range's minute moves: its criterion goes last, its
    # minute is no part of what identifies the counts (see changes.Moment)
    moment = None
    if EFFECTIVE_RANGE in shared and getattr(defs.get(EFFECTIVE_RANGE), "kind", None) == r.DATE_RANGE:
        at = compiled({EFFECTIVE_RANGE: shared.pop(EFFECTIVE_RANGE)})
        if at is None:
            return {index.name: Facet({}, 0) for index in named}
        moment = Moment.of(defs[EFFECTIVE_RANGE], at[1][0])
    common = compiled(shared)
    if common is None:
        return {index.name: Facet({}, 0) for index in named}

    # each facet's own criterion (rows failing it count for that facet only)
    criteria: dict[int, tuple[str, list]] = {
        number: compiled({key: query[key] for key in own[index.name]}) or ("false", [])
        for number, index in enumerate(named)
        if own[index.name]
    }
    # the rows matching what every facet shares, once: each facet's value,
    # whether the row meets its own criterion (c<n>) and each bucket (b<n>_<m>)
    columns: list[str] = []
    params: list = []

    def column(name: str, where: tuple[str, list] | None) -> None:
        columns.append(f"COALESCE(({where[0]}), false) AS {name}" if where else f"false AS {name}")
        params.extend(where[1] if where else [])

    for number, index in enumerate(named):
        columns.append(f"(idx->{index.key}) AS v{number}")
        if number in criteria:
            column(f"c{number}", criteria[number])
        for bucket, bucket_query in enumerate((facets[index.name] or {}).values()):
            column(f"b{number}_{bucket}", compiled({index.name: bucket_query}))
    where, where_params = _counted_rows(common, criteria)

    params += where_params
    counts_sql = _counts_sql(named, facets, criteria)
    moment_sql = "" if moment is None else f" AND {moment.sql()}"
    key = unchanged_key(
        catalog.tool, catalog.site, statement_key(f"{', '.join(columns)} WHERE {where}{moment_sql}", params)
    )
    if key is None:  # this transaction's own changes count
        sql = f"WITH {_ROWS} AS MATERIALIZED (SELECT {', '.join(columns)}, 1 AS sign FROM {ROWS} WHERE {where}{moment_sql})\n"
        params += [moment.now, moment.now] if moment is not None else []
        return _facets(named, facets, _tally(read(catalog.tool, sql + counts_sql, params, site=catalog.site)))
    # the counts this process remembers (at a commit, and a minute), brought
    # up to date by the rows changed since they were made (see changes)
    known = _remembered.get(key) or _kept(catalog, key)
    then = known[1][0] if known else None
    since, signed, signed_params = signed_rows(
        ", ".join(columns),
        where,
        params,
        catalog.site,
        known[0] if known else None,
        None if moment is None else replace(moment, then=then),
        custom=any(index.custom for name, index in defs.items() if name in query or name in facets),
    )
    sql = (
        f"WITH {since},\n{_ROWS} AS MATERIALIZED ({signed})\n"
        f"SELECT {_SINCE_ROW}, changed || ' ' || COALESCE(stamp, ''), 0, NULL FROM {SINCE}\nUNION ALL\n{counts_sql}"
    )
    rows = read(catalog.tool, sql, signed_params, site=catalog.site)
    changed, stamp = next(row[1] for row in rows if row[0] == _SINCE_ROW).split(" ")
    tally = _tally(row for row in rows if row[0] != _SINCE_ROW)
    made = known[1][1] if known else None  # (the log tells "none" or "some" only of counts made)
    if made is not None and changed == NONE:
        tally = made
    elif made is not None and changed == SOME:
        tally = made.plus(tally)
    if stamp:
        _remembered.put(key, stamp, (moment and moment.now, tally))
        if changed == ALL:  # counted from every row: for the other processes too
            share(catalog.tool, key, stamp, {"at": moment and moment.now, **tally.as_json()})
    return _facets(named, facets, tally)


def _kept(catalog: Catalog, key: Hashable) -> tuple[str, tuple[int | None, _Tally]] | None:
    """The counts of *key* some process made from every row (:mod:`~plone.pgcatalog.shared`),
    as this process remembers its own: (stamp, (minute, tally))."""
    kept = shared_answer(catalog.tool, catalog.site, key)
    if kept is None:
        return None
    stamp, answer = kept
    return stamp, (answer["at"], _Tally.from_json(answer))


def _counted_rows(common: tuple[str, list], criteria: dict[int, tuple[str, list]]) -> tuple[str, list]:
    """The WHERE of the rows some facet counts: those matching what all
    share and every facet's own criterion but at most one.  Written out
    (``(c1 AND c2) OR (c0 AND c2) OR ...``) so that PostgreSQL reads them
    through the criteria's indexes rather than every row the shared part
    (often the security terms alone) finds."""
    if len(criteria) < 2:
        return common
    parts: list[str] = []
    params: list = []
    for left_out in criteria:
        kept = [criteria[number] for number in criteria if number != left_out]
        parts.append("(" + " AND ".join(f"({sql})" for sql, _ in kept) + ")")
        params.extend(value for _, values in kept for value in values)
    return f"{common[0]} AND ({' OR '.join(parts)})", [*common[1], *params]


def _counts_sql(named: list[r.IndexDef], facets: Mapping[str, Any], criteria: dict[int, Any]) -> str:
    """Every facet's counts from one pass over the rows (and one more per
    keyword facet, whose values are unnested): rows ``(number, value as
    JSON text, count, NULL)``, and the row ``(TOTALS_ROW, NULL, 0,
    totals)``: each facet's matches, then each bucket's count, in order.
    A facet counts the rows meeting the other facets' own criteria."""
    others = [
        " AND ".join(["true", *(f"c{o}" for o in criteria if o != number)]) for number in range(len(named))
    ]
    totals = [
        f"COALESCE(sum(sign) FILTER (WHERE {others[number]} AND {_held(number, index)}), 0)"
        for number, index in enumerate(named)
    ]
    totals += [
        f"COALESCE(sum(sign) FILTER (WHERE {others[number]} AND b{number}_{bucket}), 0)"
        for number, index in enumerate(named)
        for bucket in range(len(facets[index.name] or ()))
    ]
    by_value = [n for n, index in enumerate(named) if facets[index.name] is None and index.kind != r.KEYWORD]
    array = f"ARRAY[{', '.join(totals)}]"
    if by_value:  # a grouping set per facet counted by value, () for the totals
        grouped = ", ".join(f"v{number}" for number in by_value)
        bits = len(by_value)
        masks = {number: (1 << bits) - 1 - (1 << (bits - 1 - at)) for at, number in enumerate(by_value)}
        which = " ".join(f"WHEN {masks[number]} THEN {number}" for number in by_value)
        count = " ".join(f"WHEN {masks[number]} THEN {totals[number]}" for number in by_value)
        branches = [
            f"SELECT CASE GROUPING({grouped}) {which} ELSE {_TOTALS_ROW} END, "
            f"COALESCE({', '.join(f'v{number}::text' for number in by_value)}), "
            f"CASE GROUPING({grouped}) {count} ELSE 0 END, "
            f"CASE WHEN GROUPING({grouped}) = {(1 << bits) - 1} THEN {array} END "
            f"FROM {_ROWS} GROUP BY GROUPING SETS ({', '.join(f'(v{number})' for number in by_value)}, ())"
        ]
    else:
        branches = [f"SELECT {_TOTALS_ROW}, NULL::text, 0::bigint, {array} FROM {_ROWS}"]
    branches += [  # a keyword's values are each once an item (extraction keeps them so)
        f"SELECT {number}, k::text, sum(sign), NULL::bigint[] FROM {_ROWS}, "
        f"jsonb_array_elements(CASE WHEN jsonb_typeof(v{number}) = 'array' THEN v{number} END) AS k "
        f"WHERE {others[number]} GROUP BY 2"
        for number, index in enumerate(named)
        if facets[index.name] is None and index.kind == r.KEYWORD
    ]
    return "\nUNION ALL\n".join(branches)


def _held(number: int, index: r.IndexDef) -> str:
    """Whether a row holds a value of facet *number*'s index."""
    value = f"v{number}"
    if index.kind == r.KEYWORD:
        return f"(jsonb_typeof({value}) = 'array' AND {value} <> '[]')"
    return f"({value} IS NOT NULL AND jsonb_typeof({value}) <> 'null')"


def _facet_index(defs: Mapping[str, r.IndexDef], name: Any, buckets: Mapping[str, Any] | None) -> r.IndexDef:
    """The index a facet counts, checked."""
    index = defs.get(name) if isinstance(name, str) else None
    if index is None:
        raise CatalogError(f"Unknown index for a facet: {name!r}")
    if name in r.SECURITY_INDEXES:  # who may see an item: searchResults sets them
        raise CatalogError(f"The index {name!r} cannot be a facet: it holds the security terms")
    if buckets is None:
        if index.kind not in VALUE_KINDS:
            raise CatalogError(
                f"The index {name!r} ({index.kind}) has no values to count: give it named buckets "
                "(a mapping of names to queries of that index)"
            )
    elif not isinstance(buckets, Mapping) or not all(isinstance(key, str) for key in buckets):
        raise CatalogError(f"The buckets of facet {name!r} must map names to queries, not {buckets!r}")
    return index


@dataclass(frozen=True)
class _Tally:
    """A statement's counts: *counts* by (facet number, value as JSON
    text), and *totals* (each facet's matches, then each bucket's count)."""

    counts: dict[tuple[int, str], int]
    totals: tuple[int, ...]

    def as_json(self) -> dict:
        return {
            "counts": [[number, value, count] for (number, value), count in self.counts.items()],
            "totals": list(self.totals),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> _Tally:
        return cls({(number, value): count for number, value, count in data["counts"]}, tuple(data["totals"]))

    def plus(self, other: _Tally) -> _Tally:
        counts = dict(self.counts)
        for key, count in other.counts.items():
            counts[key] = counts.get(key, 0) + count
        totals = tuple(a + b for a, b in zip(self.totals, other.totals, strict=True))
        return _Tally({key: count for key, count in counts.items() if count}, totals)


def _tally(rows: Iterable[tuple]) -> _Tally:
    counts, totals = {}, ()
    for number, value, count, row_totals in rows:
        if number == _TOTALS_ROW:
            totals = tuple(row_totals)
        elif value is not None and count:
            counts[number, value] = count
    return _Tally(counts, totals)


def _facets(named: list[r.IndexDef], facets: Mapping[str, Any], tally: _Tally) -> dict[str, Facet]:
    counts: list[dict] = [{} for _ in named]
    for (number, value), count in tally.counts.items():
        counts[number][value] = count
    found, bucket_counts = {}, iter(tally.totals[len(named) :])
    for number, index in enumerate(named):
        buckets = facets[index.name]
        if buckets is not None:  # in the order given
            by_value = {name: next(bucket_counts) for name in buckets}
        else:
            by_value = {_key(orjson.loads(value)): count for value, count in counts[number].items()}
            by_value = dict(sorted(by_value.items(), key=lambda item: (-item[1], str(item[0]))))
        found[index.name] = Facet(by_value, tally.totals[number])
    return found


def _key(value: Any) -> Any:
    """A JSON value as a dict key (a list as a tuple)."""
    return tuple(_key(item) for item in value) if isinstance(value, list) else value
