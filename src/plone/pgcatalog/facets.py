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
meets each facet's own criterion, and counts every facet from that.

A facet counts either the values its index keeps (as ``uniqueValuesFor``
lists them: a field or boolean index's value, each of a keyword index's
values once per item) or named buckets, each a query of its index
(``{"last week": {"query": DateTime() - 7, "range": "min"}}``), which
serves date indexes.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from plone.pgcatalog import registry as r
from plone.pgcatalog.database import read
from Products.ZCatalog.ZCatalog import CatalogError
from plone.pgcatalog.query import criterion_keys
from plone.pgcatalog.query import where_of
from plone.pgcatalog.schema import ROWS
from typing import Any
from typing import TYPE_CHECKING

import orjson


if TYPE_CHECKING:
    from plone.pgcatalog.search import Catalog


__all__ = ["Facet", "facet_counts"]

# The kinds whose values a facet counts (a date index is counted in buckets)
VALUE_KINDS = (r.FIELD, r.KEYWORD, r.BOOLEAN)
# What no facet may count: the security terms' values name who may see an
# item, and searchResults sets these criteria itself
NEVER = ("allowedRolesAndUsers", "effectiveRange")

_ROWS = "pgcatalog_facet_rows"


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
    common = compiled(shared)
    if common is None:
        return {index.name: Facet({}, 0) for index in named}

    # each facet's own criterion (rows failing it count for that facet only)
    criteria = {
        number: compiled({key: query[key] for key in own[index.name]}) or ("false", [])
        for number, index in enumerate(named)
        if own[index.name]
    }
    # the rows matching what every facet shares, once: each facet's value,
    # whether the row meets its own criterion (c<n>) and each bucket (b<n>_<m>)
    columns, params = ["object_state.zoid"], []

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

    branches = []
    for number, index in enumerate(named):
        others = " AND ".join(["true", *(f"c{other}" for other in criteria if other != number)])
        branches.extend(_branches(number, index, facets[index.name], others))
    sql = (
        f"WITH {_ROWS} AS MATERIALIZED (SELECT {', '.join(columns)} FROM {ROWS} WHERE {where})\n"
        + "\nUNION ALL\n".join(branches)
    )
    rows = read(catalog.tool, sql, [*params, *where_params], site=catalog.site)
    return _facets(named, facets, rows)


def _counted_rows(common: tuple[str, list], criteria: dict[int, tuple[str, list]]) -> tuple[str, list]:
    """The WHERE of the rows some facet counts: those matching what all
    share and every facet's own criterion but at most one.  Written out
    (``(c1 AND c2) OR (c0 AND c2) OR ...``) so that PostgreSQL reads them
    through the criteria's indexes rather than every row the shared part
    (often the security terms alone) finds."""
    if len(criteria) < 2:
        return common
    parts, params = [], []
    for left_out in criteria:
        kept = [criteria[number] for number in criteria if number != left_out]
        parts.append("(" + " AND ".join(f"({sql})" for sql, _ in kept) + ")")
        params.extend(value for _, values in kept for value in values)
    return f"{common[0]} AND ({' OR '.join(parts)})", [*common[1], *params]


def _branches(number: int, index: r.IndexDef, buckets: Mapping | None, others: str) -> list[str]:
    """The counts of facet *number* over the rows meeting the *others*'
    criteria: ``(number, value as JSON text or bucket number, count)``,
    the rows holding a value first (value NULL)."""
    value = f"v{number}"
    held = f"{value} IS NOT NULL AND jsonb_typeof({value}) <> 'null'"
    if index.kind == r.KEYWORD:
        held = f"jsonb_typeof({value}) = 'array' AND {value} <> '[]'"
    found = [f"SELECT {number}, NULL::text, count(*) FROM {_ROWS} WHERE {others} AND {held}"]
    if buckets is not None:
        found += [
            f"SELECT {number}, '{bucket}', count(*) FROM {_ROWS} WHERE {others} AND b{number}_{bucket}"
            for bucket in range(len(buckets))
        ]
    elif index.kind == r.KEYWORD:  # each value once an item
        found.append(
            f"SELECT {number}, k::text, count(DISTINCT zoid) FROM {_ROWS}, "
            f"jsonb_array_elements(CASE WHEN jsonb_typeof({value}) = 'array' THEN {value} END) AS k "
            f"WHERE {others} GROUP BY 2"
        )
    else:
        found.append(f"SELECT {number}, {value}::text, count(*) FROM {_ROWS} WHERE {others} AND {held} GROUP BY 2")
    return found


def _facet_index(defs: Mapping[str, r.IndexDef], name: Any, buckets: Mapping[str, Any] | None) -> r.IndexDef:
    """The index a facet counts, checked."""
    index = defs.get(name) if isinstance(name, str) else None
    if index is None:
        raise CatalogError(f"Unknown index for a facet: {name!r}")
    if name in NEVER:
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


def _facets(named: list[r.IndexDef], facets: Mapping[str, Any], rows: list[tuple]) -> dict[str, Facet]:
    counts: list[dict] = [{} for _ in named]
    matches = [0] * len(named)
    for number, value, count in rows:
        if value is None:
            matches[number] = count
        else:
            counts[number][value] = count
    found = {}
    for number, index in enumerate(named):
        buckets = facets[index.name]
        if buckets is not None:
            names = list(buckets)
            by_value = {names[int(bucket)]: count for bucket, count in counts[number].items()}
            by_value = {name: by_value[name] for name in names}  # in the order given
        else:
            by_value = {_key(orjson.loads(value)): count for value, count in counts[number].items()}
            by_value = dict(sorted(by_value.items(), key=lambda item: (-item[1], str(item[0]))))
        found[index.name] = Facet(by_value, matches[number])
    return found


def _key(value: Any) -> Any:
    """A JSON value as a dict key (a list as a tuple)."""
    return tuple(_key(item) for item in value) if isinstance(value, list) else value
