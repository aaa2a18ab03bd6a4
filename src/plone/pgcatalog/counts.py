"""Counts of matches, kept between catalog changes.

ZCatalog knows how many items a field index holds under a key without
counting them (a BTree set keeps its length), so ``len()`` of a search for
a type is as cheap at 20,000 matches as at 20.  SQL counts every match:
index-only, but a fraction of a microsecond per entry, every time.  The
same searches come again and again between changes (a listing, a
collection, a portlet), so each process remembers the counts it has made,
with the catalog's *generation* they were made at, and a count is made
again only when the catalog has changed since.

A write that cannot change a count leaves it standing: an editor's new
title changes no count of a type's items.  The commit of every catalog
change stamps what it changed (``schema.NOTE_CHANGES``: the ``idx`` keys,
the own columns, or "a row entered, left or moved"), each
stamp the new value of ``pgcatalog_counter`` with the transaction's id, so
no stamp ever comes back for other content: not after a database is
restored from a copy, nor when a test's snapshot is put back.  A count's
*generation* is the stamps of what its statement reads
(``Statement.reads``, ``Ordering.reads``) and of the catalog's rows coming
and going; an add-on's index kind, whose SQL may read anything, counts
after any change (``*``).  The check is part of the statement that needs
the count, read in its snapshot: the statement reads the cached number
when the generation is the one it was made at, and counts otherwise
(PostgreSQL evaluates the subquery only on that branch).  A transaction
with pending catalog changes reads its own rows: it counts, and remembers
nothing.

A count asked for alone (``len()`` of a batch, of a page of scored
matches) is also brought up to date where what it reads changed: the
remembered number plus the rows the commits since changed as they are,
minus the same rows as they were (the change log: :mod:`~plone.pgcatalog.changes`),
so that a new item on a busy site does not make every count again.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from collections.abc import Hashable
from collections.abc import Iterable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import replace
from operator import itemgetter
from plone.pgcatalog.changes import ALL
from plone.pgcatalog.changes import Moment
from plone.pgcatalog.changes import SINCE
from plone.pgcatalog.changes import signed_rows
from plone.pgcatalog.connection import storage_dsn
from plone.pgcatalog.overlay import has_changes
from plone.pgcatalog.pending import get_pending
from plone.pgcatalog.schema import generation_sql
from plone.pgcatalog.schema import ROWS
from plone.pgcatalog.schema import SHARED
from plone.pgcatalog.shared import digest
from plone.pgcatalog.shared import share
from plone.pgcatalog.shared import shared_answer
from typing import Any

import threading


__all__ = [
    "Count",
    "Remembered",
    "SHARED_FROM",
    "WIDTH",
    "count_column",
    "count_statement",
    "remembered_count",
    "remembered_statement",
    "side_by_side",
    "statement_key",
    "unchanged_key",
]

SIZE = 1024
"""Counts remembered per process (the least recently used go first)."""


class Remembered:
    """Answers a process keeps, each with the catalog's generation it was
    read at (:func:`~plone.pgcatalog.schema.generation_sql`), at most
    *size* (the least recently used go first)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._answers: OrderedDict[Hashable, tuple[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> tuple[str, Any] | None:
        """The (generation, answer) kept under *key*, if any."""
        with self._lock:
            return self._answers.get(key)

    def put(self, key: Hashable, generation: str, answer: Any) -> None:
        with self._lock:
            self._answers[key] = (generation, answer)
            self._answers.move_to_end(key)
            while len(self._answers) > self.size:
                self._answers.popitem(last=False)

    def items(self) -> list[tuple[Hashable, tuple[str, Any]]]:
        """What is kept, least recently used first: (key, (generation, answer))."""
        with self._lock:
            return list(self._answers.items())

    def clear(self) -> None:
        """Forget everything (tests start from nothing)."""
        with self._lock:
            self._answers.clear()


_counts = Remembered(SIZE)
"""Counts by :func:`unchanged_key`: (generation, (number, stamp)), the
stamp of the commit the count was made at where the statement read it
(:func:`count_statement`), else None."""


@dataclass(frozen=True)
class Count:
    """Two columns of a statement: the number of rows matching a search,
    and the catalog's generation (NULL where the count is not to be
    remembered: this transaction's own changes are in it)."""

    sql: str
    params: list
    key: Hashable | None

    def remember(self, number: int, generation: str | None) -> None:
        """Keep *number* as read by the statement with its generation."""
        if self.key is not None and generation is not None:
            _counts.put(self.key, generation, (number, None))


def unchanged_key(catalog: Any, site: str, key: Hashable | None) -> Hashable | None:
    """The key under which to remember an answer of the statement *key*
    (:func:`statement_key`) read from the catalog of tool *catalog* (its
    site at path *site*), or None where it is not to be remembered: this
    transaction has catalog changes of its own, or *key* is None."""
    pending = get_pending()
    if key is None or (pending is not None and (has_changes(pending) or pending.reordered)):
        return None
    return (storage_dsn(catalog), site, key)


def statement_key(where: str, params: list) -> Hashable | None:
    """What identifies the answer of ``ROWS WHERE where`` with *params* in
    a catalog, or None where a parameter has no dependable value to
    compare (it is then counted every time).  A search makes it once per
    query (:class:`~plone.pgcatalog.search.Plan`)."""
    return _key(where, params)


def count_column(
    catalog: Any,
    where: str,
    params: list,
    reads: Iterable[str],
    key: Hashable | None,
    site: str,
    window: bool = False,
) -> Count:
    """The count of ``ROWS WHERE where`` as a column of a statement over
    the catalog rows of tool *catalog*, with the generation after it (of
    what *where* reads: :attr:`IndexDef.changes <plone.pgcatalog.registry.IndexDef.changes>`).
    *key* is :func:`statement_key` of *where* and *params*; *site* the
    path of the catalog's site (``database.site_path``).  Where no count
    is remembered the statement counts in a subquery or, with *window*, in
    a window over the matches it reads anyway."""
    subquery = f"(SELECT count(*) FROM {ROWS} WHERE {where})"
    counting, counting_params = ("count(*) OVER ()", []) if window else (subquery, params)
    key = unchanged_key(catalog, site, key)
    if key is None:  # this transaction's own changes are in the count
        return Count(f"{counting}, NULL::text", counting_params, None)
    generation = generation_sql(frozenset(reads))
    known = _counts.get(key)
    if known is None:
        return Count(f"{counting}, {generation}", counting_params, key)
    known_generation, (number, _) = known
    return Count(
        f"CASE WHEN {generation} = %s THEN %s::bigint ELSE {subquery} END, {generation}",
        [known_generation, number, *params],
        key,
    )


def count_statement(
    catalog: Any,
    where: str,
    params: list,
    reads: Iterable[str],
    key: Hashable | None,
    site: str,
    moment: Moment | None = None,
) -> tuple[str, list, Callable[[Sequence[Any]], int]]:
    """A statement of its own counting ``ROWS WHERE where`` (arguments as
    :func:`count_column`'s; *moment*: the effective range's criterion at
    its minute, not in *where* nor *key*), and what makes the number of
    its one row (and remembers it).  A remembered count stands while what
    it reads is unchanged (and its minute); else the change log brings it
    up to date (:func:`~plone.pgcatalog.changes.signed_rows`: with the
    rows whose effective range begins or ends between the two minutes),
    or, where the log cannot tell, every matching row is counted.  A
    process that remembers none brings up to date the count another
    process shared; one of :data:`SHARED_FROM` rows or more made from
    every row is shared (:mod:`~plone.pgcatalog.shared`): a frequent
    word's rows take seconds to count at a million rows."""
    key = unchanged_key(catalog, site, key)
    if key is None:  # this transaction's own changes are in the count
        if moment is not None:
            where, params = f"{where} AND {moment.sql()}", [*params, moment.now, moment.now]
        return f"SELECT count(*) FROM {ROWS} WHERE {where}", params, itemgetter(0)
    reads = frozenset(reads)
    generation = generation_sql(reads)
    known = _counts.get(key)
    shared = None if known is not None else digest(key)
    if shared is not None and moment is not None:
        # (its minute is needed before the statement: read first)
        known = _shared_count(catalog, site, key)
        shared = None
    known_generation, (number, stamp) = known or (None, (None, None))
    current, current_params = generation, []
    if moment is not None:
        # a count's minute is part of its generation (_at)
        then = None if known_generation is None else _at(known_generation)
        moment = replace(moment, then=then)
        current, current_params = f"({generation} || ' ' || %s::text)", [str(moment.now)]
    since, signed, signed_params = signed_rows(
        "0",
        where,
        params,
        site,
        stamp,
        moment,
        custom="*" in reads,
        shared=None if shared is None else (_SHARED_STAMP, [shared]),
    )
    before, before_params = ("%s::bigint", [number]) if shared is None else (f"({_SHARED_COUNT})", [shared])
    sql = (
        f"WITH {since},\n{_SIGNED} AS MATERIALIZED ({signed})\n"
        f"SELECT CASE WHEN {current} = %s THEN %s::bigint"
        f" ELSE (CASE WHEN (SELECT changed FROM {SINCE}) = '{ALL}' THEN 0 ELSE {before} END)"
        f" + (SELECT COALESCE(sum(sign), 0) FROM {_SIGNED})::bigint END,"
        f" {generation}, (SELECT stamp FROM {SINCE}), (SELECT changed FROM {SINCE})"
    )
    minute = None if moment is None else moment.now

    def made(row: Sequence[Any]) -> int:
        counted, made_at, now, changed = row
        if minute is not None and made_at is not None:
            made_at = f"{made_at} {minute}"
        _counts.put(key, made_at, (counted, now))
        if changed == ALL and counted >= SHARED_FROM:
            share(
                catalog, key, now, {"count": counted} if minute is None else {"count": counted, "at": minute}
            )
        return counted

    return sql, [*signed_params, *current_params, known_generation, number, *before_params], made


def _at(generation: str) -> int | None:
    """The minute of a count made with an effective range (the last word of
    its generation), None where it has none."""
    _, _, minute = generation.rpartition(" ")
    return int(minute) if minute.isdigit() else None


def _shared_count(catalog: Any, site: str, key: Hashable) -> tuple[str, tuple[int, str]] | None:
    """The count another process shared under *key*, as this process
    remembers its own (a generation no statement has, with its minute)."""
    kept = shared_answer(catalog, site, key)
    if kept is None or not isinstance(kept[1], dict):
        return None
    stamp, answer = kept
    if not isinstance(answer.get("count"), int) or not isinstance(answer.get("at"), int):
        return None
    return f"shared {answer['at']}", (answer["count"], stamp)


SHARED_FROM = 2_000
"""Counts of this many rows or more made from every row are shared with
the other processes (fewer are counted again about as fast as read)."""

# a count another process shared, and the stamp of its commit (%s: its digest)
_SHARED_COUNT = f"SELECT (answer ->> 'count')::bigint FROM {SHARED} WHERE key = %s AND answer ? 'count'"
_SHARED_STAMP = f"SELECT stamp FROM {SHARED} WHERE key = %s AND answer ? 'count'"
_SIGNED = "pgcatalog_signed"


def side_by_side(
    statements: Sequence[tuple[str, list, Callable[[Any], Any]]],
) -> tuple[str, list, Callable[[Sequence[Any]], list]]:
    """Statements of one row of :data:`WIDTH` columns each
    (:func:`count_statement`'s where its answer is remembered,
    ``tops.lengths_statement``'s), each with what makes its answer, as the
    FROM items of one: their SQL, their parameters, and what makes each
    one's answer, in order, from that statement's row (its first columns)."""
    sql = ", ".join(f"({sql}) AS pgcatalog_part{n}" for n, (sql, _, _) in enumerate(statements))

    def made(row: Sequence[Any]) -> list:
        return [make(row[WIDTH * n : WIDTH * n + WIDTH]) for n, (_, _, make) in enumerate(statements)]

    return sql, [p for _, params, _ in statements for p in params], made


WIDTH = 4
"""The columns of a remembered answer's statement: the answer, the
generation it was made at, the stamp of its commit and what changed
since the answer it brought up to date (``changes.NONE``, ``SOME``, ``ALL``)."""


def remembered_statement(
    catalog: Any, site: str, sql: str, reads: Iterable[str]
) -> tuple[str, list, Callable[[Sequence[Any]], int]]:
    """A statement whose one number is that of *sql* (a count over the
    catalog rows of tool *catalog*, its site at *site*, that reads
    *reads*), remembered while what it reads is unchanged, and what makes
    the number of its one row (and remembers it)."""
    key = unchanged_key(catalog, site, ("statement", sql))
    if key is None:  # this transaction's own changes are in the count
        return sql, [], itemgetter(0)
    generation = generation_sql(frozenset(reads))
    known = _counts.get(key)
    if known is None:
        statement, params = f"SELECT ({sql}), {generation}", []
    else:
        known_generation, (number, _) = known
        statement = f"SELECT CASE WHEN {generation} = %s THEN %s::bigint ELSE ({sql}) END, {generation}"
        params = [known_generation, number]

    def made(row: Sequence[Any]) -> int:
        counted, made_at = row
        if made_at is not None:
            _counts.put(key, made_at, (counted, None))
        return counted

    return statement, params, made


def remembered_count(catalog: Any, site: str, key: Hashable | None) -> int | None:
    """The count this process last made of the statement *key* (arguments
    as :func:`count_statement`'s), whatever changed since; None where it
    made none (or it is not to be remembered).  A hint, never an answer."""
    key = unchanged_key(catalog, site, key)
    known = None if key is None else _counts.get(key)
    return None if known is None else known[1][0]


def _key(*parts: Any) -> Hashable | None:
    """A hashable key of a search's statement and parameters, or None where
    a parameter has no dependable value to compare."""
    try:
        key = _frozen(parts)
        hash(key)
    except TypeError:
        return None
    return key


def _frozen(value: Any) -> Hashable:
    if type(value) is str:
        return value  # the most common, and no tuple is equal to it
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(item) for item in value)
    if type(value).__hash__ is object.__hash__ or isinstance(value, (dict, set)):
        raise TypeError(f"no value key for {type(value).__name__}")
    return (type(value).__name__, value)  # 1 and True and 1.0 apart
