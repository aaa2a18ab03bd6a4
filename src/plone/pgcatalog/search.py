"""One search: a merged ZCatalog query dict → SQL → lazy brains.

:func:`search` is ``Catalog.search`` of ZCatalog: the tool has added
Plone's security terms; the query builder (:mod:`~plone.pgcatalog.query`)
turns the query into one statement; this module decides how much of the
result to select (ZCatalog's batching and sort limits, read as ZCatalog
reads them), selects it over the rows this transaction sees
(:mod:`~plone.pgcatalog.database`) and hands the rows to
:class:`~plone.pgcatalog.results.CatalogResults`.
"""

from __future__ import annotations

from collections.abc import Sequence

from collections.abc import Callable
from collections.abc import Hashable
from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from plone.pgcatalog import registry as r
from plone.pgcatalog import cells
from plone.pgcatalog.cells import best_rows
from plone.pgcatalog.cells import cell_terms
from plone.pgcatalog.cells import Terms
from plone.pgcatalog.expansions import Glob
from plone.pgcatalog.expansions import globs_of
from plone.pgcatalog.expansions import words_of
from plone.pgcatalog.changes import EFFECTIVE_RANGE
from plone.pgcatalog.changes import Moment
from plone.pgcatalog.counts import count_column
from plone.pgcatalog.counts import count_statement
from plone.pgcatalog.counts import remembered_statement
from plone.pgcatalog.counts import remembered_count
from plone.pgcatalog.counts import side_by_side
from plone.pgcatalog.counts import statement_key
from plone.pgcatalog.counts import WIDTH
from plone.pgcatalog.database import load_metadata
from plone.pgcatalog.database import load_texts
from plone.pgcatalog.database import read
from plone.pgcatalog.database import select as select_rows
from plone.pgcatalog.kept import built_rows
from plone.pgcatalog.kept import generation
from plone.pgcatalog.kept import kept_rows
from plone.pgcatalog.kept import page_rows
from plone.pgcatalog.overlay import has_changes
from plone.pgcatalog.overlay import pending_metadata
from plone.pgcatalog.pending import get_pending
from plone.pgcatalog.query import add_sort
from plone.pgcatalog.query.page import index_keys_sql
from plone.pgcatalog.query.page import iterates_index
from plone.pgcatalog.query.page import keys_needed
from plone.pgcatalog.query.cache import compiled
from plone.pgcatalog.query import build
from plone.pgcatalog.query import canonical
from plone.pgcatalog.query import Fault
from plone.pgcatalog.query import Ordering
from plone.pgcatalog.query import Row
from plone.pgcatalog.query import sort_names
from plone.pgcatalog.query import sort_spec
from plone.pgcatalog.query import Statement
from plone.pgcatalog.query import top_sql
from plone.pgcatalog.query.indexquery import criterion_keys
from plone.pgcatalog.query.page import keyed_count_sql
from plone.pgcatalog.query.page import ordered_sql
from plone.pgcatalog.query.page import scored_rows
from plone.pgcatalog.query.page import scored_sql
from plone.pgcatalog.frequencies import document_frequencies
from plone.pgcatalog.frequencies import frequencies_statement
from plone.pgcatalog.frequencies import GLOB_WORDS
from plone.pgcatalog.frequencies import remembered_frequencies
from plone.pgcatalog.frequencies import holding as word_holding
from plone.pgcatalog.tops import first_lengths
from plone.pgcatalog.tops import Lengths
from plone.pgcatalog.tops import lengths_statement
from plone.pgcatalog.relevance import counted_words
from plone.pgcatalog.relevance import GIVEN_DF
from plone.pgcatalog.relevance import GivenGlob
from plone.pgcatalog.relevance import ranked_sql
from plone.pgcatalog.values import array_literal
from plone.pgcatalog.results import CatalogResults
from plone.pgcatalog.results import MAX_PAGE
from plone.pgcatalog.results import MIN_ROWS
from plone.pgcatalog.results import MIN_WINDOW
from plone.pgcatalog.schema import CATALOGED
from plone.pgcatalog.snippets import Snippets
from plone.pgcatalog.text import text_condition
from plone.pgcatalog.errors import UnservedIndex
from typing import Any
from ZTUtils.Lazy import LazyCat

