""""Did you mean": other words for a text query that finds little.

Each word of the query that no item the user may see holds is replaced by
a similar word that some such item holds: the candidates come from the
text index's lexicon (``pgcatalog_words``, every word the index has held)
by their trigrams (pg_trgm's ``%`` and ``similarity``, through a trigram
index on the lexicon), and each is kept only if an item matching the rest
of the query (the user's security terms included) holds it.  A word of
private content is never suggested to who may not see it.  The
alternatives are ranked by how similar the replacements are to the words
typed, then by how many items hold them.
"""

from __future__ import annotations

from collections import defaultdict
from plone.pgcatalog import registry as r
from plone.pgcatalog.database import read
from plone.pgcatalog.query import criterion_keys
from plone.pgcatalog.query import where_of
from plone.pgcatalog.schema import ROWS
from plone.pgcatalog.text import lexeme_sql
from plone.pgcatalog.text import MAX_LEXEME_BYTES
from Products.ZCatalog.ZCatalog import CatalogError
from typing import TYPE_CHECKING

import psycopg


if TYPE_CHECKING:
    from plone.pgcatalog.search import Catalog


__all__ = ["suggestions"]

CANDIDATES = 20
"""Similar words looked at for each word typed."""
COUNTED = 1000
"""How many items holding a word are read, at most, to rank it by the
visible ones among them."""
MAX_WORDS = 20
"""The most words a text may have to be given suggestions (what people type)."""
# ZCTextIndex's operators: typed, they are no words to replace
_OPERATORS = {"and", "or", "not"}


def suggestions(catalog: Catalog, query: dict, limit: int = 5) -> list[str]:
    """Up to *limit* alternatives to the text of *query* (a merged query
    dict with its security terms; its first text index), best first, each
    its words with every one no visible item holds replaced; none when
    every word is found or nothing similar is."""
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise CatalogError(f"The number of suggestions must be a positive integer, not {limit!r}")
    index = next((catalog.indexes[name] for name in query if _is_text(catalog, name)), None)
    if index is None:
        raise CatalogError("Suggestions need a query of a text index (SearchableText)")
    text = query[index.name]
    text = text.get("query") if isinstance(text, dict) else text
    if not isinstance(text, str):
        raise CatalogError(f"Suggestions need the text typed, not {text!r}")
    words = _typed_words(catalog, index, text)
    if len(words) > MAX_WORDS:
        raise CatalogError(f"Suggestions are made for at most {MAX_WORDS} words")
    if not words or any(len(word.encode("utf-8")) > MAX_LEXEME_BYTES for word in words):
        return []  # (no index holds a word that long, nor anything like it)
    own = criterion_keys(query, index)
    rest = {key: value for key, value in query.items() if key not in own}
    security = {
        key
        for name in r.SECURITY_INDEXES
        if name in catalog.indexes
        for key in criterion_keys(rest, catalog.indexes[name])
    }
    # the rest without the security terms, and the terms alone
    parts = [
        where_of(part, catalog.indexes, catalog.lexicons(), catalog.path) if part else ("true", [])
        for part in ({k: v for k, v in rest.items() if k not in security}, {k: rest[k] for k in security})
    ]
    if None in parts:
        return []  # the rest of the query matches nothing: no item holds a word
    (criteria, criteria_params), (visible, visible_params) = parts
    # per word: its holders read (the terms, then the criteria), then any visible holder
    word_params = [*visible_params, *criteria_params, *criteria_params, *visible_params]
    sql = _sql(index.expression(), criteria, visible)
    try:
        rows = read(catalog.tool, sql, [words, *word_params, index.name, *word_params], site=catalog.site)
    except psycopg.errors.UndefinedFunction as error:
        raise CatalogError(
            "Suggestions need PostgreSQL's pg_trgm extension in the catalog's database "
            f"(CREATE EXTENSION pg_trgm, then restart Zope): {error}"
        ) from None
    return _alternatives(words, rows, limit)


def _typed_words(catalog: Catalog, index: r.IndexDef, text: str) -> list[str]:
    """The words of *text* as *index* folds them, operators and globs left out."""
    lexicon = catalog.lexicons().get(index.options.get("lexicon_id"))
    typed = lexicon.parseTerms(text) if lexicon is not None else text.lower().split()
    return [word for word in typed if word and word not in _OPERATORS and "*" not in word and "?" not in word]


