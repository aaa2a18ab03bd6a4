"""The catalog row: its columns on ``object_state`` and how a partial
reindex merges into it.

A row is written whole when an object is cataloged, and merged when only
some indexes are reindexed (a workflow change).  The merge happens in three
places: in Python when one transaction reindexes an object twice
(:mod:`~plone.pgcatalog.pending`), in the commit's SQL
(:mod:`~plone.pgcatalog.processor`), and in the SQL a search reads before
the commit (:mod:`~plone.pgcatalog.overlay`).  All three, the DDL of the
columns and the clearing of an index are generated here from one table,
:data:`COLUMNS`, so that what a transaction reads of its own changes is
what its commit writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from enum import Enum
from plone.pgcatalog import registry as r
from plone.pgcatalog.registry import name_literal
from typing import Any

import orjson


__all__ = [
    "COLUMNS",
    "INDEXED_TEXT",
    "STAMP",
    "STAMP_COLUMN",
    "TYPED",
    "TypedColumn",
    "Unordered",
    "column_names",
    "CatalogRow",
    "Column",
    "Merge",
    "clear_all_sql",
    "clear_index_sql",
    "column_ddl",
    "differs_sql",
    "extra_columns",
    "fill_typed_sql",
    "committed_sql",
    "full_rows_sql",
    "merged_sql",
    "own_columns",
    "partial_update_sql",
    "partial_update_params",
    "pending_sql",
    "record",
    "record_columns_sql",
    "sql_params",
    "typed_select_sql",
    "typed_sets",
]


class Merge(Enum):
    """How a partial row's value of a column meets the stored one."""

    REPLACE = "replace"  # the partial row's value (a row moves with its object)
    KEYS = "keys"  # a JSON object merged key by key: a null removes the key
    UNLESS_NONE = "unless_none"  # the partial row's value, unless it has none
    IF_CARRIED = "if_carried"  # the partial row's value where it carries one


def _bare_type(declared: str) -> str:
    """A column's SQL type as declared, without its collation."""
    return declared.split()[0].lower()


class Unordered(Enum):
    """Which of a column's JSON arrays are keyword lists, compared without
    their order (:func:`differs_sql`): a keyword index's values are a set,
    and their order comes from a Python set (it differs between processes)
    or from the indexer (``allowedRolesAndUsers`` lists a dict of roles)."""

    NONE = "none"  # compared as stored
    ARRAY = "array"  # the value is one keyword list
    VALUES = "values"  # a JSON object whose array values are keyword lists


@dataclass(frozen=True)
class Column:
    """One catalog column of ``object_state``."""

    name: str
    declared: str  # its type in the table
    merge: Merge
    json: bool = False  # JSON in Python, encoded for SQL
    empty_is_null: bool = False  # KEYS: an empty object is stored as NULL
    overlaid: bool = True  # False: searches read the committed value (see overlay)
    unordered: Unordered = Unordered.NONE  # its keyword lists, for differs_sql

    @property
    def sql_type(self) -> str:
        """The type without its collation: what a parameter is cast to."""
        return _bare_type(self.declared)


INDEXED_TEXT = "indexed_text"

COLUMNS: tuple[Column, ...] = (
    Column("path", 'TEXT COLLATE "C"', Merge.REPLACE),
    Column("parent_path", 'TEXT COLLATE "C"', Merge.REPLACE),
    Column("path_depth", "INTEGER", Merge.REPLACE),
    # index name -> value, for the indexes without a column of their own
    Column("idx", "JSONB", Merge.KEYS, json=True, unordered=Unordered.VALUES),
    # text index name -> [number of words, {word: frequency}] (relevance)
    Column("word_counts", "JSONB", Merge.KEYS, json=True, empty_is_null=True),
    # metadata column -> encoded value; a brain reads it, never SQL, so a
    # search in a transaction takes the pending metadata from Python
    Column("meta", "TEXT", Merge.UNLESS_NONE, json=True, overlaid=False),
    # the indexes with columns of their own (registry.OWN_COLUMNS)
    Column("searchable_text", "TSVECTOR", Merge.IF_CARRIED),
    Column("object_provides", "JSONB", Merge.IF_CARRIED, json=True, unordered=Unordered.ARRAY),
    # the text SearchableText was made of, for snippets (only a page's are read)
    Column(INDEXED_TEXT, "TEXT", Merge.IF_CARRIED, overlaid=False),
)
"""Every catalog column, in the order the table gets them."""