import math
import orjson


__all__ = ["Catalog", "Plan", "all_records", "search"]


@dataclass(frozen=True)
class Catalog:
    """What a search needs of the catalog tool."""

    tool: Any  # its storage serves the reads; brains are wrapped in it
    path: tuple[str, ...]  # its physical path (path queries count levels after it)
    indexes: Mapping[str, r.IndexDef]
    columns: tuple[str, ...]  # metadata
    lexicons: Callable[[], dict]  # by id; asked for by text queries only
    site: str  # the path of its site (database.site_path): its rows are below it


# A select of a search's rows: select(tail, params, counted=False,
# metadata=False, first=0) selects their Rows in order, ``tail`` (LIMIT,
# OFFSET) appended; with the number of matches when *counted*, with the
# stored metadata when *metadata*, or, with *first*, that of the first
# rows only (None after them).
Select = Callable[..., list[Row]]


def refuse_unserved(tool: Any, query: dict) -> None:
    """Raise :class:`~plone.pgcatalog.errors.UnservedIndex` where *query*
    names an index this catalog has no SQL for (see ``registry.unserved``)."""
    unserved = r.unserved(tool)
    if not unserved:
        return
    names = [name for name in (*query, *sort_names(query)) if isinstance(name, str) and name in unserved]
    if names:
        kind = unserved[names[0]][0]
        raise UnservedIndex(
            f"plone.pgcatalog cannot search the index {names[0]!r}: it has no SQL for its kind ({kind}). "
            "Delete the index (manage_delIndex) if nothing needs it, or add it again once an "
            "IIndexKind utility serves its kind (docs/howto-custom-index.md)"
        )


@dataclass(frozen=True)
class Plan:
    """What every search of one query needs before its first statement,
    made once per query and kept with its statement (:mod:`~plone.pgcatalog.query.cache`):
    a listing asked again costs no compiling, ordering or count key."""

    stmt: Statement
    ordering: Ordering
    matched: str  # WHERE of every match (ZCatalog's rlen counts rows without a sort key too)
    where: str  # WHERE of the matches with every sort key
    reads: frozenset[str]  # what they read, as the change stamps name it
    count_key: Hashable | None  # counts.statement_key of where
    ranked: tuple[str, list] | None  # relevance.ranked_sql over the committed rows, for a text query
    spec: list[tuple[r.IndexDef, bool]]  # sort_spec of the query
    # a full-text query the text's cells serve (cells.cell_terms), ordered
    # by relevance: its terms, and the WHERE (with its parameters) of the
    # query's other criteria, whose best matches come from the text's
    # cells (cells.best_rows)
    cells: tuple[Terms, str, list] | None = None
    # the globs of a query ordered by relevance, to compile as the words
    # they expand to (expansions.py)
    globs: tuple[Glob, ...] = ()
    # the words, and the globs (with their words), whose document
    # frequencies the ranked statement may be given (frequencies.py), with
    # that statement and its parameters
    given: tuple[list[str], dict[str, tuple[str, ...]], str, list] | None = None
    # a query with the effective range Plone adds for who may not see
    # inactive items: the WHERE of its matches without it, its parameters,
    # its count key and the range at the query's minute (changes.Moment),
    # so that its count is brought up to date from one minute to the next
    timeless: tuple[str, list, Hashable | None, Moment] | None = None


