"""The best matches of a full-text search for a word, or for several words
ANDed, without scoring them all.

ZCatalog orders the matches of a text query by their Okapi BM25 scores
(:mod:`~plone.pgcatalog.relevance`), so the first page of a word that a
tenth of a large site holds would score every one of them.  For one word
a row's score depends only on the word's frequency *f* in it and its
length *dl* (the word's idf and the mean length are the same for every
row): it grows with *f* and falls with *dl*.  The order of two (f, dl)
pairs still depends on the mean length, which moves as the site grows, so
no order can be kept once and for all; the rows are kept in *cells*
instead: each word of a row's SearchableText is indexed under its
frequency's class and the row length's class (``schema.TEXT_CELLS``).

For the mean length and idf of the moment, a cell's best possible score
is that of its largest *f* and smallest *dl*.  :func:`best_rows` reads the
cells best bound first, a batch of them per statement, each cell's rows
in turn (the query's other criteria and the security terms filter them;
each is scored exactly as the full statement scores it); a statement
stops in the cell that fills the page, which the next reads whole.  The
walk ends once the last of the rows wanted scores above the bound of
every cell left: ties go on being read, as ZCatalog breaks them by
record id.  The answer is the full statement's first rows, whatever the
mean length.  Only a word held by many rows is walked (:data:`FEW`).

Words ANDed (``report AND postgresql``, as the search box sends what is
typed) score the sum of each word's score, and a row's words all share
its length's class: such a row is in one *combination* of cells, one a
word at the same length class, which GIN finds by the cells' keys
together.  A combination's bound is the sum of its cells' bounds, and the
walk reads combinations as it reads cells.  Most cells and combinations
are empty (no row that short holds the word that often), and a walk
crossing them would cost more than scoring every match: so each of a
word's frequency classes begins at the first length class any row holds
it at (:mod:`~plone.pgcatalog.tops`), and the rows holding one of the
words at a rare frequency (no length class) are read first, all of them.

A glob (what the search box sends for the word typed last) scores the sum
of its words' scores, and a three-letter prefix of a common word stands
for it and for dozens of rare ones, whose high idf puts their rows first.
So a query's terms (:func:`cell_terms`) are parts ANDed, each words ORed;
the rows holding a word held by :data:`FEW` rows or fewer are read first,
all of them, as are those holding a common word at a rare frequency.  The
rows left hold common words only, one set of them (at least one a part):
each set is walked as a combination, and the sets' combinations are read
in one order of their bounds.  A row is scored from its words among the
query's (each with its idf), whichever way it was found, and counted once.

Three parts each holding a common word (three words typed) would walk
combinations of three cells, most of them empty: the two parts held by
fewest rows are walked, and the third is *tested*.  The rows of a
combination must be in one of the third part's common words' cells at
the combination's length class (the same index finds them), and its
bound adds the best of those cells' bounds; once the page is full, each
combination left is read by those cells one at a time, each with its
own bound, so that only those that may beat the page are read.

A phrase scores the sum of its words, and a ``NOT`` part nothing: the
phrase's words are parts, and the phrase and each ``NOT`` part are
criteria of the rows found (:func:`cell_terms`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from functools import cache
from itertools import combinations
from plone.pgcatalog import registry as r
from plone.pgcatalog.expansions import CELL_WORDS
from plone.pgcatalog.expansions import Glob
from plone.pgcatalog.schema import FREQUENCY_EDGES
from plone.pgcatalog.schema import LENGTH_EDGES
from plone.pgcatalog.schema import RARE_FREQUENCY
from plone.pgcatalog.schema import ROWS
from plone.pgcatalog.text import lexeme
from plone.pgcatalog.text import MAX_LEXEME_BYTES
from plone.pgcatalog.tops import Lengths
from plone.pgcatalog.values import text_literal
from typing import Any
from typing import NamedTuple

import heapq
import math


__all__ = [
    "CELLS",
    "Terms",
    "best_rows",
    "cell_bounds",
    "cell_terms",
    "best_held",
    "combination_bounds",
    "few_rows",
    "okapi",
    "walked_words",
]

_COUNTS = f"word_counts -> {text_literal(r.SEARCHABLE_TEXT)}"
CELLS = f"pgcatalog_cells(searchable_text, {_COUNTS})"
"""The indexed expression (``schema.TEXT_CELLS``): a query must spell it so."""

FIRST_BATCH = 64
"""Cells read by the first statement; each next one reads _GROWTH times as many."""
_GROWTH = 2
FEW = 2_000
"""A word held by at most this many rows is scored whole where words are
ANDed or ORed: the statement that scores every match is as quick, and a
walk would read every cell to be sure none is left."""
FEW_ALONE = 500
"""A word searched alone held by at most this many rows is scored whole;
one held by more is walked: at a million rows a word of 1,000-2,000
rows took 20-37 ms to score whole (p95), and where its cells begin is
found in 5-11 ms once a process."""
MAX_READ = 5_000
"""Rows read before the walk gives up for the statement that scores every
match: the query's other criteria keep few of the word's rows."""
MAX_PARTS = 3
"""The most parts ANDed the cells serve (what the search box sends for
three words typed)."""
MAX_COMMON_PARTS = 2
"""The most parts ANDed walked as combinations where each holds a common
word: at a million rows three frequent words (3,904 rows holding all
three) crossed 1,024 combinations of three cells in 60 ms without filling
a page.  The parts held by most rows beyond these are *tested* instead:
the rows of the other parts' combinations must hold them, and a
combination's bound adds their words' best at its length class.  Three
parts of which one holds only rare words are answered by the rows read
first."""
TESTED_MATCHES = 5_000
"""The fewest matches expected (:func:`_expected`) for which a part is
tested: at a million rows three frequent words (3,900 matches) were read
from the cells in 50 ms of statements, where scoring them took 60-100;
two frequent words and a middling one (38 matches) scored whole in 12 ms,
and walked in 40-55 (p95)."""
MAX_COMMON = 3
"""The most words held by more than :data:`FEW` rows among the parts
walked (each set of them that meets every part is walked), and among the
parts tested."""
WORDS_PAGE = 50
"""The longest page of anything but one word walked (the search box's are 10 or
20): the last rows of a longer one score lower, past more combinations
(the caller asks for no longer one: see ``search._best_rows``)."""
MAX_COMBINATIONS = 1_024
"""Combinations crossed before the walk gives up for the statement that
scores every match: the words' rows hold them together few times; or more
where the parts' words are held by many rows (:data:`COMBINATION_ROWS`)."""
COMBINATION_ROWS = 25
"""Rows the statement that scores every match may have to score for each
combination the walk crosses before it gives up: a combination read costs
about as much as five rows scored (62 and 12 us at a million rows), and
the rows holding every part are fewer than the part held by fewest (at a
million rows ``seminar* AND tea*`` crossed about 2,000 combinations, 90
ms, where scoring its 40,000 matches took 520)."""
_SEPARATOR = chr(31)
"""Between the cells' keys of a combination (no lexeme holds it)."""
_TESTED = chr(30)
"""Between a combination's keys and those of each part tested."""