@dataclass(frozen=True)
class TypedColumn:
    """A typed copy of one expression of a hot key's value in ``idx``
    (:data:`~plone.pgcatalog.registry.HOT_KEYS`).  Never written from
    Python: every statement that writes ``idx`` sets it from the new
    ``idx`` in SQL, so it cannot disagree with ``idx``."""

    name: str
    declared: str
    index: str  # the hot key's index name
    position: int  # which of that index's expressions

    @property
    def sql_type(self) -> str:
        """The type without its collation."""
        return _bare_type(self.declared)

    def value_sql(self, idx: str) -> str:
        """Its value in a row whose ``idx`` is the SQL *idx*."""
        kind, _ = r.HOT_KEYS[self.index]
        return r.IndexDef(self.index, kind).idx_expressions(f"({idx})")[self.position]


_TYPED_DECLARED = {r.FIELD: 'TEXT COLLATE "C"', r.KEYWORD: "JSONB", r.DATE_RANGE: "BIGINT"}

TYPED: tuple[TypedColumn, ...] = tuple(
    TypedColumn(column, _TYPED_DECLARED[kind], name, position)
    for name, (kind, columns) in r.HOT_KEYS.items()
    for position, column in enumerate(columns)
)
"""The typed columns of the hot keys, in the order the table gets them."""


def typed_sets(idx: str) -> str:
    """SET clauses of the typed columns of a row whose new ``idx`` is the
    SQL *idx*."""
    return ", ".join(f"{t.name} = {t.value_sql(idx)}" for t in TYPED)


def typed_select_sql(idx: str | None, alias: str) -> str:
    """Select-list entries of the typed columns: the stored ones of table
    *alias*, or, where ``idx`` is the expression *idx*, derived from it."""
    return ", ".join(
        f"{t.value_sql(idx) if idx is not None else f'{alias}.{t.name}'} AS {t.name}" for t in TYPED
    )


def fill_typed_sql() -> str:
    """Set every catalog row's typed columns from its ``idx`` (an install
    of a release before them, or rows written while they were not read)."""
    differs = " OR ".join(f"{t.name} IS DISTINCT FROM {t.value_sql('idx')}" for t in TYPED)
    return f"UPDATE object_state SET {typed_sets('idx')} WHERE idx IS NOT NULL AND ({differs})"


def own_columns() -> tuple[Column, ...]:
    """The columns of indexes that have one (registry.OWN_COLUMNS): those
    carried by a row that searches read (not ``indexed_text``)."""
    return tuple(c for c in COLUMNS if c.merge is Merge.IF_CARRIED and c.overlaid)


@dataclass(frozen=True)
class CatalogRow:
    """What the catalog holds for one object, or, when *partial*, the
    values of the indexes one reindex recomputed (a null value in ``idx``
    or ``word_counts`` removes that key from the stored row)."""

    path: str
    idx: dict[str, Any] = field(default_factory=dict)
    word_counts: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] | None = None  # None in a partial row: the stored metadata stays
    partial: bool = False
    own: dict[str, Any] = field(default_factory=dict)  # own columns carried (None clears)

    @property
    def parent_path(self) -> str:
        return self.path.rpartition("/")[0] or "/"

    @property
    def path_depth(self) -> int:
        return self.path.count("/")

    def value(self, column: Column) -> Any:
        if column.merge is Merge.IF_CARRIED:
            return self.own.get(column.name)
        return getattr(self, column.name)

    def carries(self, column: Column) -> bool:
        """Whether a partial row sets *column* (a full row sets them all)."""
        if not self.partial or column.merge in (Merge.REPLACE, Merge.KEYS):
            return True
        if column.merge is Merge.UNLESS_NONE:
            return self.value(column) is not None
        return column.name in self.own

    def merged(self, later: CatalogRow) -> CatalogRow:
        """This row with a *later* one of the same object laid over it."""
        if not later.partial:
            return later
        own = {**self.own, **later.own}
        meta = later.meta if later.meta is not None else self.meta
        idx, counts = {**self.idx, **later.idx}, {**self.word_counts, **later.word_counts}
        return replace(self, path=later.path, idx=idx, word_counts=counts, meta=meta, own=own)

    def cleared(self, name: str, column: str | None) -> CatalogRow:
        """This row without index *name* (stored in *column*, if it has one):
        ZCatalog's ``index.clear()``, of a row that is not yet written."""
        own = dict(self.own)
        if column is not None and (not self.partial or column in own):
            own[column] = None
        keyed = {"idx": dict(self.idx), "word_counts": dict(self.word_counts)}
        for key in ("word_counts",) if column is not None else ("idx", "word_counts"):
            if self.partial:
                keyed[key][name] = None  # merged, a null removes the stored key
            else:
                keyed[key].pop(name, None)
        return replace(self, own=own, **keyed)