def _cells_plan(
    ordering: Ordering, rest: Callable[[], Statement | None], expansions: Mapping[Glob, tuple[str, ...]]
) -> tuple[Terms, str, list] | None:
    """:attr:`Plan.cells` of a query, None where it is no SearchableText
    query the cells serve (:func:`~plone.pgcatalog.cells.cell_terms`, its
    globs' words in *expansions*) ordered by relevance; *rest* compiles
    the query without its SearchableText criterion (None: no other
    criterion).  Its phrases and ``NOT`` parts are criteria of the rows
    the cells find."""
    found = cell_terms(ordering.scored, expansions)
    if found is None:
        return None
    terms, filters = found
    others = rest()
    where, params = (CATALOGED, []) if others is None else (others.where_sql(), others.params)
    expression = ordering.scored[0].index.expression()
    for node in filters:
        sql, node_params = text_condition(node, expression)
        where, params = f"{where} AND COALESCE({sql}, false)", [*params, *node_params]
    return terms, where, params


def _timeless(
    spec: list[tuple[r.IndexDef, bool]], moment: tuple[Statement | None, Moment] | None
) -> tuple[str, list, Hashable | None, Moment] | None:
    """:attr:`Plan.timeless` of the query compiled without its effective
    range, and that range (*moment*), None where there is none."""
    if moment is None:
        return None
    stmt, at = moment
    if stmt is None:
        return None
    where = add_sort(stmt, spec).where_sql(stmt)
    return where, stmt.params, statement_key(f"{where} AND {at.sql()}", stmt.params), at


def _plan(
    spec: list[tuple[r.IndexDef, bool]],
    stmt: Statement | None,
    rest: Callable[[], Statement | None],
    expansions: Mapping[Glob, tuple[str, ...]],
    moment: tuple[Statement | None, Moment] | None = None,
) -> Plan | None:
    if stmt is None:
        return None
    ordering = add_sort(stmt, spec)
    where = ordering.where_sql(stmt)
    ranked = ranked_sql(ordering.scored, where, stmt.params, None) if ordering.scored else None
    counted = counted_words(ordering.scored) if ordering.scored else None
    given = None
    if counted is not None:
        # (a glob of few words is compiled as them; one the lexicon was not read for is counted)
        words, patterns = counted
        name = ordering.scored[0].index.name
        globs = {
            p: expansions[(name, p)] for p in patterns if len(expansions.get((name, p), ())) > GLOB_WORDS
        }
        if words or globs:
            given = (words, globs, *ranked_sql(ordering.scored, where, stmt.params, None, given_df=True))
    return Plan(
        stmt,
        ordering,
        stmt.where_sql(),
        where,
        frozenset(stmt.reads | ordering.reads),
        statement_key(where, stmt.params),
        ranked,
        spec,
        _cells_plan(ordering, rest, expansions),
        globs_of(ordering.scored),
        given,
        _timeless(spec, moment),
    )