def _sql(vector: str, criteria: str, visible: str) -> str:
    """The statement of the suggestions: ``(n, NULL, NULL, NULL)`` for
    each missing word (numbered from 1), ``(n, candidate, similarity,
    items holding it)`` for each of its candidates some item holds.
    *criteria* is the rest of the query without the security terms,
    *visible* the terms alone.  Its parameters: the words, *visible*'s,
    *criteria*'s twice, *visible*'s, the index name, then the same again
    from *visible*'s.

    The items holding a word (typed or candidate) are read among the first
    :data:`COUNTED` that hold it and meet the criteria, each tested against
    the security terms as it is read: an index of the terms would be read
    whole for each word, the whole site for a user who may see most of it
    (8 of 11 ms a word at 100,000 documents).  A typed word is found at
    its first visible item; a candidate's visible ones are counted.  Only
    where none of those read is visible and more hold the word is the
    terms' index asked whether any visible item does."""

    def holders(word: str) -> str:
        """The first COUNTED items holding *word*: each visible or not, and its number."""
        return (
            f"SELECT COALESCE(({visible}), false) AS visible, row_number() OVER () AS read FROM {ROWS} "
            f"WHERE {vector} @@ {lexeme_sql(word)} AND {criteria} LIMIT {COUNTED}"
        )

    def held(word: str) -> str:
        """Whether a visible item holds *word*, through the terms' index."""
        return f"EXISTS (SELECT FROM {ROWS} WHERE {vector} @@ {lexeme_sql(word)} AND {criteria} AND ({visible}))"

    return f"""WITH pgcatalog_typed AS (SELECT t.word, t.n FROM unnest(%s::text[]) WITH ORDINALITY AS t(word, n)),
pgcatalog_missing AS MATERIALIZED (
    SELECT t.word, t.n FROM pgcatalog_typed AS t LEFT JOIN LATERAL (
        SELECT c.visible, c.read FROM ({holders("t.word")}) AS c WHERE c.visible OR c.read = {COUNTED} LIMIT 1) AS h ON true
     WHERE NOT COALESCE(h.visible, false) AND (h.read IS NULL OR NOT {held("t.word")})),
pgcatalog_similar AS MATERIALIZED (
    SELECT m.n, w.word, similarity(w.word, m.word) AS similarity FROM pgcatalog_missing AS m,
        LATERAL (SELECT word FROM pgcatalog_words WHERE index_name = %s AND word %% m.word
                 ORDER BY similarity(word, m.word) DESC, word LIMIT {CANDIDATES}) AS w)
SELECT n, NULL, NULL, NULL FROM pgcatalog_missing
UNION ALL
SELECT s.n, s.word, s.similarity, GREATEST(h.items, 1) FROM pgcatalog_similar AS s,
    LATERAL (SELECT count(*) FILTER (WHERE c.visible) AS items, count(*) AS read FROM ({holders("s.word")}) AS c) AS h
 WHERE h.items > 0 OR (h.read = {COUNTED} AND {held("s.word")})"""


def _is_text(catalog: Catalog, name: str) -> bool:
    index = catalog.indexes.get(name)
    return index is not None and index.kind == r.TEXT


def _alternatives(words: list[str], rows: list[tuple], limit: int) -> list[str]:
    """The queries of *words* with each missing word (numbered from 1 in
    *rows*, with its candidates: word, similarity, items holding it)
    replaced by its best, second best, ... candidate."""
    missing: set[int] = set()
    candidates: dict[int, list[tuple[float, int, str]]] = defaultdict(list)
    for n, word, similarity, items in rows:
        missing.add(n)
        if word is not None:
            candidates[n].append((-similarity, -items, word))
    if not missing or any(not candidates[n] for n in missing):
        return []  # a word with nothing like it: no alternative finds anything
    ranked = {n: [word for _, _, word in sorted(found)] for n, found in candidates.items()}
    found = []
    for choice in range(max(len(options) for options in ranked.values())):
        alternative = " ".join(
            ranked[n][min(choice, len(ranked[n]) - 1)] if n in ranked else word
            for n, word in enumerate(words, start=1)
        )
        if alternative not in found:
            found.append(alternative)
        if len(found) == limit:
            break
    return found
