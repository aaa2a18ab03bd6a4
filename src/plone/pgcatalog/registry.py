"""The index registry: what each catalog index is and how SQL reaches it.

Every index the catalog knows is an :class:`IndexDef`.  The registry is
persisted on the tool as plain data (no index objects, no BTrees) and is
the *only* source of SQL identifiers: the schema's DDL and the query
builder both ask an ``IndexDef`` for its expression, so an expression index
and the query that should use it can never drift apart.
"""

from __future__ import annotations

from typing import Any
from collections.abc import Iterable

from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from functools import lru_cache

import re


__all__ = [
    "BOOLEAN",
    "BTREE_KINDS",
    "DATE",
    "DATE_RANGE",
    "DATE_RECURRING",
    "FIELD",
    "GOPIP",
    "HOT_KEYS",
    "IndexDef",
    "JSON_VALUE",
    "KEYWORD",
    "KINDS",
    "OPEN_END",
    "OPEN_START",
    "OWN_COLUMNS",
    "PATH",
    "QUERY_OPTIONS",
    "SEARCHABLE_TEXT",
    "TEXT",
    "TEXT_VALUE",
    "SECURITY_INDEXES",
    "TYPE_INDEX",
    "UUID",
    "custom_kind",
    "decide_value_type",
    "hot_columns",
    "index_def_from_extra",
    "index_def_from_zcatalog",
    "index_defs",
    "metadata_columns",
    "name_literal",
    "query_custom_kind",
    "set_index_defs",
    "set_metadata_columns",
    "typed_for",
    "UNORDERED",
]


FIELD = "FieldIndex"
KEYWORD = "KeywordIndex"
DATE = "DateIndex"
DATE_RANGE = "DateRangeIndex"
DATE_RECURRING = "DateRecurringIndex"
BOOLEAN = "BooleanIndex"
UUID = "UUIDIndex"
TEXT = "ZCTextIndex"
PATH = "ExtendedPathIndex"
GOPIP = "GopipIndex"
# Kinds stored in a B-tree on (expression, zoid): equality, ranges and sorting
BTREE_KINDS = (FIELD, UUID, DATE, BOOLEAN, GOPIP)
# Listings of one content type by date (news, events, recent items) walk a
# B-tree on (portal_type, date, zoid): see schema.index_ddl and query.page.top_sql
TYPE_INDEX = "portal_type"
# The indexes of Plone's security terms, which searchResults sets itself
SECURITY_INDEXES = ("allowedRolesAndUsers", "effectiveRange")

KINDS = (FIELD, KEYWORD, DATE, DATE_RANGE, DATE_RECURRING, BOOLEAN, UUID, TEXT, PATH, GOPIP)
UNORDERED = -1
"""The ``getObjPositionInParent`` (GOPIP) of an unordered folder's child,
whose position is None: ZCatalog sorts it before every position (and
keeps it)."""


# ZCatalog's ``query_options`` per kind: other option names raise ValueError.
QUERY_OPTIONS = {
    FIELD: ("query", "range", "not"),
    KEYWORD: ("query", "range", "not", "operator"),
    DATE: ("query", "range", "not"),
    DATE_RANGE: ("query",),
    DATE_RECURRING: ("query", "range", "not"),
    BOOLEAN: ("query",),
    UUID: ("query", "range", "not"),
    TEXT: ("query", "as_you_type"),  # as_you_type: ours (text.as_typed)
    PATH: ("query", "level", "operator", "depth", "navtree", "navtree_start"),
    GOPIP: ("query", "range", "not"),
}

# Value types decide the SQL expression of a field-like index.
TEXT_VALUE = "text"  # compared and sorted as text in code point order
JSON_VALUE = "json"  # numbers, booleans and dates: JSONB compares them typed

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,62}$")

SEARCHABLE_TEXT = "SearchableText"