def search(catalog: Catalog, query: dict) -> Sequence[Any]:
    """ZCatalog's search over a merged query dict."""
    odd = [key for key in query if not isinstance(key, str)]
    if odd:
        # ZCatalog's query plan sorts the keys and fails the same way
        # (plone.app.querystring makes a None key of an empty row)
        raise TypeError(f"catalog query keys must be strings, not {odd[0]!r}")
    defs = catalog.indexes
    refuse_unserved(catalog.tool, query)

    def make(
        lexicons: Mapping[str, Any], expansions: Mapping[Glob, tuple[str, ...]] | None = None
    ) -> Plan | None:
        spec = sort_spec(query, defs)  # a bad sort_on fails even where nothing matches

        def rest() -> Statement | None:
            text = defs[r.SEARCHABLE_TEXT]
            others = {key: value for key, value in query.items() if key not in criterion_keys(query, text)}
            # (None only where no index is named: a part of a query that
            # matches something matches something)
            return build(canonical(others), defs, lexicons, catalog.path)

        def timeless() -> tuple[Statement | None, Moment] | None:
            """The query without its effective range, and that range."""
            index = defs.get(EFFECTIVE_RANGE)
            if EFFECTIVE_RANGE not in query or index is None or index.kind != r.DATE_RANGE:
                return None
            at = build(canonical({EFFECTIVE_RANGE: query[EFFECTIVE_RANGE]}), defs, lexicons, catalog.path)
            if at is None or len(at.params) != 2:
                return None
            others = {key: value for key, value in query.items() if key != EFFECTIVE_RANGE}
            moment = Moment.of(index, at.params[0])
            return build(canonical(others), defs, lexicons, catalog.path, expansions), moment

        return _plan(
            spec,
            build(canonical(query), defs, lexicons, catalog.path, expansions),
            rest,
            expansions or {},
            timeless(),
        )

    try:
        plan = compiled(catalog.tool, query, defs, catalog.lexicons, catalog.path, make)
        if plan is not None and plan.globs and not has_changes(get_pending()):
            texts = {catalog.indexes[name].changes for name, _ in plan.globs}
            expansions = words_of(partial(page_rows, catalog.tool, catalog.site, reads=texts), plan.globs)
            if expansions:
                variant = tuple(sorted(expansions.items()))
                plan = compiled(
                    catalog.tool,
                    query,
                    defs,
                    catalog.lexicons,
                    catalog.path,
                    partial(make, expansions=expansions),
                    variant,
                )
    except Fault as fault:
        if fault.before is None or _any(catalog, fault.before.where_sql(), fault.before.params):
            raise fault.error from None
        return LazyCat([])
    if plan is None:
        return LazyCat([])
    stmt, ordering, where, reads, spec = plan.stmt, plan.ordering, plan.where, plan.reads, plan.spec
    snippets = (
        Snippets(stmt.scored, catalog.lexicons, partial(load_texts, catalog.tool)) if stmt.scored else None
    )

    def count() -> int:
        if plan.timeless is not None:  # (brought up to date from minute to minute)
            timeless_where, timeless_params, key, moment = plan.timeless
            sql, params, made = count_statement(
                catalog.tool, timeless_where, timeless_params, reads, key, catalog.site, moment
            )
        else:
            sql, params, made = count_statement(
                catalog.tool, where, stmt.params, reads, plan.count_key, catalog.site
            )
        return made(read(catalog.tool, sql, params, site=catalog.site)[0])

    try:
        b_start, b_size, limit = _batch(query)  # as given (canonical() makes tuples lists)
    except (TypeError, ValueError, OverflowError) as exc:
        # ZCatalog reads these only once something matched, and gives up
        # on a sorted batch that starts past the matches before it slices
        if not _any(catalog, where, stmt.params) or (
            spec and _starts_past(catalog, exc, plan.matched, stmt.params)
        ):
            return LazyCat([])
        raise
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
        rlen, sortable = page_rows(
            catalog.tool, catalog.site, *keyed_count_sql(stmt, ordering, _bounded(2 * b_start)), reads
        )[0]
        if b_start > rlen / 2:
            # the matches are all counted: their count is known
            total = rlen if b_start >= rlen else sortable  # (ZCatalog's, as it gives up or sorts)
            b_start, b_size = _window_from_end(b_start, b_size, rlen, sortable)
            limit = b_start + b_size

    if ordering.scored:
        select = _scored_select(catalog, plan)
    else:
        if b_size is None and _iterates_index(catalog, plan):
            ordering = ordering.with_ascending_ties()
        select = _ordered_select(
            catalog,
            where,
            ordering.order_sql(),
            stmt.params,
            reads,
            plan.count_key,
            covered=stmt.covered,
            generic=stmt.selective,
        )

    if b_size is None:
        best = _best_rows(catalog, plan, MIN_ROWS)
        if best is not None:
            return _results(
                catalog,
                best,
                length=len(best) if len(best) < MIN_ROWS else None,
                total=len(best) if len(best) < MIN_ROWS else None,
                count=count,
                load_rows=partial(_rows_with_metadata, select),
                snippets=snippets,
            )
        return _all_matches(catalog, select, snippets)

    end = b_start + b_size if limit is None else min(b_start + b_size, limit)
    if b_start >= 0 and b_size >= 0 and (limit is None or limit >= 0):
        offset = _bounded(b_start)
        size = _bounded(max(0, end - b_start))
        # a page is about to be shown: its metadata comes with its rows
        metadata = 0 < size <= MAX_PAGE
        best = _best_rows(catalog, plan, offset + size) if size and offset + size <= MAX_BEST else None
        if best is not None:
            rows, metadata = best[offset:], False
        elif size and ordering.walks(offset + size):
            sql, params = top_sql(stmt, ordering, offset + size, offset, metadata)
            rows = list(map(Row, page_rows(catalog.tool, catalog.site, sql, params, reads, generic=True)))
        else:
            # a relevance order scores every match: their number comes with
            # the page (a count of its own would read them all again)
            scored = bool(ordering.scored)
            rows = (
                select("LIMIT %s OFFSET %s", [size, offset], metadata=metadata, counted=scored)
                if size
                else []
            )
            if scored and rows and total is None:
                total = rows[0].count
        if total is None and (0 < len(rows) < size or (offset == 0 and len(rows) < size)):
            total = offset + len(rows)  # a short batch ends the result
        return _results(
            catalog,
            rows,
            length=len(rows),
            total=total,
            count=count,
            metadata=len(rows) if metadata else 0,
            snippets=snippets,
        )
    # Python slice semantics (negative starts) on the first `limit` rows
    first = _rows(select, 0, _bounded(limit)) if limit is not None and limit > 0 else select("", [])
    rows = first[slice(b_start, b_start + b_size)]
    total = len(first) if limit is None or limit <= 0 or len(first) < limit else None
    return _results(catalog, rows, length=len(rows), total=total, count=count, snippets=snippets)