def _encode(column: Column, value: Any, partial: bool) -> Any:
    """*value* of *column* as it goes to the database, not yet JSON."""
    if column.merge is Merge.KEYS:
        if not partial:  # a full row holds no nulls, and maybe no object
            value = {k: v for k, v in (value or {}).items() if v is not None}
            if column.empty_is_null and not value:
                return None
        return value or {}
    return value


def sql_params(row: CatalogRow) -> dict[str, Any]:
    """*row* as SQL parameters: one per column, and, for a partial row,
    ``has_<column>`` for each column it may leave alone."""
    params = {}
    for column in COLUMNS:
        value = _encode(column, row.value(column), row.partial)
        params[column.name] = orjson.dumps(value).decode() if column.json and value is not None else value
        if column.merge is Merge.IF_CARRIED:
            params[f"has_{column.name}"] = row.carries(column)
    return params


def record(zoid: int, row: CatalogRow, written: bool = False) -> dict[str, Any]:
    """*row* as one JSON record: of the pending rows a search lays over the
    committed ones, or, *written*, of the partial rows a commit merges
    (with every column; :func:`record_columns_sql` declares its fields)."""
    fields = {"zoid": zoid, "partial": row.partial}
    for column in COLUMNS:
        if column.overlaid or written:
            value = _encode(column, row.value(column), row.partial)
            if column.json and column.sql_type != "jsonb" and value is not None:
                value = orjson.dumps(value).decode()  # JSON kept as text
            fields[column.name] = value
            if column.merge is Merge.IF_CARRIED:
                fields[f"has_{column.name}"] = row.carries(column)
    return fields


def record_columns_sql(written: bool = False) -> str:
    """The fields of a :func:`record`, for ``jsonb_to_recordset``."""
    fields = ["zoid bigint", "partial boolean"]
    for column in COLUMNS:
        if column.overlaid or written:
            fields.append(f"{column.name} {column.sql_type}")
            if column.merge is Merge.IF_CARRIED:
                fields.append(f"has_{column.name} boolean")
    return ", ".join(fields)


def differs_sql(stored: str, fresh: str, typed: bool = False) -> str:
    """SQL that is true where the stored row (table *stored*) differs from
    a full :func:`record` (table *fresh*) in a column searches read (the
    typed columns too, when they are read)."""
    tests = [
        f"{_unordered(c, f'{stored}.{c.name}')} IS DISTINCT FROM {_unordered(c, f'{fresh}.{c.name}')}"
        for c in COLUMNS
        if c.overlaid
    ]
    if typed:
        tests += [f"{stored}.{t.name} IS DISTINCT FROM {t.value_sql(f'{stored}.idx')}" for t in TYPED]
    return " OR ".join(tests)


def _unordered(column: Column, value: str) -> str:
    """*value* of *column* with its keyword lists sorted
    (:attr:`Column.unordered` says which)."""
    if column.unordered is Unordered.ARRAY:
        return _sorted_array(value)
    if column.unordered is Unordered.VALUES:
        return (
            f"COALESCE((SELECT jsonb_object_agg(key, CASE WHEN jsonb_typeof(value) = 'array' "
            f"THEN {_sorted_array('value')} ELSE value END) FROM jsonb_each({value})), {value})"
        )
    return value