Terms = tuple[tuple[str, ...], ...]
"""The words of a text query the cells serve: parts ANDed, each of words
ORed (a glob is the OR of its words)."""


def few_rows(words: int) -> int:
    """The most rows a word may be held by and be scored whole, in a query
    of *words* words (:data:`FEW_ALONE`, :data:`FEW`)."""
    return FEW_ALONE if words == 1 else FEW


def cell_terms(
    scored: Sequence[Any], expansions: Mapping[Glob, tuple[str, ...]]
) -> tuple[Terms, tuple[Any, ...]] | None:
    """The terms of a query whose relevance order *scored* (``Ordering.scored``)
    the cells serve, its globs' words in *expansions*
    (:func:`~plone.pgcatalog.expansions.words_of`): up to :data:`MAX_PARTS`
    parts ANDed, each a word, a glob, or words and globs ORed; every word
    once, :data:`~plone.pgcatalog.expansions.CELL_WORDS` at most; else
    None.  With them, the parse-tree nodes that every match must match
    besides (``text.text_condition``): each phrase, whose words are parts
    (a phrase scores the sum of its words), and each ``NOT`` part (which
    scores nothing)."""
    if len(scored) != 1 or scored[0].index.column != "searchable_text":
        return None
    name = scored[0].index.name

    def ored(node: Any) -> tuple[str, ...] | None:
        kind, value = node.nodeType(), node.getValue()
        if kind == "ATOM":
            return (value,)
        if kind == "GLOB":
            return expansions.get((name, value))
        if kind != "OR":
            return None
        found = [ored(child) for child in value]
        return (
            None
            if any(words is None for words in found)
            else tuple(w for words in found for w in words or ())
        )

    tree = scored[0].tree
    parts: list[tuple[str, ...] | None] = []
    filters: list[Any] = []
    for node in tree.getValue() if tree.nodeType() == "AND" else [tree]:
        kind = node.nodeType()
        if kind in ("NOT", "PHRASE"):
            filters.append(node)
        if kind == "PHRASE":
            parts += [(word,) for word in node.getValue()]
        elif kind != "NOT":
            parts.append(ored(node))
    terms = tuple(part for part in parts if part is not None)
    words = [word for part in terms for word in part]
    if (
        not terms
        or len(terms) < len(parts)
        or len(terms) > MAX_PARTS
        or len(words) > CELL_WORDS
        or len(set(words)) < len(words)
    ):
        return None
    if any(len(word.encode("utf-8")) > MAX_LEXEME_BYTES for word in words):
        return None
    return terms, tuple(filters)


