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
"""How many items holding a word are counted, at most, to rank it."""
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
    found = where_of(rest, catalog.indexes, catalog.lexicons(), catalog.path)
    if found is None:
        return []  # the rest of the query matches nothing: no item holds a word
    where, params = found
    sql = _sql(index.expression(), where)
    try:
        rows = read(catalog.tool, sql, [words, *params, index.name, *params], site=catalog.site)
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


def _sql(vector: str, where: str) -> str:
    """The statement of the suggestions: ``(n, NULL, NULL, NULL)`` for
    each missing word (numbered from 1), ``(n, candidate, similarity,
    items holding it)`` for each of its candidates some item holds.  Its
    parameters: the words, *where*'s, the index name, *where*'s again."""

    def held(word: str) -> str:
        return f"{vector} @@ {lexeme_sql(word)} AND {where}"

    return f"""WITH pgcatalog_typed AS (SELECT t.word, t.n FROM unnest(%s::text[]) WITH ORDINALITY AS t(word, n)),
pgcatalog_missing AS MATERIALIZED (
    SELECT word, n FROM pgcatalog_typed AS t WHERE NOT EXISTS (SELECT FROM {ROWS} WHERE {held("t.word")})),
pgcatalog_similar AS MATERIALIZED (
    SELECT m.n, w.word, similarity(w.word, m.word) AS similarity FROM pgcatalog_missing AS m,
        LATERAL (SELECT word FROM pgcatalog_words WHERE index_name = %s AND word %% m.word
                 ORDER BY similarity(word, m.word) DESC, word LIMIT {CANDIDATES}) AS w)
SELECT n, NULL, NULL, NULL FROM pgcatalog_missing
UNION ALL
SELECT s.n, s.word, s.similarity, h.items FROM pgcatalog_similar AS s,
    LATERAL (SELECT count(*) AS items FROM (SELECT FROM {ROWS} WHERE {held("s.word")} LIMIT {COUNTED}) AS c) AS h
 WHERE h.items > 0"""


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
