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


def lexeme(word: str) -> str:
    """*word* as a quoted ``tsquery`` lexeme."""
    return "'" + word.replace("\\", "\\\\").replace("'", "''") + "'"


def glob_prefix(pattern: str) -> str:
    """The words a ``prefix*`` glob expands to start with this."""
    prefix = _GLOB.split(pattern, 1)[0]
    if not prefix:
        raise ParseError(f"Glob pattern without a prefix: {pattern!r}")
    return prefix


def node_tsquery(node) -> str:
    """A parse tree (node) as a ``tsquery`` literal."""
    kind = node.nodeType()
    value = node.getValue()
    if kind == "ATOM":
        return lexeme(value)
    if kind == "PHRASE":
        return "(" + " <-> ".join(lexeme(w) for w in value) + ")"
    if kind == "GLOB":
        return lexeme(glob_prefix(value)) + ":*"
    if kind == "NOT":
        return "!" + node_tsquery(value)
    if kind == "AND":
        return "(" + " & ".join(node_tsquery(child) for child in value) + ")"
    if kind == "OR":
        return "(" + " | ".join(node_tsquery(child) for child in value) + ")"
    raise ParseError(f"unsupported query node {kind}")


def parse(query, lexicon=None):
    """ZCTextIndex's parse tree of *query*, or None where ZCTextIndex
    matches nothing (an empty query, or only words the lexicon drops);
    raises ``ParseError`` where ZCTextIndex does."""
    if isinstance(query, (list, tuple)):
        query = " ".join(str(q) for q in query)
    if not isinstance(query, str):
        query = str(query)
    if not query.strip():
        return None
    return QueryParser(lexicon if lexicon is not None else _FallbackLexicon()).parseQuery(query)