def _iterates_index(catalog: Catalog, plan: Plan) -> bool:
    """Whether ZCatalog sorts this search's matches, all of them, by
    walking its sort index (:func:`~plone.pgcatalog.query.page.iterates_index`),
    where that changes the order: a reversed sort on one key (not
    ``getObjPositionInParent``, whose index has no length to walk)."""
    if len(plan.spec) != 1:
        return False
    index, descending = plan.spec[0]
    if not descending or index.kind == r.GOPIP:
        return False
    stmt = plan.stmt
    sql, params, made = count_statement(
        catalog.tool,
        plan.matched,
        stmt.params,
        stmt.reads,
        statement_key(plan.matched, stmt.params),
        catalog.site,
    )
    matches = made(read(catalog.tool, sql, params, site=catalog.site)[0])
    needed = keys_needed(matches)
    if needed < 1:
        return False
    # (remembered while the index is unchanged: a few keys over many rows
    # are all read to count them)
    sql, params, made = remembered_statement(
        catalog.tool, catalog.site, index_keys_sql(index, needed), [index.changes]
    )
    keys = made(read(catalog.tool, sql, params, site=catalog.site)[0])
    return iterates_index(matches, keys)


MAX_BEST = 1000
"""The longest page taken from the text's cells (cells.best_rows)."""


def _few(count: int | None, words: int) -> bool:
    """Whether a word counted *count* times (None: not counted) is held by
    so few rows that they are scored whole in a query of *words* words
    (``cells.few_rows``)."""
    return count is not None and count <= cells.few_rows(words)