def okapi(f: float, dl: float, meandoclen: float, idf1024: float) -> int:
    """``pgcatalog_okapi`` in Python (bounds only: the scores come from SQL)."""
    return math.trunc(f * 2.2 / (f + 1.2 * (0.25 + 0.75 * dl / meandoclen)) * idf1024 + 0.5)


def _range(edges: tuple[int, ...], bucket: int) -> tuple[float, float]:
    """The values ``width_bucket(value, edges)`` puts in *bucket*."""
    low = edges[bucket - 1] if bucket > 0 else 0
    high = edges[bucket] - 1 if bucket < len(edges) else math.inf
    return low, high


def _bound(meandoclen: float, idf1024: float, fb: int, lb: int) -> int:
    """The best score of a row in the cell (*fb*, *lb*): its highest
    frequency, its shortest length."""
    f = _range(FREQUENCY_EDGES, fb)[1]
    if math.isinf(f):
        return math.trunc(2.2 * idf1024 + 0.5)  # (f / (f + k) tends to 1)
    return okapi(f, _range(LENGTH_EDGES, lb)[0], meandoclen, idf1024)


def cell_bounds(meandoclen: float, idf1024: float, lengths: Lengths) -> Iterator[tuple[int, int, int]]:
    """``(bound, f bucket, length bucket)`` of the cells of a word that
    begins at *lengths* (:mod:`~plone.pgcatalog.tops`), best bound first:
    each rare frequency's class (one cell, length bucket 0), then the
    combinations of the word alone."""
    rare = FREQUENCY_EDGES.index(RARE_FREQUENCY) + 1
    rares = [(_bound(meandoclen, idf1024, fb, 0), fb, 0) for fb in range(len(FREQUENCY_EDGES), rare - 1, -1)]
    others = ((bound, fbs[0], lb) for bound, lb, fbs in combination_bounds(meandoclen, [idf1024], [lengths]))
    return heapq.merge(rares, others, key=lambda cell: -cell[0])


def best_held(meandoclen: float, idf1024: float, lengths: Lengths, lb: int) -> int:
    """The best bound of a word's cells (its *idf* and *lengths*) at the
    length class *lb*: 0 where no row of that length holds it at a
    frequency short of the rare ones."""
    fb = next((fb for fb in range(len(lengths), 0, -1) if 0 < lengths[fb - 1] <= lb), 0)
    return _bound(meandoclen, idf1024, fb, lb) if fb else 0