def _sorted_array(array: str) -> str:
    return f"COALESCE((SELECT jsonb_agg(e ORDER BY e) FROM jsonb_array_elements({array}) AS e), {array})"


def merged_sql(column: Column, stored: str, new: str, carried: str) -> str:
    """SQL of *column* after a partial row's value *new* meets the *stored*
    one; *carried* is true where the row carries the column."""
    if column.merge is Merge.REPLACE:
        return new
    if column.merge is Merge.UNLESS_NONE:
        return f"COALESCE({new}, {stored})"
    if column.merge is Merge.IF_CARRIED:
        return f"CASE WHEN {carried} THEN {new} ELSE {stored} END"
    merged = f"jsonb_strip_nulls(COALESCE({stored}, '{{}}'::jsonb) || {new})"
    return f"NULLIF({merged}, '{{}}')" if column.empty_is_null else merged


def _param(column: Column) -> str:
    return f"%({column.name})s::{column.sql_type}"


STAMP_COLUMN = "catalog_tid"
STAMP = f"{STAMP_COLUMN} = (SELECT max(tid) FROM transaction_log)"
"""SET clause for every write of catalog data that does not go with its
object's own row (a partial reindex, an uncatalog, a catalog-only full
reindex): ``catalog_tid`` is then the writing transaction's tid (the
newest in the log: zodb-pgjsonb serialises commits).  A row written with
its object needs no stamp: its ``tid`` says when.  The processor's
conflict check reads both."""


def column_ddl() -> str:
    """``ADD COLUMN`` clauses for every catalog column and the stamp
    (idempotent)."""
    columns = [f"    ADD COLUMN IF NOT EXISTS {c.name} {c.declared}" for c in (*COLUMNS, *TYPED)]
    return ",\n".join([*columns, f"    ADD COLUMN IF NOT EXISTS {STAMP_COLUMN} BIGINT"])


def column_names() -> list[str]:
    """Every column the catalog adds to ``object_state`` (what uninstall drops)."""
    return [*(c.name for c in (*COLUMNS, *TYPED)), STAMP_COLUMN]


def extra_columns() -> list[tuple[str, str]]:
    """``(column, value SQL)`` that zodb-pgjsonb writes with an object's
    row, from :func:`sql_params` of a full row."""
    idx = _param(next(c for c in COLUMNS if c.name == "idx"))
    return [*((c.name, _param(c)) for c in COLUMNS), *((t.name, t.value_sql(idx)) for t in TYPED)]


def full_rows_sql() -> str:
    """Write full rows where they differ from the stored ones, all in one
    statement (the one parameter: a JSON array of :func:`record`
    ``written``).

    A row equal in every catalog column, typed ones included, is left as
    it is: the same row, without the cost of a new row version in each of
    the table's indexes (a rebuild of an unchanged site then writes
    nothing)."""
    # Not differs_sql: that asks whether a search would read something
    # different (keyword order ignored, only overlaid columns); this asks
    # whether the write would store something different, so every column
    # counts and JSONB is compared as text (``1`` and ``1.0`` are equal
    # JSONB numbers, a reordered list is not the same write).
    tests = [_differs_as_written(f"o.{c.name}", f"p.{c.name}", c.sql_type) for c in COLUMNS]
    tests += [_differs_as_written(f"o.{t.name}", t.value_sql("p.idx"), t.sql_type) for t in TYPED]
    sets = ", ".join(f"{c.name} = p.{c.name}" for c in COLUMNS)
    return (
        f"UPDATE object_state o SET {sets}, {typed_sets('p.idx')}, {STAMP} "
        f"FROM jsonb_to_recordset(%s::jsonb) AS p({record_columns_sql(written=True)}) "
        f"WHERE o.zoid = p.zoid AND ({' OR '.join(tests)})"
    )


