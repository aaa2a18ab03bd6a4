"""Pages of searches, kept between the catalog changes that concern them.

ZCatalog answers a search from BTrees in memory; here every search asks
PostgreSQL, and on a small site the statement's planning and execution,
not its result, is most of a search's time.  The same searches come again
and again (a listing, a portlet, the navigation, a visitor's page), and
most commits change nothing they read: an editor's new title changes no
page of a type's items.  So each process keeps the rows of the pages it
selected, with the catalog's *generation* they were selected at: the
stamps of what their statement reads (:func:`~plone.pgcatalog.schema.generation_sql`,
as :mod:`~plone.pgcatalog.counts` keeps counts).  The next search of the
same page asks only for the generation, and, where it is the same, for
the metadata of the rows that carried theirs (metadata are no part of
any generation: they change with every edit), by record id, in one
statement that cannot fail and so needs no savepoint.  Where the
generation moved, the page is selected again, with its generation in the
same statement and snapshot.

A page holds the rows as the security terms of the search selected them:
the terms are parameters of the statement, so of its key, and a change of
any row's security (``allowedRolesAndUsers``) moves the generation of every
statement that reads them.  A transaction with catalog changes of its own
reads its own rows: it neither uses nor keeps pages (:func:`~plone.pgcatalog.counts.unchanged_key`).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Hashable
from collections.abc import Iterable
from dataclasses import dataclass
from plone.pgcatalog.counts import Remembered
from plone.pgcatalog.counts import statement_key
from plone.pgcatalog.counts import unchanged_key
from plone.pgcatalog.database import read
from plone.pgcatalog.schema import generation_sql
from plone.pgcatalog.values import array_literal
from typing import Any


__all__ = ["MAX_ROWS", "SIZE", "built_rows", "clear", "generation", "kept_rows", "page_rows"]

SIZE = 256
"""Pages kept per process (the least recently used go first)."""

MAX_ROWS = 200
"""The longest page kept: longer ones are selected every time."""

META = 6
"""The column of a page's row that holds its stored metadata
(``query.page.Row``; other statements' rows carry none)."""


@dataclass(frozen=True)
class Page:
    """A kept page: its rows (without metadata), the positions of the rows
    that carried metadata, their record ids (an array literal), and
    whether the generation had moved when the page was last asked for."""

    rows: list[tuple]
    carried: tuple[int, ...]
    zoids: str
    moved: bool = False


_pages = Remembered(SIZE)
"""Kept pages by key: (generation, :class:`Page`)."""

_answers = Remembered(SIZE)
"""Answers of :func:`kept_rows` by key: (generation, answer)."""


def page_rows(
    catalog: Any,
    site: str,
    sql: str,
    params: list,
    reads: Iterable[str],
    generic: bool = False,
    key: Hashable | None = None,
) -> list[tuple]:
    """The rows of *sql*, a page statement over the catalog rows of tool
    *catalog* (its site at path *site*) that reads *reads*
    (``Statement.reads``), as :func:`~plone.pgcatalog.database.read`
    selects them: a page kept since what it reads last changed, with
    fresh metadata, or else the page selected (and kept).  *generic*: as
    for :func:`~plone.pgcatalog.connection.fetch`; *key*: what identifies
    the page (:func:`~plone.pgcatalog.counts.statement_key`), where *sql*
    and *params* carry more (a remembered count), by default they."""
    page = statement_key(sql, params) if key is None else key
    return built_rows(catalog, site, page, lambda: (sql, params), reads, generic)


def built_rows(
    catalog: Any,
    site: str,
    key: Hashable | None,
    build: Callable[[], tuple[str, list]],
    reads: Iterable[str],
    generic: bool = False,
) -> list[tuple]:
    """:func:`page_rows` of the statement *build* makes, which it makes
    only where the page *key* is not kept (making it may take a statement
    of its own: the words' document frequencies).  A page whose
    generation had moved when it was last asked for is selected at once
    (what it reads changes often: asking first would cost a round trip
    each time), until a selection finds the generation unchanged."""
    reads = frozenset(reads)
    key = None if key is None or "*" in reads else unchanged_key(catalog, site, ("page", key))
    if key is None:  # (an add-on's kind may read anything)
        sql, params = build()
        return read(catalog, sql, params, site=site, generic=generic)
    generation = generation_sql(reads)
    known = _pages.get(key)  # (generation, Page)
    if known is not None and not known[1].moved:
        rows = _kept_rows(catalog, site, generation, *known)
        if rows is not None:
            return rows
    sql, params = build()
    selected = read(
        catalog, f"SELECT p.*, {generation} FROM ({sql}) AS p", params, site=site, generic=generic
    )
    rows = [row[:-1] for row in selected]
    now = selected[0][-1] if selected else None
    if now is not None and len(rows) <= MAX_ROWS:
        carried = tuple(
            position for position, row in enumerate(rows) if len(row) > META and row[META] is not None
        )
        zoids = array_literal([rows[position][0] for position in carried])
        moved = known is not None and known[0] != now
        _pages.put(key, now, Page(_with_metadata(rows, carried, {}), carried, zoids, moved))
    return rows


def kept_rows[T](catalog: Any, site: str, key: Hashable | None, now: str | None, make: Callable[[], T]) -> T:
    """What *make* answers from the catalog rows of tool *catalog* (its
    site at path *site*), kept under *key* as pages are kept: an answer
    that takes several statements (a walk over the text's cells) is made
    again only when the generation of what it reads moved.  *now* is that
    generation (:func:`generation`), which the caller read before *make*
    runs: an answer that saw a later commit is then kept under an earlier
    generation, which that commit moved, and is made again; never the
    other way round."""
    key = None if key is None or now is None else unchanged_key(catalog, site, ("rows", key))
    if key is None:
        return make()
    known = _answers.get(key)
    if known is not None and known[0] == now:
        return known[1]
    answer = make()
    _answers.put(key, now, answer)
    return answer


def generation(reads: Iterable[str]) -> str:
    """The generation (SQL) of what a statement reading *reads* read, for
    :func:`kept_rows`: NULL where that may be anything (an add-on's index
    kind), which keeps nothing."""
    reads = frozenset(reads)
    return "NULL::text" if "*" in reads else generation_sql(reads)


def _kept_rows(catalog: Any, site: str, generation: str, made_at: str, page: Page) -> list[tuple] | None:
    """The rows of *page*, kept at generation *made_at*, with their
    metadata as stored now, where *generation* (SQL) is still *made_at*;
    else None."""
    if not page.carried:  # (a statement over object_state would be planned anew each time: see _KEPT)
        found = read(catalog, f"SELECT {generation}", [], site=site, guarded=False)
        return page.rows if found[0][0] == made_at else None
    found = read(
        catalog, _KEPT.format(generation=generation), [made_at, page.zoids], site=site, guarded=False
    )
    if found[0][0] != made_at:
        return None
    return _with_metadata(page.rows, page.carried, {zoid: meta for _, zoid, meta in found})


def _with_metadata(rows: list[tuple], carried: tuple[int, ...], meta: dict) -> list[tuple]:
    """*rows* with the metadata *meta* (by record id; None where it has
    none) in those at the positions *carried*."""
    fresh = list(rows)
    for position in carried:
        row = rows[position]
        fresh[position] = (*row[:META], meta.get(row[0]), *row[META + 1 :])
    return fresh


# The generation as this snapshot sees it, and, where it is the kept
# page's, the metadata of the rows that carried theirs.  (PostgreSQL plans
# a statement anew at each run where its plan for the values looks
# cheaper than the generic one, as it does for an empty array of record
# ids; planning a statement over object_state and its many indexes takes
# most of a millisecond.)
_KEPT = """SELECT g.generation, o.zoid, o.meta
  FROM (SELECT {generation} AS generation) AS g
  LEFT JOIN LATERAL (
    SELECT zoid, meta FROM object_state WHERE g.generation = %s AND zoid = ANY(%s::bigint[])) AS o ON true"""


def clear() -> None:
    """Forget every page and answer (tests start from nothing)."""
    _pages.clear()
    _answers.clear()