def combination_bounds(
    meandoclen: float, idfs: Sequence[float], lengths: Sequence[Lengths], added: Sequence[int] = ()
) -> Iterator[tuple[int, int, tuple[int, ...]]]:
    """``(bound, length bucket, frequency buckets)`` of the combinations of
    the words' cells at one length class (each word's *idf* and
    :data:`~plone.pgcatalog.tops.Lengths` in order) that may hold rows,
    best bound first: each frequency class of a word from the first length
    class a row holds it at (the rare frequencies have none); *added*:
    what each length class adds to the bound of its combinations (its
    length bucket's place; none: nothing)."""

    # (each asked for again and again as the combinations are crossed:
    # a walk crosses thousands, and Python's time was most of a search's)
    @cache
    def held(word: int, lb: int, below: int) -> int:
        """The word's highest frequency class under *below* held at lengths up to *lb* (0: none)."""
        return next((fb for fb in range(below - 1, 0, -1) if 0 < lengths[word][fb - 1] <= lb), 0)

    @cache
    def word_bound(word: int, fb: int, lb: int) -> int:
        return _bound(meandoclen, idfs[word], fb, lb)

    def bound(lb: int, fbs: tuple[int, ...]) -> int:
        # (a length class's own addition: its combinations stay in order,
        # each from its best, fewer times a word by a word)
        return sum(word_bound(word, fb, lb) for word, fb in enumerate(fbs)) + (added[lb] if added else 0)

    heap: list[tuple[int, int, tuple[int, ...]]] = []
    seen: set[tuple[int, tuple[int, ...]]] = set()

    def push(lb: int, fbs: tuple[int, ...]) -> None:
        if (lb, fbs) not in seen:
            seen.add((lb, fbs))
            heapq.heappush(heap, (-bound(lb, fbs), lb, fbs))

    top = len(lengths[0]) + 1 if lengths else 0
    for lb in range(1, len(LENGTH_EDGES) + 1):  # (each length class from its best combination)
        fbs = tuple(held(word, lb, top) for word in range(len(lengths)))
        if fbs and all(fbs):
            push(lb, fbs)
    while heap:
        negative, lb, fbs = heapq.heappop(heap)
        yield -negative, lb, fbs
        if lb < len(LENGTH_EDGES):
            push(lb + 1, fbs)
        for word, fb in enumerate(fbs):
            lower = held(word, lb, fb)
            if lower:
                push(lb, (*fbs[:word], lower, *fbs[word + 1 :]))


_F = f"COALESCE(({_COUNTS} -> 1 ->> %s)::float8, pgcatalog_occurrences(searchable_text, %s, %s::tsquery))"
_OKAPI = (
    f"pgcatalog_okapi({_F}, ({_COUNTS} ->> 0)::float8, %s::float8 / %s::float8,"
    " ln(1.0::float8 + %s::float8 / %s::bigint) * 1024.0::float8)"
)


def _score(words: str, frequencies: str) -> str:
    """A row's score for words ORed or ANDed: its words among them, each
    scored with its idf (as ``relevance`` scores a glob's words), added
    up; *words*: the SQL of their array, *frequencies*: of the array of
    the number of rows holding each.  Its parameters: the index's words
    and documents, its documents again, those of *frequencies*, those of
    *words* twice."""
    return (
        "(SELECT COALESCE(sum(pgcatalog_okapi("
        "COALESCE((c.counts -> 1 ->> u.lexeme)::float8, cardinality(u.positions)), (c.counts ->> 0)::float8,"
        " %s::float8 / %s::float8, ln(1.0::float8 + %s::float8"
        f" / NULLIF(({frequencies})[array_position({words}, u.lexeme)], 0)) * 1024.0::float8)), 0)::bigint"
        # (the row's counts taken out once)
        f" FROM (SELECT {_COUNTS}) AS c(counts), unnest(ts_filter(setweight(searchable_text, 'A', {words}), '{{a}}')) AS u)"
    )