# A DateRangeIndex's open ends, in minutes: beyond its floor and ceiling.
OPEN_START = -(2**31)
OPEN_END = 2**31 - 1

# Indexes whose values live in a column of their own rather than in
# ``idx``: SearchableText's tsvector and the long interface list of
# object_provides would push ``idx`` past PostgreSQL's TOAST threshold, and
# every query would then pay to fetch and decompress it, row by row.
OWN_COLUMNS = {
    (TEXT, SEARCHABLE_TEXT): "searchable_text",
    (KEYWORD, "object_provides"): "object_provides",
}


# Plone's hot keys: the indexes nearly every search filters on (the type,
# the workflow state, the security terms, the effective range).  Their
# values are also copied, by SQL, from ``idx`` into typed columns of
# ``object_state`` (see row.TYPED), which one covering B-tree holds
# together (schema.HOT_KEYS_INDEX): counting a type's published items an
# Anonymous user may see then reads that index alone.  The copy holds
# exactly the expression an index of this kind, name and value type reads
# from ``idx``; an index defined otherwise keeps reading ``idx``.
HOT_KEYS: dict[str, tuple[str, tuple[str, ...]]] = {
    "portal_type": (FIELD, ("portal_type",)),
    "review_state": (FIELD, ("review_state",)),
    "allowedRolesAndUsers": (KEYWORD, ("allowed_roles_and_users",)),
    "effectiveRange": (DATE_RANGE, ("effective_start", "effective_end")),
}
"""Index name -> (its kind in Plone, its typed columns in the order of
the index's expressions)."""


def name_literal(name: str) -> str:
    """Quote *name* as an SQL string literal (names are registry-checked)."""
    if not _NAME.match(name):
        raise ValueError(f"unsupported index name for SQL: {name!r}")
    return "'" + name + "'"