def _best_rows(catalog: Catalog, plan: Plan, needed: int) -> list[Row] | None:
    """The first *needed* rows of a full-text query the cells serve
    (:func:`~plone.pgcatalog.cells.cell_terms`), in relevance order, from the text's cells
    (:mod:`~plone.pgcatalog.cells`), or None where they do not serve:
    another query, this transaction's own changes (its rows are laid over
    the table, which the cells index), or a walk that read too many rows."""
    if plan.cells is None or has_changes(get_pending()):
        return None
    terms, where, params = plan.cells
    words = [word for part in terms for word in part]
    if len(words) > 1 and needed > cells.WORDS_PAGE:
        return None  # (before any round trip: every match is scored)
    tool, site = catalog.tool, catalog.site
    text = catalog.indexes[r.SEARCHABLE_TEXT]
    # a glob of many words: their dfs are one answer (frequencies_statement)
    globs = [part for part in terms if len(part) > GLOB_WORDS]
    single = [word for part in terms if len(part) <= GLOB_WORDS for word in part]
    keys = [statement_key(*word_holding(text, word)) for word in single]
    known: dict[str, int | None] = dict(
        zip(single, (remembered_count(tool, site, key) for key in keys), strict=True)
    )
    for part in globs:
        known.update(zip(part, remembered_frequencies(tool, site, text, part), strict=True))
    few = partial(_few, words=len(words))
    if all(few(known[word]) for word in words):
        return None  # (every match holds words of few rows: scored whole, with no round trip)
    # the rows holding each word (brought up to date from the change log
    # where remembered: a word of few rows counted with the rows read
    # first read them all, 1,200 at a million rows for the middling word
    # of two typed), and all of a glob's of many words, where the cells of
    # those known to be common begin (the others', once counted, if
    # common), the index's statistics, and the generation of what the
    # walk reads: a walk takes a statement per batch of cells, and is kept
    # until that changes
    counted = {
        word: count_statement(tool, *word_holding(text, word), {text.changes}, key, site)
        for word, key in zip(single, keys, strict=True)
    }
    vectors = [frequencies_statement(tool, site, text, part) for part in globs]
    # where the cells of the words the walk reads begin (a glob of many
    # common words is scored whole: their cells' probe took 25 ms a word,
    # once a process)
    walked = cells.walked_words(terms, known)
    begun = {
        word: statement
        for word in walked
        for statement in [lengths_statement(tool, site, text, word)]
        if statement is not None
    }
    if None in vectors:
        return None
    sql, statement_params, made = side_by_side([*counted.values(), *filter(None, vectors), *begun.values()])
    # (a plan for any words: custom planning of its many subqueries over
    # object_state took 16-18 ms for three words typed, its run 5 ms)
    found = read(
        tool,
        f"SELECT * FROM {sql}, ({_TEXT_STATS}) AS s, (SELECT {generation({*plan.reads, text.changes})}) AS g",
        [*statement_params, r.SEARCHABLE_TEXT],
        site=site,
        generic=True,
        prepare=True,
    )
    if not found:
        return None
    answers = made(found[0])
    held = dict(zip(counted, answers, strict=False))
    for part, dfs_of in zip(globs, answers[len(counted) :], strict=False):
        held.update(zip(part, dfs_of, strict=True))
    dfs = [held[word] for word in words]
    begins = dict(zip(begun, answers[len(counted) + len(globs) :], strict=True))
    documents, total, now = found[0][WIDTH * len(answers) :]

    def lengths(asked: Sequence[str]) -> Sequence[Lengths] | None:
        missing = [word for word in asked if word not in begins]
        if missing:
            more = first_lengths(tool, site, text, missing)
            if more is None:
                return None
            begins.update(zip(missing, more, strict=True))
        return [begins[word] for word in asked]

    walk = partial(
        best_rows,
        partial(_read_rows, catalog),
        terms,
        where,
        params,
        documents,
        total,
        dfs,
        needed,
        lengths,
    )
    # (a part's words joined by a character no word holds)
    page = statement_key(where, [*params, *(chr(31).join(part) for part in terms), needed])
    best = kept_rows(tool, site, page, now, walk) if not all(map(few, held.values())) else walk()
    if not best:
        return None if best is None else []
    a, b = plan.stmt.scale
    top = a * best[0][2] + b
    if top == 0:
        raise ZeroDivisionError("float division by zero")  # (as scored_rows)
    return [
        Row(
            (
                zoid,
                path,
                a * score + b,
                math.trunc(100.0 * float(a * score + b) / float(top)),
                None,
                None,
                None,
            )
        )
        for zoid, path, score in best
    ]


_TEXT_STATS = "SELECT documents::float8, words::float8 FROM pgcatalog_text_stats WHERE index_name = %s"


def _read_rows(catalog: Catalog, sql: str, params: list) -> list[tuple]:
    """A statement of the text's cells' walk: rows by the cells' keys, one
    plan for any."""
    return read(catalog.tool, sql, params, site=catalog.site, generic=True, prepare=True)


