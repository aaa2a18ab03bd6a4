"""A text query's globs as the words they stand for.

ZCTextIndex scores a glob (``postgresql*``, what Plone's search box sends
for every word typed) as the sum of the scores of the words its lexicon
expands it to, and an ``OR`` as the sum of its parts that match: a glob is
the ``OR`` of its expansions, score for score.  Compiled so, a glob is
scored as words are (one scan, or the text's cells for one word), where a
glob left to the statement expands and counts inside it (twice a word's
time).  So, before a search ordered by relevance, the globs' expansions
are read from the lexicon (``pgcatalog_words``) in one statement, and the
query is compiled with them (:func:`expand`; the compiled statement is
kept per expansion).

A glob stays one where that is not the same: where it expands to nothing
or to more than :data:`MAX_WORDS` words, and in a transaction with
catalog changes of its own (their new words reach the lexicon at the
commit).  Its words are read up to :data:`CELL_WORDS` all the same: the
text's cells may serve them (:func:`~plone.pgcatalog.cells.cell_terms`).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from plone.pgcatalog.text import glob_like
from plone.pgcatalog.text import glob_prefix
from Products.ZCTextIndex import ParseTree
from typing import Any


__all__ = ["CELL_WORDS", "Glob", "MAX_WORDS", "expand", "globs_of", "words_of"]

MAX_WORDS = 8
"""The most words a glob is compiled as (a prefix of one letter stands for
thousands)."""
CELL_WORDS = 256
"""The most words of a glob read for the text's cells (a three-letter
prefix of a common word stands for it and for dozens of rare ones)."""

Glob = tuple[str, str]
"""A glob of a query: its text index's name and its pattern."""


def globs_of(scored: Iterable[Any]) -> tuple[Glob, ...]:
    """The globs of the parse trees of *scored* (``relevance.Scored``), each once."""
    found: dict[Glob, None] = {}

    def walk(node: Any, index: str) -> None:
        kind, value = node.nodeType(), node.getValue()
        if kind == "GLOB":
            found[(index, value)] = None
        elif kind == "NOT":
            walk(value, index)
        elif kind in ("AND", "OR"):
            for child in value:
                walk(child, index)

    for part in scored:
        walk(part.tree, part.index.name)
    return tuple(found)


_WORDS = f"""SELECT g.n, w.word
  FROM unnest(%s::text[], %s::text[], %s::text[]) WITH ORDINALITY AS g(index_name, prefix, pattern, n)
 CROSS JOIN LATERAL (
    SELECT word FROM pgcatalog_words
     WHERE index_name = g.index_name AND word >= g.prefix AND word <= g.prefix || chr(1114111)
       AND starts_with(word, g.prefix) AND (g.pattern IS NULL OR word LIKE g.pattern)
     ORDER BY word LIMIT {CELL_WORDS + 1}) AS w"""
"""Each glob's first words in the lexicon, by the glob's number (1, 2, ...):
a range of its key (no word goes past U+10FFFF), as ``Lexicon.globToWordIds``
finds them."""


def words_of(
    read: Callable[[str, list], Sequence[tuple]], globs: Sequence[Glob]
) -> dict[Glob, tuple[str, ...]]:
    """The words each of *globs* expands to, where they are one to
    :data:`CELL_WORDS`; *read(sql, params)* runs a statement."""
    rows = read(
        _WORDS,
        [[index for index, _ in globs], [glob_prefix(p) for _, p in globs], [glob_like(p) for _, p in globs]],
    )
    words: dict[int, list[str]] = {}
    for number, word in rows:
        words.setdefault(number, []).append(word)
    return {
        glob: tuple(words[n]) for n, glob in enumerate(globs, 1) if 0 < len(words.get(n, ())) <= CELL_WORDS
    }


def expand(tree: Any, index: str, expansions: Mapping[Glob, tuple[str, ...]]) -> Any:
    """*tree* (of the text index named *index*) with each glob that
    *expansions* knows as the ``OR`` of its words (the word, where one),
    where they are :data:`MAX_WORDS` at most."""
    if not expansions:
        return tree
    kind, value = tree.nodeType(), tree.getValue()
    if kind == "GLOB":
        words = expansions.get((index, value))
        if not words or len(words) > MAX_WORDS:
            return tree
        atoms = [ParseTree.AtomNode(word) for word in words]
        return atoms[0] if len(atoms) == 1 else ParseTree.OrNode(atoms)
    if kind == "NOT":
        return ParseTree.NotNode(expand(value, index, expansions))
    if kind in ("AND", "OR"):
        return type(tree)([expand(child, index, expansions) for child in value])
    return tree