@dataclass(frozen=True)
class IndexDef:
    """One catalog index: its name, kind, source attributes and options."""

    name: str
    kind: str
    attrs: tuple[str, ...] = ()
    options: dict = field(default_factory=dict, compare=False, hash=False)
    # Whether searches may read the typed columns of a hot key: the
    # tool's, once they are filled (see :func:`typed_for`); not stored
    typed: bool = field(default=False, compare=False, hash=False)

    @property
    def source_names(self) -> tuple[str, ...]:
        """The attributes the index reads: its own name unless configured."""
        return self.attrs or (self.name,)

    @property
    def query_options(self) -> tuple[str, ...]:
        if self.kind in QUERY_OPTIONS:
            return QUERY_OPTIONS[self.kind]
        return tuple(custom_kind(self.kind).query_options)

    @property
    def custom(self) -> bool:
        """Whether an add-on's :class:`~plone.pgcatalog.interfaces.IIndexKind` serves it."""
        return self.kind not in KINDS

    @property
    def value_type(self) -> str:
        if self.kind in (DATE, GOPIP, BOOLEAN, DATE_RECURRING):
            return JSON_VALUE
        return self.options.get("value_type", TEXT_VALUE)

    @property
    def decided(self) -> bool:
        """Whether the kind of its keys is known: a field or keyword index
        added empty learns it from the first value it holds (see
        :func:`decide_value_type`); until then it holds no keys."""
        return self.kind not in (FIELD, KEYWORD) or "value_type" in self.options

    @property
    def sql_type(self) -> str:
        """The SQL type of :meth:`expression` for field-like indexes: dates
        (integer minutes) and positions compare as bigint, booleans as
        boolean, text in code point order, other values as JSONB."""
        if self.kind in (DATE, GOPIP):
            return "bigint"
        if self.kind == BOOLEAN:
            return "boolean"
        if self.kind in (FIELD, UUID) and self.value_type == TEXT_VALUE:
            return "text"
        return "jsonb"

    @property
    def sortable(self) -> bool:
        """ZCatalog sorts only on indexes with a ``documentToKeyMap``
        (a path index maps documents to their path strings)."""
        return self.kind in (FIELD, DATE, BOOLEAN, UUID, GOPIP, KEYWORD, DATE_RECURRING, PATH)

    @property
    def column(self) -> str | None:
        """The column of its own this index is stored in, if any."""
        return OWN_COLUMNS.get((self.kind, self.name))

    @property
    def changes(self) -> str:
        """What the catalog's change stamps call a change of what this
        index's clauses read (``schema.NOTE_CHANGES``; :mod:`~plone.pgcatalog.counts`):
        its ``idx`` key, its own column, rows coming, going and moving
        (``#``, the path), or, for an add-on's kind, whose SQL may read
        anything, any change (``*``)."""
        if self.kind == PATH:
            return "#"
        if self.column is not None:
            return f"@{self.column}"
        return self.name if self.kind in KINDS else "*"

    @property
    def key(self) -> str:
        """The index name as an SQL literal, for ``idx->'name'``."""
        return name_literal(self.name)

    @property
    def hot(self) -> tuple[str, ...] | None:
        """The typed columns searches read instead of ``idx``, if any."""
        if not self.typed:
            return None
        return hot_columns(self)

    def expression(self) -> str:
        """The SQL expression that equality, ranges and sorting use."""
        hot = self.hot
        if hot and len(hot) == 1:
            return hot[0]
        return self.idx_expression()

    def idx_expression(self, idx: str = "idx") -> str:
        """:meth:`expression` as read from *idx*, the SQL of an ``idx`` value."""
        if self.kind in (FIELD, UUID, DATE, BOOLEAN, GOPIP):
            sql_type = self.sql_type
            if sql_type == "text":
                return f'(({idx}->>{self.key}) COLLATE "C")'
            if sql_type == "jsonb":
                return f"({idx}->{self.key})"
            return f"(({idx}->>{self.key})::{sql_type})"
        if self.column is not None:
            return self.column
        if self.kind in (KEYWORD, DATE_RECURRING):
            return f"({idx}->{self.key})"
        if self.kind == TEXT:
            return f"(({idx}->>{self.key})::tsvector)"
        if self.kind == PATH:
            return "path"
        if self.kind == DATE_RANGE:
            raise TypeError("a DateRangeIndex has two expressions: range_expressions()")
        raise TypeError(f"no expression for {self.kind}")

    def range_expressions(self) -> tuple[str, ...]:
        """Start and end of a DateRangeIndex (open ends are stored as
        :data:`OPEN_START` / :data:`OPEN_END`)."""
        return self.hot or self.idx_range_expressions()

    def idx_range_expressions(self, idx: str = "idx") -> tuple[str, str]:
        """:meth:`range_expressions` as read from *idx*."""
        return (f"(({idx}->{self.key}->>0)::bigint)", f"(({idx}->{self.key}->>1)::bigint)")

    def idx_expressions(self, idx: str = "idx") -> tuple[str, ...]:
        """Every expression of this index, as read from *idx*."""
        if self.kind == DATE_RANGE:
            return self.idx_range_expressions(idx)
        return (self.idx_expression(idx),)

    def to_data(self) -> dict:
        return {
            "name": self.name,
            "kind": self.kind,
            "attrs": list(self.attrs),
            "options": dict(self.options),
        }

    @classmethod
    def from_data(cls, data: dict) -> IndexDef:
        return cls(data["name"], data["kind"], tuple(data.get("attrs", ())), dict(data.get("options", {})))


def hot_columns(index: IndexDef) -> tuple[str, ...] | None:
    """The typed columns that hold *index*'s values, if it is one of
    :data:`HOT_KEYS` defined as Plone defines it (the columns then hold
    exactly what its expressions read from ``idx``)."""
    if index.name not in HOT_KEYS or index.kind != HOT_KEYS[index.name][0]:
        return None
    return _hot_columns(index.name, index.kind, index.value_type)