def _differs_as_written(stored: str, fresh: str, sql_type: str) -> str:
    if sql_type == "jsonb":
        stored, fresh = f"({stored})::text", f"({fresh})::text"
    return f"{stored} IS DISTINCT FROM {fresh}"


def partial_update_sql() -> str:
    """Merge partial rows into the stored ones, all in one statement (a
    partial reindex of a workflow change, the rows below a moved folder);
    the one parameter is :func:`partial_update_params`."""
    merged = {c.name: merged_sql(c, f"o.{c.name}", f"p.{c.name}", f"p.has_{c.name}") for c in COLUMNS}
    sets = ", ".join(f"{name} = {value}" for name, value in merged.items())
    return (
        f"UPDATE object_state o SET {sets}, {typed_sets(merged['idx'])}, {STAMP} "
        f"FROM jsonb_to_recordset(%s::jsonb) AS p({record_columns_sql(written=True)}) WHERE o.zoid = p.zoid"
    )


def partial_update_params(rows: Mapping[int, CatalogRow]) -> list[str]:
    """The parameter of :func:`partial_update_sql`: partial *rows* by zoid."""
    return [orjson.dumps([record(zoid, r, written=True) for zoid, r in rows.items()]).decode()]


def clear_all_sql() -> str:
    """SET clause that uncatalogs a row."""
    return ", ".join([*(f"{c.name} = NULL" for c in (*COLUMNS, *TYPED)), STAMP])


def _cleared_keys(column: Column, cleared: Mapping[str, str | None]) -> list[str]:
    """The keys that clearing the indexes *cleared* (name -> own column or
    None) removes from the KEYS *column*: ``idx`` holds the indexes without
    a column of their own, ``word_counts`` every text index."""
    if column.name == "idx":
        return [name for name, own in cleared.items() if own is None]
    return list(cleared)


def committed_sql(column: Column, alias: str, cleared: Mapping[str, str | None]) -> str:
    """SQL of a committed row's *column* (table *alias*) once the indexes
    *cleared* in this transaction (name -> own column or None) have lost
    their values."""
    stored = f"{alias}.{column.name}"
    if column.merge is Merge.IF_CARRIED:
        return f"NULL::{column.sql_type}" if column.name in cleared.values() else stored
    keys = _cleared_keys(column, cleared) if column.merge is Merge.KEYS else []
    if not keys:
        return stored
    without = f"{stored} - ARRAY[{', '.join(map(name_literal, keys))}]"
    return f"NULLIF({without}, '{{}}')" if column.empty_is_null else f"({without})"


def pending_sql(column: Column, committed: str, alias: str = "p") -> str:
    """SQL of *column* of a pending :func:`record` (table *alias*) laid over
    the *committed* value of its object (NULL for an object new to the
    catalog)."""
    if not column.overlaid:
        return committed
    new = f"{alias}.{column.name}"
    merged = merged_sql(column, committed, new, f"{alias}.has_{column.name}")
    if column.merge is Merge.KEYS:
        return f"CASE WHEN {alias}.partial THEN {merged} ELSE {new} END"
    return merged


def clear_index_sql(name: str, column: str | None) -> str:
    """Drop the committed rows' values of index *name*, kept in its own
    *column* if it has one (ZCatalog's ``index.clear()``), except in the
    rows given as the one parameter (an array of zoids)."""
    key = name_literal(name)
    sets, found = [], []
    for c in COLUMNS:
        if c.merge is Merge.IF_CARRIED and c.name == column:
            sets.append(f"{c.name} = NULL")
            found.append(f"{c.name} IS NOT NULL")
        elif c.merge is Merge.KEYS and _cleared_keys(c, {name: column}):
            empty = "NULLIF({}, '{{}}')" if c.empty_is_null else "{}"
            sets.append(f"{c.name} = " + empty.format(f"{c.name} - {key}"))
            found.append(f"{c.name} ? {key}")
            if c.name == "idx" and name in r.HOT_KEYS:
                sets.append(typed_sets(f"idx - {key}"))
    return (
        f"UPDATE object_state SET {', '.join(sets)} "
        f"WHERE ({' OR '.join(found)}) AND NOT (zoid = ANY(%s::bigint[]))"
    )
