"""ZCTextIndex query language → PostgreSQL ``tsquery``.

Parsing is ZCTextIndex's own :class:`QueryParser` run over the index's
lexicon, so the grammar (AND / OR / NOT, ``"phrases"``, ``-word``,
``prefix*``), the word folding and the ``ParseError`` for bad syntax are
exactly ZCatalog's.  The parse tree is then written out as a ``tsquery``
literal over the same normalised words the indexer stored.
"""

from __future__ import annotations

from Products.ZCTextIndex import ParseTree
from Products.ZCTextIndex.QueryParser import QueryParser

import re


ParseError = ParseTree.ParseError

_GLOB = re.compile(r"[*?]")


class _FallbackLexicon:
    """Word splitting for an index whose lexicon object is missing."""

    def parseTerms(self, text):
        return [w.lower() for w in re.findall(r"[\w*?]+", text, re.UNICODE)]

    def isGlob(self, word):
        return "*" in word or "?" in word


def _lexeme(word: str) -> str:
    return "'" + word.replace("\\", "\\\\").replace("'", "''") + "'"


def _node_sql(node) -> str:
    kind = node.nodeType()
    value = node.getValue()
    if kind == "ATOM":
        return _lexeme(value)
    if kind == "PHRASE":
        return "(" + " <-> ".join(_lexeme(w) for w in value) + ")"
    if kind == "GLOB":
        prefix = _GLOB.split(value, 1)[0]
        if not prefix:
            raise ParseError(f"Glob pattern without a prefix: {value!r}")
        return _lexeme(prefix) + ":*"
    if kind == "NOT":
        return "!" + _node_sql(value)
    if kind == "AND":
        return "(" + " & ".join(_node_sql(child) for child in value) + ")"
    if kind == "OR":
        return "(" + " | ".join(_node_sql(child) for child in value) + ")"
    raise ParseError(f"unsupported query node {kind}")


def to_tsquery(query, lexicon=None) -> str | None:
    """Translate a ZCTextIndex query to a ``tsquery`` literal.

    Returns None where ZCTextIndex matches nothing (an empty query, or only
    words the lexicon drops); raises ``ParseError`` where ZCTextIndex does.
    """
    if isinstance(query, (list, tuple)):
        query = " ".join(str(q) for q in query)
    if not isinstance(query, str):
        query = str(query)
    if not query.strip():
        return None
    parser = QueryParser(lexicon if lexicon is not None else _FallbackLexicon())
    tree = parser.parseQuery(query)
    if tree is None:
        return None
    return _node_sql(tree)