def all_records(catalog: Catalog) -> CatalogResults:
    """Every cataloged record, in record id order, unfiltered (ZCatalog's
    ``searchAll``)."""
    return _all_matches(
        catalog, _ordered_select(catalog, CATALOGED, "zoid", [], (), statement_key(CATALOGED, []))
    )


def _any(catalog: Catalog, where: str, params: list) -> bool:
    """Whether any record matches *where*."""
    return bool(select_rows(catalog.tool, "1", f"{where} LIMIT 1", params))


def _ordered_select(
    catalog: Catalog,
    where: str,
    order: str,
    params: list,
    reads: Iterable[str],
    count_key: Hashable | None,
    covered: bool = False,
    generic: bool = False,
) -> Select:
    """A :data:`Select` over ``WHERE where ORDER BY order`` (which reads
    *reads*: ``Statement.reads``; *count_key* is
    :func:`~plone.pgcatalog.counts.statement_key` of it).  Its count is
    one remembered since the catalog last changed (:mod:`~plone.pgcatalog.counts`),
    or else a window over the matches it reads anyway, or, where the
    statement is *covered*, a subquery that the covering index answers
    alone while the rows come off an index in order.  A *generic*
    statement keeps a result small (a folder's children, a UID): its plan
    is the same for any values, and PostgreSQL, whose estimate of the
    generic plan misses that, would plan it anew at every run (half a
    millisecond for the navigation's page)."""

    def select(
        tail: str, tail_params: list, counted: bool = False, metadata: bool = False, first: int = 0
    ) -> list[Row]:
        count = None
        if counted:
            count = count_column(
                catalog.tool, where, params, reads, count_key, catalog.site, window=not covered
            )
        sql, all_params = ordered_sql(where, params, order, tail, tail_params, count, metadata, first)
        # (the page is the same whatever count the statement was given)
        page = statement_key(
            f"{where} ORDER BY {order} {tail}", [*params, *tail_params, counted, metadata, first]
        )
        rows = list(map(Row, page_rows(catalog.tool, catalog.site, sql, all_params, reads, generic, page)))
        if count is not None and rows:
            count.remember(rows[0].count, rows[0].generation)
        return rows

    return select


def _scored_select(catalog: Catalog, plan: Plan) -> Select:
    """A :data:`Select` over the matches of *plan* in order of their
    relevance (:mod:`plone.pgcatalog.relevance`): rows carry ZCatalog's
    ``data_record_score_`` and ``data_record_normalized_score_``."""
    stmt, pending = plan.stmt, get_pending()
    committed = plan.ranked or ranked_sql(plan.ordering.scored, plan.where, stmt.params, None)

    def ranked() -> tuple[str, list]:
        """The statement's head, which ranks the matches."""
        if has_changes(pending):
            # the index's statistics are read as this transaction sees them
            return ranked_sql(plan.ordering.scored, plan.where, stmt.params, pending)
        if plan.given is not None:
            words, globs, given_head, given_params = plan.given
            index = plan.ordering.scored[0].index
            found = document_frequencies(catalog.tool, catalog.site, index, words, list(globs.values()))
            if found is not None:
                df, vectors = found
                objects = {
                    pattern: orjson.dumps(dict(zip(expanded, dfs, strict=True))).decode()
                    for (pattern, expanded), dfs in zip(globs.items(), vectors, strict=True)
                }
                return given_head, [
                    array_literal(df)
                    if p is GIVEN_DF
                    else objects.get(p.pattern, "{}")
                    if isinstance(p, GivenGlob)
                    else p
                    for p in given_params
                ]
        return committed

    def select(
        tail: str, params: list, counted: bool = False, metadata: bool = False, first: int = 0
    ) -> list[Row]:
        scoring = scored_sql(tail, stmt.scale, counted, metadata, first)

        def build() -> tuple[str, list]:
            head, head_params = ranked()
            return f"{head}\n{scoring}", [*head_params, *params]

        # a page is the same whatever document frequencies its head was
        # given (those of the words as the generation has them): a kept page
        # needs no statement to count them.  Planning this statement costs as
        # much as running it (the text index is read in several places), and
        # every match is scored whatever the words: the generic plan serves
        key = statement_key(f"{committed[0]}\n{scoring}", [*committed[1], *params])
        return scored_rows(built_rows(catalog.tool, catalog.site, key, build, plan.reads, generic=True))

    return select