# each cell's rows in turn (a nested loop over the keys, in order: OFFSET
# 0 keeps the subquery apart, scanned for each key), so that LIMIT stops
# the statement at the cell that fills the page; a part tested is one
# of its words' cells at the key's length class, which the same index
# finds (a row tested from the heap read its text, and most held none of
# them: three frequent words, 150-340 ms at a million rows); the query's other
# criteria only filter the cell's rows (inside COALESCE the planner reads
# no index for them: ANDed with the bitmap of every row a user may see, a
# cell of 241 rows took 20 ms)
_CELL_ROWS = (
    "SELECT k.i, r.* FROM unnest(%s::text[]) WITH ORDINALITY AS k(key, i) CROSS JOIN LATERAL ("
    "SELECT {score}, object_state.zoid, object_state.path"
    f" FROM {ROWS} WHERE {CELLS} @> string_to_array(split_part(k.key, chr({ord(_TESTED)}), 1), chr({ord(_SEPARATOR)}))"
    "{tested} AND searchable_text IS NOT NULL AND COALESCE(({where}), false)"
    " OFFSET 0) AS r"
    " LIMIT %s"
)


def best_rows(
    read: Callable[[str, list], list[tuple]],
    terms: Terms,
    where: str,
    params: list,
    documents: float,
    total: float,
    dfs: Sequence[int],
    needed: int,
    lengths: Callable[[Sequence[str]], Sequence[Lengths] | None],
) -> list[tuple[int, str, int]] | None:
    """The *needed* best ``(zoid, path, score)`` of the rows holding
    *terms* (:func:`cell_terms`) in their SearchableText and matching
    *where* (with *params*), best first, ties by record id, highest first;
    all of them where fewer match.  *documents* and *total* (its words)
    are the index's statistics, *dfs* the number of its rows holding each
    word of *terms* in order; *lengths(words)* where each word's cells
    begin (:func:`~plone.pgcatalog.tops.first_lengths`; None: not known);
    *read(sql, params)* runs a statement over the catalog rows.  None
    where the statement that scores every match is as quick (the words
    are held by :data:`FEW` rows or fewer, or a word alone by
    :data:`FEW_ALONE`), or where the
    walk read more than :data:`MAX_READ` rows or crossed more than
    :data:`MAX_COMBINATIONS` combinations (or more, :data:`COMBINATION_ROWS`)
    without an answer."""
    words = [word for part in terms for word in part]
    held = dict(zip(words, dfs, strict=True))
    parts = [tuple(word for word in part if held[word] != 0) for part in terms]
    if not all(parts) or not documents:
        return []
    meandoclen = total / documents
    if len(words) == 1:
        (word,) = words
        df = held[word]
        found = lengths(words) if df > few_rows(1) else None
        if found is None:
            return None
        idf = math.log(1.0 + documents / df) * 1024.0
        sql = _CELL_ROWS.format(score=_OKAPI, tested="", where=where)
        scored = [word, word, lexeme(word), total, documents, documents, df]
        cells = ((bound, f"{fb} {lb} {word}") for bound, fb, lb in cell_bounds(meandoclen, idf, found[0]))
        return _walk(read, sql, [*scored, *params], cells, needed, [], 1, None)
    plan = _plan(parts, held, len(words), documents)
    if plan is None:
        return None
    common = plan.common
    begins = dict(zip(common, (lengths(common) if plan.sets else None) or (), strict=False))
    if plan.sets and len(begins) < len(common):
        return None
    statistics = [total, documents, documents]
    common_dfs = [held[word] for word in common]
    first = _first_rows(read, parts, common, plan.few, held, where, [*statistics, *params])
    if first is None or not plan.sets:  # (no set: every match holds a word of few rows, and was read)
        return None if first is None else [(zoid, path, score) for score, zoid, path in first[:needed]]
    idfs = {word: math.log(1.0 + documents / held[word]) * 1024.0 for word in common}
    classes = range(len(LENGTH_EDGES) + 1)
    # at each length class: what a row scores at most from the tested
    # words besides its combination, the cells of each part tested, and
    # each cell of the first with what its bound takes from the best there
    best = {
        (word, lb): best_held(meandoclen, idfs[word], begins[word], lb)
        for word in plan.added
        for lb in classes
    }
    added = [sum(best[word, lb] for word in plan.added) for lb in classes] if plan.added else []
    tested = [
        [_SEPARATOR.join(f"{fb} {lb} {word}" for word, fb in _held_cells(part, begins, lb)) for lb in classes]
        for part in plan.tested
    ]
    fine = [
        [
            (_bound(meandoclen, idfs[word], fb, lb) - best[word, lb], f"{fb} {lb} {word}")
            for part in plan.tested[:1]
            for word, fb in _held_cells(part, begins, lb)
        ]
        for lb in classes
    ]

    def combinations_of(words: tuple[str, ...]) -> Iterator[tuple[int, str]]:
        for bound, lb, fbs in combination_bounds(
            meandoclen, [idfs[w] for w in words], [begins[w] for w in words], added
        ):
            keys = _SEPARATOR.join(f"{fb} {lb} {word}" for fb, word in zip(fbs, words, strict=True))
            if all(part[lb] for part in tested):  # (else its rows hold no part tested there)
                yield bound, _TESTED.join([keys, *(part[lb] for part in tested)])

    def refine(cell: tuple[int, str], least: int) -> list[tuple[int, str]]:
        # (once the page is full: of a combination's rows, those holding
        # each cell of the part tested, whose bound may beat the page's
        # last row; reading them all read 1,285 rows of three frequent
        # words for ten, 41 ms at a million rows)
        bound, keys = cell
        combination, _, *others = keys.split(_TESTED)
        lb = int(combination.split(_SEPARATOR, 1)[0].split(" ")[1])
        return [
            (bound + less, _TESTED.join([combination, key, *others]))
            for less, key in fine[lb]
            if bound + less >= least
        ]

    cells = heapq.merge(*map(combinations_of, plan.sets), key=lambda cell: -cell[0])
    # (a row the walk finds holds only common words, or was read first)
    of_tested = "".join(
        f" AND {CELLS} && string_to_array(split_part(k.key, chr({ord(_TESTED)}), {n}), chr({ord(_SEPARATOR)}))"
        for n in range(2, len(tested) + 2)
    )
    sql = _CELL_ROWS.format(score=_score("%s::text[]", "%s::bigint[]"), tested=of_tested, where=where)
    slack = max(map(len, plan.sets)) + len(plan.added)
    head = [*statistics, common_dfs, common, common, *params]
    # (every match holds every part: its matches are no more than the rows of the part held by fewest)
    fewest = min(sum(held[word] for word in part) for part in parts)
    most = max(MAX_COMBINATIONS, fewest // COMBINATION_ROWS)
    return _walk(read, sql, head, cells, needed, first, slack, most, refine if tested else None)


def walked_words(terms: Terms, known: Mapping[str, int | None]) -> tuple[str, ...]:
    """The words of *terms* whose cells :func:`best_rows` walks or whose
    bounds it adds, by the rows known to hold each (*known*; None: not
    counted yet), so that where they begin is asked for them only
    (:mod:`~plone.pgcatalog.tops`: 25 ms a frequent word at a million
    rows, the first time in a process).  None where every match holds a
    word of few rows (read first, all of them) or the statement that
    scores every match answers instead; where a count is unknown, each
    word known to be common, unless a part's words are all known to be
    held by few rows."""
    words = [word for part in terms for word in part]
    most = few_rows(len(words))
    counts = {word: count for word, count in known.items() if count is not None}
    if len(counts) < len(words):
        if any(all(word in counts and counts[word] <= most for word in part) for part in terms):
            return ()
        return tuple(word for word, count in counts.items() if count > most)
    parts = [tuple(word for word in part if counts[word] != 0) for part in terms]
    if not all(parts):
        return ()
    if len(words) == 1:
        return tuple(words) if counts[words[0]] > most else ()
    plan = _plan(parts, counts, len(words))
    return tuple(plan.common) if plan is not None and plan.sets else ()


class _Plan(NamedTuple):
    """How :func:`best_rows` finds the rows of words in several parts."""

    common: list[str]
    """The words held by more rows than :func:`few_rows` (scored from their cells)."""
    few: list[str]
    """The others: their rows are read first, all of them."""
    sets: list[tuple[str, ...]]
    """Each set of common words walked as combinations (none: every match holds a word of *few*)."""
    tested: list[tuple[str, ...]]
    """The parts not walked: a combination's rows are in a cell of their common words."""
    added: list[str]
    """Their common words, whose best cell at a length class each of its combinations' bounds adds."""


def _plan(
    parts: Sequence[tuple[str, ...]], held: Mapping[str, int], words: int, documents: float | None = None
) -> _Plan | None:
    """The :class:`_Plan` of *parts* by the rows holding each word
    (*held*) in a query of *words* words: the parts walked are those held
    by fewest rows (each combination's rows fewer, and the part tested
    keeps most of them), as many as :data:`MAX_COMMON_PARTS` whose common
    words are :data:`MAX_COMMON` at most; None where too many common words
    or rows of few words would be read."""
    common, few = _common(parts, held, words)
    if sum(held[word] for word in few) > MAX_READ:
        return None
    if not all(set(part) & set(common) for part in parts):
        return _Plan(common, few, [], [], [])
    by_rows = sorted(parts, key=lambda part: sum(held[word] for word in part))
    # (fewer parts walked where theirs are too many common words: a glob
    # of several typed after a frequent word)
    for walking in range(min(len(parts), MAX_COMMON_PARTS), 0, -1):
        walked, tested = by_rows[:walking], by_rows[walking:]
        added = [word for part in tested for word in part if word in common]
        sets = _common_sets(walked, [word for word in common if word not in added])
        if sets is None or len(added) > MAX_COMMON:
            continue
        if tested and documents and _expected(by_rows, held, documents) < TESTED_MATCHES:
            return None
        return _Plan(common, few, sets, tested, added)
    return None


def _expected(parts: Sequence[tuple[str, ...]], held: Mapping[str, int], documents: float) -> float:
    """The rows of *documents* expected to hold every part, were the parts'
    words held independently (three of the workload's frequent words: 8,000
    expected, 3,900 found)."""
    return documents * math.prod(min(1.0, sum(held[word] for word in part) / documents) for part in parts)


def _common(
    parts: Sequence[tuple[str, ...]], held: Mapping[str, int], words: int
) -> tuple[list[str], list[str]]:
    """The words of *parts* held by more rows than :func:`few_rows` in a
    query of *words* words, and the others."""
    most = few_rows(words)
    found = [word for part in parts for word in part]
    return [word for word in found if held[word] > most], [word for word in found if held[word] <= most]


def _held_cells(words: Sequence[str], begins: Mapping[str, Lengths], lb: int) -> Iterator[tuple[str, int]]:
    """``(word, frequency bucket)`` of each cell of *words* (those whose
    *begins* are known) that a row of the length class *lb* may be in."""
    for word in words:
        for fb, begin in enumerate(begins.get(word, ()), 1):
            if 0 < begin <= lb:
                yield word, fb


def _common_sets(parts: Sequence[tuple[str, ...]], common: Sequence[str]) -> list[tuple[str, ...]] | None:
    """Each set of the *common* words that holds a word of every part: the
    words of a row that holds none of the others (none where a part has
    no common word); None where they are more than :data:`MAX_COMMON`."""
    if len(common) > MAX_COMMON:
        return None
    return [
        words
        for n in range(1, len(common) + 1)
        for words in combinations(common, n)
        if all(set(words) & set(part) for part in parts)
    ]


def _first_rows(
    read: Callable[[str, list], list[tuple]],
    parts: Sequence[tuple[str, ...]],
    common: Sequence[str],
    few: Sequence[str],
    held: Mapping[str, int],
    where: str,
    params: list,
) -> list[tuple[int, int, str]] | None:
    """``(score, zoid, path)`` of the rows matching the *parts* and
    *where* that no combination of the *common* words reads: those holding
    one of the *few* words, or a common one at a rare frequency; best
    first; None where they are more than :data:`MAX_READ`.  *held*: the
    rows holding each word.  *params*: the
    index's statistics (total words and documents, documents), then
    *where*'s."""
    rare = FREQUENCY_EDGES.index(RARE_FREQUENCY) + 1
    keys = [f"{fb} 0 {word}" for word in common for fb in range(rare, len(FREQUENCY_EDGES) + 1)]
    matched = " & ".join("(" + " | ".join(map(lexeme, part)) + ")" for part in parts)
    reached = f"{CELLS} && %s::text[]" + (" OR searchable_text @@ %s::tsquery" if few else "")
    # (the few words' rows that hold every part, as the text index finds
    # them: a glob's rare words after a frequent word typed, or before it,
    # were read and tested row by row, the heap's page of each)
    holding_few = f"({' | '.join(map(lexeme, few))}) & {matched}"
    reached_params: list[Any] = [keys, *([holding_few] if few else [])]
    sql = (
        f"SELECT {_score('%s::text[]', '%s::bigint[]')}, object_state.zoid, object_state.path FROM {ROWS}"
        f" WHERE searchable_text IS NOT NULL AND ({reached})"
        f" AND COALESCE(searchable_text @@ %s::tsquery AND ({where}), false) LIMIT %s"
    )
    statistics, where_params = params[:3], params[3:]
    words = [*common, *few]
    dfs = [held[word] for word in words]
    rows = read(sql, [*statistics, dfs, words, words, *reached_params, matched, *where_params, MAX_READ + 1])
    return None if len(rows) > MAX_READ else sorted(map(tuple, rows), reverse=True)


def _walk(
    read: Callable[[str, list], list[tuple]],
    sql: str,
    head: list,
    cells: Iterator[tuple[int, str]],
    needed: int,
    first: list[tuple[int, int, str]],
    slack: int,
    most: int | None,
    refine: Callable[[tuple[int, str], int], list[tuple[int, str]]] | None = None,
) -> list[tuple[int, str, int]] | None:
    """The walk of :func:`best_rows` over *cells* (``(bound, keys)``, best
    bound first) from the rows *first* already found (``(score, zoid,
    path)``, best first); a row found again counts once; *slack*: the
    bound's rounding (one a word); *most*: the cells it may cross before
    it gives up (None: all); *refine(cell, least)*: once the page is
    full, the cells that a cell's rows are in, those whose bound is
    *least* or more (their order does not matter: each is read)."""
    queued: deque[tuple[int, str]] = deque()  # cells to read before the next ones
    batch, whole, read_rows, crossed = FIRST_BATCH, False, len(first), 0
    seen = {zoid for _, zoid, _ in first}
    best = first[:needed]
    while True:
        # once the page is full, only cells that may beat its last row
        # (the bound is Python's float arithmetic: one more a word for its rounding)
        last = best[-1][0] - slack if len(best) == needed else None
        keys: list[tuple[int, str]] = []
        while len(keys) < (1 if whole else batch):
            cell = queued.popleft() if queued else next(cells, None)
            if cell is None or (last is not None and cell[0] < last):
                queued.clear()
                break
            keys += [cell] if last is None or refine is None else refine(cell, last)
        if not keys:
            return [(zoid, path, score) for score, zoid, path in best]
        crossed += len(keys)
        if most is not None and crossed > most:
            return None
        limit = MAX_READ + 1 if whole or last is not None else needed - len(best)
        rows = read(sql, [[key for _, key in keys], *head, limit])
        read_rows += len(rows)
        if read_rows > MAX_READ or any(a[0] > b[0] for a, b in zip(rows, rows[1:], strict=False)):
            return None  # (or the cells came out of order: the statement scores every match)
        whole = False
        if len(rows) == limit and last is None:
            # the page filled up in the cell of the last row, which may be
            # cut short: it is read whole next, then the cells after it
            cut = rows[-1][0]
            queued.extendleft(reversed(keys[cut - 1 :]))
            rows = [row for row in rows if row[0] < cut]
            whole = True
        for _, score, zoid, path in rows:
            if zoid not in seen:
                seen.add(zoid)
                best.append((score, zoid, path))
        best = sorted(best, reverse=True)[:needed]
        batch *= _GROWTH
