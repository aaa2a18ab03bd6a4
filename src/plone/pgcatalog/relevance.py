"""Relevance order: ZCTextIndex's Okapi BM25 scores, computed in SQL.

Without ``sort_on``, ZCatalog orders the matches of a text query by score,
highest first, ties by record id, highest first.  A word *w* scores in a
document *d* (``OkapiIndex._search_wids``)::

    int(f * 2.2 / (f + 1.2 * (0.25 + 0.75 * dl / meandoclen)) * ln(1 + N / df) * 1024 + 0.5)

with *f* the frequency of *w* in *d*, *dl* the number of words of *d*,
*N* the number of documents in the index, *meandoclen* their mean length
and *df* the number of documents holding *w*.  The parse tree adds these
up: an ``AND`` sums its parts (its ``NOT`` parts add nothing), an ``OR``
the parts that match, a phrase its words, a glob the words it expands to
(found in the lexicon, ``pgcatalog_words``: see ``schema.LEXICON``).
The other indexes of the query then change every score alike (see
:func:`score_scale`), which leaves the order as it is.

The catalog rows keep *dl* (``word_counts``, see
:mod:`~plone.pgcatalog.extraction`); *f* is the number of the word's
positions in the index's tsvector (``pgcatalog_frequency``) unless the
row's word counts hold it (a word past 256 positions, or past position
16,383); *N* and the total length come from
``pgcatalog_text_stats`` (kept by a trigger), corrected for this
transaction's pending rows; *df* is counted over the catalog rows this
transaction sees.  ``pgcatalog_okapi`` repeats OkapiIndex's float
operations in its order, so the integers, and the order, are ZCatalog's.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Sequence

from dataclasses import dataclass
from plone.pgcatalog import registry as r
from plone.pgcatalog.overlay import has_changes
from plone.pgcatalog.pending import Pending
from plone.pgcatalog.schema import ROWS
from plone.pgcatalog.text import glob_like
from plone.pgcatalog.text import glob_prefix
from plone.pgcatalog.text import lexeme
from plone.pgcatalog.text import lexeme_sql
from plone.pgcatalog.text import node_tsquery
from plone.pgcatalog.text import text_condition
from plone.pgcatalog.values import array_literal


__all__ = [
    "GIVEN_DF",
    "GivenGlob",
    "Scored",
    "compact_word_counts_sql",
    "counted_words",
    "ranked_sql",
    "score_scale",
]


GIVEN_DF = object()
"""Where :func:`ranked_sql` with *given_df* wants the array of its words'
document frequencies among its parameters (:func:`counted_words`' order)."""


@dataclass(frozen=True)
class GivenGlob:
    """Where :func:`ranked_sql` with *given_df* wants the document
    frequencies of the words glob *pattern* stands for, among its
    parameters: a JSON object, word to df (a word it lacks is counted in
    the statement: ``{}`` counts them all)."""

    pattern: str


@dataclass
class Scored:
    """A text index's part of a query ordered by relevance."""

    index: r.IndexDef
    tree: object  # ZCTextIndex parse tree


def score_scale(named: Iterable[r.IndexDef]) -> tuple[int, int]:
    """``(a, b)``: ZCatalog reports ``a * text score + b``.

    ``Catalog.search`` intersects the scored result of the text indexes
    with each other index of the query in turn, by name (ZCatalog's query
    plan when it has not timed the query yet), and ``weightedIntersection``
    counts each member of a plain set as 1.  A DateRangeIndex, though,
    answers with the scored result it was handed minus what it excludes,
    so intersecting with it doubles every score.
    """
    a, b = 1, 0
    for index in sorted((index for index in named if index.kind != r.TEXT), key=lambda index: index.name):
        if index.kind == r.DATE_RANGE:
            a, b = 2 * a, 2 * b
        else:
            b += 1
    return a, b


def _idf1024(documents_with: str) -> str:
    """``ln(1 + N / df) * 1024``, N being ``s.documents``."""
    return f"ln(1.0::float8 + s.documents / {documents_with}) * 1024.0::float8"


def _sum(terms: list[str]) -> str:
    """``a + b + ...`` as a balanced tree (see ``text._balanced``): a query
    of thousands of words must not nest thousands deep."""
    if len(terms) <= 2:
        return "(" + (" + ".join(terms) or "0") + ")"
    middle = len(terms) // 2
    return f"({_sum(terms[:middle])} + {_sum(terms[middle:])})"


class _Index:
    """The SQL of one text index's scores: its common table expressions
    (statistics, words, glob expansions), the per-row word counts and
    the score expression, each with its parameters in order."""

    def __init__(
        self,
        number: int,
        scored: Scored,
        pending: Pending | None,
        one_scan: bool = False,
        given_df: bool = False,
    ):
        self.n = number
        self.given_df = given_df  # the words' df come as a parameter (GIVEN_DF)
        self.index = scored.index
        self.key = r.name_literal(scored.index.name)
        # each word and glob with its number (1, 2, ...), in query order
        self.words: dict[str, int] = {}
        self.globs: dict[str, int] = {}
        # the conditions of the parts below an OR (a part that does not
        # match scores nothing), each with its parameters
        self.gates: list[tuple[str, list]] = []
        self.tree = scored.tree
        self.pending = pending
        self.scanned_once = one_scan  # scored by :meth:`one_scan`
        # there, each glob of the query, as often as it comes (an OR adds
        # up its parts: ``post* OR post*`` counts twice, as in ZCatalog)
        self.glob_parts: list[str] = []
        self.score = self._node(scored.tree, True)

    # -- the score expression -------------------------------------------------

    def _okapi(self, freq: str, idf: str) -> str:
        return f"pgcatalog_okapi(({freq})::float8, pgcatalog_c{self.n}.dl, pgcatalog_m{self.n}.meandoclen, {idf})"

    def _kept_okapi(self) -> str:
        """The score of an expansion ``u`` (a lexeme of a row's vector kept
        by a glob's filter) whose idf is ``g.idf1024``."""
        return self._okapi(
            f"COALESCE((pgcatalog_c{self.n}.freq ->> u.lexeme)::float8, cardinality(u.positions))",
            "g.idf1024",
        )

    def _word(self, word: str) -> str:
        i = self.words.setdefault(word, len(self.words) + 1)
        return self._okapi(f"pgcatalog_c{self.n}.f[{i}]", f"pgcatalog_t{self.n}.idf1024[{i}]")

    def _node(self, node, known: bool) -> str:
        """The score of *node* for the row; *known*: the row matches it."""
        kind, value = node.nodeType(), node.getValue()
        if kind == "ATOM":
            return self._word(value)
        if kind == "GLOB":
            if self.scanned_once:
                self.glob_parts.append(value)
                return "0"  # the globs' parts are summed in one join (see one_scan)
            name = f"pgcatalog_g{self.n}_{self.globs.setdefault(value, len(self.globs) + 1)}"
            # the row's words among the expansions, from its vector kept to
            # the query's words (see counts)
            return (
                f"COALESCE((SELECT sum({self._kept_okapi()}) FROM unnest(pgcatalog_c{self.n}.v) AS u"
                f" JOIN {name} AS g ON g.word = u.lexeme), 0)"
            )
        if kind == "PHRASE":
            parts = [self._word(word) for word in value]
        elif kind == "AND":
            parts = [self._node(child, True) for child in value if child.nodeType() != "NOT"]
        elif kind == "OR":
            return _sum([self._node(child, False) for child in value])
        else:
            raise ValueError(f"unsupported query node {kind}")
        if known:
            return f"({_sum(parts)})"
        # below an OR: a part that does not match scores nothing
        self.gates.append(text_condition(node, self.index.expression()))
        return f"(CASE WHEN pgcatalog_c{self.n}.gate[{len(self.gates)}] THEN {_sum(parts)} ELSE 0 END)"

    # -- the tables it reads -----------------------------------------------------

    def _sources(self) -> tuple[str, list]:
        """Rows of (documents, words) that add up to the index's size, as
        this transaction sees it."""
        length = f"(word_counts -> {self.key} ->> 0)::bigint"
        pending = self.pending
        if pending is not None and (pending.emptied or self.index.name in pending.cleared):
            return f"SELECT count(*), sum({length}) FROM {ROWS} WHERE word_counts ? {self.key}", []
        committed = f"SELECT documents, words FROM pgcatalog_text_stats WHERE index_name = {self.key}"
        if not has_changes(pending):
            return committed, []
        zoids, paths = array_literal(pending.rows), array_literal(pending.removed)
        sql = f"""{committed}
UNION ALL
SELECT -count(*), -sum({length}) FROM object_state
 WHERE word_counts ? {self.key} AND (zoid = ANY(%s::bigint[]) OR path = ANY(%s::text[]))
UNION ALL
SELECT count(*), sum({length}) FROM {ROWS} WHERE zoid = ANY(%s::bigint[]) AND word_counts ? {self.key}"""
        return sql, [zoids, paths, zoids]

    def _statistics(self) -> tuple[str, list]:
        """The index's number of documents and their mean length."""
        sources, params = self._sources()
        return (
            f"pgcatalog_s{self.n} AS MATERIALIZED (SELECT sum(documents)::float8 AS documents, "
            f"sum(words)::float8 / NULLIF(sum(documents), 0)::float8 AS meandoclen"
            f" FROM ({sources}) AS s(documents, words))"
        ), params

    def _expansions(self, pattern: str) -> tuple[str, list]:
        """The words of the index *pattern* (a glob) may stand for, as
        ``Lexicon.globToWordIds`` finds them: a range of the lexicon
        (``pgcatalog_words``, see ``schema.LEXICON``), and the words of this
        transaction's own rows, which it gets at the commit.  Some may be
        held by no row any more (they then score nothing)."""
        prefix, like = glob_prefix(pattern), glob_like(pattern)
        matching = " AND word LIKE %s" if like else ""
        # a range of the primary key whatever the prefix (a generic plan
        # cannot derive one from starts_with); no word goes past U+10FFFF
        sql = (
            f"SELECT word FROM pgcatalog_words WHERE index_name = {self.key}"
            f" AND word >= %s AND word <= %s AND starts_with(word, %s){matching}"
        )
        params = [prefix, prefix + "\U0010ffff", prefix, *([like] if like else [])]
        pending = self.pending
        if has_changes(pending) and pending.rows:
            sql += (
                f" UNION SELECT word FROM {ROWS}, unnest(tsvector_to_array({self.index.expression()})) AS u(word)"
                f" WHERE zoid = ANY(%s::bigint[]) AND starts_with(word, %s){matching}"
            )
            params += [array_literal(pending.rows), prefix, *([like] if like else [])]
        return sql, params

    def _globs(self) -> tuple[list[str], list]:
        """Each glob's expansions held by the rows, with their idf: each
        expansion's documents counted through the text index, as a word's
        are.  A count reads no row's words: filtering each row holding the
        prefix to its expansions instead, as :meth:`one_scan` does, made
        ``postgresql*`` at 20,000 documents 15.7 ms against 13.9."""
        n, expr = self.n, self.index.expression()
        query = lexeme_sql("e.word")  # the expansion as a tsquery of that lexeme
        ctes, params = [], []
        for pattern, number in self.globs.items():
            expansions, expansion_params = self._expansions(pattern)
            df = f"(SELECT count(*) FROM {ROWS} WHERE {expr} @@ {query})"
            if self.given_df:
                df, given = f"COALESCE((%s::jsonb ->> e.word)::bigint, {df})", [GivenGlob(pattern)]
            else:
                given = []
            ctes.append(
                f"pgcatalog_g{n}_{number} AS MATERIALIZED (SELECT e.word,"
                f" {_idf1024('e.df')} AS idf1024"
                f" FROM pgcatalog_s{n} AS s, (SELECT word, {df} AS df"
                f" FROM ({expansions}) AS e OFFSET 0) AS e WHERE e.df > 0)"
            )
            params += [*given, *expansion_params]
        return ctes, params

    def _idf(self, documents_with: str) -> str:
        """The words' idf, in order, from *documents_with*: a FROM item of
        rows ``(df, i)``, the number of documents holding word *i*."""
        return (
            f"pgcatalog_t{self.n} AS MATERIALIZED (SELECT array_agg({_idf1024('NULLIF(w.df, 0)')} ORDER BY w.i)"
            f" AS idf1024 FROM pgcatalog_s{self.n} AS s, {documents_with})"
        )

    def ctes(self) -> tuple[list[str], list]:
        """The statistics, the words' idf (each word's documents counted
        in a scan of their own) and the glob expansions."""
        expr = self.index.expression()
        stats, params = self._statistics()
        ctes = [stats]
        if self.words and self.given_df:
            ctes.append(self._idf("unnest(%s::bigint[]) WITH ORDINALITY AS w(df, i)"))
            params.append(GIVEN_DF)
        elif self.words:
            # NULL idf where no document holds the word; two parameters however
            # many words (PostgreSQL takes at most 65,535)
            ctes.append(
                self._idf(
                    f"(SELECT i, (SELECT count(*) FROM {ROWS} WHERE {expr} @@ q) AS df"
                    " FROM unnest(%s::text[], %s::tsquery[]) WITH ORDINALITY AS v(word, q, i) OFFSET 0) AS w"
                )
            )
            params += [array_literal(self.words), array_literal(lexeme(word) for word in self.words)]
        globs, glob_params = self._globs()
        return ctes + globs, params + glob_params

    def counts(self) -> tuple[str, list]:
        """The row's length, the frequency of each word (the array ``f``)
        and whether it matches each gate (``gate``), as ``pgcatalog_c<n>``.
        A word's frequency is its number of positions (``pgcatalog_occurrences``),
        unless the row's word counts tell it (see
        ``extraction.text_value``; rows written before schema version 5
        tell them all).  Computed here, once a row, they leave
        ``pgcatalog_okapi`` plain values, and PostgreSQL inlines it; one
        array, whatever the number of words (a select list takes at most
        1,664)."""
        n, expr = self.n, self.index.expression()
        columns, params = "", []
        # several words or a glob: the positions of the query's words (a
        # glob's: its expansions) taken out of the row's vector once
        # (weighted back to D, which pgcatalog_occurrences' ranks assume),
        # not the whole vector fetched and read for each word and glob (at
        # a third of a million rows, three words' matches scored in 20.4
        # ms, not 24.7)
        vector, kept, kept_params = expr, "", []
        if len(self.words) > 1 or self.globs:
            vector = "c.v"
            expansions = "".join(
                f" || ARRAY(SELECT word FROM pgcatalog_g{n}_{g})" for g in self.globs.values()
            )
            kept = (
                f", setweight(ts_filter(setweight({expr}, 'A', %s::text[]{expansions}), '{{a}}'), 'D') AS v"
            )
            kept_params = [array_literal(self.words)]
            columns = ", c.v"
        if self.words:
            each = ", ".join(
                f"COALESCE((c.c -> 1 ->> %s)::float8, pgcatalog_occurrences({vector}, %s, %s::tsquery))"
                for _ in self.words
            )
            columns += f", ARRAY[{each}] AS f"
            params = [p for word in self.words for p in (word, word, lexeme(word))]
        if self.gates:
            columns += f", ARRAY[{', '.join(sql for sql, _ in self.gates)}] AS gate"
            params += [p for _, gate_params in self.gates for p in gate_params]
        sql = (
            f" CROSS JOIN LATERAL (SELECT (c.c ->> 0)::float8 AS dl, c.c -> 1 AS freq{columns}"
            f" FROM (SELECT object_state.word_counts -> {self.key} AS c{kept} OFFSET 0) AS c OFFSET 0)"
            f" AS pgcatalog_c{n}"
        )
        return sql, [*params, *kept_params]

    def joins(self) -> tuple[str, list]:
        """The index's mean length and idf of its words, and the row's counts."""
        n = self.n
        joins = f" CROSS JOIN pgcatalog_s{n} AS pgcatalog_m{n}"
        if self.words:
            joins += f" CROSS JOIN pgcatalog_t{n}"
        counts, params = self.counts()
        return joins + counts, params

    def one_scan(self, where: str, where_params: list) -> tuple[str, list]:
        """``WITH ...``: the matches of *where* scored with one scan of the
        rows that hold any of the words, for a text query that matches
        those rows (:func:`_one_scan`): the same scan counts each word's
        documents (a document holds a word where its frequency is above 0)
        and marks the matches, so no row is read twice.

        The globs' expansions (``pgcatalog_e<n>``: each glob's number and
        words) filter each row to those it holds (``kept``), from which
        their documents are counted and each match's score for them summed
        in one join (``pgcatalog_gs<n>``): the query is an OR, which adds
        up the scores of its parts."""
        n, expr, c = self.n, self.index.expression(), f"pgcatalog_c{self.n}"
        stats, params = self._statistics()
        ctes = [stats]
        kept = ""
        if self.glob_parts:
            expansions = []
            for number, pattern in enumerate(self.glob_parts):
                sql, expansion_params = self._expansions(pattern)
                expansions.append(f"SELECT {number} AS glob, word FROM ({sql}) AS e")
                params += expansion_params
            ctes.append(f"pgcatalog_e{n} AS MATERIALIZED ({' UNION ALL '.join(expansions)})")
            words = f"(SELECT array_agg(DISTINCT word) FROM pgcatalog_e{n})"
            kept = f", ts_filter(setweight({expr}, 'A', {words}), '{{a}}') AS kept"
        counts, count_params = self.counts()
        f = f"{c}.f" if self.words else "NULL"
        ctes.append(
            f"pgcatalog_w{n} AS MATERIALIZED (SELECT zoid, path, {c}.dl, {c}.freq, {f} AS f{kept},"
            f" ({where}) AS matched FROM {ROWS}{counts} WHERE {expr} @@ %s::tsquery)"
        )
        params += [*where_params, *count_params, node_tsquery(self.tree)]
        joins, score = "", self.score
        if self.words:
            holding = ", ".join(f"count(*) FILTER (WHERE f[{i}] > 0)" for i in self.words.values())
            ctes.append(
                self._idf(
                    f"(SELECT ARRAY[{holding}] AS df FROM pgcatalog_w{n}) AS d,"
                    " unnest(d.df) WITH ORDINALITY AS w(df, i)"
                )
            )
            joins += f" CROSS JOIN pgcatalog_t{n}"
        if self.glob_parts:
            ctes += [
                f"pgcatalog_g{n} AS MATERIALIZED (SELECT u.lexeme AS word,"
                f" {_idf1024('count(*)')} AS idf1024"
                f" FROM pgcatalog_s{n} AS s, pgcatalog_w{n} AS w, unnest(w.kept) AS u GROUP BY u.lexeme, s.documents)",
                f"pgcatalog_gs{n} AS MATERIALIZED (SELECT {c}.zoid, sum({self._kept_okapi()}) AS score"
                f" FROM pgcatalog_w{n} AS {c} CROSS JOIN pgcatalog_s{n} AS pgcatalog_m{n}"
                f" CROSS JOIN LATERAL unnest({c}.kept) AS u JOIN pgcatalog_g{n} AS g ON g.word = u.lexeme"
                f" JOIN pgcatalog_e{n} AS e ON e.word = u.lexeme WHERE {c}.matched GROUP BY {c}.zoid)",
            ]
            joins += f" LEFT JOIN pgcatalog_gs{n} ON pgcatalog_gs{n}.zoid = {c}.zoid"
            score = f"{score} + COALESCE(pgcatalog_gs{n}.score, 0)"
        ctes.append(
            f"pgcatalog_scored AS MATERIALIZED (SELECT {c}.zoid, {c}.path, ({score})::bigint AS score"
            f" FROM pgcatalog_w{n} AS {c} CROSS JOIN pgcatalog_s{n} AS pgcatalog_m{n}{joins} WHERE {c}.matched)"
        )
        return "WITH " + ",\n".join(ctes), params


def _one_scan(node) -> bool:
    """Whether *node* is scored in one scan (:meth:`_Index.one_scan`): a
    word, or words and globs joined by OR, whose matches are the rows
    holding any of its words (a glob's: its prefix), or few more (with an
    AND or a phrase, far more).  A glob alone scores faster from its
    expansions' counts (see ``_globs``)."""
    kind = node.nodeType()
    return kind == "ATOM" or (
        kind == "OR" and all(child.nodeType() == "GLOB" or _one_scan(child) for child in node.getValue())
    )


def counted_words(scored: Sequence[Scored]) -> tuple[list[str], list[str]] | None:
    """The words and the globs whose words' document frequencies a search
    ordered by *scored* counts before it scores (the words in the order
    :data:`GIVEN_DF` wants them, each glob a :class:`GivenGlob`), where
    they may be given instead: one text index, a query it does not score
    in one scan (which counts them as it reads their rows).  A frequent
    word's rows take a second or more to count at a million rows, and a
    glob (of more than ``expansions.MAX_WORDS`` words) may stand for one."""
    if len(scored) != 1 or _one_scan(scored[0].tree):
        return None
    index = _Index(0, scored[0], None)
    return (list(index.words), list(index.globs)) if index.words or index.globs else None


def ranked_sql(
    scored: Sequence[Scored], where: str, where_params: list, pending: Pending | None, given_df: bool = False
) -> tuple[str, list]:
    """``WITH ..., pgcatalog_scored AS (...)``: every match of *where* with
    its score (the sum over the text indexes), to be selected from.  With
    *given_df* (where :func:`counted_words` names words or globs) their
    document frequencies are parameters, :data:`GIVEN_DF` and each
    :class:`GivenGlob` in the list."""
    if len(scored) == 1 and _one_scan(scored[0].tree):
        return _Index(0, scored[0], pending, one_scan=True).one_scan(where, where_params)
    parts = [_Index(number, s, pending, given_df=given_df) for number, s in enumerate(scored)]
    ctes, params = [], []
    for part in parts:
        sql, ps = part.ctes()
        ctes += sql
        params += ps
    score = " + ".join(part.score for part in parts)
    joins = [part.joins() for part in parts]
    ctes.append(
        f"pgcatalog_scored AS MATERIALIZED (SELECT zoid, path, ({score})::bigint AS score"
        f" FROM {ROWS}{''.join(sql for sql, _ in joins)} WHERE {where})"
    )
    params += [p for _, join_params in joins for p in join_params]
    params += where_params
    return "WITH " + ",\n".join(ctes), params


def compact_word_counts_sql(texts: Iterable[r.IndexDef]) -> str:
    """An UPDATE that drops from every catalog row's word counts the
    frequencies its *texts* (text indexes) tell by their positions: rows
    written before schema version 5 hold every word's, too large to stay in
    the row.  Scores stay the same."""
    branches = " ".join(f"WHEN {r.name_literal(index.name)} THEN {index.expression()}" for index in texts)
    if not branches:
        return "SELECT 1"
    untold = (
        "SELECT COALESCE(jsonb_object_agg(f.key, f.value), '{}') FROM jsonb_each(c.value -> 1) AS f"
        f" WHERE (f.value)::int IS DISTINCT FROM pgcatalog_frequency(CASE c.key {branches} END, f.key)"
    )
    compacted = (
        f"SELECT zoid, (SELECT jsonb_object_agg(c.key, CASE jsonb_typeof(c.value -> 1) WHEN 'object'"
        f" THEN jsonb_build_array(c.value -> 0, ({untold})) ELSE c.value END)"
        " FROM jsonb_each(word_counts) AS c) AS word_counts FROM object_state WHERE word_counts IS NOT NULL"
        # rows with no frequency at all (this release's, mostly) are skipped
        " AND EXISTS (SELECT FROM jsonb_each(word_counts) AS c WHERE jsonb_typeof(c.value -> 1) = 'object'"
        " AND c.value -> 1 <> '{}')"
    )
    return (
        f"UPDATE object_state SET word_counts = n.word_counts FROM ({compacted}) AS n"
        " WHERE object_state.zoid = n.zoid AND object_state.word_counts IS DISTINCT FROM n.word_counts"
    )