@lru_cache(maxsize=64)
def _hot_columns(name: str, kind: str, value_type: str) -> tuple[str, ...] | None:
    # Cached: expression() asks several times per index of every query.
    # Keyed by what reaches an index's expressions (its name, kind and
    # value type; its other options and attrs do not), not by the IndexDef,
    # whose equality and hash leave out the options.
    index = IndexDef(name, kind, options={"value_type": value_type})
    if index.idx_expressions() != IndexDef(name, kind).idx_expressions():
        return None
    return HOT_KEYS[name][1]


def typed_for(tool: Any, index: IndexDef) -> IndexDef:
    """*index* as the searches of *tool* read it: from the typed columns
    once the tool's are filled (``_pgc_typed``)."""
    typed = bool(getattr(tool, "_pgc_typed", False))
    return index if index.typed == typed else replace(index, typed=typed)


def decide_value_type(index: IndexDef, value: Any) -> IndexDef | None:
    """*index*, undecided, with the kind of its keys decided by *value*,
    the first value it is given (a keyword index's: its first item): as a
    ZCatalog index's BTree takes the type of its first key.  Numbers (and
    booleans) compare and sort as numbers, text in code point order.  None
    while *value* decides nothing (no value, or neither number nor text)."""
    if isinstance(value, (list, tuple)):
        value = next((item for item in value if item is not None), None)
    if isinstance(value, (int, float)):
        value_type = JSON_VALUE
    elif isinstance(value, str):
        value_type = TEXT_VALUE
    else:
        return None
    return replace(index, options={**index.options, "value_type": value_type})


def index_def_from_zcatalog(index: Any) -> IndexDef | None:
    """Describe a ZCatalog index object as an :class:`IndexDef`.

    Returns None for meta types this catalog has no SQL for; the caller
    decides how loudly to say so.
    """
    kind = index.meta_type
    name = index.getId()
    getter = getattr(index, "getIndexSourceNames", None)
    attrs = tuple(getter()) if getter is not None else ()
    if kind not in KINDS:
        utility = query_custom_kind(kind)
        if utility is None:
            return None
        return IndexDef(name, kind, attrs, dict(utility.options(index)))
    options = {}
    if kind == DATE:
        options["naive_as_local"] = bool(getattr(index, "index_naive_time_as_local", True))
        options["precision"] = int(getattr(index, "precision", 0) or 0)
    elif kind == DATE_RANGE:
        options["since_field"] = index.getSinceField()
        options["until_field"] = index.getUntilField()
        options["precision"] = int(getattr(index, "precision_value", 0) or 0)
        attrs = ()
    elif kind == DATE_RECURRING:
        options["recurdef"] = getattr(index, "attr_recurdef", None)
        options["until"] = getattr(index, "attr_until", None)
    elif kind == TEXT:
        options["lexicon_id"] = getattr(index, "lexicon_id", None)
        options["index_type"] = index.getIndexType() if hasattr(index, "getIndexType") else None
    elif kind == PATH:
        attrs = ()
    elif kind == UUID:
        options["value_type"] = TEXT_VALUE
    elif kind in (FIELD, KEYWORD):
        value_type = _guess_value_type(index)
        if value_type is not None:  # else its first value decides
            options["value_type"] = value_type
    return IndexDef(name, kind, attrs, options)


def _guess_value_type(index) -> str | None:
    """Pick ``json`` for a field or keyword index whose existing keys are
    all numbers: its BTree's keys then compare with numbers only; None
    for an empty one."""
    try:
        keys = list(index.uniqueValues())
    except Exception:
        return TEXT_VALUE
    if not keys:
        return None
    if all(isinstance(k, (int, float)) and not isinstance(k, bool) for k in keys):
        return JSON_VALUE
    return TEXT_VALUE