def _rows(select: Select, offset: int, limit: int) -> list[Row]:
    """Rows ``offset`` to ``offset + limit`` of *select*."""
    return select("LIMIT %s OFFSET %s", [limit, offset])


def _all_matches(catalog: Catalog, select: Select, snippets: Snippets | None = None) -> CatalogResults:
    """Every match of a search.

    The first rows, the count and the metadata of the first window of rows
    come in one statement: len() is the count and listings ask for it
    (counting later would mean a second pass over every match whenever the
    plan reads them all anyway), and show the first rows; more rows are
    selected when somebody walks that far, with their metadata (who walks a
    long result whole, as Plone's navigation does, reads it: one statement
    instead of two).
    """
    rows = select("LIMIT %s", [MIN_ROWS], counted=True, first=MIN_WINDOW)
    total = rows[0].count if rows else 0
    return _results(
        catalog,
        rows,
        length=total,
        total=total,
        load_rows=partial(_rows_with_metadata, select),
        metadata=MIN_WINDOW,
        snippets=snippets,
    )


def _rows_with_metadata(select: Select, offset: int, limit: int) -> list[Row]:
    """Rows ``offset`` to ``offset + limit`` of *select* with their
    metadata (:func:`_pending_wins`)."""
    return _pending_wins(select("LIMIT %s OFFSET %s", [limit, offset], metadata=True))


def _pending_wins(rows: list[Row]) -> list[Row]:
    """*rows*, whose stored metadata they carry, with this transaction's
    pending metadata instead where it has some, as in
    :func:`~plone.pgcatalog.database.load_metadata`."""
    pending = pending_metadata(get_pending(), [row.zoid for row in rows])
    if not pending:
        return rows
    return [row.with_meta(pending[row.zoid]) if row.zoid in pending else row for row in rows]


def _results(catalog: Catalog, rows: list[Row], *, metadata: int = 0, **kw) -> CatalogResults:
    """Results over *rows*, the first *metadata* of which carry their stored
    metadata (this transaction's pending metadata wins)."""
    tool = catalog.tool

    def wrap(brain):
        return brain.__of__(tool)

    loaded = None
    if metadata:
        loaded = {position: row.meta or {} for position, row in enumerate(_pending_wins(rows[:metadata]))}
    return CatalogResults(rows, catalog.columns, partial(load_metadata, tool), wrap, metadata=loaded, **kw)


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
    if isinstance(limit, tuple) and len(limit) != 1:
        # ZCatalog names its sort "...#limit-%s" % limit first
        raise TypeError(f"sort_limit must be an integer, not {limit!r}")
    if not isinstance(limit, int):
        # ZCatalog slices its results with it, unless the batch starts
        # past the matches (see search)
        raise OddLimit(f"sort_limit must be an integer, not {limit!r}", b_start)
    limit = max(int(limit), 0) or None  # True is 1 (never SQL's LIMIT true)
    return b_start, limit, limit


def _starts_past(catalog: Catalog, exc: Exception, matched: str, params: list) -> bool:
    """Whether *exc* is an odd limit whose batch starts past every match."""
    if not isinstance(exc, OddLimit) or exc.b_start <= 0:
        return False
    return exc.b_start >= select_rows(catalog.tool, "count(*)", matched, params)[0][0]


class OddLimit(TypeError):
    """A ``sort_limit`` ZCatalog cannot slice with; *b_start* is where the
    batch was to start."""

    def __init__(self, message: str, b_start: int):
        super().__init__(message)
        self.b_start = b_start


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