def index_def_from_extra(name: str, kind: str, extra: Any = None) -> IndexDef:
    """Build an :class:`IndexDef` from ``addIndex(name, type, extra)`` arguments."""
    if kind not in KINDS and query_custom_kind(kind) is None:
        raise ValueError(
            f"plone.pgcatalog has no SQL for index type {kind!r} (index {name!r}): "
            "register an IIndexKind utility of that name"
        )

    def get(key, default=None):
        if extra is None:
            return default
        if isinstance(extra, dict):
            return extra.get(key, default)
        return getattr(extra, key, default)

    attrs = get("indexed_attrs")
    if isinstance(attrs, str):
        attrs = [a.strip() for a in attrs.split(",") if a.strip()]
    attrs = tuple(attrs or ((name,) if kind not in (PATH, DATE_RANGE) else ()))
    options = {}
    if kind == DATE:
        options["naive_as_local"] = True
        options["precision"] = 0
    elif kind == DATE_RANGE:
        options["since_field"] = get("since_field")
        options["until_field"] = get("until_field")
        options["precision"] = 0
    elif kind == DATE_RECURRING:
        options["recurdef"] = get("recurdef")
        options["until"] = get("until")
    elif kind == TEXT:
        options["lexicon_id"] = get("lexicon_id")
        options["index_type"] = get("index_type")
    elif kind == UUID:
        options["value_type"] = TEXT_VALUE
    elif kind in (FIELD, KEYWORD) and get("value_type"):
        options["value_type"] = get("value_type")  # else its first value decides
    return IndexDef(name, kind, attrs, options)


def query_custom_kind(kind: str) -> Any:
    """The add-on's :class:`~plone.pgcatalog.interfaces.IIndexKind` for *kind*, or None."""
    from plone.pgcatalog.interfaces import IIndexKind
    from zope.component import queryUtility

    return queryUtility(IIndexKind, name=kind)


def custom_kind(kind: str) -> Any:
    """Like :func:`query_custom_kind`, but a missing utility is an error."""
    utility = query_custom_kind(kind)
    if utility is None:
        raise LookupError(f"no IIndexKind utility for index type {kind!r}")
    return utility


# The registry is kept on the catalog tool as plain data (no persistent
# objects of its own): ``_pgc_indexes``, IndexDef.to_data() dicts in
# definition order, and ``_pgc_columns``, the metadata column names.


def index_defs(tool: Any) -> dict[str, IndexDef]:
    """The tool's indexes by name, in definition order (built once per
    change of the stored tuple, in a volatile attribute)."""
    stored, typed = tool._pgc_indexes, bool(getattr(tool, "_pgc_typed", False))
    cached = tool.__dict__.get("_v_index_defs")
    if cached is not None and cached[0] is stored and cached[1] == typed:
        return cached[2]
    defs = {data["name"]: replace(IndexDef.from_data(data), typed=typed) for data in stored}
    tool._v_index_defs = (stored, typed, defs)
    return defs


def set_index_defs(tool: Any, defs: Iterable[IndexDef]) -> None:
    """Store *defs* (IndexDefs, in order) as the tool's indexes."""
    tool._pgc_indexes = tuple(d.to_data() for d in defs)


def unserved(tool: Any) -> dict[str, tuple[str, tuple[str, ...]]]:
    """The indexes the catalog had when it was installed and has no SQL
    for: name -> (meta type, source names).  A query on one is refused
    (its answer would be wider than the stock catalog's)."""
    return dict(getattr(tool, "_pgc_unserved", ()))


def set_unserved(tool: Any, found: dict[str, tuple[str, tuple[str, ...]]]) -> None:
    tool._pgc_unserved = tuple(found.items())


def metadata_columns(tool: Any) -> tuple[str, ...]:
    """The tool's metadata column names, in order."""
    return tuple(tool._pgc_columns)


def set_metadata_columns(tool: Any, names: Iterable[str]) -> None:
    tool._pgc_columns = tuple(names)
